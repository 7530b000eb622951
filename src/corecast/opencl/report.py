"""The OpenCL exit report: a table on stderr and, with ``CORECAST_OUTPUT``, JSON Lines.

Settings are the preload library's: ``CORECAST_TARGET`` (predict up to this many compute
units; default this machine's cores for a CPU device, the device's compute units for
others), ``CORECAST_WINDOW_MS`` (the sample), ``CORECAST_QUIET=1``
(no table), ``CORECAST_OUTPUT`` (append one ``kernel`` line per kernel: opened with
O_APPEND and written with one ``write`` per line, like the library's lines, so lines of
several processes never interleave).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time

from ..io import settings
from ..io.fileio import OutputError, append_lines, printable
from ..runtime import channel, devicewait
from ..model.runtime import kernelmodel, workgroups
from ..views import columns
from ..recording.kernelstats import TICK_S
from ..recording.record import SCHEMA
from .warn import warn

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..model.machine.calibration import Calibration
    from ..model.runtime.bound import TeamPrediction
    from ..model.runtime.numa import NumaRegionPrediction
    from ..recording.kernelstats import KernelStats
    from .profile import Profiler

NAME_WIDTH = 34
KERNEL_STALLS = 30  # the stalls cell's width in the kernel table


def _num(v: float) -> float:
    v = float(v)
    return float(f"{v:.6g}") if math.isfinite(v) else 0.0


def _ms(ns: float) -> str:
    s = ns * 1e-9
    if s >= 1:
        return f"{s:.3f}s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f}ms"
    return f"{s * 1e6:.0f}us"


def run_settings() -> tuple[int | None, int, bool, str]:
    """(the target asked for or None, this machine's cores, quiet, JSON Lines path)."""
    cores = os.cpu_count() or 1
    target = settings.integer(settings.TARGET, warn=channel.warn_setting, default=None)
    quiet = settings.integer(settings.QUIET, warn=channel.warn_setting) == 1
    output = settings.output_path(settings.text(settings.OUTPUT), os.environ, os.getpid())
    return target, cores, quiet, output


def _rank() -> dict:
    """``rank`` and ``ranks`` under an MPI launcher, as the preload library writes them."""
    rank, ranks = settings.rank_identity(os.environ)
    return {} if rank is None else {"rank": rank, "ranks": ranks}


def _shapes(kernel, index: int) -> list:
    seen = []
    for shape in kernel.sizes:
        v = list(shape[index]) if shape[index] is not None else None
        if v not in seen:
            seen.append(v)
    return seen


def kernel_line(prof: Profiler, kernel: KernelStats, pred: TeamPrediction | None,
                memory: NumaRegionPrediction | None) -> dict:
    """The JSON object of one kernel."""
    lost = kernelmodel.stalls(kernel)
    s = kernel.sample
    done = max(kernel.completed, 1)
    measured = ["device_time", "queue_delay", "enqueue_cost"]
    if s.cpu_measured and kernel.device_type == "cpu":
        measured.append("runtime_cpu")
    if prof.shim.available:
        measured.append("runtime_waits")
    line = {
        "event": "kernel", "schema": SCHEMA, "pid": prof.pid, **_rank(), "runtime": "opencl", "name": kernel.name,
        "object": kernel.device, "device": kernel.device, "platform": kernel.platform,
        "device_type": kernel.device_type,
        "calls": kernel.launches, "completed": kernel.completed, "failed": kernel.failed,
        "in_flight_at_exit": max(kernel.in_flight, 0),
        "threads": kernel.compute_units, "cores": os.cpu_count() or 1,
        "wall_s": _num(kernel.device_ns * 1e-9),
        "per_launch_s": _num(kernel.device_ns * 1e-9 / done),
        "queue_delay_s": _num(kernel.queue_ns * 1e-9),
        "submit_delay_s": _num(kernel.submit_ns * 1e-9),
        "enqueue_s": _num(kernel.enqueue_ns * 1e-9),
        "profiling_queue": "corecast's" if kernel.hidden else "the program's",
        "global_sizes": _shapes(kernel, 0), "local_sizes": _shapes(kernel, 1),
        "stalls_s": {c: _num(v) for c, v in lost.items()} if lost is not None else {},
        "sample": {
            "launches": s.launches, "device_s": _num(s.device_ns * 1e-9),
            "runtime_cpu_s": _num(s.cpu_ns * 1e-9) if s.cpu_measured else None,
            "runtime_threads_busy": s.threads,
            "runqueue_s": _num(s.runq_ns * 1e-9),
            "shapes": [[list(g) if g is not None else None, list(loc) if loc is not None else None]
                       for g, loc in sorted(s.shapes, key=repr)],
            "shorter_than_snapshots": kernelmodel.short_launches(kernel),
            "waits_s": {c: _num(v) for c, v in sorted(s.waits.items()) if v > 0},
            "acquisitions": {c: int(v) for c, v in sorted(s.acquisitions.items()) if v > 0},
            "contended": {c: int(v) for c, v in sorted(s.contended.items()) if v > 0},
            "buffer_bytes": round(s.buffer_bytes / s.launches) if s.buffer_bytes and s.launches else None,
        },
        "in_order_launches": kernel.in_order,
        "limits": workgroups.limits(kernel),
        "predicted": [], "fastest_threads": None, "basis": "", "future_bottleneck": None,
        "inputs": {"measured": measured, "fitted": []},
    }
    if pred is not None:
        line["predicted"] = [{"threads": int(n), "speedup": round(float(v), 4), "low": round(float(lo), 4),
                              "high": round(float(hi), 4)}
                             for n, v, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)]
        line["fastest_threads"] = int(pred.fastest)
        line["basis"] = pred.basis
        line["future_bottleneck"] = pred.bottleneck
        line["inputs"]["fitted"] = list(pred.fitted)
    if memory is not None:  # predicted_nodes, fastest_nodes, numa: as for OpenMP regions
        line.update(json.loads("{" + memory.json + "}"))
    return line


def _top(lost: dict | None, kernel) -> str:
    # the exit table's rule: whole categories, "…" where one was left out, never a name cut
    return columns.kernel_stall_cell(lost, kernel.compute_units, kernel.device_ns * 1e-9,
                                     kernel.device_type == "cpu", KERNEL_STALLS, kernelmodel.short_launches(kernel))


def timing(prof: Profiler, rows: list) -> dict:
    """Where the wall time since pyopencl was imported went: the devices' busy time, the
    launches' queue wait (summed over launches: launches enqueued together wait at the same
    time, so on a busy in-order queue the sum passes the wall), the host's enqueue cost and
    its time blocked in OpenCL calls."""
    wall = max((time.monotonic_ns() - prof.started_ns) * 1e-9, 1e-9)
    device = sum(k.device_ns for k, _, _ in rows) * 1e-9
    waited = getattr(prof, "host_wait_ns", 0) * 1e-9
    return {"wall_s": wall, "device_s": device, "queue_s": sum(k.queue_ns for k, _, _ in rows) * 1e-9,
            "launches": sum(k.launches for k, _, _ in rows),
            "enqueue_s": sum(k.enqueue_ns for k, _, _ in rows) * 1e-9, "host_wait_s": min(waited, wall),
            "host_s": max(wall - waited, 0.0)}


def _s(v: float) -> str:
    return _ms(v * 1e9)


def time_lines(prof: Profiler, rows: list) -> list[str]:
    """The time line, and a note when an in-order queue ran kernels one after another."""
    t = timing(prof, rows)
    out = [f"time: wall {_s(t['wall_s'])}: device busy {_s(t['device_s'])} "
           f"({100 * min(t['device_s'] / t['wall_s'], 1):.0f}% of wall), queue wait {_s(t['queue_s'])} "
           f"summed over {t['launches']} launches (queued to start; waits overlap, so the sum can pass "
           f"the wall), host {_s(t['host_s'])} outside OpenCL waits "
           f"(enqueue {_s(t['enqueue_s'])}) + {_s(t['host_wait_s'])} blocked in OpenCL calls"]
    ordered = [k for k, _, _ in rows if k.in_order and k.completed]
    for dev in sorted({k.device for k in ordered}):
        ks = [k for k in ordered if k.device == dev]
        queued = sum(k.queue_ns for k in ks) * 1e-9
        busy = sum(k.device_ns for k in ks) * 1e-9
        # Waiting at least a tenth of the device time: the launches queued behind each other.
        if len(ks) >= 2 and queued >= 0.1 * busy > 0:
            names = ", ".join(k.name for k in ks[:4]) + (", ..." if len(ks) > 4 else "")
            out.append(f"in-order queue: {len(ks)} kernels ({names}) ran one after another and their "
                       f"launches waited {_s(queued)} to start, summed; those that do not depend on each other "
                       "could overlap on an out-of-order queue or a queue each (corecast does not see "
                       "their arguments)")
    return out


def table(prof: Profiler, rows: list, target: int, cores: int) -> str:
    cols, n = [], 2
    while n < target and len(cols) < 4:
        cols.append(n)
        n *= 2
    cols.append(target)
    devices = sorted({(k.device + (f" ({k.platform})" if k.platform else ""), k.compute_units)
                      for k, _, _ in rows})
    elapsed = (time.monotonic_ns() - prof.started_ns) * 1e-9
    where = (f"device {devices[0][0]}, {devices[0][1]} compute units" if len(devices) == 1
             else f"{len(devices)} devices")
    out = [f"corecast: opencl, pid {prof.pid}, {elapsed:.3g}s since pyopencl was imported; {where}; "
           f"predicted speedup up to {target} compute units"]
    kinds = sorted({k.device_type for k, _, _ in rows if k.device_type != "cpu"})
    if kinds:
        out[0] += f" ({'/'.join(kinds)}: its compute units, not this host's {cores} cores)"
    head = (f"{'kernel':<{NAME_WIDTH}} {'launches':>8} {'device':>9} {'per launch':>10} {'queued':>9} "
            f"{'enqueue':>9}  {'stalls (share of CU time)':<{KERNEL_STALLS}}")
    head += ("".join(f" {'S@' + str(c):>6}" for c in cols) + f" {'band@' + str(target):>{columns.BAND}}"
             f" {columns.FASTEST_HEADING:>{columns.FASTEST}}  bottleneck")
    out.append(head)
    for kernel, pred, memory in rows:
        shape = next(iter(kernel.sizes), (None, None))
        label = kernel.name
        if shape[0] is not None:
            label += " [" + "x".join(map(str, shape[0])) + "]"
        if len(devices) > 1:
            label += f" ({kernel.device})"
        done = max(kernel.completed, 1)
        line = (f"{label[:NAME_WIDTH]:<{NAME_WIDTH}} {kernel.launches:>8} {_ms(kernel.device_ns):>9} "
                f"{_ms(kernel.device_ns / done):>10} {_ms(kernel.queue_ns / done):>9} "
                f"{_ms(kernel.enqueue_ns / max(kernel.launches, 1)):>9}  "
                f"{_top(kernelmodel.stalls(kernel), kernel):<{KERNEL_STALLS}}")
        for c in cols:
            v = None
            if pred is not None and c in pred.threads:
                v = pred.speedup[pred.threads.index(c)]
            line += f" {v:6.2f}" if v is not None else f" {'-':>6}"
        line += columns.band_cell(pred, target)
        if pred is not None:
            line += f" {pred.fastest:>{columns.FASTEST}}  {pred.bottleneck or '-'}"
        else:
            line += f" {'-':>{columns.FASTEST}}"
        out.append(line)
        if memory is not None:
            curve = "  ".join(f"{k}:{v:.2f}" for k, v in enumerate(memory.speedup, 1))
            out.append(f"    nodes: {curve}  fastest {memory.fastest} ({memory.basis})")
    out.append("device: total device time; per launch: device time, queued (queued to start) and "
               "enqueue (host time in the call), means per launch")
    out.extend(time_lines(prof, rows))
    window = prof.window_ns // 1_000_000
    bases = []
    for _, p, _ in rows:  # a GPU kernel's basis names its own limits: each kernel's own line
        if p is not None and p.basis not in bases:
            bases.append(p.basis)
    if len(bases) <= 1:
        out.append(f"speedups: {bases[0] if bases else 'none (no completed launch)'}; "
                   f"sample: each kernel's first {window} ms of device time")
    else:
        out.append(f"speedups (sample: each kernel's first {window} ms of device time):")
        for kernel, p, _ in rows:
            if p is not None:
                out.append(f"  {kernel.name}: {p.basis}")
    if prof.shim.available:
        out.append("measured: device time (profiling events), queue delay, enqueue cost, the runtime "
                   "threads' CPU time and pthread waits")
    else:
        out.append("measured: device time (profiling events), queue delay, enqueue cost, the runtime "
                   "threads' CPU time; not available: the runtime threads' pthread waits (run under "
                   "'corecast run' for them)")
    if any(kernelmodel.short_launches(k) for k, _, _ in rows):
        out.append(f"*: launches shorter than the {TICK_S * 1e3:g} ms snapshot interval: idle time "
                   "inside them is not resolved (a lower bound)")
    late = sum(max(k.in_flight, 0) for k, _, _ in rows)
    if late:
        out.append(f"corecast: opencl: {late} launches still in flight at exit (not counted)")
    if prof.failed_reason:
        out.append(f"corecast: opencl: measurement stopped early: {prof.failed_reason}")
    return "\n".join(printable(line) for line in out) + "\n"  # kernel and device names


def write_lines(path: str, lines: list[dict]) -> None:
    """Append one JSON line per object (ASCII: json.dumps escapes the rest)."""
    try:
        append_lines(path, [json.dumps(obj, allow_nan=False, separators=(",", ":")) + "\n" for obj in lines])
    except OutputError as exc:
        warn(f"{exc}; no JSON Lines")


def machine_calibration() -> Calibration | None:
    """This host's calibration as the CPU runtime finds it (``CORECAST_MACHINE_FILE``, else
    ``corecast calibrate``'s default file; one measured on another machine is not used):
    a CPU device's compute units are this host's cores.  (The preload library's model
    says once why a file it found was not used.)"""
    from ..model.machine.calibration import for_this_machine

    return for_this_machine(os.sysconf("SC_NPROCESSORS_ONLN"), os.environ.get(settings.MACHINE_FILE),
                            settings.calibration_path())[0]


def report(prof: Profiler, kernels: list[KernelStats]) -> None:
    asked, cores, quiet, output = run_settings()
    if quiet and not output:
        return
    kernels = sorted(kernels, key=lambda k: (-k.device_ns, k.name))
    rows = []
    memory_errors: set[str] = set()
    machine = os.environ.get(settings.TARGET_MACHINE)
    targets = []
    cal = machine_calibration() if any(k.device_type == "cpu" for k in kernels) else None
    for k in kernels:
        target = asked or kernelmodel.default_target(k, cores)
        targets.append(target)
        try:
            pred = kernelmodel.predict(k, target, cores, cal)
        except Exception as exc:
            warn(f"no prediction for {printable(k.name)}: {type(exc).__name__}: {exc}")
            pred = None
        try:
            memory = kernelmodel.memory_model(k, machine)
        except Exception as exc:
            # A bad machine file fails every kernel alike: one warning, not one per kernel.
            if str(exc) not in memory_errors:
                memory_errors.add(str(exc))
                warn(f"no memory model for {printable(k.name)}: {type(exc).__name__}: {exc}")
            memory = None
        rows.append((k, pred, memory))
    if not quiet:
        data = table(prof, rows, max(targets), cores)
        try:
            sys.stderr.flush()
        except Exception:
            pass
        channel.write(data)  # the program's original stderr, even if it reused fd 2
    if output:
        host = prof.device_wait()  # what the process line is predicted from (openclhost)
        lines = [kernel_line(prof, k, p, m) for k, p, m in rows]
        if host is not None:
            devicewait.register(lambda: host)  # the exit's process line reads this very one
            for line in lines:
                line["host"] = host.to_json()
        write_lines(output, lines)
