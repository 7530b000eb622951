"""ESTIMA's stall plugins (Chatzopoulos, Dragojević and Guerraoui, "ESTIMA: Extrapolating
ScalabiliTy of In-Memory Applications", ACM TOPC 2017): an extra stall category read from
a report.

A plugin (``StallPlugin``, declared in a ``--stall-plugin`` file) is a source (a run's
stdout, its stderr, or a file), a regular expression with exactly one numeric capture
group, and a reducer over all matches.  Nothing is evaluated: the capture is parsed with
``float``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from ..errors import InputError
from ..recording.abi import STALLS
from .fileio import parse_json, read_bytes, read_text

REDUCERS: dict[str, Callable[[Sequence[float]], float]] = {
    "sum": lambda v: math.fsum(v),
    "min": min,
    "max": max,
    "mean": lambda v: math.fsum(v) / len(v),
}
SOURCES = ("stdout", "stderr", "file")
KEYS = {"name", "source", "path", "pattern", "reducer"}


@dataclass(frozen=True)
class StallPlugin:
    """One ``--stall-plugin`` entry: an extra stall category, ``name``, read after every run."""

    name: str
    source: str  # stdout | stderr | file
    pattern: str
    reducer: str = "sum"
    path: Optional[str] = None  # source "file"; may contain the sweep's {threads}

    def read(self, path: Union[str, Path, None] = None, text: Optional[str] = None) -> float:
        """The plugin's value in the file ``path`` or the captured ``text`` (``read_stall``)."""
        return read_stall(self.pattern, self.reducer, path=path, text=text)


def _compiled(pattern: str, what: str) -> re.Pattern:
    """``pattern`` compiled, or InputError (``what`` names it) where it is not a regular
    expression with exactly one capture group."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise InputError(f"{what} is not a valid regular expression: {exc}") from None
    if regex.groups != 1:
        raise InputError(f"{what} must have exactly one capture group, has {regex.groups}")
    return regex


def parse_plugins(entries: object, origin: str = "stall plugin") -> list[StallPlugin]:
    """Validate decoded plugin declarations (a list of objects, or ``{"plugin": [...]}``)."""
    if isinstance(entries, dict):
        keys = [k for k in ("plugin", "plugins") if k in entries]
        if len(keys) != 1 or len(entries) != 1:
            raise InputError(f"{origin}: expected a list of plugins, or one 'plugin' list")
        entries = entries[keys[0]]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{origin}: expected a non-empty list of plugins")
    taken = set(STALLS)
    out: list[StallPlugin] = []
    for i, e in enumerate(entries, 1):
        where = f"{origin}: plugin {i}"
        if not isinstance(e, dict):
            raise InputError(f"{where} is not an object")
        unknown = sorted(set(e) - KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(KEYS))})")
        for key in ("name", "source", "pattern"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                raise InputError(f"{where}: {key!r} must be a non-empty string")
        name, source, pattern = e["name"].strip(), e["source"], e["pattern"]
        where = f"{origin}: plugin {name!r}"
        if name in taken:
            raise InputError(f"{where}: the name is already a measured category or another plugin's")
        taken.add(name)
        if source not in SOURCES:
            raise InputError(f"{where}: source {source!r} is not one of {', '.join(SOURCES)}")
        reducer = e.get("reducer", "sum")
        if reducer not in REDUCERS:
            raise InputError(f"{where}: reducer {reducer!r} is not one of {', '.join(REDUCERS)}")
        path = e.get("path")
        if source == "file":
            if not isinstance(path, str) or not path.strip():
                raise InputError(f"{where}: source 'file' needs a 'path'")
        elif path is not None:
            raise InputError(f"{where}: 'path' is only for source 'file'")
        _compiled(pattern, f"{where}: pattern")
        out.append(StallPlugin(name, source, pattern, reducer, path))
    return out


def load_plugins(path: str) -> list[StallPlugin]:
    """Read a plugin file: JSON, or TOML (``[[plugin]]`` tables) where tomllib exists."""
    text = read_text(path)
    if path.lower().endswith(".toml"):
        try:
            import tomllib  # Python 3.11+
        except ImportError:
            raise InputError(f"{path}: TOML plugin files need Python 3.11+; use JSON") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path}: not valid TOML: {exc}") from None
    else:
        data = parse_json(text, path)
    return parse_plugins(data, origin=path)


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
    regex = _compiled(pattern, f"stall pattern {pattern!r}")
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
