"""The one registry of function kernels every method fits (those of PreSca and OPreSca:
Dragojević and Guerraoui, "A Pragmatic Approach for Predicting the Scalability of Parallel
Applications", EPFL technical report, 2012; and ESTIMA's: Chatzopoulos, Dragojević and
Guerraoui, "ESTIMA: Extrapolating ScalabiliTy of In-Memory Applications", ACM TOPC 2017).

Each kernel is fitted by minimising the *relative* error ``(f(n) - y) / y``.  Kernels
that are linear in their parameters are solved exactly by weighted least squares;
rational and exponential ones start from a linearised fit (Levy's method refined by
Sanathanan-Koerner reweighting) and are polished with Levenberg-Marquardt.  A
rational function with a pole in ``[1, nmax]`` yields no fit.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np
from .fitting import relative_lsq

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Array = np.ndarray


@dataclass(frozen=True)
class Kernel:
    name: str
    formula: str
    nparams: int  # as the papers count them (decides the smallest usable subset)
    evaluate: Callable[[Array, Array], Array]
    start: Callable[[Array, Array], Optional[Array]]  # relative-error start from (n, y)
    valid: Callable[[Array, float], bool]  # no pole / singularity in [1, nmax]
    linear: bool = False  # True: the start already is the exact relative-LS optimum
    # Bounds that guarantee validity, used when the free fit is invalid (a pole in range).
    safe_bounds: Optional[Callable[[int], tuple[list[float], list[float]]]] = None
    # d f / d p as an (n.size, nparams) matrix; without it derivatives are numerical.
    jacobian: Optional[Callable[[Array, Array], Array]] = None


@dataclass(frozen=True)
class KernelFit:
    kernel: Kernel
    params: Array
    error: float  # RMS relative error on the fitted points

    def __call__(self, n) -> Array:
        return self.kernel.evaluate(np.asarray(n, dtype=float), self.params)

    @property
    def name(self) -> str:
        return self.kernel.name


def _lstsq(a: Array, b: Array) -> Optional[Array]:
    """Least squares of a @ p ~ b; None when it has no finite answer."""
    if not np.all(np.isfinite(a)):
        return None
    try:
        p, *_ = np.linalg.lstsq(a, b, rcond=None)
    except np.linalg.LinAlgError:
        return None
    return p if np.all(np.isfinite(p)) else None


def _wlstsq(design: Array, y: Array) -> Optional[Array]:
    """Least squares of design @ p ~ y with relative weights 1/y."""
    w = 1.0 / np.abs(y)
    return _lstsq(design * w[:, None], y * w)


def _always(_p: Array, _nmax: float) -> bool:
    return True


# -- linear-in-parameters kernels ------------------------------------------------------

def _linear_kernel(name: str, formula: str, basis: Callable[[Array], Array]) -> Kernel:
    def evaluate(n: Array, p: Array) -> Array:
        return basis(n) @ p

    def start(n: Array, y: Array) -> Optional[Array]:
        return _wlstsq(basis(n), y)

    nparams = basis(np.ones(1)).shape[1]
    return Kernel(name, formula, nparams, evaluate, start, _always, linear=True)


def _poly_basis(degree: int) -> Callable[[Array], Array]:
    return lambda n: np.vander(np.asarray(n, float), degree + 1, increasing=True)


def polynomial(degree: int) -> Kernel:
    """Polynomial of the given degree (PreSca's interpolation kernel)."""
    return _linear_kernel(f"Poly{degree}", f"sum a_i n^i, i<={degree}", _poly_basis(degree))


CUBICLN = _linear_kernel(
    "CubicLn",
    "a + b ln n + c ln^2 n + d ln^3 n",
    lambda n: np.vander(np.log(np.asarray(n, float)), 4, increasing=True),
)
POLY25 = _linear_kernel(
    "Poly25",
    "a + b n + c n^2 + d n^2.5",
    lambda n: np.column_stack([np.ones_like(n), n, n**2, n**2.5]).astype(float),
)


# -- rational kernels ------------------------------------------------------------------

def _horner(n: Array, c: Array) -> Array:
    """``sum c[i] n^i``: numpy's polyval in the same order of operations (so the same
    bits) without its per-call checks, which dominated fitting thousands of kernels."""
    out = c[-1] + n * 0.0
    for coef in c[-2::-1]:
        out = coef + out * n
    return out


def rational(num_deg: int, den_deg: int) -> Kernel:
    """``(a0 + ... + a_i n^i) / (1 + b1 n + ... + b_j n^j)``."""
    na = num_deg + 1

    def parts(n: Array, p: Array) -> tuple[Array, Array]:
        return _horner(n, p[:na]), _horner(n, np.concatenate([[1.0], p[na:]]))

    def evaluate(n: Array, p: Array) -> Array:
        num, den = parts(np.asarray(n, float), p)
        with np.errstate(divide="ignore", invalid="ignore"):
            return num / den

    def start(n: Array, y: Array) -> Optional[Array]:
        # Levy: a(n) - y b(n) = y, then Sanathanan-Koerner reweighting by 1/den so the
        # linear residual approaches the true relative error.
        design = np.column_stack(
            [n**i for i in range(na)] + [-y * n**j for j in range(1, den_deg + 1)]
        )
        weight = np.ones_like(y)
        p = None
        for _ in range(4):
            q = _wlstsq(design * weight[:, None], y * weight)
            if q is None:
                break
            p = q
            _, den = parts(n, p)
            if np.any(np.abs(den) < 1e-12):
                break
            weight = 1.0 / np.abs(den)
        return p

    def valid(p: Array, nmax: float) -> bool:
        den = np.concatenate([[1.0], p[na:]])
        roots = np.roots(den[::-1]) if np.any(den[1:] != 0) else np.array([])
        real = roots[np.abs(roots.imag) < 1e-9].real
        return not np.any((real >= 0.5) & (real <= nmax + 0.5))

    coeffs = " + ".join(["a0"] + [f"a{i} n^{i}" for i in range(1, na)])
    dcoeffs = " + ".join(["1"] + [f"b{j} n^{j}" for j in range(1, den_deg + 1)])
    def jacobian(n: Array, p: Array) -> Array:
        num, den = parts(np.asarray(n, float), p)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = num / den
            da = [n**i / den for i in range(na)]
            db = [-f * n**j / den for j in range(1, den_deg + 1)]
        return np.column_stack(da + db)

    def safe_bounds(size: int) -> tuple[list[float], list[float]]:
        # b_j >= 0 keeps the denominator >= 1 for n > 0: no pole anywhere.
        return [-np.inf] * na + [0.0] * den_deg, [np.inf] * size

    return Kernel(
        f"Rat{num_deg}{den_deg}", f"({coeffs}) / ({dcoeffs})", na + den_deg, evaluate, start, valid,
        safe_bounds=safe_bounds, jacobian=jacobian,
    )


# -- exponential kernels ---------------------------------------------------------------
# Both forms have one redundant parameter (c scales out); it is fixed so the fit is
# well posed, while ``nparams`` keeps the papers' count for subset sizes.

def _exprat_eval(n: Array, p: Array) -> Array:
    a, b, d = p
    with np.errstate(over="ignore", invalid="ignore"):
        return (a + b * n) * np.exp(-d * n)


def _exprat_start(n: Array, y: Array) -> Optional[Array]:
    best, best_err = None, np.inf
    scale = float(np.max(n))
    for d in (0.0, -0.5 / scale, 0.5 / scale, 2.0 / scale, 5.0 / scale):
        ab = _wlstsq(np.column_stack([np.ones_like(n), n]) * np.exp(-d * n)[:, None], y)
        if ab is None:
            continue
        p = np.array([ab[0], ab[1], d])
        err = np.sum(((_exprat_eval(n, p) - y) / y) ** 2)
        if err < best_err:
            best, best_err = p, err
    return best


def _expratE_eval(n: Array, p: Array) -> Array:
    a, b, d = p
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return np.exp((a + b * n) / (1.0 + d * n))


def _expratE_start(n: Array, y: Array) -> Optional[Array]:
    # ln y (1 + d n) = a + b n  ->  ln y = a + b n - d n ln y, linear in (a, b, d).
    ly = np.log(y)
    return _lstsq(np.column_stack([np.ones_like(n), n, -n * ly]), ly)


def _expratE_valid(p: Array, nmax: float) -> bool:
    d = p[2]
    return d >= 0 or -1.0 / d > nmax + 0.5


EXPRAT = Kernel("ExpRat", "(a + b n) / exp(c + d n), c = 0", 4, _exprat_eval, _exprat_start, _always)
EXPRAT_E = Kernel("ExpRatE", "exp((a + b n) / (c + d n)), c = 1", 4, _expratE_eval, _expratE_start,
                  _expratE_valid)

RAT11 = rational(1, 1)
RAT12 = rational(1, 2)
RAT22 = rational(2, 2)
RAT23 = rational(2, 3)
RAT33 = rational(3, 3)

KERNELS: dict[str, Kernel] = {
    k.name: k
    for k in (RAT11, RAT12, RAT22, RAT23, RAT33, CUBICLN, EXPRAT, EXPRAT_E, POLY25)
}
KERNELS.update({f"Poly{d}": polynomial(d) for d in range(1, 7)})

PRESCA_KERNEL = ("Rat12", "Rat22", "Rat23", "Rat33", "CubicLn", "ExpRat")
ESTIMA_KERNEL = ("Rat22", "Rat23", "Rat33", "CubicLn", "ExpRatE", "Poly25")
# OPreSca's extrapolation type by number of measurements (Dragojević and Guerraoui 2012,
# section 3), fitted
# online by smallfit; named here too so that the registry lists every kernel in use.
from .smallfit import OPRESCA_BY_COUNT  # noqa: E402


def get(name: str) -> Kernel:
    try:
        return KERNELS[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; known: {', '.join(KERNELS)}") from None


def fit(kernel: Kernel | str, n: ArrayLike, y: ArrayLike, nmax: float | None = None) -> Optional[KernelFit]:
    """Fit one kernel to (n, y) by relative least squares; None when it cannot.

    ``nmax`` is the largest count the fit will be evaluated at: fits with a pole or
    non-finite value in ``[1, nmax]`` are rejected.
    """
    if isinstance(kernel, str):
        kernel = get(kernel)
    n = np.asarray(n, dtype=float)
    y = np.asarray(y, dtype=float)
    if n.size < kernel.nparams or np.unique(n).size < min(kernel.nparams, n.size):
        return None
    nmax = float(max(np.max(n), nmax or 0.0))
    solved = _solved(kernel, n, y)
    p = solved.start
    if p is None:
        return None
    if not kernel.linear:
        polished = solved.polished
        # Polishing may move a pole into range; the linearised start is then kept.
        if polished is not None and kernel.valid(polished, nmax):
            p = polished
        elif kernel.safe_bounds is not None:
            p = solved.bounded(kernel, n, y)
    if not kernel.valid(p, nmax):
        return None
    grid = np.linspace(1.0, nmax, 64)
    if not np.all(np.isfinite(kernel.evaluate(grid, p))):
        return None
    resid = (kernel.evaluate(n, p) - y) / y
    if not np.all(np.isfinite(resid)):
        return None
    return KernelFit(kernel, p.copy(), float(np.sqrt(np.mean(resid**2))))


class _Solved:
    """What fitting a kernel to (n, y) finds before ``nmax`` decides which answer holds:
    the linearised start, its polish, and (asked only when the polish has a pole in range)
    the refit within the kernel's safe bounds."""

    def __init__(self, kernel: Kernel, n: Array, y: Array) -> None:
        self.start = kernel.start(n, y)
        self.polished = None
        if self.start is not None and not kernel.linear:
            self.polished = relative_lsq(kernel.evaluate, n, y, self.start, jac=kernel.jacobian)
        self._bounded: Optional[Array] = None

    def bounded(self, kernel: Kernel, n: Array, y: Array) -> Array:
        if self._bounded is None:
            bounded = relative_lsq(kernel.evaluate, n, y, self.start, bounds=kernel.safe_bounds(self.start.size),
                                   jac=kernel.jacobian)
            self._bounded = bounded if bounded is not None else self.start
        return self._bounded


# The same kernel meets the same points again and again: PreSca fits each first-k prefix
# inside its window and again for counts past it, and auto's backtest (and predict's
# leave-last-out refit) fits PreSca to prefixes its whole-curve fit already fitted.  The
# least-squares work does not depend on nmax, so the last few are kept (the same
# arguments give the same bits: nothing is approximated).
_SOLVED: OrderedDict[tuple[str, bytes, bytes], _Solved] = OrderedDict()
_SOLVED_SIZE = 256


def _solved(kernel: Kernel, n: Array, y: Array) -> _Solved:
    key = (kernel.name, n.tobytes(), y.tobytes())
    found = _SOLVED.get(key)
    if found is not None:
        _SOLVED.move_to_end(key)
        return found
    found = _SOLVED[key] = _Solved(kernel, n, y)
    if len(_SOLVED) > _SOLVED_SIZE:
        _SOLVED.popitem(last=False)
    return found
