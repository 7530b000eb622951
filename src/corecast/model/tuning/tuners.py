"""Online thread-count selection: OPreSca and the Binsearch baseline (Dragojević and
Guerraoui, "A Pragmatic Approach for Predicting the Scalability of Parallel Applications",
EPFL technical report, 2012, section 3).

Both tuners are small state machines, one instance per parallel region, driven at the end
of every scheduling interval::

    tuner = OPreSca(candidates=range(1, 65))
    while running:
        n = tuner.next_count()            # run the next interval with n threads
        perf = run_interval(n)            # higher is better (e.g. 1 / interval time)
        tuner.observe(n, perf)

Shared behaviour (``Tuner``):

* ``history`` maps each measured count to its performance.  Repeated observations at a
  count are folded into the median of the last ``REPEATS`` of them (a running median: it
  keeps one noisy interval from steering the search, yet follows a slow drift).
* ``converged`` becomes true when the tuner's next choice is a count it has already
  measured; from then on ``next_count()`` keeps returning ``best``.
* Workload change: once converged, an observation at the converged count that differs by
  more than ``change_threshold`` (relative) from its stable value (the running median at
  that count) clears the history and the search starts over.  The observation that
  revealed the change is kept as the first measurement of the new workload (it *is* one),
  so the restart needs one seed interval fewer.  Observations at other counts after
  convergence are recorded but never trigger a restart.
* ``best`` is the converged count, or before convergence the best measured count so far
  (None before the first observation).
* Nothing here raises on a failed or unrealistic fit: the tuners fall back to measuring an
  unmeasured count inside the bracket around the best measured count, and to converging
  on the best measured count when no such count is left.  ``observe`` raises ValueError
  only for a count or performance that is not a number (or is negative).

``tunesim.simulate`` replays a tuner against a measured curve used as the oracle.
"""
from __future__ import annotations

import math

from ..curve import smallfit

# Imported by every steered program: typing, statistics and random would add ~25 ms to
# the model's start, all before steering's first decision.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional, Sequence

REPEATS = 5  # observations per count kept for the running median


class Tuner:
    """History, convergence and workload-change bookkeeping shared by the tuners."""

    def __init__(self, candidates: Sequence[int], change_threshold: float = 0.15):
        cands = sorted({int(c) for c in candidates})
        if not cands:
            raise ValueError("need at least one candidate count")
        if any(c < 1 for c in cands):
            raise ValueError("candidate counts must be >= 1")
        if not (change_threshold > 0 and math.isfinite(change_threshold)):
            raise ValueError("change_threshold must be a positive number")
        self.candidates: tuple[int, ...] = tuple(cands)
        self.change_threshold = float(change_threshold)
        self.restarts = 0  # workload changes detected so far
        self._obs: dict[int, list[float]] = {}
        self._converged = False
        self._next: int = self.candidates[0]
        self._reset_search()
        self._next = self._decide()

    # -- public interface --------------------------------------------------------------

    def next_count(self) -> int:
        """The count to use for the next interval."""
        return self._next

    def observe(self, count: int, perf: float) -> None:
        """Record ``perf`` (higher is better) measured with ``count`` over the last interval."""
        count = int(count)
        perf = float(perf)
        if count < 1:
            raise ValueError(f"count must be >= 1, got {count}")
        if not math.isfinite(perf) or perf < 0:
            raise ValueError(f"performance must be a finite number >= 0, got {perf}")
        if self._converged:
            stable = self.history.get(count)
            if count == self._next and stable is not None and self._changed(stable, perf):
                self._restart(count, perf)
                return
            self._record(count, perf)
            return  # a converged tuner does not move; only a workload change restarts it
        self._record(count, perf)
        self._next = self._decide()

    @property
    def converged(self) -> bool:
        return self._converged

    @property
    def best(self) -> Optional[int]:
        if self._converged:
            return self._next
        h = self.history
        return max(h, key=lambda c: (h[c], -c)) if h else None

    @property
    def history(self) -> dict[int, float]:
        return {c: _median(v) for c, v in sorted(self._obs.items())}

    # -- helpers for subclasses -----------------------------------------------------------

    def _record(self, count: int, perf: float) -> None:
        vals = self._obs.setdefault(count, [])
        vals.append(perf)
        del vals[:-REPEATS]

    def _changed(self, stable: float, perf: float) -> bool:
        if stable <= 0:
            return perf > 0
        return abs(perf - stable) / stable > self.change_threshold

    def _restart(self, count: int, perf: float) -> None:
        self.restarts += 1
        self._obs = {count: [perf]}
        self._converged = False
        self._reset_search()
        self._next = self._decide()

    def _converge(self, count: int) -> int:
        self._converged = True
        return count

    def _measured(self) -> tuple[list[float], list[float]]:
        h = self.history
        return [float(c) for c in h], list(h.values())

    def _unmeasured(self, lo: float = -math.inf, hi: float = math.inf) -> list[int]:
        """Unmeasured candidates strictly between lo and hi."""
        return [c for c in self.candidates if lo < c < hi and c not in self._obs]

    def _bracket(self) -> tuple[int, float, float]:
        """The best measured count b and its measured neighbours (or +-inf at the ends).

        For a unimodal curve the peak lies strictly between the two neighbours."""
        h = self.history
        b = max(h, key=lambda c: (h[c], -c))
        below = [c for c in h if c < b]
        above = [c for c in h if c > b]
        return b, (max(below) if below else -math.inf), (min(above) if above else math.inf)

    def _bisect(self) -> int:
        """One bracket-shrinking step: an unmeasured count in the wider half of the bracket
        around the best measured count, or convergence on it when the bracket is closed."""
        b, lo, hi = self._bracket()
        left, right = self._unmeasured(lo, b), self._unmeasured(b, hi)
        if not left and not right:
            return self._converge(b)
        # Width of each side in candidate positions (an open end counts every candidate).
        if len(right) >= len(left):
            side, end = right, hi
        else:
            side, end = left, lo
        # Halve the gap between b and its neighbour; with no neighbour (an open end) halve
        # the run of candidates on that side.
        target = (b + end) / 2.0 if math.isfinite(end) else (side[0] + side[-1]) / 2.0
        return _snap_to(side, target)

    # -- overridden ------------------------------------------------------------------------

    def _reset_search(self) -> None:
        pass

    def _decide(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError


def _median(values: list[float]) -> float:
    v = sorted(values)
    k = len(v) // 2
    return float(v[k]) if len(v) % 2 else (v[k - 1] + v[k]) / 2.0


def _snap_to(values: Sequence[int], target: float) -> int:
    """The value nearest ``target`` (ties go to the smaller)."""
    return min(values, key=lambda v: (abs(v - target), v))


class OPreSca(Tuner):
    """OPreSca (Algorithm 2): fit the measurements, move to the predicted best count.

    Seeds.  While fewer than 3 counts are measured the tuner picks seed counts:
    ``seeds=None`` (default) uses N/4, N/2 and 3N/4 of the largest candidate N, snapped to
    the nearest candidates (the paper's best fixed assignment on both its machines);
    an explicit sequence is used in order (snapped, skipping measured counts); an empty
    sequence ``()`` gives the paper's random assignment, drawn with ``rng_seed``.  Seeds
    that are exhausted or collide are replaced by random unmeasured candidates.

    With m >= 3 measurements: when the best measured count is strictly inside the
    measured range the curve is interpolated with a polynomial of degree min(m-1, 6),
    otherwise extrapolated with the rational kernel ``OPRESCA_BY_COUNT[m]`` (Rat33 for
    m >= 7).  The tuner moves to the candidate with the best predicted performance and has
    converged when that count was measured.  The fits are ``smallfit``'s (standard library
    only), so the step runs inside a profiled program without numpy.

    Refinements over the paper's pseudo-code (all keep the algorithm's shape):

    * The prediction is searched only inside the bracket around the best measured count b
      (between its measured neighbours; beyond b when b is at an end of the measured
      range): for a unimodal curve the peak cannot be elsewhere, and polynomials and
      rational functions are least trustworthy far from the points they were fitted to.
    * An extrapolating kernel whose prediction fails PreSca's realism filter over the
      candidate range is replaced by the next simpler one (Rat33 -> Rat23 -> ... ->
      Rat11); when every fit fails, the tuner takes a bisection step inside the bracket
      instead (or converges on b when the bracket is closed).
    * When the predicted best is a measured count other than b, the fit contradicts the
      measurements and the tuner converges on the measured best b.
    * ``min_gain``: when the best predicted performance is less than ``min_gain`` (relative)
      above the best measured one, moving is not worth an interval: the tuner converges on
      b.  0 disables it (the paper's rule).
    * ``go_back`` (online steering): after an interval measured worse than b by more than
      ``min_gain``, the next interval runs b again before the search goes on; seeds
      outside the bracket around b are skipped (a unimodal curve cannot peak there), and
      with no seed left before 3 counts are measured the tuner converges on b.
    """

    def __init__(
        self,
        candidates: Sequence[int],
        seeds: Sequence[int] | None = None,
        change_threshold: float = 0.15,
        rng_seed: int = 0,
        min_gain: float = 0.0,
        go_back: bool = False,
    ):
        self._rng_seed = rng_seed
        self._rng = None  # made on first use (``random`` costs start-up time)
        self._seed_spec = None if seeds is None else [int(s) for s in seeds]
        self.min_gain = float(min_gain)
        self.go_back = bool(go_back)
        self._last: Optional[int] = None  # count of the latest observation
        super().__init__(candidates, change_threshold)

    def observe(self, count: int, perf: float) -> None:
        self._last = int(count)
        super().observe(count, perf)

    # -- seeds ---------------------------------------------------------------------------

    def default_seeds(self) -> list[int]:
        top = self.candidates[-1]
        return [_snap_to(self.candidates, top * q) for q in (0.25, 0.5, 0.75)]

    def _seed_list(self) -> list[int]:
        if self._seed_spec is None:
            return self.default_seeds()
        return [_snap_to(self.candidates, s) for s in self._seed_spec]

    def _next_seed(self) -> int:
        free = self._unmeasured()
        if not free:
            h = self.history
            return self._converge(max(h, key=lambda c: (h[c], -c)))
        lo, hi = -math.inf, math.inf
        if self.go_back and self._obs:
            b, lo, hi = self._bracket()
        for s in self._seed_list():
            if s not in self._obs and lo < s < hi:
                return s
        if self.go_back and self._obs:
            # A line through two points peaks at one of them: nothing between to try.
            return self._converge(b)
        if self._rng is None:
            import random

            self._rng = random.Random(self._rng_seed)
        return self._rng.choice(free)

    # -- decision ------------------------------------------------------------------------

    def _decide(self) -> int:
        if self.go_back and self._last is not None and self._obs:
            h = self.history
            b = self._bracket()[0]
            if self._last != b and h.get(self._last, math.inf) < h[b] / (1.0 + self.min_gain):
                return b  # that interval was slower: back to the best at once
        if len(self._obs) < 3:
            return self._next_seed()
        try:
            return self._predict_next()
        except (ArithmeticError, ValueError):  # a numerical failure must never stop the application
            return self._bisect()

    def _predict_next(self) -> int:
        n, y = self._measured()
        m = len(n)
        b, lo, hi = self._bracket()
        region = [c for c in self.candidates if lo < c < hi]
        top = float(self.candidates[-1])
        if n[0] < b < n[-1]:
            f = smallfit.polynomial(n, y, min(m - 1, 6), top)
        else:
            f = self._extrapolate(n, y, m, top)
        if f is None:
            return self._bisect()
        pred = [(v, c) for c in region for v in [f(float(c))] if math.isfinite(v) and v > 0]
        if not pred:
            return self._bisect()
        best_pred, choice = max(pred, key=lambda vc: (vc[0], -vc[1]))
        if choice in self._obs:
            return self._converge(b)
        if self.min_gain > 0 and best_pred < max(y) * (1.0 + self.min_gain):
            return self._converge(b)
        return choice

    def _extrapolate(self, n: list[float], y: list[float], m: int, top: float) -> Optional[Callable]:
        """The rational kernel for m points, or a simpler one when it fails or is unrealistic."""
        order = ["Rat33", "Rat23", "Rat22", "Rat12", "Rat11"]
        first = smallfit.OPRESCA_BY_COUNT.get(m, "Rat33")
        lowest = float(self.candidates[0])
        for name in order[order.index(first):]:
            f = smallfit.rational(n, y, int(name[3]), int(name[4]), top)
            # The realism filter runs from count 1; below the smallest candidate the
            # function is held constant so only the range the tuner uses is judged.
            if f is not None and smallfit.realistic([f(max(q, lowest)) for q in range(1, int(math.ceil(top)) + 1)]):
                return f
        return None


class Binsearch(Tuner):
    """Binsearch baseline (paper section 4.5, after [28]).

    Phase 1 starts at the smallest candidate and grows with an increment of 4 that doubles
    at each step (1, 5, 13, 29, ...), each target snapped to the nearest unmeasured
    candidate above the previous count, until performance drops (or the largest candidate
    is measured).  Phase 2 binary-searches the bracket around the best count so far: each
    step measures the middle of the wider unmeasured half between the best count and its
    measured neighbours, until both neighbours are adjacent candidates; then it converges
    on the best measured count.
    """

    def __init__(self, candidates: Sequence[int], change_threshold: float = 0.15):
        super().__init__(candidates, change_threshold)

    def _reset_search(self) -> None:
        self._phase1 = True
        self._last: Optional[int] = None  # latest phase-1 count
        self._prev: Optional[int] = None  # the one before it
        self._target = float(self.candidates[0])
        self._increment = 4.0

    def _decide(self) -> int:
        h = self.history
        if self._phase1:
            if self._last is None:
                self._last = self.candidates[0]
                if self._last not in h:
                    return self._last
            step = self._phase1_step(h)
            if step is not None:
                return step
            self._phase1 = False
        if not h:
            return self.candidates[0]
        return self._bisect()

    def _phase1_step(self, h: dict[int, float]) -> Optional[int]:
        """The next growing count, or None when phase 1 is over."""
        current = self._last
        if current not in h:
            return None  # the caller ran something else: continue with the bracket search
        if self._prev is not None and self._prev in h and h[current] < h[self._prev]:
            return None  # performance dropped
        free = self._unmeasured(current, math.inf)
        if not free:
            return None
        self._target += self._increment
        self._increment *= 2
        choice = _snap_to(free, self._target)
        self._prev, self._last = current, choice
        return choice
