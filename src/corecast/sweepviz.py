"""Views of a ``corecast sweep`` result: a PNG, a self-contained HTML report, Extra-P input.

The result object (what ``corecast sweep --json-out`` writes)::

    {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}],
     "predictions": [{"threads": n, "value": t, "low": l, "high": h, "speedup": s}],
     "stall_predictions": {category: [{"threads": n, "value": s}]},
     "preferred_threads": k, "bottleneck": category or null, "command": [...],
     "runtime": "openmp" | "pthreads" | "opencl", "warnings": [...],
     "failed": [{"threads": n, "reason": "..."}],
     "regions": [{"name", "measured", "predictions", "bottleneck", ...}]}

Only "measured" is required (checked by ``sweep.result.SweepResult.read``); every other key may be
missing or empty and the views leave out what it would have shown.

- ``plot_sweep(result, path)``: PNG with two or three panels side by side (and below them
  one facet per region of ``regions``: its own time measured and predicted, its
  bottleneck in the title): time (measured
  with its spread, predicted with its band), speedup (measured, predicted with band, the
  ideal line) and, when there are stall data, the predicted stall time per category as a
  stacked area with the measured stalls as points stacked the same way.  The preferred
  count is a dashed line in every panel; the bottleneck is named in the title and legend.
- ``html_report(result, path)``: one HTML file (the PNG inlined as base64, tables of the
  measured and predicted values, bottleneck, warnings, failed runs); no external assets.
- ``export_extrap(result, path)``: Extra-P's JSON Lines input (see ``extrap_records``).

All three write to a temporary file in the target directory and rename it into place,
so a failure leaves nothing at ``path``.  Bad results raise ``InputError`` (one line).
"""
from __future__ import annotations

import base64
import html
import io
import json
import math

import numpy as np
# The object-oriented API (Figure + Agg canvas) never touches pyplot's global state or
# needs a display, so it is safe inside other programs and headless CI.
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .fileio import json_number, printable, write_file
from .sweep.result import SOURCE, SweepResult, check_sweep, regions_of

# Extra-P export: one parameter, the thread count; the whole program is one callpath.
EXTRAP_PARAMETER = "p"
EXTRAP_CALLPATH = "main"
EXTRAP_REGION_CALLPATH = "main->{}"  # a region's own time, as a child of main
EXTRAP_TIME_METRIC = "time"
EXTRAP_STALL_METRIC = "stall:{}"  # one metric per stall category, on the same callpath

LOG_X_RATIO = 8  # use a log2 thread axis once the counts span this factor or more
MAX_REGION_FACETS = 12  # regions drawn in the PNG, largest share first


# ---------------------------------------------------------------- writing files


# ---------------------------------------------------------------- PNG


def plot_sweep(result: dict, path: str) -> None:
    """Write the sweep's PNG (time, speedup, stall extrapolation) to ``path``."""
    write_file(path, render_png(result), "plot")


def render_png(result: "dict | SweepResult") -> bytes:
    """The PNG of ``plot_sweep`` as bytes."""
    view = result if isinstance(result, SweepResult) else SweepResult.read(result)
    has_stalls = bool(view.stall_categories)
    panels = 3 if has_stalls else 2
    regions = [r for r in view.regions if r["measured"]]
    facets = min(len(regions), MAX_REGION_FACETS)
    rows = 1 + math.ceil(facets / panels)
    fig = Figure(figsize=(5.4 * panels, 4.9 * rows), dpi=100, constrained_layout=True)
    FigureCanvasAgg(fig)
    grid = fig.subplots(rows, panels, squeeze=False)
    axes = grid[0]
    counts = view.all_counts()
    log_x = max(counts) / min(counts) >= LOG_X_RATIO

    cells = [ax for row in grid[1:] for ax in row]
    for ax, region in zip(cells, regions[:facets]):
        _region_panel(ax, region)
        _thread_axis(ax, counts, log_x)
        ax.grid(True, alpha=0.3)
    for ax in cells[facets:]:
        ax.set_visible(False)
    _time_panel(axes[0], view)
    _speedup_panel(axes[1], view)
    if has_stalls:
        _stall_panel(axes[2], view)
    for ax in axes:
        _thread_axis(ax, counts, log_x, view.unit)
        if view.preferred is not None:
            ax.axvline(view.preferred, color="C2", linestyle="--", linewidth=1.2,
                       label=f"preferred: {view.preferred}")
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    axes[1].legend(loc="best", fontsize="small")
    if has_stalls:
        handles, labels = axes[2].get_legend_handles_labels()
        axes[2].legend(handles[::-1], labels[::-1], loc="upper left", fontsize="small")

    title = "corecast sweep"
    if view.command:
        cmd = view.command if len(view.command) <= 90 else view.command[:87] + "..."
        title += f": {_plain(cmd)}"
    if view.runtime:
        title += f" ({_plain(view.runtime)})"
    summary = []
    if view.preferred is not None:
        summary.append(f"preferred: {view.preferred} {view.unit}")
    if view.bottleneck:
        summary.append(f"bottleneck: {_plain(view.bottleneck)}")
    if view.failed:
        summary.append(f"{len(view.failed)} failed run{'s' if len(view.failed) != 1 else ''}")
    if summary:
        title += "\n" + "   ·   ".join(summary)
    fig.suptitle(title, fontsize="medium")

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _plain(text: str) -> str:
    """Text shown as written: a pair of ``$`` would start matplotlib's mathtext (and a
    command like ``sh -c 'echo $A$B'`` could fail to render); control characters and
    undecodable bytes escaped (the font renderer refuses the latter)."""
    return printable(text).replace("$", r"\$")


def _thread_axis(ax, counts: list[float], log_x: bool, unit: str = "threads") -> None:
    lo, hi = min(counts), max(counts)
    if log_x:
        ax.set_xscale("log", base=2)
        ticks = [2.0 ** k for k in range(int(math.floor(math.log2(lo))), int(math.ceil(math.log2(hi))) + 1)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlim(lo / 1.15, hi * 1.15)
    else:
        ax.set_xlim(0, hi * 1.05)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.set_xlabel(unit)


def _failed_marks(ax, view: SweepResult) -> None:
    ns = [n for n in (json_number(f.get("threads")) for f in view.failed) if n is not None and n >= 1]
    if ns:
        ax.plot(ns, [0] * len(ns), "x", color="C3", markersize=9, mew=2, clip_on=False,
                zorder=5, label="failed run")


def _time_panel(ax, view: SweepResult) -> None:
    preds = [p for p in view.predictions if p["value"] is not None]
    if preds:
        n = [p["threads"] for p in preds]
        banded = [p for p in preds if p["low"] is not None and p["high"] is not None]
        if banded:
            ax.fill_between([p["threads"] for p in banded], [p["low"] for p in banded],
                            [p["high"] for p in banded], color="C0", alpha=0.2, label="band")
        ax.plot(n, [p["value"] for p in preds], color="C0", label="predicted")
    n = [e["threads"] for e in view.measured]
    t = [e["time_s"] for e in view.measured]
    d = [json_number(e.get("spread_s")) or 0.0 for e in view.measured]
    ax.errorbar(n, t, yerr=d if any(d) else None, fmt="o", color="k", capsize=3, label="measured", zorder=4)
    _failed_marks(ax, view)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("time (s, lower is better)")
    ax.set_title("time")


def _region_panel(ax, region: dict) -> None:
    """One region's own time: measured (with spread), predicted with its band, and its
    bottleneck in the title."""
    preds = region["predictions"]
    if preds:
        banded = [p for p in preds if p["low"] is not None and p["high"] is not None]
        if banded:
            ax.fill_between([p["threads"] for p in banded], [p["low"] for p in banded],
                            [p["high"] for p in banded], color="C1", alpha=0.2, label="band")
        ax.plot([p["threads"] for p in preds], [p["value"] for p in preds], color="C1", label="predicted")
    m = region["measured"]
    d = [json_number(e.get("spread_s")) or 0.0 for e in m]
    ax.errorbar([e["threads"] for e in m], [e["time_s"] for e in m], yerr=d if any(d) else None, fmt="o",
                color="k", capsize=3, label="measured", zorder=4)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("region time (s)")
    name = region["name"] if len(region["name"]) <= 40 else region["name"][:37] + "..."
    title = _plain(f"region {name}")
    if region["bottleneck"]:
        title += "\n" + _plain(f"bottleneck: {region['bottleneck']}")
    ax.set_title(title, fontsize="medium")
    ax.legend(loc="best", fontsize="small")


def _speedup_panel(ax, view: SweepResult) -> None:
    base = view.speedup_base_time()
    preds = [p for p in view.predictions if p["value"] is not None]
    if preds:
        n = [p["threads"] for p in preds]
        banded = [p for p in preds if p["low"] is not None and p["high"] is not None]
        if banded:  # high time = low speedup
            ax.fill_between([p["threads"] for p in banded], [base / p["high"] for p in banded],
                            [base / p["low"] for p in banded], color="C0", alpha=0.2, label="band")
        s = [p["speedup"] if p["speedup"] is not None else base / p["value"] for p in preds]
        ax.plot(n, s, color="C0", label="predicted")
    counts = np.array(sorted(set(view.all_counts())), float)
    grid = np.linspace(counts.min(), counts.max(), 200)
    ideal = view.ideal_speedup(grid)
    ax.plot(grid, ideal, color="0.5", linestyle=":", label="ideal (linear)")
    ax.plot([e["threads"] for e in view.measured], [base / e["time_s"] for e in view.measured],
            "o", color="k", label="measured", zorder=4)
    top = max([base / e["time_s"] for e in view.measured] +
              [base / p["value"] for p in preds] + [1.0])
    ax.set_ylim(0, top * 1.25)  # the ideal line may run far above; it is a reference only
    ax.set_ylabel("speedup (higher is better)")
    ax.set_title("speedup")


def _stall_panel(ax, view: SweepResult) -> None:
    def final(name):  # predicted value at the largest count, else the largest measured
        pts = view.stall_predictions.get(name)
        if pts:
            return pts[-1]["value"]
        return max([(e.get("stalls_s") or {}).get(name, 0.0) for e in view.measured])

    # Largest at the bottom, so the layer that grows most sits on the axis.
    order = sorted(view.stall_categories, key=lambda c: (-final(c), c))
    colors = {c: f"C{(i + 3) % 10}" for i, c in enumerate(order)}  # C0-C2 are taken above

    def label(c):
        return _plain(f"{c} (bottleneck)" if c == view.bottleneck else c)

    grid = sorted({p["threads"] for pts in view.stall_predictions.values() for p in pts})
    if grid:
        layers = []
        for c in order:
            pts = view.stall_predictions.get(c) or []
            if pts:
                layers.append(np.interp(grid, [p["threads"] for p in pts], [p["value"] for p in pts]))
            else:
                layers.append(np.zeros(len(grid)))
        polys = ax.stackplot(grid, *layers, colors=[colors[c] for c in order],
                             labels=[label(c) for c in order], alpha=0.55)
        for c, poly in zip(order, polys):
            if c == view.bottleneck:
                poly.set_hatch("//")
                poly.set_edgecolor("k")
                poly.set_alpha(0.75)
    else:  # no extrapolation: only the measured points, labelled per category
        for c in order:
            ax.plot([], [], "s", color=colors[c], label=label(c))
    # Measured stalls, stacked in the same order: each point is the top of its layer.
    n = [e["threads"] for e in view.measured]
    cumulative = np.zeros(len(view.measured))
    for c in order:
        cumulative = cumulative + np.array([float((e.get("stalls_s") or {}).get(c, 0.0)) for e in view.measured])
        ax.plot(n, cumulative.copy(), "o", color=colors[c], markeredgecolor="k", zorder=4)
    ax.plot([], [], "o", color="w", markeredgecolor="k", label="measured (stacked)")
    ax.set_ylim(bottom=0)
    ax.set_ylabel("stall time (s, all threads, stacked)")
    ax.set_title("where the time goes: stalls"
                 + (f" — bottleneck: {_plain(view.bottleneck)}" if view.bottleneck else ""))


# ---------------------------------------------------------------- HTML

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
            ["threads", "time (s)", "spread (s)", "speedup"] + [f"stall: {c} (s)" for c in cats],
            measured_rows, [cls(e["threads"]) for e in view.measured])
        image = base64.b64encode(render_png(view)).decode("ascii")
        alt = "time, speedup and stall extrapolation against threads"
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
            ["threads", "time (s)", "low (s)", "high (s)", "speedup"] + [f"stall: {c} (s)" for c in pred_cats],
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
                                _e(r["bottleneck"]) if r["bottleneck"] else "–"])
        horizon = view.predictions[-1]["threads"] if view.predictions else None
        regions = _table(["region", "measured (threads: s)", f"predicted at {_count(horizon)} (s)" if horizon
                          else "predicted (s)", "speedup", "bottleneck"], region_rows, text_cols=(0, 1, 4))
        regions = "<h2>Regions</h2>\n" + regions
    else:
        regions = ""
    if view.warnings:
        warnings = "<ul>" + "".join(f'<li class="warn">{_e(w)}</li>' for w in view.warnings) + "</ul>"
    else:
        warnings = '<p class="none">None.</p>'
    if view.failed:
        failed = _table(["threads", "reason"],
                        [[_e(_count(f.get("threads"))), _e(f.get("reason", ""))] for f in view.failed],
                        text_cols=(1,))
    else:
        failed = '<p class="none">None.</p>'

    summary = [("command", f"<code>{_e(view.command)}</code>" if view.command else '<span class="none">–</span>')]
    if view.runtime:
        summary.append(("runtime", _e(view.runtime)))
    summary.append(("preferred threads", _e(preferred) if preferred is not None else "–"))
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


# ---------------------------------------------------------------- Extra-P


def extrap_records(result: dict, source: str = SOURCE) -> list[dict]:
    """Extra-P JSON Lines records, one per measured run (failed runs and predictions
    are not measurements and are left out).

    Every run gives ``{"params": {"p": threads}, "callpath": "main", "metric": "time",
    "value": time_s}`` and, per stall category it lists, the same with
    ``"metric": "stall:CATEGORY"`` and the stall seconds.  Runs repeating a count become
    repetitions in Extra-P.  Stalls are metrics, not child callpaths: they are thread
    time summed over the team at the same code location, not a region inside ``main``'s
    wall time (at many threads they exceed it), and Extra-P models every
    (callpath, metric) pair on its own either way.  Each region of ``regions`` adds
    callpath ``main->REGION``, metric ``time``, with the region's own time per count.
    """
    check_sweep(result, source)
    records = []
    for e in result["measured"]:
        params = {EXTRAP_PARAMETER: _as_int(e["threads"])}
        records.append({"params": params, "callpath": EXTRAP_CALLPATH, "metric": EXTRAP_TIME_METRIC,
                        "value": float(e["time_s"])})
        for cat in sorted(e.get("stalls_s") or {}):
            records.append({"params": dict(params), "callpath": EXTRAP_CALLPATH,
                            "metric": EXTRAP_STALL_METRIC.format(cat), "value": float(e["stalls_s"][cat])})
    for r in regions_of(result.get("regions"), source):
        for e in r["measured"]:
            records.append({"params": {EXTRAP_PARAMETER: _as_int(e["threads"])},
                            "callpath": EXTRAP_REGION_CALLPATH.format(r["name"]),
                            "metric": EXTRAP_TIME_METRIC, "value": float(e["time_s"])})
    return records


def export_extrap(result: dict, path: str) -> None:
    """Write the sweep's measured runs to ``path`` in Extra-P's JSON Lines format."""
    text = "".join(json.dumps(r, allow_nan=False) + "\n" for r in extrap_records(result))
    write_file(path, text)


def _as_int(x) -> int | float:
    f = float(x)
    return int(f) if f == int(f) else f
