"""The one-sample contention model: from one window at ``n0`` threads to a speedup curve,
S(n) = T(1) / T(n), for an OpenMP region (per call) or a whole process.

Where ``bound`` gives Amdahl-style bounds, this model predicts how the *waits* grow with
the team, part by part: ``lockqueue`` queues the locks, ``teamcurve`` sums the parts
into T(n), its band and the future bottleneck.  This module turns a sample
(``record.RegionSample``, ``ProcessSample``) into those parts.

Regions (all times one call's, "work" is thread time):

* **Serialised work** S: ``single`` blocks (``single_s``; without it all of ``serial_s``
  when the region took no lock, none when it did).
* **Locks** (critical/ordered, atomic, omp_lock; the pthread locks inside): hold time
  H = ``hold_s[category] / acquisitions``, or ``serial_s`` less the single blocks shared
  evenly per acquisition when ``hold_s`` is missing (fitted "hold_split").  Waits that
  add up to more than the threads' busy time beside the holds are scaled down to fit
  (fitted "wait_scale").
* **Dynamic-schedule loops**: every GOMP_loop_*_start/next call claims iterations from
  one shared counter, a further station visited ``loop_calls`` times per call with the
  assumed (not fitted) service ``LOOP_CALL_COST_S`` = 100 ns, about one cache-line
  transfer of the counter plus the call.  Its cost at n0 is already inside the measured
  busy time; what the model adds is the queueing on the counter as n grows.  The number
  of calls per region call is taken as fixed (chunks, not threads, set it): fitted
  "loop_cost".
* **Imbalance** i0: the implicit barrier's idle, and the worksharing-end and explicit
  barriers' less the (n0 - 1) x single time the others spend there waiting for a single
  block; its latency part is ``barrier_latency`` times the region's episodes per call
  (fitted "barrier_latency").
* **Team start/join**: wall time per call not covered by the threads' spans,
  o = wall/calls - (busy + imbalance) / (n0 calls).
* A sample taken with n0 > ``cores`` (the measuring machine's) is deflated by
  f(n0) = n0 / cores first (fitted "cpu_share").
* **Explicit tasks** (where the recording counts them): libgomp's task queue as one
  more lock, the time spent creating a task its service and wait, and out of T(1)
  (``taskqueue`` says why; fitted "task_queue").

Processes with plain threads: n0 is the process's team (``team_threads``: the threads
with at least a quarter of the second busiest thread's CPU time; pool threads that mostly
wait are left out) when the sample has it, else every thread seen.  The measured CPU
time is the work W; mutexes and rwlocks are stations, pthread barriers the imbalance.
The serial time S is chosen so that the model reproduces the measured wall time at n0
(less the run-queue wait other load caused: ``runqueue_other`` when the sample has it,
else all run-queue wait when n0 <= cores) with the lock and barrier parts in place:
without locks and barriers this is exactly the Karp-Flatt serial fraction of ``bound``
(fitted "serial_fraction").  Condition-variable and semaphore waits (producer/consumer
starvation) end up in S.  With one runnable core for several threads S cannot be
measured: the prediction is "no evidence" (no gain), its band up to all of the work
parallel but the locks' sampled hold times.
Band: S -+ ``SERIAL_BAND`` of W (high, low).  A team of one thread is no evidence: the
prediction is no gain, its band up to what the lock holds allow.

Processes with OpenMP regions (``compose_process``): the time outside the outermost
regions stays serial and each region scales as its prediction says.

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

from ...recording.abi import SYNC_WAITS
from .bound import TeamPrediction, fastest_count, region_work
from .lockqueue import (LINE_SERVICE_S, MIN_CONTENDED, SINGLE_OBJECT, Station, TeamModel, bisect,
                        copy_model, finish_stations, fit_stations, pthread_stations)
from .taskqueue import task_prediction
from .teamcurve import (ContentionPrediction, bottleneck_of, model_time, ordered_fits,
                        predict_curves, stretch)

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.record import ProcessSample, RegionSample

OPENMP_LOCKS = ("critical", "atomic", "omp_lock")
IDLE_WAITS = ("omp_barrier", "condvar", "pthread_barrier", "semaphore")  # inside regions
LOOP_CALL_COST_S = LINE_SERVICE_S  # assumed service of the shared iteration counter per loop call
MIN_LATENCY_CALLS = 2    # calls a region needs before its barrier waits bound the latency
SERIAL_BAND = 0.05       # process serial time +- 5% of the work
MAX_TEAM_FROM_CPU = 1024  # native/corecast.h's CC_MAX_THREADS, where the CPUs are not known
CONCURRENCY_SLACK = 0.05  # CPU/wall a little over a whole number is timing noise, not one more thread


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


def region_contention(region: RegionSample, target: int, cores: int,
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
    f0 = stretch(n0, cores)
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
        stations.append(Station(c, a / calls, hold / f0, float(st.get(c, 0.0)) / a / f0,
                                n0 >= 2 and con.get(c, 0) >= MIN_CONTENDED,
                                multi=c not in SINGLE_OBJECT))
    stations += pthread_stations(region, f0, n0 >= 2)
    par = (work - single) / f0
    loops = float(region.get("loop_calls", 0) or 0) / calls
    if loops > 0:
        known = sum(s.visits * s.hold for s in stations if s.hold is not None)
        cost = min(LOOP_CALL_COST_S, 0.5 * max(par - known, 0.0) / loops)
        stations.append(Station("loop_schedule", loops, cost))
        fitted.add("loop_cost")

    idle = _barrier_idle(st, calls, n0, single)
    span = (float(region["busy_s"]) + float(st.get("imbalance", 0.0))) / calls / n0
    overhead = max(float(region.get("wall_s", 0.0)) / calls - span, 0.0) if n0 >= 2 else 0.0

    episodes = barrier_episodes(region)
    m = TeamModel(n0, cores, single / f0, par, stations, idle / n0 / f0, overhead,
                  latency * episodes / f0, (episodes - 1.0) / episodes)
    if n0 >= 2 and m.idle > 0 and m.latency > 0:
        fitted.add("barrier_latency")
    finish_stations(m, fitted)
    fit_stations(m, fitted)
    m.cores = max(1, int(target_cores or cores))  # the fits above need no stretch: f0 is out
    models = {"central": m, "low": m, "high": m}
    basis = "contention model: lock queues, imbalance, serial work, oversubscription"
    tasks = task_prediction(region, m, target, calls, f0, fitted)
    return tasks if tasks is not None else predict_curves(models, target, calls, basis, ordered_fits(fitted))


def process_team(process: ProcessSample, cores: int | None = None) -> int:
    """The threads that did a plain-threads process's work: ``team_threads`` when the
    sample has fewer than all it saw, else every thread.  Pool threads that mostly waited
    (a reader, a writer, idle workers) are not the team: their condition-variable waits
    are starvation, not lost parallel time."""
    n0 = max(1, int(process["threads"]))
    team = int(process.get("team_threads", 0) or 0)
    n0 = team if 0 < team < n0 else n0
    # Threads that never called a wrapped function (workers made and joined per phase, as
    # Phoenix's map-reduce does) were not counted before the library counted the threads
    # alive at once, but their CPU time is in the process's: CPU time over wall time is a
    # lower bound on how many ran at once.  Without it such a recording read as one busy
    # thread, "no evidence" (issue #38).  No more than the CPUs it ran on, though: a
    # sample's CPU time over a wall time cut short is not a team (it made a team of 552,000
    # threads, and a fit over that many ran for minutes).
    ran = float(process.get("cpu_s", 0.0)) / max(float(process["wall_s"]), 1e-12)
    bound = max(1, int(cores)) if cores else MAX_TEAM_FROM_CPU
    return max(n0, min(math.ceil(ran - CONCURRENCY_SLACK), bound))


def repeated_pthread_barriers(process: ProcessSample, n0: int) -> bool:
    """Whether the process's threads passed its pthread barriers more than once each, on
    average (``MIN_LATENCY_CALLS`` episodes: what a region's latency bound needs too)."""
    passed = float((process.get("acquisitions") or {}).get("pthread_barrier", 0) or 0)
    return n0 >= 2 and passed >= MIN_LATENCY_CALLS * n0


def wall_without_other_load(process: ProcessSample, n0: int, cores: int) -> float:
    """The process's wall time less the run-queue wait other load caused, per thread of its
    team ``n0``: ``runqueue_other`` where the library split it off, else all run-queue wait
    where every thread had a core; never below its CPU time over the CPUs it could use, nor
    0 (a sample of run-queue wait alone, no CPU time, leaves no wall)."""
    work = max(float(process.get("cpu_s", 0.0)), 0.0)
    wall = max(float(process["wall_s"]), 1e-12)
    q = min(n0, max(1, int(cores)))
    if "runqueue_other" in process:
        return max(wall - float(process["runqueue_other"]) / n0, work / q, 1e-12)
    if n0 <= cores:
        return max(wall - float(process["stalls_s"].get("runqueue", 0.0)) / n0, work / q, 1e-12)
    return wall


def took_turns(process: ProcessSample, cores: int) -> bool:
    """Whether the process's threads ran one at a time while other load held the other CPUs.
    Taking that load's wait off the wall reads them as side by side, which they never were,
    so their locks never met: two threads incrementing one counter under a mutex on a
    loaded 2-core VM had 42 of 20M acquisitions contended, S@2 1.89 predicted, 0.97
    measured (session user44); an OpenMP loop around a critical section there, S@2 1.04
    or 0.05 predicted by whether the turns fell inside its calls or between them, about 0.2
    measured on the idle machine.  The sample shows nothing of how they behave at once."""
    n0 = process_team(process, cores)
    work = max(float(process.get("cpu_s", 0.0)), 0.0)
    ran = work / max(float(process["wall_s"]), 1e-12)
    return (min(n0, max(1, int(cores))) >= 2 and ran < 1.0 + CONCURRENCY_SLACK
            and work / wall_without_other_load(process, n0, cores) > ran + CONCURRENCY_SLACK)


def process_contention(process: ProcessSample, target: int, cores: int,
                       target_cores: int | None = None) -> ContentionPrediction:
    """Contention model for a whole process with plain threads, measured on ``cores``
    CPUs, predicted for a machine of ``target_cores`` (default: ``cores``)."""
    n0 = process_team(process, cores)
    cores = max(1, int(cores))
    st = process["stalls_s"]
    fitted: set = set()
    f0 = stretch(n0, cores)
    q = min(n0, cores)
    work = max(float(process.get("cpu_s", 0.0)), 0.0)
    wall = wall_without_other_load(process, n0, cores)
    turns = took_turns(process, cores)
    if turns:
        q = 1
    stations = pthread_stations(process, 1.0, q >= 2)
    idle = float(st.get("pthread_barrier", 0.0)) / n0 / f0
    work = max(work, 1e-12)
    m = TeamModel(n0, cores, 0.0, work, stations, idle)
    if repeated_pthread_barriers(process, n0):
        # The process's one barrier population: its wait per episode bounds their latency
        # (as ``barrier_latency``'s smallest does for regions), all of it at barriers
        # passed again and again (``teamcurve``: it grows as the latest of n threads')
        m.latency, m.repeated = idle, 1.0
        fitted.add("barrier_latency")
    acquired = sum(s.visits for s in stations)
    if q >= 2:
        basis = "contention model: lock queues and Karp-Flatt serial time, oversubscription"
        fitted.add("serial_fraction")
        psi = min(max(work / wall, 1.0), q)
        m.serial = work * min(max((1.0 / psi - 1.0 / q) / (1.0 - 1.0 / q), 0.0), 1.0)
        m.par = work - m.serial
        for _ in range(3):
            finish_stations(m, fitted)
            fit_stations(m, fitted)
            m.serial = _calibrate_serial(m, work, wall)
            m.par = work - m.serial
    else:  # one runnable CPU: no serial time measured, the holds seen are the serial work
        hold = float(process.get("hold_sampled_s", 0.0))
        if hold > 0 and acquired <= 0:
            m.serial = min(hold, work)  # holds seen but no acquisitions: serial work
            m.par = work - m.serial
        finish_stations(m, fitted)
    m.cores = max(1, int(target_cores or cores))  # calibrated on this machine, predicted there
    if q < 2:  # q = min(n0, cores): the predictor's no-evidence test too
        # One thread did the work (a main thread with idle helpers), or the threads took
        # turns on one CPU (an MPI rank bound to a core, beside its library's progress
        # thread): the sample shows nothing of how the work would divide, so no gain is
        # claimed, and the band runs from none to what the lock holds allow (issue #38:
        # such a program was given S@8 = 8, and such a rank S@2 = 1.94).
        why = ("one thread did the work" if n0 < 2 else
               f"{n0} threads took turns" if turns else f"{n0} threads on one CPU")
        serial = copy_model(m, serial=work, par=0.0)
        return predict_curves({"central": serial, "low": serial, "high": m}, target, 1,
                              f"contention model: no evidence, {why} (band: no gain to all of it "
                              "parallel)", ordered_fits(fitted))
    delta = SERIAL_BAND * work if q >= 2 else 0.0
    models = {
        "central": m,
        "low": copy_model(m, serial=min(work, m.serial + delta), par=work - min(work, m.serial + delta)),
        "high": copy_model(m, serial=max(0.0, m.serial - delta), par=work - max(0.0, m.serial - delta)),
    }
    return predict_curves(models, target, 1, basis, ordered_fits(fitted))


def _calibrate_serial(m: TeamModel, work: float, wall: float) -> float:
    """The serial time that makes the central model's T(n0) the measured wall time."""
    def time_with(s):
        return model_time(copy_model(m, serial=s, par=work - s), m.n0)
    if time_with(0.0) >= wall:
        return 0.0
    if time_with(work) <= wall:
        return work
    return bisect(time_with, 0.0, work, wall, increasing=True, steps=50)


def compose_process(process: ProcessSample, regions: list[tuple[RegionSample, TeamPrediction]],
                    serial_loss: float = 1.0) -> ContentionPrediction:
    """Whole-program prediction from its (outermost) OpenMP regions plus the serial time
    between them: T(n) = outside + sum over regions of T_r(1) / S_r(n).  ``serial_loss``:
    what one thread alone needs of the serial time measured beside the sampled team (its
    idle threads spin between regions, and the one at work runs at the speed a busy
    machine keeps: ``evidence.one_thread_work``); T(1) only, T(n) keeps the measured."""
    outer = [(r, p) for r, p in regions if not r["nested"]]
    if not outer:
        raise ValueError("compose_process needs at least one outermost region")
    outside = max(float(process["wall_s"]) - sum(float(r["wall_s"]) for r, _ in outer), 0.0)

    works = [p.work_s if p.work_s > 0 else region_work(r) for r, p in outer]
    total = outside * serial_loss + sum(works)
    counts = outer[0][1].threads
    curves = []
    for key in ("speedup", "low", "high"):
        curves.append([
            1.0 if n == 1 else total / (outside + sum(w / getattr(p, key)[i] for w, (_, p) in zip(works, outer)))
            for i, n in enumerate(counts)
        ])
    central, low, high = curves
    losses = {"serial": outside * (counts[-1] - 1)} if outside > 0 else {}
    for _, p in outer:
        for k, v in getattr(p, "losses", {}).items():
            losses[k] = losses.get(k, 0.0) + v
    t_end = total / central[-1]
    return ContentionPrediction(counts, central, low, high, fastest_count(counts, central),
                                "contention model: serial time between regions plus "
                                + _bandwidth_note(outer, works, total),
                                sorted({f for _, p in outer for f in p.fitted}),
                                bottleneck_of(losses, counts[-1] * t_end), losses, total)


def _bandwidth_note(outer: list[tuple[RegionSample, TeamPrediction]], works: list[float],
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
