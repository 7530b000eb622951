"""A recorded value, read by the one rule every decoder of a recording line uses
(``record``): times and counts finite and >= 0, whole numbers whole, a per-category table
keyed by ``abi.STALLS``, a target no larger than a run predicts up to.  Each raises
ValueError naming the key (``tools.samples`` adds the file and line)."""
from __future__ import annotations

import math

from .abi import MAX_THREADS, STALLS


def number(rec: dict, key: str) -> float:
    """``rec[key]``: a finite number >= 0, as float."""
    v = rec[key]
    f = json_number(v)
    if f is None or f < 0:
        raise ValueError(f"{key} is {shown_value(v)}, not a number >= 0")
    return f


def whole(rec: dict, key: str) -> int:
    """``rec[key]``: a whole number >= 0."""
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{key} is {shown_value(v)}, not a whole number >= 0")
    if v >> 64:  # the library's counters are 64-bit; the models take them as floats
        raise ValueError(f"{key} is {shown_value(v)}, past the 64 bits a recorded count has")
    return v


def count(rec: dict, key: str) -> int:
    """``rec[key]``: a whole number >= 1, as a team's threads, a region's calls and a
    machine's cores or a world's ranks always are where the library writes them: a 0 is
    no run's, and raising it to 1 would replay a recording that is not what it says."""
    v = whole(rec, key)
    if v < 1:
        raise ValueError(f"{key} is 0, not a whole number >= 1 (the library never writes 0 there)")
    return v


def json_number(v: object) -> float | None:
    """``v`` as a float if it is a finite JSON number; None where it is no number, a boolean,
    not finite, or an integer past float range (which ``math.isfinite`` would raise
    OverflowError on).  Every reader of a decoded JSON value uses this one rule."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def shown_value(v: object, most: int = 40) -> str:
    """``v`` as an error quotes it: its repr, cut short (a 400-digit integer)."""
    text = repr(v)
    return text if len(text) <= most else text[:most] + "..."


def target(rec: dict, key: str) -> int:
    """A recorded target: the library predicts up to CC_MAX_THREADS (CORECAST_TARGET's
    range); a larger one is no run's, and replaying up to it would not end."""
    v = max(1, whole(rec, key))
    if v > MAX_THREADS:
        raise ValueError(f"{key} is {v}, past the {MAX_THREADS} threads a run predicts up to")
    return v


def per_category(rec: dict, key: str, kind: type = float) -> dict:
    """``rec[key]``, an object of per-category values, as a table of every ``STALLS`` name
    (0 where the line has none)."""
    table = rec.get(key) or {}
    if not isinstance(table, dict):
        raise ValueError(f"{key} is not an object")
    return {name: (number if kind is float else whole)(table, name) if name in table else kind(0)
            for name in STALLS}
