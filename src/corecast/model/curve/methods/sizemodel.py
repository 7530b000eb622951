"""Speedup model with problem size and overhead (Oliveira, Furtunato, Silveira, Georgiou,
Eder and Xavier-de-Souza, "Application Speedup Characterization: Modeling Parallelization
Overhead and Variations of Problem Size and Number of Cores", ICPE 2018).

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
  ``f1`` and ``q3^N`` into ``q2``, so ``f3 = 0`` and ``f4 = q3 = 1`` are fixed and three
  parameters remain.  The method is therefore registered without a hard size requirement.
* Q is an overhead: ``q1, q2 >= 0`` keeps it non-negative, so every prediction is finite.
* The search keeps f inside [0, 1] at the measured sizes and fixes q1 = 0 (both explained
  at ``fit_sizemodel``).
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional

import numpy as np

from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from .registry import register
from .laws import fit_amdahl, fit_gustafson, fit_usl

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Array = np.ndarray

NAMES = ("f1", "f2", "f3", "log_f4", "q1", "q2", "log_q3")
BOUNDS = np.array(
    [(0.0, 1.0), (-1.0, 1.0), (-1.0, 1.0), (-5.0, 5.0), (0.0, 1.0), (0.0, 1.0), (-5.0, 5.0)]
)
SIZED = np.array([True, True, True, True, False, True, True])  # searched with several sizes
UNSIZED = np.array([True, True, False, False, False, True, False])  # searched with one size
PENALTY = 10.0  # weight of f leaving [0, 1] (see _violation)
SEED = 20180409  # fixed: fits are deterministic
DE_OPTIONS = dict(popsize=12, maxiter=100, tol=1e-8, polish=False, updating="deferred")


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


def _violation(theta: Array, levels: Array) -> Array:
    """How far f leaves [0, 1] at the measured sizes, for p = 1 and p -> infinity (f is
    monotone in 1/p, so this covers every p)."""
    f1, f2, f3, a = (c[..., None] for c in theta[:4]) if theta.ndim == 2 else theta[:4]
    at_inf = f1 + f3 * np.exp(a * levels)
    f = np.concatenate(np.broadcast_arrays(at_inf, at_inf + f2), axis=-1)
    return np.maximum(f - 1.0, 0.0) + np.maximum(-f, 0.0)


@dataclass(frozen=True)
class SizeModel:
    """A fitted size model at normalised sizes ``n = N / n_max``; ``time(p)`` and
    ``speedup(p)`` default to the target size ``n_target``."""

    theta: Array  # f1, f2, f3, log f4, q1, q2, log q3 (f4, q3 for normalised N)
    n_max: float  # the N that normalises to 1
    t1: dict  # normalised N -> fitted scale T1(N)
    n_target: float  # normalised N predictions are for
    mse: float  # mean squared relative error in time on the fitted points

    def speedup(self, p: ArrayLike, n: ArrayLike | None = None) -> Array:
        """The paper's S(p, N)."""
        p, n = np.broadcast_arrays(np.asarray(p, float), self.n_target if n is None else n)
        return 1.0 / model_d(self.theta, p, n.astype(float))

    def time(self, p: ArrayLike, n: ArrayLike | None = None) -> Array:
        """``T1(N) / S(p, N)``; ``n`` must be a measured (normalised) size."""
        p, n = np.broadcast_arrays(np.asarray(p, float), self.n_target if n is None else n)
        try:
            scale = np.array([self.t1[float(v)] for v in n.ravel()]).reshape(n.shape)
        except KeyError:
            raise InputError("the size model predicts only at measured sizes") from None
        return scale / self.speedup(p, n)

    def params(self) -> dict:
        out = dict(zip(NAMES, map(float, self.theta)))
        out["f4"] = float(np.exp(out.pop("log_f4")))
        out["q3"] = float(np.exp(out.pop("log_q3")))
        out["N_max"] = self.n_max
        out.update({f"T1[N={k * self.n_max:g}]": v for k, v in self.t1.items()})
        return out


def fit_sizemodel(p: ArrayLike, t: ArrayLike, size: ArrayLike | None = None, seed: int = SEED) -> SizeModel:
    """Fit the model to times ``t`` at counts ``p`` and problem sizes ``size`` (None:
    constant).  Predictions default to the largest size.

    The clamp in f makes the error surface flat and kinked wherever it binds, which
    traps optimisers far from good fits (on exact synthetic data DE stalled at 1-2% RMS
    error and 50% extrapolation error); so the search penalises f leaving [0, 1] at the
    measured sizes (the clamp then never binds on them; it stays in the model).
    q1 is fixed at 0: with a free T1(N) per size it is redundant (any fit with q1 > 0
    equals one with q1 = 0, f and q2 divided by 1 + q1, T1 multiplied by it).
    """
    from scipy.optimize import differential_evolution, least_squares  # slow import: only when fitting

    p = np.asarray(p, float).ravel()
    t = np.asarray(t, float).ravel()
    size = np.ones_like(p) if size is None else np.asarray(size, float).ravel()
    if not (p.size == t.size == size.size) or p.size < 4:
        raise InputError("sizemodel needs at least four (count, time, size) points")
    n_max = float(size.max())
    n = size / n_max
    levels = np.unique(n)
    free = SIZED if levels.size > 1 else UNSIZED
    bounds = BOUNDS[free]

    def full(x: Array) -> Array:
        theta = np.zeros((len(NAMES),) + np.shape(x)[1:])  # the fixed ones are 0
        theta[free] = x
        return theta

    def resid(theta: Array) -> Array:
        d = model_d(theta, p, n)
        fit = _scales(d, t, n) * d / t - 1.0
        return np.concatenate([fit, PENALTY * _violation(theta, levels)], axis=-1)

    def objective(x: Array) -> Array:  # x: (free,) or, vectorised, (free, population)
        return np.mean(resid(full(x)) ** 2, axis=-1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # one call per generation (scipy >= 1.9)
            de = differential_evolution(objective, bounds, seed=seed, vectorized=True, **DE_OPTIONS)
        except TypeError:
            de = differential_evolution(objective, bounds, seed=seed, **DE_OPTIONS)
        x = de.x
        try:  # DE finds the basin, least squares its bottom
            ls = least_squares(lambda x: resid(full(x)), x, bounds=tuple(bounds.T), method="trf")
            if np.mean(ls.fun**2) < de.fun:
                x = ls.x
        except (ValueError, np.linalg.LinAlgError):
            pass
    theta = full(x)
    d = model_d(theta, p, n)
    c = _scales(d, t, n)
    t1 = {float(v): float(c[np.flatnonzero(n == v)[0]]) for v in levels}
    return SizeModel(theta, n_max, t1, 1.0, float(np.mean((c * d / t - 1.0) ** 2)))


def problem_size(sizes: Mapping[str, Array]) -> Optional[Array]:
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


def compare_laws(data: Measurements, model: Optional[SizeModel] = None) -> dict:
    """RMS and max relative time error of the size model and of Amdahl, Gustafson and
    USL fitted on the same data (errors on the fitted points, as the paper's Table 1).
    The laws know no sizes, so each is fitted per size; all four are scored on the
    points of the sizes with >= 3 distinct counts."""
    model = model or fit_sizemodel(data.counts, data.time, problem_size(data.sizes))
    n, _ = _normalised(data, model)
    laws = {"amdahl": fit_amdahl, "gustafson": fit_gustafson, "usl": fit_usl}
    errors = {name: [] for name in ("sizemodel", *laws)}
    for v in np.unique(n):
        idx = np.flatnonzero(n == v)
        if np.unique(data.counts[idx]).size < 3:
            continue
        part = dataclasses.replace(data.subset(idx), sizes={})  # the laws see one curve
        errors["sizemodel"].append(model.time(part.counts, v) / part.time - 1.0)
        for name, fit in laws.items():
            errors[name].append(1.0 / (fit(part, 0.0).perf(part.counts) * part.time) - 1.0)
    out = {}
    for name, errs in errors.items():
        if errs:
            e = np.concatenate(errs)
            worst = float(np.max(np.abs(e)))
            out[name] = {"rms_error": rms(e), "max_error": worst, "points": int(e.size)}
    return out


@register("sizemodel", "speedup model with problem size and overhead (Oliveira et al.)", 4)
def fit_size(data: Measurements, nmax: float) -> Fit:
    model = fit_sizemodel(data.counts, data.time, problem_size(data.sizes))
    n, n_target = _normalised(data, model)
    model = dataclasses.replace(model, n_target=n_target)
    sized = len(model.t1) > 1
    laws = compare_laws(data, model)
    reason = f"size model fitted by differential evolution to {len(data)} points"
    reason += f" over {len(model.t1)} sizes (N = product of the size columns)" if sized else (
        ", constant problem size"
    )
    if laws:
        best = min(laws, key=lambda k: laws[k]["rms_error"])
        reason += f"; lowest error among it and the laws: {best}"
    return Fit(
        method="sizemodel",
        candidate="sizemodel" if sized else "sizemodel (constant N)",
        perf=lambda c, model=model: 1.0 / model.time(np.asarray(c, float)),
        reason=reason,
        params=model.params(),
        residual=rms(np.log(data.time / model.time(data.counts, n))),  # log(fit perf / measured)
        extras={"laws": laws},
    )
