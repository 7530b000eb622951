"""Why auto's member selection misses: for every split of benchmarks/accuracy.py where auto's
largest error on (m, 2m] is 20% or more, the member that was best in hindsight (lowest
median error there) next to what auto's backtest said of each member (fitted up to the
count nearest m/2, worst error on the counts above it, up to m).  The summary says how
well the backtest ranks the members on all splits: how often its best member is the
hindsight best (chance: 1 / members), and the mean Spearman rank correlation between
backtest errors and errors on (m, 2m].

    python benchmarks/selection.py [--datasets DIR] [--all]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from accuracy import CORPUS, Split, load_all, splits, try_score
from corecast.methods import auto
from corecast.prediction import predict_measurements

MEMBERS = auto.BASE_MEMBERS + ("damped",)
MISS = 0.2


def backtest_of(sp: Split) -> dict[str, float]:
    """auto's backtest errors on the split's training points (members without one: inf)."""
    with auto.using(auto.Rules(members=MEMBERS)):
        pred = predict_measurements(sp.train, upto=int(sp.full.counts.max()), method="auto")
    bt = pred.extras.get("backtest", {})
    return {m: (bt[m] if bt.get(m) is not None else np.inf) for m in MEMBERS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    ap.add_argument("--all", action="store_true", help="print every split, not only auto's misses")
    args = ap.parse_args(argv)
    all_splits = [s for name, data in load_all(args.datasets) for s in splits(name, data)]
    agree, ranked, rhos, worse = 0, 0, [], 0
    print(f"{'curve':55s} {'m':>4s} {'auto':>6s}  hindsight best   members: error on (m,2m] / backtest")
    for sp in all_splits:
        mine = try_score(sp, "auto")
        errors = {m: s.median_error for m in MEMBERS if (s := try_score(sp, m)) is not None}
        if mine is None or not errors:
            continue
        bt = backtest_of(sp)
        best = min(errors, key=errors.get)
        scored = [m for m in errors if np.isfinite(bt[m])]
        if len(scored) >= 3:
            ranked += 1
            pick = min(scored, key=bt.get)
            agree += pick == min(scored, key=errors.get)
            worse += errors[pick] > np.median([errors[m] for m in scored])
            rho = spearmanr([bt[m] for m in scored], [errors[m] for m in scored]).correlation
            if np.isfinite(rho):
                rhos.append(rho)
        if args.all or mine.max_error >= MISS:
            shown = " ".join(f"{m}:{errors[m]:.0%}/" + (f"{bt[m]:.0%}" if np.isfinite(bt[m]) else "-") if m in errors else f"{m}:-" for m in MEMBERS)
            print(f"{sp.curve[:55]:55s} {sp.m:4g} {mine.median_error:6.1%}  {best:8s} {errors[best]:6.1%}   {shown}")
    if ranked:
        print(f"\n{ranked} splits with 3+ backtested members: the backtest's best member is the hindsight "
              f"best in {agree / ranked:.0%} (chance {1 / len(MEMBERS):.0%} to {1 / 3:.0%}), worse than the "
              f"members' median error in {worse / ranked:.0%}; mean Spearman(backtest, error) "
              f"{np.mean(rhos):.2f} over {len(rhos)} splits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
