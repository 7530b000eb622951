"""``corecast predict FILE`` and ``corecast demo``: offline predictions from measured curves."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..io import settings
from ..errors import InputError
from ..io.fileio import printable
from .common import (CliError, add_format_option, add_output_options, count, count_list, fraction, outputs_apart,
                     plot_to_stdout, print_json, whole_in)

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..model.curve.entities import Measurements, CurvePrediction

DEMO_DATA = "usl4j__cisco_benchmark.csv"
DEMO_TRAIN_UPTO = 16
DEMO_PREDICT_UPTO = 32


def add_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="predict scaling from a CSV of measurements",
        description="Predict performance at every count 1..UPTO from measured counts.",
    )
    p.declare_later(_predict_arguments)
    p.set_defaults(func=cmd_predict)


def _predicted_count(text: str) -> int:
    """A count to predict: at most the model's largest (an argument's error, not the file's)."""
    from ..model.curve.prediction import MAX_COUNT  # numpy: only where predict parses a count

    return whole_in(1, MAX_COUNT)(text)


def _predicted_counts(text: str) -> list[int]:
    return [_predicted_count(str(n)) for n in count_list(text)]


def _predict_arguments(p: argparse.ArgumentParser) -> None:
    from ..model.curve import methods  # numpy and scipy: only when predict runs
    from ..model.curve.entities import METRICS
    from ..model.machine.hardware import FILLS
    from ..model.curve.prediction import DEFAULT_KNEE_FRACTION, DEFAULT_MIN_GAIN, SCALINGS

    p.add_argument("file", metavar="FILE", nargs="+",
                   help="CSV (count column, then time/throughput/value, optional stall:NAME and size:NAME "
                   "columns), a sweep result, hyperfine's CSV or JSON export of a parameter scan, an Extra-P "
                   "input file (text, JSON, JSON Lines), Caliper profiles (.cali, JSON) or Score-P's CUBE profiles "
                   "(.cubex, or their folders), one per count")
    add_format_option(p, "curves", "FILE")
    p.add_argument("--metric", choices=METRICS, help="metric of a 'value' column (Extra-P and Caliper "
                   "values: time unless given)")
    p.add_argument("--callpath", metavar="NAME", help="Extra-P callpath, Caliper region or CUBE callpath "
                   "('main->solve', quoted) to predict (default: every one; CUBE: the call tree's root)")
    p.add_argument("--profile-metric", metavar="NAME", help="Extra-P metric, Caliper attribute or CUBE metric "
                   "to predict (default: every Extra-P metric; Caliper's inclusive time; CUBE's time)")
    p.add_argument("--count-attribute", metavar="NAME", help="Caliper attribute or global holding the count "
                   "(default: the first of omp.num.threads, threads, ..., mpi.world.size that varies); for CUBE "
                   "profiles name (the folder's, Extra-P's mm.p8.r1), threads, processes or locations (threads x "
                   "processes) (default: name where every folder's carries it, else locations)")
    p.add_argument("--upto", type=_predicted_count, metavar="N",
                   help="predict up to this count (default: 2x the largest measured)")
    p.add_argument("--at", type=_predicted_counts, default=[], metavar="N,N,...", help="extra counts to predict")
    p.add_argument("--hw-threads", type=count, metavar="N",
                   help="hardware threads (logical CPUs) of the machine to predict for: counts above N "
                   "time-share them and are predicted no faster than N (default for a sweep result with "
                   "counts past its CPUs: those CPUs, as the sweep predicted)")
    p.add_argument("--cores", type=count, metavar="C",
                   help="cores of that machine (default: --hw-threads, no SMT): counts between C and N "
                   "share cores and each adds a fraction of a core")
    p.add_argument("--sockets", type=count, metavar="S",
                   help="sockets of that machine (default 1); they matter with --fill sockets")
    p.add_argument("--fill", choices=FILLS,
                   help="the order threads fill that machine: cores (default: a thread on every core before any "
                   "core gets a second; unpinned threads, corecast sweep's placements) or sockets (one socket's "
                   "cores, then their further hardware threads, then the next socket's)")
    p.add_argument("--this-machine", action="store_true",
                   help="predict for this machine: the CPUs this process may use and their cores, from sysfs "
                   "(--hw-threads and --cores override)")
    p.add_argument("--method", choices=list(methods.METHODS), default="auto",
                   help="; ".join(f"{m.name}: {m.summary}" for m in methods.METHODS.values()))
    add_output_options(p, plot=True)
    p.add_argument("--knee-fraction", type=fraction, default=DEFAULT_KNEE_FRACTION, metavar="F",
                   help="knee: where one more thread gains less than F of a thread (default %(default)s)")
    p.add_argument("--min-gain", type=fraction, default=DEFAULT_MIN_GAIN, metavar="F",
                   help="preferred count: the largest count up to which every added thread gains at least F "
                   "of one thread (default %(default)s); beyond the measured counts the band's low end must gain")
    p.add_argument("--scaling", choices=SCALINGS,
                   help="strong (default: fixed total work, time should fall) or weak (fixed work per thread or "
                   "rank, as Extra-P's --scaling weak: efficiency is T(base)/T(n))")


def cmd_predict(args: argparse.Namespace) -> int:
    from ..io.readers import read_inputs
    from ..views.report import format_table

    png_only = plot_to_stdout(args)
    outputs_apart([("--plot", args.plot)], args.file)  # `predict data --plot data` replaced the data

    try:
        series = read_inputs(args.file, args.metric, args.callpath, args.profile_metric,
                             args.count_attribute, args.format)  # messages already name the file
    except InputError as e:
        raise CliError(str(e)) from None
    hw_threads, cores = args.hw_threads, args.cores
    if hw_threads is None and cores is None and not args.this_machine and len(series) == 1:
        hw_threads = series[0].hw_threads  # a sweep's CPUs, where its counts outgrew them
    if args.this_machine:
        from ..model.machine.sysfs import this_machine

        here = this_machine()
        hw_threads, cores = hw_threads or here[0], cores or here[1]
    from ..model.machine.hardware import Hardware

    try:
        hardware = Hardware.of(hw_threads, cores, args.sockets, args.fill)
    except InputError as e:
        raise CliError(str(e)) from None
    options = dict(upto=args.upto, at=args.at, method=args.method, knee_fraction=args.knee_fraction,
                   hardware=hardware, min_gain=args.min_gain, scaling=args.scaling)
    if series[0].callpath is None:  # a corecast CSV or sweep result: one curve
        pred = _predict(series[0].data, args.file[0], count_unit=series[0].count_unit,
                        read_notes=_read_notes(series[0]), value_name=series[0].value_name, **options)
        # Plot before printing so a failed plot does not leave a half-reported success.
        if args.plot:
            _plot(pred, args.plot)
        if args.json:
            print_json(pred.to_dict())
        elif not png_only:
            sys.stdout.write(format_table(pred, every_measured=series[0].measured))
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
            results.append((s, _predict(s.data, args.file[0], count_unit=s.count_unit, read_notes=_read_notes(s),
                                        value_name=s.value_name, **options), None))
        except CliError as e:
            results.append((s, None, str(e)))
    done = [(s, pred) for s, pred, _ in results if pred is not None]
    if args.plot and done:  # named: the plot of one of a profile's many regions said none
        _plot(done[0][1], args.plot, label=done[0][0].label)
    if args.json:
        print_json({"source": series[0].source, "series": [
            {"callpath": s.callpath, "metric_name": s.metric_name,
             **(pred.to_dict() if pred is not None else {"error": error})} for s, pred, error in results]})
    elif not png_only:
        for i, (s, pred, error) in enumerate(results):
            sys.stdout.write(("\n" if i else "") + printable(f"== {s.label}") + "\n")
            sys.stdout.write(format_table(pred, every_measured=s.measured) if pred is not None
                             else printable(f"cannot predict: {error}") + "\n")
    if not done:
        why = f" ({printable(results[0][0].label)}: {results[0][2]})" if len(results) == 1 else ""
        raise CliError(f"no (callpath, metric) pair could be predicted{why}", args.file[0])
    return 0


def add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="predict a bundled real benchmark from its first half and compare",
        description=f"Train on counts <= {DEMO_TRAIN_UPTO} of the Cisco benchmark (Schwartz, "
        f"Practical Scalability), predict up to {DEMO_PREDICT_UPTO}, compare with the held-out counts.",
    )
    add_output_options(p, plot=True)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from importlib import resources

    import numpy as np

    from ..io.readers.measurements import read_measurements
    from ..views.report import format_table

    png_only = plot_to_stdout(args)
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
        print_json(out)
    elif not png_only:
        print(f"demo: {DEMO_DATA}, trained on counts <= {DEMO_TRAIN_UPTO}, "
              f"predicting up to {DEMO_PREDICT_UPTO}\n")
        sys.stdout.write(format_table(pred, reference=full))
        print(f"median relative error on the {len(held)} held-out counts "
              f"({int(held.counts.min())}..{int(held.counts.max())}): {median_error:.1%}")
    return 0


def _read_notes(series) -> list[str]:
    """What the reader said of ``series`` (a ``readers.raw.Series``), then what its fit leaves out."""
    return [*series.warnings, *([series.fit_note] if series.fit_note else [])]


def _predict(data: Measurements, file: str, count_unit: str = "threads", read_notes: Sequence[str] = (),
             **kwargs) -> CurvePrediction:
    """predict_measurements with its errors turned into one-line CliErrors; ``count_unit``
    labels the counts (threads, or ranks); ``read_notes``: the reader's warnings, first."""
    from dataclasses import replace

    from ..model.curve.extrapolation import with_advice
    from ..model.curve.prediction import predict_measurements

    try:
        pred = predict_measurements(data, **kwargs)
        return replace(pred, count_unit=count_unit,
                       warnings=[*read_notes, *with_advice(pred.warnings, "; try another --method")])
    except InputError as e:
        raise CliError(str(e), file) from None
    except Exception as e:  # a bug in a model must not surface as a traceback
        if settings.debug():
            raise
        raise CliError(f"internal error in method {kwargs.get('method')}: {type(e).__name__}: {e}", file) from None


def _plot(pred: CurvePrediction, path: str, reference: Measurements | None = None, label: str = "") -> None:
    from ..views.plot import plot_prediction  # matplotlib is slow to import; only load it when asked

    plot_prediction(pred, path, reference=reference, label=printable(label))  # errors: one line naming the file


COMMANDS = [add_predict, add_demo]
