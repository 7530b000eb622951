"""Continuation members: the measured curve carried on past its largest count.

On measured curves the best guess for the next doubling of the count is often what the
last counts did, not what a law fitted to all of them says: a lock that already
serialises the threads, saturated memory bandwidth or a database at its connection
limit keep performance where it is (``plateau``), and a curve that is still climbing,
or already falling under contention, tends to continue at its recent rate for a while
(``trend``).  The laws and PreSca extrapolate the whole curve's shape; these two
extrapolate only its end, so their errors differ from the laws' and a median of both
kinds is rarely far off when one kind is.  Inside the measured range both interpolate
the measured points (linear in log count and log performance).
"""
from __future__ import annotations

import numpy as np

from ..entities import Fit, Measurements
from ..fitting import rms
from .registry import register

TREND_POINTS = 3  # the last counts whose log-log slope is continued
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


def continuation(data: Measurements, slope: float, name: str, reason: str) -> Fit:
    """The measured points (log-log interpolated), then ``n^slope`` beyond the largest count."""
    curve = data.at_target_size()
    n, y = curve.counts, curve.perf
    inside = _log_interp(n, y)
    top, last = float(np.log(n[-1])), float(np.log(y[-1]))

    def perf(q):
        lq = np.log(np.asarray(q, float))
        return np.exp(np.where(lq <= top, inside(np.exp(lq)), last + slope * (lq - top)))

    return Fit(method=name, candidate=name, perf=perf, reason=reason,
               params={"slope": slope}, residual=rms(np.log(perf(n) / y)))


@register("plateau", "performance stays at the last measured value beyond it", MIN_COUNTS)
def fit_plateau(data: Measurements, nmax: float) -> Fit:
    return continuation(data, 0.0, "plateau", "the last measured value held beyond the largest count")


def recent_slope(data: Measurements) -> float:
    """Log-log slope of the last TREND_POINTS counts, within +-MAX_SLOPE."""
    curve = data.at_target_size()
    n, y = curve.counts[-TREND_POINTS:], curve.perf[-TREND_POINTS:]
    return float(np.clip(np.polyfit(np.log(n), np.log(y), 1)[0], -MAX_SLOPE, MAX_SLOPE))


@register("trend", f"log-log slope of the last {TREND_POINTS} counts continued (|slope| <= 1)", MIN_COUNTS)
def fit_trend(data: Measurements, nmax: float) -> Fit:
    slope = recent_slope(data)
    return continuation(
        data, slope, "trend",
        f"performance ~ n^{slope:.2f} beyond the largest count (slope of the last {TREND_POINTS} counts)",
    )


def damped_trend(data: Measurements, damping: float) -> Fit:
    """The recent slope times ``damping`` (0: plateau, 1: trend) continued."""
    slope = recent_slope(data) * damping
    return continuation(
        data, slope, "damped",
        f"performance ~ n^{slope:.2f} beyond the largest count ({damping:g} of the last "
        f"{TREND_POINTS} counts' slope)",
    )


@register("damped", f"{DAMPING:g} of the last {TREND_POINTS} counts' log-log slope continued", MIN_COUNTS)
def fit_damped(data: Measurements, nmax: float) -> Fit:
    return damped_trend(data, DAMPING)
