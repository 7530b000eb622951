"""Views of a ``corecast sweep`` result: a PNG, a self-contained HTML report, Extra-P input.

The result object (what ``corecast sweep --json-out`` writes)::

    {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}],
     "predictions": [{"threads": n, "value": t, "low": l, "high": h, "speedup": s}],
     "stall_predictions": {category: [{"threads": n, "value": s}]},
     "preferred_count": k, "fastest_count": f, "fastest_measured": false, "bottleneck": category or null, "command": [...],
     "runtime": "openmp" | "pthreads" | "opencl" | "mpi", "warnings": [...],
     "failed": [{"threads": n, "reason": "..."}],
     "regions": [{"name", "measured", "predictions", "bottleneck", ...}]}

Only "measured" is required (checked by ``io.sweepresult.SweepResult.read``); every other key may be
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

One module each: ``png``, ``html`` and ``extrap``.  All three write to a temporary file in the target directory and rename it into place,
so a failure leaves nothing at ``path``.  Bad results raise ``InputError`` (one line).
"""
from __future__ import annotations

from .extrap import export_extrap, extrap_records
from .html import html_report, render_html
from .png import plot_sweep, render_png

__all__ = ["export_extrap", "extrap_records", "html_report", "render_html", "plot_sweep", "render_png"]
