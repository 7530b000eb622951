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

A device that is not a CPU (a GPU, an accelerator) shows no runtime threads: only each
launch's device time is observable.  Its prediction (``device_predict``) runs to the
device's compute units and is the work-group bound alone: G work-groups of equal work, one
wave of them per compute unit at a time, take ceil(G / n) waves at n units.  What limits
the kernel is named (``limits``): work-groups per launch against compute units, the
work-group size against the device's largest, and the share of compute units a launch can
occupy.  Idle time inside a launch (memory or latency bound work-items, uneven work-groups)
is not measured there, so the band's low end is the speedup with half the compute-unit time
at the device's count idle.  Nor does OpenCL report how many work-groups a unit runs at
once (a GPU's streaming multiprocessor holds several): the wave count is the most, one
work-group per unit at a time, and the band's low end lets each unit run up to as many as
the device's largest work-group holds (``resident_groups``), down to no gain when one unit
could hold them all.

``memory_model(kernel, machine)`` adds node counts on a machine description for CPU
devices (``corecast run --target-machine``), through the same code as OpenMP regions.
"""
from __future__ import annotations

import math

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


def work_groups(kernel: KernelStats) -> int | None:
    """Work-groups per launch when every sampled launch had the same known shape."""
    shapes = kernel.sample.shapes or set(kernel.sizes)
    if len(shapes) != 1:
        return None
    (g, loc), = shapes
    if g is None or loc is None or len(g) != len(loc) or any(v <= 0 for v in loc):
        return None
    return math.prod(-(-a // b) for a, b in zip(g, loc))


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


def fewest_work_groups(kernel: KernelStats) -> int | None:
    """Where the runtime chose the local size: the fewest work-groups a launch can have, its
    work-items over the device's largest work-group (CL_DEVICE_MAX_WORK_GROUP_SIZE), when
    every sampled launch had the same global size; None where that is not known."""
    shapes = kernel.sample.shapes or set(kernel.sizes)
    largest = int(kernel.max_group or 0)
    if len(shapes) != 1 or largest <= 0:
        return None
    (g, loc), = shapes
    if g is None or loc is not None or not g or any(v <= 0 for v in g):
        return None
    return -(-math.prod(g) // largest)


def limits(kernel: KernelStats) -> dict:
    """What bounds the kernel's speedup with compute units, as far as the run shows it:
    work-groups per launch (or, where the runtime chose the local size, the fewest it can
    be), the work-group size against the device's largest, and the share of the compute
    units one launch can keep busy (None: not known)."""
    units = max(1, int(kernel.compute_units))
    groups = work_groups(kernel)
    shapes = kernel.sample.shapes or set(kernel.sizes)
    local = None
    if len(shapes) == 1:
        (_, loc), = shapes
        local = math.prod(loc) if loc else None
    return {
        "compute_units": units, "work_groups": groups,
        "fewest_work_groups": groups if groups is not None else fewest_work_groups(kernel),
        "work_group_size": local, "max_work_group_size": int(kernel.max_group) or None,
        "occupied_units": None if groups is None else round(min(groups, units) / units, 4),
        "groups_per_unit": None if groups is None else -(-groups // units),
    }


IDLE_UNOBSERVED = 0.5  # a non-CPU band's low end: this share of compute-unit time idle


def resident_groups(kernel: KernelStats) -> int:
    """Work-groups of the kernel's size one compute unit may run at once, as far as the
    device says: a unit can hold a work-group of the device's largest size
    (CL_DEVICE_MAX_WORK_GROUP_SIZE), so at least that many work-items, and OpenCL reports
    no more (a GPU's unit often holds several such groups).  1 when a size is unknown."""
    lim = limits(kernel)
    size, largest = lim["work_group_size"], lim["max_work_group_size"]
    if not size or not largest:
        return 1
    return max(1, int(largest) // int(size))


def launch_waves(groups: int, units: int, resident: int = 1) -> tuple[int, int]:
    """Waves of ``groups`` work-groups on ``units`` compute units: (fewest, most).  Most:
    one work-group per unit at a time (the work-group bound); fewest: ``resident`` per unit
    at once, none slowing the others (their work-items only wait on memory or latency)."""
    units, resident = max(1, units), max(1, resident)
    return -(-groups // (units * resident)), -(-groups // units)


def resident_low(groups: int, n: int, resident: int) -> float:
    """The lowest speedup at ``n`` units when each unit runs r work-groups at once, for any
    r in 1..``resident`` (the same r at 1 unit and at n): waves at 1 unit over waves at n.
    With every group resident on one unit (r >= groups) more units give nothing."""
    return min(launch_waves(groups, 1, r)[0] / launch_waves(groups, n, r)[0]
               for r in range(1, min(resident, groups) + 1))


def device_predict(kernel: KernelStats, target: int) -> TeamPrediction:
    """A non-CPU device's kernel at 1..target compute units (see the module's text)."""
    from .bound import TeamPrediction, prediction_counts, fastest_count

    # The table's columns (powers of two) among the counts, also past 64 counts.
    counts = sorted(set(prediction_counts(target)) | {1 << k for k in range(target.bit_length())
                                                      if 1 << k <= target})
    lim = limits(kernel)
    groups, units = lim["work_groups"], lim["compute_units"]

    def waves(n: int) -> float:
        return n if groups is None else groups / launch_waves(groups, n)[1]

    speedup = [waves(n) for n in counts]
    high = [float(n if groups is None else min(n, groups)) for n in counts]
    # Amdahl's form through S(units) = (1 - IDLE_UNOBSERVED) x units: idle time the device
    # does not report would grow the same way.
    serial = (1 / (1 - IDLE_UNOBSERVED) - 1) / (units - 1) if units > 1 else 0.0
    low = [min(s, 1 / (serial + (1 - serial) / n)) for s, n in zip(speedup, counts)]
    resident = resident_groups(kernel)
    if groups is not None and resident > 1:
        low = [min(lo, resident_low(groups, n, resident)) for lo, n in zip(low, counts)]
    fewest = lim["fewest_work_groups"] if groups is None else None
    if fewest is not None:
        # The runtime may have chosen the largest work-groups: as few as ``fewest`` then,
        # in waves of them; the band's low end allows for it.
        low = [min(lo, fewest / launch_waves(fewest, n)[1]) for lo, n in zip(low, counts)]
    parts = []
    if groups is None and fewest is None:
        parts.append("work-groups per launch not known (the runtime chose the local size)")
    elif groups is None:
        parts.append(f"at least {fewest} work-groups per launch (the runtime chose the local size, "
                     f"at most {lim['max_work_group_size']} work-items each)"
                     + (f": not the limit at {counts[-1]} compute units" if fewest >= counts[-1]
                        else f": the limit past {fewest} compute units if the runtime chose the largest"))
    else:
        parts.append(f"{groups} work-groups per launch on {units} compute units "
                     f"({100 * lim['occupied_units']:.0f}% occupied, {lim['groups_per_unit']} per unit)")
    if lim["work_group_size"] is not None:
        size = f"work-group size {lim['work_group_size']}"
        if lim["max_work_group_size"]:
            size += f" of at most {lim['max_work_group_size']}"
        parts.append(size)
    band = "; band: idle time inside launches is not measured on this device"
    if groups is not None and resident > 1:
        band += (f", nor how many work-groups a unit runs at once (1 to {resident}: "
                 "its largest work-group's work-items)")
    basis = "work-group bound on the device's compute units: " + ", ".join(parts) + band
    bottleneck = None
    if groups is not None and groups < counts[-1]:
        bottleneck = "work_groups"
    elif groups is None:
        bottleneck = "unobserved"
    return TeamPrediction(counts, speedup, low, high, fastest_count(counts, speedup), basis,
                          ["work_groups"] if groups is not None else [], bottleneck)


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
