"""Accuracy benchmark over measured scalability curves (issue 2).

For each curve with largest count M, train on the counts <= m for the measured m nearest
M/4 and M/2 (splits with at least 4 training points), test on the measured counts in
(m, 2m].  Per method: the median over splits of the median relative error, the share of
splits whose maximum relative error is below 20%, and the mean loss from running at the
count the method would pick among all measured counts, 1 - perf(chosen)/perf(best).
That pick is the best predicted of the curve's measured counts as ``predict`` chooses its
fastest count (``PICKS``: none past the hardware threads, ties to a training count or the
fewest), without its band check past the training counts; ``--pick argmax`` takes the
argmax of the prediction over every measured count instead, the pick before session 32.
The last columns score the counts ``predict`` names, ``fastest`` and ``preferred``, the
same way (see ``named_loss``), and the share of those names that fall between measured
counts.

    python benchmarks/accuracy.py [--datasets DIR] [--methods auto,presca,...] [--verbose] [--pick argmax]
    python benchmarks/accuracy.py --loso [--datasets benchmarks/data] [--no-topology] [--past-hw]

``--loso`` (leave one source out) scores the corpus in benchmarks/data source by source
(a curve's source is its file name before ``__``): auto's combination rule is chosen
among ``auto.RULE_CHOICES`` on the other sources' splits (the rule with the highest
share under 20% minus median error minus pick loss), its band among ``auto.BAND_CHOICES``
(the narrowest holding ``auto.BAND_RATE`` of the test values in every other source and
on the guard curves below), and both are scored on the held-out source (with ``--past-hw`` the rule is chosen with
one of ``PAST_HW``: what the prediction does past the hardware threads);
the single methods (usl, amdahl, presca and auto's continuation members plateau, trend
and damped) have nothing to choose.  A rule is a candidate only if, on the shared curves
(``--datasets`` of the plain run, never scored by ``--loso``), it is no worse than the plain
median of every member on any of the three figures: the corpus is mostly contention
curves, and a rule fitted to them alone gave up accuracy on the near-linear shared ones.
The rule chosen this way on all sources is what ``auto.MAIN_RULES`` ships (``auto.DEFAULT_RULES``
adds the few-count rule benchmarks/fewcounts.py chose for curves of 4 counts or fewer).
"""
from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, TypeVar

import numpy as np

from corecast.model.curve.entities import InputError, Measurements, CurvePrediction
from corecast.model.machine.hardware import Hardware
from corecast.io.readers.measurements import read_measurements, read_table
from corecast.model.curve.methods import auto
from corecast.model.curve.prediction import predict_measurements
from corecast.model.curve.preference import best_count, within_hardware

DEFAULT_DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CORPUS = Path(__file__).resolve().parent / "data"
LOSO_PEERS = ("usl", "amdahl", "presca", "plateau", "trend", "damped")
PEERS = ("auto", "presca", "estima", "regression", "sizemodel", "usl", "amdahl", "gustafson", "plateau", "trend",
         "damped")


# (hardware threads, cores, sockets, fill) where a curve's provenance states them
Machine = tuple[int | None, int | None, int | None, str | None]
NO_MACHINE: Machine = (None, None, None, None)
K = TypeVar("K")


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
    # The loss at the counts predict names (nan where the prediction names none, e.g. a
    # curve scored from bare values), and how many of the two were not measured counts.
    fastest_loss: float = np.nan
    preferred_loss: float = np.nan
    off_grid: float = np.nan  # share of {fastest, preferred} that are not measured counts


def hw_threads(split: Split) -> int | None:
    """The hardware threads ``predict`` applies to the split (its machine given and not
    passed by the training counts), else None."""
    hw = Hardware.of(*split.machine)
    return hw.hw_threads if hw is not None and float(split.train.counts.max()) <= hw.hw_threads else None


# How the pick loss's count is chosen among the curve's measured counts from the predicted
# performance there: "product" as ``predict`` chooses its fastest count (none past the
# hardware threads, ``within_hardware``; ties within ``FASTEST_TIE`` to a training count,
# else the fewest; ``best_count``) but with no band check past the training counts (the
# fastest loss scores that); "argmax" the best predicted of them all (the first of exact
# ties), as before session 32: past the hardware threads it may take a count ``predict``
# never names (ibr's 75 on its 72).
PICKS = {
    "product": "the best predicted measured count as predict names its fastest "
               "(none past the hardware threads, near ties to a training count or the fewest), no band check",
    "argmax": "the argmax of the prediction over every measured count (before session 32)",
}
_pick = ["product"]


@contextmanager
def picking(rule: str) -> Iterator[None]:
    """Score the pick with ``rule`` (a key of ``PICKS``) inside the block."""
    if rule not in PICKS:
        raise ValueError(f"no pick rule {rule!r}; one of {', '.join(PICKS)}")
    before, _pick[0] = _pick[0], rule
    try:
        yield
    finally:
        _pick[0] = before


def pick_index(split: Split, perf_pred: np.ndarray) -> int:
    """The index in ``split.full`` of the count the pick rule (``picking``) takes, given the
    predicted performance at the curve's measured counts."""
    if _pick[0] == "argmax":
        return int(np.argmax(perf_pred))
    counts = split.full.counts
    ok, _ = within_hardware(counts, hw_threads(split))
    return int(np.flatnonzero(counts == best_count(counts[ok], perf_pred[ok], split.train.counts))[0])


@dataclass(frozen=True)
class PastHw:
    """What a prediction does past the hardware threads (#41; ``--past-hw`` lets ``--loso``
    choose among PAST_HW as among auto's rules).  ``exponent`` a: the central prediction
    there at most perf(hw) x (hw / n)^a (a 0: ``predict``'s own, held at the value at the
    hardware threads; a 1: threads that wait for their slowest, time-shared, lose hw / n).
    The pick's tie rule tried beside it in session 31 (no measured count past the hardware
    threads over the largest one within them) is now the product's pick (``PICKS``)."""

    exponent: float = 0.0

    def label(self) -> str:
        return f"; past the hardware threads x (hw/n)^{self.exponent:g}" if self.exponent else ""

    def values(self, split: Split, values: np.ndarray) -> np.ndarray:
        """``values`` (counts 1, 2, ...) with the central prediction past the hardware
        threads at most the value there times (hw / n)^exponent."""
        hw = hw_threads(split)
        if not self.exponent or hw is None or len(values) <= hw:
            return values
        n = np.arange(1, len(values) + 1, dtype=float)
        perf = values if split.full.metric == "throughput" else 1.0 / values
        perf = np.where(n > hw, np.minimum(perf, perf[hw - 1] * (hw / n) ** self.exponent), perf)
        return perf if split.full.metric == "throughput" else 1.0 / perf


NO_PAST = PastHw()
# Decided before scoring (#41): a in {0, 0.5, 1}; today's first, so a source whose complement
# cannot tell them apart keeps it.
PAST_HW = tuple(PastHw(a) for a in (0.0, 0.5, 1.0))


def predict_split(split: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES) -> CurvePrediction:
    """``method``'s prediction from the split's training points up to its curve's largest
    count, for the machine the curve was measured on where its provenance says."""
    with auto.using(rules):
        return predict_measurements(split.train, upto=int(split.full.counts.max()), method=method,
                                    hardware=Hardware.of(*split.machine))


# The last prediction: ``loso`` scores each one under every PastHw in turn.
_last: list = [None, None]


def score(split: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES, past: PastHw = NO_PAST) -> Score:
    key = (id(split), split.curve, split.m, method, rules)
    if _last[0] != key:
        try:
            _last[:] = [key, predict_split(split, method, rules)]
        except InputError as exc:
            _last[:] = [key, exc]
    pred = _last[1]
    if isinstance(pred, InputError):
        raise pred
    return score_values(split, past.values(split, pred.values), pred.low, pred.high, pred.fastest, pred.preferred)


def named_loss(full: Measurements, named: int) -> float:
    """1 - perf(named)/perf(best measured), the pick loss of running at a count ``predict``
    named.  A named count that was not measured is scored at the nearest measured count at
    or below it (the smallest measured count if none is): the named count is a promise that
    this many threads pay, and the measured count below it is the most that promise is known
    to deliver without running more threads than named; interpolating would credit it with
    part of a larger count's value, which a drop just past the named count (a socket, the
    hardware threads) makes wrong."""
    counts = full.counts
    below = np.flatnonzero(counts <= named)
    i = below[np.argmax(counts[below])] if below.size else int(np.argmin(counts))
    return float(1 - full.perf[i] / full.perf.max())


def score_values(split: Split, values: np.ndarray, low: np.ndarray | None = None,
                 high: np.ndarray | None = None, fastest: int | None = None,
                 preferred: int | None = None) -> Score:
    """The figures of a predicted curve ``values`` (the split's metric at counts 1, 2, ...,
    its largest); without a band the coverage is nan, without the named ``fastest`` and
    ``preferred`` counts their losses are nan.  The pick loss's count: ``pick_index``."""
    full = split.full
    idx = full.counts.astype(int) - 1
    values = np.asarray(values, float)[idx]
    test = (full.counts > split.m) & (full.counts <= 2 * split.m)
    rel = np.abs(values[test] - full.values[test]) / full.values[test]
    cover = np.nan
    if low is not None and high is not None:
        cover = float(((full.values[test] >= low[idx][test]) & (full.values[test] <= high[idx][test])).mean())
    perf_pred = full.perf * 0 + (values if full.metric == "throughput" else 1 / values)
    chosen = pick_index(split, perf_pred)
    loss = 1 - full.perf[chosen] / full.perf.max()
    named = [c for c in (fastest, preferred) if c is not None]
    return Score(float(np.median(rel)), float(rel.max()), float(loss), cover,
                 np.nan if fastest is None else named_loss(full, fastest),
                 np.nan if preferred is None else named_loss(full, preferred),
                 float(np.mean([c not in full.counts for c in named])) if named else np.nan)


def load_all(folder: Path) -> list[tuple[str, Measurements, Machine]]:
    """(name, curve, machine) of every CSV in ``folder``; the machine's hardware threads,
    cores, sockets and fill order come from ``# ..., hardware threads: N, cores: C,
    sockets: S, fill: F, ...`` comment items (None: absent)."""
    return [(p.stem, read_measurements(str(p)), machine_of(p)) for p in sorted(folder.glob("*.csv"))]


def splits_of(folder: Path, topology: bool = True) -> list[Split]:
    """Every split of every curve in ``folder`` (without ``topology``: no machine, as if
    the curves carried no hardware annotation)."""
    return [s for name, data, hw in load_all(folder)
            for s in splits(name, data, hw if topology else NO_MACHINE)]


def machine_of(path: Path) -> Machine:
    items = {k: v for _, k, v in read_table(str(path)).meta
             if k in ("hardware threads", "cores", "sockets", "fill")}
    number = {k: int(items[k]) if k in items else None for k in ("hardware threads", "cores", "sockets")}
    return number["hardware threads"], number["cores"], number["sockets"], items.get("fill")


def try_score(sp: Split, method: str, rules: auto.Rules = auto.DEFAULT_RULES,
              verbose: bool = False, past: PastHw = NO_PAST) -> Score | None:
    try:
        return score(sp, method, rules, past)
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
                  f"max={s.max_error:6.1%} loss={s.pick_loss:6.1%} cover={s.coverage:4.0%} "
                  f"fastest loss={s.fastest_loss:6.1%} pref loss={s.preferred_loss:6.1%}")
        out.append(s)
    return out


def _mean(values: list[float]) -> float:
    finite = [v for v in values if np.isfinite(v)]
    return float(np.mean(finite)) if finite else np.nan


def aggregate(method: str, scores: list[Score | None]) -> tuple:
    """(method, splits scored, median error, share max<20%, mean pick loss, band cover,
    mean loss at the named fastest count, at the named preferred count, share of named
    counts not measured)."""
    scores = [s for s in scores if s is not None]
    if not scores:
        return (method, 0, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan)
    return (
        method,
        len(scores),
        float(np.median([s.median_error for s in scores])),
        float(np.mean([s.max_error < 0.2 for s in scores])),
        float(np.mean([s.pick_loss for s in scores])),
        float(np.mean([s.coverage for s in scores])),
        _mean([s.fastest_loss for s in scores]),
        _mean([s.preferred_loss for s in scores]),
        _mean([s.off_grid for s in scores]),
    )


def summarise(all_splits: list[Split], names: list[str], verbose: bool = False) -> list[tuple]:
    """aggregate() of every method in ``names`` over ``all_splits``."""
    return [aggregate(method, scores_of(all_splits, method, verbose=verbose)) for method in names]


def merit(row: tuple) -> float:
    """One number to choose a rule by: share under 20% - median error - pick loss."""
    return row[3] - row[2] - row[4]


def source_of(split: Split) -> str:
    return split.curve.split("__")[0]


def choose_rule(by_rule: dict[K, list[Score | None]], index: list[int]) -> K:
    """The rule of ``by_rule`` with the best merit on the splits ``index``."""
    return max(by_rule, key=lambda r: merit(aggregate("", [by_rule[r][i] for i in index])))


def admissible(guard_splits: list[Split], rules: tuple[auto.Rules, ...] = auto.RULE_CHOICES,
               ) -> tuple[list[auto.Rules], list[tuple]]:
    """The rules of ``rules`` no worse than the plain median (``auto.Rules()``) on
    ``guard_splits`` on any figure, and every rule's row there (the median's first)."""
    rows = {r: aggregate(r.label(), [try_score(sp, "auto", r) for sp in guard_splits])
            for r in dict.fromkeys((auto.Rules(), *rules))}
    _, _, med, share, loss, *_ = rows[auto.Rules()]
    ok = []
    for r in rules:
        _, _, m, sh, lo, *_ = rows[r]
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


def loso(all_splits: list[Split], rules: list[auto.Rules] | tuple[auto.Rules, ...] = auto.RULE_CHOICES,
         guard: list[Split] | None = None, held_out: list | None = None,
         pasts: tuple[PastHw, ...] = (NO_PAST,),
         ) -> tuple[list[tuple], dict[str, list[tuple]], dict[str, str]]:
    """Leave-one-source-out: overall rows, per-source rows and the rule chosen per source
    (under the key ``"*"``: the rule chosen on every source, what ``auto.MAIN_RULES``
    should be).  ``held_out``, when given, receives auto's held-out score of every split
    (benchmarks/fewcounts.py joins them with a second rule's).

    For each source, auto's rule is the one of ``rules`` (each with each of ``pasts``:
    what it does past the hardware threads) with the best merit on the other sources'
    splits and its band the one ``calibrate_band`` chooses there (holding the rate on the
    ``guard`` curves too, when given: they are programs, the corpus mostly contention); the
    held-out source's splits are scored with both."""
    if NO_PAST not in pasts:
        raise ValueError("the shipped rule's scores need predict's own past the hardware threads (NO_PAST)")
    sources = sorted({source_of(sp) for sp in all_splits})
    split_source = [source_of(sp) for sp in all_splits]
    # Split by split, every rule in turn: auto keeps the split's member fits between rules
    # (the shipped rule's band variants too: they are the ones calibrated in practice).
    variants = [(r, p) for r in rules for p in pasts]
    by_rule: dict[tuple[auto.Rules, PastHw], list[Score | None]] = {v: [] for v in variants}
    shipped_bands = [replace(auto.MAIN_RULES, band=b) for b in auto.BAND_CHOICES]
    memo: dict[tuple[auto.Rules, PastHw], list[Score | None]] = {(r, p): [] for r in shipped_bands for p in pasts}
    scored = list(dict.fromkeys([*rules, auto.MAIN_RULES, *shipped_bands]))
    for sp in all_splits:
        for r in scored:
            for p in pasts:
                s = try_score(sp, "auto", r, past=p)
                if (r, p) in by_rule:
                    by_rule[(r, p)].append(s)
                if (r, p) in memo:
                    memo[(r, p)].append(s)
    memo.update({v: s for v, s in by_rule.items() if v not in memo})

    def with_band(rule: auto.Rules, past: PastHw = NO_PAST):
        def scores(band: float) -> list[Score | None]:
            v = (replace(rule, band=band), past)
            if v not in memo:
                memo[v] = [try_score(sp, "auto", v[0], past=past) for sp in all_splits]
            return memo[v]
        return scores

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

    def label(rule: auto.Rules, past: PastHw, band: float) -> str:
        return f"{rule.label()}{past.label()}, band {band:g}"

    peers = {m: scores_of(all_splits, m) for m in LOSO_PEERS}
    held_out_auto: list[Score | None] = [None] * len(all_splits)
    default = f"auto[{auto.MAIN_RULES.label()}, band {auto.MAIN_RULES.band:g}]"  # shipped, fixed beforehand
    default_scores = memo[(auto.MAIN_RULES, NO_PAST)]
    chosen, per_source = {}, {}
    for src in sources:
        mine = [i for i, sp in enumerate(all_splits) if split_source[i] == src]
        others = [i for i, sp in enumerate(all_splits) if split_source[i] != src]
        rule, past = choose_rule(by_rule, others)
        band = calibrate_band(with_band(rule, past), others, split_source, guard_cover(rule))
        chosen[src] = label(rule, past, band)
        held = with_band(rule, past)(band)
        for i in mine:
            held_out_auto[i] = held[i]
        per_source[src] = [aggregate("auto", [held_out_auto[i] for i in mine])] + [
            aggregate(m, [peers[m][i] for i in mine]) for m in LOSO_PEERS] + [
            aggregate(default, [default_scores[i] for i in mine])]
    if held_out is not None:
        held_out[:] = held_out_auto
    overall = [aggregate("auto", held_out_auto)] + [aggregate(m, peers[m]) for m in LOSO_PEERS]
    overall.append(aggregate(default, default_scores))
    everything = list(range(len(all_splits)))
    rule, past = choose_rule(by_rule, everything)
    band = calibrate_band(with_band(rule, past), everything, split_source, guard_cover(rule))
    chosen["*"] = label(rule, past, band)
    return overall, per_source, chosen


def print_rows(rows: list[tuple], indent: str = "", precise: bool = False) -> None:
    """``aggregate``'s rows as a table (``precise``: one more digit on every figure, for
    variants that differ by less than the table's rounding)."""
    w = max([12] + [len(r[0]) for r in rows])
    d = 1 if precise else 0
    print(f"{indent}{'method':{w}s} {'splits':>6s} {'median err':>10s} {'max<20%':>8s} {'pick loss':>9s} {'band cover':>10s}"
          f" {'fastest loss':>12s} {'pref loss':>9s} {'unmeasured':>10s}")
    for method, k, med, share, loss, cover, fast, pref, off in rows:
        if k == 0:
            print(f"{indent}{method:{w}s} {k:6d}  (no split has the columns or points it needs)")
            continue

        def cell(v: float, width: int, fmt: str) -> str:  # nan: nothing to score (no band, no name)
            return f"{v:{width}{fmt}}" if np.isfinite(v) else f"{'-':>{width}s}"
        print(f"{indent}{method:{w}s} {k:6d} {med:10.{1 + d}%} {share:8.{2 + d}f} {loss:9.{1 + d}%} "
              f"{cell(cover, 10, f'.{d}%')} {cell(fast, 12, f'.{1 + d}%')} {cell(pref, 9, f'.{1 + d}%')} "
              f"{cell(off, 10, f'.{d}%')}")


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
    ap.add_argument("--no-topology", action="store_true",
                    help="ignore the curves' machine annotations (hardware threads, cores, sockets, fill): "
                         "predict as if the target machine were unknown")
    ap.add_argument("--past-hw", action="store_true",
                    help="with --loso: auto's rule chosen with each of PAST_HW (past the hardware threads the "
                         "prediction times (hw/n)^0, ^0.5 or ^1; #41)")
    ap.add_argument("--pick", choices=tuple(PICKS), default="product",
                    help="the pick loss's count: " + "; ".join(f"{k}: {v}" for k, v in PICKS.items()))
    args = ap.parse_args(argv)
    with picking(args.pick):
        return run(args)


def run(args: argparse.Namespace) -> int:
    names = [m for m in args.methods.split(",") if m]
    folder = args.datasets or (CORPUS if args.loso else DEFAULT_DATASETS)
    if not folder.is_dir():
        if args.datasets is None:  # the curves kept beside the repository are not here
            print(f"accuracy.py: skipped: no {folder} (give --datasets DIR; tests/data/curves holds a copy)")
            return 0
        print(f"accuracy.py: no such directory: {folder}", file=sys.stderr)
        return 2
    all_splits = splits_of(folder, topology=not args.no_topology)
    print(f"{len(set(sp.curve for sp in all_splits))} curves, {len(all_splits)} splits from {folder}"
          f"{'' if not args.no_topology else ' (topology ignored)'}")
    print(f"pick loss's count ({args.pick}): {PICKS[args.pick]}")
    if args.loso:
        rules, guard = list(auto.RULE_CHOICES), None
        if args.guard.is_dir():
            guard = splits_of(args.guard, topology=not args.no_topology)
            rules, rows = admissible(guard)
            print(f"auto's rules on the {len(guard)} splits of {args.guard} (candidates: no worse than median):")
            print_rows(rows, "  ")
            print(f"candidates: {', '.join(r.label() for r in rules)}")
        else:
            print(f"no guard curves at {args.guard}: every rule is a candidate")
        overall, per_source, chosen = loso(all_splits, rules, guard, pasts=PAST_HW if args.past_hw else (NO_PAST,))
        for src, rows in per_source.items():
            print(f"\nheld out: {src} (auto's rule chosen on the other sources: {chosen[src]})")
            print_rows(rows, "  ")
        print("\nall sources, each scored while held out:")
        print_rows(overall)
        print(f"\nrule chosen on all sources: {chosen['*']} "
              f"(shipped: {auto.MAIN_RULES.label()}, band {auto.MAIN_RULES.band:g})")
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
    predict(n, x, metric="throughput", upto=24)  # warm imports and caches
    times = []
    for i in range(repeats):
        y = x * (1 + 1e-9 * (i + 1))  # new values each call: auto keeps recent member fits
        t0 = time.perf_counter()
        predict(n, y, metric="throughput", upto=24)
        times.append(time.perf_counter() - t0)
    print(f"predict(auto) on 12 points: median {np.median(times) * 1e3:.1f} ms over {repeats} calls")


if __name__ == "__main__":
    sys.exit(main())
