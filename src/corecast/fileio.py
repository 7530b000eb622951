"""Reading measurement tables from CSV files.

Format: optional ``#`` comment lines, a header row, then one row per run.  The first
column is the count (threads, cores, processes: any name).  Exactly one value column:
``time``/``seconds`` (time metric), ``throughput``/``ops`` (throughput metric) or
``value`` (metric from the ``metric`` argument or a ``# ..., metric: time, ...`` comment).
Optional ``stall:NAME`` and ``size:NAME`` columns.  Repeated counts are repetitions.

Every problem raises ``InputError`` with one line naming the file and the line/column.

A ``corecast sweep`` result (a ``.json`` file, or any file starting with ``{``) is read
too: see "Sweep JSON input" at the end of this module.
"""
from __future__ import annotations

import csv
import json
import math
import os
import tempfile
from dataclasses import dataclass, field, replace

from .entities import METRICS, InputError, Measurements

# Value-column names -> metric (None: the metric comes from elsewhere).
VALUE_COLUMNS: dict[str, str | None] = {
    "time": "time",
    "seconds": "time",
    "throughput": "throughput",
    "ops": "throughput",
    "value": None,
}
STALL_PREFIX = "stall:"
SIZE_PREFIX = "size:"


@dataclass
class Table:
    """A CSV file split into header, data rows and ``key: value`` comment items."""

    path: str
    header: list[str]
    header_line: int
    rows: list[tuple[int, list[str]]]  # (1-based line number, stripped cells)
    meta: list[tuple[int, str, str]] = field(default_factory=list)  # (line, key, value)


def read_table(path: str) -> Table:
    """Split ``path`` into comments, header and rows; checks only the table's shape."""
    text = _read_text(path)
    header: list[str] | None = None
    header_line = 0
    rows: list[tuple[int, list[str]]] = []
    meta: list[tuple[int, str, str]] = []
    saw_content = False
    # Parse line by line (not one csv.reader over the file) so every row keeps its
    # physical line number for error messages; quoted newlines are not supported.
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        saw_content = True
        if stripped.startswith("#"):
            meta.extend((lineno, k, v) for k, v in _comment_items(stripped[1:]))
            continue
        cells = [c.strip() for c in next(csv.reader([line]))]
        if not any(cells):
            continue  # a line of bare commas/whitespace counts as blank
        if header is None:
            if all(_is_number(c) for c in cells):
                raise InputError(f"{path}: line {lineno}: no header row (expected e.g. 'threads,time')")
            header, header_line = cells, lineno
            continue
        if len(cells) != len(header):
            raise InputError(
                f"{path}: line {lineno}: {len(cells)} cells, but the header has {len(header)} columns"
            )
        rows.append((lineno, cells))
    if not saw_content:
        raise InputError(f"{path}: file is empty")
    if header is None:
        raise InputError(f"{path}: no header row (expected e.g. 'threads,time')")
    if not rows:
        raise InputError(f"{path}: no data rows after the header")
    return Table(path, header, header_line, rows, meta)


def read_measurements(path: str, metric: str | None = None) -> Measurements:
    """Load a measurement CSV (or a sweep result's JSON); raises ``InputError`` (one line)
    on any bad input."""
    if metric is not None and metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use time or throughput")
    if _looks_like_json(path):
        return read_sweep_measurements(path, metric)  # see "Sweep JSON input" below
    table = read_table(path)
    value_col, stall_cols, size_cols = _classify_columns(table)
    metric = _resolve_metric(table, table.header[value_col], metric)

    counts = [_cell(table, line, cells, 0, "count") for line, cells in table.rows]
    values = [_cell(table, line, cells, value_col, "value") for line, cells in table.rows]
    stalls = {
        name: [_cell(table, line, cells, i, "stall") for line, cells in table.rows]
        for name, i in stall_cols.items()
    }
    sizes = {
        name: [_cell(table, line, cells, i, "size") for line, cells in table.rows]
        for name, i in size_cols.items()
    }
    try:
        return Measurements.from_samples(counts, values, metric, stalls=stalls, sizes=sizes)
    except InputError as e:  # our checks should pre-empt these; keep the file name anyway
        raise InputError(f"{path}: {e}") from None


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a CSV file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark.
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"{path}: line {line}: not UTF-8 text") from None


def _comment_items(comment: str):
    """``key: value`` items of a comma-separated comment (other text is ignored)."""
    for item in comment.split(","):
        key, sep, value = item.partition(":")
        if sep and key.strip():
            yield key.strip().lower(), value.strip()


def _classify_columns(table: Table) -> tuple[int, dict[str, int], dict[str, int]]:
    """Index of the value column and {name: index} of stall and size columns."""
    path, header = table.path, table.header
    seen: set[str] = set()
    value_col = None
    stalls: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for i, name in enumerate(header):
        where = f"{path}: line {table.header_line}: column {i + 1}"
        if not name:
            raise InputError(f"{where}: empty column name")
        key = name.lower()
        if key in seen:
            raise InputError(f"{where}: duplicate column {name!r}")
        seen.add(key)
        if i == 0:
            continue  # the count column may have any name
        if key in VALUE_COLUMNS:
            if value_col is not None:
                raise InputError(
                    f"{where}: second value column {name!r} (already have {header[value_col]!r})"
                )
            value_col = i
        elif key.startswith((STALL_PREFIX, SIZE_PREFIX)):
            prefix, _, sub = name.partition(":")
            if not sub.strip():
                raise InputError(f"{where}: column {name!r} needs a name after the colon")
            (stalls if prefix.lower() + ":" == STALL_PREFIX else sizes)[sub.strip()] = i
        else:
            raise InputError(
                f"{where}: unknown column {name!r} (expected time, seconds, throughput, ops, "
                "value, stall:NAME or size:NAME)"
            )
    if value_col is None:
        raise InputError(
            f"{path}: line {table.header_line}: no value column "
            "(name one column time, seconds, throughput, ops or value)"
        )
    return value_col, stalls, sizes


def _resolve_metric(table: Table, column: str, requested: str | None) -> str:
    """The metric from the column name, the ``metric:`` comment and the argument;
    any two that disagree are an error (a silently flipped metric inverts the curve)."""
    path = table.path
    declared: list[tuple[str, str]] = []  # (metric, where it came from)
    named = VALUE_COLUMNS[column.lower()]
    if named is not None:
        declared.append((named, f"column {column!r} (a {named} metric)"))
    for line, key, value in table.meta:
        if key != "metric":
            continue
        m = value.lower()
        if m not in METRICS:
            raise InputError(f"{path}: line {line}: metric {value!r} in comment: use time or throughput")
        declared.append((m, f"'metric: {value}' on line {line}"))
    if requested is not None:
        declared.append((requested, f"--metric {requested}"))
    for m, where in declared[1:]:
        if m != declared[0][0]:
            raise InputError(f"{path}: {where} conflicts with {declared[0][1]}")
    if not declared:
        raise InputError(
            f"{path}: column {column!r} has no metric: pass --metric time|throughput "
            "or add a comment line '# metric: time' (or throughput)"
        )
    return declared[0][0]


def _cell(table: Table, line: int, cells: list[str], col: int, kind: str) -> float:
    """One numeric cell, checked for what its column allows."""
    raw = cells[col]
    where = f"{table.path}: line {line}: column {table.header[col]!r}"
    if not raw:
        raise InputError(f"{where}: empty cell")
    try:
        x = float(raw)
    except ValueError:
        raise InputError(f"{where}: {raw!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{where}: {raw!r} is not a finite number")
    if kind == "count" and (x < 1 or x != int(x)):
        raise InputError(f"{where}: count {raw!r} must be a whole number >= 1")
    if kind in ("value", "size") and x <= 0:
        raise InputError(f"{where}: {raw!r} must be positive")
    if kind == "stall" and x < 0:
        raise InputError(f"{where}: {raw!r} must not be negative")
    return x


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- Sweep JSON input
#
# ``corecast sweep --json-out`` writes one JSON object; its "measured" list is a curve:
#   {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}], ...}
# Each entry is one count: metric "time"; "stalls_s" become stall columns (a category an
# entry does not list counts as 0 there, as a category absent from a run does in sweep);
# "spread_s" (half the range of that count's repetitions, in seconds) becomes the
# relative spread that widens the band.  Entries repeating a count are repetitions.
# Every other key is ignored here.

SWEEP_HINT = "expected a corecast sweep result: {\"measured\": [{\"threads\": N, \"time_s\": T}, ...], ...}"


def _looks_like_json(path: str) -> bool:
    """A ``.json`` name, or a first non-blank character ``{`` (a CSV never starts so)."""
    if path.lower().endswith(".json"):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False  # read_table reports the problem in its usual words
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")


def load_sweep_json(path: str) -> dict:
    """The sweep result object in ``path`` with its "measured" list checked; raises
    ``InputError`` (one line naming the file) on anything else."""
    text = _read_text(path)
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":  # e.g. the JSON Lines of 'corecast run --json-out'
            raise InputError(f"{path}: line {e.lineno}: more than one JSON value; {SWEEP_HINT}") from None
        raise InputError(f"{path}: line {e.lineno}: column {e.colno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    check_sweep(obj, path)
    return obj


def check_sweep(obj, source: str) -> None:
    """Check that ``obj`` is a sweep result with a usable "measured" list; ``source``
    (a file name) starts the one-line ``InputError``."""
    if not isinstance(obj, dict):
        raise InputError(f"{source}: top level is a JSON {_json_type(obj)}, not an object; {SWEEP_HINT}")
    if "measured" not in obj:
        raise InputError(f"{source}: no \"measured\" key, not a sweep result; {SWEEP_HINT}")
    measured = obj["measured"]
    if not isinstance(measured, list):
        raise InputError(f"{source}: \"measured\" is a JSON {_json_type(measured)}, not a list")
    if not measured:
        raise InputError(f"{source}: \"measured\" is empty: the sweep has no successful runs")
    for i, entry in enumerate(measured):
        _check_sweep_entry(source, i, entry)


def read_sweep_measurements(path: str, metric: str | None = None) -> Measurements:
    """A sweep result's "measured" runs as time ``Measurements`` with stall columns."""
    if metric is not None and metric != "time":
        raise InputError(f"{path}: --metric {metric} conflicts with a sweep result (its times are a time metric)")
    measured = load_sweep_json(path)["measured"]
    categories = sorted({k for e in measured for k in (e.get("stalls_s") or {})})
    counts = [float(e["threads"]) for e in measured]
    values = [float(e["time_s"]) for e in measured]
    stalls = {k: [float((e.get("stalls_s") or {}).get(k, 0.0)) for e in measured] for k in categories}
    try:
        data = Measurements.from_samples(counts, values, "time", stalls=stalls)
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    # A count measured once carries its repetitions' spread in "spread_s".
    spread = data.spread.copy()
    for j, (n, reps) in enumerate(zip(data.counts, data.repetitions)):
        if reps == 1:
            (entry,) = [e for e in measured if float(e["threads"]) == n]
            d = entry.get("spread_s")
            if d is not None:
                spread[j] = float(d) / data.values[j]
    return replace(data, spread=spread)


def _check_sweep_entry(path: str, i: int, entry) -> None:
    where = f"{path}: measured[{i}]"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: a JSON {_json_type(entry)}, not an object")
    for key in ("threads", "time_s"):
        if key not in entry:
            raise InputError(f"{where}: no \"{key}\" key")
    n = entry["threads"]
    if _finite(n) is None or n < 1 or n != int(n):
        raise InputError(f"{where}: \"threads\" {_short(n)} must be a whole number >= 1")
    t = entry["time_s"]
    if _finite(t) is None or t <= 0:
        raise InputError(f"{where}: \"time_s\" {_short(t)} must be a positive number")
    d = entry.get("spread_s")
    if d is not None and (_finite(d) is None or d < 0):
        raise InputError(f"{where}: \"spread_s\" {_short(d)} must be a number >= 0")
    stalls = entry.get("stalls_s")
    if stalls is None:
        return
    if not isinstance(stalls, dict):
        raise InputError(f"{where}: \"stalls_s\" is a JSON {_json_type(stalls)}, not an object")
    for name, s in stalls.items():
        if not name.strip():
            raise InputError(f"{where}: \"stalls_s\" has an empty category name")
        if _finite(s) is None or s < 0:
            raise InputError(f"{where}: \"stalls_s\" {_short(name)}: {_short(s)} must be a number >= 0")


def _finite(x) -> float | None:
    """``x`` as a float if it is a finite JSON number (not a boolean), else None."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return None
    try:
        f = float(x)
    except OverflowError:  # an integer beyond float range
        return None
    return f if math.isfinite(f) else None


def _json_type(x) -> str:
    for kind, name in ((bool, "boolean"), (str, "string"), (list, "list"), (dict, "object")):
        if isinstance(x, kind):
            return name
    return "null" if x is None else "number"


def _short(x, limit: int = 40) -> str:
    text = json.dumps(x) if not isinstance(x, float) or math.isfinite(x) else repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def write_atomic(path: str, data: bytes, suffix: str = "") -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename: a failure leaves
    nothing (or the old file) at ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".corecast-", suffix=suffix, dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        # mkstemp makes the file private (0600); give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
