"""The user-facing error type, in a module of its own so that the file readers
(``corecast.io.fileio``) and the runtime model inside profiled programs can raise it
without importing numpy."""
from __future__ import annotations


class InputError(ValueError):
    """Bad or insufficient input; the message is one line meant for the user."""


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and its noun, singular for one: "1 rank", "3 ranks", "2 processes"."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def article(n: int) -> str:
    """"a" or "an" before the number ``n`` as it is read aloud: an 8-core, an 11-core, an
    18-core, an 80-core, an 800-core machine; a 16-core one."""
    digits = str(abs(int(n)))
    lead = digits[: len(digits) % 3 or 3]  # the group read first ("eleven" thousand ...)
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"
