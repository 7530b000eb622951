"""Why auto's member selection misses: for every split of benchmarks/accuracy.py where auto's
largest error on (m, 2m] is 20% or more, the member that was best in hindsight (lowest
median error there) next to what auto's backtest said of each member (fitted up to the
count nearest m/2, worst error on the counts above it, up to m).  The summary says how
well the backtest ranks the members on all splits: how often its best member is the
hindsight best (chance: 1 / members), and the mean Spearman rank correlation between
backtest errors and errors on (m, 2m].

``--reach`` asks whether auto's misses are the combination's or the members': per source,
the splits auto misses (largest error 20% or more) and how many of them no combination
of its members could have caught, the test values lying more than 20% outside the range
the shipped members span at some count (so a better weighting or selection cannot help
there, only another member or more information: the machine, the kind of lock).

``--ceiling`` asks how far any choice among the shipped rule's members could go: the
three figures of auto next to two choices made in hindsight, on the very splits they are
scored on (so neither is a method, only a bound): the member median whose subset of members
is best for each source (``accuracy.merit``), and the single member best on each split.
If even these miss a target, no weighting or selection of these members reaches it; only
another member or more information can.

``--picks`` asks instead whether a risk-aware choice of the count would lose less than
picking the count auto predicts best (what accuracy.py scores): per source, the mean
loss of each pick rule in ``PICKS`` (among the measured counts, from auto's prediction
and band), and leave one source out: the rule with the least loss on the other sources,
scored on the held-out one.

    python benchmarks/selection.py [--datasets DIR] [--all]
    python benchmarks/selection.py --picks [--datasets DIR]
    python benchmarks/selection.py --reach [--datasets DIR]
    python benchmarks/selection.py --ceiling [--datasets DIR]
"""
from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from accuracy import CORPUS, Score, Split, aggregate, merit, predict_split, score_values, source_of, splits_of, try_score
from corecast.model.curve.entities import InputError
from corecast.model.curve.methods import auto

MEMBERS = auto.BASE_MEMBERS + ("damped",)
MISS = 0.2


def backtest_of(sp: Split) -> dict[str, float]:
    """auto's backtest errors on the split's training points (members without one: inf)."""
    pred = predict_split(sp, "auto", auto.Rules(members=MEMBERS))
    bt = pred.extras.get("backtest", {})
    return {m: (bt[m] if bt.get(m) is not None else np.inf) for m in MEMBERS}


def _penalised(lam: float):
    """Performance discounted by (n / largest measured)^lam beyond the measured range:
    a count further out must be predicted that much better to be picked."""
    return lambda n, perf, low, top: perf * np.maximum(n / top, 1.0) ** -lam


def _within(share: float):
    """The fewest counts predicted within ``share`` of the best."""
    return lambda n, perf, low, top: np.where(perf >= perf.max() * (1 - share), -n, -np.inf)


# Pick rules: (counts, predicted performance, band's low edge, largest measured count)
# -> a score per count; the measured count with the highest score is picked.
PICKS = {
    "best predicted": lambda n, perf, low, top: perf,
    "best low edge": lambda n, perf, low, top: low,
    **{f"penalty n^-{lam:g}": _penalised(lam) for lam in (0.1, 0.25, 0.5)},
    "at most 2x measured": lambda n, perf, low, top: np.where(n <= 2 * top, perf, 0.0),
    **{f"fewest within {share:.0%}": _within(share) for share in (0.03, 0.1)},
}


def pick_losses(sp: Split) -> dict[str, float]:
    """Loss 1 - perf(picked) / perf(best measured) of every rule in PICKS on ``sp``."""
    full = sp.full
    pred = predict_split(sp, "auto")
    idx = full.counts.astype(int) - 1
    time = full.metric == "time"
    perf = 1 / pred.values[idx] if time else pred.values[idx]
    low = 1 / pred.high[idx] if time else pred.low[idx]
    top = float(sp.train.counts.max())
    out = {}
    for name, rule in PICKS.items():
        chosen = int(np.argmax(rule(full.counts, perf, low, top)))
        out[name] = float(1 - full.perf[chosen] / full.perf.max())
    return out


def picks_report(all_splits: list[Split]) -> None:
    losses = [pick_losses(sp) for sp in all_splits]
    sources = [source_of(sp) for sp in all_splits]
    names = sorted(set(sources))
    print(f"mean pick loss per source ({len(all_splits)} splits; auto's prediction and band)")
    print(f"{'pick rule':22s} " + " ".join(f"{s[:12]:>12s}" for s in names) + f" {'all':>8s}")
    for rule in PICKS:
        per = [np.mean([l[rule] for l, s in zip(losses, sources) if s == src]) for src in names]
        print(f"{rule:22s} " + " ".join(f"{v:12.1%}" for v in per) + f" {np.mean([l[rule] for l in losses]):8.1%}")
    held = []
    print("\nleave one source out: the rule with the least mean loss on the other sources")
    for src in names:
        rule = min(PICKS, key=lambda r: np.mean([l[r] for l, s in zip(losses, sources) if s != src]))
        mine = [l[rule] for l, s in zip(losses, sources) if s == src]
        held += mine
        print(f"  {src:14s} {rule:22s} {np.mean(mine):6.1%}")
    print(f"  {'all':14s} {'':22s} {np.mean(held):6.1%}")


def member_curves(sp: Split) -> dict[str, np.ndarray]:
    """Each of the shipped rule's members alone on ``sp`` (values at counts 1..its largest);
    a member the split's points cannot feed is left out, as auto's median leaves it out."""
    rules = auto.DEFAULT_RULES
    out = {}
    for m in rules.members:
        try:
            one = predict_split(sp, "auto", auto.Rules(members=(m,), damping=rules.damping, anchor=rules.anchor))
        except InputError:
            continue
        out[m] = np.asarray(one.values, float)
    return out


def reach(sp: Split) -> float:
    """The smallest largest relative error on (m, 2m] of any curve inside the range the
    shipped rule's members span at each count (0: every test value lies within it)."""
    full = sp.full
    idx = full.counts.astype(int) - 1
    test = (full.counts > sp.m) & (full.counts <= 2 * sp.m)
    curves = [c[idx][test] for c in member_curves(sp).values()]
    y = full.values[test]
    inside = np.clip(y, np.min(curves, axis=0), np.max(curves, axis=0))
    return float(np.max(np.abs(inside - y) / y))


def reach_report(all_splits: list[Split]) -> None:
    rows: dict[str, list[int]] = {}
    for sp in all_splits:
        mine = try_score(sp, "auto")
        row = rows.setdefault(source_of(sp), [0, 0, 0])
        row[0] += 1
        if mine is not None and mine.max_error >= MISS:
            row[1] += 1
            row[2] += reach(sp) >= MISS
    print(f"{'source':14s} {'splits':>6s} {'auto misses':>11s} {'beyond the members':>18s}")
    for src, (n, missed, beyond) in sorted(rows.items()) + [("all", [sum(r[i] for r in rows.values())
                                                                      for i in range(3)])]:
        print(f"{src:14s} {n:6d} {missed:11d} {beyond:18d}")


def _median_score(sp: Split, curves: dict[str, np.ndarray], names: tuple[str, ...]) -> Score:
    """The score of the per-count median (log scale) of ``names`` among ``curves``; where
    none of them could be fitted, of every member that could (auto's own median)."""
    rows = [np.log(curves[n]) for n in names if n in curves] or [np.log(c) for c in curves.values()]
    return score_values(sp, np.exp(np.median(rows, axis=0)))


def ceiling(all_splits: list[Split]) -> tuple[dict[str, tuple], dict[str, tuple[str, ...]]]:
    """Rows of ``accuracy.aggregate`` for auto and the two hindsight choices of
    ``--ceiling``, and the member subset chosen for each source."""
    curves = [member_curves(sp) for sp in all_splits]
    sources = [source_of(sp) for sp in all_splits]
    members = auto.DEFAULT_RULES.members
    subsets = [c for k in range(1, len(members) + 1) for c in itertools.combinations(members, k)]
    per_source: list[Score | None] = [None] * len(all_splits)
    chosen = {}
    for src in sorted(set(sources)):
        idx = [i for i, s in enumerate(sources) if s == src]
        scored = {sub: [_median_score(all_splits[i], curves[i], sub) for i in idx] for sub in subsets}
        chosen[src] = max(subsets, key=lambda sub: merit(aggregate("", scored[sub])))
        for i, sc in zip(idx, scored[chosen[src]]):
            per_source[i] = sc
    per_split = [min((score_values(sp, c) for c in cs.values()), key=lambda sc: sc.max_error, default=None)
                 for sp, cs in zip(all_splits, curves)]
    rows = {"auto (shipped rule)": aggregate("auto", [try_score(sp, "auto") for sp in all_splits]),
            "best member subset per source": aggregate("subset", per_source),
            "best member per split": aggregate("member", per_split)}
    return rows, chosen


def ceiling_report(all_splits: list[Split]) -> None:
    rows, chosen = ceiling(all_splits)
    print(f"{len(all_splits)} splits; members {'+'.join(auto.DEFAULT_RULES.members)}; "
          "the last two rows are chosen in hindsight on the splits they score")
    print(f"{'':32s} {'median err':>10s} {'share<20%':>9s} {'pick loss':>9s}")
    for label, row in rows.items():
        print(f"{label:32s} {row[2]:10.1%} {row[3]:9.2f} {row[4]:9.2%}")
    print("\nmember subset chosen per source: " + "; ".join(f"{s} {'+'.join(sub)}" for s, sub in chosen.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    ap.add_argument("--all", action="store_true", help="print every split, not only auto's misses")
    ap.add_argument("--picks", action="store_true", help="loss of risk-aware count choices instead")
    ap.add_argument("--reach", action="store_true", help="how many of auto's misses its members could not reach")
    ap.add_argument("--ceiling", action="store_true", help="auto next to member choices made in hindsight")
    args = ap.parse_args(argv)
    all_splits = splits_of(args.datasets)
    if args.picks:
        picks_report(all_splits)
        return 0
    if args.reach:
        reach_report(all_splits)
        return 0
    if args.ceiling:
        ceiling_report(all_splits)
        return 0
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
