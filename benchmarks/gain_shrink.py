"""A candidate for #38, chosen leave one suite out and written down before the data that
decides it exists: shrink the runtime model's extrapolated gain.

Over-prediction of the gain from the sampled count n0 to 16 threads is the largest part of
the development error (docs/runtime-model.md, "The truth's own noise"): ln S(16) = ln S(n0)
+ g, and the recordings put the measured g below the predicted one more often than not
(waits and work that grow with the team, which one sample at n0 does not show).  The
candidate keeps S(n0) and scales g by A: ln S'(16) = ln S(n0) + A g.  A is chosen on the
development recordings (``bands.py``'s folders: corpus16's development suites, scale16 and
device16), leave one suite out, from a grid of 0.5..1.1, by the median |ln(pred / meas)| of
S(16) from 2 and 4 threads; the held-out suites are not read.

    python benchmarks/gain_shrink.py [--json]

It prints, per suite, the A its complement chose and the suite's median |ln| with it and
without (A = 1), then the pooled leave-one-suite-out figures and A chosen on every suite.
The candidate is not the model: ``scale16.py --gain-shrink A`` scores it on any folder.
The rule that decides it is in benchmarks/device36/README.md (ompscr, not yet measured).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

GRID = [round(0.5 + 0.025 * i, 3) for i in range(25)]
WITHIN = math.log(1.2)


def points() -> list[tuple[str, float, float, float]]:
    """(suite, at_n0, predicted gain, measured gain) of every development recording at 2
    and 4 threads (ln; a curve without T(1) has no at_n0 and is left out)."""
    import scale16
    from bands import DEFAULT_DIRS, DEFAULT_SKIP

    out = []
    for folder in DEFAULT_DIRS:
        keep = scale16.suite_filter("", DEFAULT_SKIP)
        for row in scale16.evaluate(folder, [2, 4], suites=keep):
            if row["at_n0"] is None:
                continue
            csv = folder / f"{row['curve']}.csv"
            curve = scale16.measured_curve(csv)
            measured = math.log(scale16.time_at(curve, row["sampled_at"]) / curve[scale16.TARGET])
            out.append((scale16.suite_of(csv), row["at_n0"], measured + row["gain"], measured))
    return out


def error(p: tuple[str, float, float, float], a: float) -> float:
    """|ln(predicted / measured S(16))| with the gain scaled by ``a``."""
    return abs(p[1] + a * p[2] - p[3])


def figures(errs: list[float]) -> dict:
    return {"points": len(errs), "median": round(statistics.median(errs), 4),
            "within_20pct": round(sum(e <= WITHIN for e in errs) / len(errs), 3), "worst": round(max(errs), 3)}


def choose(pts: list) -> float:
    """The A of GRID with the smallest median error over ``pts`` (ties: the one nearest 1)."""
    return min(GRID, key=lambda a: (statistics.median(error(p, a) for p in pts), abs(a - 1)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    pts = points()
    suites = sorted({p[0] for p in pts})
    per, held, plain = {}, [], []
    for s in suites:
        a = choose([p for p in pts if p[0] != s])
        mine = [p for p in pts if p[0] == s]
        held += [error(p, a) for p in mine]
        plain += [error(p, 1.0) for p in mine]
        per[s] = {"A": a, "with": figures([error(p, a) for p in mine]), "without": figures([error(p, 1.0) for p in mine])}
    result = {"per_suite": per, "loso": figures(held), "without": figures(plain), "chosen_on_all": choose(pts)}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for s, r in per.items():
        print(f"{s:<14} A {r['A']:<6} median {r['with']['median']:.3f} (A = 1: {r['without']['median']:.3f}), "
              f"within 20% {r['with']['within_20pct']:.2f} ({r['without']['within_20pct']:.2f}), "
              f"points {r['with']['points']}")
    print(f"leave one suite out: {result['loso']}")
    print(f"A = 1 (the model):   {result['without']}")
    print(f"chosen on every suite: A = {result['chosen_on_all']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
