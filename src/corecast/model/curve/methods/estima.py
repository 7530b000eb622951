"""ESTIMA: extrapolate stall categories, translate stalls per core to time (Chatzopoulos,
Dragojević and Guerraoui, "ESTIMA: Extrapolating ScalabiliTy of In-Memory Applications",
ACM TOPC 2017, section 3).

1. Every stall category is extrapolated with the ``ESTIMA_KERNEL`` kernels fitted to the
   first ``i`` measurements (``i`` = 3..m-c, ``c`` in {2, 4} checkpoints); the candidate
   with the lowest RMSE at its checkpoints wins.
2. Stalls per core ``s(n) = sum(stall(n)) / n``.
3. The factor ``F = T / s`` is fitted on the measured points and extrapolated with the
   same kernels; the candidate whose ``T = F s`` correlates best with ``s`` over 1..nmax
   wins (the paper's rule: time and stalls per core move together, so a good factor keeps
   that correlation; the best-fitting factor often extrapolates wildly).  Candidates must
   be realistic and fit the measured time nearly as well as the best (see choose_factor).
4. ``T(n) = F(n) s(n)``; the category with the largest share at nmax is the future
   bottleneck.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from .. import functions
from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from .registry import register
from .presca import realistic

# Six distinct counts: with c = 2 checkpoints the 4-parameter kernels then have 4 training
# points.  With 5 every subset is smaller than any ESTIMA kernel, so no candidate exists.
MIN_POINTS = 6
CHECKPOINTS = (2, 4)
MIN_SUBSET = 3
ZERO_FRACTION = 1e-6  # a category below this share of the largest one counts as zero
# The fallback's warning: the fit then used no stall at all (``auto`` says so in its own).
TIME_ONLY = ("stalls per core could not be translated to time (zero stalls or no realistic factor); "
             "extrapolated the time directly")
# Factor choice (see choose_factor): candidates fit the measured time within FIT_SLACK
# (RMS relative error above the best one's); correlations within CORRELATION_TIE tie.
FIT_SLACK = 0.02
CORRELATION_TIE = 5e-3

MIN_KERNEL_PARAMS = min(functions.get(k).nparams for k in functions.ESTIMA_KERNEL)

Array = np.ndarray


@dataclass(frozen=True)
class Candidate:
    fit: functions.KernelFit
    subset: int  # training points used
    checkpoints: int  # c
    error: float  # RMSE at the c checkpoints, in the data's unit

    @property
    def label(self) -> str:
        return f"{self.fit.name}[first {self.subset}]"


@dataclass(frozen=True)
class Curve:
    """One extrapolated stall category (non-negative, defined on all counts >= 1)."""

    label: str  # candidate label, "zero" or "flat"
    f: Callable[[Array], Array]
    error: float = 0.0

    def __call__(self, n) -> Array:
        return np.asarray(self.f(np.asarray(n, dtype=float)), dtype=float)


def target_grid(nmax: float) -> Array:
    """Counts 1..nmax the realism filter and the correlation look at."""
    return np.arange(1.0, max(2.0, np.ceil(nmax)) + 1.0)


def usable_checkpoints(m: int) -> list[int]:
    """The c in CHECKPOINTS that leave enough training points for some ESTIMA kernel."""
    return [c for c in CHECKPOINTS if m - c >= MIN_KERNEL_PARAMS]


def subset_fits(n: Array, y: Array, nmax: float, last: int) -> dict[int, list[functions.KernelFit]]:
    """Every ESTIMA kernel fitted to the first i points, i = 3..last (None fits dropped)."""
    out = {}
    for i in range(MIN_SUBSET, last + 1):
        fits = [functions.fit(k, n[:i], y[:i], nmax) for k in functions.ESTIMA_KERNEL]
        out[i] = [f for f in fits if f is not None]
    return out


def checkpoint_candidates(
    n: Array, y: Array, nmax: float, accept: Callable[[functions.KernelFit], bool]
) -> list[Candidate]:
    """Accepted candidates for every (c, i), lowest checkpoint RMSE first.

    The RMSE is absolute: candidates are only ever compared within one series, and a
    relative error would break on the zeros a stall series may contain.
    """
    usable = usable_checkpoints(n.size)
    if not usable:
        return []
    # Fits on the first i points are shared by both c; each is scored at each c's checkpoints.
    fits = {i: [f for f in fl if accept(f)]
            for i, fl in subset_fits(n, y, nmax, n.size - min(usable)).items()}
    out = []
    for c in usable:
        cn, cy = n[n.size - c :], y[n.size - c :]
        for i in range(MIN_SUBSET, n.size - c + 1):
            for f in fits.get(i, []):
                err = rms(f(cn) - cy)
                if np.isfinite(err):
                    out.append(Candidate(f, i, c, err))
    out.sort(key=lambda cand: cand.error)
    return out


def extrapolate_stall(n: Array, y: Array, nmax: float, scale: Optional[float] = None) -> Curve:
    """Step 1 for one category: the extrapolated stall curve (never negative).

    ``scale`` is the size of the largest category; a series below ``ZERO_FRACTION`` of it
    stays zero.  Kernels are fitted by relative error, which a zero measurement breaks
    (lock wait is 0 at one thread), so only the points where the stall is positive are
    fitted, and the curve is 0 below the first of them, where it was measured as 0.
    Zeros between positive points are dropped too: they are noise of a small category.
    """
    n = np.asarray(n, float)
    y = np.asarray(y, float)
    top = float(np.max(y)) if y.size else 0.0
    scale = top if scale is None else scale
    if top <= 0 or top <= ZERO_FRACTION * scale:
        return Curve("zero", lambda q: np.zeros_like(q))
    pos = y > ZERO_FRACTION * top
    pn, py = n[pos], y[pos]
    first = float(pn[0])
    grid = target_grid(nmax)
    grid = grid[grid >= first]

    def accept(f: functions.KernelFit) -> bool:
        v = f(grid)
        return bool(np.all(np.isfinite(v)) and np.all(v >= 0))

    cands = checkpoint_candidates(pn, py, nmax, accept)
    if cands:
        best = cands[0]
        fn = best.fit
        label, err = f"{best.label},c={best.checkpoints}", best.error
    else:
        # No realistic kernel (or too few positive points): hold the last value.
        last = float(py[-1])
        fn = lambda q: np.full_like(q, last)  # noqa: E731
        label, err = "flat", float("nan")

    def curve(q: Array, fn=fn, first=first) -> Array:
        v = np.maximum(np.nan_to_num(fn(q), nan=0.0, posinf=0.0, neginf=0.0), 0.0)
        return np.where(q < first, 0.0, v)

    return Curve(label, curve, err)


def pearson(a: Array, b: Array) -> float:
    """Pearson correlation; 0 where either side is constant (no information)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    sa, sb = a.std(), b.std()
    if sa <= 1e-12 * max(abs(a.mean()), 1e-300) or sb <= 1e-12 * max(abs(b.mean()), 1e-300):
        return 0.0
    return float(np.mean((a - a.mean()) * (b - b.mean())) / (sa * sb))


@dataclass(frozen=True)
class FactorChoice:
    fit: functions.KernelFit
    subset: int
    correlation: float
    error: float  # RMS relative error of F*s against the measured time


def choose_factor(
    n: Array, t: Array, s_measured: Array, s_of: Callable[[Array], Array], nmax: float
) -> list[FactorChoice]:
    """Step 3: factor candidates, best first.

    The paper's rule is the highest correlation of ``T = F s`` with ``s`` over 1..nmax.
    Alone it favours factors that bend T towards s whatever the data say (Pearson values
    near 1 barely separate an exact factor from one 30% off), so candidates must first
    be sane: T passes the realism filter and reproduces the measured time within
    ``FIT_SLACK`` of the best candidate; correlations within ``CORRELATION_TIE`` of the
    best then count as equal and the closer fit wins.  F is chosen without checkpoints,
    so it is also fitted to all m points (i = 3..m): holding points back gains nothing.
    """
    factor = t / s_measured
    grid = target_grid(nmax)
    s_grid = s_of(grid)
    s_n = s_of(n)
    out = []
    for i, fits in subset_fits(n, factor, nmax, n.size).items():
        for f in fits:
            with np.errstate(divide="ignore", invalid="ignore"):
                sane = realistic(lambda q, f=f: 1.0 / (f(q) * s_of(q)), nmax)
            if not sane:
                continue
            corr = pearson(f(grid) * s_grid, s_grid)
            err = rms((f(n) * s_n - t) / t)
            if np.isfinite(corr) and np.isfinite(err):
                out.append(FactorChoice(f, i, corr, err))
    if not out:
        return out
    fit_ok = min(c.error for c in out) + FIT_SLACK
    top = max(c.correlation for c in out if c.error <= fit_ok)
    out.sort(key=lambda c: (c.error > fit_ok, c.correlation < top - CORRELATION_TIE, c.error))
    return out


def _time_extrapolation(n: Array, t: Array, nmax: float) -> Optional[Candidate]:
    """The paper's baseline, used when stalls cannot explain the time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cands = checkpoint_candidates(n, t, nmax, lambda f: realistic(lambda q: 1.0 / f(q), nmax))
    return cands[0] if cands else None


@register("estima", "ESTIMA: extrapolate stall categories, correlate stalls per core to time",
          MIN_POINTS, needs=("stalls",))
def fit_estima(data: Measurements, nmax: float) -> Fit:
    data = data.at_target_size()
    n, t = data.counts, data.time
    if not data.stalls:
        raise InputError("method estima needs stall:NAME columns")
    if n.size < MIN_POINTS:
        raise InputError(f"method estima needs at least {MIN_POINTS} measured counts, got {n.size}")
    nmax = float(max(nmax, n.max()))
    grid = target_grid(nmax)
    warnings: list[str] = []

    scale = max(float(np.max(v)) for v in data.stalls.values())
    curves = {k: extrapolate_stall(n, v, nmax, scale) for k, v in data.stalls.items()}
    flat = [k for k, c in curves.items() if c.label == "flat"]
    if flat:
        warnings.append(f"no realistic kernel for stall categories {', '.join(flat)}; held flat")

    def s_of(q) -> Array:
        q = np.asarray(q, float)
        return sum(c(q) for c in curves.values()) / q

    # F is fitted on the *measured* stalls per core (the paper's step 3); points where
    # they are 0 leave F undefined and are left out.
    s_meas = sum(np.asarray(v, float) for v in data.stalls.values()) / n
    has_s = s_meas > 0
    choices = []
    if np.count_nonzero(has_s) >= MIN_POINTS:
        choices = choose_factor(n[has_s], t[has_s], s_meas[has_s], s_of, nmax)
        if np.count_nonzero(~has_s):
            warnings.append(f"stalls are 0 at {np.count_nonzero(~has_s)} measured counts; "
                            "the factor T/s is fitted without them")

    share = {k: float(c(grid[-1:])[0]) for k, c in curves.items()}
    extras = {
        "counts": grid,
        "categories": {k: {"kernel": c.label, "values": c(grid), "checkpoint_rmse": c.error}
                       for k, c in curves.items()},
        "future_bottleneck": max(share, key=share.get) if any(share.values()) else None,
        "stalls_per_core": s_of(grid),
    }

    if choices:
        best = choices[0]

        def time_of(q, f=best.fit):
            q = np.asarray(q, float)
            return f(q) * s_of(q)

        label = f"F={best.fit.name}[first {best.subset}]"
        reason = (f"{len(choices)} realistic factor candidates; {label} gives time with the "
                  f"highest correlation to stalls per core ({best.correlation:.4f}) among those "
                  f"fitting the measured time within {FIT_SLACK:.0%} of the best (ties within "
                  f"{CORRELATION_TIE:g}: closer fit)")
        params = {"factor_kernel": best.fit.name, "subset": best.subset,
                  "coefficients": best.fit.params, "correlation": best.correlation}
        extras["factor"] = best.fit(grid)
        extras["factor_candidates"] = [
            {"candidate": f"{c.fit.name}[first {c.subset}]", "correlation": c.correlation,
             "time_error": c.error} for c in choices[:10]]
    else:
        fallback = _time_extrapolation(n, t, nmax)
        if fallback is None:
            raise InputError("method estima found no realistic factor or time extrapolation")
        warnings.append(TIME_ONLY)

        def time_of(q, f=fallback.fit):
            return f(np.asarray(q, float))

        label = f"T={fallback.label}"
        reason = (f"time extrapolation fallback: {label} has the lowest RMSE at "
                  f"{fallback.checkpoints} checkpoints")
        params = {"time_kernel": fallback.fit.name, "subset": fallback.subset,
                  "coefficients": fallback.fit.params}

    def perf(q) -> Array:
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 / time_of(q)

    usable = usable_checkpoints(n.size)
    return Fit(
        method="estima",
        candidate=label,
        perf=perf,
        reason=reason,
        params=params,
        residual=rms(np.log(perf(n) / data.perf)),
        checkpoints=[float(v) for v in n[n.size - max(usable):]],
        extras=extras,
        warnings=warnings,
        extras_in_unit=stalls_in_unit,
    )


def stalls_in_unit(extras: dict, unit: float) -> dict:
    """``extras`` with the stall values (categories, stalls per core) multiplied by ``unit``;
    the factor T/s is a ratio of two times and keeps its value."""
    out = dict(extras)
    out["categories"] = {
        k: {**c, "values": c["values"] * unit, "checkpoint_rmse": c["checkpoint_rmse"] * unit}
        for k, c in extras["categories"].items()
    }
    out["stalls_per_core"] = extras["stalls_per_core"] * unit
    return out
