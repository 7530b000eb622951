"""A second rule for auto on curves of few measured counts, chosen leave one suite out (#41).

Issue #41: on real 16-core curves (1, 2, 4, 8, 16 threads, trained on 1..8) the main
rule (``auto.MAIN_RULES``) had a higher median error than ``trend`` alone, while
``accuracy.py --loso`` on the public corpus chose it.  What sets those splits apart, read from the curve alone: they
have FEW_COUNTS (4) distinct measured counts or fewer in their training part.  There a
law of 3 parameters (USL's scale, contention and coherency; Gunther, "Guerrilla Capacity
Planning", 2007) keeps one degree of freedom, and auto's backtest fits it on 3 counts, so
the backtest and the anchored laws say little.  On the public corpus the criterion
selects LFCA's 6 splits (1..4 threads, trained up to 4).

A second rule for the selected splits is chosen among ``auto.RULE_CHOICES`` and the
single members (as one-member rules) on the pooled splits: the 16-core curves (grouped by
suite: corpus16's ``# suite:`` line, else ``scale16.suite_of``) and the corpus splits the
criterion selects (grouped by source).  Each group is scored with the rule chosen on the
others, by ``accuracy.merit`` (``--dominate``: only rules no worse than the main rule
there on any of the three figures, else the main rule).

Its choice on every group, ``auto.FEW_COUNT_RULES``, ships in ``auto.DEFAULT_RULES``: it
passed the test ``--decide`` runs, fixed in session 22 before the DECIDING suites were
measured (docs/accuracy.md).

    python benchmarks/fewcounts.py [--dominate] [--loso] [--decide]

``--loso`` also runs ``accuracy.py --loso`` on the corpus splits the criterion leaves to
the main rule and reports the corpus held out with both rules (10 minutes).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

import accuracy as acc
from accuracy import Score, Split, aggregate, merit, print_rows, try_score
from corecast.io.readers.measurements import read_measurements
from corecast.model.curve.methods import auto

HERE = Path(__file__).resolve().parent
SIXTEEN = (HERE / "corpus16" / "data", HERE / "device16", HERE / "scale16_curves")
FEW_COUNTS = auto.FEW_COUNTS
# Suites kept out of every choice here: the test of the trade decided in docs/accuracy.md
# (session 22) before their curves were measured.
DECIDING = {"gapbs", "kastors"}
# Each member alone, as a rule of one member (``damped`` at both dampings RULE_CHOICES use).
SINGLES = tuple(auto.Rules(members=(m,)) for m in ("usl", "amdahl", "presca", "plateau", "trend")) + tuple(
    auto.Rules(members=("damped",), damping=d) for d in (0.25, 0.5))
# With the main rule's band, so that their band cover compares with its, and its step
# member where they have none (where threads ahead share cores no measured count shared:
# LFCA's splits, 4 cores of 8 hardware threads), which the main rule was chosen with.
CANDIDATES = tuple(dict.fromkeys(
    replace(r, band=auto.MAIN_RULES.band,
            smt_member=auto.MAIN_RULES.smt_member if r.smt_member is None else r.smt_member)
    for r in auto.RULE_CHOICES + SINGLES))


def few(split: Split) -> bool:
    """The criterion: FEW_COUNTS distinct counts or fewer in the split's training part."""
    return len(np.unique(split.train.counts)) <= FEW_COUNTS


@dataclass
class Member:
    group: str  # a 16-core curve's suite, a corpus curve's source
    split: Split
    sixteen: bool


def sixteen_core(folders=SIXTEEN, deciding: bool = False) -> list[Member]:
    """Every split of the 16-core curves; a curve's name is prefixed with its folder's
    (device16 and scale16_curves share names).  ``deciding``: only the DECIDING suites'
    splits, which are otherwise left out."""
    from scale16 import suite_of

    out = []
    for folder in folders:
        for csv in sorted(Path(folder).glob("*.csv")):
            if (suite_of(csv) in DECIDING) != deciding:
                continue
            for sp in acc.splits(f"{Path(folder).name}:{csv.stem}", read_measurements(str(csv)), acc.machine_of(csv)):
                out.append(Member(suite_of(csv), sp, True))
    return out


def corpus(folder: Path = acc.CORPUS) -> list[Member]:
    return [Member(acc.source_of(sp), sp, False) for sp in acc.splits_of(folder)]


def score_table(members: list[Member], rules=CANDIDATES) -> dict[auto.Rules, list[Score | None]]:
    """Every rule's score on every split (split by split: auto keeps a split's member fits)."""
    rules = tuple(dict.fromkeys((*rules, auto.MAIN_RULES)))
    table: dict[auto.Rules, list[Score | None]] = {r: [] for r in rules}
    for m in members:
        for r in rules:
            table[r].append(try_score(m.split, "auto", r))
    return table


def choose(table: dict[auto.Rules, list[Score | None]], index: list[int], dominate: bool = False) -> auto.Rules:
    """The rule with the best merit on the splits ``index``; with ``dominate`` only among
    rules no worse there than the main rule on every figure (which always is)."""
    rows = {r: aggregate("", [v[i] for i in index]) for r, v in table.items()}
    ship = rows[auto.MAIN_RULES]
    ok = [r for r, (_, _, med, share, loss, *_) in rows.items()
          if not dominate or (med <= ship[2] and share >= ship[3] and loss <= ship[4])]
    return max(ok, key=lambda r: merit(rows[r]))


def leave_one_group_out(members: list[Member], table, dominate: bool = False
                        ) -> tuple[list[Score | None], dict[str, auto.Rules]]:
    """Each split's score under the rule chosen on the other groups, and that rule per
    group (``"*"``: chosen on all)."""
    held: list[Score | None] = [None] * len(members)
    chosen = {}
    for g in sorted({m.group for m in members}):
        others = [i for i, m in enumerate(members) if m.group != g]
        rule = chosen[g] = choose(table, others, dominate)
        for i, m in enumerate(members):
            if m.group == g:
                held[i] = table[rule][i]
    chosen["*"] = choose(table, list(range(len(members))), dominate)
    return held, chosen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sixteen", default=",".join(str(p) for p in SIXTEEN),
                    help="comma-separated folders of 16-core curves")
    ap.add_argument("--corpus", type=Path, default=acc.CORPUS)
    ap.add_argument("--guard", type=Path, default=acc.DEFAULT_DATASETS, help="as accuracy.py --loso's")
    ap.add_argument("--dominate", action="store_true",
                    help="candidates: only rules no worse than the main rule on the other groups")
    ap.add_argument("--loso", action="store_true", help="also the corpus held out with both rules")
    ap.add_argument("--decide", action="store_true",
                    help="the test decided in session 22: the second rule, chosen on every other curve, "
                         "against the main rule on the DECIDING suites' splits trained on 1..8")
    args = ap.parse_args(argv)
    if args.decide:
        return decide([Path(p) for p in args.sixteen.split(",") if p], args.corpus)
    sixteen = sixteen_core([Path(p) for p in args.sixteen.split(",") if p])
    public = corpus(args.corpus)
    pool = [m for m in sixteen + public if few(m.split)]
    print(f"criterion: <= {FEW_COUNTS} distinct training counts; selects {sum(m.sixteen for m in pool)} of "
          f"{len(sixteen)} 16-core splits and {len(pool) - sum(m.sixteen for m in pool)} of {len(public)} "
          f"corpus splits ({', '.join(sorted({m.group for m in pool if not m.sixteen}))})")
    table = score_table(pool)
    held, chosen = leave_one_group_out(pool, table, args.dominate)
    ship = table[auto.MAIN_RULES]
    shipped = f"main rule: {auto.MAIN_RULES.label()}"
    for g in sorted({m.group for m in pool}):
        idx = [i for i, m in enumerate(pool) if m.group == g]
        print(f"\nheld out: {g} (rule chosen on the other groups: {chosen[g].label()})")
        print_rows([aggregate("second rule", [held[i] for i in idx]), aggregate(shipped, [ship[i] for i in idx])], "  ")

    def both(label, which):
        idx = [i for i, m in enumerate(pool) if which(m)]
        print(f"\n{label}, each group held out:")
        print_rows([aggregate("second rule", [held[i] for i in idx]), aggregate(shipped, [ship[i] for i in idx])])

    both("16-core splits the criterion selects", lambda m: m.sixteen)
    both("corpus splits the criterion selects", lambda m: not m.sixteen)
    rest = [m for m in sixteen if not few(m.split)]
    rest_scores = [try_score(m.split, "auto") for m in rest]
    sel16 = [i for i, m in enumerate(pool) if m.sixteen]
    print(f"\nevery 16-core split ({len(sixteen)}; the {len(rest)} not selected keep the main rule):")
    last = [aggregate("second rule", [held[i] for i in sel16] + rest_scores),
            aggregate("main rule alone", [ship[i] for i in sel16] + rest_scores)]
    print_rows(last)
    print(f"\nsecond rule chosen on all groups: {chosen['*'].label()}")
    print("\n".join(f"  {r[0]}: {r[2]:.2%}, {r[3]:.3f}, {r[4]:.2%}" for r in last))
    if args.loso:
        main_splits = [m.split for m in public if not few(m.split)]
        guard = acc.splits_of(args.guard) if args.guard.is_dir() else None
        rules = acc.admissible(guard)[0] if guard else list(auto.RULE_CHOICES)
        main_held: list = []
        _, _, main_chosen = acc.loso(main_splits, rules, guard, held_out=main_held)
        print(f"\nmain rule chosen on the complements of the corpus' sources: {sorted(set(main_chosen.values()))}")
        pub = [i for i, m in enumerate(pool) if not m.sixteen]
        print(f"\ncorpus, each source held out ({len(main_splits)} splits by accuracy.py --loso's main rule, "
              f"{len(pub)} by the second rule; the main rule alone: accuracy.py --loso):")
        rows = []
        for dominate in (False, True):  # the choice is cheap once the table is scored: both ways
            h = leave_one_group_out(pool, table, dominate)[0]
            rows.append(aggregate(f"auto, both rules{' (--dominate)' if dominate else ''}",
                                  main_held + [h[i] for i in pub]))
        print_rows(rows)
        for r in rows:
            print(f"  {r[0]}: {r[2]:.2%}, {r[3]:.3f}, {r[4]:.2%}, {r[5]:.1%}")
    return 0


def decide(folders: list[Path], corpus_dir: Path) -> int:
    """docs/accuracy.md's test, fixed before the DECIDING suites were measured: the second
    rule (chosen on every selected split of the other curves, by merit and by
    ``--dominate``) ships if, on the DECIDING suites' splits trained on 1..8 and scored at
    16, its median error and share within 20% are no worse than the main rule's and its
    pick loss is at most 1 point higher."""
    pool = [m for m in sixteen_core(folders) + corpus(corpus_dir) if few(m.split)]
    test = [m for m in sixteen_core(folders, deciding=True) if m.split.m == 8 and few(m.split)]
    if not test:
        print("fewcounts: no DECIDING curve measured up to 16 threads", file=sys.stderr)
        return 1
    table = score_table(pool)
    ship = [try_score(m.split, "auto", auto.MAIN_RULES) for m in test]
    shipped = aggregate(f"main rule: {auto.MAIN_RULES.label()}", ship)
    print(f"the test: {len(test)} splits of {', '.join(sorted({m.group for m in test}))} (trained on 1..8, "
          f"scored at 16); rules chosen on {len(pool)} selected splits of the other curves")
    for dominate in (False, True):
        rule = choose(table, list(range(len(pool))), dominate)
        if rule == auto.MAIN_RULES:
            print(f"\n  {'--dominate' if dominate else 'merit'}: the choice is the main rule itself: nothing to ship")
            continue
        second = aggregate(f"second rule{' (--dominate)' if dominate else ''}: {rule.label()}",
                           [try_score(m.split, "auto", rule) for m in test])
        print()
        print_rows([second, shipped], "  ", precise=True)
        ok = second[2] <= shipped[2] and second[3] >= shipped[3] and second[4] <= shipped[4] + 0.01
        print(f"  verdict: {'ships' if ok else 'does not ship'} (median {second[2]:.2%} vs {shipped[2]:.2%}, "
              f"within 20% {second[3]:.2f} vs {shipped[3]:.2f}, pick loss {second[4]:.2%} vs {shipped[4]:.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
