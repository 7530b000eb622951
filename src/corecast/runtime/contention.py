"""The one-sample contention model: from one window at ``n0`` threads to a speedup curve.

Where ``bound`` gives Amdahl-style bounds, this model predicts how the *waits* grow with
the team, part by part, and sums the parts into a time T(n) per region call (OpenMP) or
for the whole process (plain threads).  Speedup S(n) = T(1) / T(n).

Parts of T(n), per region call (all times are one call's; "work" is thread time)

* **Serialised work** S: ``single`` blocks (regions; all of ``serial_s`` when the region
  took no lock) or, for processes, the serial time of the Karp-Flatt fit below.  Amdahl:
  S does not shrink with n.

* **Locks** (critical/ordered, atomic, OpenMP locks; pthread mutexes and rwlocks) as
  M/M/1/N/N servers with the threads as customers.  Per acquisition: hold time
  H = ``serial_s / acquisitions`` (OpenMP: measured hold of critical/atomic/ordered/
  omp_lock, shared evenly between those categories since the sample holds one total) or
  ``hold_sampled_s / hold_samples`` (pthread mutexes: sampled on contended acquisitions);
  think time Z = compute between two acquisitions of a thread =
  (busy - waits - holds) / acquisitions.  The predicted wait per acquisition at n threads
  is the queue's waiting time with N = n (``queueing.waiting_time(n, 1/Z, 1/H)``); several
  lock categories are solved together as one closed network by exact MVA
  (``queueing.mva``), which is the same queue when there is one.  Lock part of T(n):
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
  Pthread locks without hold samples (rwlocks always: readers share them, so their
  "hold" is the effective exclusive time) get H from their measured wait by inverting
  the queue (fitted "hold_time"); with no wait either, they are left out (no contention
  seen).  Keys schema-1 recordings lack (``record.RegionSample``) are used when present:
  ``single_s`` (single-block time; without it a region that took locks is assumed to have
  none) and ``hold_s`` ({category: hold time}; without it the categories share
  ``serial_s`` per acquisition: fitted "hold_split").

* **Dynamic-schedule loops**: every GOMP_loop_*_start/next call claims iterations from
  one shared counter; it is a further server of the network, visited ``loop_calls`` times
  per call with the assumed (not fitted) service ``LOOP_CALL_COST_S`` = 100 ns, about one
  cache-line transfer of the counter plus the call.  Its cost at n0 is already inside the
  measured busy time; what the model adds is the queueing on the counter as n grows.
  The number of calls per region call is taken as fixed (chunks, not threads, set it).
  Listed as fitted "loop_cost".

* **Imbalance** at the barriers (implicit barrier, and worksharing-end and explicit
  barriers less the (n0 - 1) x single time the others spend there waiting for a single
  block; pthread barriers for processes).  Per thread and call i0 = idle / n0.  Central: the
  spread of per-thread work of random iteration costs grows as sqrt(work per thread) and
  the latest of n threads as sqrt(2 ln n):  idle(n) = i0 sqrt(n0/n) g(n)/g(n0),
  g(n) = sqrt(2 ln n).  The band takes the smallest and largest of this, a spread
  proportional to the work per thread (``bound``'s  i0 (n0/n) g(n)/g(n0)) and a spread
  fixed by the chunk size (dynamic schedules: i0, constant).  Part of i0 is the barriers'
  own latency, which splitting the work does not shrink: the window's smallest idle per
  barrier episode over its regions (``barrier_latency``, an upper bound measured in the
  sample), times the region's episodes per call, stays constant in the central and high
  curves and only the rest spreads as above (fitted "barrier_latency").

* **Team start/join** (regions): wall time per call not covered by the threads' spans,
  o = wall/calls - (busy + imbalance) / (n0 calls); grows linearly with the team,
  o (n - 1) / (n0 - 1) (the band's high keeps it constant beyond n0).

* **Oversubscription**: beyond ``target_cores`` threads (the cores of the machine the
  predictions are for: the target count itself unless a target machine is named),
  CPU-bound work (compute, holds) takes n / cores longer: f(n) = max(1, n / cores).  Time-sharing also absorbs imbalance (the
  cores run the late threads while the early ones wait at the barrier), so the parallel
  time is the larger of the CPU work spread over the cores, f(n) locks(n), and the
  latest thread's span, locks(n) + idle(n) (a work/span bound; measured on a 2-core
  machine with ``examples/omp_critical.c`` at 3, 4 and 8 threads it is within 10%).  A
  sample taken with n0 > ``cores`` (the measuring machine's) is deflated by f(n0) first
  (fitted "cpu_share").

T(n) = S + max(f(n) locks(n), locks(n) + idle(n)) + o(n).

Processes with plain threads: n0 is the process's team (``team_threads``: the threads with
at least a quarter of the second busiest thread's CPU time; pool threads that mostly wait
are left out) when the sample has it, else every thread seen.  The measured CPU time is
the work W; the serial time S is
chosen so that the model reproduces the measured wall time at n0 (less the run-queue
wait other load caused: ``runqueue_other`` when the sample has it, else all run-queue wait
when n0 <= cores) with the lock and barrier parts in place: without
locks and barriers this is exactly the Karp-Flatt serial fraction of ``bound``
(fitted "serial_fraction").  Condition-variable and semaphore waits (producer/consumer
starvation) end up in S.  With one runnable thread (n0 = 1 or one core) S cannot be
measured and is taken as 0, the locks' sampled hold times being the serial work seen.

Band (low <= speedup <= high, all equal to 1 at n = 1):
* high: deterministic think and hold times (each lock's asymptotic bounds:
  max((Z + H)/n, H) per acquisition), the smallest imbalance growth, team overhead
  constant beyond n0, process serial time - 5% of W, and multi-object locks whose
  contention was not observed taken as uncontended;
* low: exponential service with hold times (and the loop counter's service) +25%,
  taken from the think time so T(1) is unchanged, the largest imbalance growth, process
  serial time + 5% of W.

Future bottleneck (ESTIMA's term): at the target count, the part that loses the most
thread time: a lock category ("critical", "atomic", "omp_lock", "mutex", "rwlock"),
"loop_schedule", "imbalance", "serial", "runqueue" (oversubscription) or "fork_join";
None when the parts together lose less than ``BOTTLENECK_SHARE`` of n T(n).

Return type: ``ContentionPrediction``, a subclass of ``bound.RegionPrediction`` with
``bottleneck`` (str or None), ``losses`` (thread-seconds lost per part at the target over
the whole sample) and ``work_s`` (T(1) over the sample, for ``compose_process``).

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

from ..queueing import mva
from .abi import SYNC_WAITS
from .bound import RegionPrediction, prediction_counts, preferred_count, region_work

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .record import ProcessSample, RegionSample

OPENMP_LOCKS = ("critical", "atomic", "omp_lock")
SINGLE_OBJECT = ("critical", "atomic")  # one lock per category (anonymous critical, atomic)
# With one thread no hand-off was seen; a single lock then moves between cores at every
# contended acquisition: a cache-line transfer between cores of one socket, about 40 ns
# on current x86 (assumed, listed as "handoff_prior"; other sockets cost more).  It
# matters only for tight loops of short critical sections: two threads slower than one.
HANDOFF_PRIOR_S = 4e-8
IDLE_WAITS = ("omp_barrier", "condvar", "pthread_barrier", "semaphore")  # inside regions

LOOP_CALL_COST_S = 1e-7  # assumed service of the shared iteration counter per loop call
HOLD_BAND = 0.25         # low band: service times +25% (taken from the think time)
SERIAL_BAND = 0.05       # process serial time +- 5% of the work
FIT_TOL = 0.25           # measured and modelled waits agree within +-25%: no fit
MIN_CONTENDED = 20       # contended acquisitions needed to calibrate a lock
MIN_LATENCY_CALLS = 2    # calls a region needs before its barrier waits bound the latency
MAX_COPIES = 1e6         # effective lock count treated as "no queueing"
BOTTLENECK_SHARE = 0.02  # below this share of n T(n) lost, there is no bottleneck
TINY = 1e-15


class ContentionPrediction(RegionPrediction):
    """``RegionPrediction`` plus the lost thread time per part at the target (seconds over
    the sample)."""

    __slots__ = ("losses",)

    def __init__(self, threads, speedup, low, high, preferred, basis, fitted=None,
                 bottleneck=None, losses=None, work_s=0.0):
        super().__init__(threads, speedup, low, high, preferred, basis, fitted, bottleneck, work_s)
        self.losses = losses or {}


class _Station:
    """One lock category (or the loop counter) as a server of the closed network."""

    __slots__ = ("name", "visits", "hold", "handoff", "copies", "cv", "wait", "evidence",
                 "multi")

    def __init__(self, name, visits, hold, wait=None, evidence=False, multi=False):
        self.name = name
        self.visits = visits      # acquisitions per call (all threads)
        self.hold = hold          # mean hold (service) time
        self.handoff = 0.0        # extra service time of contended acquisitions (fitted)
        self.copies = 1.0         # effective independent locks (fitted)
        self.cv = 1.0             # 1: exponential service, 0: deterministic (fitted)
        self.wait = wait          # measured wait per acquisition at n0, or None
        self.evidence = evidence  # enough contention at n0 >= 2 to calibrate
        self.multi = multi        # the category may be many lock objects


class _Model:
    __slots__ = ("n0", "cores", "serial", "par", "stations", "idle", "overhead", "latency")

    def __init__(self, n0, cores, serial, par, stations, idle, overhead=0.0, latency=0.0):
        self.n0 = n0
        self.cores = cores
        self.serial = serial      # S per call
        self.par = par            # parallel work per call (compute + holds + loop calls)
        self.stations = stations  # locks and the loop counter
        self.idle = idle          # i0: barrier idle per thread and call at n0
        self.overhead = overhead  # o: team start/join per call at n0
        self.latency = latency    # the part of i0 that is the barriers' own latency


# ---- the parts ----------------------------------------------------------------------------
def _growth(n: int) -> float:
    return math.sqrt(2.0 * math.log(n)) if n > 1 else 0.0


def _stretch(n: int, cores: int) -> float:
    return max(1.0, n / cores)


def _idle(m: _Model, n: int, variant: str) -> float:
    if m.idle <= 0 or m.n0 < 2 or n < 2:
        return 0.0
    g = _growth(n) / _growth(m.n0)
    latency = min(m.latency, m.idle)  # the barriers' own: splitting the work does not shrink it
    spread = m.idle - latency
    proportional = latency + spread * (m.n0 / n) * g
    random_spread = latency + spread * math.sqrt(m.n0 / n) * g
    chunked = m.idle
    if variant == "high":
        return min(proportional, random_spread, chunked)
    if variant == "low":
        return max(proportional, random_spread, chunked)
    return random_spread


def _overhead(m: _Model, n: int, variant: str) -> float:
    if m.overhead <= 0 or m.n0 < 2 or n < 2:
        return 0.0
    grow = (n - 1) / (m.n0 - 1)
    return m.overhead * (min(grow, 1.0) if variant == "high" else grow)


def _handoff_growth(m: _Model, n: int, variant: str) -> float:
    """How a lock's hand-off latency, fitted at n0 threads, grows with the contenders.  Its
    bounds: constant (queue locks, futex wake-one: one waiter is handed the lock) and linear
    (test-and-set spinning: each release invalidates the lock's line in every waiter's cache,
    Anderson 1990).  Central: the geometric mean of the two, sqrt(n / n0); the high band
    keeps it constant, the low band linear."""
    if n <= 1 or m.n0 < 1 or variant == "high":
        return 1.0
    ratio = n / m.n0
    return ratio if variant == "low" else math.sqrt(ratio)


def _locks(m: _Model, counts: list[int], variant: str) -> dict[int, tuple[float, dict]]:
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


def _curve(m: _Model, counts: list[int], variant: str) -> tuple[list[float], dict]:
    """T(n) at ``counts`` and the losses per part at the last count."""
    locks = _locks(m, counts, variant)
    times = []
    for n in counts:
        t_lock, _ = locks[n]
        extra = max((_stretch(n, m.cores) - 1.0) * t_lock, _idle(m, n, variant))
        times.append(m.serial + t_lock + extra + _overhead(m, n, variant))
    n = counts[-1]
    t_lock, lock_losses = locks[n]
    over = (_stretch(n, m.cores) - 1.0) * t_lock
    idle = _idle(m, n, variant)
    losses = dict(lock_losses)
    # Oversubscription and imbalance overlap (the cores run other threads while some
    # wait at the barrier): the larger of the two is what is lost.
    losses["imbalance"] = n * idle if idle > over else 0.0
    losses["runqueue"] = n * over if over >= idle else 0.0
    losses["serial"] = (n - 1) * m.serial
    losses["fork_join"] = n * _overhead(m, n, variant)
    return times, losses


def _model_time(m: _Model, n: int) -> float:
    return _curve(m, [1, n] if n > 1 else [1], "central")[0][-1]


def _station_wait(m: _Model, s: _Station, n: int) -> float:
    """Model wait per acquisition of station ``s`` at n threads (central)."""
    _, losses = _locks(m, [n], "central")[n]
    return losses.get(s.name, 0.0) / s.visits if s.visits > 0 else 0.0


# ---- calibration at n0 ------------------------------------------------------------------
def _bisect(fn, lo: float, hi: float, target: float, increasing: bool, steps: int = 60) -> float:
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _fit_station(m: _Model, s: _Station, fitted: set) -> None:
    if not s.evidence or m.n0 < 2 or s.wait is None:
        return
    s.handoff, s.copies, s.cv = 0.0, 1.0, 1.0
    model = _station_wait(m, s, m.n0)
    measured = s.wait
    if measured > model * (1.0 + FIT_TOL) and measured - model > 0.01 * s.hold:
        def wait_with(h):
            s.handoff = h
            return _station_wait(m, s, m.n0)
        hi = max(s.hold, measured, TINY)
        while wait_with(hi) < measured and hi < 1e6 * max(s.hold, measured, 1e-9):
            hi *= 4.0
        s.handoff = _bisect(wait_with, 0.0, hi, measured, increasing=True)
        fitted.add("handoff")
    elif measured < model * (1.0 - FIT_TOL) and model - measured > 0.01 * s.hold:
        if s.multi:
            def wait_with(log_k):
                s.copies = math.exp(log_k)
                return _station_wait(m, s, m.n0)
            top = math.log(MAX_COPIES)
            if wait_with(top) > measured:
                s.copies = MAX_COPIES
            else:
                s.copies = math.exp(_bisect(wait_with, 0.0, top, measured, increasing=False))
            if s.copies >= MAX_COPIES * 0.999:
                s.copies = math.inf
            fitted.add("lock_copies")
        else:
            s.cv = 0.0
            det = _station_wait(m, s, m.n0)
            s.cv = 1.0
            s.cv = min(1.0, max(0.0, (measured - det) / (model - det))) if model > det else 1.0
            fitted.add("lock_cv")


def _fit_stations(m: _Model, fitted: set) -> None:
    if m.n0 < 2:
        for s in m.stations:
            if s.name in SINGLE_OBJECT and s.visits > 0 and s.hold > 0:
                s.handoff = HANDOFF_PRIOR_S
                fitted.add("handoff_prior")
        return
    for _ in range(3 if len(m.stations) > 1 else 1):
        for s in m.stations:
            _fit_station(m, s, fitted)


def _infer_hold(m: _Model, s: _Station) -> None:
    """Hold time from a measured wait (no hold samples): invert the queue at n0."""
    def wait_with(h):
        s.hold = h
        return _station_wait(m, s, m.n0)
    budget = m.par / s.visits  # a hold cannot exceed the whole cycle
    if wait_with(budget) <= s.wait:
        s.hold = budget
        return
    s.hold = _bisect(wait_with, 0.0, budget, s.wait, increasing=True)


# ---- assembling predictions --------------------------------------------------------------
def _bottleneck(losses: dict, total: float) -> str | None:
    name, value = max(losses.items(), key=lambda kv: kv[1], default=(None, 0.0))
    if name is None or value <= 0 or sum(v for v in losses.values() if v > 0) < BOTTLENECK_SHARE * total:
        return None
    return name


def _predict(models: dict[str, _Model], target: int, calls: float, basis: str,
             fitted: list[str]) -> ContentionPrediction:
    counts = prediction_counts(target)
    curves = {}
    losses = {}
    for variant, m in models.items():
        times, lost = _curve(m, counts, variant)
        curves[variant] = [times[0] / t if t > 0 and times[0] > 0 else 1.0 for t in times]
        if variant == "central":
            losses = {k: v * calls for k, v in lost.items() if v > 0}
            total = counts[-1] * times[-1] * calls
            work = times[0] * calls
    central = curves["central"]
    low = [min(a, c) for a, c in zip(curves["low"], central)]
    high = [max(a, c) for a, c in zip(curves["high"], central)]
    return ContentionPrediction(counts, central, low, high, preferred_count(counts, central), basis,
                                fitted, _bottleneck(losses, total), losses, work)


def _copy(m: _Model, **changes) -> _Model:
    c = _Model(m.n0, m.cores, m.serial, m.par, m.stations, m.idle, m.overhead, m.latency)
    for k, v in changes.items():
        setattr(c, k, v)
    return c


def _pthread_stations(d: RegionSample, scale: float, evidence_ok: bool) -> list[_Station]:
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
        out.append(_Station(cat, a / calls, hold, wait,
                            evidence_ok and con.get(cat, 0) >= MIN_CONTENDED, multi=True))
    return out


def _finish_stations(m: _Model, fitted: set) -> None:
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


def _ordered(fitted: set) -> list[str]:
    order = ("think_time", "hold_time", "hold_split", "handoff", "handoff_prior", "lock_cv", "lock_copies",
             "loop_cost", "serial_fraction", "cpu_share", "wait_scale")
    return [k for k in order if k in fitted] + sorted(fitted - set(order))


def _barrier_idle(st: dict, calls: int, n0: int, single: float) -> float:
    """Idle at barriers per call, all threads together (``single``: a single block's time
    per call, which the others wait out at the barrier after it: not imbalance)."""
    barrier = max(float(st.get("omp_barrier", 0.0)) / calls - (n0 - 1) * single, 0.0)
    return barrier + (float(st.get("imbalance", 0.0))
                      + sum(float(st.get(k, 0.0)) for k in IDLE_WAITS if k != "omp_barrier")) / calls


def barrier_episodes(region: RegionSample) -> float:
    """Barriers each thread passes per call: the explicit and worksharing ones counted,
    plus the implicit one at the region's end."""
    n0 = max(1, int(region["threads"]))
    calls = max(1, int(region.get("calls", 1) or 1))
    return float((region.get("acquisitions") or {}).get("omp_barrier", 0) or 0) / calls / n0 + 1.0


def barrier_latency(regions: list[RegionSample]) -> float:
    """Upper bound of one barrier's own latency (seconds per thread and episode) in this
    window: the smallest idle per barrier episode among the regions run with a team.

    A barrier's wait has two parts: the spread of the threads' arrival, which shrinks as
    the work per thread does, and the barrier's latency (wake-up, cache-line hand-off of
    the counter), the same for every barrier of one runtime and team, which does not.  In
    the 16-core runs (scale16) the per-thread barrier wait of BT's regions, 8 to 49
    barriers per call of 20-30 us phases, stayed at 5-10 us per episode from 4 to 16
    threads while FT's, one barrier per call of 35 ms phases, shrank 4x.  With one region
    its own wait bounds nothing apart from itself: 0 (no latency part)."""
    per_episode = []
    for r in regions:
        n0, calls = int(r["threads"]), int(r.get("calls", 0) or 0)
        if r["name"] == "process" or r.get("nested") or n0 < 2 or calls < MIN_LATENCY_CALLS:
            continue
        single = max(float(r.get("single_s", 0.0)), 0.0) / calls
        idle = _barrier_idle(r["stalls_s"], calls, n0, single) / n0
        per_episode.append(idle / barrier_episodes(r))
    return min(per_episode) if len(per_episode) >= 2 else 0.0


def predict_region(region: RegionSample, target: int, cores: int,
                   target_cores: int | None = None, latency: float = 0.0) -> ContentionPrediction:
    """Contention model for an OpenMP region (``region``: its sample record),
    measured on ``cores`` CPUs, predicted for a machine of ``target_cores`` (default:
    ``cores``).  ``latency``: the window's barrier latency per episode
    (``barrier_latency``), kept constant as the team grows."""
    n0 = max(1, int(region["threads"]))
    cores = max(1, int(cores))
    calls = max(1, int(region.get("calls", 1) or 1))
    st = region["stalls_s"]
    acq = region.get("acquisitions") or {}
    con = region.get("contended") or {}
    fitted: set = set()
    f0 = _stretch(n0, cores)
    if f0 > 1:
        fitted.add("cpu_share")

    busy = float(region["busy_s"]) / calls
    sync = sum(float(st.get(k, 0.0)) for k in SYNC_WAITS) / calls
    held = max(float(region.get("serial_s", 0.0)) / calls, 0.0)
    if sync > 0 and busy - sync < held:
        # Waits are timed on sampled acquisitions and scaled up; in a tight convoy the
        # timed acquirer loses the race more often, so they can add up to more than the
        # threads' time.  Waits happen inside busy time, beside the holds: shrink them to fit.
        k = max(busy - held, 0.0) / sync
        st = {c: v * k if c in SYNC_WAITS else v for c, v in st.items()}
        sync *= k
        fitted.add("wait_scale")
    work = max(busy - sync, 1e-12)
    serial = min(held, work)
    cats = [c for c in OPENMP_LOCKS if float(acq.get(c, 0) or 0) > 0]
    a_total = sum(float(acq[c]) for c in cats)
    if "single_s" in region:
        single = min(max(float(region["single_s"]) / calls, 0.0), serial)
    else:
        single = 0.0 if a_total > 0 else serial
    hold_total = serial - single
    given = region.get("hold_s") or {}
    if len(cats) > 1 and not all(c in given for c in cats):
        fitted.add("hold_split")

    stations = []
    for c in cats:
        a = float(acq[c])
        hold = float(given[c]) / a if c in given else hold_total * calls / a_total
        stations.append(_Station(c, a / calls, hold / f0, float(st.get(c, 0.0)) / a / f0,
                                 n0 >= 2 and con.get(c, 0) >= MIN_CONTENDED,
                                 multi=c not in SINGLE_OBJECT))
    stations += _pthread_stations(region, f0, n0 >= 2)
    par = (work - single) / f0
    loops = float(region.get("loop_calls", 0) or 0) / calls
    if loops > 0:
        known = sum(s.visits * s.hold for s in stations if s.hold is not None)
        cost = min(LOOP_CALL_COST_S, 0.5 * max(par - known, 0.0) / loops)
        stations.append(_Station("loop_schedule", loops, cost))
        fitted.add("loop_cost")

    idle = _barrier_idle(st, calls, n0, single)
    span = (float(region["busy_s"]) + float(st.get("imbalance", 0.0))) / calls / n0
    overhead = max(float(region.get("wall_s", 0.0)) / calls - span, 0.0) if n0 >= 2 else 0.0

    m = _Model(n0, cores, single / f0, par, stations, idle / n0 / f0, overhead,
               latency * barrier_episodes(region) / f0)
    if n0 >= 2 and m.idle > 0 and m.latency > 0:
        fitted.add("barrier_latency")
    _finish_stations(m, fitted)
    _fit_stations(m, fitted)
    m.cores = max(1, int(target_cores or cores))  # the fits above need no stretch: f0 is out
    models = {"central": m, "low": m, "high": m}
    return _predict(models, target, calls, "contention model: lock queues, imbalance, "
                    "serial work, oversubscription", _ordered(fitted))


def predict_process(process: ProcessSample, target: int, cores: int,
                    target_cores: int | None = None) -> ContentionPrediction:
    """Contention model for a whole process with plain threads, measured on ``cores``
    CPUs, predicted for a machine of ``target_cores`` (default: ``cores``)."""
    n0 = max(1, int(process["threads"]))
    team = int(process.get("team_threads", 0) or 0)
    if 0 < team < n0:
        # Pool threads that mostly waited (a reader, a writer, idle workers) are not the
        # team: their condition-variable waits are starvation, not lost parallel time.
        n0 = team
    cores = max(1, int(cores))
    st = process["stalls_s"]
    fitted: set = set()
    f0 = _stretch(n0, cores)
    q = min(n0, cores)
    work = max(float(process.get("cpu_s", 0.0)), 0.0)
    wall = max(float(process["wall_s"]), 1e-12)
    if "runqueue_other" in process:  # the library split other load's delay off
        wall = max(wall - float(process["runqueue_other"]) / n0, work / q)
    elif n0 <= cores:  # run-queue wait with a core free per thread: other load, not the program
        wall = max(wall - float(st.get("runqueue", 0.0)) / n0, work / q)
    stations = _pthread_stations(process, 1.0, q >= 2)
    idle = float(st.get("pthread_barrier", 0.0)) / n0 / f0
    work = max(work, 1e-12)
    m = _Model(n0, cores, 0.0, work, stations, idle)
    acquired = sum(s.visits for s in stations)
    if q >= 2:
        basis = "contention model: lock queues and Karp-Flatt serial time, oversubscription"
        fitted.add("serial_fraction")
        psi = min(max(work / wall, 1.0), q)
        m.serial = work * min(max((1.0 / psi - 1.0 / q) / (1.0 - 1.0 / q), 0.0), 1.0)
        m.par = work - m.serial
        for _ in range(3):
            _finish_stations(m, fitted)
            _fit_stations(m, fitted)
            m.serial = _calibrate_serial(m, work, wall)
            m.par = work - m.serial
    else:
        basis = "contention model: sampled lock holds (one runnable thread seen)"
        hold = float(process.get("hold_sampled_s", 0.0))
        if hold > 0 and acquired <= 0:
            m.serial = min(hold, work)  # holds seen but no acquisitions: serial work
            m.par = work - m.serial
        _finish_stations(m, fitted)
    m.cores = max(1, int(target_cores or cores))  # calibrated on this machine, predicted there
    delta = SERIAL_BAND * work if q >= 2 else 0.0
    models = {
        "central": m,
        "low": _copy(m, serial=min(work, m.serial + delta), par=work - min(work, m.serial + delta)),
        "high": _copy(m, serial=max(0.0, m.serial - delta), par=work - max(0.0, m.serial - delta)),
    }
    return _predict(models, target, 1, basis, _ordered(fitted))


def _calibrate_serial(m: _Model, work: float, wall: float) -> float:
    """The serial time that makes the central model's T(n0) the measured wall time."""
    def time_with(s):
        return _model_time(_copy(m, serial=s, par=work - s), m.n0)
    if time_with(0.0) >= wall:
        return 0.0
    if time_with(work) <= wall:
        return work
    return _bisect(time_with, 0.0, work, wall, increasing=True, steps=50)


def compose_process(process: ProcessSample,
                    regions: list[tuple[RegionSample, RegionPrediction]]) -> ContentionPrediction:
    """Whole-program prediction from its (outermost) OpenMP regions plus the serial time
    between them: T(n) = outside + sum over regions of T_r(1) / S_r(n)."""
    outer = [(r, p) for r, p in regions if not r["nested"]]
    if not outer:
        raise ValueError("compose_process needs at least one outermost region")
    outside = max(float(process["wall_s"]) - sum(float(r["wall_s"]) for r, _ in outer), 0.0)

    works = [p.work_s if p.work_s > 0 else region_work(r) for r, p in outer]
    total = outside + sum(works)
    counts = outer[0][1].threads
    curves = []
    for key in ("speedup", "low", "high"):
        curves.append([
            total / (outside + sum(w / getattr(p, key)[i] for w, (_, p) in zip(works, outer)))
            for i in range(len(counts))
        ])
    central, low, high = curves
    losses = {"serial": outside * (counts[-1] - 1)} if outside > 0 else {}
    for _, p in outer:
        for k, v in getattr(p, "losses", {}).items():
            losses[k] = losses.get(k, 0.0) + v
    t_end = total / central[-1]
    return ContentionPrediction(counts, central, low, high, preferred_count(counts, central),
                                "contention model: serial time between regions plus "
                                + _bandwidth_note(outer, works, total),
                                sorted({f for _, p in outer for f in p.fitted}),
                                _bottleneck(losses, counts[-1] * t_end), losses, total)


def _bandwidth_note(outer: list[tuple[RegionSample, RegionPrediction]], works: list[float],
                    total: float) -> str:
    """The process basis's bandwidth term: the work-weighted growth of work per call that
    the regions' smaller-team calls measured (probes), or that it was not measured (no PMU
    is read and busy time at n0 is then taken as work)."""
    measured = [(w, p.bandwidth) for w, (_, p) in zip(works, outer) if p.bandwidth is not None]
    if not measured:
        return "each region's model; bandwidth unmeasured"
    weight = sum(w for w, _ in measured)
    factor = sum(w * b for w, b in measured) / weight if weight > 0 else 1.0
    return f"their models; bandwidth x{factor:.2f} ({weight / total:.0%} of work)"
