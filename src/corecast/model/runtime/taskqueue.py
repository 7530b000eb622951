"""Explicit OpenMP tasks in the one-sample contention model: libgomp's task queue as one
more lock of the region's closed network (``lockqueue``), from the task counters a
recording holds (``tasks``, ``task_s``, ``task_spawn_s``, ``task_depend``:
docs/recording.md).  ``contention.region_contention`` adds it to a region's model.

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

from .lockqueue import LINE_SERVICE_S, Station, TeamModel, copy_model, copy_station, finish_stations, fit_stations
from .teamcurve import ContentionPrediction, ordered_fits, predict_curves

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.record import RegionSample

TASK_QUEUE = "task_queue"  # the station of a team's explicit tasks (libgomp's queue and its lock)


def task_prediction(region: RegionSample, m: TeamModel, target: int, calls: int, f0: float,
                    fitted: set) -> ContentionPrediction | None:
    """A region's prediction with its explicit tasks (``m``: its model without them, at
    ``f0``'s stretch; None where ``task_queue`` has none): the creating time out of T(1),
    the band's high end the reading that counted it as work."""
    queued = task_queue(region, m, calls, f0, fitted)
    if queued is None:
        return None
    q, spawn = queued
    tasks = float(region["tasks"])
    basis = (f"contention model: task queue (tasks of {duration(float(region['task_s']) / tasks)}, "
             f"created in {duration(float(region['task_spawn_s']) / tasks)}), imbalance, serial work")
    pred = predict_curves({"central": q, "low": q, "high": q}, target, calls, basis, ordered_fits(fitted))
    t1 = pred.work_s / calls
    keep = max(t1 - spawn, 1e-12) / t1 if t1 > 0 else 1.0
    pred.scale([keep if n > 1 else 1.0 for n in pred.threads])
    pred.work_s *= keep
    # The band's high end: the reading without the queue, every task's creating time work
    # one thread does too (what no sample at n0 >= 2 can rule out).
    old = predict_curves({"central": m, "low": m, "high": m}, target, calls, basis, [])
    pred.high = [max(h, a, b) for h, a, b in zip(pred.high, old.speedup, old.high)]
    return pred


def task_queue(region: RegionSample, m: TeamModel, calls: int, f0: float,
               fitted: set) -> tuple[TeamModel, float] | None:
    """The region's model with libgomp's task queue as a lock, and the creating time per
    call that T(1) leaves out (None: no explicit tasks counted, or a team of one).

    libgomp puts a team's tasks through one queue under one lock (``GOMP_task`` enqueues,
    the barriers and taskwaits dequeue).  Creating a task (``task_spawn_s``: allocation,
    copy, enqueue) is the runtime's time, not the program's, and a team of one does
    without most of it (libgomp runs a task at once, unqueued, once 64 per thread wait):
    T(1) is the busy time less the waits and the creating time.  At n0 that time c per
    task is the lock's service plus its wait.  A task with dependences is hashed and linked
    as it is created (``gomp_task_handle_depend``): all of c is service.  Without them the
    service is ``lockqueue.LINE_SERVICE_S`` (assumed, as the loop counter's) and the rest
    the lock's measured wait, fitted as any lock's (a hand-off growing with the team); a
    mixed region weighs the two by ``dependent_share``.  Recordings that did not count dependences
    (before ``task_depend``) keep c as the service, and those without task counters the
    model they always had."""
    tasks = float(region.get("tasks", 0) or 0) / calls
    spawn = float(region.get("task_spawn_s", 0.0) or 0.0) / calls / f0
    if m.n0 < 2 or tasks <= 0 or spawn <= 0:
        return None
    per_task = spawn / tasks
    share = dependent_share(region)
    hold = share * per_task + (1.0 - share) * min(per_task, LINE_SERVICE_S)
    wait = per_task - hold  # inside the busy time, where a lock's wait is not: out of the work
    queue = Station(TASK_QUEUE, tasks, hold, wait, True)
    q = copy_model(m, par=max(m.par - tasks * wait, 1e-12),
                   stations=[copy_station(s) for s in m.stations] + [queue])
    finish_stations(q, fitted)
    fit_stations(q, fitted)
    fitted.add(TASK_QUEUE)
    return q, tasks * hold


def dependent_share(region: RegionSample) -> float:
    """The share of a region's tasks created with dependences (``task_depend`` over
    ``tasks``, at most 1); 1 where the recording did not count them."""
    tasks = float(region.get("tasks", 0) or 0)
    if "task_depend" not in region or tasks <= 0:
        return 1.0
    return min(max(float(region["task_depend"] or 0) / tasks, 0.0), 1.0)


def duration(seconds: float) -> str:
    """A duration for the basis text, to two significant digits in the unit that needs no
    exponent: 0.27 us, 350 us, 1.2 ms, 3 s (``.2g`` alone wrote 350 us as 3.5e+02 us)."""
    if not (math.isfinite(seconds) and seconds > 0):
        return f"{seconds:g} s"
    rounded = float(f"{seconds:.2g}")  # first, so that 999.7 us reads 1 ms, not 1000 us
    unit, scale = next(((u, s) for u, s in (("s", 1.0), ("ms", 1e-3)) if rounded >= s), ("us", 1e-6))
    value = rounded / scale
    digits = max(0, 1 - math.floor(math.log10(value)))
    text = f"{value:.{digits}f}"
    return f"{text.rstrip('0').rstrip('.') if '.' in text else text} {unit}"
