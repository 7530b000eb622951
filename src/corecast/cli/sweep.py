"""``corecast sweep`` (run a program at several counts) and ``corecast export`` (convert
its result)."""
from __future__ import annotations

import argparse
import os
import sys

from ..errors import InputError
from .common import CliError, command_of, count, file_name, outputs_apart, seconds


def _sweep_threads(text: str) -> list[int]:
    from ..sweep import parse_threads

    try:
        return parse_threads(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--threads").lstrip(": ")) from None


def add_sweep(sub: argparse._SubParsersAction) -> None:
    from ..model.tuning.placement import PLACEMENTS  # standard library only

    p = sub.add_parser(
        "sweep",
        help="run a program at several thread counts, measure it and extrapolate",
        description="Run CMD under the preload library REPEAT times at each count, confined to that "
        "many CPUs; the count reaches it as OMP_NUM_THREADS (openmp), POCL_CPU_MAX_CU_COUNT and "
        "POCL_MAX_PTHREAD_COUNT (opencl) and a {threads} placeholder in CMD. Prints measured and predicted times, the "
        "preferred and fastest counts (as corecast predict names them) and the future bottleneck "
        "(the stall category predicted to be largest at "
        "UPTO). Exit 2 when fewer than 2 counts succeed or no run shows parallel activity (the "
        "JSON is still written).",
    )
    p.add_argument("--threads", type=_sweep_threads, metavar="N,N,...",
                   help="counts to run (default: 1 up to the CPUs this process may use)")
    p.add_argument("--repeat", type=count, default=3, metavar="R",
                   help="runs per count; median time, spread = half the range (default %(default)s)")
    p.add_argument("--upto", type=count, metavar="N",
                   help="predict up to N (default: 2x the largest count, at least 16)")
    p.add_argument("--runtime", choices=("openmp", "pthreads", "opencl"),  # None: openmp, or the launcher's ranks
                   help="how the count reaches the program (default openmp; not with --launcher, whose "
                   "ranks are the count)")
    p.add_argument("--placement", choices=PLACEMENTS,
                   help="which CPUs a count gets: compact (cores before SMT siblings, one socket after "
                   "the other), spread (cores round-robin over sockets), none (the first n in numeric "
                   "order); OpenMP programs also get OMP_PLACES and OMP_PROC_BIND (default compact; "
                   "not with --launcher, which places the ranks)")
    p.add_argument("--json-out", metavar="FILE", type=file_name, help="write the result as one JSON object")
    p.add_argument("--plot", metavar="OUT.png", type=file_name, help="also plot measured and predicted times, in its suffix's format (.png, .svg, .pdf, .jpg, ...; another suffix is an error)")
    p.add_argument("--html", metavar="OUT.html", type=file_name,
                   help="also write an HTML report (.html or .htm; another suffix is an error)")
    p.add_argument("--stall-plugin", metavar="FILE", type=file_name,
                   help="extra stall categories read from stdout/stderr/a file (JSON, or TOML on Python 3.11+)")
    p.add_argument("--timeout", type=seconds, default=600.0, metavar="S",
                   help="a run taking longer is killed and its count recorded as failed (default %(default)g)")
    p.add_argument("--launcher", metavar='"mpirun -np {ranks}"',
                   help="sweep MPI rank counts: launch each run with this command ({ranks} = the count), "
                   "each rank under 'corecast run'; --threads is then one count per rank (OMP_NUM_THREADS)")
    p.add_argument("--ranks", type=_sweep_threads, metavar="N,N,...", help="rank counts for --launcher")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    import importlib.util

    from .. import sweep

    command = command_of(args.argv)
    if not command:
        raise CliError("no command given (usage: corecast sweep [options] -- CMD ARGS...)")
    plugins = sweep.load_plugins(args.stall_plugin) if args.stall_plugin else []
    if args.plot or args.html:  # find out before a long sweep, not after it
        try:
            found = importlib.util.find_spec("corecast.views.sweepviz") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise CliError("--plot and --html need corecast.views.sweepviz, which is not installed")
    if args.plot:
        from ..views.plot import image_format

        image_format(args.plot)  # a suffix it cannot write: one line now, not after the sweep
    for path in (args.json_out, args.plot, args.html):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise CliError("its folder does not exist", path)
    # an output on standard output keeps it whole: the table goes to stderr, beside the progress
    table_to = sys.stderr if outputs_apart((("--json-out", args.json_out), ("--plot", args.plot),
                                            ("--html", args.html)),
                                           [args.stall_plugin] if args.stall_plugin else []) else sys.stdout
    if args.html:
        from ..views.plot import check_html_name

        check_html_name(args.html)  # as --plot's suffix: one line now, not after the sweep

    counts, launch = args.threads, None
    if args.ranks and not args.launcher:
        raise CliError("--ranks needs --launcher (e.g. --launcher \"mpirun -np {ranks}\")")
    if args.launcher:
        if args.threads and len(args.threads) > 1:
            raise CliError("with --launcher, --threads is one count per rank (OMP_NUM_THREADS)")
        if args.placement:  # it would be dropped without a word
            raise CliError("--placement has no effect with --launcher: the launcher places the ranks")
        if args.runtime:  # as would this: a rank's threads come from --threads (OMP_NUM_THREADS)
            raise CliError("--runtime has no effect with --launcher: the ranks are the count, and --threads "
                           "sets each rank's OMP_NUM_THREADS")
        launch = sweep.Launch.parse(args.launcher, args.threads[0] if args.threads else None)
        counts = args.ranks
    failure: sweep.SweepError | None = None
    try:
        result = sweep.run_sweep(command, threads=counts, repeat=args.repeat, upto=args.upto, launch=launch,
                                 runtime=args.runtime or "openmp", plugins=plugins, timeout=args.timeout,
                                 progress=True, **({"placement": args.placement} if args.placement else {}))
    except sweep.SweepError as e:
        if e.result is None:
            raise CliError(str(e)) from None
        failure, result = e, e.result
    except KeyboardInterrupt:  # the runs' children are killed by now; main prints this line
        raise KeyboardInterrupt("interrupted; nothing written") from None
    if args.json_out:
        sweep.write_json(result, args.json_out)
    if result["measured"] and (args.plot or args.html):  # failed sweeps still show what was measured
        from ..views import sweepviz

        for path, draw in ((args.plot, "plot_sweep"), (args.html, "html_report")):
            if path:
                getattr(sweepviz, draw)(result, path)  # errors: one line naming the file
    from ..views.sweeptable import format_sweep

    table_to.write(format_sweep(result))
    if failure is not None:
        raise CliError(str(failure))
    return 0


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="convert a 'corecast sweep' result: Extra-P input, HTML report, PNG",
        description="Read SWEEP.json (what 'corecast sweep --json-out' writes) and write any of: "
        "Extra-P JSON Lines (one line per measured run: parameter threads, or ranks for a launcher's "
        "sweep; callpath main, metric time, plus metric stall:NAME per stall category; callpath "
        "main->REGION per region), a self-contained HTML report, a plot.",
    )
    p.add_argument("file", metavar="SWEEP.json", help="a corecast sweep result")
    p.add_argument("--extrap", metavar="OUT.jsonl", type=file_name, help="write Extra-P JSON Lines input here")
    p.add_argument("--html", metavar="OUT.html", type=file_name,
                   help="write an HTML report here (.html or .htm; another suffix is an error)")
    p.add_argument("--plot", metavar="OUT.png", type=file_name, help="write a plot here, in its suffix's format (.png, .svg, .pdf, .jpg, ...)")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..views import sweepviz  # matplotlib is slow to import; only load it when asked
    from ..io.fileio import OutputError
    from ..io.sweepresult import load_sweep_json

    outputs = [(path, write) for path, write in ((args.extrap, sweepviz.export_extrap),
                                                 (args.html, sweepviz.html_report),
                                                 (args.plot, sweepviz.plot_sweep)) if path]
    if not outputs:
        raise CliError("nothing to export: give --extrap OUT.jsonl, --html OUT.html or --plot OUT.png")
    outputs_apart((("--extrap", args.extrap), ("--html", args.html), ("--plot", args.plot)), [args.file])
    if args.plot:
        from ..views.plot import image_format

        image_format(args.plot)  # a suffix it cannot write: its own line, before any output is written
    if args.html:
        from ..views.plot import check_html_name

        check_html_name(args.html)
    try:
        result = load_sweep_json(args.file)  # messages already name the file
    except InputError as e:
        raise CliError(str(e)) from None
    for path, write in outputs:
        try:
            write(result, path)
        except OutputError:
            raise  # names the output file
        except InputError as e:
            raise CliError(str(e), args.file) from None
    return 0


COMMANDS = [add_sweep, add_export]
