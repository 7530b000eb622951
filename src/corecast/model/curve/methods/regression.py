"""Log-log regression on small thread counts (Barnes, Reeves, Rountree, de Supinski,
Lowenthal and Schulz, "A Regression-Based Approach to Scalability Prediction", ICS 2008).

``log2 T = sum_i beta_i log2 x_i + g(q)`` with ``g(q) = gamma0 + gamma1 log2 q`` (linear)
or ``+ gamma2 (log2 q)^2`` (quadratic), fitted by least squares in log space (relative
error), ``x_i`` the ``size:NAME`` columns.  When stall columns show that the program waits
a lot, or more with more threads, compute time and wait time are fitted separately and the
predictions summed (the paper's "separate computation and communication").

Linear vs quadratic: the paper picks by "RMSE" from R.  Plain training RMSE always favours
the nested, bigger model; we use the residual standard error R reports,
``sqrt(RSS / (points - parameters))``, which charges the quadratic for its extra degree of
freedom (ties, e.g. exact power laws, go to the linear form).  On the shared measured
curves it extrapolated as well as always-quadratic and better than leave-one-out, which
the high-leverage end points make too shy of the quadratic.  A quadratic whose local
scaling exponent ``d log T / d log q`` leaves [-1.5, 8] before ``nmax`` (more than
1.5-power superlinear speedup, or a collapse faster than the PreSca realism filter allows)
is not used for extrapolation.  The paper's advice to "predict within the training runs"
is reported as a diagnostic: train on counts <= max/2, check on the rest
(``extras["within_training_error"]``).

Not implemented: the paper's per-processor variant (the thread with the most compute and
its wait) needs per-thread times, which ``Measurements`` does not carry.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional

import numpy as np

from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from .registry import register

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Array = np.ndarray
SizeArg = Optional[Mapping[str, object]]  # size name -> values (scalars broadcast)

RMSE_FLOOR = 1e-9  # log2 units; below this, errors are rounding and both forms tie
EXPONENT_RANGE = (-1.5, 8.0)  # plausible local exponent of T in q
COMPUTE_BOUND = 0.9  # the paper's threshold: >= 90% compute on average is compute bound
WAIT_MATERIAL = 0.01  # a wait below 1% of the time neither triggers nor feeds a split
CHECK_WARN = 0.2  # within-training error above which the fit is flagged


@dataclass(frozen=True)
class LogLogModel:
    """One fitted ``log2 T = X @ coef``; ``coef = [gamma0, gamma1, (gamma2,) beta_i...]``."""

    degree: int
    coef: Array
    size_names: tuple[str, ...]
    rmse: float  # training RMSE, log2 units
    sigma: float  # residual standard error sqrt(RSS / dof), log2 units: the selection score
    scores: dict = field(default_factory=dict)  # degree -> sigma of every form tried

    @property
    def form(self) -> str:
        return "loglog-quadratic" if self.degree == 2 else "loglog-linear"

    def predict(self, q: ArrayLike, sizes: SizeArg = None) -> Array:
        """Predicted time at counts ``q`` (and sizes, scalars broadcast)."""
        q = np.asarray(q, float)
        X = _design(q, self.degree, _size_logs(sizes, self.size_names, q.shape))
        return np.exp2(X @ self.coef)

    def exponent(self, q: ArrayLike) -> Array:
        """Local scaling exponent ``d log T / d log q`` at counts ``q``."""
        lq = np.log2(np.asarray(q, float))
        return self.coef[1] + (2.0 * self.coef[2] * lq if self.degree == 2 else 0.0 * lq)

    def params(self, prefix: str = "") -> dict:
        names = ["gamma0", "gamma1"] + (["gamma2"] if self.degree == 2 else [])
        names += [f"beta_{n}" for n in self.size_names]
        return {prefix + k: float(v) for k, v in zip(names, self.coef)}


@dataclass(frozen=True)
class SplitModel:
    """Compute and wait time fitted separately; the time is their sum."""

    compute: LogLogModel
    wait: LogLogModel

    @property
    def form(self) -> str:
        return f"compute+wait loglog ({self.compute.form[7:]}/{self.wait.form[7:]})"

    def predict(self, q: ArrayLike, sizes: SizeArg = None) -> Array:
        return self.compute.predict(q, sizes) + self.wait.predict(q, sizes)

    def params(self) -> dict:
        return {**self.compute.params("compute_"), **self.wait.params("wait_")}


def _size_logs(sizes: SizeArg, names: tuple[str, ...], shape) -> Array:
    if not names:
        return np.zeros(shape + (0,))
    if sizes is None or any(n not in sizes for n in names):
        raise InputError(f"sizes {', '.join(names)} are needed to predict with this model")
    cols = [np.broadcast_to(np.log2(np.asarray(sizes[n], float)), shape) for n in names]
    return np.stack(cols, axis=-1)


def _design(q: Array, degree: int, size_logs: Array) -> Array:
    lq = np.log2(q)
    cols = [np.ones_like(lq), lq] + ([lq * lq] if degree == 2 else [])
    return np.concatenate([np.stack(cols, axis=-1), size_logs], axis=-1)


def _lstsq(X: Array, y: Array) -> tuple[Array, float, float]:
    """Coefficients, training RMSE and residual standard error (inf without spare
    degrees of freedom)."""
    coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    rmse = max(rms(y - X @ coef), RMSE_FLOOR)
    dof = y.size - rank
    return coef, rmse, float(rmse * np.sqrt(y.size / dof)) if dof > 0 else np.inf


def fit_loglog(
    q: ArrayLike,
    t: ArrayLike,
    sizes: SizeArg = None,
    degree: int | None = None,
    nmax: float | None = None,
) -> LogLogModel:
    """Fit ``log2 t`` on ``log2 q`` (and ``log2`` of each size column).

    ``degree`` 1 or 2 forces the form of g(q); None chooses by residual standard error,
    rejecting a quadratic whose local exponent is implausible on [min q, ``nmax``].
    Size columns that are constant in the data carry no information and get beta 0.
    """
    q = np.asarray(q, float).ravel()
    t = np.asarray(t, float).ravel()
    if q.size != t.size or q.size < 2:
        raise InputError("regression needs at least two (count, time) points")
    if np.any(q <= 0) or np.any(t <= 0):
        raise InputError("regression needs positive counts and times")
    names = tuple(sorted(sizes or {}))
    logs = _size_logs(sizes, names, q.shape) if names else np.zeros(q.shape + (0,))
    y = np.log2(t)
    distinct = np.unique(q).size
    degrees = [degree] if degree else [d for d in (1, 2) if distinct > d]
    if not degrees or distinct <= min(degrees):
        raise InputError(f"g(q) of degree {degree or 1} needs more distinct counts than {distinct}")

    fits = {}
    for d in degrees:
        X = _design(q, d, logs)
        # A constant size column duplicates the intercept: give it beta 0 explicitly.
        live = np.r_[np.ones(d + 1, bool), np.ptp(logs, axis=0) > 0]
        coef = np.zeros(X.shape[1])
        coef[live], rmse, sigma = _lstsq(X[:, live], y)
        fits[d] = LogLogModel(d, coef, names, rmse, sigma)
    scores = {d: m.sigma for d, m in fits.items()}
    best = fits[degrees[0]]
    if 2 in fits and 1 in fits:
        lin, quad = fits[1], fits[2]
        top = max(nmax or 0.0, q.max())
        ex = quad.exponent(np.array([q.min(), top]))
        plausible = bool(np.all((ex >= EXPONENT_RANGE[0]) & (ex <= EXPONENT_RANGE[1])))
        best = quad if plausible and quad.sigma < lin.sigma else lin
    return LogLogModel(best.degree, best.coef, names, best.rmse, best.sigma, scores)


def wait_time(data: Measurements) -> Array | None:
    """Per-point wait time on the critical path, or None without stall columns.

    Stall columns hold wait time summed over all threads (the project-wide meaning, as
    ESTIMA's stall cycles summed over cores); the average thread's share, total / n,
    stands for the critical path's wait inside ``T``.
    """
    if not data.stalls:
        return None
    return np.sum([np.asarray(a, float) for a in data.stalls.values()], axis=0) / data.counts


def split_decision(data: Measurements, wait: Array) -> tuple[bool, str]:
    """The paper's rule: split unless compute bound (>= 90% compute on average) and the
    wait does not grow with q.  "Grows" = rank correlation with q above 0.5 on the
    target-size curve, ignoring waits under 1% of the time (noise-level)."""
    t = data.time
    share = float(np.mean(np.clip(1.0 - wait / t, 0.0, 1.0)))
    mask = np.ones(len(data), bool)
    for k, v in data.target_size().items():
        mask &= data.sizes[k] == v
    qc, wc, tc = data.counts[mask], wait[mask], t[mask]
    grows = bool(
        qc.size >= 3
        and wc[np.argmax(qc)] >= WAIT_MATERIAL * tc[np.argmax(qc)]
        and _spearman(qc, wc) > 0.5
    )
    why = f"compute {share:.0%} of time on average" + ("; wait grows with the count" if grows else "")
    return share < COMPUTE_BOUND or grows, why


def _spearman(x: Array, y: Array) -> float:
    rx, ry = (np.argsort(np.argsort(v, kind="stable"), kind="stable").astype(float) for v in (x, y))
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def fit_split(q: ArrayLike, t: ArrayLike, wait: ArrayLike, sizes: SizeArg = None, nmax: float | None = None) -> SplitModel:
    """Fit compute = ``t - wait`` and the wait separately.  Each part picks its own g(q);
    that is the paper's pick by weighted-average RMSE, whose minimum over the combinations
    is each part's own minimum.

    Compute is clipped to 1% of ``t`` (log space needs it positive); the wait is fitted on
    the points where it is at least 1% of ``t``: smaller waits (e.g. 0 at one thread) would
    dominate a log fit while hardly counting in the sum.  Raises InputError when either
    part has too few usable points.
    """
    q, t, wait = (np.asarray(a, float).ravel() for a in (q, t, wait))
    compute = np.maximum(t - wait, WAIT_MATERIAL * t)
    keep = wait >= WAIT_MATERIAL * t
    if np.unique(q[keep]).size < 3:
        raise InputError("too few counts with a material wait time to fit it separately")
    sub = {k: np.asarray(v, float).ravel()[keep] for k, v in sizes.items()} if sizes else None
    return SplitModel(
        compute=fit_loglog(q, compute, sizes, nmax=nmax),
        wait=fit_loglog(q[keep], wait[keep], sub, nmax=nmax),
    )


def within_training_error(q: ArrayLike, t: ArrayLike, sizes: SizeArg = None,
                          wait: ArrayLike | None = None) -> float | None:
    """The paper's check: train on counts <= max/2, RMS relative error on the rest.

    None when the lower half has fewer than 3 distinct counts."""
    q, t = np.asarray(q, float), np.asarray(t, float)
    train = q <= q.max() / 2.0
    if np.unique(q[train]).size < 3 or train.all():
        return None
    part = {k: np.asarray(v, float)[train] for k, v in sizes.items()} if sizes else None
    rest = {k: np.asarray(v, float)[~train] for k, v in sizes.items()} if sizes else None
    try:
        model = (
            fit_split(q[train], t[train], np.asarray(wait)[train], part, nmax=q.max())
            if wait is not None
            else fit_loglog(q[train], t[train], part, nmax=q.max())
        )
    except InputError:
        return None
    return rms(model.predict(q[~train], rest) / t[~train] - 1.0)


@register("regression", "log-log regression on counts and input sizes (Barnes et al.)", 3,
          reads=("stalls", "sizes"))  # stalls: the communication it splits off (wait_time)
def fit_regression(data: Measurements, nmax: float) -> Fit:
    q, t, sizes = data.counts, data.time, (data.sizes or None)
    target = data.target_size()
    wait = wait_time(data)
    model: LogLogModel | SplitModel = fit_loglog(q, t, sizes, nmax=nmax)
    reason = f"{model.form} by least squares in log2 space on {len(data)} points"
    used_wait = None
    if wait is None:
        reason += "; no stall columns, total time only"
    else:
        split, why = split_decision(data, wait)
        if split:
            try:
                model = fit_split(q, t, wait, sizes, nmax=nmax)
                used_wait = wait
                reason = f"{why}: compute and wait fitted separately and summed ({model.form})"
            except InputError as exc:
                reason += f"; {why} but not split: {exc}"
        else:
            reason += f"; compute bound ({why}), total time fitted"
    if isinstance(model, LogLogModel):
        reason += f" (residual standard error by form: {_fmt_scores(model.scores)})"

    def perf(n, model=model, target=target):
        n = np.asarray(n, float)
        return 1.0 / model.predict(n, target or None)

    fitted = model.predict(q, sizes)
    check = within_training_error(q, t, sizes, used_wait)
    warnings = []
    if check is not None and check > CHECK_WARN:
        warnings.append(
            f"regression trained on counts <= {q.max() / 2:g} missed the rest by {check:.0%}: "
            "extrapolation may be poor"
        )
    return Fit(
        method="regression",
        candidate=model.form,
        perf=perf,
        reason=reason,
        params=model.params(),
        residual=rms(np.log(t / fitted)),  # log(fit perf / measured perf)
        extras={"within_training_error": check, "split": used_wait is not None},
        warnings=warnings,
    )


def _fmt_scores(scores: dict) -> str:
    forms = {1: "linear", 2: "quadratic"}
    return ", ".join(f"{forms[d]} {s:.3g}" for d, s in sorted(scores.items()))
