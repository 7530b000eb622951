"""Relative least-squares fits of a handful of points in plain Python (standard library only).

OPreSca's online step (``corecast.model.tuning.tuners``) fits one small kernel to the few counts a
tuner has measured, once per decision.  Inside a profiled program importing numpy and
scipy for that would cost more (0.4-0.6 s of CPU) than all of a run's decisions, so the
step fits here: polynomials, and the rational kernels ``(a0 + ... + ai n^i) / (1 + b1 n +
... + bj n^j)`` of ``functions.rational`` linearised as there (Levy's method refined by
Sanathanan-Koerner reweighting) without its Levenberg-Marquardt polish.  Counts are
divided by ``scale`` (the largest candidate) before the powers are taken, and the least
squares are solved by Householder QR on unit-norm columns, so n^3 at 64 threads does not
ruin the conditioning.  Every fit returns None rather than raising.
"""
from __future__ import annotations

import math

TYPE_CHECKING = False  # typing costs start-up time in every steered program
if TYPE_CHECKING:
    from typing import Optional, Sequence

# PreSca's realism filter (Dragojević and Guerraoui, "A Pragmatic Approach for Predicting
# the Scalability of Parallel Applications", EPFL technical report, 2012, section 2;
# ``methods.presca.realistic`` applies the same bounds to numpy
# curves): from n-1 to n, performance may grow by at most GROWTH times linear and fall by
# at most a factor ((n-1)/n)^DECAY_POWER.
GROWTH = 1.5
DECAY_POWER = 8
# OPreSca's extrapolation type by number of measurements (Dragojević and Guerraoui 2012,
# section 3; Rat33 beyond).
OPRESCA_BY_COUNT = {3: "Rat11", 4: "Rat12", 5: "Rat22", 6: "Rat23"}
SK_ITERATIONS = 4  # Sanathanan-Koerner reweightings, as kernels.rational's start


class SmallFit:
    """A fitted polynomial (``den == [1.0]``) or rational function of u = n / scale."""

    def __init__(self, name: str, num: list[float], den: list[float], scale: float) -> None:
        self.name = name
        self.num = num
        self.den = den
        self.scale = scale

    def denominator(self, n: float) -> float:
        return _horner(self.den, n / self.scale)

    def __call__(self, n: float) -> float:
        den = self.denominator(n)
        if den == 0.0:
            return math.nan
        return _horner(self.num, n / self.scale) / den


def _horner(coef: Sequence[float], u: float) -> float:
    out = 0.0
    for c in reversed(coef):
        out = out * u + c
    return out


def lstsq(rows: Sequence[Sequence[float]], rhs: Sequence[float]) -> Optional[list[float]]:
    """x minimising |rows @ x - rhs| (Householder QR); None when rank deficient or not finite."""
    m = len(rows)
    p = len(rows[0]) if m else 0
    if p == 0 or m < p:
        return None
    cols = [[float(r[j]) for r in rows] for j in range(p)]
    norms = [math.sqrt(math.fsum(v * v for v in c)) for c in cols]
    if not all(math.isfinite(s) and s > 0 for s in norms):
        return None
    cols = [[v / s for v in c] for c, s in zip(cols, norms)]
    b = [float(v) for v in rhs]
    if not all(math.isfinite(v) for v in b):
        return None
    for k in range(p):
        x = cols[k][k:]
        alpha = -math.copysign(math.sqrt(math.fsum(v * v for v in x)), x[0])
        v = x[:]
        v[0] -= alpha
        vv = math.fsum(t * t for t in v)
        if vv == 0.0:
            continue
        for target in cols[k:] + [b]:
            d = 2.0 * math.fsum(v[i] * target[k + i] for i in range(len(v))) / vv
            for i in range(len(v)):
                target[k + i] -= d * v[i]
    diag = [abs(cols[k][k]) for k in range(p)]
    if min(diag) <= 1e-12 * max(diag):
        return None  # columns (nearly) dependent: too few distinct counts for this kernel
    x = [0.0] * p
    for k in reversed(range(p)):
        x[k] = (b[k] - math.fsum(cols[j][k] * x[j] for j in range(k + 1, p))) / cols[k][k]
    out = [xi / s for xi, s in zip(x, norms)]
    return out if all(math.isfinite(v) for v in out) else None


def polynomial(n: Sequence[float], y: Sequence[float], degree: int, scale: float) -> Optional[SmallFit]:
    """Least-squares polynomial of ``degree`` in n, minimising relative error."""
    if degree < 0 or len(set(n)) <= degree or any(v <= 0 for v in y):
        return None
    rows = [[(c / scale) ** i / v for i in range(degree + 1)] for c, v in zip(n, y)]
    coef = lstsq(rows, [1.0] * len(y))
    return None if coef is None else SmallFit(f"Poly{degree}", coef, [1.0], scale)


def rational(n: Sequence[float], y: Sequence[float], num_deg: int, den_deg: int,
             scale: float) -> Optional[SmallFit]:
    """``Rat{num_deg}{den_deg}`` fitted by linearised relative least squares; None without
    a pole-free fit on [1, scale]."""
    na = num_deg + 1
    if len(set(n)) < na + den_deg or any(v <= 0 for v in y):
        return None
    u = [c / scale for c in n]
    base = [[ui**i for i in range(na)] + [-yi * ui**j for j in range(1, den_deg + 1)] for ui, yi in zip(u, y)]
    weight = [1.0 / yi for yi in y]  # relative error; then 1/den (Sanathanan-Koerner)
    fit = None
    for _ in range(SK_ITERATIONS):
        coef = lstsq([[a * w for a in row] for row, w in zip(base, weight)], [yi * w for yi, w in zip(y, weight)])
        if coef is None:
            break
        fit = SmallFit(f"Rat{num_deg}{den_deg}", coef[:na], [1.0] + coef[na:], scale)
        dens = [fit.denominator(c) for c in n]
        if any(abs(d) < 1e-12 for d in dens):
            break
        weight = [1.0 / (yi * abs(d)) for yi, d in zip(y, dens)]
    if fit is None or not _pole_free(fit, scale):
        return None
    return fit


def _pole_free(fit: SmallFit, nmax: float) -> bool:
    """The denominator (1 at n = 0) keeps its sign on [0.5, nmax + 0.5], sampled every half count."""
    steps = int(2 * nmax) + 2
    return all(fit.denominator(0.5 * k) > 1e-9 for k in range(1, steps))


def realistic(values: Sequence[float]) -> bool:
    """PreSca's realism filter on performance at counts 1, 2, ... (``values[0]`` is count 1)."""
    if not all(math.isfinite(v) and v > 0 for v in values):
        return False
    for k in range(2, len(values) + 1):
        prev, cur = values[k - 2], values[k - 1]
        ratio = k / (k - 1.0)
        if cur > GROWTH * ratio * prev or cur < prev * ratio**-DECAY_POWER:
            return False
    return True
