"""auto: the default method, a per-count median of complementary models.

Why a median: on short curves no single model is reliably right.  USL extrapolates
contention (it predicts a peak from slight curvature, sometimes wrongly), Amdahl never
predicts a decline (sometimes wrongly), PreSca follows whatever shape the recent points
have.  Their errors are different, so the per-count median in log space (the geometric
mean when only two members exist) is rarely far off when one member is, and the
preferred count it implies sits between "keeps growing" and "peaks early".  Members the
data can feed are added: ESTIMA with stall columns, the size model and the log-log
regression with size columns.  The members' spread becomes part of the band.

Diagnostic from Barnes et al. ("predict within the training runs"): each law member is
also fitted on the first half of the points and scored on the rest; a large error there
means the measured range may be too short, and a warning says so.
"""
from __future__ import annotations

import numpy as np

from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from . import METHODS, check_usable, register
from .laws import fit_usl_falling_pair

# Members always tried (if they have enough points), then those the columns enable.
BASE_MEMBERS = ("usl", "amdahl", "presca")
STALL_MEMBERS = ("estima",)
SIZE_MEMBERS = ("sizemodel", "regression")
BACKTEST_WARN = 0.2  # relative error predicting the second half of the training runs


def members_for(data: Measurements) -> tuple[str, ...]:
    names = list(BASE_MEMBERS)
    if data.stalls:
        names += STALL_MEMBERS
    if data.sizes:
        names += SIZE_MEMBERS
    return tuple(names)


def _fit_members(data: Measurements, nmax: float) -> tuple[list[Fit], list[str]]:
    fits, skipped = [], []
    for name in members_for(data):
        method = METHODS.get(name)
        if method is None:
            continue
        try:
            check_usable(method, data)
            fits.append(method.fit(data, nmax))
        except (InputError, ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
            skipped.append(f"{name}: {exc}")
    return fits, skipped


def _median_curve(fits: list[Fit]):
    def logs(n):
        n = np.asarray(n, float)
        rows = []
        for f in fits:
            with np.errstate(all="ignore"):
                v = np.asarray(f.perf(n), float)
            rows.append(np.where(np.isfinite(v) & (v > 0), np.log(np.where(v > 0, v, 1.0)), np.nan))
        return np.vstack(rows)

    def perf(n):
        return np.exp(np.nanmedian(logs(n), axis=0))

    def low(n):
        return np.exp(np.nanmin(logs(n), axis=0))

    def high(n):
        return np.exp(np.nanmax(logs(n), axis=0))

    return perf, low, high


def backtest_error(data: Measurements, method: str = "usl") -> float | None:
    """Relative error of ``method`` fitted on the first half of the points when it
    predicts the second half (None when there are too few points)."""
    m = len(data)
    k = max(3, m // 2)
    if m - k < 1:
        return None
    head = data.head(k)
    spec = METHODS[method]
    try:
        check_usable(spec, head)
        fit = spec.fit(head, float(data.counts.max()))
    except InputError:
        return None
    tail = data.subset(np.arange(k, m))
    return rms(np.log(fit.perf(tail.counts) / tail.perf))


@register("auto", "per-count median of USL, Amdahl, PreSca (+ESTIMA, size models when columns allow)", 2)
def fit_auto(data: Measurements, nmax: float) -> Fit:
    curve = data.at_target_size()
    # Two points that fall: Amdahl cannot follow them; contention (USL) can.
    falling = fit_usl_falling_pair(curve) if len(curve) == 2 and curve.perf[1] < curve.perf[0] else None
    if falling is not None:
        fits, skipped = [falling], ["amdahl: cannot fall between two points"]
    else:
        fits, skipped = _fit_members(data, nmax)
    if not fits:
        raise InputError("method auto could not fit any model: " + "; ".join(skipped))
    perf, low, high = _median_curve(fits)
    names = [f.candidate if f.candidate == f.method else f"{f.method}:{f.candidate}" for f in fits]
    n, y = curve.counts, curve.perf
    top = float(n.max())
    ends = np.array([top, nmax])
    at_end = np.log(np.vstack([f.perf(ends) for f in fits]))
    closest = int(np.argmin(np.abs(at_end[:, 1] - np.median(at_end[:, 1]))))
    if len(fits) == 1:
        reason = f"only {names[0]} could be fitted"
    else:
        reason = (
            f"per-count median of {len(fits)} models ({', '.join(names)}); "
            f"at {nmax:g} the median is closest to {names[closest]}"
        )
    warnings = []
    bt = backtest_error(curve) if len(curve) >= 6 else None
    if bt is not None and bt > BACKTEST_WARN:
        warnings.append(
            f"fitted on the first half of the points, usl misses the second half by {bt:.0%}: "
            "measure at larger counts before trusting far extrapolations"
        )
    checkpoints = next((f.checkpoints for f in fits if f.checkpoints), [])
    return Fit(
        method="auto",
        candidate=names[0] if len(names) == 1 else "median(" + ", ".join(names) + ")",
        perf=perf,
        reason=reason,
        params={f.method: f.params for f in fits},
        residual=rms((perf(n) - y) / y),
        low=low,
        high=high,
        checkpoints=checkpoints,
        extras={"members": names, "skipped": skipped, "backtest_error": bt,
                **{k: f.extras[k] for f in fits for k in ("future_bottleneck",) if k in f.extras}},
        warnings=warnings,
        members=fits if len(fits) > 1 else [],
    )
