"""PNG (or SVG, PDF) plot of a ``CurvePrediction``: measured points, checkpoints, prediction with its band."""
from __future__ import annotations

import io
import os
import stat

import numpy as np
# The object-oriented API (Figure + Agg canvas) never touches pyplot's global state or
# needs a display, so it is safe inside other programs and headless CI.
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..model.curve.entities import Measurements, CurvePrediction
from ..errors import InputError
from ..io.fileio import write_file

# Formats the Agg canvas offers that corecast refuses, with why: PostScript has no
# transparency (matplotlib drew the band opaque and printed its own warning), PGF runs LaTeX.
REFUSED = {"eps": "PostScript has no transparency, which the band needs",
           "ps": "PostScript has no transparency, which the band needs",
           "pgf": "PGF is typeset by LaTeX"}
# Every other format the Agg canvas writes (png, svg, pdf, jpg, ...), by suffix.  A name
# with any other suffix (.bmp, .xyz, .out) is an error, never PNG bytes under a misleading
# name; a name without one (``-``, /dev/fd/3) gets PNG, and so does a FIFO or device that
# exists, whatever its name: no file is named there.
FORMATS = tuple(f for f in FigureCanvasAgg.get_supported_filetypes() if f not in REFUSED)


def image_format(path: str) -> str:
    """The image format for ``path``'s suffix; PNG for names without a suffix and for a
    FIFO or device."""
    name = path.rsplit("/", 1)[-1]
    # ".svg" alone is an SVG too (os.path's "no suffix" for a dot file wrote PNG bytes).
    suffix = name.rsplit(".", 1)[1].lower() if "." in name else ""
    if suffix in FORMATS:
        return suffix
    if _special(path):
        return "png"
    if not suffix:
        if name.endswith(".") and name.strip("."):  # "out." names no format: as unknown as ".xyz"
            raise InputError(f"{path}: cannot plot to a name that ends in a dot: name it .png, .svg or .pdf")
        return "png"
    if suffix in REFUSED:
        raise InputError(f"{path}: cannot plot to a .{suffix} file: {REFUSED[suffix]}; "
                         "name it .pdf or .svg (vector formats too) or .png")
    raise InputError(f"{path}: cannot plot to a .{suffix} file: name it .png, .svg or .pdf "
                     f"(or {', '.join('.' + f for f in FORMATS if f not in ('png', 'svg', 'pdf'))})")


def check_html_name(path: str) -> None:
    """An ``InputError`` where ``path``'s suffix names another format than HTML (.html,
    .htm): an HTML report in ``e.png`` was written without a word while ``--plot`` checks
    its suffix.  Names without a suffix, FIFOs and devices are written, as ``image_format``
    writes them."""
    name = path.rsplit("/", 1)[-1]
    suffix = name.rsplit(".", 1)[1].lower() if "." in name else ""
    if suffix in ("html", "htm") or _special(path):
        return
    if suffix:
        raise InputError(f"{path}: cannot write the HTML report to a .{suffix} file: name it .html")
    if name.endswith(".") and name.strip("."):  # "out." names no format, as for --plot
        raise InputError(f"{path}: cannot write the HTML report to a name that ends in a dot: name it .html")


def _special(path: str) -> bool:
    """Whether ``path`` is something other than a regular file: a FIFO, a device."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def mark_counts(ax, preferred: int | None, fastest: int | None, **line) -> None:
    """The preferred count's line and, where it differs, the fastest count's, named as
    the report names them; one line says both where they are one count."""
    if preferred is not None and preferred == fastest:
        ax.axvline(preferred, color="C2", linestyle="--", label=f"preferred, fastest: {preferred}", **line)
        return
    if preferred is not None:
        ax.axvline(preferred, color="C2", linestyle="--", label=f"preferred: {preferred}", **line)
    if fastest is not None:
        ax.axvline(fastest, color="C3", linestyle=":", label=f"fastest: {fastest}", **line)


AXIS_LABEL = {"time": "time (lower is better)", "throughput": "throughput (higher is better)"}


def plot_prediction(pred: CurvePrediction, path: str, reference: Measurements | None = None,
                    label: str = "") -> None:
    """Write the plot to ``path`` in the format of its suffix (``image_format``; ``fileio.write_file``: ``-`` is
    standard output; a failure leaves no half-written file).  ``reference`` adds held-out
    measurements; ``label`` names the curve of a file that holds several (``callpath [metric]``)."""
    heading = label.replace("$", r"\$")  # a region's name, not mathtext
    fig = Figure(figsize=(8, 5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()

    ax.fill_between(pred.counts, pred.low, pred.high, color="C0", alpha=0.2, label="band")
    ax.plot(pred.counts, pred.values, color="C0", label=f"predicted ({pred.candidate})")

    data = pred.measured.at_target_size()
    checkpoint = np.isin(data.counts, np.asarray(pred.checkpoints, float))
    err = data.spread * data.values  # half-width of the repetitions' range
    for mask, style, label in (
        (~checkpoint, dict(fmt="o", color="k"), "measured"),
        (checkpoint, dict(fmt="s", color="C3", mfc="none"), "checkpoint"),
    ):
        if mask.any():
            yerr = err[mask] if np.any(err[mask] > 0) else None
            ax.errorbar(data.counts[mask], data.values[mask], yerr=yerr, capsize=3, label=label, **style)

    if reference is not None:
        ref = reference.at_target_size()
        held = ~np.isin(ref.counts, data.counts)
        if held.any():
            ax.plot(ref.counts[held], ref.values[held], "x", color="C1", label="held out")

    mark_counts(ax, pred.preferred, pred.fastest)
    ax.set_xlabel(pred.count_unit)
    ax.set_ylabel(f"{pred.value_name} (read as a cost: lower is better)" if pred.value_name
                  else AXIS_LABEL.get(pred.metric, pred.metric))
    title = pred.method if pred.method == pred.candidate else f"{pred.method}: {pred.candidate}"
    ax.set_title(f"{heading}\ncorecast {title}" if heading else f"corecast {title}")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")

    buffer = io.BytesIO()
    fig.savefig(buffer, format=image_format(path))
    write_file(path, buffer.getvalue(), "plot")
