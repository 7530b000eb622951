"""The method registry: each method maps measurements to a ``Fit``; a method module adds
itself with ``@register``.  Apart from the package's ``__init__`` (which imports every
method module to fill it) so that those modules import it without an import circle."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..entities import Fit, InputError, Measurements

FitFunction = Callable[[Measurements, float], Fit]  # (data, nmax) -> Fit
# The start of the warning that stall columns went unused: by a method that does not read
# them (``unread_columns``), or by auto's members (``corecast sweep`` says why ESTIMA could
# not use them in a line of its own and leaves this one out).
STALL_COLUMNS = "stall:* columns"


@dataclass(frozen=True)
class Method:
    name: str
    summary: str
    min_points: int  # distinct counts needed
    needs: tuple[str, ...]  # "stalls" and/or "sizes"
    fit: FitFunction
    reads: tuple[str, ...] = ()  # columns it reads when given, without needing them


METHODS: dict[str, Method] = {}


def register(name: str, summary: str, min_points: int, needs: tuple[str, ...] = (),
             reads: tuple[str, ...] = ()) -> Callable[[FitFunction], FitFunction]:
    def deco(fn: FitFunction) -> FitFunction:
        METHODS[name] = Method(name, summary, min_points, needs, fn, tuple(needs) + tuple(reads))
        return fn

    return deco


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(f"unknown method {name!r}; known: {', '.join(METHODS)}") from None


def check_usable(method: Method, data: Measurements) -> None:
    """Raise InputError when ``data`` cannot feed ``method``."""
    if "stalls" in method.needs and not data.stalls:
        raise InputError(f"method {method.name} needs stall:NAME columns")
    if "sizes" in method.needs and not data.sizes:
        raise InputError(f"method {method.name} needs size:NAME columns")
    used = data if "sizes" in method.needs else data.at_target_size()
    distinct = len(set(used.counts.tolist()))
    if distinct < method.min_points:
        raise InputError(
            f"method {method.name} needs at least {method.min_points} measured counts, got {distinct}"
        )


def unread_columns(method: Method, data: Measurements) -> list[str]:
    """The warning (none or one) that ``data``'s stall columns go unused by ``method``,
    which does not read them: a column the user gave must not vanish silently.  (A
    size-blind method already says which input size it predicts.)"""
    if not data.stalls or "stalls" in method.reads:
        return []
    readers = " and ".join(m.name for m in METHODS.values() if "stalls" in m.reads and m.name != "auto")
    return [f"{STALL_COLUMNS} unused: method {method.name} does not read them ({readers} do, and auto through estima)"]
