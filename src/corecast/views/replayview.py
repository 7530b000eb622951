"""What ``corecast replay`` prints: the exit report's table (``native/report.c``
write_table) and its JSON.  Views only: the predictions come made."""
from __future__ import annotations

from ..errors import article
from ..io.fileio import printable
from ..tools.replay import ReplayedProcess
from . import columns as col

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..recording.record import RegionSample

def _stalls(region: RegionSample) -> str:
    total = region["threads"] * region["wall_s"] if region["threads"] > 0 else region["wall_s"]
    # As the library's table: no share of the thread time passes 100% (native/report.c).
    total = max(total, float(region.get("busy_s", 0.0)), sum(region["stalls_s"].values()))
    parts = sorted(((v, c) for c, v in region["stalls_s"].items() if v > 0), reverse=True)[:col.STALLS_SHOWN]
    # the share first: 100 x a huge stall would overflow to inf before the division
    shown = [f"{c} {100 * (v / total):.0f}%" for v, c in parts if total > 0 and v / total >= col.STALL_MIN_SHARE]
    return col.stall_cell(shown)


def _cell(text: str, width: int) -> str:
    """``text`` in ``width`` cells, as the library's table has it: cut short, its last
    cell says so."""
    return f"{text:<{width}}" if len(text) <= width else text[: width - 1] + "\u2026"


def _label(region: RegionSample) -> str:
    if region["name"] == "process":
        return f"process ({region['runtime']})"
    return f"{region['name']} ({region['object']})"


def _seconds(wall: float) -> str:
    """The time column less its unit: milliseconds as the library's table shows them, and
    3 significant digits where those would not fit (a record's 1e308 is 300 digits)."""
    width = col.TIME - 1
    return f"{wall:{width}.3f}" if abs(wall) < 1e4 else f"{wall:{width}.3g}"


def _row(label: str, calls: int, threads: int, wall: float, stalls: str, pred, cols: list[int],
         width: int = col.LABEL, target: int | None = None) -> str:
    text = printable(label)
    line = (f"{_cell(text, width)} {calls:{col.CALLS}d} {threads:{col.THREADS}d} {_seconds(wall)}s  "
            f"{_cell(stalls, col.STALLS)}")
    at = dict(zip(pred.threads, pred.speedup)) if pred is not None else {}
    line += "".join(f" {col.speedup_cell(at[c]):>{col.SPEEDUP}}" if c in at else f" {'-':>{col.SPEEDUP}}"
                    for c in cols)
    line += col.band_cell(pred, cols[-1] if target is None else target)
    if pred is None:
        return line + f" {'-':>{col.FASTEST}}"
    fastest = col.NO_EVIDENCE_CELL if pred.fastest is None else pred.fastest
    return line + f" {fastest:>{col.FASTEST}}  {printable(pred.bottleneck or '-')}"


def _counted(rep: ReplayedProcess) -> str:
    """The target in what it counts: threads, an OpenCL kernel's compute units, or both."""
    n, u = rep.target, rep.kernel_target or rep.target
    threads, units = f"{n} thread{'' if n == 1 else 's'}", f"{u} compute unit{'' if u == 1 else 's'}"
    if not rep.kernels:
        return threads
    kinds = sorted({k.device_type for k, _ in rep.kernels if k.device_type != "cpu"})
    if u != n and kinds:  # the run's kernel table's words
        units += f" for its kernels: {'/'.join(kinds)}, its compute units, not the host's {n} cores"
    elif rep.recorded.regions:
        units += " for its kernels"
    return f"{threads} ({units})" if rep.recorded.regions else units


def table(rep: ReplayedProcess, machine: str | None = None) -> str:
    """The exit report's table for one replayed process (``machine``: the calibration file
    given to replay, named in the header; else the one the run recorded, if any)."""
    proc = rep.recorded
    cols = col.speedup_columns(rep.target)
    cores = f"{proc.cores} cores" if proc.cores else "cores not recorded"
    # 0: the summary line, which records it, is missing (a run stopped before writing it)
    elapsed = f"{proc.elapsed_s:.3g}s" if proc.elapsed_s > 0 else "time not recorded"
    if serial_run(rep) and all(r["threads"] <= 1 for r in proc.regions):  # the library's one line, no table
        return f"corecast replay: pid {proc.pid}, {elapsed}: {_serial_line(proc)}\n"
    out = [f"corecast replay: pid {proc.pid}, {cores}, {elapsed}; predicted speedup "
           f"up to {_counted(rep)} on {article(rep.predicted_cores)} {rep.predicted_cores}-core machine "
           f"({'target' if rep.target_given else 'recorded target'})"
           + (f", calibrated ({printable(machine)})" if machine else ", calibrated (recorded)"
              if getattr(proc, "calibration", None) else "")]
    out += [f"warning: {printable(w)}" for w in rep.warnings]
    shown = [(r, p) for r, p in zip(proc.regions, rep.predictions) if r["calls"] > 0 and r["wall_s"] > 0]
    width = col.label_width([printable(_label(r)) for r, _ in shown]
                            + [printable(f"{k.name} ({k.device})") for k, _ in rep.kernels])
    units = rep.kernel_target or rep.target
    kernel_block = bool(rep.kernels) and units != rep.target
    if shown or not kernel_block:  # a recording of kernels alone: their heading only
        out.append(col.heading(rep.target, width))
    for region, pred in shown:
        out.append(_row(_label(region), region["calls"], region["threads"], region["wall_s"],
                        _stalls(region), pred, cols, width))
    if kernel_block:  # the kernels' own columns, to the device's units
        cols = col.speedup_columns(units)
        out.append("kernel" + col.heading(units, width)[len("kernel"):] if shown else col.heading(units, width))
    for i, (k, pred) in enumerate(rep.kernels):
        lost = rep.kernel_stalls[i] if i < len(rep.kernel_stalls) else None
        stalls = col.kernel_stall_cell(lost, k.compute_units, k.device_ns * 1e-9, k.device_type == "cpu", col.STALLS)
        out.append(_row(f"{k.name} ({k.device})", k.launches, k.compute_units, k.device_ns * 1e-9,
                        stalls, pred, cols, width, units))
    out += [col.NO_EVIDENCE_LINE % printable(r["name"] if r["name"] != "process" else "the process")
            for r, p in shown if p is not None and p.fastest is None]
    basis = rep.predictions[0].basis if rep.predictions else (rep.kernels[0][1].basis if rep.kernels
                                                               and rep.kernels[0][1] else "")
    out.append(f"speedups: {printable(basis or 'predicted')}")
    # A kernel's basis names what limits it (a GPU's work-groups against its units), as the
    # run's kernel table did: each one the line above does not already say.
    out += [f"  {printable(k.name)}: {printable(p.basis)}" for k, p in rep.kernels
            if p is not None and p.basis != basis]
    if getattr(proc, "children_cpu_s", 0.0) > 0 and not serial_run(rep):  # as the library's report
        out.append("corecast: " + col.CHILDREN_LINE % proc.children_cpu_s)
    if serial_run(rep):  # a serial image exec'd after a parallel one (the same pid): its line too
        out.append(f"corecast: {_serial_line(proc)}")
    out.append(f"replayed: schema {proc.schema} records with the current model")
    return "\n".join(out) + "\n"


def _serial_line(proc) -> str:
    """The library's serial-run line: with its children's CPU time where it waited for any."""
    children = getattr(proc, "children_cpu_s", 0.0)
    return col.SERIAL_RUN_CHILDREN % children if children > 0 else col.SERIAL_RUN


def serial_run(rep: ReplayedProcess) -> bool:
    """The process never ran more than one thread and no parallel region."""
    proc = rep.process
    if rep.recorded.serial_run:  # an image exec'd after a parallel one shares its pid
        return not rep.kernels and all(r["name"] == "process" for r in rep.recorded.regions)
    return (proc is not None and proc[0]["threads"] <= 1
                                       and len(rep.recorded.regions) == 1 and not rep.kernels)


def _curve(pred) -> list[dict]:
    return [{"threads": int(n), "speedup": round(float(s), 4), "low": round(float(lo), 4),
             "high": round(float(hi), 4)}
            for n, s, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)]


def _entry(name: str, obj: str, runtime: str, calls: int, threads: int, wall: float, pred) -> dict:
    return {"name": name, "object": obj, "runtime": runtime, "calls": calls, "threads": threads,
            "wall_s": wall, "predicted": _curve(pred) if pred is not None else [],
            "fastest_threads": pred.fastest if pred is not None else None,
            "basis": pred.basis if pred is not None else "",
            "future_bottleneck": pred.bottleneck if pred is not None else None,
            "fitted": list(pred.fitted) if pred is not None else []}


def to_dict(reps: list[ReplayedProcess]) -> dict:
    """``{"processes": [...]}``: per process its own prediction and its regions'."""
    procs = []
    for rep in reps:
        proc = rep.process
        regions = [_entry(r["name"], r["object"], r["runtime"], r["calls"], r["threads"], r["wall_s"], p)
                   for r, p in zip(rep.recorded.regions, rep.predictions) if r["name"] != "process"]
        regions += [_entry(k.name, k.device, "opencl", k.launches, k.compute_units, k.device_ns * 1e-9, p)
                    for k, p in rep.kernels]
        entry = {"pid": rep.recorded.pid, "schema": rep.recorded.schema, "target": rep.target,
                 "threads": proc[0]["threads"] if proc else None,
                 "wall_s": proc[0]["wall_s"] if proc else None,
                 "predicted": _curve(proc[1]) if proc else [],
                 "fastest_threads": proc[1].fastest if proc else None,
                 "basis": proc[1].basis if proc else "",
                 "future_bottleneck": proc[1].bottleneck if proc else None,
                 "serial_run": serial_run(rep),
                 "children_cpu_s": getattr(rep.recorded, "children_cpu_s", 0.0),  # the run's line says it
                 "warnings": list(rep.warnings),
                 "regions": regions}
        procs.append(entry)
    return {"processes": procs}

