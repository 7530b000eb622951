"""``corecast calibrate``: measure this machine's loss of per-thread speed once, for the
runtime's predictions (tools/calibrate.py measures, machine/calibration.py reads, model/runtime/predictor.py applies)."""
from __future__ import annotations

import json
import os
import sys
import threading

from ..io import settings
from .common import CliError, add_output_options, count

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    import argparse


def add_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="measure this machine's per-thread speed with 1..N cores busy, for the runtime's predictions",
        description="Run a compute kernel (an integer hash loop, nothing shared) as 1, 2, 4, ... copies at once "
        "and write each copy's speed against one copy alone, e(n), to FILE (default: "
        "$XDG_CACHE_HOME/corecast/calibration.json, ~/.cache when unset). corecast run then puts this loss "
        "of per-thread speed (falling turbo clocks, hyperthreads presented as cores) into its one-sample "
        f"predictions on this machine; {settings.MACHINE_FILE} names another file, or none when empty. "
        "Run it on an otherwise idle machine: it takes a few seconds.")
    p.add_argument("--max", type=count, metavar="N", help="copies up to N (default: the CPUs this process may run on)")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write the calibration ('-': standard output only)")
    add_output_options(p, "print the calibration's JSON instead of the table")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..io.fileio import STDIO, write_file
    from ..tools.calibrate import measure

    path = args.output or settings.calibration_path()
    if not args.output:  # the default folder, made before the measurement rather than after
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise CliError(f"cannot make the folder for the calibration: {exc.strerror or exc}",
                           os.path.dirname(path)) from None
    try:
        cal = measure(args.max)
    except (OSError, EOFError, threading.BrokenBarrierError) as exc:  # a copy could not start or died
        raise CliError(f"the measurement failed: {type(exc).__name__}: {exc}") from None
    text = json.dumps(cal) + "\n"
    if path != STDIO:
        write_file(path, text, "the calibration")
    if args.json or path == STDIO:
        sys.stdout.write(text)
        return 0
    m = cal["machine"]
    print(f"{m['cpu_model'] or 'unnamed processor'}, {m['cpus']} CPUs ({m['cpus_measured']} measured); "
          f"one copy alone: {cal['seconds_per_copy']:.2f} s")
    print(f"{'copies':>7} {'efficiency':>10}")
    for n, e in cal["efficiency"]:
        print(f"{n:7d} {e:10.3f}")
    print(f"written to {path}")
    return 0


COMMANDS = [add_calibrate]
