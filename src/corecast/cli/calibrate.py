"""``corecast calibrate``: measure this machine's compute and bandwidth curves once, for the
runtime's predictions (tools/calibrate.py measures, model/machine/calibration.py reads,
model/runtime/evidence.py applies)."""
from __future__ import annotations

import json
import os
import sys

from ..io import settings
from .common import CliError, add_output_options, count, file_name

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    import argparse


def add_calibrate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calibrate", help="measure this machine's per-thread compute and bandwidth with 1..N cores busy",
        description="Run two compiled kernels (multiply-add chains in registers; the STREAM triad) with 1, 2, "
        "4, ... OpenMP threads in one process, placed as an OpenMP program's threads are under the same "
        "OMP_PROC_BIND/OMP_PLACES, and write their curves to FILE (default: "
        f"{settings.MACHINE_FILE} where set, else $XDG_CACHE_HOME/corecast/calibration.json, ~/.cache when "
        "unset: the file runs read): the compute efficiency "
        "e_c(n), one thread's rate at n threads over its rate alone, and the triad's GB/s, whose "
        "e_b(n) = bw(n) / (n bw(1)). corecast run then applies one of them to a region's prediction "
        "where the run's evidence says the region is compute- or bandwidth-bound (docs/runtime-model.md; "
        "not advised yet). "
        "Run it on an otherwise idle machine: it takes a few seconds.")
    p.add_argument("--max", type=count, metavar="N", help="threads up to N (default: the CPUs this process may run on)")
    p.add_argument("--quick", action="store_true", help="tiny runs that check the kernels work (for tests; "
                   "the figures mean nothing)")
    p.add_argument("-o", "--output", metavar="FILE", type=file_name, help="where to write the calibration ('-': standard output "
                   f"only; without it, {settings.MACHINE_FILE} or the default)")
    add_output_options(p, "print the calibration's JSON instead of the table")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..io.fileio import STDIO, write_file
    from ..tools.calibrate import CalibrateError, measure

    # where a run will look: -o, else CORECAST_MACHINE_FILE (as told, like -o), else the default
    named = os.environ.get(settings.MACHINE_FILE)
    if not args.output and named == "":
        raise CliError(f"{settings.MACHINE_FILE} is set empty, so runs read no calibration: unset it "
                       "to write the default file, or give -o FILE")
    told = args.output or named
    path = told or settings.calibration_path()
    if not told:  # the default folder, made before the measurement rather than after
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        except OSError as exc:
            raise CliError(f"cannot make the folder for the calibration: {exc.strerror or exc}",
                           os.path.dirname(path)) from None
    elif path != STDIO and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise CliError("its folder does not exist", path)  # one line now, not after the measurement
    try:
        cal = measure(args.max, quick=args.quick)
    except CalibrateError as exc:
        raise CliError(f"the measurement failed: {exc}") from None
    text = json.dumps(cal) + "\n"
    kept = args.quick and not args.output and _full_calibration(path)
    if kept:  # `calibrate --quick`, to see the kernels work, had replaced the real one
        print(f"corecast: warning: not written: {path} holds a full calibration, which --quick's "
              "figures (they mean nothing) would replace; -o FILE writes them elsewhere", file=sys.stderr)
    elif path != STDIO:
        write_file(path, text, "the calibration")
    if args.json or path == STDIO:
        sys.stdout.write(text)
        return 0
    m, c, b = cal["machine"], cal["compute"], cal["bandwidth"]
    print(f"{m['cpu_model'] or 'unnamed processor'}, {m['cpus']} CPUs ({m['cpus_measured']} measured), "
          f"threads {cal['placement']}; one thread: {c['gflops_one_thread']:.2f} GFLOP/s; "
          f"triad over {b['array_bytes'] / (1 << 20):.0f} MiB; {cal['seconds']:.1f} s"
          + (" (--quick: the figures mean nothing)" if cal["quick"] else ""))
    print(f"{'threads':>7} {'compute e_c':>11} {'triad GB/s':>10} {'e_b':>6}")
    bw1 = b["gbps"][0][1]
    for (n, e), (_, g) in zip(c["efficiency"], b["gbps"]):
        print(f"{n:7d} {e:11.3f} {g:10.2f} {g / (n * bw1):6.3f}")
    if not kept:  # where runs will read it (not -o elsewhere), say what that does: not advised (#38)
        print(f"written to {path}" + ("" if cal["quick"] or args.output else
                                      f"; runs read it, though it is not advised yet "
                                      "(docs/runtime-model.md): remove it to predict without"))
    return 0


def _full_calibration(path: str) -> bool:
    """Whether ``path`` holds a calibration that was not measured with --quick."""
    from ..model.machine.calibration import CalibrationError, read

    try:
        return not read(path).quick
    except CalibrationError:  # missing, unreadable, another version: nothing to keep
        return False


COMMANDS = [add_calibrate]
