"""The prediction band: how far above and below a curve's predicted value the truth may
lie, from the fit's residual, the repetitions' spread and the distance of extrapolation
beyond the measured counts (``band``), and, where threads ahead share cores no measured
count shared, across every SMT yield of ``SMT_YIELD_RANGE`` (``smt_span``).  Read by
``prediction.predict_measurements``; in the model's performance units (higher is
better), so a time's low and high ends swap when it is turned back into a time."""
from __future__ import annotations

import warnings as warnings_module

import numpy as np

from .entities import Fit, Measurements
from ..machine.hardware import SMT_YIELD_RANGE, Hardware

# Band: log-space half-width = floor + fit residual + repetition spread, plus GROWTH per
# e-fold of extrapolation beyond the measured range (calibrated on the benchmark so the
# band holds most held-out points; see benchmarks/accuracy.py --band).
BAND_FLOOR = 0.02
BAND_GROWTH = 0.25


def band(
    fit: Fit, curve: Measurements, grid: np.ndarray, perf: np.ndarray, residual: float,
    model_grid: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Low/high performance around ``perf``, widening with extrapolation distance;
    ``residual``: RMS relative error of the fit on the measured points; ``model_grid``:
    the counts the fit is asked at for ``grid`` (default: the same)."""
    model_grid = grid if model_grid is None else model_grid
    lo_c, hi_c = float(curve.counts.min()), float(curve.counts.max())
    distance = np.log(np.maximum(grid / hi_c, 1.0)) + np.log(np.maximum(lo_c / grid, 1.0))
    few = 0.15 if len(curve) < 4 else 0.0
    width = BAND_FLOOR + residual + float(np.median(curve.spread)) + few
    width = width + (BAND_GROWTH + few) * distance
    low = perf * np.exp(-width)
    high = perf * np.exp(width)
    if fit.low is not None:
        low = np.minimum(low, np.asarray(fit.low(model_grid), float))
    if fit.high is not None:
        high = np.maximum(high, np.asarray(fit.high(model_grid), float))
    low = np.where(np.isfinite(low) & (low > 0), low, perf * np.exp(-width))
    high = np.where(np.isfinite(high), high, perf * np.exp(width))
    return low, high


def smt_span(fit: Fit, curve: Measurements, grid: np.ndarray, residual: float, machine: Hardware, top: float,
             low: np.ndarray, high: np.ndarray, equal_work: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``low``/``high`` widened to hold the prediction and band at every SMT yield of
    SMT_YIELD_RANGE beyond ``top``: SMT_YIELD is a typical figure, not a bound
    (``equal_work``: as Hardware.units)."""
    for smt_yield in SMT_YIELD_RANGE:
        model_grid = machine.model_counts(grid, top, smt_yield, equal_work)
        with np.errstate(all="ignore"), warnings_module.catch_warnings():
            warnings_module.simplefilter("ignore", RuntimeWarning)
            perf = np.asarray(fit.perf(model_grid), dtype=float)
            lo, hi = band(fit, curve, grid, perf, residual, model_grid)
        ok = np.isfinite(perf) & (perf > 0) & np.isfinite(hi)
        low, high = np.where(ok, np.minimum(low, lo), low), np.where(ok, np.maximum(high, hi), high)
    return low, high
