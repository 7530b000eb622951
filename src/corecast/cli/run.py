"""``corecast run``, ``lib``, ``replay`` and ``merge``: measuring programs and reading back
what they recorded.  ``run`` and ``lib`` import no numpy or scipy (they add
their import time to every program started)."""
from __future__ import annotations

import argparse
import sys

from .common import (CliError, add_format_option, add_output_options, command_of, count, file_name, outputs_apart,
                     print_json, whole_in)

# What the library accepts (native/config.c: CORECAST_TARGET up to CC_MAX_THREADS,
# CORECAST_WINDOW_MS 10-60000 ms): refused here rather than warned about by the library.
TARGET_RANGE = (1, 1024)
WINDOW_MS_RANGE = (10, 60000)


def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a program with the corecast runtime preloaded",
        description="Run CMD with the preload library appended to LD_PRELOAD; at exit a report "
        "goes to stderr (and JSON Lines to --json-out). The program's output and exit status "
        "are its own, and so are the caller's LC_CTYPE and ignored signals. Under "
        "'python -m corecast' a SIGPIPE or SIGXFSZ the caller ignored reaches the program as "
        "the default (CPython drops the caller's before corecast starts): the corecast "
        "command keeps them.",
    )
    p.add_argument("--target", type=whole_in(*TARGET_RANGE), metavar="N", help="predict up to N threads, for a machine of N cores "
                   "(default: this machine's cores, or the --target-machine's)")
    p.add_argument("--window-ms", type=whole_in(*WINDOW_MS_RANGE), metavar="MS", help="sampling window in ms (default 200)")
    p.add_argument("--json-out", metavar="FILE", type=file_name, help="write JSON Lines here, emptying a regular file first (CORECAST_OUTPUT, which appends)")
    p.add_argument("--quiet", action="store_true", help="no report on stderr")
    explore = p.add_mutually_exclusive_group()  # steering already runs regions at other sizes
    explore.add_argument("--steer", action="store_true",
                         help="let corecast choose each OpenMP region's team size (only ever fewer threads)")
    explore.add_argument("--probe", action="store_true",
                         help="run a few calls of each repeated OpenMP region at smaller teams (n/2, "
                         "n/4, ... 1; within 3%% of its time) so it gets a measured multi-size history")
    p.add_argument("--target-machine", metavar="M.json", type=file_name,
                   help="predict for this machine (its cores) and each region's speedup per NUMA "
                   "node count on it (description file or preset name)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from ..runtime import launcher

    if args.json_out == "-":  # elsewhere standard output; here the library made a file named '-'
        raise CliError("argument --json-out: '-' is not standard output here (that is the program's own): "
                       "give a file name")
    machine = None
    if args.target_machine:
        from ..model.machine import numa as machines

        try:  # refuse a bad file here rather than inside the program
            m = machines.load(args.target_machine)
        except machines.MachineError as exc:
            raise CliError(str(exc)) from None
        machine = str(machines.path_of(args.target_machine))
        if args.target is None:  # predictions for that machine: up to its cores
            args.target = m.cores_per_node * m.nodes
    try:
        launcher.run(command_of(args.argv), args.target, args.window_ms, args.json_out, args.quiet, args.steer,
                     target_machine=machine, probe=args.probe)
    except launcher.LaunchError as exc:
        sys.stderr.write(CliError(str(exc)).line() + "\n")
        return exc.status
    return 0  # not reached: run() replaces this process


def add_lib(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lib", help="print the preload library's path (LD_PRELOAD=$(corecast lib) CMD)")
    p.set_defaults(func=cmd_lib)


def cmd_lib(args: argparse.Namespace) -> int:
    from ..runtime import launcher

    try:
        print(launcher.library_path())
    except launcher.LaunchError as exc:
        raise CliError(str(exc)) from None
    return 0


def _recording_parser(sub: argparse._SubParsersAction, name: str, help: str, description: str,
                      horizon: tuple[str, str], json_help: str, horizon_type=count) -> argparse.ArgumentParser:
    """replay and merge read JSON Lines a run wrote and print a table or JSON: their
    common flags (``horizon``: the flag and help of the count to predict up to, parsed by
    ``horizon_type``)."""
    p = sub.add_parser(name, help=help, description=description)
    flag, horizon_help = horizon
    p.add_argument(flag, type=horizon_type, help=horizon_help)
    add_output_options(p, json_help)
    p.declare_later(lambda p: add_format_option(p, "recording"))
    return p


def add_replay(sub: argparse._SubParsersAction) -> None:
    p = _recording_parser(
        sub, "replay", "predict a recorded run again with the current model",
        "Re-run the runtime model on the samples in RUN.jsonl (written by corecast run "
        "--json-out or CORECAST_OUTPUT) through the predictor the library uses, and print the exit "
        "report's table (or JSON). Every record version corecast has written is read.",
        ("--target", f"predict up to N threads, at most {TARGET_RANGE[1]} as corecast run's "
                     "(default: the recorded target)"),
        "one JSON object: {\"processes\": [...]}",
        # the library's predictor, bounded as corecast run's (--target 100000000 ran for minutes)
        whole_in(*TARGET_RANGE))
    p.add_argument("--machine", metavar="FILE", type=file_name,
                   help="the recording machine's calibration (written by corecast calibrate there), "
                        "instead of the one the run recorded: its compute or bandwidth curve is put into "
                        "the one-sample predictions of the regions whose evidence names one")
    p.add_argument("recording", metavar="RUN.jsonl")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from ..views import replayview
    from ..tools.replay import replay

    reps = replay(args.recording, args.target, args.machine, args.format)  # bad files: InputError, one line
    if args.json:
        print_json(replayview.to_dict(reps))
    else:
        sys.stdout.write("\n".join(replayview.table(r, args.machine) for r in reps))
    return 0


def add_merge(sub: argparse._SubParsersAction) -> None:
    p = _recording_parser(
        sub, "merge", "merge the per-rank JSON Lines of MPI runs: compute vs MPI wait, speedup over ranks",
        "Read the JSON Lines every rank of an MPI run wrote (CORECAST_OUTPUT=run-{rank}.jsonl) "
        "and write one report: per rank the compute time and the MPI wait (point-to-point, "
        "collective), bytes moved, the slowest rank, and the predicted speedup over rank counts "
        "(regression over the world sizes measured when there are 3 or more, auto over 2, a one-run "
        "model from one).",
        ("--upto", "predict up to N ranks, at most as many as predict --upto takes (default: max(16, twice the "
                   "largest run))"),
        "one JSON object instead of the table", _rank_count)
    p.add_argument("files", nargs="+", metavar="FILE.jsonl")
    p.add_argument("-o", "--output", metavar="OUT", type=file_name, help="write the report here instead of stdout")
    p.set_defaults(func=cmd_merge)


def _rank_count(text: str) -> int:
    """merge's --upto: a count as every other one, at most the largest predicted (--upto
    10^21 printed 70 columns and a fastest count of 10^21 ranks at 0.000 s)."""
    from ..model.scaling import MAX_COUNT  # standard library only

    return whole_in(1, MAX_COUNT)(text)


def cmd_merge(args: argparse.Namespace) -> int:
    import json

    from ..io.fileio import write_file
    from ..views import mergeview
    from ..tools.ranks import merge

    outputs_apart([("-o", args.output)], args.files)
    merged = merge(args.files, args.upto, args.format)  # bad files: InputError, one line
    text = (json.dumps(mergeview.to_dict(merged), allow_nan=False) + "\n" if args.json
            else mergeview.table(merged))
    if args.output:
        write_file(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


COMMANDS = [add_run, add_lib, add_replay, add_merge]
