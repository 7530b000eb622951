"""Speedup model with problem size and overhead (SPEC section 6, Oliveira et al. 2018).

``S(p, N) = 1 / ((1 - f) + f/p + Q)``, ``f = clamp(f1 + f2/p + f3 f4^N, 0, 1)``,
``Q = q1 + q2 p / q3^N``, fitted to every measured (p, N) by differential evolution (the
paper used particle swarm) minimising the mean squared relative error in time, then
polished by bounded least squares.

Choices the paper leaves open:

* Time is ``T(p, N) = T1(N) / S(p, N)``.  The scale ``T1(N)`` is one free number per
  measured size, solved in closed form inside the objective (relative least squares is
  linear in it), so p = 1 need not be measured at any size.
* N is the product of the ``size:NAME`` columns (the total work for grid-like inputs),
  divided by its largest value so ``f4^N`` and ``q3^N`` stay well conditioned; ``f4`` and
  ``q3`` are reported for that normalised N and are searched as logarithms.
* Without sizes (or with a single measured size) N is constant: ``f3 f4^N`` merges into
  ``f1`` and ``q3^N`` into ``q2``, so ``f3 = 0`` and ``f4 = q3 = 1`` are fixed and four
  parameters remain.  The method is therefore registered without a hard size requirement.
* Q is an overhead: ``q1, q2 >= 0`` keeps it non-negative, so every prediction is finite.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy.optimize import differential_evolution, least_squares

from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from . import register
from .laws import fit_amdahl, fit_gustafson, fit_usl

Array = np.ndarray

NAMES = ("f1", "f2", "f3", "log_f4", "q1", "q2", "log_q3")
BOUNDS = np.array([(0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0), (-5.0, 5.0), (0.0, 1.0), (0.0, 1.0), (-5.0, 5.0)])
SIZE_FREE = np.array([True, True, False, False, True, True, False])  # free without sizes
SEED = 20180409  # fixed: fits are deterministic
DE_OPTIONS = dict(popsize=12, maxiter=80, tol=1e-7, mutation=(0.5, 1.0), recombination=0.7)


def model_d(theta: Array, p: Array, n: Array) -> Array:
    """``1 / S(p, N)`` for parameter columns ``theta`` (7,) or (7, k) -> (m,) or (k, m)."""
    th = np.asarray(theta, float)
    f1, f2, f3, a, q1, q2, b = (c[..., None] for c in th) if th.ndim == 2 else th
    f = np.clip(f1 + f2 / p + f3 * np.exp(a * n), 0.0, 1.0)
    q = q1 + q2 * p * np.exp(-b * n)
    return (1.0 - f) + f / p + q


def _scales(d: Array, t: Array, groups: Array) -> Array:
    """Per-group scale minimising sum((c d / t - 1)^2): c = sum(r) / sum(r^2), r = d / t."""
    r = d / t
    ind = (groups[:, None] == np.unique(groups)[None, :]).astype(float)  # (m, k)
    c = (r @ ind) / np.maximum((r * r) @ ind, 1e-300)
    return c @ ind.T  # back to per point


@dataclass(frozen=True)
class SizeModel:
    """A fitted size model; ``time(p)`` is at the target size, ``time(p, n)`` at any
    measured normalised size ``n`` (``N / n_max``)."""

    theta: Array  # f1, f2, f3, log f4, q1, q2, log q3 (f4, q3 for normalised N)
    n_max: float  # the N that normalises to 1
    t1: dict  # normalised N -> fitted scale T1(N)
    n_target: float  # normalised N predictions are for
    mse: float  # mean squared relative error in time at the fit

    def time(self, p, n=None) -> Array:
        """Time at counts ``p`` and measured normalised sizes ``n`` (default: target)."""
        p, n = np.broadcast_arrays(np.asarray(p, float), self.n_target if n is None else np.asarray(n, float))
        if any(float(v) not in self.t1 for v in np.unique(n)):
            raise InputError("the size model predicts only at measured sizes")
        scale = np.array([self.t1[float(v)] for v in n.ravel()]).reshape(n.shape)
        return scale * model_d(self.theta, p, n)

    def speedup(self, p, n: float | None = None) -> Array:
        """The paper's S(p, N)."""
        p = np.asarray(p, float)
        n = self.n_target if n is None else float(n)
        return 1.0 / model_d(self.theta, p, np.full_like(p, n))

    def params(self) -> dict:
        out = dict(zip(NAMES, map(float, self.theta)))
        out["f4"] = float(np.exp(out.pop("log_f4")))
        out["q3"] = float(np.exp(out.pop("log_q3")))
        out["N_max"] = self.n_max
        return out


def fit_sizemodel(p, t, size=None, seed: int = SEED) -> SizeModel:
    """Fit the model to times ``t`` at counts ``p`` and problem sizes ``size`` (None:
    constant).  Predictions default to the largest size."""
    p = np.asarray(p, float).ravel()
    t = np.asarray(t, float).ravel()
    size = np.ones_like(p) if size is None else np.asarray(size, float).ravel()
    if not (p.size == t.size == size.size) or p.size < 4:
        raise InputError("sizemodel needs at least four (count, time, size) points")
    n_max = float(size.max())
    n = size / n_max
    free = SIZE_FREE | (np.unique(n).size > 1)
    fixed = np.zeros(len(NAMES))  # f3 = 0, log f4 = log q3 = 0 where not free

    def full(x: Array) -> Array:
        x = np.asarray(x, float)
        th = np.repeat(fixed[:, None], x.shape[1], axis=1) if x.ndim == 2 else fixed.copy()
        th[free] = x
        return th

    def resid(th: Array) -> Array:
        d = model_d(th, p, n)
        return _scales(d, t, n) * d / t - 1.0

    def objective(x: Array) -> Array:  # vectorised: x is (free, population)
        return np.mean(resid(full(x)) ** 2, axis=-1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        de = differential_evolution(
            objective, BOUNDS[free], seed=seed, polish=False, vectorized=True,
            updating="deferred", **DE_OPTIONS,
        )
        x = de.x
        try:  # polish: the clamp makes the surface piecewise smooth, so keep it only if better
            ls = least_squares(lambda x: resid(full(x)), x, bounds=tuple(BOUNDS[free].T), method="trf")
            if np.mean(ls.fun**2) < de.fun:
                x = ls.x
        except (ValueError, np.linalg.LinAlgError):
            pass
    theta = full(x)
    d = model_d(theta, p, n)
    c = _scales(d, t, n)
    t1 = {float(v): float(c[np.flatnonzero(n == v)[0]]) for v in np.unique(n)}
    return SizeModel(theta, n_max, t1, 1.0, float(np.mean(resid(theta) ** 2)))


def problem_size(sizes: Mapping[str, Array]) -> Array | None:
    """N per point: the product of the size columns (None without sizes)."""
    if not sizes:
        return None
    return np.prod([np.asarray(v, float) for v in sizes.values()], axis=0)


def _normalised(data: Measurements, model: SizeModel) -> tuple[Array, float]:
    """Normalised N per point and at the target size (the largest measured one)."""
    size = problem_size(data.sizes)
    if size is None:
        return np.ones(len(data)), 1.0
    n = size / model.n_max
    mask = np.ones(len(data), bool)
    for k, v in data.target_size().items():
        mask &= data.sizes[k] == v
    return n, float(n[mask][0])


def compare_laws(data: Measurements, model: SizeModel | None = None) -> dict:
    """RMS and max relative time error of the size model and of Amdahl, Gustafson and
    USL fitted on the same data.  The laws know no sizes, so each is fitted per size;
    all four are scored on the points of the sizes with >= 3 distinct counts."""
    model = model or fit_sizemodel(data.counts, data.time, problem_size(data.sizes))
    n, _ = _normalised(data, model)
    laws = {"amdahl": fit_amdahl, "gustafson": fit_gustafson, "usl": fit_usl}
    errors = {name: [] for name in ("sizemodel", *laws)}
    for v in np.unique(n):
        idx = np.flatnonzero(n == v)
        if np.unique(data.counts[idx]).size < 3:
            continue
        part = data.subset(idx)
        errors["sizemodel"].append(model.time(part.counts, v) / part.time - 1.0)
        for name, fit in laws.items():
            errors[name].append(1.0 / (fit(part, 0.0).perf(part.counts) * part.time) - 1.0)
    out = {}
    for name, errs in errors.items():
        e = np.concatenate(errs) if errs else np.zeros(0)
        if e.size:
            out[name] = {"rms_error": rms(e), "max_error": float(np.max(np.abs(e))), "points": int(e.size)}
    return out


@register("sizemodel", "speedup model with problem size and overhead (Oliveira et al.)", 4)
def fit_size_method(data: Measurements, nmax: float) -> Fit:
    model = fit_sizemodel(data.counts, data.time, problem_size(data.sizes))
    n, n_t = _normalised(data, model)
    model = SizeModel(model.theta, model.n_max, model.t1, n_t, model.mse)
    sized = len(model.t1) > 1
    laws = compare_laws(data, model)
    reason = f"size model fitted by differential evolution to {len(data)} points" + (
        f" over {len(model.t1)} sizes (N = product of the size columns)" if sized else ", constant problem size"
    )
    if laws:
        best = min(laws, key=lambda k: laws[k]["rms_error"])
        reason += f"; lowest error among size model and laws: {best}"
    return Fit(
        method="sizemodel",
        candidate="sizemodel" if sized else "sizemodel (constant N)",
        perf=lambda c, model=model: 1.0 / model.time(np.asarray(c, float)),
        reason=reason,
        params={**model.params(), "T1": {f"{k:g}": v for k, v in model.t1.items()}},
        residual=rms(np.log(data.time / model.time(data.counts, n))),  # log(fit perf / measured perf)
        extras={"laws": laws},
    )
