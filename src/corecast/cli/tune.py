"""``corecast tune-sim``: the online tuners replayed against a measured curve."""
from __future__ import annotations

import argparse

from ..errors import InputError
from ..io.fileio import printable
from .common import CliError, add_format_option, add_output_options, noise, print_json, seed


def add_tune_sim(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune-sim",
        help="replay the online tuners (OPreSca, Binsearch) against a measured curve",
        description="Simulate online thread-count selection with the measured curve as the oracle: "
        "the candidates are the counts in FILE, each interval returns the measured performance "
        "at the chosen count (times 1 + NOISE * N(0,1)). steps: intervals until convergence, the "
        "convergence interval included; loss: 1 - perf(chosen)/perf(best measured), in percent; "
        "summed loss adds every step's loss (so it may pass 100%).",
    )
    p.declare_later(_tune_sim_arguments)
    p.set_defaults(func=cmd_tune_sim)


def _tune_sim_arguments(p: argparse.ArgumentParser) -> None:
    from ..model.curve.entities import METRICS  # numpy: only when tune-sim runs

    p.add_argument("file", metavar="FILE", nargs="+", help="what 'corecast predict' reads: a CSV (count column, "
                   "then time/throughput/value), a sweep result, hyperfine's export, Extra-P input, Caliper or CUBE "
                   "profiles (one per count); one curve of it")
    add_format_option(p, "curves", "FILE")
    p.add_argument("--metric", choices=METRICS, help="metric of a 'value' column")
    p.add_argument("--callpath", metavar="NAME", help="the callpath or region of a profile to replay (as predict's)")
    p.add_argument("--profile-metric", metavar="NAME", help="the profile's metric to replay (as predict's)")
    p.add_argument("--count-attribute", metavar="NAME", help="what in a profile is the count (as predict's)")
    p.add_argument("--noise", type=noise, default=0.0, metavar="FRACTION",
                   help="relative measurement noise per interval, from 0 to 1 (default 0)")
    p.add_argument("--seed", type=seed, default=0, metavar="N", help="random seed for the noise (default 0)")
    add_output_options(p)


def cmd_tune_sim(args: argparse.Namespace) -> int:
    import numpy as np

    from ..io.readers import read_inputs
    from ..model.tuning.tunesim import simulate
    from ..model.tuning.tuners import Binsearch, OPreSca
    from ..views.report import count_nouns

    try:  # predict's readers: a tuner replays any curve predict can read
        series = read_inputs(args.file, args.metric, args.callpath, args.profile_metric, args.count_attribute,
                             args.format)
    except InputError as e:
        raise CliError(str(e)) from None
    if len(series) > 1:
        raise CliError(f"tune-sim replays one curve and the input has {len(series)} (callpath, metric) pairs: "
                       "pick one with --callpath and --profile-metric", args.file[0])
    if series[0].data is None:
        raise CliError(series[0].error, args.file[0])
    # every measured count, as tune-sim replayed a sweep result before it read predict's
    # way (predict fits a sweep's counts within its CPUs only: as_the_sweep)
    s = series[0]
    data, unit = (s.data if s.measured is None else s.measured), s.count_unit
    try:
        data = data.at_target_size()
    except InputError as e:
        raise CliError(str(e), args.file[0]) from None
    if len(data) < 3:
        raise CliError(f"tune-sim needs at least 3 measured counts, got {len(data)}", args.file[0])
    counts = [int(c) for c in data.counts]
    perf = data.perf
    results: dict[str, dict] = {}
    paths: dict[str, list] = {}
    for name, tuner in (("opresca", OPreSca(counts, rng_seed=args.seed)), ("binsearch", Binsearch(counts))):
        paths[name] = []
        results[name] = simulate(tuner, counts, perf, noise=args.noise, rng_seed=args.seed, trace=paths[name])
    best = counts[int(np.argmax(perf))]
    if args.json:
        # counts_tried: what the table's last column prints (newuser30: the JSON lacked it);
        # "input": the table's first line, what the losses are measured against (newuser31)
        print_json({**{name: {"steps": int(r["steps"]), "chosen": int(r["chosen"]),
                              "final_loss": float(r["final_loss"]), "sum_loss": float(r["sum_loss"]),
                              "counts_tried": [int(c) for c, _, _ in paths[name]]}
                       for name, r in results.items()},
                    "input": {"file": args.file[0] if len(args.file) == 1 else args.file, "counts": counts,
                              "count_unit": unit, "metric": data.metric, "best_measured": best, "noise": float(args.noise), "seed": int(args.seed),
                              "warnings": list(s.warnings)}})
        return 0
    print(f"{printable(' '.join(args.file))}: {len(counts)} counts of {unit} ({counts[0]}..{counts[-1]}), "
          f"{data.metric}, best measured at {best} {count_nouns(unit)[best == 1]}; noise {args.noise:g}\n")
    print(f"{'tuner':10s} {'steps':>5s} {'chosen':>6s} {'final loss':>10s} {'summed loss':>11s}  counts tried")
    for name, label in (("opresca", "OPreSca"), ("binsearch", "Binsearch")):
        r = results[name]
        tried = " ".join(str(c) for c, _, _ in paths[name])
        print(f"{label:10s} {r['steps']:5d} {r['chosen']:6d} {r['final_loss']:10.1%} {r['sum_loss']:11.1%}  {tried}")
    for note in s.warnings:  # what the reader left out (hyperfine's failed runs), as predict says it
        print(f"warning: {printable(note)}")
    return 0


COMMANDS = [add_tune_sim]
