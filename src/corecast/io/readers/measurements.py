"""corecast's own measurement CSV as ``Measurements`` (a sweep result's JSON: ``sweepjson``).

Measurement CSV format: optional ``#`` comment lines, a header row, then one row per run.
The first column is the count (any name; ``ranks``, ``processes``, ``cores`` or ``nodes``
label the counts so, any other name as threads).  Exactly one value
column: ``time``/``seconds`` (time metric), ``throughput``/``ops`` (throughput metric) or
``value`` (metric from the ``metric`` argument or a ``# ..., metric: time, ...`` comment).
Optional ``stall:NAME`` and ``size:NAME`` columns.  Repeated counts are repetitions.

Every problem raises ``InputError`` with one line naming the file and the line/column.

``read_measurements`` reads a ``corecast sweep`` result too (a ``.json`` file, or any file
starting with ``{``: ``readers.sweepjson``).
"""
from __future__ import annotations

import csv
import re
import math
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ...errors import InputError, counted
from ...model.scaling import COUNT_UNITS, MAX_COUNT, count_unit_of, over_max_count
from ..fileio import quoted, read_text, shown
from .raw import Series, check_metric, one_curve
from .registry import CURVES, Reader

if TYPE_CHECKING:
    from ...model.curve.entities import Measurements


# ---------------------------------------------------------------- measurement tables

# Value-column names -> metric (None: the metric comes from elsewhere).
VALUE_COLUMNS: dict[str, str | None] = {
    "time": "time",
    "seconds": "time",
    # the names other tools' and corecast sweep's own exports give a time, in any unit (a
    # speedup is a ratio; values print in the file's unit)
    **{name: "time" for name in ("time_s", "time (s)", "time_ms", "time (ms)", "runtime", "elapsed",
                                 "elapsed_s", "wall", "wall_s", "wall time")},
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
    return parse_table(read_text(path), shown(path))


def parse_table(text: str, path: str) -> Table:
    """``read_table`` of ``text`` read from ``path`` (as messages show it)."""
    header: list[str] = []
    header_line = 0
    rows: list[tuple[int, list[str]]] = []
    meta: list[tuple[int, str, str]] = []
    for kind, lineno, item in scan_table(text, path):
        if kind == "meta":
            meta.append((lineno, *item))
        elif kind == "header":
            header, header_line = item, lineno
        else:
            rows.append((lineno, item))
    return Table(path, header, header_line, rows, meta)


def scan_table(text: str, path: str) -> Iterator[tuple[str, int, Any]]:
    """The table's parts in file order, one at a time: ``("meta", line, (key, value))``,
    ``("header", line, cells)`` once, ``("row", line, cells)``; the shape is checked as
    they come (a row's cell count at its line; no header or no rows at the end)."""
    saw_content = False
    header: list[str] | None = None
    any_row = False
    delimiter = _delimiter(text)
    # Parse line by line (not one csv.reader over the file) so every row keeps its
    # physical line number for error messages; quoted newlines are not supported.
    for lineno, line in enumerate(text_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        saw_content = True
        if stripped.startswith("#"):
            for item in _comment_items(stripped[1:]):
                yield "meta", lineno, item
            continue
        try:
            # A line without quotes splits as the csv module would (a quarter of its time on
            # a file of 10^6 rows); quoted cells, or one past its field limit, go through it.
            plain = '"' not in line and len(line) <= _FIELD_LIMIT
            cells = [c.strip() for c in (line.split(delimiter) if plain else
                                         next(csv.reader([line], delimiter=delimiter)))]
            if delimiter == ";":  # a spreadsheet's export in a locale with decimal commas
                cells = [c.replace(",", ".") if _DECIMAL_COMMA.fullmatch(c) else c for c in cells]
        except csv.Error as e:  # e.g. a cell beyond the csv module's field size limit
            raise InputError(f"{path}: line {lineno}: not a CSV row: {e}") from None
        if not any(cells):
            continue  # a line of bare commas/whitespace counts as blank
        if header is None:
            if all(_is_number(c) for c in cells):
                raise InputError(f"{path}: line {lineno}: no header row (expected e.g. 'threads,time')")
            header = cells
            yield "header", lineno, cells
            continue
        if len(cells) != len(header):
            raise InputError(f"{path}: line {lineno}: {counted(len(cells), 'cell')}, but the header has "
                             f"{counted(len(header), 'column')}")
        any_row = True
        yield "row", lineno, cells
    if not saw_content:
        raise InputError(f"{path}: file is empty")
    if header is None:
        raise InputError(f"{path}: no header row (expected e.g. 'threads,time')")
    if not any_row:
        raise InputError(f"{path}: no data rows after the header")


_CHUNK = 1 << 20  # characters split into lines at a time


def text_lines(text: str) -> Iterator[str]:
    """``text.splitlines()``, a chunk at a time: the list of a large file's lines was most
    of the reader's memory.  Each chunk but the last ends just after a newline, so no line
    break (``\r\n`` included) is cut in two and the lines are the same."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK)
        end = len(text) if end < 0 else end + 1
        yield from text[start:end].splitlines()
        start = end


DELIMITERS = ",;\t"  # what spreadsheets and shell tools write (CSV, European CSV, TSV)
_FIELD_LIMIT = csv.field_size_limit()
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+(?:[eE][+-]?\d+)?")


def _delimiter(text: str) -> str:
    """The header row's most frequent of ``DELIMITERS`` (a comma where it has none)."""
    for line in text_lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            counts = [(line.count(d), -i, d) for i, d in enumerate(DELIMITERS)]
            best = max(counts)
            return best[2] if best[0] > 0 else ","
    return ","


def read_measurements(path: str, metric: str | None = None) -> Measurements:
    """Load a measurement CSV (or a sweep result's JSON); raises ``InputError`` (one line)
    on any bad input."""
    return read_curve(path, metric)[0]


def read_curve(path: str, metric: str | None = None) -> tuple[Measurements, str]:
    """``read_measurements`` and what the counts are (``count_unit``: the CSV's count
    column, ``csv_count_unit``, or the sweep result's ``count``)."""
    from ..sweepresult import count_unit, parse_sweep_json
    from .sweepjson import looks_like_json, sweep_measurements

    text, name = read_text(path), shown(path)
    if looks_like_json(name, text):
        check_metric(metric)
        result = parse_sweep_json(text, name)
        return sweep_measurements(result, name, metric), count_unit(result)
    return _parse_csv(text, name, metric)


def parse_csv_measurements(text: str, name: str, metric: str | None = None) -> Measurements:
    """The measurement CSV ``text`` read from ``name`` (as messages show it)."""
    return _parse_csv(text, name, metric)[0]


def csv_count_unit(column: str) -> str:
    """What the counts of a CSV whose count column is named ``column`` are: a unit
    ``count_unit_of`` knows (``ranks`` for an MPI curve), else threads (``n``, ``count``:
    corecast's CSV counts threads unless its header says otherwise)."""
    unit = count_unit_of(column)
    return unit if unit in COUNT_UNITS.values() else "threads"


def _parse_csv(text: str, name: str, metric: str | None) -> tuple[Measurements, str]:
    """The measurement CSV ``text`` and its count column's unit (``csv_count_unit``)."""
    from ...model.curve.entities import Measurements  # numpy: only once measurements are built

    check_metric(metric)
    # The rows are read into a float array per column as they come, never kept as text (a
    # list of 600,000 rows' cells took 290 MB for a 7 MB file).  Errors keep their order:
    # the table's shape anywhere in the file, then the header, the metric, and the first
    # bad cell of the count, value, stall and size columns, in that order.
    table: Table | None = None
    meta: list[tuple[int, str, str]] = []
    columns: list[array] = []
    bad: dict[int, tuple[int, str]] = {}  # column -> its first refused cell (line, text)
    header_error: InputError | None = None
    for kind, lineno, item in scan_table(text, name):
        if kind == "meta":
            meta.append((lineno, *item))
        elif kind == "header":
            table = Table(name, item, lineno, [], meta)
            try:
                value_col, stall_cols, size_cols = _classify_columns(table)
            except InputError as e:  # said once the rest of the file's shape is known good
                header_error = e
                continue
            kinds = ["count"] + ["other"] * (len(item) - 1)
            kinds[value_col] = "value"
            for i in stall_cols.values():
                kinds[i] = "stall"
            for i in size_cols.values():
                kinds[i] = "size"
            columns = [array("d") for _ in item]
        elif header_error is None:
            for i, raw in enumerate(item):
                try:
                    x = float(raw)
                except ValueError:
                    x = math.nan
                if "_" in raw or not math.isfinite(x) or not _allowed(kinds[i], x):
                    bad.setdefault(i, (lineno, raw))
                columns[i].append(x)
    if header_error is not None:
        raise header_error
    assert table is not None  # scan_table raised where the file has no header
    metric = _resolve_metric(table, table.header[value_col], metric)
    for i in [0, value_col, *stall_cols.values(), *size_cols.values()]:
        if i in bad:
            _cell_error(table, *bad[i][:1], i, bad[i][1], kinds[i])
    counts, values = columns[0], columns[value_col]
    stalls = {name: columns[i] for name, i in stall_cols.items()}
    sizes = {name: columns[i] for name, i in size_cols.items()}
    try:
        data = Measurements.from_samples(counts, values, metric, stalls=stalls, sizes=sizes)
    except InputError as e:  # our checks should pre-empt these; keep the file name anyway
        raise InputError(f"{name}: {e}") from None
    return data, csv_count_unit(table.header[0])


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
                f"{where}: unknown column {name!r} (expected time, seconds, time_s, runtime, elapsed, "
                "wall, throughput, ops, value, stall:NAME or size:NAME)"
            )
    if value_col is None:
        # `threads|time` or `threads time` is one cell, the count column's name
        apart = (f": the header is one cell, {quoted(header[0])} (separate the cells with commas, tabs or "
                 "semicolons)" if len(header) == 1 and header[0].isprintable() and any(c in header[0] for c in " |:")
                 else "")
        raise InputError(
            f"{path}: line {table.header_line}: no value column "
            f"(name one column time, seconds, throughput, ops or value){apart}"
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
        if m not in ("time", "throughput"):
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


def finite_number(text: str, where: str) -> float:
    """``text`` as a finite float; otherwise an InputError starting with ``where``."""
    try:
        if "_" in text:  # Python's float takes 1_000; a CSV number never has one
            raise ValueError
        x = float(text)
    except ValueError:
        raise InputError(f"{where}: {quoted(text)} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{where}: {quoted(text)} is not a finite number")
    return x


def _allowed(kind: str, x: float) -> bool:
    if kind == "count":
        return 1 <= x <= MAX_COUNT and x == int(x)
    if kind in ("value", "size"):
        return x > 0
    return kind != "stall" or x >= 0


def _cell_error(table: Table, line: int, col: int, raw: str, kind: str) -> None:
    """Raises the InputError for a cell the CSV reader refused (where it is, is written out
    only for an error: on a file of 10^6 rows that took a third of the reading)."""
    where = f"{table.path}: line {line}: column {table.header[col]!r}"
    if not raw:
        raise InputError(f"{where}: empty cell")
    finite_number(raw, where)  # not a (finite) number
    if kind == "count":
        x = float(raw)
        if x >= 1 and x == int(x):
            raise InputError(f"{where}: count {over_max_count(raw)}")
        raise InputError(f"{where}: count {raw!r} must be a whole number >= 1")
    if kind in ("value", "size"):
        raise InputError(f"{where}: {raw!r} must be positive")
    raise InputError(f"{where}: {raw!r} must not be negative")


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return "_" not in cell


# ---------------------------------------------------------------- its reader


def _load_csv(files: list[tuple[str, str]], metric: str | None = None, callpath: str | None = None,
              profile_metric: str | None = None, count_attribute: str | None = None) -> list[Series]:
    ((name, text),) = files
    data, unit = _parse_csv(text, name, metric)
    # A count column named ranks (an MPI curve) labels the table, the JSON's count_unit
    # and the plot so, as an Extra-P parameter's name does; it was called threads.
    return one_curve(data, name, callpath, profile_metric, unit, count_attribute)


CSV = Reader(
    "csv", CURVES, "a CSV",
    "corecast's measurement CSV: a count column, one value column (`time`, `throughput`, `value`), "
    "optional `stall:NAME` and `size:NAME` columns",
    "anything no reader above claimed (the fallback: its parser says what is wrong)",
    lambda s: True, _load_csv)
