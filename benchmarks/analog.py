"""Learning how curves continue from other sources instead of backtesting (issue 15's
leads), measured leave one source out: what each would have done to auto.

auto's backtest barely ranks its members (``selection.py``): the measured range rarely
shows the regime change that decides the next doubling.  These variants learn instead,
from the curves of the OTHER sources only, how curves whose measured part looks alike went
on.  A curve's measured part (counts up to m) is described by ``features``: the log-log
slope over its last doubling, that slope's change from the doubling before, its average
slope since the smallest count and log2(m).  A library holds, for every training curve and
every measured count m it has with 4 counts up to m and a count at 2m or beyond, those
features and the slope of the next doubling (``continuations``).  The nearest neighbours
of a split in the library (features standardised on the library; each source weighs the
same among them) give

* ``analog``: a member continuing the measured curve at the neighbours' mean next slope
  (``trend.continuation``), alone, added to auto's members, or in place of ``damped``;
* ``stacked``: each member's error on (m, 2m] averaged over the neighbouring training
  splits (the M/4 and M/2 splits of the other sources), and the member with the lowest
  (``best``), the median of the lowest 3 (``best3``), or auto's members with that member
  voting twice (``+vote``);
* ``gate``: auto's median of only those members whose slope over (m, 2m] lies inside
  the neighbours' central range (quantiles q and 1 - q; none inside: the nearest).

Every variant's settings (feature set, neighbours k, q) are chosen by an inner leave one
source out on the other sources (``accuracy.merit``: share under 20% - median error -
pick loss) and scored on the held-out one; its library never holds the held-out source.
auto's members are predicted once per split through ``accuracy.predict_split`` and combined
here as auto combines them (per-count median in log space: the shipped rule's row is
printed next to ``accuracy.py``'s own score of it, and they agree).  ``--guard`` scores
each variant, its settings and library taken from the whole corpus, on those curves.

    python benchmarks/analog.py [--datasets DIR] [--guard DIR|none]
"""
from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from accuracy import (CORPUS, DEFAULT_DATASETS, Machine, Split, aggregate, load_all, merit, predict_split,
                      print_rows, score_values, source_of, splits_of, try_score)
from corecast.model.curve.entities import InputError, Measurements, from_perf, to_perf
from corecast.model.curve.methods import auto, trend

DAMPED = f"damped({auto.DEFAULT_RULES.damping:g})"
# The shipped members, by the names ``member_curves`` gives them.
SHIPPED = tuple(DAMPED if m == "damped" else m for m in auto.DEFAULT_RULES.members)
# Members stacking chooses among: the shipped ones and damped at the registered damping.
STACKED = SHIPPED + (f"damped({trend.DAMPING:g})",)
FEATURE_SETS = {"slopes": (0, 1), "slopes+level": (0, 1, 2, 3)}
NEIGHBOURS = (10, 20, 40, 80)
GATE_QUANTILES = (0.05, 0.1, 0.2)
MIN_HEAD = 4  # counts up to m a library entry needs, as a split's training part


def features(counts: np.ndarray, perf: np.ndarray) -> np.ndarray:
    """Shape of a measured curve at its largest count m: log-log slope over (m/2, m], its
    change from (m/4, m/2], the average slope since the smallest count, log2(m).  The
    curve is interpolated log-log; a doubling below the smallest count is cut there."""
    ln, ly = np.log(counts), np.log(perf)
    m = float(counts[-1])

    def at(c: float) -> float:
        return float(np.interp(np.log(max(c, counts[0])), ln, ly))

    def slope(a: float, b: float) -> float:
        a = max(a, counts[0])
        return (at(b) - at(a)) / np.log(b / a) if b > a * (1 + 1e-9) else np.nan

    last = slope(m / 2, m)
    before = slope(m / 4, m / 2)
    change = last - before if np.isfinite(before) else 0.0
    return np.array([last, change, slope(counts[0], m), np.log2(m)])


def next_slope(counts: np.ndarray, perf: np.ndarray, m: float) -> float:
    """Log-log slope of the measured curve from m to 2m (interpolated)."""
    ln, ly = np.log(counts), np.log(perf)
    return float((np.interp(np.log(2 * m), ln, ly) - np.interp(np.log(m), ln, ly)) / np.log(2))


@dataclass
class Library:
    """Continuation examples: features (rows of ``x``), next slope ``y``, source ``src``."""
    x: np.ndarray
    y: np.ndarray
    src: np.ndarray

    def without(self, sources: set[str]) -> "Library":
        keep = ~np.isin(self.src, sorted(sources))
        return Library(self.x[keep], self.y[keep], self.src[keep])


def continuations(curves: list[tuple[str, Measurements, Machine]]) -> Library:
    """Every (curve, measured count m) with MIN_HEAD counts up to m and one at 2m or beyond."""
    x, y, src = [], [], []
    for name, data, _ in curves:
        curve = data.at_target_size()
        n, p = curve.counts, curve.perf
        for j in range(MIN_HEAD - 1, len(n)):
            if n[-1] < 2 * n[j]:
                break
            x.append(features(n[: j + 1], p[: j + 1]))
            y.append(next_slope(n, p, float(n[j])))
            src.append(name.split("__")[0])
    return Library(np.array(x).reshape(-1, 4), np.array(y), np.array(src))


def neighbours(x: np.ndarray, src: np.ndarray, query: np.ndarray, feats: tuple[int, ...],
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the ``k`` rows of ``x`` nearest ``query`` (features ``feats``, each
    standardised on ``x``) and their weights (each source weighs the same, summing to 1)."""
    a = x[:, feats]
    mu, sd = a.mean(0), a.std(0) + 1e-12
    d = np.sqrt((((a - query[list(feats)]) / sd) ** 2).sum(1))
    idx = np.argsort(d, kind="stable")[:k]
    w = np.array([1.0 / np.sum(src[idx] == s) for s in src[idx]])
    return idx, w / w.sum()


@dataclass
class Case:
    """A split with auto's members predicted on it (curves in the split's metric at 1..M)."""
    split: Split
    source: str
    features: np.ndarray
    members: dict[str, np.ndarray]
    errors: dict[str, float]  # each member's largest |log error| on (m, 2m]


def member_curves(sp: Split) -> dict[str, np.ndarray]:
    """Each member's curve as the shipped rule fits it (USL anchored where it is): auto
    of that one member."""
    out = {}
    for name in STACKED:
        damped = name.startswith("damped(")
        rules = replace(auto.DEFAULT_RULES, members=("damped",) if damped else (name,), band=0.0,
                        damping=float(name[len("damped("):-1]) if damped else auto.DEFAULT_RULES.damping)
        try:
            out[name] = predict_split(sp, "auto", rules).values
        except InputError:
            pass
    return out


def test_log_errors(sp: Split, values: np.ndarray) -> np.ndarray:
    full = sp.full
    test = (full.counts > sp.m) & (full.counts <= 2 * sp.m)
    return np.abs(np.log(np.asarray(values, float)[full.counts[test].astype(int) - 1] / full.values[test]))


def make_case(sp: Split) -> Case:
    members = member_curves(sp)
    curve = sp.train.at_target_size()
    return Case(sp, source_of(sp), features(curve.counts, curve.perf), members,
                {k: float(test_log_errors(sp, v).max()) for k, v in members.items()})


def median_curve(curves: list[np.ndarray]) -> np.ndarray:
    """auto's combination: the per-count median in log space."""
    return np.exp(np.median(np.log(np.vstack(curves)), axis=0))


def analog_curve(case: Case, slope: float) -> np.ndarray:
    sp = case.split
    fit = trend.continuation(sp.train, float(np.clip(slope, -trend.MAX_SLOPE, trend.MAX_SLOPE)), "analog", "")
    return from_perf(fit.perf(np.arange(1, int(sp.full.counts.max()) + 1, dtype=float)), sp.full.metric)


def member_slope(case: Case, name: str) -> float:
    """A member's log-log slope over (m, 2m] (to the largest count when 2m lies beyond)."""
    v = to_perf(case.members[name], case.split.full.metric)
    m, hi = int(case.split.m), min(int(2 * case.split.m), len(v))
    return float(np.log(v[hi - 1] / v[m - 1]) / np.log(hi / m))


# A variant: (case, library, training cases, settings) -> predicted curve.  ``library``
# and ``training cases`` never hold the case's source.
Variant = Callable[[Case, Library, list[Case], tuple], np.ndarray]


def _analog_slope(case: Case, lib: Library, settings: tuple) -> float:
    feats, k = settings[:2]
    idx, w = neighbours(lib.x, lib.src, case.features, feats, k)
    return float(np.sum(w * lib.y[idx]))


def analog_alone(case, lib, train, settings):
    return analog_curve(case, _analog_slope(case, lib, settings))


def analog_added(case, lib, train, settings):
    shipped = [case.members[m] for m in SHIPPED if m in case.members]
    return median_curve(shipped + [analog_curve(case, _analog_slope(case, lib, settings))])


def analog_for_damped(case, lib, train, settings):
    kept = [case.members[m] for m in SHIPPED if m in case.members and m != DAMPED]
    return median_curve(kept + [analog_curve(case, _analog_slope(case, lib, settings))])


def _ranked(case: Case, train: list[Case], settings: tuple) -> list[str]:
    """The case's members, lowest mean error over the neighbouring training splits first."""
    feats, k = settings[:2]
    x = np.array([c.features for c in train])
    idx, w = neighbours(x, np.array([c.source for c in train]), case.features, feats, k)
    cap = 2.0  # a member that failed or ran off counts as this (log) error
    mean = {m: sum(wi * min(train[i].errors.get(m, cap), cap) for i, wi in zip(idx, w)) for m in STACKED}
    return sorted((m for m in STACKED if m in case.members), key=mean.get)


def stacked_best(case, lib, train, settings):
    return case.members[_ranked(case, train, settings)[0]]


def stacked_best3(case, lib, train, settings):
    return median_curve([case.members[m] for m in _ranked(case, train, settings)[:3]])


def stacked_vote(case, lib, train, settings):
    shipped = [case.members[m] for m in SHIPPED if m in case.members]
    return median_curve(shipped + [case.members[_ranked(case, train, settings)[0]]])


def gate(case, lib, train, settings):
    feats, k, q = settings
    idx, w = neighbours(lib.x, lib.src, case.features, feats, k)
    lo, hi = np.quantile(lib.y[idx], [q, 1 - q])
    names = [m for m in SHIPPED if m in case.members]
    inside = [m for m in names if lo <= member_slope(case, m) <= hi]
    if not inside:
        middle = float(np.median(lib.y[idx]))
        inside = [min(names, key=lambda m: abs(member_slope(case, m) - middle))]
    return median_curve([case.members[m] for m in inside])


def shipped(case, lib, train, settings):
    return median_curve([case.members[m] for m in SHIPPED if m in case.members])


_KS = [(FEATURE_SETS[f], k) for f in FEATURE_SETS for k in NEIGHBOURS]
VARIANTS: dict[str, tuple[Variant, list[tuple]]] = {
    "auto (shipped members)": (shipped, [()]),
    "analog alone": (analog_alone, _KS),
    "auto + analog": (analog_added, _KS),
    "analog for damped": (analog_for_damped, _KS),
    "stacked best": (stacked_best, _KS),
    "stacked best3": (stacked_best3, _KS),
    "stacked +vote": (stacked_vote, _KS),
    "gate": (gate, [s + (q,) for s in _KS for q in GATE_QUANTILES]),
}


def run_variant(variant: Variant, case: Case, lib: Library, train: list[Case], settings: tuple):
    return score_values(case.split, variant(case, lib, train, settings))


def choose(variant: Variant, options: list[tuple], cases: list[Case], lib: Library) -> tuple:
    """The settings with the best merit over ``cases``, each case predicted from the
    library and cases of the other sources among them (inner leave one source out)."""
    if len(options) == 1:
        return options[0]
    sources = sorted({c.source for c in cases})

    def merit_of(settings: tuple) -> float:
        scores = []
        for s in sources:
            inner_lib, inner_train = lib.without({s}), [c for c in cases if c.source != s]
            scores += [run_variant(variant, c, inner_lib, inner_train, settings) for c in cases if c.source == s]
        return merit(aggregate("", scores))

    return max(options, key=merit_of)


def loso(cases: list[Case], lib: Library) -> tuple[dict[str, list], dict[str, dict[str, tuple]]]:
    """Per variant: every case's held-out score and, per source, the settings chosen."""
    sources = sorted({c.source for c in cases})
    held: dict[str, list] = {}
    chosen: dict[str, dict[str, tuple]] = {}
    for name, (variant, options) in VARIANTS.items():
        held[name], chosen[name] = [None] * len(cases), {}
        for s in sources:
            others = [c for c in cases if c.source != s]
            outer = lib.without({s})
            settings = choose(variant, options, others, outer)
            chosen[name][s] = settings
            for i, c in enumerate(cases):
                if c.source == s:
                    held[name][i] = run_variant(variant, c, outer, others, settings)
    return held, chosen


def linear_continuation(lib: Library) -> tuple[float, float]:
    """(a, b) of next slope ~ a + b * last doubling's slope, least squares with each source
    weighing the same (next slopes within +-MAX_SLOPE, as a member continues them)."""
    w = np.array([1.0 / np.sum(lib.src == s) for s in lib.src])
    b, a = np.polyfit(lib.x[:, 0], np.clip(lib.y, -trend.MAX_SLOPE, trend.MAX_SLOPE), 1, w=np.sqrt(w))
    return float(a), float(b)


def describe(settings: tuple) -> str:
    if not settings:
        return "-"
    names = {v: k for k, v in FEATURE_SETS.items()}
    return f"{names[settings[0]]}, k={settings[1]}" + (f", q={settings[2]:g}" if len(settings) > 2 else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    ap.add_argument("--guard", default=str(DEFAULT_DATASETS), help=f"default: {DEFAULT_DATASETS}")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)
    curves = load_all(args.datasets)
    all_splits = splits_of(args.datasets)
    cases = [make_case(sp) for sp in all_splits]
    lib = continuations(curves)
    print(f"{len(curves)} curves, {len(cases)} splits, {len(lib.y)} library entries from {args.datasets}")
    print_rows([aggregate("auto as accuracy.py scores it", [try_score(sp, "auto") for sp in all_splits])])
    held, chosen = loso(cases, lib)
    for src in sorted({c.source for c in cases}):
        print(f"\nheld out: {src}")
        rows = [aggregate(name, [s for s, c in zip(scores, cases) if c.source == src])
                for name, scores in held.items()]
        print_rows(rows, "  ")
        for name in VARIANTS:
            if chosen[name][src]:
                print(f"    {name}: {describe(chosen[name][src])}")
    fits = [linear_continuation(lib.without({c})) for c in sorted({c.source for c in cases})]
    print(f"\nthe other sources' next slope ~ a + b x the last doubling's: a {min(f[0] for f in fits):+.2f} "
          f"to {max(f[0] for f in fits):+.2f}, b {min(f[1] for f in fits):.2f} to {max(f[1] for f in fits):.2f}")
    print("\nall sources, each scored while held out (settings chosen on the other sources):")
    print_rows([aggregate(name, scores) for name, scores in held.items()])
    if Path(args.guard).is_dir():
        guard = [make_case(sp) for sp in splits_of(Path(args.guard))]
        print(f"\non the {len(guard)} splits of {args.guard} (settings and library from the whole corpus):")
        rows = []
        for name, (variant, options) in VARIANTS.items():
            settings = choose(variant, options, cases, lib)
            rows.append(aggregate(f"{name} [{describe(settings)}]",
                                  [run_variant(variant, c, lib, cases, settings) for c in guard]))
        print_rows(rows, "  ")
    return 0


if __name__ == "__main__":
    sys.exit(main())
