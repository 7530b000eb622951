"""An OpenCL host's process prediction at exit, from what the OpenCL layer saw of it
(``recording.kernelstats.HostSeen``): the threads the interpreter did not start (the
OpenCL runtime's and driver's, a BLAS pool's) are not the program's parallelism.  A host
that waited on the device for most of its wall time is "waiting on the device" (on a CPU
device, whose compute units are the machine's cores, "the CPU device"); a host whose own
code ran on one thread is a "serial host"; one with threads of its own is predicted again
from them alone.  (The kernels themselves: ``kernelmodel``.)"""
from __future__ import annotations

from .evidence import with_note

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable

    from ...recording.kernelstats import HostSeen
    from ...recording.record import ProcessSample, RegionSample
    from .bound import TeamPrediction

DEVICE_BOUND = 0.5  # share of the wall time waiting on the device that makes a host device-bound


def host_predictions(regions: list[RegionSample], preds: list[TeamPrediction], seen: HostSeen,
                     predict: Callable[[RegionSample], TeamPrediction]) -> list[TeamPrediction]:
    """``preds`` (one per region of the exit's sample) with the process's replaced as the
    module says (``predict``: the process's predictor for this sample).  A process whose
    regions were composed keeps its prediction but for a host waiting on the device."""
    out = list(preds)
    composed = any(r["name"] != "process" and not r.get("nested") for r in regions)
    for i, region in enumerate(regions):
        if region["name"] != "process":
            continue
        share = device_wait_share(float(region["wall_s"]), seen.device_s, seen.wait_s)
        if share >= DEVICE_BOUND:
            out[i] = device_bound_process(preds[i], share, seen.cpu_device_s > seen.device_s)
            out[i].basis = with_note(out[i].basis, runtime_note(seen))
        elif seen.runtime_threads and not composed:
            own = program_process(region, seen)
            if serial_host(own, seen):
                out[i] = serial_host_process(preds[i], share, seen)
            else:
                out[i] = predict(own)
                out[i].basis = with_note(out[i].basis, runtime_note(seen))
    return out


def device_wait_share(wall_s: float, device_s: float, host_wait_s: float) -> float:
    """Share of ``wall_s`` the host spent on the device: the larger of the device's busy
    time (an in-order queue's kernels do not overlap; capped at the wall time) and the
    program's time blocked in OpenCL calls."""
    if wall_s <= 0:
        return 0.0
    return min(max(device_s, host_wait_s, 0.0) / wall_s, 1.0)


def device_bound_process(pred: TeamPrediction, share: float, cpu_device: bool = False) -> TeamPrediction:
    """The process prediction of a host that waits on the device for ``share`` of its
    wall time (at least ``DEVICE_BOUND``): its threads are the driver's, so more host
    threads give nothing (speedup 1); the band's high end lets the rest of the host's time
    shrink as Amdahl's law would.  On a CPU device (``cpu_device``: pocl's) the kernels do
    run on this machine's cores, as its compute units, so the line says that the kernel
    table predicts them rather than that more CPU threads do not help."""
    from .bound import TeamPrediction

    counts = list(pred.threads)
    rest = 1.0 - share
    high = [max(1.0, 1 / (share + rest / n)) for n in counts]
    pct = f"{100 * share:.0f}%"
    why = ("the kernels scale with its compute units" if cpu_device
           else "more CPU threads do not shorten it")
    return TeamPrediction(counts, [1.0] * len(counts), [1.0] * len(counts), high, 1,
                          f"waiting on the {'CPU ' if cpu_device else ''}device ({pct} of wall): {why}",
                          [], f"waiting on device {pct} of wall")


def runtime_note(seen: HostSeen) -> str:
    """The basis's note for an OpenCL host's runtime threads (``seen``: what the OpenCL
    layer saw of its host); "" without any."""
    if not seen.runtime_threads:
        return ""
    return f"; {seen.runtime_threads} runtime threads ({seen.runtime_cpu_s:.2f}s CPU) not the program's"


def program_process(region: ProcessSample, seen: HostSeen) -> ProcessSample:
    """An OpenCL host's process sample with the runtime's threads left out: the threads
    the interpreter did not start (the OpenCL runtime's and driver's, a BLAS library's
    pool) are not the program's parallelism, so their count, CPU time and waits leave its
    record.  ``team_threads`` becomes the library's team rule (``record.team_of``) over the
    program's own threads."""
    from ...recording.record import team_of

    own = dict(region)
    n = max(1, int(region["threads"]) - seen.runtime_threads)
    cpu = max(float(region.get("cpu_s", 0.0)) - seen.runtime_cpu_s, 0.0)
    own.update(threads=n, requested=n, cpu_s=cpu,
               busy_s=max(float(region.get("busy_s", 0.0)) - seen.runtime_cpu_s, 0.0),
               team_threads=team_of(seen.program_cpu_s) if seen.program_cpu_s else 0)
    for key, less in (("stalls_s", seen.runtime_waits_s), ("acquisitions", seen.runtime_acquisitions),
                      ("contended", seen.runtime_contended)):
        table = dict(region.get(key) or {})
        for cat, v in less.items():
            if cat in table and cat != "runqueue":
                table[cat] = max(table[cat] - v, 0)
        own[key] = table
    return own


def serial_host(own: ProcessSample, seen: HostSeen) -> bool:
    """Whether an OpenCL host's own code ran on one thread: no team among the interpreter's
    threads (``record.team_of``: the second busiest idle) and the program's CPU time hardly
    more than its busiest thread's (threads that ended before the exit would show there)."""
    from ...recording.record import TEAM_SHARE, team_of

    cpus = seen.program_cpu_s
    if not cpus or team_of(cpus) > 1:
        return False
    return float(own.get("cpu_s", 0.0)) <= max(cpus) * (1 + TEAM_SHARE)


def serial_host_process(pred: TeamPrediction, share: float, seen: HostSeen) -> TeamPrediction:
    """The process prediction of an OpenCL host whose code ran on one thread and that waited
    on the device for ``share`` of its wall time (below ``DEVICE_BOUND``): more CPU threads
    run none of its code, so no count gains (band and all)."""
    from .bound import TeamPrediction

    counts = list(pred.threads)
    ones = [1.0] * len(counts)
    where = f" (on the device {100 * share:.0f}% of wall)" if share >= 0.005 else ""
    return TeamPrediction(counts, ones, list(ones), list(ones), 1,
                          f"one program thread{where}" + runtime_note(seen), [], "serial host")
