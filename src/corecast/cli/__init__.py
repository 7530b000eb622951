"""Command line: ``corecast predict FILE ...``, ``demo``, ``run -- CMD``, ``lib``, ``sweep``,
``numa``, ``machine``, ``calibrate`` and the rest listed by ``subcommands()``.

One module per subcommand group (``predict``: predict, demo; ``run``: run, lib, replay,
merge; ``calibrate``; ``sweep``: sweep, export; ``tune``: tune-sim; ``numa``: numa, machine), each a pair
of functions per subcommand, ``add_X(subparsers)`` declaring its arguments and
``cmd_X(args) -> int`` running it, listed in the module's ``COMMANDS``; ``common`` holds
what they share.  Every user-facing failure ends as one ``corecast: error: ...`` line on
stderr with exit status 2 (set CORECAST_DEBUG=1 to see tracebacks of internal errors).

Start-up stays light: these modules import the standard library only.  Each ``cmd_X``
imports what it needs (numpy, scipy and matplotlib come with the model, the readers and
the views), and arguments that need the model (method names, metrics) are declared with
``Parser.declare_later``, so ``corecast lib``, ``run``, ``--help`` and ``--version`` never
load them.
"""
from __future__ import annotations

import os
import sys

from .. import __version__
from ..errors import InputError
from ..io import settings
from ..io.fileio import DEFAULT_MAX_INPUT_MB
from . import run
from .common import EXIT_ERROR, EXIT_INTERRUPTED, CliError, Parser, die_of_sigint, raise_interrupt, sigint_seen

__all__ = ["main", "build_parser", "die_of_sigint", "raise_interrupt", "sigint_seen", "EXIT_ERROR",
           "EXIT_INTERRUPTED", "subcommands"]

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    import argparse
    from typing import Sequence


def subcommands() -> list:
    """Every subcommand's ``add_X``, in the order help lists them.  The other groups'
    modules are imported here, not with the package: ``corecast run`` and ``lib`` need
    only their own (see ``LAUNCHERS``)."""
    from . import calibrate, numa, predict, sweep, tune

    return predict.COMMANDS + run.COMMANDS + calibrate.COMMANDS + tune.COMMANDS + sweep.COMMANDS + numa.COMMANDS


# Commands that start a program: their parser declares no other subcommand (the full one
# took `corecast run` 14-17 ms of its start-up, paid before the program runs).
LAUNCHERS = {"run": run.add_run, "lib": run.add_lib}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``command`` one of ``LAUNCHERS``, only that
    subcommand is declared."""
    parser = Parser(prog="corecast", description="Predict how a parallel program scales with the thread count.",
                    epilog="Files: '-' is standard input or output; an input file may be at most "
                    f"{settings.MAX_INPUT_MB} MiB (default {DEFAULT_MAX_INPUT_MB}).")
    parser.add_argument("--version", action="version", version=f"corecast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in [LAUNCHERS[command]] if command in LAUNCHERS else subcommands():
        add(sub)
    return parser


def _drop_stdout() -> None:
    """Point standard output at /dev/null so that the interpreter's last flush of the
    closed pipe says nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # not a real descriptor (tests): nothing will be flushed to it


def _interrupted(message: str = "") -> int:
    print(CliError(message or "interrupted").line(), file=sys.stderr)
    return EXIT_INTERRUPTED  # the console entry then dies of SIGINT (corecast.__main__)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 error, 126/127 a program
    that cannot be run, 130 after Ctrl-C: the caller should then die of SIGINT, as
    ``corecast.__main__.console`` does)."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        for line in settings.unknown_names():
            print(f"corecast: warning: {line}", file=sys.stderr)
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a message at interpreter exit
        return status
    except BrokenPipeError:  # 'corecast ... | head': the reader needs no more
        _drop_stdout()
        return 0
    except SystemExit as e:  # --help and friends
        return e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt as e:  # Ctrl-C while reading a FIFO, fitting or sweeping: one line
        return _interrupted(str(e))
    except CliError as e:
        if sigint_seen():  # Ctrl-C that a library turned into another error
            return _interrupted()
        print(e.line(), file=sys.stderr)
    except Exception as e:
        if sigint_seen():
            return _interrupted()
        if isinstance(e, InputError):
            print(CliError(str(e)).line(), file=sys.stderr)
            return EXIT_ERROR
        if settings.debug():
            raise
        print(CliError(f"internal error: {type(e).__name__}: {e}").line(), file=sys.stderr)
    return EXIT_ERROR
