"""The self-contained HTML report of a sweep result (its PNG inlined as base64)."""
from __future__ import annotations

import base64
import html

from ...io.fileio import printable, write_file
from ...recording.values import json_number
from ...io.sweepresult import SweepResult
from .png import render_png

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1700px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
code { background: #f3f3f3; padding: 0.1em 0.3em; word-break: break-all; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.7em; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
tr.preferred td { background: #e7f5e7; font-weight: bold; }
dl.summary { display: grid; grid-template-columns: max-content auto; gap: 0.3em 1em; }
dl.summary dt { font-weight: bold; } dl.summary dd { margin: 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
.warn { color: #8a5a00; } .none { color: #777; }
"""


def html_report(result: dict, path: str) -> None:
    """Write one self-contained HTML report of the sweep to ``path``.  A sweep without
    successful runs still gets one (warnings and failed runs, no plot)."""
    write_file(path, render_html(result), "HTML report")


def _e(x) -> str:
    """Text for HTML: markup and control characters escaped (names come from outside)."""
    return html.escape(printable(str(x)), quote=True)


def _fmt(x, digits: int = 4) -> str:
    f = json_number(x)
    return "–" if f is None else f"{f:.{digits}g}"


def _count(x) -> str:
    f = json_number(x)
    return "–" if f is None else (str(int(f)) if f == int(f) else f"{f:g}")


def _table(headers: list[str], rows: list[list[str]], row_classes: list[str] | None = None,
           text_cols: tuple[int, ...] = ()) -> str:
    """Rows are already-escaped cell strings; headers are escaped here."""
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr></thead>", "<tbody>"]
    for i, row in enumerate(rows):
        cls = row_classes[i] if row_classes else ""
        cells = "".join(f'<td class="text">{c}</td>' if j in text_cols else f"<td>{c}</td>"
                        for j, c in enumerate(row))
        out.append(f'<tr class="{_e(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def render_html(result: "dict | SweepResult") -> str:
    """The HTML of ``html_report`` as text."""
    view = result if isinstance(result, SweepResult) else SweepResult.read(result, allow_empty=True)
    cats = view.stall_categories
    base = view.speedup_base_time()
    preferred = view.preferred
    unit = view.unit  # threads, or ranks for a launcher's sweep

    def cls(n):
        return "preferred" if preferred is not None and n == preferred else ""

    measured_rows = [
        [_e(_count(e["threads"])), _e(_fmt(e["time_s"])), _e(_fmt(e.get("spread_s"))),
         _e(_fmt(base / e["time_s"], 3))]
        + [_e(_fmt((e.get("stalls_s") or {}).get(c))) for c in cats]
        for e in view.measured
    ]
    if view.measured:
        measured_table = _table(
            [unit, "time (s)", "spread (s)", "speedup"] + [f"stall: {c} (s)" for c in cats],
            measured_rows, [cls(e["threads"]) for e in view.measured])
        image = base64.b64encode(render_png(view)).decode("ascii")
        alt = f"time, speedup and stall extrapolation against {unit}"
        figure = f'<p><img alt="{_e(alt)}" src="data:image/png;base64,{image}"></p>'
        note = (f'<p class="none">Speedups are relative to the base time the predictions imply '
                f'({_e(_fmt(base))} s); the preferred count\'s rows are highlighted.</p>')
    else:
        measured_table = '<p class="none">No successful runs.</p>'
        figure = '<p class="none">No successful runs: nothing to plot.</p>'
        note = ""

    stall_at = {c: {p["threads"]: p["value"] for p in pts} for c, pts in view.stall_predictions.items()}
    pred_cats = [c for c in cats if c in stall_at]
    if view.predictions:
        pred_rows = [
            [_e(_count(p["threads"])), _e(_fmt(p["value"])), _e(_fmt(p["low"])), _e(_fmt(p["high"])),
             _e(_fmt(p["speedup"], 3))]
            + [_e(_fmt(stall_at[c].get(p["threads"]))) for c in pred_cats]
            for p in view.predictions
        ]
        predicted_table = _table(
            [unit, "time (s)", "low (s)", "high (s)", "speedup"] + [f"stall: {c} (s)" for c in pred_cats],
            pred_rows, [cls(p["threads"]) for p in view.predictions])
    else:
        predicted_table = '<p class="none">No predictions.</p>'

    if view.regions:
        region_rows = []
        for r in view.regions:
            last = r["predictions"][-1] if r["predictions"] else None
            region_rows.append([_e(r["name"]),
                                _e(", ".join(f"{_count(m['threads'])}: {_fmt(m['time_s'])}" for m in r["measured"])),
                                _e(_fmt(last["value"])) if last else "–",
                                _e(_fmt(last["speedup"], 3)) if last else "–",
                                _e(_count(r["preferred_threads"])), _e(_count(r["fastest_threads"])),
                                _e(r["bottleneck"]) if r["bottleneck"] else "–"])
        horizon = view.predictions[-1]["threads"] if view.predictions else None
        regions = _table(["region", f"measured ({unit}: s)", f"predicted at {_count(horizon)} (s)" if horizon
                          else "predicted (s)", "speedup", "preferred", "fastest", "bottleneck"], region_rows,
                         text_cols=(0, 1, 6))
        regions = "<h2>Regions</h2>\n" + regions
    else:
        regions = ""
    if view.warnings:
        warnings = "<ul>" + "".join(f'<li class="warn">{_e(w)}</li>' for w in view.warnings) + "</ul>"
    else:
        warnings = '<p class="none">None.</p>'
    if view.failed:
        failed = _table([unit, "reason"],
                        [[_e(_count(f.get("threads"))), _e(f.get("reason", ""))] for f in view.failed],
                        text_cols=(1,))
    else:
        failed = '<p class="none">None.</p>'

    summary = [("command", f"<code>{_e(view.command)}</code>" if view.command else '<span class="none">–</span>')]
    if view.run_by:
        summary.append(("runtime", _e(view.run_by)))
    summary.append((f"preferred {unit}", _e(preferred) if preferred is not None else "–"))
    # As the terminal report and corecast predict name it (the same count where they agree).
    summary.append((f"fastest {unit}", _e(view.fastest) if view.fastest is not None else "–"))
    summary.append(("bottleneck", _e(view.bottleneck) if view.bottleneck else '<span class="none">none named</span>'))
    summary.append(("runs", _e(f"{len(view.measured)} measured, {len(view.failed)} failed")))
    dl = "\n".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in summary)

    title = "corecast sweep" + (f": {view.command}" if view.command else "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>corecast sweep report</h1>
<dl class="summary">
{dl}
</dl>
{figure}
<h2>Warnings</h2>
{warnings}
<h2>Measured</h2>
{measured_table}
<h2>Predicted</h2>
{predicted_table}
{regions}
<h2>Failed runs</h2>
{failed}
{note}
</body>
</html>
"""
