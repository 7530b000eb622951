"""The ``corecast`` command: ``python -m corecast`` and the installed console script
(``corecast.__main__:console``).

Ctrl-C must end corecast as killed by SIGINT (status 130 in a shell, -2 from subprocess):
a shell stops a ``for`` loop over ``corecast run ...`` only then.  So the default action
is put back first, before the CLI's imports (where Python's handler would print a
KeyboardInterrupt traceback), and SIGINT is unblocked: a launcher that blocked it over
the interpreter's start-up gets its pending Ctrl-C delivered here.

A SIGINT the caller ignored (a background job of a script, ``nohup``) stays ignored: CPython
installs its handler only over the default, and a program ``corecast run`` starts must
inherit the ignored signal as it would without corecast.  Ctrl-C then does nothing, as for
any such command.
"""
from __future__ import annotations

import _signal  # the C module: ``signal`` imports enum first, time a Ctrl-C could land in

SIGINT_IGNORED = _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN  # by the caller
if not SIGINT_IGNORED:
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
_signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})

import signal  # noqa: E402

import sys  # noqa: E402  (after the SIGINT set-up on purpose)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn


def console() -> NoReturn:
    """Run the command line and exit with its status; on Ctrl-C at most one line, then
    die of SIGINT."""
    from .cli import EXIT_INTERRUPTED, die_of_sigint, main, raise_interrupt, sigint_seen
    from .cli.common import interrupt_unraisable
    from .runtime.launcher import caller_ignored, restore_caller_locale

    caller_ignored()  # the corecast command's record leaves the environment before any child starts
    restore_caller_locale()  # as that one's
    sys.unraisablehook = interrupt_unraisable
    try:
        # KeyboardInterrupt while a subcommand runs: it cleans up (a sweep's children)
        # and main prints one line.  signal.signal runs a pending handler first, so a
        # Ctrl-C that came before the last call still ends in the except below.
        if not SIGINT_IGNORED:
            signal.signal(signal.SIGINT, raise_interrupt)
        status = main()
        if not SIGINT_IGNORED:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # from here Ctrl-C ends it quietly
    except KeyboardInterrupt:
        status = EXIT_INTERRUPTED
    if status == EXIT_INTERRUPTED or sigint_seen():  # also a Ctrl-C something swallowed
        die_of_sigint()
    sys.exit(status)


if __name__ == "__main__":
    console()
