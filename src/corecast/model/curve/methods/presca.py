"""PreSca: function-approximation interpolation and extrapolation (Dragojević and
Guerraoui, "A Pragmatic Approach for Predicting the Scalability of Parallel
Applications", EPFL technical report, 2012, section 2).

Extrapolation designates the last ``c`` measurements as checkpoints, fits every kernel of
``PRESCA_KERNEL`` to the first k = 2, 4, 6, ... (and m - c) measurements, drops unrealistic
candidates over a fixed window and keeps the one with the lowest relative error at the
checkpoints.  The paper's filter runs over a fixed range (its MAX_THREADS), never over the
counts a user asks about; here that window is 1..``HORIZON`` x the largest measured count
(the paper scores m measurements out to 2m), so asking about a far count cannot change the
form, nor the answers, within it.  Past the window the form continues where it stays
realistic out to the count asked; where it does not, the best candidate that does takes
over from the window's end, scaled to meet it.  Interpolation uses a least-squares
polynomial, kept only where it stays near the measured points and between them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import functions, smallfit
from ..entities import Fit, InputError, Measurements, PerfFunction
from ..fitting import rms
from .registry import register

MIN_POINTS = 5
INTERPOLATION_MISS = 1.5  # an interpolation further off a measured point is not used
HORIZON = 2.0  # the realism window: counts up to this times the largest measured one
GAP_SAMPLES = 64  # points looked at between two neighbouring measured counts


@dataclass(frozen=True)
class Candidate:
    fit: functions.KernelFit
    subset: int  # training points used
    checkpoint_error: float  # RMS relative error at the checkpoints

    @property
    def label(self) -> str:
        return f"{self.fit.name}[first {self.subset}]"


def realistic(f: PerfFunction, nmax: float) -> bool:
    """PreSca's realism filter (Dragojević and Guerraoui 2012, section 2) on throughput-like
    performance over counts 1..nmax.

    Rejects non-positive values and abrupt changes: from n-1 to n performance may not
    grow by more than 1.5x linear (``f(n) <= 1.5 n/(n-1) f(n-1)``) nor fall faster than
    ``f(n) >= f(n-1) ((n-1)/n)^8``.  (For time this is the paper's pseudo-code form.)
    The rule itself is ``smallfit.realistic``, which the online tuner applies too.
    """
    n = np.arange(1.0, max(2.0, np.ceil(nmax)) + 1.0)
    with np.errstate(all="ignore"):
        y = np.asarray(f(n), dtype=float)
    return smallfit.realistic(y.tolist())


def holds(f: functions.KernelFit, nmax: float) -> bool:
    """Whether ``f`` has no pole or singularity in [1, ``nmax``] and is realistic (see
    ``realistic``) over it."""
    return f.kernel.valid(f.params, nmax) and realistic(f, nmax)


def checkpoint_count(m: int) -> int:
    return 4 if m >= 8 else 2


def candidates(
    n: np.ndarray,
    y: np.ndarray,
    nmax: float,
    kernel_names: Sequence[str] = functions.PRESCA_KERNEL,
    c: int | None = None,
    subset_sizes: Sequence[int] | None = None,
) -> list[Candidate]:
    """All realistic (subset, kernel) candidates, best checkpoint error first."""
    m = n.size
    c = checkpoint_count(m) if c is None else c
    cn, cy = n[m - c :], y[m - c :]
    # The paper's subsets 2, 4, 6, ...; the whole training part is added when m - c is
    # odd so that short curves still use every non-checkpoint point.
    sizes = subset_sizes or sorted(set(range(2, m - c + 1, 2)) | {m - c})
    out = []
    for k in sizes:
        for name in kernel_names:
            kf = functions.fit(name, n[:k], y[:k], nmax)
            if kf is None or not realistic(kf, nmax):
                continue
            err = rms((kf(cn) - cy) / cy)
            if np.isfinite(err):
                out.append(Candidate(kf, k, err))
    out.sort(key=lambda cand: cand.checkpoint_error)
    return out


def follows(f: PerfFunction, n: np.ndarray, y: np.ndarray) -> bool:
    """Whether ``f`` stays within ``INTERPOLATION_MISS`` (either way) of every measured
    point, and between two neighbouring measured counts within that factor of the lower
    and the higher of the two.

    A polynomial through every point can still cross zero between two of them (a time's
    pole: its reciprocal); the points alone do not show it.
    """
    order = np.argsort(n)
    n, y = np.asarray(n, float)[order], np.asarray(y, float)[order]
    with np.errstate(all="ignore"):
        ratio = np.asarray(f(n), float) / y
        if not np.all(np.isfinite(ratio) & (ratio > 0)):
            return False
        if not np.all(np.abs(np.log(ratio)) <= np.log(INTERPOLATION_MISS)):
            return False
        for a, b, ya, yb in zip(n, n[1:], y, y[1:]):
            q = np.linspace(a, b, GAP_SAMPLES + 1)
            if b - a <= 4 * GAP_SAMPLES:  # every whole count in the gap, as predict asks them
                q = np.union1d(q, np.arange(np.ceil(a), np.floor(b) + 1.0))
            v = np.asarray(f(q), float)
            lo, hi = min(ya, yb) / INTERPOLATION_MISS, max(ya, yb) * INTERPOLATION_MISS
            if not np.all(np.isfinite(v) & (v >= lo) & (v <= hi)):
                return False
    return True


def interpolate(n: np.ndarray, y: np.ndarray, online: bool = False) -> functions.KernelFit | None:
    """Least-squares polynomial of degree min(6, m-2) (online: min(6, m-1))."""
    degree = min(6, n.size - (1 if online else 2))
    return functions.fit(functions.polynomial(max(degree, 1)), n, y)


@register("presca", "PreSca function approximation (Rat/CubicLn/ExpRat kernels, checkpoints)", MIN_POINTS)
def fit_presca(data: Measurements, nmax: float) -> Fit:
    data = data.at_target_size()
    n, y = data.counts, data.perf
    if n.size < MIN_POINTS:
        raise InputError(f"method presca needs at least {MIN_POINTS} measured counts, got {n.size}")
    c = checkpoint_count(n.size)
    top = float(n.max())
    window = HORIZON * top
    cands = candidates(n, y, window, c=c)
    if not cands:
        raise InputError("method presca found no realistic candidate function for this curve")
    best = cands[0]
    onward, shift, warnings = best, 1.0, []
    if nmax > window and not holds(best.fit, nmax):
        # Counts past the window were asked: the form chosen there is unrealistic (or has a
        # pole) on the way to them, so the best candidate that is not continues it (fitted
        # for nmax, every candidate holds there: ``functions.fit`` and ``candidates`` check it).
        further = candidates(n, y, nmax, c=c)
        with np.errstate(all="ignore"):
            at = np.array([window])
            shifts = [float((best.fit(at) / cd.fit(at))[0]) for cd in further]
        usable = [(cd, k) for cd, k in zip(further, shifts) if np.isfinite(k) and k > 0]
        if usable:
            onward, shift = usable[0]
        else:
            warnings.append(f"no PreSca candidate stays realistic from {window:g} to {nmax:g}: "
                            f"{best.label} is continued as it is")
    inner = interpolate(n, y)
    if inner is not None and not follows(inner, n, y):
        # A degree-6 polynomial in n cannot follow a curve over a wide count range (e.g.
        # 1..2000 with a sharp optimum): there it is off by orders of magnitude, and the
        # extrapolation kernel is the better curve inside the range too.
        inner = None

    def perf(q, best=best, inner=inner, lo=float(n.min()), hi=top):
        q = np.asarray(q, float)
        out = best.fit(q)
        if onward is not best:
            out = np.where(q > window, shift * onward.fit(q), out)
        if inner is not None:
            inside = (q >= lo) & (q <= hi)
            interp = inner(q)
            # The interpolating polynomial is used inside the range only where sane.
            ok = inside & np.isfinite(interp) & (interp > 0)
            out = np.where(ok, interp, out)
        return out

    return Fit(
        method="presca",
        candidate=best.label,
        perf=perf,
        reason=(
            f"{len(cands)} realistic candidates; {best.label} has the lowest relative error "
            f"({best.checkpoint_error:.1%}) at the {c} checkpoints"
            + (f"; past {window:g} ({HORIZON:g} x the largest measured count) {onward.label} continues it"
               if onward is not best else "")
        ),
        params={"kernel": best.fit.name, "subset": best.subset, "coefficients": best.fit.params},
        residual=rms((perf(n) - y) / y),
        checkpoints=[float(v) for v in n[n.size - c :]],
        extras={"candidates": [{"candidate": cd.label, "checkpoint_error": cd.checkpoint_error}
                               for cd in cands[:10]],
                **({"continued_by": onward.label, "continued_from": window} if onward is not best else {})},
        warnings=warnings,
    )
