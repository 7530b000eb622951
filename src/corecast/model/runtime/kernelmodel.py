"""Per-kernel predictions from the kernel's sample.

A kernel's sample becomes a region for the one-sample contention model
(``corecast.model.runtime.predictor.predict_region_threads``), the compute units playing the threads:

* team size n0 = the device's compute units (pocl: its worker threads, at most
  ``POCL_MAX_PTHREAD_COUNT``), calls = launches in the sample, wall = their device time;
* compute-unit time n0 x device time splits into busy time, run-queue wait (the runtime
  threads were runnable but the CPU ran other work: left out of the kernel's time, as the
  process model leaves other load out) and idle time (the rest; CPU devices only); idle
  time the pthread shim saw as lock waits (mutex, rwlock) stays lock waits, with the
  acquisitions and contended acquisitions, so the runtime's locks are queues of the
  model; the rest (condition variables, barriers, idle nobody waited on) is imbalance:
  workers without work-groups while others finish theirs;
* when every sampled launch had the same global and local size, at most G = number of
  work-groups compute units can be busy: speedups are capped at G;
* past the sampled count each busy unit is assumed slower the more units are busy
  (``unit_loss``): the sample cannot show it (a unit that runs slower is as busy as one
  that runs fast), and on the 16-core machine every pocl kernel with its units busy lost
  speed that way past 4 units;
* with the machine's calibration (``corecast calibrate``), a launch whose buffer
  arguments (its compulsory traffic, ``Sample.buffer_bytes``) exceed the last-level cache
  takes at least their bytes over the triad's bandwidth at n units: speedups are capped
  there too (``evidence.kernel_roofline``).  Without one the basis says the bandwidth
  is unmeasured.

A device that is not a CPU (a GPU, an accelerator) is predicted by
``workgroups.device_predict``: the work-group bound, all its run shows.

``memory_model(kernel, machine)`` adds node counts on a machine description for CPU
devices (``corecast run --target-machine``), through the same code as OpenMP regions.
"""
from __future__ import annotations

from .workgroups import device_predict, work_groups

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..machine.calibration import Calibration
    from ...recording.kernelstats import KernelStats
    from ...recording.record import RegionSample
    from .bound import TeamPrediction
    from .numa import NumaRegionPrediction

LOCK_WAITS = ("mutex", "rwlock")
IDLE_WAITS = ("condvar", "pthread_barrier", "semaphore")
SHOWN = ("imbalance",) + LOCK_WAITS + IDLE_WAITS + ("runqueue",)  # a kernel's stalls_s


def short_launches(kernel: KernelStats) -> bool:
    """The sampled launches are shorter than the snapshot interval on average: idle time
    inside them is not resolved (the workers' time is shared out by device time), so their
    stalls are a lower bound."""
    from ...recording.kernelstats import TICK_S

    s = kernel.sample
    return bool(s.launches) and s.device_ns / s.launches < TICK_S * 1e9


def sample_stalls(kernel: KernelStats) -> dict[str, float] | None:
    """Compute-unit seconds lost per category (``SHOWN``) in the sample; None where the
    sample cannot say (no completed sampled launch, not a CPU device)."""
    s = kernel.sample
    if not s.launches or s.device_ns <= 0 or not s.cpu_measured or kernel.device_type != "cpu":
        return None
    cu = kernel.compute_units * s.device_ns * 1e-9
    runq = min(s.runq_ns * 1e-9, max(cu - s.cpu_ns * 1e-9, 0.0))
    idle = max(cu - s.cpu_ns * 1e-9 - runq, 0.0)
    waits = {c: max(float(s.waits.get(c, 0.0)), 0.0) for c in LOCK_WAITS + IDLE_WAITS}
    total = sum(waits.values())
    if total > idle:  # waits are counted when they end: some began before the kernel
        waits = {c: w * idle / total for c, w in waits.items()} if total > 0 else waits
    out = {"imbalance": max(idle - sum(waits.values()), 0.0)}
    out.update(waits)
    out["runqueue"] = runq
    return out


def stalls(kernel: KernelStats) -> dict[str, float] | None:
    """``sample_stalls`` scaled from the sample to all completed launches."""
    part = sample_stalls(kernel)
    if part is None:
        return None
    scale = kernel.device_ns / kernel.sample.device_ns if kernel.sample.device_ns else 1.0
    return {c: v * scale for c, v in part.items()}


def region(kernel: KernelStats) -> RegionSample | None:
    """The sample as a region's sample record (``record.RegionSample``)."""
    s = kernel.sample
    if not s.launches or s.device_ns <= 0:
        return None
    n0 = max(1, int(kernel.compute_units))
    lost = sample_stalls(kernel) or {}
    # Run-queue wait is other load (or more workers than cores): out of the kernel's time.
    wall = s.device_ns * 1e-9 - lost.get("runqueue", 0.0) / n0
    locks = {c: lost.get(c, 0.0) for c in LOCK_WAITS}
    imbalance = sum(lost.get(c, 0.0) for c in ("imbalance",) + IDLE_WAITS)
    cu = n0 * wall
    return {
        "name": kernel.name, "object": kernel.device, "runtime": "opencl", "threads": n0,
        "nested": False, "calls": s.launches, "wall_s": wall, "busy_s": cu - imbalance,
        "serial_s": 0.0, "single_s": 0.0, "hold_s": {}, "cpu_s": s.cpu_ns * 1e-9,
        "stalls_s": {"imbalance": imbalance, **locks},
        "acquisitions": {c: int(s.acquisitions.get(c, 0)) for c in LOCK_WAITS},
        "contended": {c: int(s.contended.get(c, 0)) for c in LOCK_WAITS},
        "loop_calls": 0, "hold_sampled_s": 0.0, "hold_samples": 0,
        "requested": n0, "steered_to": 0, "hist": [], "probe_calls": 0, "probes": {},
    }


def default_target(kernel: KernelStats, cores: int) -> int:
    """Compute units to predict up to when none was asked for: the host's cores for a CPU
    device (its compute units are cores), the device's own compute units otherwise."""
    return cores if kernel.device_type == "cpu" else max(1, int(kernel.compute_units))


def predict(kernel: KernelStats, target: int, cores: int,
            machine: Calibration | None = None) -> TeamPrediction | None:
    """Prediction for ``kernel`` at 1..target compute units (a ``TeamPrediction``), or
    None without a sample: the contention model on a CPU device, ``device_predict`` on
    others; ``machine``: this host's calibration, whose bandwidth caps a CPU device's
    kernels whose buffers exceed the last-level cache."""
    reg = region(kernel)
    if reg is None:
        return None
    if kernel.device_type != "cpu":
        return device_predict(kernel, target)
    from .bound import fastest_count
    from .predictor import predict_region_threads
    from .spread import widen

    # The one predictor regions take, with the empirical band every region's prediction
    # gets (a kernel's sample has no team-size history: without it the band was the
    # model's own, zero-wide at the sampled count, and held no measured pocl kernel).
    pred = widen(predict_region_threads(reg, target, cores, cores, {}))
    if sample_stalls(kernel) is not None:
        pred.basis = ("contention model on the kernel's sample: idle compute units as "
                      "imbalance, the runtime's lock waits as queues")
    else:
        pred.basis = "contention model on the kernel's sample (the runtime threads' time not resolved)"
    groups = work_groups(kernel)
    if groups is not None and groups < max(pred.threads):
        few_groups(pred, groups, int(kernel.compute_units), parallelism(kernel))
        pred.fastest = fastest_count(pred.threads, pred.speedup)
        pred.basis += f"; {groups} work-groups per launch: no gain past {groups} compute units"
        if pred.threads[-1] > groups:
            pred.bottleneck = "work_groups"
    sampled = max(1, int(kernel.compute_units))
    if unit_loss(pred, sampled):
        pred.basis += (f"; each unit assumed slower with more busy past the sampled {sampled} "
                       f"(contention {UNIT_CONTENTION:g} a unit; unobserved: the band's high end without it)")
    from .evidence import kernel_roofline

    s = kernel.sample
    pred.basis += kernel_roofline(pred, float(s.buffer_bytes), s.launches, s.device_ns * 1e-9,
                                  int(kernel.compute_units), machine)
    return pred


# A CPU device's loss of per-unit speed with more units busy: Gunther's contention term
# (the universal scalability law without its coherency term), each unit's speed
# 1 / (1 + UNIT_CONTENTION (b - 1)) at b busy units.  Chosen by benchmarks/kernel_loss.py
# on the 16-core machine's pocl kernels (s30/merged8.json: 8 kernels at 1..16 units, runs
# at 2 and 4), scored leave-one-kernel-out; it says when this is not its choice.
UNIT_CONTENTION = 0.048


def unit_loss(pred: TeamPrediction, sampled: int, sigma: float | None = None) -> bool:
    """``pred`` (in place) with each busy compute unit slower past the ``sampled`` count,
    ``sigma`` (default ``UNIT_CONTENTION``) a unit; whether anything changed.

    The contention model takes the sample's busy time as the work and divides it among the
    units, so a kernel whose units were all busy at n0 scales linearly; but a CPU device's
    units are the host's cores, and a core runs slower the more of them are busy (shared
    caches, memory, the clock; on the 16-core VM pocl kernels with their units busy reached
    S(16) of 9-13, not 16).  The sample cannot show that loss: a slower unit is as busy as
    a fast one.  Busy units at n are the prediction's own speedup (its T(1) is busy time,
    so T(1) / T(n) is the mean number busy: a kernel of G work-groups keeps at most G
    busy), and the speedup at n > n0 is multiplied by e(b(n)) / e(b(n0)), never above 1;
    at n0 and below, where the sample measured or the model already fits, nothing changes.
    The band's low end moves with it; its high end does not (a kernel that loses nothing
    per unit is not ruled out by one run)."""
    sigma = UNIT_CONTENTION if sigma is None else sigma
    if sigma <= 0 or sampled not in pred.threads:
        return False
    from .bound import fastest_count

    def speed(busy: float) -> float:
        return 1.0 / (1.0 + sigma * (max(busy, 1.0) - 1.0))

    base = speed(pred.speedup[pred.threads.index(sampled)])
    changed = False
    for i, n in enumerate(pred.threads):
        if n <= sampled:
            continue
        f = min(1.0, speed(pred.speedup[i]) / base)
        if f < 1.0:
            changed = True
            pred.speedup[i] *= f
            pred.low[i] = min(pred.low[i] * f, pred.speedup[i])
            pred.high[i] = max(pred.high[i], pred.speedup[i])
    if changed:
        pred.fastest = fastest_count(pred.threads, pred.speedup)
        if "unit_contention" not in pred.fitted:
            pred.fitted = list(pred.fitted) + ["unit_contention"]
    return changed


def parallelism(kernel: KernelStats) -> float | None:
    """Busy compute units during the sampled launches (the runtime threads' CPU time over
    the device time, 1 .. compute units); None where the runtime's threads were not seen."""
    s = kernel.sample
    if not s.launches or s.device_ns <= 0 or not s.cpu_measured or kernel.device_type != "cpu":
        return None
    return min(max(s.cpu_ns / s.device_ns, 1.0), max(1, int(kernel.compute_units)))


def few_groups(pred: TeamPrediction, groups: int, sampled: int, busy: float | None) -> None:
    """``pred`` (in place) for a kernel of ``groups`` work-groups per launch, sampled at
    ``sampled`` compute units with ``busy`` of them busy on average.

    No more than ``groups`` units are ever busy, so no count gains more.  A work-group runs
    on one compute unit from its start to its end.  From ``groups`` units on, every
    work-group has a unit of its own and a launch lasts as long as its
    largest work-group: more units cannot shorten it, so the speedup, band and all, stays
    what it is at ``groups`` (not ``groups`` itself: that holds only when the work-groups
    carry equal work, which the sample does not show).  Below ``groups`` the work per
    work-group is not observed; what is: the largest work-group took at most a sampled
    launch's time T0.  Greedy scheduling of unsplittable work (Graham, "Bounds on
    multiprocessing timing anomalies", SIAM J. Appl. Math. 1969) then bounds a launch on
    n units by B/n + (1 - 1/n) T0, B the busy compute-unit time (``busy`` x T0): the band's
    low end reaches that speedup, 1 / (1/n + (1 - 1/n) / busy), at counts above the sampled one."""
    pred.speedup = [min(v, groups) for v in pred.speedup]
    pred.low = [min(v, groups) for v in pred.low]
    pred.high = [min(v, groups) for v in pred.high]
    at = max((i for i, n in enumerate(pred.threads) if n <= groups), default=0)
    for i, n in enumerate(pred.threads):
        if n > groups:
            pred.speedup[i] = min(pred.speedup[i], pred.speedup[at])
            pred.low[i] = min(pred.low[i], pred.low[at])
            pred.high[i] = min(pred.high[i], pred.high[at])
        elif busy is not None and n > sampled:
            bound = 1 / (1 / n + (1 - 1 / n) / busy)
            pred.low[i] = min(pred.low[i], bound, pred.speedup[i])


_states: dict = {}  # machine path -> model.runtime.numa.NumaState (the file is read once)


def memory_model(kernel: KernelStats, machine: str | None = None) -> NumaRegionPrediction | None:
    """Node counts on a machine description (``machine``: its path or preset) for a kernel on a CPU device, as the runtime predicts an
    OpenMP region's (``model.runtime.numa``): a ``NumaRegionPrediction`` or None without a machine.

    A process runs its kernels at one compute-unit count and no per-kernel memory counters
    are read, so the memory traffic is unknown: the prediction is the kernel's own
    contention model at k nodes' cores, and its basis says so."""
    path = machine or None
    sample = region(kernel)
    if path is None or kernel.device_type != "cpu" or sample is None:
        return None
    from . import numa

    state = _states.get(path)
    if state is None:
        state = _states[path] = numa.NumaState(path)
    if state.machine is None:
        raise ValueError(state.error)
    return numa.predict_region_nodes(state, sample, None, None, lambda t: predict(kernel, t, t))
