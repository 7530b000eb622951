"""A recording's format: the JSON Lines a run wrote (``corecast run --json-out``,
``CORECAST_OUTPUT``), read as line-numbered JSON values.  What the lines mean is
``recording.record``'s (decoded into processes by ``tools.samples``); this module
only reads the format, so that I/O holds every reader (``docs/recording.md``)."""
from __future__ import annotations

from typing import Iterator

from ...errors import InputError
from ..fileio import CUT_SHORT, parse_json, read_bytes, read_text, shown
from .registry import RECORDING, Reader, Sniff

def json_lines(path: str, cut_short_ok: bool = False) -> Iterator[tuple[int, object]]:
    """(line number, decoded value) of each non-blank line of a JSON Lines file; a line
    that is not JSON raises ``InputError`` naming the file and line.  ``cut_short_ok``: a
    run's own output, where a killed process may have left a line cut short (or bytes
    that are not UTF-8): such lines are skipped."""
    if cut_short_ok:
        text = read_bytes(path).decode("utf-8", errors="replace")
    else:
        text = read_text(path)
    return lines_of(text, path, cut_short_ok)


def lines_of(text: str, path: str, cut_short_ok: bool = False) -> Iterator[tuple[int, object]]:
    """``json_lines`` of ``text`` read from ``path``."""
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield no, parse_json(line, path, "JSON", line=no)
        except InputError as e:
            if cut_short_ok:
                continue
            if no == len(lines) and CUT_SHORT in str(e) and not text.endswith(("\n", "\r")):
                # the file ends inside its last line: a run stopped while writing it
                raise InputError(f"{shown(path)}: line {no}: not JSON: cut short, the file ends inside it (a run "
                                 "stopped while writing?)" + ("; delete it to read the lines before"
                                                              if no > 1 else "")) from None
            raise


def _load(files: list[tuple[str, str]]) -> Iterator[tuple[int, object]]:
    ((name, text),) = files
    return lines_of(text, name)  # lazily: a bad record is told before a later bad line


def _is_recording(s: Sniff) -> bool:
    first = s.first_line_json
    return isinstance(first, dict) and "event" in first


READER = Reader(
    "recording", RECORDING, "a recording",
    "the JSON Lines a run wrote (`corecast run --json-out`, `CORECAST_OUTPUT`): its region, "
    "process, summary and kernel records, every schema (`docs/recording.md`)",
    "JSON Lines whose first line is an object with `event` (the only reader of its kind: "
    "its parser says what is wrong with any other file)",
    _is_recording, _load)
