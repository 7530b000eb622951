"""``corecast.predict``: measurements in, predictions with bands out (the plain function API
the CLI and the runtime both call)."""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from . import methods
from .entities import Fit, InputError, Measurements, Prediction, from_perf

# Band: log-space half-width = floor + fit residual + repetition spread, plus GROWTH per
# e-fold of extrapolation beyond the measured range (calibrated on the benchmark so the
# band holds most held-out points; see benchmarks/accuracy.py --band).
BAND_FLOOR = 0.02
BAND_GROWTH = 0.25
DEFAULT_KNEE_FRACTION = 0.1
MAX_COUNT = 100_000  # every count up to --upto is predicted: keep that grid bounded


def predict(
    counts: Iterable[float],
    values: Iterable[float],
    metric: str = "throughput",
    upto: int | None = None,
    at: Iterable[int] = (),
    method: str = "auto",
    stalls: Mapping[str, Iterable[float]] | None = None,
    sizes: Mapping[str, Iterable[float]] | None = None,
    knee_fraction: float = DEFAULT_KNEE_FRACTION,
) -> Prediction:
    """Predict performance at every count 1..``upto`` (default: twice the largest
    measured count) and at the counts in ``at``.

    ``metric`` is ``"time"`` (lower is better) or ``"throughput"``; repeated counts are
    repetitions.  Raises ``InputError`` with a one-line message on unusable input.
    """
    data = Measurements.from_samples(counts, values, metric, stalls=stalls, sizes=sizes)
    return predict_measurements(data, upto=upto, at=at, method=method, knee_fraction=knee_fraction)


def predict_measurements(
    data: Measurements,
    upto: int | None = None,
    at: Iterable[int] = (),
    method: str = "auto",
    knee_fraction: float = DEFAULT_KNEE_FRACTION,
) -> Prediction:
    spec = methods.get(method)
    methods.check_usable(spec, data)
    curve = data.at_target_size()
    top = float(curve.counts.max())
    upto = int(upto) if upto is not None else int(2 * top)
    at = [int(a) for a in at]
    if upto < 1:
        raise InputError(f"--upto must be at least 1, got {upto}")
    if max([upto] + at) > MAX_COUNT:
        raise InputError(f"counts above {MAX_COUNT} are not predicted (got {max([upto] + at)})")
    if any(a < 1 for a in at):
        raise InputError("counts in --at must be at least 1")
    grid = np.array(sorted(set(range(1, upto + 1)) | set(at)), dtype=float)
    fit = spec.fit(data, float(grid.max()))
    warnings = list(fit.warnings)

    perf = np.asarray(fit.perf(grid), dtype=float)
    bad = ~np.isfinite(perf) | (perf <= 0)
    if np.any(bad):
        floor = float(np.nanmin(curve.perf)) * 1e-3
        perf = np.where(bad, floor, perf)
        warnings.append(
            f"{fit.candidate} gave no positive prediction at {int(bad.sum())} counts; floored there"
        )
    low, high = band(fit, curve, grid, perf)

    base_i = 0
    base_count = float(curve.counts[base_i])
    base_perf = float(curve.perf[base_i])
    if base_count != 1:
        warnings.append(f"count 1 not measured: speedup is relative to {base_count:g}")
    speedup = perf / base_perf
    efficiency = speedup * base_count / grid
    best = perf.max()
    preferred = int(grid[np.flatnonzero(perf >= best * (1 - 1e-3))[0]])
    knee = knee_count(grid, perf, knee_fraction)
    if len(set(curve.counts.tolist())) < 3:
        warnings.append("only two measured counts: the prediction is a rough law fit with a wide band")
    if data.sizes:
        warnings.append(
            "predictions are for input size "
            + ", ".join(f"{k}={v:g}" for k, v in data.target_size().items())
        )

    return Prediction(
        method=spec.name,
        metric=data.metric,
        candidate=fit.candidate,
        reason=fit.reason,
        counts=grid.astype(int),
        values=from_perf(perf, data.metric),
        # The band is computed on performance; in time the low and high ends swap.
        low=from_perf(high if data.metric == "time" else low, data.metric),
        high=from_perf(low if data.metric == "time" else high, data.metric),
        speedup=speedup,
        efficiency=efficiency,
        speedup_base=base_count,
        preferred=preferred,
        knee=knee,
        knee_fraction=knee_fraction,
        requested_at=sorted(set(at)),
        measured=data,
        checkpoints=list(fit.checkpoints),
        params=fit.params,
        extras=fit.extras,
        warnings=warnings,
    )


def band(fit: Fit, curve: Measurements, grid: np.ndarray, perf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Low/high performance around ``perf``, widening with extrapolation distance."""
    lo_c, hi_c = float(curve.counts.min()), float(curve.counts.max())
    distance = np.log(np.maximum(grid / hi_c, 1.0)) + np.log(np.maximum(lo_c / grid, 1.0))
    few = 0.15 if len(curve) < 4 else 0.0
    width = BAND_FLOOR + fit.residual + float(np.median(curve.spread)) + few
    width = width + (BAND_GROWTH + few) * distance
    low = perf * np.exp(-width)
    high = perf * np.exp(width)
    if fit.low is not None:
        low = np.minimum(low, np.asarray(fit.low(grid), float))
    if fit.high is not None:
        high = np.maximum(high, np.asarray(fit.high(grid), float))
    low = np.where(np.isfinite(low) & (low > 0), low, perf * np.exp(-width))
    high = np.where(np.isfinite(high), high, perf * np.exp(width))
    return low, high


def knee_count(grid: np.ndarray, perf: np.ndarray, fraction: float) -> int:
    """The count beyond which one more thread adds less than ``fraction`` of one
    thread's performance (``perf(n+1) - perf(n) < fraction * perf(1)``)."""
    unit = perf[0] / grid[0]
    for i in range(grid.size - 1):
        if grid[i + 1] == grid[i] + 1 and perf[i + 1] - perf[i] < fraction * unit:
            return int(grid[i])
    return int(grid[-1])
