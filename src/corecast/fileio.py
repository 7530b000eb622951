"""Files in and out: the one reader and the one writer every corecast command uses
(see "Files in and out" below), and the measurement tables they read.

Measurement CSV format: optional ``#`` comment lines, a header row, then one row per run.
The first column is the count (threads, cores, processes: any name).  Exactly one value
column: ``time``/``seconds`` (time metric), ``throughput``/``ops`` (throughput metric) or
``value`` (metric from the ``metric`` argument or a ``# ..., metric: time, ...`` comment).
Optional ``stall:NAME`` and ``size:NAME`` columns.  Repeated counts are repetitions.

Every problem raises ``InputError`` with one line naming the file and the line/column.

A ``corecast sweep`` result (a ``.json`` file, or any file starting with ``{``) is read
too: see "Sweep JSON input" at the end of this module.

Standard library only at import time: the runtime reads machine files with it inside
profiled programs (numpy is imported where measurements are built).
"""
from __future__ import annotations

import csv
import errno
import json
import math
import os
import re
import stat
import sys
import tempfile
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable

from . import settings
from .errors import InputError

if TYPE_CHECKING:
    from .entities import Measurements

# ---------------------------------------------------------------- files in and out
#
# Every file corecast's Python side reads goes through ``read_bytes``/``read_text`` and
# every file it writes through ``write_file`` (whole files) or ``append_lines`` (JSON
# Lines), so the rules hold everywhere:
# - ``-`` is standard input or output;
# - a file is opened once (a FIFO works) and read up to a size limit
#   (``CORECAST_MAX_INPUT_MB``, default 64 MiB): ``/dev/zero`` is an error, not a
#   MemoryError;
# - a regular file or a new path is replaced atomically (temporary file in the same
#   folder, then a rename); a symlink's target is replaced and the link stays; FIFOs,
#   character devices and /dev/stdout (/dev/fd/N) are written in place, never replaced
#   or unlinked;
# - every failure is an ``InputError`` (``OutputError`` when writing) whose one line
#   names the file (printably).

DEFAULT_MAX_INPUT_MB = 64
STDIO = "-"
# Paths that name one of this process's open descriptors: written through it (its file
# offset and append mode are the caller's), as a shell redirection would be.
_FD_ALIASES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = re.compile(r"/dev/fd/(\d+)|/proc/(?:self|thread-self|(\d+))/fd/(\d+)")


class OutputError(InputError):
    """A file corecast cannot write; the one-line message names it."""


def printable(text: str) -> str:
    """``text`` with every character that is not printable (control characters such as
    ESC, bidirectional overrides, undecodable bytes of a file name) written as Python
    writes it in a string literal (``\\x1b``, ``\\u202e``, ``\\udcff``), so that names
    from outside cannot move the cursor or recolour a terminal.  Tables escape each line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown(path: str | os.PathLike) -> str:
    """``path`` as error messages show it."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return "standard input" if path == STDIO else printable(path)


def input_limit() -> int:
    """The most bytes one input file may have: ``CORECAST_MAX_INPUT_MB`` MiB (default 64)."""
    raw = os.environ.get(settings.MAX_INPUT_MB, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if not (math.isfinite(mb) and mb > 0):
        raise InputError(f"{settings.MAX_INPUT_MB}={printable(raw)!r}: not a positive number of MiB")
    return math.ceil(mb * (1 << 20))


def _too_large(path: str, limit: int) -> InputError:
    return InputError(f"{shown(path)}: larger than the input limit of {limit / (1 << 20):.4g} MiB "
                      f"(set {settings.MAX_INPUT_MB} to raise it)")


def _read_error(path: str, exc: OSError) -> InputError:
    if isinstance(exc, FileNotFoundError):
        reason = "no such file"
    elif isinstance(exc, IsADirectoryError):
        reason = "is a directory"
    elif isinstance(exc, PermissionError):
        reason = "permission denied"
    else:
        reason = f"cannot read: {exc.strerror or exc}"
    return InputError(f"{shown(path)}: {reason}")


def read_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The contents of ``path`` (``-``: standard input), read once and at most ``limit``
    bytes (default ``input_limit()``); InputError with one line naming the file otherwise."""
    path = os.fspath(path)
    limit = input_limit() if limit is None else limit
    if path == STDIO:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError("standard input: not open")
        try:
            data = stream.read(limit + 1)
        except OSError as exc:
            raise _read_error(path, exc) from None
    else:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    raise _too_large(path, limit)  # before reading any of it
                data = f.read(limit + 1)  # a device or FIFO says its size only by ending
        except OSError as exc:
            raise _read_error(path, exc) from None
    if len(data) > limit:
        raise _too_large(path, limit)
    return data


def read_tail(path: str | os.PathLike, size: int) -> bytes:
    """The last ``size`` bytes of the regular file ``path`` (the end of a log, whatever
    its length); InputError with one line naming the file otherwise."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > size:
                f.seek(st.st_size - size)
            return f.read(size)
    except OSError as exc:
        raise _read_error(path, exc) from None


def read_text(path: str | os.PathLike, limit: int | None = None) -> str:
    """``read_bytes`` decoded as UTF-8 (a leading byte-order mark, as spreadsheets write
    it, is dropped); text that is not UTF-8 is an InputError naming the line."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"{shown(path)}: line {line}: not UTF-8 text") from None


def parse_json(text: str, path: str | os.PathLike, what: str = "valid JSON", hint: str = "") -> object:
    """``text`` (read from ``path``) parsed as one JSON value; otherwise an InputError of
    one line naming the file, the place and "not WHAT", with ``hint`` (what was expected)
    after a second value (e.g. JSON Lines given where one object belongs)."""
    name = shown(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            raise InputError(f"{name}: line {e.lineno}: more than one JSON value" + (f"; {hint}" if hint else "")) \
                from None
        raise InputError(f"{name}: line {e.lineno}: column {e.colno}: not {what}: {e.msg}") from None
    except RecursionError:
        raise InputError(f"{name}: not {what}: nested too deeply") from None
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise InputError(f"{name}: not {what}: {str(e).split(';')[0]}") from None


def _fd_of(path: str) -> int | None:
    """The descriptor of this process that ``path`` names (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N), directly or through symlinks, or None."""
    for _ in range(40):  # the kernel's limit on symlink hops
        if path in _FD_ALIASES:
            return _FD_ALIASES[path]
        m = _FD_PATH.fullmatch(path)
        if m and (m[2] is None or int(m[2]) == os.getpid()):
            return int(m[1] or m[3])
        try:
            link = os.readlink(path)
        except OSError:  # not a symlink (or not there)
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return None


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (undecodable bytes of a file name or argument)
    become U+FFFD, as UTF-8 cannot hold them."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _flush_std_streams() -> None:
    """Python's buffered standard streams first, so that output keeps its order."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass  # closed or replaced


def write_file(path: str | os.PathLike, data: bytes | str, what: str = "") -> None:
    """Write ``data`` (str: as UTF-8) to ``path``, the one way corecast writes a file.

    A regular file or a new path is replaced atomically: a failure leaves the old file
    (or nothing) there, never half of the new one.  A symlink is followed and its target
    replaced; the link stays.  A FIFO or character device is written in place and ``-``
    (or /dev/stdout, /dev/fd/N) goes to that descriptor.  Block devices, sockets and
    folders are refused.  ``what`` (e.g. "plot") words the error: one line, OutputError."""
    path = os.fspath(path)
    if isinstance(data, str):
        data = _utf8(data)
    where = f"cannot write {what}".rstrip()
    if path == STDIO:
        try:
            stream = getattr(sys.stdout, "buffer", None)
            if stream is None:  # a text-only replacement of sys.stdout
                sys.stdout.write(data.decode("utf-8", errors="replace"))
            else:
                sys.stdout.flush()
                stream.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader went away: the CLI stops quietly, as for any other output
        except OSError as exc:
            raise OutputError(f"standard output: {where}: {exc.strerror or exc}") from None
        return
    try:
        fd = _fd_of(path)
        if fd is not None:
            _flush_std_streams()
            _write_all(fd, data)
            return
        real = os.path.realpath(path)  # a symlink: replace its target, keep the link
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            mode = None
        if mode is None or stat.S_ISREG(mode):
            _replace(real, data, mode)
        elif stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            with open(real, "wb", buffering=0) as f:  # O_TRUNC is a no-op on these
                _write_all(f.fileno(), data)
        else:
            kinds = {stat.S_IFDIR: "a folder", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}
            raise OutputError(f"{shown(path)}: {where}: {kinds.get(stat.S_IFMT(mode), 'not a regular file')}")
    except OSError as exc:
        raise OutputError(f"{shown(path)}: {where}: {exc.strerror or exc}") from None


def _replace(path: str, data: bytes, mode: int | None) -> None:
    """Write a temporary file next to ``path`` and rename it over ``path``."""
    fd, tmp = tempfile.mkstemp(prefix=".corecast-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the rename must not land before the data
        if mode is None:
            # mkstemp makes the file private (0600); give it what a plain open() would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:  # a replaced file keeps its permissions
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def hostile_symlink(path: str) -> bool:
    """The fs.protected_symlinks rule, as the preload library applies it to its output: a
    symlink in a world-writable sticky directory (/tmp) owned by neither that directory's
    owner nor us is not followed (someone else's link there may point at any of our files)."""
    try:
        link = os.lstat(path)
        if not stat.S_ISLNK(link.st_mode):
            return False
        parent = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return False
    shared = parent.st_mode & stat.S_ISVTX and parent.st_mode & stat.S_IWOTH
    return bool(shared) and link.st_uid not in (parent.st_uid, os.geteuid())


APPEND_PATIENCE_S = 5.0  # a reader that stops reading gets this long for all the lines


def append_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Append ``lines`` (each ending in a newline) to ``path``, creating it; the one way
    corecast appends JSON Lines, with the preload library's rules for its own output
    (this runs at the exit of profiled programs): O_APPEND and one ``write`` per line, so
    that lines of several processes never interleave; a FIFO without a reader is an error
    rather than a wait, and a reader that stops reading gets ``APPEND_PATIENCE_S`` in all;
    a symlink is followed unless ``hostile_symlink``.  Failures are one-line OutputErrors."""
    import select
    import time

    path = os.fspath(path)
    if hostile_symlink(path):
        raise OutputError(f"{shown(path)}: cannot write: a symlink in a shared sticky directory "
                          "owned by someone else; not followed")
    fd = None
    try:
        named = _fd_of(path)
        if named is not None:
            _flush_std_streams()
            fd = os.dup(named)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
        deadline = time.monotonic() + APPEND_PATIENCE_S
        for line in lines:
            view = memoryview(_utf8(line))
            while view:
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OutputError(f"{shown(path)}: cannot write: its reader stopped reading") from None
                    select.select([], [fd], [], min(left, 0.2))
    except OSError as exc:
        reason = "no reader on the FIFO" if exc.errno == errno.ENXIO else exc.strerror or exc
        raise OutputError(f"{shown(path)}: cannot write: {reason}") from None
    finally:
        if fd is not None:
            os.close(fd)


# ---------------------------------------------------------------- measurement tables

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
    return parse_table(read_text(path), shown(path))


def parse_table(text: str, path: str) -> Table:
    """``read_table`` of ``text`` read from ``path`` (as messages show it)."""
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
        try:
            cells = [c.strip() for c in next(csv.reader([line]))]
        except csv.Error as e:  # e.g. a cell beyond the csv module's field size limit
            raise InputError(f"{path}: line {lineno}: not a CSV row: {e}") from None
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
    return parse_measurements(read_text(path), shown(path), metric)


def parse_measurements(text: str, name: str, metric: str | None = None) -> Measurements:
    """``read_measurements`` of ``text`` read from ``name`` (as messages show it)."""
    from .entities import METRICS, Measurements  # numpy: only once measurements are built

    if metric is not None and metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use time or throughput")
    if _looks_like_json(name, text):  # see "Sweep JSON input" below
        return sweep_measurements(parse_sweep_json(text, name), name, metric)
    table = parse_table(text, name)
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
        raise InputError(f"{name}: {e}") from None


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
        x = float(text)
    except ValueError:
        raise InputError(f"{where}: {text[:40]!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{where}: {text!r} is not a finite number")
    return x


def _cell(table: Table, line: int, cells: list[str], col: int, kind: str) -> float:
    """One numeric cell, checked for what its column allows."""
    raw = cells[col]
    where = f"{table.path}: line {line}: column {table.header[col]!r}"
    if not raw:
        raise InputError(f"{where}: empty cell")
    x = finite_number(raw, where)
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


def _looks_like_json(path: str, text: str) -> bool:
    """A ``.json`` name, or a first non-blank character ``{`` (a CSV never starts so)."""
    return path.lower().endswith(".json") or text.lstrip().startswith("{")


def load_sweep_json(path: str) -> dict:
    """The sweep result object in ``path`` with its "measured" list checked; raises
    ``InputError`` (one line naming the file) on anything else."""
    return parse_sweep_json(read_text(path), shown(path))


def parse_sweep_json(text: str, path: str) -> dict:
    """``load_sweep_json`` of ``text`` read from ``path`` (as messages show it)."""
    if not text.strip():
        raise InputError(f"{path}: file is empty")
    obj = parse_json(text, path, hint=SWEEP_HINT)
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
    return sweep_measurements(load_sweep_json(path), shown(path), metric)


def sweep_measurements(result: dict, path: str, metric: str | None = None) -> Measurements:
    """``read_sweep_measurements`` of a checked sweep result read from ``path``."""
    from .entities import Measurements  # numpy: only once measurements are built

    if metric is not None and metric != "time":
        raise InputError(f"{path}: --metric {metric} conflicts with a sweep result (its times are a time metric)")
    measured = result["measured"]
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
    if json_number(n) is None or n < 1 or n != int(n):
        raise InputError(f"{where}: \"threads\" {_short(n)} must be a whole number >= 1")
    t = entry["time_s"]
    if json_number(t) is None or t <= 0:
        raise InputError(f"{where}: \"time_s\" {_short(t)} must be a positive number")
    d = entry.get("spread_s")
    if d is not None and (json_number(d) is None or d < 0):
        raise InputError(f"{where}: \"spread_s\" {_short(d)} must be a number >= 0")
    stalls = entry.get("stalls_s")
    if stalls is None:
        return
    if not isinstance(stalls, dict):
        raise InputError(f"{where}: \"stalls_s\" is a JSON {_json_type(stalls)}, not an object")
    for name, s in stalls.items():
        if not name.strip():
            raise InputError(f"{where}: \"stalls_s\" has an empty category name")
        if json_number(s) is None or s < 0:
            raise InputError(f"{where}: \"stalls_s\" {_short(name)}: {_short(s)} must be a number >= 0")


def json_number(x: object) -> float | None:
    """``x`` as a float if it is a finite JSON number (not a boolean), else None.
    (``finite_number`` parses text; this checks an already-decoded JSON value.)"""
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
