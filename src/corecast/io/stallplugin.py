"""ESTIMA's stall plugins (Chatzopoulos, Dragojević and Guerraoui, "ESTIMA: Extrapolating
ScalabiliTy of In-Memory Applications", ACM TOPC 2017): an extra stall category read from
a report.

A plugin is a file (or captured stdout/stderr text), a regular expression with exactly
one numeric capture group, and a reducer over all matches.  Nothing is evaluated: the
capture is parsed with ``float``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from ..model.curve.entities import InputError
from .fileio import read_bytes

REDUCERS: dict[str, Callable[[Sequence[float]], float]] = {
    "sum": lambda v: math.fsum(v),
    "min": min,
    "max": max,
    "mean": lambda v: math.fsum(v) / len(v),
}


def read_stall(
    pattern: str,
    reducer: str = "sum",
    path: Union[str, Path, None] = None,
    text: Optional[str] = None,
) -> float:
    """Reduce every match of ``pattern``'s single group in ``path`` (or ``text``).

    Raises InputError for an unknown reducer, a pattern that does not compile or has
    not exactly one capture group, an unreadable file, no match, or a capture that is
    not a finite number.
    """
    if reducer not in REDUCERS:
        raise InputError(f"unknown stall reducer {reducer!r}; use {', '.join(REDUCERS)}")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"stall pattern {pattern!r} is not a valid regular expression: {exc}") from None
    if regex.groups != 1:
        raise InputError(
            f"stall pattern {pattern!r} must have exactly one capture group, has {regex.groups}"
        )
    if (path is None) == (text is None):
        raise InputError("give a stall report as either a file path or captured text")
    source = "the captured text"
    if path is not None:
        source = str(path)
        try:
            text = read_bytes(path).decode("utf-8", errors="replace")
        except InputError as exc:  # names the file
            raise InputError(f"cannot read stall report {exc}") from None

    values = []
    for match in regex.finditer(text):
        raw = match.group(1)
        try:
            value = float(raw.strip()) if raw is not None else math.nan
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise InputError(f"stall pattern {pattern!r} captured {raw!r}, not a number")
        values.append(value)
    if not values:
        raise InputError(f"stall pattern {pattern!r} matches nothing in {source}")
    return float(REDUCERS[reducer](values))


@dataclass(frozen=True)
class StallPlugin:
    """A declared extra stall category: ``name`` is the column it feeds."""

    name: str
    pattern: str
    reducer: str = "sum"
    path: Optional[str] = None  # None: read from captured text passed to ``read``

    def read(self, text: Optional[str] = None) -> float:
        return read_stall(self.pattern, self.reducer, path=None if text is not None else self.path,
                          text=text)
