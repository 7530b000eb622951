"""Continuation members: the measured curve carried on past its largest count.

On measured curves the best guess for the next doubling of the count is often what the
last counts did, not what a law fitted to all of them says: a lock that already
serialises the threads, saturated memory bandwidth or a database at its connection
limit keep performance where it is (``plateau``), and a curve that is still climbing,
or already falling under contention, tends to continue at its recent rate for a while
(``trend``).  The laws and PreSca extrapolate the whole curve's shape; these two
extrapolate only its end, so their errors differ from the laws' and a median of both
kinds is rarely far off when one kind is.  Inside the measured range both interpolate
the measured points (linear in log count and log performance).  ``anchored`` carries a
law's shape on from the last measured value the same way (auto's USL member).
"""
from __future__ import annotations

import numpy as np

from ..entities import Fit, Measurements
from ..fitting import rms
from .registry import register

# The recent slope is the log-log slope over the last doubling of the count, a window in
# count rather than in points: the last 3 points of a curve measured every 2 threads span
# a few percent of the count (their slope is mostly noise), those of one measured at powers
# of 2 a factor of 4.  On the corpus (benchmarks/data) the trend member alone went from
# 14.6% median error, 0.52 of splits under 20% and 6.4% pick loss to 10.3%, 0.57 and 6.2%
# with this window; on the shared curves from 15.7%, 0.53, 5.5% to 10.4%, 0.47, 3.4%.
RECENT_SPAN = 2.0
SLOPE_SAMPLES = 17  # log-spaced counts of that window the least-squares line is fitted at
MAX_SLOPE = 1.0  # no faster than linear scaling up, nor than 1/n down
# A recent trend needs a curve behind it: with 2-3 counts (a profiled program's first
# team sizes) holding or continuing the last value would outvote the laws, so both
# members wait for 4 counts.
MIN_COUNTS = 4
# The share of the recent slope ``damped`` continues; auto's Rules carry their own (the LOSO
# benchmark chooses among them), this is the registered method's.
DAMPING = 0.25


def _log_interp(n: np.ndarray, y: np.ndarray):
    """Log-log linear interpolation of (n, y) inside [n0, n_last]; below n0 the first
    segment's slope (bounded to [0, MAX_SLOPE]) continues."""
    ln, ly = np.log(n), np.log(y)
    low_slope = float(np.clip((ly[1] - ly[0]) / (ln[1] - ln[0]), 0.0, MAX_SLOPE)) if n.size > 1 else 0.0

    def inside(q: np.ndarray) -> np.ndarray:
        lq = np.log(q)
        return np.where(lq < ln[0], ly[0] + low_slope * (lq - ln[0]), np.interp(lq, ln, ly))

    return inside


def _measured_then(curve: Measurements, beyond):
    """perf(q): the measured points of ``curve`` (log-log interpolated) up to its largest
    count, ``beyond(q)`` above it; how every member here extends the measured range."""
    inside = _log_interp(curve.counts, curve.perf)
    top = float(curve.counts[-1])

    def perf(q):
        q = np.asarray(q, float)
        with np.errstate(all="ignore"):
            above = np.asarray(beyond(np.maximum(q, top)), float)
        return np.where(q <= top, np.exp(inside(np.minimum(q, top))), above)

    return perf


def continuation(data: Measurements, slope: float, name: str, reason: str) -> Fit:
    """The measured points (log-log interpolated), then ``n^slope`` beyond the largest count."""
    curve = data.at_target_size()
    n, y = curve.counts, curve.perf
    last, top = float(np.log(y[-1])), float(np.log(n[-1]))
    # In log space, as the points inside: a flat continuation ties the last one exactly.
    perf = _measured_then(curve, lambda q: np.exp(last + slope * (np.log(q) - top)))
    return Fit(method=name, candidate=name, perf=perf, reason=reason,
               params={"slope": slope}, residual=rms(np.log(perf(n) / y)))


def anchored(fit: Fit, data: Measurements) -> Fit:
    """``fit``'s shape continued from the last measured value: the measured points inside
    the measured range, ``fit.perf(n) * measured(m) / fit.perf(m)`` beyond its largest
    count m.

    Why: a law fitted by least squares to every count misses the last one by its
    residual, and that miss is carried into every count it extrapolates to; the
    continuation members start from the last measured value, and a law that does too
    differs from them in shape only (the intercept correction of forecasting under
    structural breaks: Clements and Hendry, Forecasting Economic Time Series, 1998).
    """
    curve = data.at_target_size()
    n, y = curve.counts, curve.perf
    with np.errstate(all="ignore"):
        scale = float(y[-1] / np.asarray(fit.perf(n[-1:]), float)[0])
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"{fit.method}: no finite value at the largest count to continue from")
    perf = _measured_then(curve, lambda q: scale * np.asarray(fit.perf(q), float))
    return Fit(method=fit.method, candidate="anchored", perf=perf,
               reason=f"{fit.reason}, continued from the last measured value (x {scale:.3g})",
               params={**fit.params, "anchor_scale": scale}, residual=rms(np.log(perf(n) / y)),
               extras=fit.extras)


@register("plateau", "performance stays at the last measured value beyond it", MIN_COUNTS)
def fit_plateau(data: Measurements, nmax: float) -> Fit:
    return continuation(data, 0.0, "plateau", "the last measured value held beyond the largest count")


def slope_between(curve: Measurements, lo: float, hi: float) -> float:
    """Log-log slope of ``curve`` over the counts [lo, hi]: the least-squares line through
    the measured points, interpolated log-log, at SLOPE_SAMPLES log-spaced counts."""
    q = np.log(np.geomspace(lo, hi, SLOPE_SAMPLES))
    return float(np.polyfit(q, np.interp(q, np.log(curve.counts), np.log(curve.perf)), 1)[0])


def recent_slope(data: Measurements) -> float:
    """Log-log slope over the last doubling of the count (from the largest count m down to
    m / RECENT_SPAN, or to the smallest count; ``slope_between``), within +-MAX_SLOPE."""
    curve = data.at_target_size()
    top = float(curve.counts[-1])
    slope = slope_between(curve, max(top / RECENT_SPAN, float(curve.counts[0])), top)
    return float(np.clip(slope, -MAX_SLOPE, MAX_SLOPE))


@register("trend", "log-log slope over the last doubling of the count continued (|slope| <= 1)", MIN_COUNTS)
def fit_trend(data: Measurements, nmax: float) -> Fit:
    slope = recent_slope(data)
    return continuation(
        data, slope, "trend",
        f"performance ~ n^{slope:.2f} beyond the largest count (slope over the last doubling of the count)",
    )


def damped_trend(data: Measurements, damping: float) -> Fit:
    """The recent slope times ``damping`` (0: plateau, 1: trend) continued."""
    slope = recent_slope(data) * damping
    return continuation(
        data, slope, "damped",
        f"performance ~ n^{slope:.2f} beyond the largest count ({damping:g} of the slope over "
        "the last doubling of the count)",
    )


@register("damped", f"{DAMPING:g} of the log-log slope over the last doubling continued", MIN_COUNTS)
def fit_damped(data: Measurements, nmax: float) -> Fit:
    return damped_trend(data, DAMPING)
