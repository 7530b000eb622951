"""Online thread-count selection benchmark: OPreSca vs. Binsearch on measured curves.

Each curve in the datasets directory is replayed as the oracle (``corecast.model.tuning.tunesim.simulate``):
the candidates are the counts present in the file, a step's loss is
1 - perf(chosen)/perf(best measured), ``steps`` counts intervals until convergence (the
convergence interval included) and ``sum`` adds every step's loss.  Printed per curve and
averaged, first noise-free, then with multiplicative Gaussian noise (default 2%) averaged
over several noise seeds.  ``ratio`` is Binsearch's mean summed loss over OPreSca's.

The paper (PreSca/OPreSca, section 4.5) reports < 7 steps on average, < 3% final loss and
a 2-3.5x lower summed loss than Binsearch (with its best fixed seeds).

``--decision-time`` times OPreSca's decisions instead (``observe``, fit included: the
step the steering runs inside a profiled program, standard library only) over every curve.

    python benchmarks/tuning.py [--datasets DIR] [--noise 0.02] [--seeds 10] [--quiet]
    python benchmarks/tuning.py --decision-time
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from corecast.model.curve.entities import InputError
from corecast.io.readers.measurements import read_measurements
from corecast.model.tuning.tuners import Binsearch, OPreSca
from corecast.model.tuning.tunesim import simulate

DEFAULT_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
KEYS = ("steps", "final_loss", "sum_loss")


def load_curves(directory: Path) -> list[tuple[str, np.ndarray, np.ndarray]]:
    curves = []
    for path in sorted(directory.glob("*.csv")):
        try:
            data = read_measurements(str(path)).at_target_size()
        except InputError as e:
            print(f"skipping {path.name}: {e}", file=sys.stderr)
            continue
        if len(data) >= 3:
            curves.append((path.stem, data.counts.astype(int), data.perf))
    return curves


def run_curve(counts, perf, noise: float, rng_seed: int, opresca_kwargs: dict) -> dict[str, dict]:
    return {
        "opresca": simulate(OPreSca(counts, rng_seed=rng_seed, **opresca_kwargs), counts, perf,
                            noise=noise, rng_seed=rng_seed),
        "binsearch": simulate(Binsearch(counts), counts, perf, noise=noise, rng_seed=rng_seed),
    }


def evaluate(curves, noise: float, seeds: int, opresca_kwargs: dict | None = None) -> dict[str, dict]:
    """{curve: {tuner: {key: mean over noise seeds}}}."""
    opresca_kwargs = opresca_kwargs or {}
    out = {}
    for name, counts, perf in curves:
        runs = [run_curve(counts, perf, noise, s, opresca_kwargs) for s in range(seeds if noise > 0 else 1)]
        out[name] = {t: {k: float(np.mean([r[t][k] for r in runs])) for k in KEYS}
                     for t in ("opresca", "binsearch")}
    return out


def averages(results: dict[str, dict]) -> dict[str, dict]:
    return {t: {k: float(np.mean([r[t][k] for r in results.values()])) for k in KEYS}
            for t in ("opresca", "binsearch")}


def print_table(title: str, results: dict[str, dict], verbose: bool = True) -> None:
    print(title)
    head = f"{'curve':50s} {'O steps':>7s} {'O final':>8s} {'O sum':>6s}   {'B steps':>7s} {'B final':>8s} {'B sum':>6s}"
    print(head)
    print("-" * len(head))

    def row(name: str, r: dict) -> str:
        o, b = r["opresca"], r["binsearch"]
        return (f"{name[:50]:50s} {o['steps']:7.1f} {o['final_loss']:8.1%} {o['sum_loss']:6.2f}   "
                f"{b['steps']:7.1f} {b['final_loss']:8.1%} {b['sum_loss']:6.2f}")

    if verbose:
        for name, r in results.items():
            print(row(name, r))
        print("-" * len(head))
    avg = averages(results)
    print(row(f"average over {len(results)} curves", avg))
    ratio = avg["binsearch"]["sum_loss"] / avg["opresca"]["sum_loss"] if avg["opresca"]["sum_loss"] > 0 else float("inf")
    print(f"summed-loss ratio Binsearch / OPreSca: {ratio:.2f}x\n")


def decision_times(curves, noise: float, seeds: int) -> list[float]:
    """Seconds per OPreSca decision (one ``observe``) over every curve and noise seed."""
    times: list[float] = []
    for _, counts, perf in curves:
        for s in range(seeds):
            tuner = OPreSca(counts, rng_seed=s)
            observe = tuner.observe

            def timed(c, p, observe=observe):
                t0 = time.perf_counter()
                observe(c, p)
                times.append(time.perf_counter() - t0)

            tuner.observe = timed
            simulate(tuner, counts, perf, noise=noise, rng_seed=s)
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    ap.add_argument("--noise", type=float, default=0.02, help="noise fraction of the noisy run (default 0.02)")
    ap.add_argument("--seeds", type=int, default=10, help="noise seeds averaged (default 10)")
    ap.add_argument("--quiet", action="store_true", help="averages only")
    ap.add_argument("--decision-time", action="store_true", help="time OPreSca's decisions instead")
    args = ap.parse_args(argv)
    if not args.datasets.is_dir() and args.datasets == DEFAULT_DATASETS:
        print(f"tuning.py: skipped: no {DEFAULT_DATASETS} (give --datasets DIR; tests/data/curves holds a copy)")
        return 0
    curves = load_curves(args.datasets)
    if not curves:
        print(f"no curves in {args.datasets}", file=sys.stderr)
        return 2
    if args.decision_time:
        t = sorted(decision_times(curves, args.noise, args.seeds))
        print(f"OPreSca decisions: {len(t)} over {len(curves)} curves x {args.seeds} seeds (noise {args.noise:g}): "
              f"median {statistics.median(t) * 1e3:.2f} ms, 95th percentile {t[int(0.95 * (len(t) - 1))] * 1e3:.2f} ms, "
              f"max {t[-1] * 1e3:.2f} ms")
        return 0
    print_table("noise-free", evaluate(curves, 0.0, 1), verbose=not args.quiet)
    print_table(f"noise {args.noise:g}, mean over {args.seeds} seeds",
                evaluate(curves, args.noise, args.seeds), verbose=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
