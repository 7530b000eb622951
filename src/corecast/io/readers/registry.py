"""The input formats: one ``Reader`` per format, as Extra-P's ``FileReader`` subclasses
(name, file filter, CLI flag, loader).

A reader says what it yields (``CURVES``: measured curves, which ``corecast predict``
fits; ``RECORDING``: a run's JSON Lines, which ``replay``, ``merge`` and ``numa --replay``
read; ``NUMA_SAMPLE``: a program's memory traffic, which ``numa --sample`` reads), what it reads and how it is recognised (both for ``docs/file-formats.md``, which
``tests/test_file_formats.py`` checks against this registry), its detector and its
loader.  Its name is the ``--format NAME`` of the commands that read what it yields;
without ``--format`` the readers of that kind are tried in registration order
(``readers/__init__.py`` registers them) and the first whose detector says yes reads the
file.  ``read`` is the one dispatch: every file is read once (``fileio.read_text``), then
detected and loaded from that text; a reader ``by_path`` (CUBE: a binary archive that its
library opens by name, and folders of them) is handed the paths instead.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Sequence

from ...errors import InputError
from ..fileio import read_text, shown

CURVES = "curves"        # -> list[Series]: corecast predict
RECORDING = "recording"  # -> (line number, JSON value) each line: replay, merge, numa --replay
NUMA_SAMPLE = "numa sample"  # -> model.numa.Rates (option: machine): numa --sample, --co-run
KINDS = (CURVES, RECORDING, NUMA_SAMPLE)
NOT_JSON = object()  # Sniff.json of text that is not one JSON value


class Sniff:
    """A file's text as the detectors look at it; the JSON parse is done once for all."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    @cached_property
    def head(self) -> str:
        return self.text.lstrip()

    @cached_property
    def first_word(self) -> str:
        """The first word of the first line that is neither blank nor a ``#`` comment."""
        return next((line.split(None, 1)[0] for line in self.head.splitlines()
                     if line.strip() and not line.lstrip().startswith("#")), "")

    @cached_property
    def json(self) -> object:
        """The text as one JSON value, or ``NOT_JSON``."""
        if not self.head.startswith(("{", "[")):
            return NOT_JSON
        try:
            return json.loads(self.text)
        except (ValueError, RecursionError):
            return NOT_JSON

    @cached_property
    def first_line_json(self) -> object:
        """The first line as one JSON value (JSON Lines), or ``NOT_JSON``."""
        try:
            return json.loads(self.head.split("\n", 1)[0])
        except (ValueError, RecursionError):
            return NOT_JSON


@dataclass(frozen=True)
class Reader:
    """One input format."""

    name: str       # --format NAME
    yields: str     # CURVES or RECORDING
    title: str      # the format in a sentence ("a CSV", "Caliper profiles")
    reads: str      # what it reads (docs/file-formats.md)
    detection: str  # how auto-detection recognises it (docs/file-formats.md)
    detect: Callable[[Sniff], bool]
    load: Callable[..., Any]  # (files: [(name as shown, text)], **options) -> what it yields
    suffixes: tuple[str, ...] = ()  # names that are this format whatever their content
    several: bool = False           # reads several files at once (one per count)
    require: Callable[[str], None] | None = None  # before reading: a missing package, one line
    # Opens its inputs itself (binary archives a library reads by name, and folders of
    # them): load gets (name as shown, path) pairs, and a folder is its input by name.
    by_path: bool = False

    @property
    def flag(self) -> str:
        return f"--format {self.name}"

    def claims(self, path: str) -> bool:
        """``path`` is this format by its name alone (its suffix, or a folder)."""
        return bool(self.suffixes and path.lower().endswith(self.suffixes)) or (
            self.by_path and path != "-" and os.path.isdir(path))


READERS: dict[str, Reader] = {}


def register(reader: Reader) -> Reader:
    """Add ``reader`` (after those registered before it, in detection order)."""
    if reader.name in READERS:
        raise ValueError(f"a reader named {reader.name!r} is already registered")
    if reader.yields not in KINDS:
        raise ValueError(f"reader {reader.name!r} yields {reader.yields!r}, not one of {KINDS}")
    READERS[reader.name] = reader
    return reader


def readers(yields: str) -> list[Reader]:
    """The readers of that kind, in detection order."""
    return [r for r in READERS.values() if r.yields == yields]


def detect(path: str, text: str, yields: str) -> Reader:
    """The first reader of that kind whose detector recognises ``text``; the last one
    registered is the fallback (its parser words best what is wrong)."""
    candidates = readers(yields)
    sniff = Sniff(path, text)
    return next((r for r in candidates if r.detect(sniff)), candidates[-1])


def read(paths: Sequence[str], yields: str, name: str | None = None, **options: Any) -> Any:
    """What the files ``paths`` hold, read by the reader ``name`` or the one detected;
    several files only for a reader that reads several (each of that format).
    ``InputError`` (one line naming the file) on bad input."""
    if not paths:
        raise InputError("no input file given")
    candidates = readers(yields)
    forced = READERS.get(name) if name else None
    if name and (forced is None or forced.yields != yields):
        raise InputError(f"unknown format {name!r}: use one of {', '.join(r.name for r in candidates)}")
    files = []
    chosen = []
    for path in paths:
        by_name = forced or next((r for r in candidates if r.claims(path)), None)
        if by_name is not None and by_name.require is not None:
            by_name.require(path)  # before reading a large file for nothing
        if by_name is not None and by_name.by_path:
            files.append((shown(path), path))
            chosen.append(by_name)
            continue
        text = read_text(path)
        if forced is None and len(candidates) == 1:
            reader = candidates[0]  # nothing to tell apart: its parser says what is wrong
        else:
            reader = by_name or detect(path, text, yields)
        files.append((shown(path), text))
        chosen.append(reader)
    if len(paths) > 1 and not all(r.several and r is chosen[0] for r in chosen):
        odd = next((p for p, r in zip(paths, chosen) if not r.several), paths[-1])
        many = " or ".join(r.title for r in candidates if r.several)
        single = [r.title for r in candidates if not r.several]
        raise InputError(f"{shown(odd)}: several input files must all be {many} (one per count); "
                         f"give {', '.join(single[:-1])} or {single[-1]} on its own")
    return chosen[0].load(files, **options)
