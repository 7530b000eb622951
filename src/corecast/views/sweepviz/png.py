"""The PNG of a sweep result: time, speedup and stall panels, one facet per region."""
from __future__ import annotations

import io
import math

import numpy as np
# The object-oriented API (Figure + Agg canvas) never touches pyplot's global state or
# needs a display, so it is safe inside other programs and headless CI.
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ...io.fileio import printable, write_file
from ...recording.values import json_number
from ...io.sweepresult import SweepResult
from ...errors import counted
from ...model.scaling import COUNT_UNITS
from ..plot import mark_counts
from ..sweeptable import stalls_summed_over

LOG_X_RATIO = 8  # use a log2 thread axis once the counts span this factor or more
MAX_REGION_FACETS = 12  # regions drawn in the PNG, largest share first

def plot_sweep(result: dict, path: str) -> None:
    """Write the sweep's PNG (time, speedup, stall extrapolation) to ``path`` (SVG or PDF
    by its suffix)."""
    from ..plot import image_format

    write_file(path, render_png(result, image_format(path)), "plot")


def render_png(result: "dict | SweepResult", fmt: str = "png") -> bytes:
    """The image of ``plot_sweep`` as bytes (``fmt``: png, svg or pdf)."""
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
        mark_counts(ax, view.preferred, view.fastest, linewidth=1.2)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    axes[1].legend(loc="best", fontsize="small")
    if has_stalls:
        handles, labels = axes[2].get_legend_handles_labels()
        axes[2].legend(handles[::-1], labels[::-1], loc="upper left", fontsize="small")

    fig.suptitle(title_of(view), fontsize="medium")

    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    return buf.getvalue()


def title_of(view: SweepResult) -> str:
    """The figure's title: the command, what ran it, preferred and fastest counts, bottleneck."""
    title = "corecast sweep"
    if view.command:
        cmd = view.command if len(view.command) <= 90 else view.command[:87] + "..."
        title += f": {_plain(cmd)}"
    if view.run_by:
        title += f" ({_plain(view.run_by)})"
    summary = []
    if view.preferred is not None:
        summary.append(f"preferred: {_counted(view.preferred, view.unit)}")
    if view.fastest is not None and view.fastest != view.preferred:
        summary.append(f"fastest: {_counted(view.fastest, view.unit)}")
    if view.bottleneck:
        summary.append(f"bottleneck: {_plain(view.bottleneck)}")
    if view.failed:
        summary.append(f"{len(view.failed)} failed run{'s' if len(view.failed) != 1 else ''}")
    if summary:
        title += "\n" + "   ·   ".join(summary)
    return title


def stall_axis_label(unit: str) -> str:
    """The stall panel's y-axis, summed as the terminal report's stall column is."""
    return f"stall time (s, summed over {stalls_summed_over(unit)}, stacked)"


def _plain(text: str) -> str:
    """Text shown as written: a pair of ``$`` would start matplotlib's mathtext (and a
    command like ``sh -c 'echo $A$B'`` could fail to render); control characters and
    undecodable bytes escaped (the font renderer refuses the latter)."""
    return printable(text).replace("$", r"\$")


def _counted(count: int, unit: str) -> str:
    """``count`` of ``unit`` ("threads", "ranks"), singular for one: "1 thread"."""
    return counted(count, next((k for k, v in COUNT_UNITS.items() if v == unit), unit), unit)


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
    ax.set_ylabel(stall_axis_label(view.unit))
    ax.set_title("where the time goes: stalls"
                 + (f" — bottleneck: {_plain(view.bottleneck)}" if view.bottleneck else ""))
