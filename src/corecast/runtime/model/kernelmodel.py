"""Per-kernel predictions from the kernel's sample.

A kernel's sample becomes a region for the one-sample contention model
(``corecast.runtime.model.predictor.predict_region``), the compute units playing the threads:

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
  work-groups compute units can be busy: speedups are capped at G.

``memory_model(kernel, machine)`` adds node counts on a machine description for CPU
devices (``corecast run --target-machine``), through the same code as OpenMP regions.
"""
from __future__ import annotations

import math


TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .record import RegionSample

LOCK_WAITS = ("mutex", "rwlock")
IDLE_WAITS = ("condvar", "pthread_barrier", "semaphore")
SHOWN = ("imbalance",) + LOCK_WAITS + IDLE_WAITS + ("runqueue",)  # a kernel's stalls_s


def work_groups(kernel) -> int | None:
    """Work-groups per launch when every sampled launch had the same known shape."""
    shapes = kernel.sample.shapes or set(kernel.sizes)
    if len(shapes) != 1:
        return None
    (g, loc), = shapes
    if g is None or loc is None or len(g) != len(loc) or any(v <= 0 for v in loc):
        return None
    return math.prod(-(-a // b) for a, b in zip(g, loc))


def short_launches(kernel) -> bool:
    """The sampled launches are shorter than the snapshot interval on average: idle time
    inside them is not resolved (the workers' time is shared out by device time), so their
    stalls are a lower bound."""
    from .kernelstats import TICK_S

    s = kernel.sample
    return bool(s.launches) and s.device_ns / s.launches < TICK_S * 1e9


def sample_stalls(kernel) -> dict | None:
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


def stalls(kernel) -> dict | None:
    """``sample_stalls`` scaled from the sample to all completed launches."""
    part = sample_stalls(kernel)
    if part is None:
        return None
    scale = kernel.device_ns / kernel.sample.device_ns if kernel.sample.device_ns else 1.0
    return {c: v * scale for c, v in part.items()}


def region(kernel) -> RegionSample | None:
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


def predict(kernel, target: int, cores: int):
    """Contention-model prediction for ``kernel`` at 1..target compute units (a
    ``RegionPrediction``), or None without a sample."""
    reg = region(kernel)
    if reg is None:
        return None
    from .bound import preferred_count
    from .predictor import predict_region

    if kernel.device_type != "cpu":
        cores = max(cores, target, reg["threads"])  # no CPU run queue to model
    # The one predictor regions take; a kernel's sample has no team-size history.
    pred = predict_region(reg, target, cores, cores, {})
    if sample_stalls(kernel) is not None:
        pred.basis = ("contention model on the kernel's sample: idle compute units as "
                      "imbalance, the runtime's lock waits as queues")
    else:
        pred.basis = "contention model on the kernel's sample (no idle time measured: not a CPU device)"
    groups = work_groups(kernel)
    if groups is not None and groups < max(pred.threads):
        pred.speedup = [min(v, groups) for v in pred.speedup]
        pred.low = [min(v, groups) for v in pred.low]
        pred.high = [min(v, groups) for v in pred.high]
        pred.preferred = preferred_count(pred.threads, pred.speedup)
        pred.basis += f"; at most {groups} work-groups per launch"
        if pred.threads[-1] > groups:
            pred.bottleneck = "work_groups"
    return pred


_states: dict = {}  # machine path -> runtime.model.numa.NumaState (the file is read once)


def memory_model(kernel, machine: str | None = None):
    """Node counts on a machine description (``machine``: its path or preset) for a kernel on a CPU device, as the runtime predicts an
    OpenMP region's (``runtime.model.numa``): a ``NodeResult`` or None without a machine.

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
    return numa.predict_region(state, sample, None, None, lambda t: predict(kernel, t, t))
