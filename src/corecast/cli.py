"""Command line: ``corecast predict FILE ...``, ``demo``, ``run -- CMD``, ``lib``, ``sweep``,
``numa``, ``machine`` and the rest listed in ``SUBCOMMANDS``.

Each subcommand is a pair of functions, ``add_X(subparsers)`` declaring its arguments and
``cmd_X(args) -> int`` running it; adding one means writing both and listing ``add_X`` in
``SUBCOMMANDS``.  Every user-facing failure ends as one ``corecast: error: ...`` line on
stderr with exit status 2 (set CORECAST_DEBUG=1 to see tracebacks of internal errors).

Start-up stays light: this module imports the standard library only.  Each ``cmd_X``
imports what it needs (numpy, scipy and matplotlib come with the model, the readers and
the views), and arguments that need the model (method names, metrics) are declared with
``_Parser.declare_later``, so ``corecast lib``, ``run``, ``--help`` and ``--version`` never
load them.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from . import settings
from . import __version__

from .errors import InputError
from .fileio import DEFAULT_MAX_INPUT_MB, printable

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable, Sequence

    from .entities import Measurements, Prediction

EXIT_ERROR = 2
DEMO_DATA = "usl4j__cisco_benchmark.csv"
DEMO_TRAIN_UPTO = 16
DEMO_PREDICT_UPTO = 32


class CliError(Exception):
    """A one-line error for the user, optionally about a file."""

    def __init__(self, message: str, file: str | None = None):
        super().__init__(message)
        self.file = file

    def line(self) -> str:
        text = f"{self.file}: {self}" if self.file else str(self)
        return "corecast: error: " + printable(" ".join(text.split()))  # one line, no escape codes


class _Parser(argparse.ArgumentParser):
    """argparse prints usage plus a message over several lines; we want one line.

    A subcommand's parser can declare arguments later (``declare_later``): they are added
    when that subcommand is parsed or its help is shown, not when any other one runs."""

    _later: Callable[[argparse.ArgumentParser], None] | None = None

    def error(self, message: str):  # type: ignore[override]
        raise CliError(f"{message} (see '{self.prog} --help')")

    def declare_later(self, declare: Callable[[argparse.ArgumentParser], None]) -> None:
        self._later = declare

    def _declare(self) -> None:
        declare, self._later = self._later, None
        if declare is not None:
            declare(self)

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        self._declare()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._declare()
        return super().format_usage()

    def format_help(self) -> str:
        self._declare()
        return super().format_help()


# ---------------------------------------------------------------- argument types


def _whole(text: str, minimum: int = 1) -> int:
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < minimum:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least {minimum}")
    return n


def _count(text: str) -> int:
    return _whole(text, 1)


def _seed(text: str) -> int:
    return _whole(text, 0)


def _count_list(text: str) -> list[int]:
    items = text.split(",")
    if not text.strip() or any(not i.strip() for i in items):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of counts like 48,64")
    return [_count(i) for i in items]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _fraction(text: str) -> float:
    f = _number(text)
    if not 0 < f <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return f


# ---------------------------------------------------------------- predict


def add_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="predict scaling from a CSV of measurements",
        description="Predict performance at every count 1..UPTO from measured counts.",
    )
    p.declare_later(_predict_arguments)
    p.set_defaults(func=cmd_predict)


def _predict_arguments(p: argparse.ArgumentParser) -> None:
    from . import methods  # numpy and scipy: only when predict runs
    from .entities import METRICS
    from .prediction import DEFAULT_KNEE_FRACTION

    p.add_argument("file", metavar="FILE", nargs="+",
                   help="CSV (count column, then time/throughput/value, optional stall:NAME and size:NAME "
                   "columns), a sweep result, an Extra-P input file (text, JSON, JSON Lines), or Caliper "
                   "profiles (.cali, JSON), one per count")
    p.add_argument("--metric", choices=METRICS, help="metric of a 'value' column (Extra-P and Caliper "
                   "values: time unless given)")
    p.add_argument("--callpath", metavar="NAME", help="Extra-P callpath or Caliper region to predict "
                   "(default: every one)")
    p.add_argument("--profile-metric", metavar="NAME", help="Extra-P metric or Caliper attribute to predict "
                   "(default: every Extra-P metric; Caliper's inclusive time)")
    p.add_argument("--count-attribute", metavar="NAME", help="Caliper attribute or global holding the count "
                   "(default: the first of omp.num.threads, threads, ..., mpi.world.size that varies)")
    p.add_argument("--upto", type=_count, help="predict up to this count (default: 2x the largest measured)")
    p.add_argument("--at", type=_count_list, default=[], metavar="N,N,...", help="extra counts to predict")
    p.add_argument("--method", choices=list(methods.METHODS), default="auto",
                   help="; ".join(f"{m.name}: {m.summary}" for m in methods.METHODS.values()))
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", metavar="OUT.png", help="also write a PNG plot")
    p.add_argument("--knee-fraction", type=_fraction, default=DEFAULT_KNEE_FRACTION, metavar="F",
                   help="knee: where one more thread gains less than F of a thread (default %(default)s)")


def cmd_predict(args: argparse.Namespace) -> int:
    from .readers import read_inputs
    from .report import format_table

    try:
        series = read_inputs(args.file, args.metric, args.callpath, args.profile_metric,
                             args.count_attribute)  # messages already name the file
    except InputError as e:
        raise CliError(str(e)) from None
    options = dict(upto=args.upto, at=args.at, method=args.method, knee_fraction=args.knee_fraction)
    if series[0].callpath is None:  # a corecast CSV or sweep result: one curve
        pred = _predict(series[0].data, args.file[0], **options)
        # Plot before printing so a failed plot does not leave a half-reported success.
        if args.plot:
            _plot(pred, args.plot)
        if args.json:
            _print_json(pred.to_dict())
        else:
            sys.stdout.write(format_table(pred))
        return 0
    if args.plot and len(series) > 1:
        raise CliError(f"--plot draws one curve and the input has {len(series)} (callpath, metric) pairs: "
                       "pick one with --callpath and --profile-metric")
    results = []
    for s in series:
        if s.data is None:
            results.append((s, None, s.error))
            continue
        try:
            results.append((s, _predict(s.data, args.file[0], **options), None))
        except CliError as e:
            results.append((s, None, str(e)))
    done = [pred for _, pred, _ in results if pred is not None]
    if args.plot and done:
        _plot(done[0], args.plot)
    if args.json:
        _print_json({"source": series[0].source, "series": [
            {"callpath": s.callpath, "metric_name": s.metric_name,
             **(pred.to_dict() if pred is not None else {"error": error})} for s, pred, error in results]})
    else:
        for i, (s, pred, error) in enumerate(results):
            sys.stdout.write(("\n" if i else "") + printable(f"== {s.label}") + "\n")
            sys.stdout.write(format_table(pred) if pred is not None else printable(f"cannot predict: {error}") + "\n")
    if not done:
        raise CliError("no (callpath, metric) pair could be predicted", args.file[0])
    return 0


# ---------------------------------------------------------------- demo


def add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="predict a bundled real benchmark from its first half and compare",
        description=f"Train on counts <= {DEMO_TRAIN_UPTO} of the Cisco benchmark (Schwartz, "
        f"Practical Scalability), predict up to {DEMO_PREDICT_UPTO}, compare with the held-out counts.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", metavar="OUT.png", help="also write a PNG plot")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from importlib import resources

    import numpy as np

    from .fileio import read_measurements
    from .report import format_table

    with resources.as_file(resources.files("corecast") / "data" / DEMO_DATA) as path:
        full = read_measurements(str(path))
    train = full.subset(np.flatnonzero(full.counts <= DEMO_TRAIN_UPTO))
    pred = _predict(train, DEMO_DATA, upto=DEMO_PREDICT_UPTO, at=[], method="auto")
    held = full.subset(np.flatnonzero(full.counts > DEMO_TRAIN_UPTO))
    errors = [abs(pred.value_at(n) - v) / v for n, v in zip(held.counts, held.values)]
    median_error = float(np.median(errors))
    if args.plot:
        _plot(pred, args.plot, reference=full)
    if args.json:
        out = pred.to_dict()
        out["demo"] = {
            "data": DEMO_DATA,
            "trained_on": [int(n) for n in train.counts],
            "held_out": [{"threads": int(n), "measured": float(v), "predicted": pred.value_at(n)}
                         for n, v in zip(held.counts, held.values)],
            "median_relative_error": median_error,
        }
        _print_json(out)
    else:
        print(f"demo: {DEMO_DATA}, trained on counts <= {DEMO_TRAIN_UPTO}, "
              f"predicting up to {DEMO_PREDICT_UPTO}\n")
        sys.stdout.write(format_table(pred, reference=full))
        print(f"median relative error on the {len(held)} held-out counts "
              f"({int(held.counts.min())}..{int(held.counts.max())}): {median_error:.1%}")
    return 0


# ---------------------------------------------------------------- shared helpers


def _predict(data: Measurements, file: str, **kwargs) -> Prediction:
    """predict_measurements with its errors turned into one-line CliErrors."""
    from .prediction import predict_measurements

    try:
        return predict_measurements(data, **kwargs)
    except InputError as e:
        raise CliError(str(e), file) from None
    except Exception as e:  # a bug in a model must not surface as a traceback
        if os.environ.get(settings.DEBUG):
            raise
        raise CliError(f"internal error in method {kwargs.get('method')}: {type(e).__name__}: {e}", file) from None


def _plot(pred: Prediction, path: str, reference: Measurements | None = None) -> None:
    from .plot import plot_prediction  # matplotlib is slow to import; only load it when asked

    plot_prediction(pred, path, reference=reference)  # errors: one line naming the file


def _print_json(obj: dict) -> None:
    # allow_nan=False: the output must be strict JSON for other tools to parse.
    print(json.dumps(obj, allow_nan=False))


# ---------------------------------------------------------------- run, lib


def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a program with the corecast runtime preloaded",
        description="Run CMD with the preload library appended to LD_PRELOAD; at exit a report "
        "goes to stderr (and JSON Lines to --json-out). The program's output and exit status "
        "are its own.",
    )
    p.add_argument("--target", type=_count, help="predict up to N threads, for a machine of N cores "
                   "(default: this machine's cores, or the --target-machine's)")
    p.add_argument("--window-ms", type=_count, help="sampling window in ms (default 200)")
    p.add_argument("--json-out", metavar="FILE", help="write JSON Lines here (CORECAST_OUTPUT)")
    p.add_argument("--quiet", action="store_true", help="no report on stderr")
    explore = p.add_mutually_exclusive_group()  # steering already runs regions at other sizes
    explore.add_argument("--steer", action="store_true",
                         help="let corecast choose each OpenMP region's team size (only ever fewer threads)")
    explore.add_argument("--probe", action="store_true",
                         help="run a few calls of each repeated OpenMP region at smaller teams (n/2, "
                         "n/4, ... 1; within 3%% of its time) so it gets a measured multi-size history")
    p.add_argument("--target-machine", metavar="M.json",
                   help="predict for this machine (its cores) and each region's speedup per NUMA "
                   "node count on it (description file or preset name)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from .runtime import launcher

    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    machine = None
    if args.target_machine:
        from . import numa

        try:  # refuse a bad file here rather than inside the program
            numa.load(args.target_machine)
        except numa.MachineError as exc:
            raise CliError(str(exc)) from None
        machine = str(numa.machine.path_of(args.target_machine))
        if args.target is None:  # predictions for that machine: up to its cores
            m = numa.load(args.target_machine)
            args.target = m.cores_per_node * m.nodes
    try:
        launcher.run(command, args.target, args.window_ms, args.json_out, args.quiet, args.steer,
                     target_machine=machine, probe=args.probe)
    except launcher.LaunchError as exc:
        sys.stderr.write(CliError(str(exc)).line() + "\n")
        return exc.status
    return 0  # not reached: run() replaces this process


def add_lib(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lib", help="print the preload library's path (LD_PRELOAD=$(corecast lib) CMD)")
    p.set_defaults(func=cmd_lib)


def cmd_lib(args: argparse.Namespace) -> int:
    from .runtime import launcher

    try:
        print(launcher.library_path())
    except launcher.LaunchError as exc:
        raise CliError(str(exc)) from None
    return 0


def add_replay(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="predict a recorded run again with the current model",
        description="Re-run the runtime model on the samples in RUN.jsonl (written by corecast run "
        "--json-out or CORECAST_OUTPUT) through the predictor the library uses, and print the exit "
        "report's table (or JSON). Every record version corecast has written is read.")
    p.add_argument("recording", metavar="RUN.jsonl")
    p.add_argument("--target", type=_count, help="predict up to N threads (default: the recorded target)")
    p.add_argument("--json", action="store_true", help="one JSON object: {\"processes\": [...]}")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from .runtime import replayview
    from .runtime.replay import replay

    reps = replay(args.recording, args.target)  # bad files: InputError, one line
    if args.json:
        _print_json(replayview.to_dict(reps))
    else:
        sys.stdout.write("\n".join(replayview.table(r) for r in reps))
    return 0


def add_merge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge", help="merge the per-rank JSON Lines of MPI runs: compute vs MPI wait, speedup over ranks",
        description="Read the JSON Lines every rank of an MPI run wrote (CORECAST_OUTPUT=run-{rank}.jsonl) "
        "and write one report: per rank the compute time and the MPI wait (point-to-point, "
        "collective), bytes moved, the slowest rank, and the predicted speedup over rank counts "
        "(regression over the world sizes measured when there are 3 or more, else a one-run model).")
    p.add_argument("files", nargs="+", metavar="FILE.jsonl")
    p.add_argument("--upto", type=_count, help="predict up to N ranks (default: max(16, twice the largest run))")
    p.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    p.add_argument("-o", "--output", metavar="OUT", help="write the report here instead of stdout")
    p.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from .fileio import write_file
    from .runtime import mergeview
    from .runtime.ranks import merge

    merged = merge(args.files, args.upto)  # bad files: InputError, one line
    text = (json.dumps(mergeview.to_dict(merged), allow_nan=False) + "\n" if args.json
            else mergeview.table(merged))
    if args.output:
        write_file(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [add_predict, add_demo, add_run, add_lib,
                                                                   add_replay, add_merge]


# ---------------------------------------------------------------- tune-sim


def _noise(text: str) -> float:
    f = _number(text)
    if not math.isfinite(f) or f < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite fraction >= 0 (e.g. 0.02)")
    return f


def add_tune_sim(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune-sim",
        help="replay the online tuners (OPreSca, Binsearch) against a measured curve",
        description="Simulate online thread-count selection with the measured curve as the oracle: "
        "the candidates are the counts in FILE, each interval returns the measured performance "
        "at the chosen count (times 1 + NOISE * N(0,1)). steps: intervals until convergence, the "
        "convergence interval included; loss: 1 - perf(chosen)/perf(best measured); summed loss "
        "adds every step's loss.",
    )
    p.declare_later(_tune_sim_arguments)
    p.set_defaults(func=cmd_tune_sim)


def _tune_sim_arguments(p: argparse.ArgumentParser) -> None:
    from .entities import METRICS  # numpy: only when tune-sim runs

    p.add_argument("file", metavar="FILE.csv", help="CSV: count column, then time/throughput/value")
    p.add_argument("--metric", choices=METRICS, help="metric of a 'value' column")
    p.add_argument("--noise", type=_noise, default=0.0, metavar="FRACTION",
                   help="relative measurement noise per interval (default 0)")
    p.add_argument("--seed", type=_seed, default=0, metavar="N", help="random seed for the noise (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def cmd_tune_sim(args: argparse.Namespace) -> int:
    import numpy as np

    from .fileio import read_measurements
    from .tuning import Binsearch, OPreSca, simulate

    try:
        data = read_measurements(args.file, args.metric).at_target_size()
    except InputError as e:
        raise CliError(str(e)) from None
    if len(data) < 3:
        raise CliError(f"tune-sim needs at least 3 measured counts, got {len(data)}", args.file)
    counts = [int(c) for c in data.counts]
    perf = data.perf
    results: dict[str, dict] = {}
    paths: dict[str, list] = {}
    for name, tuner in (("opresca", OPreSca(counts, rng_seed=args.seed)), ("binsearch", Binsearch(counts))):
        paths[name] = []
        results[name] = simulate(tuner, counts, perf, noise=args.noise, rng_seed=args.seed, trace=paths[name])
    if args.json:
        _print_json({name: {"steps": int(r["steps"]), "chosen": int(r["chosen"]),
                            "final_loss": float(r["final_loss"]), "sum_loss": float(r["sum_loss"])}
                     for name, r in results.items()})
        return 0
    best = counts[int(np.argmax(perf))]
    print(f"{printable(args.file)}: {len(counts)} counts ({counts[0]}..{counts[-1]}), {data.metric}, "
          f"best measured at {best}; noise {args.noise:g}\n")
    print(f"{'tuner':10s} {'steps':>5s} {'chosen':>6s} {'final loss':>10s} {'summed loss':>11s}  counts tried")
    for name, label in (("opresca", "OPreSca"), ("binsearch", "Binsearch")):
        r = results[name]
        tried = " ".join(str(c) for c, _, _ in paths[name])
        print(f"{label:10s} {r['steps']:5d} {r['chosen']:6d} {r['final_loss']:10.1%} {r['sum_loss']:11.2f}  {tried}")
    return 0


SUBCOMMANDS.append(add_tune_sim)


# ---------------------------------------------------------------- sweep


def _sweep_threads(text: str) -> list[int]:
    from .sweep import parse_threads

    try:
        return parse_threads(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--threads").lstrip(": ")) from None


def _seconds(text: str) -> float:
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(s) and s > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number of seconds")
    return s


def add_sweep(sub: argparse._SubParsersAction) -> None:
    from .placement import PLACEMENTS  # standard library only

    p = sub.add_parser(
        "sweep",
        help="run a program at several thread counts, measure it and extrapolate",
        description="Run CMD under the preload library REPEAT times at each count, confined to that "
        "many CPUs; the count reaches it as OMP_NUM_THREADS (openmp), POCL_CPU_MAX_CU_COUNT and "
        "POCL_MAX_PTHREAD_COUNT (opencl) and a {threads} placeholder in CMD. Prints measured and predicted times, the "
        "preferred count and the future bottleneck (the stall category predicted to be largest at "
        "UPTO). Exit 2 when fewer than 2 counts succeed or no run shows parallel activity (the "
        "JSON is still written).",
    )
    p.add_argument("--threads", type=_sweep_threads, metavar="N,N,...",
                   help="counts to run (default: 1 up to the CPUs this process may use)")
    p.add_argument("--repeat", type=_count, default=3, metavar="R",
                   help="runs per count; median time, spread = half the range (default %(default)s)")
    p.add_argument("--upto", type=_count, metavar="N",
                   help="predict up to N (default: 2x the largest count, at least 16)")
    p.add_argument("--runtime", choices=("openmp", "pthreads", "opencl"), default="openmp",
                   help="how the count reaches the program (default %(default)s)")
    p.add_argument("--placement", choices=PLACEMENTS, default="compact",
                   help="which CPUs a count gets: compact (cores before SMT siblings, one socket after "
                   "the other), spread (cores round-robin over sockets), none (the first n in numeric "
                   "order); OpenMP programs also get OMP_PLACES and OMP_PROC_BIND (default %(default)s)")
    p.add_argument("--json-out", metavar="FILE", help="write the result as one JSON object")
    p.add_argument("--plot", metavar="OUT.png", help="also plot measured and predicted times")
    p.add_argument("--html", metavar="OUT.html", help="also write an HTML report")
    p.add_argument("--stall-plugin", metavar="FILE",
                   help="extra stall categories read from stdout/stderr/a file (JSON, or TOML on Python 3.11+)")
    p.add_argument("--timeout", type=_seconds, default=600.0, metavar="S",
                   help="a run taking longer is killed and its count recorded as failed (default %(default)g)")
    p.add_argument("--launcher", metavar='"mpirun -np {ranks}"',
                   help="sweep MPI rank counts: launch each run with this command ({ranks} = the count), "
                   "each rank under 'corecast run'; --threads is then one count per rank (OMP_NUM_THREADS)")
    p.add_argument("--ranks", type=_sweep_threads, metavar="N,N,...", help="rank counts for --launcher")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS...")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    import importlib.util

    from . import sweep

    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:
        raise CliError("no command given (usage: corecast sweep [options] -- CMD ARGS...)")
    plugins = sweep.load_plugins(args.stall_plugin) if args.stall_plugin else []
    if args.plot or args.html:  # find out before a long sweep, not after it
        try:
            found = importlib.util.find_spec("corecast.sweepviz") is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise CliError("--plot and --html need corecast.sweepviz, which is not installed")
    for path in (args.json_out, args.plot, args.html):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise CliError("its folder does not exist", path)

    counts, launch = args.threads, None
    if args.ranks and not args.launcher:
        raise CliError("--ranks needs --launcher (e.g. --launcher \"mpirun -np {ranks}\")")
    if args.launcher:
        if args.threads and len(args.threads) > 1:
            raise CliError("with --launcher, --threads is one count per rank (OMP_NUM_THREADS)")
        launch = sweep.Launch.parse(args.launcher, args.threads[0] if args.threads else None)
        counts = args.ranks
    failure: sweep.SweepError | None = None
    try:
        result = sweep.run_sweep(command, threads=counts, repeat=args.repeat, upto=args.upto, launch=launch,
                                 runtime=args.runtime, plugins=plugins, timeout=args.timeout,
                                 progress=True, placement=args.placement)
    except sweep.SweepError as e:
        if e.result is None:
            raise CliError(str(e)) from None
        failure, result = e, e.result
    except KeyboardInterrupt:
        raise CliError("interrupted; nothing written") from None
    if args.json_out:
        sweep.write_json(result, args.json_out)
    if result["measured"] and (args.plot or args.html):  # failed sweeps still show what was measured
        from . import sweepviz

        for path, draw in ((args.plot, "plot_sweep"), (args.html, "html_report")):
            if path:
                getattr(sweepviz, draw)(result, path)  # errors: one line naming the file
    sys.stdout.write(sweep.format_sweep(result))
    if failure is not None:
        raise CliError(str(failure))
    return 0


SUBCOMMANDS.append(add_sweep)


# ---------------------------------------------------------------- export


def add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="convert a 'corecast sweep' result: Extra-P input, HTML report, PNG",
        description="Read SWEEP.json (what 'corecast sweep --json-out' writes) and write any of: "
        "Extra-P JSON Lines (one line per measured run: parameter p = threads, callpath main, "
        "metric time, plus metric stall:NAME per stall category), a self-contained HTML report, "
        "a PNG plot.",
    )
    p.add_argument("file", metavar="SWEEP.json", help="a corecast sweep result")
    p.add_argument("--extrap", metavar="OUT.jsonl", help="write Extra-P JSON Lines input here")
    p.add_argument("--html", metavar="OUT.html", help="write an HTML report here")
    p.add_argument("--plot", metavar="OUT.png", help="write a PNG plot here")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from . import sweepviz  # matplotlib is slow to import; only load it when asked
    from .fileio import OutputError, load_sweep_json

    outputs = [(path, write) for path, write in ((args.extrap, sweepviz.export_extrap),
                                                 (args.html, sweepviz.html_report),
                                                 (args.plot, sweepviz.plot_sweep)) if path]
    if not outputs:
        raise CliError("nothing to export: give --extrap OUT.jsonl, --html OUT.html or --plot OUT.png")
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


SUBCOMMANDS.append(add_export)


# ---------------------------------------------------------------- numa, machine


def _efficiency(text: str) -> float:
    f = _number(text)
    if not 0 <= f < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in [0, 1)")
    return f


def add_numa(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "numa",
        help="predict speedup per NUMA node count from a memory-traffic sample",
        description="SPEC section 4's two-level queueing model: speedup at 1..K nodes of MACHINE, "
        "relative to the program alone on one node, from a sample of its memory traffic "
        "(rates per work cycle, or raw counts with total_cycles), optionally next to a "
        "co-running program on the last nodes of the fill order. --replay predicts again "
        "every region of a 'corecast run --target-machine' JSON Lines file.",
    )
    p.add_argument("--machine", required=True, metavar="M.json",
                   help="machine description file or preset name (see 'corecast machine presets')")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--sample", metavar="S.json", help='{"llc": [...], "bus": [...], "mct": [...]}')
    src.add_argument("--replay", metavar="FILE.jsonl", help="JSON Lines written by corecast run")
    p.add_argument("--co-run", metavar="S2.json", help="sample of a program running at the same time")
    p.add_argument("--co-nodes", type=_count, metavar="K2", help="nodes the co-runner takes")
    p.add_argument("--efficiency", type=_efficiency, metavar="F",
                   help="preferred = the fewest nodes within F of the best speedup (default: the best)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=cmd_numa)


def _node_table(rows: list[dict]) -> str:
    lines = ["  nodes  cores  speedup"]
    lines += [f"  {r['nodes']:5d}  {r['cores']:5d}  {r['speedup']:7.2f}" for r in rows]
    return "\n".join(lines)


def cmd_numa(args: argparse.Namespace) -> int:
    from . import numa

    if (args.co_run is None) != (args.co_nodes is None):
        raise CliError("--co-run and --co-nodes go together")
    if args.replay and args.co_run:
        raise CliError("--co-run works with --sample, not with --replay")
    try:
        machine = numa.load(args.machine)
        if args.replay:
            return _replay(args, machine)
        rates = numa.load_sample(args.sample, machine)
        co = [(numa.load_sample(args.co_run, machine), args.co_nodes)] if args.co_run else []
        pred = numa.predict_nodes(machine, rates, co, args.efficiency)
    except (numa.MachineError, numa.SampleError) as exc:
        raise CliError(str(exc)) from None
    out = pred.to_dict()
    if co:
        out["co_runner"] = {"nodes": args.co_nodes,
                            "node_ids": machine.fill_order[-args.co_nodes:]}
    if args.json:
        _print_json(out)
        return 0
    c = machine.cores_per_node
    print(f"machine: {machine.name} ({machine.nodes} nodes x {c} cores)")
    if co:
        print(f"co-runner on nodes {','.join(map(str, out['co_runner']['node_ids']))}")
    print("speedup relative to the program alone on one node:")
    print(_node_table(out["predictions"]))
    k = pred.preferred
    within = f" (fewest within {args.efficiency:.0%} of the best)" if args.efficiency else ""
    print(f"preferred: {k} node(s), {k * c} cores{within}")
    for note in pred.notes:
        print(f"note: {note}")
    return 0


def _replay(args: argparse.Namespace, machine) -> int:
    from .fileio import read_text
    from .numa.model import preferred_nodes
    from .runtime.numa import node_prediction

    regions = []
    lines = read_text(args.replay).splitlines()  # errors: one line naming the file
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CliError(f"line {no}: not JSON: {exc.msg}", args.replay) from None
        # region, process and kernel events with node predictions (the summary's "numa"
        # is the recording machine's topology)
        if (not isinstance(event, dict) or not isinstance(event.get("numa"), dict)
                or not isinstance(event.get("predicted_nodes"), list)):
            continue
        rec = event["numa"]
        inputs = rec.get("inputs") if isinstance(rec.get("inputs"), dict) else {}
        sync = rec.get("sync")
        try:
            if isinstance(sync, list) and sync:
                # the recorded sync factor was for the recording's machine: re-sample it per core
                from .runtime.numa import interpolate

                c0 = event["predicted_nodes"][0]["cores"]
                pts = [(c0 * (i + 1), float(v)) for i, v in enumerate(sync)]
                sync = [interpolate(pts, k * machine.cores_per_node) / interpolate(pts, machine.cores_per_node)
                        for k in range(1, machine.nodes + 1)]
            else:
                sync = None
            speedup, basis, measured, fitted, _, notes = node_prediction(machine, inputs, sync)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CliError(f"line {no}: unusable numa record: {exc}", args.replay) from None
        pref = preferred_nodes(speedup, args.efficiency)
        c = machine.cores_per_node
        regions.append({"name": event.get("name"), "object": event.get("object"),
                        "predictions": [{"nodes": k, "cores": k * c, "speedup": round(s, 6)}
                                        for k, s in enumerate(speedup, 1)],
                        "preferred_nodes": pref, "basis": basis, "measured": measured,
                        "fitted": fitted, "notes": notes})
    if not regions:
        raise CliError("no region with NUMA inputs (record with 'corecast run --target-machine')",
                       args.replay)
    if args.json:
        _print_json({"machine": machine.name, "regions": regions})
        return 0
    print(f"machine: {machine.name} ({machine.nodes} nodes x {machine.cores_per_node} cores)")
    for r in regions:
        curve = "  ".join(f"{p['nodes']}:{p['speedup']:.2f}" for p in r["predictions"])
        print(printable(f"{r['name']} ({r['object']}): {curve}  preferred {r['preferred_nodes']}"))
        print(f"  basis: {r['basis']}" + (f"; fitted: {','.join(r['fitted'])}" if r["fitted"] else ""))
    return 0


def add_machine(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "machine",
        help="machine descriptions for 'corecast numa': detect this one, list or show presets",
        description="'detect' writes this machine's description from sysfs (nodes, CPUs, the "
        "SLIT distance table mapped to hop classes) with delays per hop class from a preset or "
        "a calibration file; 'presets' lists the shipped descriptions; 'show' prints one.",
    )
    msub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    d = msub.add_parser("detect", help="describe this machine")
    d.add_argument("-o", "--output", metavar="M.json", help="write here instead of stdout")
    d.add_argument("--delays", metavar="PRESET|FILE", default="opteron6380",
                   help="delays per hop class from this preset or file: a machine description or "
                   '{"bus_delay_by_hops": [...], "controller_delay": D_m} (default opteron6380)')
    d.add_argument("--name", help="name to put in the description")
    d.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)
    msub.add_parser("presets", help="list the shipped machine descriptions")
    s = msub.add_parser("show", help="print a preset or file as normalised JSON")
    s.add_argument("machine", metavar="PRESET|FILE")
    p.set_defaults(func=cmd_machine)


def cmd_machine(args: argparse.Namespace) -> int:
    from . import numa
    from .fileio import write_file

    try:
        if args.action == "presets":
            for name in numa.presets():
                m = numa.load(name)
                print(f"{name:14s} {m.nodes} nodes x {m.cores_per_node} cores  {m.name}")
            return 0
        if args.action == "show":
            sys.stdout.write(numa.load(args.machine).to_json())
            return 0
        machine = numa.detect(args.sysfs, numa.machine.load_delays(args.delays), args.name)
    except numa.MachineError as exc:
        raise CliError(str(exc)) from None
    text = machine.to_json()
    if args.output:
        write_file(args.output, text)  # errors: one line naming the file
        print(f"wrote {args.output}: {machine.nodes} node(s) x {machine.cores_per_node} cores",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


SUBCOMMANDS += [add_numa, add_machine]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="corecast", description="Predict how a parallel program scales with the thread count.",
                     epilog="Files: '-' is standard input or output; an input file may be at most "
                     f"{settings.MAX_INPUT_MB} MiB (default {DEFAULT_MAX_INPUT_MB}).")
    parser.add_argument("--version", action="version", version=f"corecast {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in SUBCOMMANDS:
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 error)."""
    try:
        args = build_parser().parse_args(argv)
        status = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a message at interpreter exit
        return status
    except BrokenPipeError:  # 'corecast ... | head': the reader needs no more
        _drop_stdout()
        return 0
    except SystemExit as e:  # --help and friends
        return e.code if isinstance(e.code, int) else 0
    except CliError as e:
        print(e.line(), file=sys.stderr)
    except Exception as e:
        if isinstance(e, InputError):
            print(CliError(str(e)).line(), file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get(settings.DEBUG):
            raise
        print(CliError(f"internal error: {type(e).__name__}: {e}").line(), file=sys.stderr)
    return EXIT_ERROR

