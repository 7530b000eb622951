"""Fit quality as Extra-P reports it (``extrap/entities/hypotheses.py``): the residual
sum of squares, adjusted R² and SMAPE of a model against the measured points.

Computed in the user's metric and unit on the per-count medians (Extra-P uses a
per-point mean or median likewise).  ``params`` is the model's number of fitted
parameters, its constant included, so the degrees of freedom are ``points - params``
(Extra-P's ``points - terms - 1``); adjusted R² is None where they are not positive or
the measurements do not vary.  A model through every point has no figure at all (None):
its RSS and SMAPE of about 0 would read as a perfect fit.
"""
from __future__ import annotations

import numpy as np


def fit_quality(predicted: np.ndarray, measured: np.ndarray, params: int) -> dict:
    """``{"params", "rss", "adj_r2", "smape", "interpolates"}`` (SMAPE in percent) of
    ``predicted`` against ``measured`` (same length); the figures are None where the
    model passes through every point, and RSS where no float holds it."""
    y = np.asarray(measured, float)
    # Squares of values near the float limits (1e300 s, 1e-308 s) overflow or underflow:
    # fit in units of the largest measurement, where R² and SMAPE do not change, and scale
    # RSS back (None where that leaves no float: inf, or 0 for a fit that misses).
    unit = float(np.max(np.abs(y))) or 1.0
    y = y / unit
    p = np.asarray(predicted, float) / unit
    diff = p - y
    rss_unit = float(np.sum(diff * diff))
    tss = float(np.sum((y - y.mean()) ** 2))
    dof = y.size - params
    adj = 1.0 - (rss_unit / tss) * (y.size - 1) / dof if tss > 0 and dof > 0 else None
    with np.errstate(over="ignore", under="ignore"):
        rss = float(rss_unit * unit * unit)
    if not np.isfinite(rss) or (rss == 0.0 and rss_unit > 0.0):
        rss = None
    total = np.abs(y) + np.abs(p)
    # where both are 0 the point is fitted exactly and adds nothing (as in Extra-P)
    smape = float(np.mean(np.where(total > 0, 2 * np.abs(diff) / np.where(total > 0, total, 1), 0)) * 100)
    # A model through every point (a continuation member, a law with as many parameters
    # as points) has no residual to judge it by: its RSS and R² say nothing (Burnham &
    # Anderson 2002 on saturated models), so it is marked rather than scored.  One with
    # no degree of freedom left that still misses a point does not pass through them:
    # its RSS and SMAPE stand, its adjusted R² is undefined (None above).
    with np.errstate(all="ignore"):
        rel = np.abs(diff) / np.where(np.abs(y) > 0, np.abs(y), 1.0)
    interpolates = bool(y.size > 0 and float(np.max(rel)) < INTERPOLATES)
    if interpolates:
        return {"params": int(params), "rss": None, "adj_r2": None, "smape": None, "interpolates": True}
    return {"params": int(params), "rss": rss, "adj_r2": None if adj is None else float(adj), "smape": smape,
            "interpolates": False}


INTERPOLATES = 1e-6  # relative miss below which a model passes through a point


NOT_FITTED = ("subset", "correlation", "value_scale")  # params entries that are not fitted numbers


def count_params(params: dict) -> int:
    """Fitted numbers in a fit's ``params``.  ``auto``'s are per member: it counts as its
    most flexible member, as a median of curves has no more freedom than that."""
    values = [v for k, v in params.items() if k not in NOT_FITTED]
    if values and all(isinstance(v, dict) for v in values):
        return max(count_params(v) for v in values)
    return sum(_numbers(v) for v in values)


def _numbers(v) -> int:
    if isinstance(v, dict):
        return sum(_numbers(x) for x in v.values())
    if isinstance(v, (list, tuple, np.ndarray)):
        return sum(_numbers(x) for x in v)
    return int(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool))
