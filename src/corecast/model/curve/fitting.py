"""Relative-error least squares shared by every model (kernels, laws, size model)."""
from __future__ import annotations

import warnings
from typing import Callable, Optional, Sequence

import numpy as np

Array = np.ndarray


def relative_residuals(model: Callable[[Array, Array], Array], n: Array, y: Array, p: Array) -> Array:
    """``(model(n, p) - y) / y`` with non-finite entries replaced by a large penalty."""
    r = (model(n, p) - y) / y
    return np.where(np.isfinite(r), r, 1e6)


def relative_lsq(
    model: Callable[[Array, Array], Array],
    n: Array,
    y: Array,
    p0: Sequence[float],
    bounds: tuple[Sequence[float], Sequence[float]] | None = None,
    max_nfev: int | None = None,
    jac: Callable[[Array, Array], Array] | None = None,
) -> Optional[Array]:
    """Minimise the summed squared relative error from ``p0``; never worse than ``p0``.

    ``jac(n, p)`` optionally gives d model / d p (rows per point) for exact derivatives.
    Returns None only when ``p0`` itself gives non-finite values.
    """
    from scipy.optimize import least_squares  # scipy only once a fit needs it (slow import)

    n = np.asarray(n, float)
    y = np.asarray(y, float)
    p0 = np.asarray(p0, float)

    def resid(p: Array) -> Array:
        return relative_residuals(model, n, y, p)

    r0 = (model(n, p0) - y) / y
    if not np.all(np.isfinite(r0)):
        return None
    if bounds is None:
        method = "lm" if n.size >= p0.size else "trf"
        kwargs: dict = {}
    else:
        method = "trf"
        lo, hi = (np.asarray(b, float) for b in bounds)
        p0 = np.clip(p0, lo, hi)
        kwargs = {"bounds": (lo, hi)}
    if jac is not None:
        def jacobian(p: Array) -> Array:
            j = jac(n, p) / y[:, None]
            return np.where(np.isfinite(j), j, 0.0)

        kwargs["jac"] = jacobian
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = least_squares(resid, p0, method=method, max_nfev=max_nfev or 60 * (p0.size + 1),
                                **kwargs)
        except (ValueError, np.linalg.LinAlgError):
            return p0
    if np.all(np.isfinite(res.x)) and np.sum(res.fun**2) <= np.sum(resid(p0) ** 2):
        return res.x
    return p0


def rms(x: Array) -> float:
    x = np.asarray(x, float)
    return float(np.sqrt(np.mean(x**2))) if x.size else 0.0
