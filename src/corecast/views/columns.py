"""The exit report's table, one layout for its two renderers: the library's own at exit
(``native/report.c``, written in C because the program may be ending without Python) and
``corecast replay``'s (``views/replayview.py``).  Both take every width, format and the stall
rule from here: ``python -m corecast.views.columns`` writes ``native/report_columns.h``,
committed so that the C builds with plain gcc, and ``tests/runtime/test_replay.py`` fails
when the file differs from this table.

Standard library only, and nothing imported at start-up: the C side never runs it."""
from __future__ import annotations

import math
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Sequence

# (heading, width, alignment) of the columns every row starts with.  The time column is
# the seconds (8 wide, 3 decimals) and their unit.
LABEL, CALLS, THREADS, TIME, STALLS = 34, 7, 4, 9, 34
# The region column widens to its longest name up to LABEL_MAX ("compute._omp_fn.0
# (omp_two_regions)" was cut by one cell), as perf's columns do; past it a name is cut
# and its last cell says so.
LABEL_MAX = 72
SPEEDUP = 6        # one S@n column
# A speedup below SPEEDUP_SMALL gets three decimals, below SPEEDUP_TINY it reads TINY_CELL
# (``speedup_cell``; the library's table takes them from the generated header).
SPEEDUP_SMALL, SPEEDUP_TINY, TINY_CELL = 0.01, 0.001, "<0.001"
BAND = 11          # "lo-hi" at the target, each 5 wide
# The fewest threads within 1% of the best predicted speedup (``bound.fastest_count``):
# predict's *fastest* count, named so here too.  Not predict's *preferred* count (each
# thread up to it gains a quarter of one), which needs more than one measured team size.
FASTEST = 7
FASTEST_HEADING = "fastest"
# Where the model names no fastest count (a sample whose work ran on one thread, or whose
# threads took turns behind other load, shows nothing of how it divides:
# ``spread.one_thread``, ``spread.turns_band``): the cell, and a line after the table
# saying why (the region's name).
NO_EVIDENCE_CELL = "?"
NO_EVIDENCE_LINE = ("no evidence: %s ran its work one thread at a time, which shows nothing of how it "
                    "divides: no fastest count is named")
# A process that started no thread and ran no parallel region: its one line after "pid N,
# TIME: ", and the one for such a process whose waited-for children used CPU (make -j2, a
# forking worker pool: "no parallel activity" was false there; the library reads
# getrusage(RUSAGE_CHILDREN), the summary record keeps it as ``children_cpu_s``).
SERIAL_RUN = "serial run: no parallel activity (no thread started, no OpenMP region); nothing to predict"
SERIAL_RUN_CHILDREN = ("serial run: no thread started and no OpenMP region in this process; the child processes "
                       "it waited for used %.3g s of CPU (each reports for itself if it ran threads; processes side by side are "
                       "not predicted); nothing to predict")
# Under a process's table, where it waited for children that used CPU (a multiprocessing pool
# beside a few threads read as no gain from cores, its workers out of sight).  "waited for":
# getrusage counts no child still running, nor one reaped unwaited (SIGCHLD ignored).
CHILDREN_LINE = ("the child processes it waited for used %.3g s of CPU, not in this table (each reports for itself if it ran "
                 "threads; processes side by side are not predicted)")
SPEEDUP_COLUMNS = 4  # powers of two from 2 shown before the target's own column
STALLS_SHOWN = 3     # the top stall categories named in a row
STALL_MIN_SHARE = 0.005  # a category under this share of the thread time is left out
STALLS_HEADING = "stalls (share of thread time)"


def stall_cell(parts: Sequence[str], width: int = STALLS) -> str:
    """The stalls cell from its parts ("imbalance 12%", largest first): whole parts only,
    as many as fit ``width``; where one is left out, as many as fit before ", …", so
    that no share is cut off behind its name (``native/report.c``'s ``top_stalls`` does
    the same)."""
    kept: list[str] = []
    for part in parts:
        if len(", ".join(kept + [part])) <= width:
            kept.append(part)
            continue
        while kept and len(", ".join(kept)) + 3 > width:  # ", " and the ellipsis's one cell
            kept.pop()
        return ", ".join(kept + ["…"])
    return ", ".join(kept) or "-"


def band_cell(pred: object, target: int) -> str:
    """The ``band@N`` cell, with its leading space: the prediction's low-high speedup at
    ``target``, or "-" where it has none (``pred``: None, or one with ``threads``, ``low``
    and ``high``)."""
    half = (BAND - 1) // 2
    if pred is None or target not in pred.threads:
        return f" {'-':>{BAND}}"
    i = pred.threads.index(target)
    lo, hi = pred.low[i], pred.high[i]
    return f" {lo:{half}.{band_decimals(lo)}f}-{hi:<{half}.{band_decimals(hi)}f}"


def band_decimals(value: float) -> int:
    """Decimals of one end of the band: two, but three below ``SPEEDUP_SMALL``, as the S@n
    cell of the same value has them (``speedup_cell``: a steered run's S@16 0.007 had the
    band 0.01-0.01 around it), and fewer where it reads 100 or more, so that an end stays
    in its 5 cells (a GPU's 132 compute units: "66.00-132.00" pushed the row one cell; a
    negative end, which no speedup has, keeps two for the same reason)."""
    if 0 < value < SPEEDUP_SMALL:
        return 3
    return 2 if not abs(value) >= 99.995 else 1 if abs(value) < 999.95 else 0


def kernel_stall_cell(lost: dict[str, float] | None, compute_units: int, device_s: float, on_cpu: bool,
                      width: int, short_launches: bool = False) -> str:
    """A kernel's stalls as shares of its compute units' time (``lost``: seconds per
    category; None: not measured, which a CPU device's row says and a GPU's leaves at
    "-"); "* " marks launches shorter than the snapshot interval (a lower bound)."""
    if lost is None:
        return "not measured" if on_cpu else "-"
    total = compute_units * device_s
    parts = [f"{c} {100 * (v / total):.0f}%"
             for c, v in sorted(lost.items(), key=lambda kv: -kv[1])[:STALLS_SHOWN]
             if total > 0 and v / total >= STALL_MIN_SHARE]
    mark = "* " if short_launches else ""
    return mark + stall_cell(parts, width - len(mark))


def speedup_cell(speedup: float) -> str:
    """A speedup to two decimals, but one that is not zero never reads as 0.00 (as
    ``report.percent`` for shares): 0.004 is 0.004, and below 0.001 it is <0.001.  The one
    rule of every table (``predict``'s, the exit table's S@n cells, which the library prints
    alike: native/report.c; a steered convoy measured 1/456 at 2 threads)."""
    speedup = float(speedup)
    if not math.isfinite(speedup) or speedup == 0 or abs(speedup) >= SPEEDUP_SMALL:
        return f"{speedup:.2f}"
    if abs(speedup) >= SPEEDUP_TINY:
        return f"{speedup:.3f}"
    return TINY_CELL if speedup > 0 else ">-0.001"


def label_width(labels: Sequence[str]) -> int:
    """The region column's width for these row labels (as printed: one cell a character)."""
    return max([LABEL] + [min(len(s), LABEL_MAX) for s in labels])


def heading(target: int, label: int = LABEL) -> str:
    """The table's column line, without its newline (``label``: the region column's width)."""
    cols = speedup_columns(target)
    head = f"{'region':<{label}} {'calls':>{CALLS}} {'thr':>{THREADS}} {'time':>{TIME}}  {STALLS_HEADING:<{STALLS}}"
    return (head + "".join(f" {'S@' + str(c):>{SPEEDUP}}" for c in cols)
            + f" {'band@' + str(target):>{BAND}} {FASTEST_HEADING:>{FASTEST}}  bottleneck")


def speedup_columns(target: int) -> list[int]:
    """The counts shown: powers of two from 2 below the target (at most
    ``SPEEDUP_COLUMNS``), then the target."""
    cols, n = [], 2
    while n < target and len(cols) < SPEEDUP_COLUMNS:
        cols.append(n)
        n *= 2
    return cols + [target]


def c_header() -> str:
    """native/report_columns.h: the same layout as printf formats."""
    half = (BAND - 1) // 2
    lines = [
        "/* Generated by `python -m corecast.views.columns` from its table: do not edit.",
        " * The exit table's layout, shared with `corecast replay` (views/replayview.py). */",
        "#ifndef CORECAST_REPORT_COLUMNS_H",
        "#define CORECAST_REPORT_COLUMNS_H",
        f"#define CC_COL_LABEL {LABEL}",
        f"#define CC_COL_LABEL_MAX {LABEL_MAX}",
        f"#define CC_COL_STALLS {STALLS}",
        f"#define CC_COL_SPEEDUPS {SPEEDUP_COLUMNS}",
        f"#define CC_STALLS_SHOWN {STALLS_SHOWN}",
        f"#define CC_STALL_MIN_SHARE {STALL_MIN_SHARE}",
        f'#define CC_COL_HEADING "%-*s %{CALLS}s %{THREADS}s %{TIME}s  %-{STALLS}s"',
        f'#define CC_COL_STALLS_HEADING "{STALLS_HEADING}"',
        f'#define CC_COL_COUNTS " %{CALLS}llu %{THREADS}d %{TIME - 1}.3fs  "',
        f'#define CC_COL_SPEEDUP " %{SPEEDUP}.2f"',
        f'#define CC_COL_SPEEDUP_SMALL " %{SPEEDUP}.3f" /* below CC_COL_SPEEDUP_SMALL_BELOW */',
        f"#define CC_COL_SPEEDUP_SMALL_BELOW {SPEEDUP_SMALL}",
        f"#define CC_COL_SPEEDUP_TINY_BELOW {SPEEDUP_TINY}",
        f'#define CC_COL_SPEEDUP_TINY_CELL "{TINY_CELL}"',
        f'#define CC_COL_SPEEDUP_NONE " %{SPEEDUP}s"',
        f'#define CC_COL_BAND " %{half}.*f-%-{half}.*f" /* with CC_COL_BAND_DECIMALS of each end */',
        "#define CC_COL_BAND_DECIMALS(v) (((v) > 0 && (v) < CC_COL_SPEEDUP_SMALL_BELOW) ? 3 : "
        "!((v) >= 99.995 || (v) <= -99.995) ? 2 : ((v) < 999.95 && (v) > -999.95) ? 1 : 0)",
        f'#define CC_COL_BAND_NONE " %{BAND}s"',
        f'#define CC_COL_FASTEST " %{FASTEST}d  "',
        f'#define CC_COL_FASTEST_NONE " %{FASTEST}s"',
        f'#define CC_COL_FASTEST_HEADING "{FASTEST_HEADING}"',
        f'#define CC_NO_EVIDENCE_CELL "{NO_EVIDENCE_CELL}"',
        f'#define CC_NO_EVIDENCE_LINE "{NO_EVIDENCE_LINE}\\n"',
        f'#define CC_SERIAL_RUN "{SERIAL_RUN}"',
        f'#define CC_SERIAL_RUN_CHILDREN "{SERIAL_RUN_CHILDREN}" /* with the children\'s CPU seconds */',
        f'#define CC_CHILDREN_LINE "{CHILDREN_LINE}" /* with the children\'s CPU seconds */',
        f'#define CC_COL_TAIL_HEADING " %{BAND}s %{FASTEST}s  %s"',
        "#endif",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] = ()) -> int:
    """Rewrite native/report_columns.h from the table (``argv``: the source tree, by default
    the one this file is in)."""
    from pathlib import Path

    from ..io.settings import source_tree

    root = source_tree("corecast.views.columns", argv[0] if argv else None)
    if root is None:
        return 2
    (Path(root) / "native" / "report_columns.h").write_text(c_header())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
