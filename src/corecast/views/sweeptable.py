"""The terminal report of a ``corecast sweep`` result: measured counts, predicted counts,
preferred count, future bottleneck, regions, placement, failed counts and warnings."""
from __future__ import annotations

from typing import Sequence

from ..io.fileio import printable
from ..recording.record import CLOCK_RESOLUTION_S
from .report import _align, _num, fastest_line, speedup_cell
from ..io.sweepresult import MIN_REGION_SHARE
from ..model.tuning.placement import LAUNCHER_PLACEMENT


def stalls_summed_over(unit: str) -> str:
    """What a sweep's stall times are summed over: its ranks, or threads (an OpenCL run's
    waits are its host threads', whatever its count)."""
    return "ranks" if unit == "ranks" else "threads"


def format_sweep(result: dict, max_rows: int = 24) -> str:
    """The terminal report: measured counts, predicted counts, preferred count,
    future bottleneck, failed counts and warnings."""
    unit = result.get("count", "threads")  # "ranks" for MPI rank sweeps
    launcher = " ".join(result.get("launcher") or [])
    lines = [f"corecast sweep ({'mpi: ' + launcher if launcher else result['runtime']}): "
             f"{' '.join(result['command'])}", ""]
    if result["measured"]:
        header = [unit, "time (s)", "spread (s)", f"top stalls (s, summed over {stalls_summed_over(unit)})"]
        rows = []
        for m in result["measured"]:
            top = sorted(m["stalls_s"].items(), key=lambda kv: -kv[1])[:3]
            rows.append([str(m["threads"]), _seconds(m["time_s"]), _seconds(m["spread_s"]),
                         ", ".join(f"{k} {_seconds(v)}" for k, v in top if v >= CLOCK_RESOLUTION_S)])
        lines += ["measured:"] + _align([header] + rows) + [""]
    preds = result["predictions"]
    if preds:
        measured = {m["threads"]: m["time_s"] for m in result["measured"]}
        # speedups are relative to the smallest measured count, as predict's
        base_time = measured[min(measured)] if measured else None
        pref = result["preferred_threads"]
        # Results written before the sweep named the fastest count have none.
        fastest = result.get("fastest_threads")
        shown = preds
        if len(preds) > max_rows:
            last = preds[-1]["threads"]
            shown = [p for p in preds if p["threads"] in measured or p["threads"] in (pref, fastest, last, 1)
                     or (p["threads"] & (p["threads"] - 1)) == 0]
        stall_at = {k: {r["threads"]: r["value"] for r in rows}
                    for k, rows in result["stall_predictions"].items()}
        bottleneck = result["bottleneck"]
        header = [unit, "time (s)", "band low..high", "speedup"]
        if bottleneck:
            header.append(f"{bottleneck} (s)")
        header.append("")
        rows, prev = [], None
        for p in shown:
            n = p["threads"]
            if prev is not None and n != prev + 1:
                rows.append(["..."] + [""] * (len(header) - 1))
            prev = n
            row = [str(n), _seconds(p["value"]), f"{_seconds(p['low'])}..{_seconds(p['high'])}",
                   speedup_cell(p['speedup'])]
            if bottleneck:
                row.append(_seconds(stall_at[bottleneck][n]))
            # The model's speedup can differ from what was measured there: show both, so a
            # measured count is never read as slower than it ran.
            seen = f"measured {base_time / measured[n]:.2f}x" if n in measured and base_time else "measured"
            row.append(", ".join(label for label, hit in ((seen, n in measured), ("preferred", n == pref),
                                                          ("fastest", n == fastest != pref)) if hit))
            rows.append(row)
        lines += ["predicted:"] + _align([header] + rows) + [""]
        best = next(p for p in preds if p["threads"] == pref)
        lines.append(f"preferred count: {pref} (predicted time {_seconds(best['value'])} s, "
                     f"speedup {speedup_cell(best['speedup'])})")
        if fastest is not None and fastest != pref:
            if result.get("fastest_measured") and fastest in measured and base_time:
                value = f"time {_seconds(measured[fastest])} s, speedup {speedup_cell(base_time / measured[fastest])}"
                lines.append(fastest_line(fastest, True, value))
            else:
                top = next(p for p in preds if p["threads"] == fastest)
                lines.append(fastest_line(fastest, False, f"time {_seconds(top['value'])} s, "
                                                          f"speedup {speedup_cell(top['speedup'])}"))
        if bottleneck:
            horizon = preds[-1]["threads"]
            ranked = sorted(((rows[-1]["value"], k) for k, rows in result["stall_predictions"].items()),
                            reverse=True)[:3]
            lines.append(f"future bottleneck at {horizon} {unit}: {bottleneck} (predicted "
                         + ", ".join(f"{k} {_seconds(v)} s" for v, k in ranked) + ")")
        else:
            lines.append("future bottleneck: none (no stall category is predicted to grow)")
    lines += _region_lines(result)
    place = result.get("placement")
    if place and place["policy"] == LAUNCHER_PLACEMENT:
        lines.append(f"placement {LAUNCHER_PLACEMENT}: the launcher placed the ranks "
                     "(corecast confined none to CPUs)")
    elif place:
        lines.append(f"placement {place['policy']}" + (" (OMP_PLACES, OMP_PROC_BIND=close)" if place["omp_places"] else "")
                     + ": " + "; ".join(f"{n}: {_cpulist(c)}" for n, c in place["cpus"].items()))
    for f in result["failed"]:
        lines.append(f"failed at {f['threads']} {unit[:-1]}{'s' if f['threads'] != 1 else ''}: {f['reason']}")
    if result.get("basis"):
        lines.append(f"model: {result['basis']}")
    lines += [f"warning: {w}" for w in result["warnings"]]
    return "\n".join(printable(line) for line in lines) + "\n"  # command, categories, stderr


def _seconds(x: float) -> str:
    """A time in seconds; 0 below the clock's resolution (a fit's rounding, never measured)."""
    return "0" if abs(x) < CLOCK_RESOLUTION_S else _num(x)


def _cpulist(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's cpulist notation)."""
    parts, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            parts.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(parts)


def _region_lines(result: dict) -> list[str]:
    """One row per extrapolated region: its share, measured and predicted time, preferred
    count and future bottleneck."""
    regions = result.get("regions") or []
    if not regions:
        return []
    horizon = result["predictions"][-1]["threads"] if result["predictions"] else None
    header = ["region", "share", "measured (s) at " + ",".join(str(m["threads"]) for m in result["measured"]),
              f"predicted at {horizon} (s)" if horizon else "predicted (s)", "speedup", "preferred", "fastest",
              "bottleneck"]
    rows = []
    for r in regions:
        at = {m["threads"]: m["time_s"] for m in r["measured"]}
        last = r["predictions"][-1] if r["predictions"] else None
        rows.append([r["name"], f"{r['share']:.0%}",
                     " ".join(_seconds(at[m["threads"]]) if m["threads"] in at else "-" for m in result["measured"]),
                     _seconds(last["value"]) if last else "-", speedup_cell(last['speedup']) if last else "-",
                     str(r["preferred_threads"] or "-"), str(r.get("fastest_threads") or "-"),
                     r["bottleneck"] or ("none" if last else "-")])  # none predicted, or no prediction
    lines = ["", f"regions taking at least {MIN_REGION_SHARE:.0%} of the run (own time, summed over processes):"]
    lines += _align([header + [""] for header in [header]] + [row + [""] for row in rows])
    lines += [f"warning: region {r['name']}: {w}" for r in regions for w in r["warnings"]]
    return lines
