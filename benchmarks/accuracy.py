"""Accuracy benchmark over measured scalability curves (issue 2).

For each curve with largest count M, train on the counts <= m for the measured m nearest
M/4 and M/2 (splits with at least 4 training points), test on the measured counts in
(m, 2m].  Per method: the median over splits of the median relative error, the share of
splits whose maximum relative error is below 20%, and the mean loss from running at the
count the method would pick among all measured counts, 1 - perf(chosen)/perf(best).

    python benchmarks/accuracy.py [--datasets DIR] [--methods auto,presca,...] [--verbose]
    python benchmarks/accuracy.py --loso [--datasets benchmarks/data]

``--loso`` (leave one source out) scores the corpus in benchmarks/data source by source
(a curve's source is its file name before ``__``): auto's combination rule is chosen
among ``auto.RULE_CHOICES`` on the other sources' splits (the rule with the highest
share under 20% minus median error minus pick loss), its band among ``auto.BAND_CHOICES``
(the narrowest holding ``auto.BAND_RATE`` of the test values in every other source and
on the guard curves below), and both are scored on the held-out source;
the single methods (usl, amdahl, presca and auto's continuation members plateau, trend
and damped) have nothing to choose.  A rule is a candidate only if, on the shared curves
(``--datasets`` of the plain run, never scored by ``--loso``), it is no worse than the plain
median of every member on any of the three figures: the corpus is mostly contention
curves, and a rule fitted to them alone gave up accuracy on the near-linear shared ones.
The rule chosen this way on all sources is what ``auto.DEFAULT_RULES`` ships.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from corecast.entities import InputError, Measurements, Prediction
from corecast.hardware import SMT_YIELD, SMT_YIELD_CHOICES, Hardware
from corecast.io.readers.measurements import read_measurements, read_table
from corecast.methods import auto
from corecast.prediction import predict_measurements

DEFAULT_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CORPUS = Path(__file__).resolve().parent / "data"
LOSO_PEERS = ("usl", "amdahl", "presca", "plateau", "trend", "damped")
PEERS = ("auto", "presca", "estima", "regression", "sizemodel", "usl", "amdahl", "gustafson", "plateau", "trend",
         "damped")


# (hardware threads, cores, sockets, fill) where a curve's provenance states them
Machine = tuple[int | None, int | None, int | None, str | None]
NO_MACHINE: Machine = (None, None, None, None)


@dataclass
class Split:
    curve: str
    train: Measurements
    full: Measurements
    m: float
    machine: Machine = NO_MACHINE


def splits(name: str, data: Measurements, machine: Machine = NO_MACHINE) -> list[Split]:
    counts = data.counts
    top = counts.max()
    chosen = []
    for target in (top / 4, top / 2):
        # Nearest measured count; ties go to the smaller count.
        m = float(min(counts, key=lambda c: (abs(c - target), c)))
        if m in chosen:
            continue
        chosen.append(m)
    out = []
    for m in chosen:
        train = data.subset(np.flatnonzero(counts <= m))
        test = (counts > m) & (counts <= 2 * m)
        if len(train) >= 4 and test.any():
            out.append(Split(name, train, data, m, machine))
    return out


@dataclass
class Score:
    median_error: float
    max_error: float
    pick_loss: float
    coverage: float  # share of test points inside the band


def predict_split(split: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES,
                  smt_yield: float = SMT_YIELD) -> Prediction:
    """``method``'s prediction from the split's training points up to its curve's largest
    count, for the machine the curve was measured on where its provenance says."""
    with auto.using(rules):
        return predict_measurements(split.train, upto=int(split.full.counts.max()), method=method,
                                    hardware=Hardware.of(*split.machine, smt_yield=smt_yield))


def score(split: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES, smt_yield: float = SMT_YIELD) -> Score:
    pred = predict_split(split, method, rules, smt_yield)
    return score_values(split, pred.values, pred.low, pred.high)


def score_values(split: Split, values: np.ndarray, low: np.ndarray | None = None,
                 high: np.ndarray | None = None) -> Score:
    """The figures of a predicted curve ``values`` (the split's metric at counts 1, 2, ...,
    its largest); without a band the coverage is nan."""
    full = split.full
    idx = full.counts.astype(int) - 1
    values = np.asarray(values, float)[idx]
    test = (full.counts > split.m) & (full.counts <= 2 * split.m)
    rel = np.abs(values[test] - full.values[test]) / full.values[test]
    cover = np.nan
    if low is not None and high is not None:
        cover = float(((full.values[test] >= low[idx][test]) & (full.values[test] <= high[idx][test])).mean())
    perf_pred = full.perf * 0 + (values if full.metric == "throughput" else 1 / values)
    chosen = int(np.argmax(perf_pred))
    loss = 1 - full.perf[chosen] / full.perf.max()
    return Score(float(np.median(rel)), float(rel.max()), float(loss), cover)


def load_all(folder: Path) -> list[tuple[str, Measurements, Machine]]:
    """(name, curve, (hardware threads, cores)) of every CSV in ``folder``; the machine's
    come from ``# ..., hardware threads: N, cores: C, ...`` comment items (None: absent)."""
    return [(p.stem, read_measurements(str(p)), machine_of(p)) for p in sorted(folder.glob("*.csv"))]


def splits_of(folder: Path) -> list[Split]:
    """Every split of every curve in ``folder``."""
    return [s for name, data, hw in load_all(folder) for s in splits(name, data, hw)]


def machine_of(path: Path) -> Machine:
    items = {k: v for _, k, v in read_table(str(path)).meta
             if k in ("hardware threads", "cores", "sockets", "fill")}
    number = {k: int(items[k]) if k in items else None for k in ("hardware threads", "cores", "sockets")}
    return number["hardware threads"], number["cores"], number["sockets"], items.get("fill")


def try_score(sp: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES,
              verbose: bool = False, smt_yield: float = SMT_YIELD) -> Score | None:
    try:
        return score(sp, method, rules, smt_yield)
    except InputError as exc:
        if verbose:
            print(f"  {method:10s} {sp.curve} m={sp.m:g}: {exc}")
        return None


def scores_of(all_splits: list[Split], method: str, rules: auto.Rules = auto.DEFAULT_RULES,
              verbose: bool = False) -> list[Score | None]:
    """One score per split (None where the method cannot use the split's points)."""
    out = []
    for sp in all_splits:
        s = try_score(sp, method, rules, verbose)
        if s is not None and verbose:
            print(f"  {method:10s} {sp.curve:55s} m={sp.m:4g} med={s.median_error:6.1%} "
                  f"max={s.max_error:6.1%} loss={s.pick_loss:6.1%} cover={s.coverage:4.0%}")
        out.append(s)
    return out


def aggregate(method: str, scores: list[Score | None]) -> tuple:
    """(method, splits scored, median error, share max<20%, mean pick loss, band cover)."""
    scores = [s for s in scores if s is not None]
    if not scores:
        return (method, 0, np.nan, np.nan, np.nan, np.nan)
    return (
        method,
        len(scores),
        float(np.median([s.median_error for s in scores])),
        float(np.mean([s.max_error < 0.2 for s in scores])),
        float(np.mean([s.pick_loss for s in scores])),
        float(np.mean([s.coverage for s in scores])),
    )


def summarise(all_splits: list[Split], names: list[str], verbose: bool = False) -> list[tuple]:
    """aggregate() of every method in ``names`` over ``all_splits``."""
    return [aggregate(method, scores_of(all_splits, method, verbose=verbose)) for method in names]


def merit(row: tuple) -> float:
    """One number to choose a rule by: share under 20% - median error - pick loss."""
    return row[3] - row[2] - row[4]


def source_of(split: Split) -> str:
    return split.curve.split("__")[0]


def admissible(guard_splits: list[Split], rules: tuple[auto.Rules, ...] = auto.RULE_CHOICES,
               ) -> tuple[list[auto.Rules], list[tuple]]:
    """The rules of ``rules`` no worse than the plain median (``auto.Rules()``) on
    ``guard_splits`` on any figure, and every rule's row there (the median's first)."""
    rows = {r: aggregate(r.label(), [try_score(sp, "auto", r) for sp in guard_splits])
            for r in dict.fromkeys((auto.Rules(), *rules))}
    _, _, med, share, loss, _ = rows[auto.Rules()]
    ok = []
    for r in rules:
        _, _, m, sh, lo, _ = rows[r]
        if m <= med and sh >= share and lo <= loss:
            ok.append(r)
    return ok, list(rows.values())


def calibrate_band(scores_of_band, others: list[int], sources: list[str], guard_cover=None) -> float:
    """The narrowest ``auto.BAND_CHOICES`` whose band holds ``auto.BAND_RATE`` of the
    test values in every source of ``others`` (split indices; ``sources`` their sources)
    and, given ``guard_cover(band)`` (the share held on the guard curves), there too; else
    the widest.  ``scores_of_band(band)``: auto's scores on every split with that band."""
    by_source: dict[str, list[int]] = {}
    for i in others:
        by_source.setdefault(sources[i], []).append(i)
    for band in auto.BAND_CHOICES:
        scores = scores_of_band(band)
        covers = [aggregate("", [scores[i] for i in idx])[5] for idx in by_source.values()]
        if guard_cover is not None:
            covers.append(guard_cover(band))
        if all(c >= auto.BAND_RATE for c in covers if np.isfinite(c)):
            return band
    return auto.BAND_CHOICES[-1]


def yield_matters(split: Split) -> bool:
    """Whether the machine's SMT yield changes ``split``'s predictions: its counts ahead
    reach a kind of fill its training counts never had (Hardware.step_ahead)."""
    machine = Hardware.of(*split.machine)
    if machine is None:
        return False
    top, largest = float(split.m), float(split.full.counts.max())
    return top <= machine.hw_threads and machine.step_ahead(top, largest)


def loso(all_splits: list[Split], rules: list[auto.Rules] | tuple[auto.Rules, ...] = auto.RULE_CHOICES,
         guard: list[Split] | None = None) -> tuple[list[tuple], dict[str, list[tuple]], dict[str, str]]:
    """Leave-one-source-out: overall rows, per-source rows and the choice made per source
    (under the key ``"*"``: the choice on every source, what ``auto.DEFAULT_RULES`` and
    ``hardware.SMT_YIELD`` should be).

    For each source, auto's rule and the machine's SMT yield (among SMT_YIELD_CHOICES) are
    the pair with the best merit on the other sources' splits, and auto's band the one
    ``calibrate_band`` chooses there (holding the rate on the ``guard`` curves too, when
    given: they are programs, the corpus mostly contention); the held-out source's splits
    are scored with them, the single methods with that SMT yield (a property of the
    machine model every method is predicted through, not of auto)."""
    sources = sorted({source_of(sp) for sp in all_splits})
    split_source = [source_of(sp) for sp in all_splits]
    sensitive = [yield_matters(sp) for sp in all_splits]
    # Split by split, every rule in turn: auto keeps the split's member fits between rules
    # (the shipped rule's band variants too: they are the ones calibrated in practice).
    # Other SMT yields are scored only where they change a prediction.
    shipped_bands = [replace(auto.DEFAULT_RULES, band=b) for b in auto.BAND_CHOICES]
    memo: dict[tuple[auto.Rules, float], list[Score | None]] = {}
    for r in dict.fromkeys([*rules, auto.DEFAULT_RULES, *shipped_bands]):
        memo[r, SMT_YIELD] = []
    for sp in all_splits:
        for r, _ in memo:
            memo[r, SMT_YIELD].append(try_score(sp, "auto", r))

    def scored(rule: auto.Rules, smt: float, method: str = "auto") -> list[Score | None]:
        key = (rule, smt) if method == "auto" else (method, smt)
        if key not in memo:
            base = scored(rule, SMT_YIELD, method) if smt != SMT_YIELD else None
            memo[key] = [try_score(sp, method, rule, smt_yield=smt) if base is None or sensitive[i] else base[i]
                         for i, sp in enumerate(all_splits)]
        return memo[key]

    def with_band(rule: auto.Rules, smt: float):
        return lambda band: scored(replace(rule, band=band), smt)

    guard_memo: dict[auto.Rules, float] = {}

    def guard_cover(rule: auto.Rules):
        if not guard:
            return None

        def cover(band: float) -> float:
            r = replace(rule, band=band)
            if r not in guard_memo:
                guard_memo[r] = aggregate("", [try_score(sp, "auto", r) for sp in guard])[5]
            return guard_memo[r]
        return cover

    def choose(index: list[int]) -> tuple[auto.Rules, float, float]:
        """The (rule, SMT yield) with the best merit on the splits ``index``, and its band."""
        # Ties go to the shipped yield, then to the earlier rule.
        rule, smt = max(((r, y) for y in dict.fromkeys((SMT_YIELD, *SMT_YIELD_CHOICES)) for r in rules),
                        key=lambda ry: merit(aggregate("", [scored(*ry)[i] for i in index])))
        return rule, smt, calibrate_band(with_band(rule, smt), index, split_source, guard_cover(rule))

    held_out: dict[str, list[Score | None]] = {m: [None] * len(all_splits) for m in ("auto", *LOSO_PEERS)}
    default = f"auto[{auto.DEFAULT_RULES.label()}, band {auto.DEFAULT_RULES.band:g}]"  # shipped, fixed beforehand
    default_scores = scored(auto.DEFAULT_RULES, SMT_YIELD)
    chosen, per_source = {}, {}
    for src in sources:
        mine = [i for i in range(len(all_splits)) if split_source[i] == src]
        others = [i for i in range(len(all_splits)) if split_source[i] != src]
        rule, smt, band = choose(others)
        chosen[src] = f"{rule.label()}, band {band:g}, SMT yield {smt:g}"
        for i in mine:
            held_out["auto"][i] = with_band(rule, smt)(band)[i]
            for m in LOSO_PEERS:
                held_out[m][i] = scored(auto.DEFAULT_RULES, smt, m)[i]
        per_source[src] = [aggregate(m, [held_out[m][i] for i in mine]) for m in held_out] + [
            aggregate(default, [default_scores[i] for i in mine])]
    overall = [aggregate(m, v) for m, v in held_out.items()] + [aggregate(default, default_scores)]
    rule, smt, band = choose(list(range(len(all_splits))))
    chosen["*"] = f"{rule.label()}, band {band:g}, SMT yield {smt:g}"
    return overall, per_source, chosen


def print_rows(rows: list[tuple], indent: str = "") -> None:
    w = max([12] + [len(r[0]) for r in rows])
    print(f"{indent}{'method':{w}s} {'splits':>6s} {'median err':>10s} {'max<20%':>8s} {'pick loss':>9s} {'band cover':>10s}")
    for method, k, med, share, loss, cover in rows:
        if k == 0:
            print(f"{indent}{method:{w}s} {k:6d}  (no split has the columns or points it needs)")
            continue
        shown = f"{cover:10.0%}" if np.isfinite(cover) else f"{'-':>10s}"  # no band: no coverage
        print(f"{indent}{method:{w}s} {k:6d} {med:10.1%} {share:8.2f} {loss:9.1%} {shown}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=None,
                    help=f"default: {DEFAULT_DATASETS}, with --loso {CORPUS}")
    ap.add_argument("--loso", action="store_true", help="leave-one-source-out over the corpus")
    ap.add_argument("--guard", type=Path, default=DEFAULT_DATASETS,
                    help="with --loso: curves auto's candidate rules may not do worse on than the median "
                         f"(default: {DEFAULT_DATASETS})")
    ap.add_argument("--methods", default=",".join(PEERS))
    ap.add_argument("--verbose", action="store_true", help="per-split errors")
    ap.add_argument("--timing", action="store_true", help="time predict() on a 12-point input")
    args = ap.parse_args(argv)
    names = [m for m in args.methods.split(",") if m]
    folder = args.datasets or (CORPUS if args.loso else DEFAULT_DATASETS)
    all_splits = splits_of(folder)
    print(f"{len(set(sp.curve for sp in all_splits))} curves, {len(all_splits)} splits from {folder}")
    if args.loso:
        rules, guard = list(auto.RULE_CHOICES), None
        if args.guard.is_dir():
            guard = splits_of(args.guard)
            rules, rows = admissible(guard)
            print(f"auto's rules on the {len(guard)} splits of {args.guard} (candidates: no worse than median):")
            print_rows(rows, "  ")
            print(f"candidates: {', '.join(r.label() for r in rules)}")
        else:
            print(f"no guard curves at {args.guard}: every rule is a candidate")
        overall, per_source, chosen = loso(all_splits, rules, guard)
        for src, rows in per_source.items():
            print(f"\nheld out: {src} (auto's rule chosen on the other sources: {chosen[src]})")
            print_rows(rows, "  ")
        print("\nall sources, each scored while held out:")
        print_rows(overall)
        print(f"\nchosen on all sources: {chosen['*']} "
              f"(shipped: {auto.DEFAULT_RULES.label()}, band {auto.DEFAULT_RULES.band:g}, SMT yield {SMT_YIELD:g})")
    else:
        print_rows(summarise(all_splits, names, args.verbose))
    if args.timing:
        timing()
    return 0


def timing(repeats: int = 30) -> None:
    """Median in-process time of corecast.predict (auto) on a 12-point curve."""
    from corecast import predict

    n = np.arange(1, 13)
    x = 100 * n / (1 + 0.05 * (n - 1) + 0.002 * n * (n - 1))
    predict(n, x, upto=24)  # warm imports and caches
    times = []
    for i in range(repeats):
        y = x * (1 + 1e-9 * (i + 1))  # new values each call: auto keeps recent member fits
        t0 = time.perf_counter()
        predict(n, y, upto=24)
        times.append(time.perf_counter() - t0)
    print(f"predict(auto) on 12 points: median {np.median(times) * 1e3:.1f} ms over {repeats} calls")


if __name__ == "__main__":
    sys.exit(main())
