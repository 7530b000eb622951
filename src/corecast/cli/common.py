"""What every subcommand shares: the one-line error, the parser class, argument types and
the JSON printer.  Standard library only, so that importing the CLI stays cheap."""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from ..io.fileio import STDIO, file_key, printable, quoted

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn, Sequence

EXIT_ERROR = 2
EXIT_INTERRUPTED = 128 + signal.SIGINT  # a shell's status for a Ctrl-C'd command (130)


_sigint_seen = False


def raise_interrupt(signum: int, frame: object) -> NoReturn:
    """The SIGINT handler while a subcommand runs: KeyboardInterrupt, remembered, since a
    library may turn it into another error (numpy's import into an ImportError)."""
    global _sigint_seen
    _sigint_seen = True
    raise KeyboardInterrupt


def interrupt_unraisable(info: object) -> None:
    """``sys.unraisablehook`` while a subcommand runs: a KeyboardInterrupt that
    ``raise_interrupt`` raised where Python cannot let it propagate (a weakref callback in
    importlib's module locks, at an early Ctrl-C) is printed as "Exception ignored in" with
    a traceback, then swallowed.  It is delivered again instead, at the next line that can
    end the command; anything else goes to the default hook."""
    if isinstance(getattr(info, "exc_value", None), KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
        return
    sys.__unraisablehook__(info)


def sigint_seen() -> bool:
    """Whether ``raise_interrupt`` ran in this process."""
    return _sigint_seen


def die_of_sigint() -> NoReturn:
    """End this process as killed by SIGINT, as a well-behaved command does after Ctrl-C:
    a shell's ``for`` loop stops only when its command died of SIGINT, not on an exit status."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # a closed pipe or stream: nothing more to say there
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(EXIT_INTERRUPTED)  # not reached: the signal's default action ends the process


class CliError(Exception):
    """A one-line error for the user, optionally about a file."""

    def __init__(self, message: str, file: str | None = None):
        super().__init__(message)
        self.file = file

    def line(self) -> str:
        text = f"{self.file}: {self}" if self.file else str(self)
        return "corecast: error: " + printable(" ".join(text.split()))  # one line, no escape codes


class Parser(argparse.ArgumentParser):
    """argparse prints usage plus a message over several lines; we want one line.

    A subcommand's parser can declare arguments later (``declare_later``): they are added
    when that subcommand is parsed or its help is shown, not when any other one runs."""

    _later: Callable[[argparse.ArgumentParser], None] | None = None
    _checking = False

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:  # type: ignore[override]
        self._checking = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking = False

    def add_subparsers(self, **kwargs: Any) -> Any:  # type: ignore[override]
        self._checking = True
        try:
            return super().add_subparsers(**kwargs)
        finally:
            self._checking = False

    def _get_formatter(self) -> argparse.HelpFormatter:
        # add_argument makes a formatter only to check a metavar against its nargs, and
        # add_subparsers one to write the subcommands' prog ("corecast", far shorter than
        # any width): neither reads the terminal's width, and reading it (shutil, with bz2
        # and lzma) cost every `corecast run` 2.5 ms before the program started.
        if self._checking:
            return self.formatter_class(prog=self.prog, width=80)
        return super()._get_formatter()

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise CliError(f"{message} (see '{self.prog} --help')")

    def declare_later(self, declare: Callable[[argparse.ArgumentParser], None]) -> None:
        self._later = declare

    def _declare(self) -> None:
        declare, self._later = self._later, None
        if declare is not None:
            declare(self)

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._declare()
        return super().parse_known_args(args, namespace)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        # argparse hands a subcommand's unknown arguments up to the top parser, whose
        # error would point at 'corecast --help', which does not list the subcommand's
        # options: name the subcommand's own help instead.
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self._subcommand(getattr(parsed, "command", None)) or self
            owner.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def _subcommand(self, name: str | None) -> argparse.ArgumentParser | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]
        return None

    def format_usage(self) -> str:
        self._declare()
        return super().format_usage()

    def format_help(self) -> str:
        self._declare()
        return super().format_help()


# ---------------------------------------------------------------- argument types


def _plain(text: str) -> str:
    """``text`` stripped, where it is written in ASCII without '_': ``int`` and ``float``
    also read '1_0' as 10 and other scripts' digits, which a count is never written in."""
    plain = text.strip()
    if not plain.isascii() or "_" in plain:
        raise ValueError(text)
    return plain


def file_name(text: str) -> str:
    """An argument type: a file name; an empty one names no file (and would read as the
    option left out)."""
    if text == "":
        raise argparse.ArgumentTypeError("an empty file name (leave the option out to use none)")
    return text


def whole(text: str, minimum: int = 1) -> int:
    try:
        n = int(_plain(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a whole number") from None
    if n < minimum:
        raise argparse.ArgumentTypeError(f"{quoted(text)} must be at least {minimum}")
    return n


def whole_in(lowest: int, highest: int) -> Callable[[str], int]:
    """An argument type: a whole number in [lowest, highest] (what the library accepts)."""
    def check(text: str) -> int:
        n = whole(text, lowest)
        _checked(text, n <= highest, f"be at most {highest}")
        return n
    return check


def count(text: str) -> int:
    return whole(text, 1)


def seed(text: str) -> int:
    return whole(text, 0)


def count_list(text: str) -> list[int]:
    items = text.split(",")
    if not text.strip() or any(not i.strip() for i in items):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a comma-separated list of counts like 48,64")
    return [count(i) for i in items]


def number(text: str, what: str = "a number") -> float:
    try:
        return float(_plain(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not {what}") from None


def _checked(text: str, ok: bool, must: str) -> None:
    if not ok:
        raise argparse.ArgumentTypeError(f"{quoted(text)} must {must}")


def fraction(text: str) -> float:
    f = number(text)
    _checked(text, 0 < f <= 1, "be in (0, 1]")
    return f


def efficiency(text: str) -> float:
    f = number(text)
    _checked(text, 0 <= f < 1, "be in [0, 1)")
    return f


def noise(text: str) -> float:
    """A relative noise: the simulated performance is multiplied by 1 + noise * N(0, 1),
    below 0 far more often than not once noise passes 1 (tunesim.MAX_NOISE)."""
    from ..model.tuning.tunesim import MAX_NOISE

    f = number(text)
    _checked(text, 0 <= f <= MAX_NOISE, f"be a fraction from 0 to {MAX_NOISE:g} (e.g. 0.02: 2% noise)")
    return f


def seconds(text: str) -> float:
    s = number(text, "a number of seconds")
    _checked(text, math.isfinite(s) and s > 0, "be a positive number of seconds")
    return s


def command_of(argv: list[str]) -> list[str]:
    """The program's words after ``--`` (argparse keeps the ``--`` in a REMAINDER)."""
    return argv[1:] if argv[:1] == ["--"] else argv


def print_json(obj: dict) -> None:
    import json  # here: `corecast run` and `lib` print none

    # allow_nan=False: the output must be strict JSON for other tools to parse.
    print(json.dumps(obj, allow_nan=False))


def plot_to_stdout(args: argparse.Namespace) -> bool:
    """Whether ``--plot -`` sends the PNG to standard output: then the table stays off it
    (it would corrupt the PNG), and ``--json`` there too is an error."""
    if getattr(args, "plot", None) != STDIO:
        return False
    return stdout_taken(("--plot -", True), ("--json", args.json))


def stdout_taken(*outputs: tuple[str, object]) -> bool:
    """Whether one of ``outputs`` ((its flag as said, whether it writes to standard
    output)) writes there; two would interleave there into one file neither tool reads
    (sweep's ``--json-out - --plot -``: JSON, then PNG bytes), a one-line error."""
    on = [flag for flag, there in outputs if there]
    if len(on) > 1:
        raise CliError(f"{' and '.join(on)} would both write to standard output: give all but one a file")
    return bool(on)


def outputs_apart(outputs: Sequence[tuple[str, str | None]], inputs: Sequence[str] = ()) -> bool:
    """Whether one of ``outputs`` ((flag, path); '-' is standard output, as ``stdout_taken``)
    writes to standard output.  Two outputs named the same file, or one named an input, are
    a one-line error before anything is read or run: the last write would have replaced the
    other's, or the input (``merge -o run-0.jsonl run-*.jsonl`` overwrote a rank's recording)."""
    on_stdout = stdout_taken(*((f"{flag} -", path == STDIO) for flag, path in outputs))
    seen: dict[object, str] = {}
    for path in inputs:
        key = file_key(path)
        if key is not None:
            seen.setdefault(key, "")
    for flag, path in outputs:
        key = file_key(path) if path else None
        if key is None:
            continue
        if key in seen:
            other = seen[key]
            raise CliError(f"{other} and {flag} name the same file: give each its own" if other
                           else f"{flag} names an input file, which writing would replace: give another", path)
        seen[key] = flag
    return on_stdout


def add_format_option(p: argparse.ArgumentParser, kind: str, what: str = "the input") -> None:
    """``--format NAME``: the registered readers of ``kind`` (``io.readers``: curves or
    recording) by name; declare it with ``Parser.declare_later`` (the readers' modules)."""
    from ..io.readers import readers

    choices = readers(kind)
    if not choices:
        raise ValueError(f"no reader yields {kind!r}")  # a typo here, not the user's input
    p.add_argument("--format", choices=[r.name for r in choices], metavar="NAME",
                   help=f"read {what} as this format (default: detected from its name and content): "
                   + "; ".join(f"{r.name}: {r.title}" for r in choices))


def add_output_options(p: argparse.ArgumentParser, json_help: str = "print one JSON object instead of the table",
                       plot: bool = False) -> None:
    """The ``--json`` (and ``--plot``) flags of the subcommands that print a table."""
    p.add_argument("--json", action="store_true", help=json_help)
    if plot:
        p.add_argument("--plot", metavar="OUT.png", type=file_name, help="also write a plot, in its suffix's format (.png, .svg, .pdf, .jpg, ...; another suffix is an error, none is PNG)")
