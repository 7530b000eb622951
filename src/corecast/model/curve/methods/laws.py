"""Classic scalability laws fitted by relative least squares: USL, Amdahl, Gustafson.

All three are written for throughput-like performance ``X(n)``; a time curve enters as
``1/T``.  Parameters are bounded to their physical ranges (the "priors" of the R usl
package: sigma, kappa >= 0; serial fractions in [0, 1]).
"""
from __future__ import annotations

import numpy as np

from ..entities import Fit, InputError, Measurements
from ..fitting import relative_lsq, rms
from .registry import register

Array = np.ndarray


def usl(n: Array, p: Array) -> Array:
    """Universal Scalability Law ``X(n) = lam n / (1 + sigma (n-1) + kappa n (n-1))``."""
    lam, sigma, kappa = p
    n = np.asarray(n, float)
    return lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def amdahl(n: Array, p: Array) -> Array:
    """Amdahl's law ``X(n) = X1 n / (1 + s (n-1))`` with serial fraction s."""
    x1, s = p
    n = np.asarray(n, float)
    return x1 * n / (1.0 + s * (n - 1.0))


def gustafson(n: Array, p: Array) -> Array:
    """Gustafson's scaled speedup ``X(n) = X1 (n - a (n-1))`` with serial fraction a."""
    x1, a = p
    n = np.asarray(n, float)
    return x1 * (n - a * (n - 1.0))


def fit_usl_params(n: Array, y: Array) -> Array:
    """(lam, sigma, kappa) for throughput ``y`` at counts ``n``."""
    n = np.asarray(n, float)
    y = np.asarray(y, float)
    # n / X = alpha + beta n + gamma n^2 is linear; weights y/n make it relative.
    design = np.column_stack([np.ones_like(n), n, n * n])[: n.size]
    w = y / n
    coef, *_ = np.linalg.lstsq(design * w[:, None], (n / y) * w, rcond=None)
    inv_lam = coef.sum()
    starts = [np.array([y[0] / n[0], 0.0, 0.0])]
    if np.isfinite(inv_lam) and inv_lam > 0:
        lam = 1.0 / inv_lam
        starts.append(np.array([lam, np.clip((coef[1] + coef[2]) * lam, 0, 1), max(coef[2] * lam, 0)]))
    return _best_of(usl, n, y, starts, ([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf]), "usl: ")


def _best_of(model, n: Array, y: Array, starts, bounds, what: str = "") -> Array:
    """The bounded relative least-squares fit from each start; the one of least error."""
    best, best_err = None, np.inf
    for p0 in starts:
        p = relative_lsq(model, n, y, p0, bounds=bounds)
        if p is None:
            continue
        err = np.sum(((model(n, p) - y) / y) ** 2)
        if err < best_err:
            best, best_err = p, err
    if best is None:
        raise InputError(f"{what}no start gives finite values on these points")
    return best


def _fit_bounded(model, n: Array, y: Array, serial_starts) -> Array:
    starts = [[y[0] / model(n[:1], np.array([1.0, s]))[0], s] for s in serial_starts]
    return _best_of(model, n, y, starts, ([0.0, 0.0], [np.inf, 1.0]))


def _law_fit(name: str, model, params: Array, names: tuple[str, ...], data: Measurements) -> Fit:
    p = params
    resid = (model(data.counts, p) - data.perf) / data.perf
    return Fit(
        method=name,
        candidate=name,
        perf=lambda n, p=p: model(np.asarray(n, float), p),
        reason=f"{name} fitted by relative least squares to {len(data)} points",
        params=dict(zip(names, map(float, p))),
        residual=rms(resid),
    )


@register("usl", "Universal Scalability Law (Gunther), sigma/kappa >= 0", 3)
def fit_usl(data: Measurements, nmax: float) -> Fit:
    data = data.at_target_size()
    return _law_fit("usl", usl, fit_usl_params(data.counts, data.perf), ("lambda", "sigma", "kappa"), data)


def fit_usl_falling_pair(data: Measurements) -> Fit | None:
    """USL through two points whose performance falls (Amdahl cannot fall): sigma = 1,
    kappa solved exactly, so X(n) = lam / (1 + kappa (n - 1)).  None when the fall is
    steeper than that form allows."""
    data = data.at_target_size()
    (a, b), (xa, xb) = data.counts[:2], data.perf[:2]
    denominator = xb * (b - 1.0) - xa * (a - 1.0)
    if denominator <= 0:
        return None
    kappa = (xa - xb) / denominator
    lam = xa * (1.0 + kappa * (a - 1.0))
    return _law_fit("usl", usl, np.array([lam, 1.0, kappa]), ("lambda", "sigma", "kappa"), data)


@register("amdahl", "Amdahl's law, serial fraction in [0, 1]", 2)
def fit_amdahl(data: Measurements, nmax: float) -> Fit:
    data = data.at_target_size()
    p = _fit_bounded(amdahl, data.counts, data.perf, (0.0, 0.1, 0.5))
    return _law_fit("amdahl", amdahl, p, ("x1", "serial_fraction"), data)


@register("gustafson", "Gustafson's scaled speedup, serial fraction in [0, 1]", 2)
def fit_gustafson(data: Measurements, nmax: float) -> Fit:
    data = data.at_target_size()
    p = _fit_bounded(gustafson, data.counts, data.perf, (0.0, 0.1, 0.5))
    return _law_fit("gustafson", gustafson, p, ("x1", "serial_fraction"), data)
