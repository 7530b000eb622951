"""The lock part of the one-sample contention model: lock categories (and a
dynamic-schedule loop's iteration counter) as servers of a closed queueing network with
the threads as customers, and their calibration at the sampled team size n0.

Locks (critical/ordered, atomic, OpenMP locks; pthread mutexes and rwlocks) are M/M/1/N/N
servers.  Per acquisition: hold time H (the region or process model says where it comes
from) and think time Z = compute between two acquisitions of a thread =
(busy - waits - holds) / acquisitions.  The predicted wait per acquisition at n threads
is the queue's waiting time with N = n (``queueing.waiting_time(n, 1/Z, 1/H)``); several
stations are solved together as one closed network by exact MVA (``queueing.mva``),
which is the same queue when there is one.  Lock part of T(n):
(compute + holds + acquisitions x wait(n)) / n; a lock that holds everything gives
T(n) = holds (no gain), one that is hot saturates at S(n) -> (Z + H) / H.

The measured wait at n0 (when n0 >= 2 and at least ``MIN_CONTENDED`` acquisitions were
contended) calibrates one knob per lock category, so the curve goes through the sample:
- waits longer than the M/M/1 queue predicts (by more than ``FIT_TOL``): a *handoff*
  latency is added to the service time of contended acquisitions (futex wake-up,
  cache-line transfer of the lock word): fitted "handoff";
- shorter waits on a category that is one lock (critical, atomic): less variable hold
  times; the wait is interpolated between the deterministic queue (asymptotic bounds)
  and the exponential one with a weight in [0, 1]: fitted "lock_cv";
- shorter waits on a category that may be many objects (omp_lock, mutex, rwlock): the
  acquisitions spread over an effective number of independent locks (lock striping),
  which raises the saturation limit: fitted "lock_copies".
Pthread locks without hold samples (rwlocks always: readers share them, so their "hold"
is the effective exclusive time) get H from their measured wait by inverting the queue
(fitted "hold_time"); with no wait either, they are left out (no contention seen).

Band: the high curve takes deterministic think and hold times (each lock's asymptotic
bounds: max((Z + H)/n, H) per acquisition) and multi-object locks whose contention was
not observed as uncontended; the low one exponential service with hold times +25%
(``HOLD_BAND``), taken from the think time so T(1) is unchanged.

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

from ..queueing import mva

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable

    from ...recording.record import RegionSample

SINGLE_OBJECT = ("critical", "atomic")  # one lock per category (anonymous critical, atomic)
# With one thread no hand-off was seen; a single lock then moves between cores at every
# contended acquisition: a cache-line transfer between cores of one socket, about 40 ns
# on current x86 (assumed, listed as "handoff_prior"; other sockets cost more).  It
# matters only for tight loops of short critical sections: two threads slower than one.
HANDOFF_PRIOR_S = 4e-8
# Assumed (not fitted) service of a shared counter or queue lock per visit: about one
# cache-line transfer plus the call (the loop counter's, the task queue's).
LINE_SERVICE_S = 1e-7
HOLD_BAND = 0.25         # low band: service times +25% (taken from the think time)
FIT_TOL = 0.25           # measured and modelled waits agree within +-25%: no fit
MIN_CONTENDED = 20       # contended acquisitions needed to calibrate a lock
MAX_COPIES = 1e6         # effective lock count treated as "no queueing"
TINY = 1e-15


class Station:
    """One lock category (or the loop counter) as a server of the closed network."""

    __slots__ = ("name", "visits", "hold", "handoff", "copies", "cv", "wait", "evidence",
                 "multi")

    def __init__(self, name: str, visits: float, hold: float, wait: float | None = None,
                 evidence: bool = False, multi: bool = False) -> None:
        self.name = name
        self.visits = visits      # acquisitions per call (all threads)
        self.hold = hold          # mean hold (service) time
        self.handoff = 0.0        # extra service time of contended acquisitions (fitted)
        self.copies = 1.0         # effective independent locks (fitted)
        self.cv = 1.0             # 1: exponential service, 0: deterministic (fitted)
        self.wait = wait          # measured wait per acquisition at n0, or None
        self.evidence = evidence  # enough contention at n0 >= 2 to calibrate
        self.multi = multi        # the category may be many lock objects


class TeamModel:
    """One region's (per call) or one process's model at n0: the serial work, the parallel
    work the stations are solved in, and the barrier idle and team overhead the curve adds."""

    __slots__ = ("n0", "cores", "serial", "par", "stations", "idle", "overhead", "latency", "repeated")

    def __init__(self, n0: int, cores: int, serial: float, par: float, stations: list[Station], idle: float,
                 overhead: float = 0.0, latency: float = 0.0, repeated: float = 0.0) -> None:
        self.n0 = n0
        self.cores = cores
        self.serial = serial      # S per call
        self.par = par            # parallel work per call (compute + holds + loop calls)
        self.stations = stations  # locks and the loop counter
        self.idle = idle          # i0: barrier idle per thread and call at n0
        self.overhead = overhead  # o: team start/join per call at n0
        self.latency = latency    # the part of i0 that is the barriers' own latency
        self.repeated = repeated  # of that, the share at barriers passed within a call (not its end)


def copy_station(s: Station) -> Station:
    """A station with its fits, to refit in another model without touching this one's."""
    c = Station(s.name, s.visits, s.hold, s.wait, s.evidence, s.multi)
    c.handoff, c.copies, c.cv = s.handoff, s.copies, s.cv
    return c


def copy_model(m: TeamModel, **changes: object) -> TeamModel:
    c = TeamModel(m.n0, m.cores, m.serial, m.par, m.stations, m.idle, m.overhead, m.latency, m.repeated)
    for k, v in changes.items():
        setattr(c, k, v)
    return c


# ---- the lock part of T(n) ----------------------------------------------------------------
def _handoff_growth(m: TeamModel, n: int, variant: str) -> float:
    """How a lock's hand-off latency, fitted at n0 threads, grows with the contenders.  Its
    bounds: constant (queue locks, futex wake-one: one waiter is handed the lock) and linear
    (test-and-set spinning: each release invalidates the lock's line in every waiter's cache,
    Anderson 1990).  Central: the geometric mean of the two, sqrt(n / n0); the high band
    keeps it constant, the low band linear."""
    if n <= 1 or m.n0 < 1 or variant == "high":
        return 1.0
    ratio = n / m.n0
    return ratio if variant == "low" else math.sqrt(ratio)


def lock_times(m: TeamModel, counts: list[int], variant: str) -> dict[int, tuple[float, dict]]:
    """Lock part of T(n) and each station's queueing loss (thread time) per call."""
    st = [s for s in m.stations if s.visits > 0 and (s.hold > 0 or s.handoff > 0)]
    visits = sum(s.visits for s in st)
    if visits <= 0:
        return {n: (m.par / n, {}) for n in counts}
    holds = sum(s.visits * s.hold for s in st)
    scale = 1.0
    if variant == "low" and holds > 0:
        scale = min(1.0 + HOLD_BAND, m.par / holds)  # service up, think down, T(1) kept
    think = max(m.par - scale * holds, 0.0) / visits
    if variant == "high":
        copies = [math.inf if (s.multi and not s.evidence) else s.copies for s in st]
        cvs = [0.0] * len(st)
    else:
        copies = [s.copies for s in st]
        cvs = [1.0 if variant == "low" else s.cv for s in st]
    need_mva = any(c > 0 for c in cvs)
    grows = any(s.handoff > 0 for s in st)
    shared_rows = None
    out = {}
    for n in counts:
        g = _handoff_growth(m, n, variant) if grows else 1.0
        demands = [s.visits * (scale * s.hold + g * s.handoff) / visits for s in st]
        if need_mva:
            if grows:
                rows = mva(n, think, demands, copies)
            else:  # demands do not depend on n: one MVA serves every count
                shared_rows = shared_rows or mva(max(counts), think, demands, copies)
                rows = shared_rows
        base = think + sum(demands)
        per_copy = [d / c if not math.isinf(c) else 0.0 for d, c in zip(demands, copies)]
        j = max(range(len(st)), key=per_copy.__getitem__)
        handoffs = sum(s.visits * g * s.handoff for s in st)
        det = list(demands)
        det[j] += max(0.0, n * per_copy[j] - base)
        res = det
        if need_mva:
            exp = rows[n - 1][1]
            res = [a + c * (b - a) for a, b, c in zip(det, exp, cvs)]
        cycle = think + sum(res)
        t = max(visits * cycle - handoffs, m.par) / n
        losses = {}
        for s, r, d in zip(st, res, demands):
            losses[s.name] = losses.get(s.name, 0.0) + visits * (r - d)
        out[n] = (t, losses)
    return out


def station_wait(m: TeamModel, s: Station, n: int) -> float:
    """Model wait per acquisition of station ``s`` at n threads (central)."""
    _, losses = lock_times(m, [n], "central")[n]
    return losses.get(s.name, 0.0) / s.visits if s.visits > 0 else 0.0


# ---- calibration at n0 ------------------------------------------------------------------
def bisect(fn: Callable[[float], float], lo: float, hi: float, target: float, increasing: bool, steps: int = 60) -> float:
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _fit_station(m: TeamModel, s: Station, fitted: set) -> None:
    if not s.evidence or m.n0 < 2 or s.wait is None:
        return
    s.handoff, s.copies, s.cv = 0.0, 1.0, 1.0
    model = station_wait(m, s, m.n0)
    measured = s.wait
    if measured > model * (1.0 + FIT_TOL) and measured - model > 0.01 * s.hold:
        def wait_with(h):
            s.handoff = h
            return station_wait(m, s, m.n0)
        hi = max(s.hold, measured, TINY)
        while wait_with(hi) < measured and hi < 1e6 * max(s.hold, measured, 1e-9):
            hi *= 4.0
        s.handoff = bisect(wait_with, 0.0, hi, measured, increasing=True)
        fitted.add("handoff")
    elif measured < model * (1.0 - FIT_TOL) and model - measured > 0.01 * s.hold:
        if s.multi:
            def wait_with(log_k):
                s.copies = math.exp(log_k)
                return station_wait(m, s, m.n0)
            top = math.log(MAX_COPIES)
            if wait_with(top) > measured:
                s.copies = MAX_COPIES
            else:
                s.copies = math.exp(bisect(wait_with, 0.0, top, measured, increasing=False))
            if s.copies >= MAX_COPIES * 0.999:
                s.copies = math.inf
            fitted.add("lock_copies")
        else:
            s.cv = 0.0
            det = station_wait(m, s, m.n0)
            s.cv = 1.0
            s.cv = min(1.0, max(0.0, (measured - det) / (model - det))) if model > det else 1.0
            fitted.add("lock_cv")


def fit_stations(m: TeamModel, fitted: set) -> None:
    if m.n0 < 2:
        for s in m.stations:
            if s.name in SINGLE_OBJECT and s.visits > 0 and s.hold > 0:
                s.handoff = HANDOFF_PRIOR_S
                fitted.add("handoff_prior")
        return
    for _ in range(3 if len(m.stations) > 1 else 1):
        for s in m.stations:
            _fit_station(m, s, fitted)


def _infer_hold(m: TeamModel, s: Station) -> None:
    """Hold time from a measured wait (no hold samples): invert the queue at n0."""
    def wait_with(h):
        s.hold = h
        return station_wait(m, s, m.n0)
    budget = m.par / s.visits  # a hold cannot exceed the whole cycle
    if wait_with(budget) <= s.wait:
        s.hold = budget
        return
    s.hold = bisect(wait_with, 0.0, budget, s.wait, increasing=True)


# ---- the stations a sample gives ------------------------------------------------------
def pthread_stations(d: RegionSample, scale: float, evidence_ok: bool) -> list[Station]:
    """Mutex (hold sampled) and rwlock (hold unknown) stations; the hold is left None
    when it must be inferred from the wait."""
    acq = d.get("acquisitions") or {}
    con = d.get("contended") or {}
    st = d["stalls_s"]
    calls = max(1, int(d.get("calls", 1) or 1))
    out = []
    for cat in ("mutex", "rwlock"):
        a = float(acq.get(cat, 0) or 0)
        if a <= 0:
            continue
        wait = float(st.get(cat, 0.0)) / a / scale
        hold = None
        if cat == "mutex" and int(d.get("hold_samples", 0) or 0) > 0:
            hold = float(d["hold_sampled_s"]) / int(d["hold_samples"]) / scale
        elif wait <= 0:
            continue  # no contention seen, no hold time known: nothing to model
        out.append(Station(cat, a / calls, hold, wait,
                           evidence_ok and con.get(cat, 0) >= MIN_CONTENDED, multi=True))
    return out


def finish_stations(m: TeamModel, fitted: set) -> None:
    """Infer missing holds, keep holds inside the parallel work, add the fits."""
    pending = [s for s in m.stations if s.hold is None]
    for s in pending:
        s.hold = 0.0
    for s in pending:
        if m.n0 >= 2 and s.wait and s.wait > 0:
            _infer_hold(m, s)
            fitted.add("hold_time")
    holds = sum(s.visits * s.hold for s in m.stations)
    if holds > m.par > 0:
        for s in m.stations:
            s.hold *= m.par / holds
    if any(s.visits > 0 and s.name != "loop_schedule" for s in m.stations):
        fitted.add("think_time")
