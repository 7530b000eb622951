"""Online team-size steering: one OPreSca instance per OpenMP region (OPreSca: Dragojević
and Guerraoui, "A Pragmatic Approach for Predicting the Scalability of Parallel
Applications", EPFL technical report, 2012, section 3).

Each sampler window is one scheduling interval.  The region's calls per second of region
time at the team size it ran with is the interval's performance; OPreSca answers with the
team size for the next window.  Candidates are 1 .. the program's own count: steering
only ever shrinks a team, and the C side never applies it inside another team.

Steering must never cost more than it can gain, so a region is explored only when it can
pay (``guard``): the program's own count was measured, a smaller team can plausibly be
faster (the thread time lost to stalls at the own count leaves room for it, or the
window's contention model prefers fewer threads), and the time the region is expected to
run on (as long again as it has run: calls so far over elapsed time, times the elapsed
time) earns back the first step's expected loss several times over. A step is measured
over a span of windows (``history.RegionHistory``): one window where the region makes
``CALLS_PER_WINDOW`` calls in it, else as many as that many calls take at its rate so far
(``measure_windows``), and the time to come is counted in spans of that length. The
search then goes back to the best measured count at once after a step that was slower,
stops when the predicted gain is below the measurement noise or once the window model's
fastest count, tried first, gained what the model predicted, and keeps the program's own
count unless the chosen one is measured faster by more than that noise. The decision is
the standard library's only (``tuning`` on ``smallfit``): no numpy or scipy in the host.
"""
from __future__ import annotations

import math

from ..tuning.tuners import OPreSca
from .bound import TeamPrediction
from ...recording.abi import LOCKS
from .history import RegionHistory

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.record import RegionSample

NOISE = 0.03  # relative window-to-window spread taken as no difference
EFFICIENCY = 0.8  # thread time not lost to stalls above which a region is left alone
PAYBACK = 2.0  # expected gain must cover the first step's expected loss this many times
MIN_WINDOWS = 1  # expected spans (measure_windows) still to come for any step (the guard charges the first)
CALLS_PER_WINDOW = 4  # calls a step's span is charged for: twice the history.MIN_CALLS it needs
# A lock's hand-off between cores at its dearest (a futex wake-up): native/steer_start.c's HANDOFF_S.
HANDOFF_S = 20e-6
# The gain a trial step is reckoned to find where hand-offs could take all the threads'
# time (handoffs_unbounded): nothing measures them, so nothing bounds the gain; a doubling
# makes the trial wait until the time to come pays for it twice over (PAYBACK).
HANDOFF_TRIAL_GAIN = 1.0


class RegionSteer:
    def __init__(self, own: int) -> None:
        self.own = own
        self.tuner: OPreSca | None = None  # created when exploring starts
        self.settled: int | None = None  # the count kept once exploring stopped
        self.steps = 0  # windows run at another count than the program's own
        self.reason = "not measured yet"  # why the region was not explored ("" once it was)
        self.expected_gain = 0.0  # the guard's, relative performance
        self.model_gain: float | None = None  # the window model's at its first count, its band's low end
        self.running = own  # the count the last answer asked for
        self.span = 1.0  # windows its measurement was charged for (measure_windows at the step)

    def step(self, history: RegionHistory, region: RegionSample, pred: TeamPrediction, elapsed_s: float,
             window_s: float) -> int:
        """Feed the last window's measurement; the team size for the next window."""
        if self.settled is not None:
            return self.settled
        nxt = self._next(history, region, pred, elapsed_s, window_s)
        if nxt != self.running:  # a step: its measurement starts with the next window
            history.new_span()
            self.running = nxt
            self.span = measure_windows(_outlook(region, elapsed_s, window_s)[0])
        return nxt

    def _next(self, history: RegionHistory, region: RegionSample, pred: TeamPrediction, elapsed_s: float,
              window_s: float) -> int:
        if self.tuner is None:
            taken = _taken_in_c(region, self.own)
            verdict = guard(self.own, history.perf(self.own), region, pred, elapsed_s, window_s,
                            history.perf(taken) if taken else None)
            if isinstance(verdict, str):
                self.reason = verdict
                return self.own
            first, self.expected_gain = verdict
            self.reason = ""
            # After the first count, halve the own count and then the first; the tuner skips
            # seeds a unimodal curve cannot peak at.
            seeds = [self.own, first, max(1, self.own // 2), max(1, first // 2)]
            self.tuner = OPreSca(list(range(1, self.own + 1)), seeds=seeds, min_gain=NOISE, go_back=True)
            self.tuner.observe(self.own, history.perf(self.own) or 0.0)
            if taken:  # the C side's convoy step: its span goes on
                self.running, self.span = taken, measure_windows(_outlook(region, elapsed_s, window_s)[0])
            if taken and history.window_team == taken and history.window_perf:
                # the C side's convoy step ran through the interpreter's start: measured
                self.tuner.observe(taken, history.window_perf)
                self.steps += 1
            speed = dict(zip(pred.threads, pred.speedup))
            low, high = dict(zip(pred.threads, pred.low)), dict(zip(pred.threads, pred.high))
            if first == pred.fastest and speed.get(self.own) and high.get(self.own):
                # the least gain the prediction's band allows: measured within it, the model
                # is borne out (its central gain rests on T(1), which one sample cannot measure)
                self.model_gain = min(speed[first] / speed[self.own], low[first] / high[self.own]) - 1.0
        elif history.window_team is not None and history.window_perf:
            self.tuner.observe(history.window_team, history.window_perf)
        elif history.span_windows >= self.span:
            # The span the step was charged for has passed with fewer than MIN_CALLS calls at
            # the count asked for: one call measures it (about twice as slow as the count the
            # span was sized on, or slower), and waiting for a second costs a span or more at
            # a count that slow.
            perf = history.span_perf(self.running)
            if perf:
                self.tuner.observe(self.running, perf)
                history.new_span()
        if self._model_borne_out():
            return self._settle(history)
        nxt = int(self.tuner.next_count())
        if self.tuner.converged:
            return self._settle(history)
        if not _step_pays(self.tuner, nxt, _spans(region, elapsed_s, window_s), self.expected_gain):
            h = self.tuner.history
            return max(h, key=h.get)  # not yet: the best so far, until the run has gone on longer
        if nxt != self.own:
            self.steps += 1
        return nxt

    def judge_at_exit(self, history: RegionHistory, region: RegionSample, pred: TeamPrediction, elapsed_s: float,
                      window_s: float, model_ran: bool = True) -> None:
        """Why a region that no window's answer reached was not explored, by the guard's
        rule over the whole run: the C side started no model (native/steer_start.c found no
        region that could pay for it: ``model_ran`` False), or the run ended before its
        first answer.  Its reason read "not measured yet" for a region measured over the
        whole run (a compute loop at 2 threads, 0.6 s; each rank of mpi_omp_hybrid), and
        "no window reached the model" beside a table whose fastest count was 1 where the
        C side's stall bound had kept the model from starting (session user44)."""
        if self.tuner is not None or self.steps:
            return
        verdict = guard(self.own, history.perf(self.own), region, pred, elapsed_s, window_s)
        if isinstance(verdict, str):
            self.reason = verdict
        else:
            self.reason = "no window reached the model" if model_ran else NOT_STARTED

    def _model_borne_out(self) -> bool:
        """Whether the best measured count gained at least what the window model predicted
        for its fastest count, tried first (the low end of its band, within noise): the
        model is borne out, and the
        tuner's further seeds (the own count's half, ...) are counts it predicts slower.  On
        a 16-thread convoy (omp_slowdown, 16 cores) they made 6 of its 7 steps: windows at
        8, 4 and 2 threads, each 4-10x slower than 1 thread, and the returns to 1, which
        is 13.6x faster than 16 where the model had predicted 6.8x (benchmarks/device16)."""
        h = self.tuner.history if self.tuner else {}
        best = max(h, key=h.get) if h else None
        if self.model_gain is None or best is None or best == self.own or not h.get(self.own):
            return False
        return h[best] / h[self.own] >= (1.0 + self.model_gain) * (1.0 - NOISE)

    def _settle(self, history: RegionHistory) -> int:
        """Stop exploring: the best measured count, unless it beats the own count by less than noise."""
        best = self.tuner.best if self.tuner.converged else max(self.tuner.history, key=self.tuner.history.get)
        gain = _gain(history, best, self.own)
        self.settled = best if gain is not None and gain > NOISE else self.own
        return self.settled

    def chosen(self) -> int | None:
        return self.settled

    def gain(self, history: RegionHistory) -> float | None:
        """Measured perf(chosen) / perf(program's own count) - 1."""
        return None if self.settled is None else _gain(history, self.settled, self.own)


def _step_pays(tuner: OPreSca, nxt: int, spans: float, gain: float) -> bool:
    """Whether one more span at ``nxt`` can pay: a step below the best measured count b
    loses at most b / nxt - 1 of a span (linear scaling), against the guard's expected
    gain over the spans still to come.  The first step was charged by the guard."""
    h = tuner.history
    if len(h) < 2:
        return True
    b = max(h, key=h.get)
    loss = max(0.0, b / nxt - 1.0) if nxt not in h else 0.0
    return spans >= MIN_WINDOWS and spans * gain / (1.0 + gain) >= PAYBACK * loss


def handoffs_unbounded(region: RegionSample) -> bool:
    """Whether a hand-off per lock acquisition at its dearest (``HANDOFF_S``) would take
    at least all of the region's thread time: it takes a lock every call, and its time per
    acquisition is within what hand-offs alone can cost.  The wrappers time waits for a
    lock, not its cache line's moves between cores or a wake-up's latency, so no stall
    shows that cost and the stall bound says nothing about a smaller team."""
    taken = sum(int(region["acquisitions"].get(k, 0)) for k in LOCKS)
    return taken >= region["calls"] > 0 and taken * HANDOFF_S >= region["threads"] * region["wall_s"] > 0


def _step_loss(pred: TeamPrediction, own: int, first: int) -> float:
    """One span at ``first``, in spans of region time lost, taken pessimistically: the
    own count at the top of its band against ``first`` at the bottom of its band (with
    no prediction there, linear scaling: the worst a region with stalls can do).  A band
    that does not hold its point estimate is widened to it."""
    at = {k: (min(s, lo), max(s, hi)) for k, s, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)}
    if own in at and first in at and at[first][0] > 0:
        return max(0.0, at[own][1] / at[first][0] - 1.0)
    return own / first - 1.0


def _taken_in_c(region: RegionSample, own: int) -> int | None:
    """The count native/steer_start.c stepped a convoy to before the model's first answer."""
    steered = int(region.get("steered_to") or 0)
    return steered if 1 <= steered < own else None


def _gain(history: RegionHistory, team: int, own: int) -> float | None:
    mine, theirs = history.perf(team), history.perf(own)
    return mine / theirs - 1.0 if mine and theirs else None


def _outlook(region: RegionSample, elapsed_s: float, window_s: float) -> tuple[float, float]:
    """The region's calls per window and windows still to come, expecting the program to
    run on for as long as it has run (remaining calls = calls / elapsed x elapsed)."""
    if elapsed_s <= 0 or window_s <= 0:
        return 0.0, 0.0
    horizon = elapsed_s
    rate = region["calls"] / elapsed_s
    return rate * window_s, horizon / window_s


def measure_windows(per_window: float) -> float:
    """Windows a step's measurement is charged for: one where the region makes
    ``CALLS_PER_WINDOW`` calls a window, else as many as that many calls take at its rate
    (native/steer_start.c, ``measure_windows``, is the same rule)."""
    if per_window >= CALLS_PER_WINDOW:
        return 1
    return math.ceil(CALLS_PER_WINDOW / per_window) if per_window > 0 else math.inf


def _spans(region: RegionSample, elapsed_s: float, window_s: float) -> float:
    """The spans still to come: the windows to come over the windows a step's span lasts."""
    per_window, windows = _outlook(region, elapsed_s, window_s)
    return windows / measure_windows(per_window) if per_window > 0 else 0.0


def efficiency(region: RegionSample, own: int | None = None) -> float:
    """Share of the region's thread time not lost to stalls (at the count it ran with).
    ``own``: at that count, its calls' thread time only, every stall taken as theirs (a
    convoy the C side stepped down: its calls at fewer threads wait for no one, and
    counted in, they would make it look efficient)."""
    wall = region["wall_s"]
    if own is not None:
        wall = sum(w for team, _, w in region.get("hist", []) if team == own) or wall
    thread_s = region["threads"] * wall
    if thread_s <= 0:
        return 1.0
    return max(0.0, 1.0 - sum(region["stalls_s"].values()) / thread_s)


# The C side's check (stalls and locks, native/steer_start.c) found no region able to pay
# for the model in any window, though the exit's prediction would explore: 48 bytes at most
# (model_abi.h's steer_reason).
NOT_STARTED = "model not started: no room seen in the windows"


def guard(own: int, own_perf: float | None, region: RegionSample, pred: TeamPrediction, elapsed_s: float,
          window_s: float, taken_perf: float | None = None) -> tuple[int, float] | str:
    """Whether exploring a region below its own count ``own`` can pay: the first count to
    try and the expected gain (relative performance), or a short reason why not.

    Potential gain: the larger of the window model's (its fastest count's predicted
    speedup over the own count's) and the stall bound's (own - 1 threads with no stalls
    against the own count at its measured efficiency E: (own - 1) / (own E) - 1).  The
    first step's expected loss is the model's predicted slowdown there, for one window, or
    where the C side already took that step (a convoy, ``steered_to``), the measured one
    (``taken_perf``: calls per second there).
    """
    if not own_perf:
        return "not measured yet"
    stepped = _taken_in_c(region, own) is not None
    e = efficiency(region, own if stepped else None)
    speed = dict(zip(pred.threads, pred.speedup))
    fastest = pred.fastest if pred.fastest and 1 <= pred.fastest < own and pred.fastest in speed else None
    # A region whose lock hand-offs could take all its time is not judged by its stalls
    # alone (below): a 2-thread convoy of empty critical sections on a loaded 2-core VM read
    # 82% busy, "efficient", at every one of 59 windows and kept 2 threads where 1 ran
    # 1.3-2.4x as fast (session 44).
    if e >= EFFICIENCY and fastest is None and not handoffs_unbounded(region):
        return f"efficient ({e:.0%} of thread time busy)"
    at_own = speed.get(own)
    g_model = speed[fastest] / at_own - 1.0 if fastest and at_own else 0.0
    g_bound = (own - 1) / (own * e) - 1.0 if e > 0 else 1.0
    gain = max(g_model, g_bound)
    if gain <= NOISE and handoffs_unbounded(region):
        # The stall bound assumes the work stays the same with fewer threads; a lock's
        # hand-offs make the work itself slower with more (libomp's critical section in
        # omp_slowdown at 2 threads on the 2-core VM: 60-70% of thread time busy, "no
        # room", and 24.7 s where 1 thread took 3.0 s, in 1 of 3 runs at load 1).
        gain = HANDOFF_TRIAL_GAIN
    if gain <= NOISE:
        return f"no room to gain ({e:.0%} of thread time busy)"
    first = fastest or max(1, own // 2)
    # Time to come in spans: a region too slow for a window's measurement is measured over
    # several (it once was refused here, "too few calls per window", and a convoy of 100 ms
    # calls whose best count is 1 was never steered).
    spans = _spans(region, elapsed_s, window_s)
    taken = _taken_in_c(region, own)
    if taken == first and taken_perf:  # the C side's step ran already: its loss is measured
        step_loss = max(0.0, own_perf / taken_perf - 1.0)
    else:
        step_loss = _step_loss(pred, own, first)
    # A step that can lose must wait until the run has gone on for a window; one that
    # cannot (even the band's worst case has it faster) is taken at once: on a convoy every
    # window at the own count is the expensive one.  A convoy's step the C side took at the
    # short first look (native/steer_start.c: steered_to below the own count before any answer)
    # is not undone for being early: going back to the own count would not recover the
    # window, and a history mixed by the undone step read the convoy as efficient (runs
    # of 12-21 s at 2 threads where 1 thread takes 0.5 s, on a loaded 2-core VM).
    if step_loss > 0 and spans < MIN_WINDOWS and not stepped:
        return "too early"
    # One span at the first count, in spans of region time lost, against the share of the
    # remaining spans' region time a gain would save.
    if spans * gain / (1.0 + gain) < PAYBACK * step_loss:
        return "too few calls to pay"
    return first, gain
