"""Which count to run at, from a predicted curve: the preferred count (the one that pays
off), the fastest count the band supports, the knee; and whether a time curve looks like
weak scaling.  Pure functions of arrays (``prediction`` calls them)."""
from __future__ import annotations

import numpy as np

from .entities import Measurements

# The preferred count is the largest one up to which each added thread still brings at
# least this share of one thread's performance (see preferred_count).  A quarter keeps a
# hyper-thread's typical 30% (Marr et al. 2002) worth paying for and drops the flat tail
# of an Amdahl curve, where a 16th thread at 45% efficiency adds about 0.2 of one.
DEFAULT_MIN_GAIN = 0.25
SCALINGS = ("strong", "weak")
PREFERRED_SLACK = 0.03  # see measured_preferred, measured_paid


# A time curve never this much faster than at its smallest count over a 4-fold range of
# counts gains nothing a strong-scaling user would run it for.
WEAK_GAIN = 1.25


def _judged(curve: Measurements) -> bool:
    """Whether a curve can look like either scaling: times at 3 counts or more over at
    least a 4-fold range of counts."""
    return curve.metric == "time" and len(curve) >= 3 and curve.counts[-1] >= 4 * curve.counts[0]


def looks_weak(curve: Measurements) -> bool:
    """Whether a time curve looks like weak scaling's (``_judged``): never faster than
    ``WEAK_GAIN`` times the smallest count's, and slower at the largest than at the
    smallest.  A contended strong-scaling program can look the same, hence a warning, not
    a switch."""
    if not _judged(curve):
        return False
    t = curve.values
    return bool(t.min() * WEAK_GAIN >= t[0] and t[-1] > t[0])


def weak_look(curve: Measurements, advice: str, name: str = "time") -> str | None:
    """The warning for a time curve that looks like weak scaling's (``looks_weak``), in the
    curve's own numbers (pass the user's, not the models' normalised ones); ``advice``
    says how to read it as weak scaling where the caller's command can; ``name``: the
    value's (``CurvePrediction.value_label``).  None otherwise."""
    if not looks_weak(curve):
        return None
    t, n = curve.values, curve.counts
    return (f"the {name} grows with the count ({t[0]:.4g} at {n[0]:g}, {t[-1]:.4g} at {n[-1]:g}): if each "
            f"count does its own fixed share of work (weak scaling), {advice}; read as strong scaling "
            "(fixed total work)")


def strong_look(curve: Measurements, name: str = "time") -> str | None:
    """The warning for a time curve read as weak scaling that looks like strong scaling's
    (``_judged``): at the largest count at least ``WEAK_GAIN`` times faster than at the
    smallest.  Weak scaling's efficiency T(base) / T(n) then passes 100% (a strong curve's
    7.1x at 16 threads read as 714%).  None otherwise."""
    t, n = curve.values, curve.counts
    if not _judged(curve) or t[-1] * WEAK_GAIN > t[0]:
        return None
    return (f"the {name} falls with the count ({t[0]:.4g} at {n[0]:g}, {t[-1]:.4g} at {n[-1]:g}), as where the "
            f"total work is fixed (strong scaling): read as weak scaling, each count doing its own share of "
            f"work, that is an efficiency of {t[0] / t[-1]:.0%} at {n[-1]:g}; if the work is fixed, read it "
            "as strong scaling (the default)")


def measured_preferred(preferred: int, curve: Measurements, upto: int, weak: bool = False) -> tuple[int, str | None]:
    """The model's fastest count, unless measurements contradict it.

    Inside the measured range the measurements are facts and the model only a smooth
    summary of them: a model that cannot follow the curve's shape (e.g. a sharp optimum
    among thousands of counts) may place its optimum where the program was measured
    clearly slower.  So the model's choice stands only where the measured performance
    there (interpolated between measured counts) is within ``PREFERRED_SLACK`` of the
    best measured; otherwise the best measured count is taken.  Beyond the measured
    range only the model can say.  Only the measured counts up to ``upto`` (the largest
    count predicted) compete; ``weak``: performance is the work rate n / T(n).  Returns
    the count and a note when it was replaced.
    """
    asked = curve.counts <= upto
    n, perf = curve.counts[asked], curve.perf[asked]
    if weak:
        perf = perf * n
    if not n.size or not n.min() <= preferred <= n.max():
        return preferred, None
    there = float(np.interp(preferred, n, perf))
    best = int(np.argmax(perf))
    if there * (1.0 + PREFERRED_SLACK) >= perf[best]:
        return preferred, None
    slower = f"{perf[best] / there - 1.0:.0%} slower"
    if preferred in n:
        where = f"was measured {slower}"
    else:  # never run: between two measured counts, which say it is slower
        below, above = n[n < preferred].max(), n[n > preferred].min()
        where = f"lies between the measured {below:g} and {above:g}, which put it {slower}"
    return int(n[best]), f"fastest count is the best measured one, {n[best]:g}: the model's optimum {preferred} {where}"


def reaches_measured(grid: np.ndarray, measured: np.ndarray) -> None:
    """An ``InputError`` where every count asked (``grid``'s) lies below the smallest
    measured one: no count there is named (``_supported``), so none would be left."""
    from ...errors import InputError

    if grid.max() < measured.min():
        raise InputError(f"the counts asked end at {int(grid.max())}, below the smallest measured count "
                         f"({measured.min():g}), and none below it is named preferred or fastest")


def _supported(grid: np.ndarray, base: float) -> np.ndarray:
    """The counts that may be named: none below the smallest measured one, ``base`` (the
    model knows nothing there), unless everything asked lies below it."""
    ok = grid >= base
    return ok if np.any(ok) else np.ones(len(grid), dtype=bool)


# Counts within this share of the best are as fast: the fewest measured one is named, or
# the fewest where none was measured.
FASTEST_TIE = 1e-3


def _fastest_pick(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, base: float,
                  top: float) -> tuple[np.ndarray, np.ndarray]:
    """The counts that may be named fastest and the performance each competes with."""
    ok = _supported(grid, base)
    n, p, lo = grid[ok], perf[ok], low[ok]
    inside = n <= top
    best_inside = p[inside].max() if np.any(inside) else -np.inf
    pick = np.where(inside | (lo > best_inside), p, -np.inf)
    if not np.any(np.isfinite(pick)):  # nothing asked up to top and the band vouches for none
        pick = lo
    return n, pick


def within_hardware(grid: np.ndarray, hw_threads: int | None) -> tuple[np.ndarray, list[str]]:
    """The counts of ``grid`` that may be named fastest or preferred on a machine of
    ``hw_threads`` hardware threads (None: every count), and the warning (none or one) due
    where that leaves out counts asked while the hardware threads themselves were not.

    None past them: a count past them time-shares them and is predicted no better than at
    them (hardware.oversubscribed), so it is never named over one within them.  ``predict``
    asks every count up to the largest, them among them; a grid without them (accuracy.py's
    measured counts) has the largest count within them stand in, ties going to the smaller.
    Measured past them, the curve is taken as it is and no machine applies."""
    grid = np.asarray(grid)
    if hw_threads is None:
        return np.ones(len(grid), dtype=bool), []
    ok = grid <= hw_threads
    if grid.max() <= hw_threads or hw_threads in grid:
        return ok, []
    return ok, [f"no count above the {hw_threads} hardware threads is named fastest or preferred, and "
                f"{hw_threads} itself was not asked: the named counts are of those up to {grid[ok].max():g} "
                f"(--upto {hw_threads} compares every count up to {hw_threads})"]


def fastest_count(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, base: float, top: float,
                  measured: np.ndarray | None = None) -> int:
    """The count of the best predicted performance that the band supports: beyond the
    largest measured count ``top`` only where even the band's low end beats the best
    predicted up to ``top``.  Of the counts that tie for it (``FASTEST_TIE``) a
    ``measured`` one is named before one the model only interpolates or extrapolates
    (weak scaling's 64 measured, not 63 a hair below it), else the fewest."""
    return best_count(*_fastest_pick(grid, perf, low, base, top), measured)


def best_count(counts: np.ndarray, perf: np.ndarray, measured: np.ndarray | None = None) -> int:
    """The count of ``counts`` with the best ``perf``: of those that tie for it
    (``FASTEST_TIE``) the fewest ``measured`` one, else the fewest.  ``fastest_count``'s
    choice once its candidates are set; benchmarks/accuracy.py picks with it too."""
    tied = counts[perf >= perf.max() * (1 - FASTEST_TIE)]
    seen = tied[np.isin(tied, measured)] if measured is not None else tied[:0]
    return int(seen[0] if seen.size else tied[0])


def horizon_bound(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, base: float, top: float,
                  preferred: int, hw_threads: int | None = None) -> list[tuple[str, int]]:
    """The answers only the horizon stopped, each as (``"preferred"`` or ``"fastest"``,
    the count), on ``grid``, every count up to the largest asked: the preferred count when
    it is that count and lies beyond ``top`` (the band's low end still gained there), the
    fastest when that count still ties for the fastest the band supports (and is not the
    preferred count, said already).  A larger horizon may then name a larger count.  A
    horizon below ``top`` bounds the preferred count too where it is the last count: the
    measured counts beyond it were not asked about.  A last count at ``hw_threads`` is the
    machine's bound (``within_hardware``), not the horizon's: no larger horizon names more."""
    last = float(grid.max())
    if last < top and preferred == last:
        return [("preferred", int(last))]
    if last <= top or last == hw_threads:
        return []
    bounds = [("preferred", int(last))] if preferred == last else []
    n, pick = _fastest_pick(grid, perf, low, base, top)
    if preferred != last and n[-1] == last and pick[-1] >= pick.max() * (1 - FASTEST_TIE):
        bounds.append(("fastest", int(last)))
    return bounds


def horizon_warnings(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, base: float, top: float,
                     preferred: int, hw_threads: int | None = None) -> list[str]:
    """What ``horizon_bound`` finds, in the report's words: beyond the measured counts both
    rules stop where the band stops vouching, or at the last count asked, where the answer
    is the horizon's and a larger --upto may move it."""
    beyond = f"below the largest measured ({top:g})" if grid.max() < top else "where the band's low end still gains"
    return [f"the {what} count is bounded by the largest count asked ({at_end}), {beyond}: asking further "
            "(--upto, --at) may name a larger one"
            for what, at_end in horizon_bound(grid, perf, low, base, top, preferred, hw_threads)]


def _walk(n: np.ndarray, values: np.ndarray, min_gain: float) -> int:
    """The largest count of ``n`` reached by steps up from its first on each of which
    every added thread brings at least ``min_gain`` of one thread's performance (one
    thread's share at the first count); a dip the curve recovers from is crossed only
    where the rise repays it."""
    unit = values[0] / n[0]
    at, level = n[0], values[0]
    for count, value in zip(n[1:], values[1:]):
        if value >= level + min_gain * unit * (count - at):
            at, level = count, value
    return int(at)


def measured_paid(preferred: int, fastest: int, curve: Measurements, upto: int, min_gain: float = DEFAULT_MIN_GAIN,
                  weak: bool = False) -> tuple[int, int | None, list[str]]:
    """``preferred`` (the rule's count on the model's curve, at most ``fastest``), unless
    the measurements contradict it.

    A model that does not follow the measured curve (a poor fit of few counts) can walk to
    a measured count that another measured count clearly beats: 1 where 2 ran 1.8x faster.
    So where ``preferred`` was measured and the same walk over the measured counts up to
    ``upto`` ends at one measured more than ``PREFERRED_SLACK`` faster, that count is
    named instead (at most ``fastest``).  A count only the model places (between or beyond
    the measured ones) stands.  ``weak``: performance is the work rate n / T(n).  Returns
    the count, the replaced count (None where none was) and the note (none or one)."""
    asked = curve.counts <= upto
    n, perf = curve.counts[asked], curve.perf[asked]
    if weak:
        perf = perf * n
    if preferred not in n:
        return preferred, None, []
    walked = _walk(n, perf, min_gain)
    there, best = float(perf[n == preferred][0]), float(perf[n == walked][0])
    named = min(walked, fastest)
    if best <= there * (1.0 + PREFERRED_SLACK) or named == preferred:
        return preferred, None, []
    return named, preferred, [f"preferred count is {named}, from the measured counts: the model's {preferred} was "
                              f"measured {best / there - 1.0:.0%} slower than {walked}"]


def preferred_count(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, base: float, top: float,
                    min_gain: float = DEFAULT_MIN_GAIN) -> int:
    """The count that pays off: the largest count reached by steps up from ``base`` (the
    smallest measured count) on each of which every added thread brings at least
    ``min_gain`` of one thread's performance (the marginal-gain rule of cost-optimal
    parallelism, Kumar & Gupta 1994; a plateau then a later rise, such as a second socket,
    is crossed only when the rise repays the plateau).  Beyond the largest measured count
    ``top`` the step counts what the band's low end gives, so a count the band cannot
    vouch for is never preferred; the answer does not depend on how far ahead was asked."""
    ok = _supported(grid, base)
    n = grid[ok]
    return _walk(n, np.where(n <= top, perf[ok], low[ok]), min_gain)


def knee_count(grid: np.ndarray, perf: np.ndarray, fraction: float) -> int | None:
    """The count beyond which adding threads gains less than ``fraction`` of one thread's
    performance each: the end of ``preferred_count``'s walk with that threshold on the
    predicted curve.  So a dip the curve climbs out of is no knee (one below the
    preferred count contradicted it: the ESTIMA example's knee 1 beside a preferred 7),
    and on a concave curve it is the first count where one more thread adds less than
    ``fraction``.  None when the walk reaches the last count asked: nothing beyond it
    was predicted."""
    end = _walk(grid, perf, fraction)
    return None if end == int(grid[-1]) else end
