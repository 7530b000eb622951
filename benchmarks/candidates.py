"""Candidate members for auto that the corpus kept out: what adding each would have done.

Shapes auto's members do not have (issue 15's leads), fitted on the training counts
only and registered for this process alone:

* ``peak``: USL whose coherency term puts its peak inside (m, 2m] for the largest
  measured count m (kappa = (1 - sigma) / peak^2, the peak chosen among 8 counts there
  by the fit): the curve rises, peaks and falls within the next doubling;
* ``tworegime``: a socket or SMT step: two log-log lines joined at the measured count
  that fits best (at least 3 counts each), the second one's slope (within +-1)
  continued beyond the largest count;
* ``decay``: a recent slope that keeps shrinking as it did: the log-log slope over the
  last doubling of the count times its ratio to the slope over the doubling before
  (within [0, 1]; where the two differ in sign, the curve turned, auto's damping).
  Amdahl's law does that: its slope (1-f)/(1-f+fn) shrinks by a factor between 1 and 2
  per doubling of n, the faster the larger f.

auto's rule is then chosen leave one source out (``accuracy.loso``) among the shipped
member set and that set with each candidate added (or, for ``tworegime``, in place of
``trend``, for ``decay`` in place of ``damped``), and the candidates are scored alone.
As in ``accuracy.py --loso``, only rules no worse than the plain median on the
``--guard`` curves are candidates, and the band holds its rate there too; with
``--guard none`` every rule is.

    python benchmarks/candidates.py [--datasets DIR] [--guard DIR|none]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from accuracy import (CORPUS, DEFAULT_DATASETS, LOSO_PEERS, admissible, aggregate, loso, print_rows,
                      scores_of, splits_of)
from corecast.model.curve.entities import Fit, InputError, Measurements
from corecast.model.curve.fitting import relative_lsq, rms
from corecast.model.curve.methods import auto, laws, trend
from corecast.model.curve.methods.registry import register

PEAK_CHOICES = 8  # peak counts tried, geometrically spaced in (m, 2m]
SEGMENT = 3  # counts per regime of ``tworegime``


@register("peak", "USL with its peak in (m, 2m] for the largest measured count m", 4)
def fit_peak(data: Measurements, nmax: float) -> Fit:
    curve = data.at_target_size()
    n, y = curve.counts, curve.perf
    best, best_err = None, np.inf
    for peak in np.geomspace(1.05 * n.max(), 2 * n.max(), PEAK_CHOICES):
        def model(q, p, peak=peak):
            return laws.usl(q, [p[0], p[1], (1.0 - p[1]) / peak**2])
        p = relative_lsq(model, n, y, [y[0] / n[0], 0.01], bounds=([0.0, 0.0], [np.inf, 1.0]))
        if p is None:
            continue
        err = float(np.sum(((model(n, p) - y) / y) ** 2))
        if err < best_err:
            best, best_err = (model, p, peak), err
    if best is None:
        raise InputError("peak: no start gives finite values on these points")
    model, p, peak = best
    return Fit(method="peak", candidate="peak", perf=lambda q: model(np.asarray(q, float), p),
               reason=f"USL peaking at {peak:.0f}", params={"lambda": float(p[0]), "sigma": float(p[1]),
                                                             "peak": float(peak)},
               residual=rms((model(n, p) - y) / y))


@register("tworegime", "log-log line of the last regime (after the best-fitting break) continued", 2 * SEGMENT - 1)
def fit_two_regime(data: Measurements, nmax: float) -> Fit:
    curve = data.at_target_size()
    ln, ly = np.log(curve.counts), np.log(curve.perf)

    def sse(a: int, b: int) -> tuple[float, float]:
        coef, res, *_ = np.polyfit(ln[a:b], ly[a:b], 1, full=True)
        return float(res[0]) if res.size else 0.0, float(coef[0])

    # Both lines share the break point; each has SEGMENT counts or more.
    breaks = range(SEGMENT - 1, len(ln) - SEGMENT + 1)
    at = min(breaks, key=lambda b: sse(0, b + 1)[0] + sse(b, len(ln))[0])
    slope = float(np.clip(sse(at, len(ln))[1], -trend.MAX_SLOPE, trend.MAX_SLOPE))
    return trend.continuation(data, slope, "tworegime",
                              f"performance ~ n^{slope:.2f} beyond the largest count (regime since {curve.counts[at]:g})")


@register("decay", "the recent log-log slope, shrinking as it shrank over the doubling before", trend.MIN_COUNTS)
def fit_decay(data: Measurements, nmax: float) -> Fit:
    curve = data.at_target_size()
    first, top = float(curve.counts[0]), float(curve.counts[-1])
    mid = max(top / trend.RECENT_SPAN, first)
    last = trend.slope_between(curve, mid, top)
    before = trend.slope_between(curve, max(mid / trend.RECENT_SPAN, first), mid) if mid > first else 0.0
    ratio = float(np.clip(last / before, 0.0, 1.0)) if last * before > 0 else auto.DEFAULT_RULES.damping
    slope = float(np.clip(last * ratio, -trend.MAX_SLOPE, trend.MAX_SLOPE))
    return trend.continuation(data, slope, "decay", f"performance ~ n^{slope:.2f} beyond the largest count "
                              f"({ratio:.2f} of the slope over the last doubling)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    ap.add_argument("--guard", default=str(DEFAULT_DATASETS), help=f"default: {DEFAULT_DATASETS}")
    args = ap.parse_args(argv)
    all_splits = splits_of(args.datasets)
    shipped = replace(auto.DEFAULT_RULES, band=0.0)  # loso() calibrates the band
    base = shipped.members
    rules = [shipped, replace(shipped, members=base + ("peak",)), replace(shipped, members=base + ("tworegime",)),
             replace(shipped, members=tuple("tworegime" if m == "trend" else m for m in base)),
             replace(shipped, members=base + ("decay",)),
             replace(shipped, members=tuple("decay" if m == "damped" else m for m in base))]
    print(f"{len(all_splits)} splits from {args.datasets}\nevery split, each rule:")
    print_rows([aggregate(r.label(), scores_of(all_splits, "auto", r)) for r in rules]
               + [aggregate(m, scores_of(all_splits, m)) for m in ("peak", "tworegime", "decay")], "  ")
    guard = None
    if Path(args.guard).is_dir():
        guard = splits_of(Path(args.guard))
        candidates, rows = admissible(guard, tuple(rules))
        print(f"\non the {len(guard)} splits of {args.guard} (candidates: no worse than the median, first):")
        print_rows(rows, "  ")
        print(f"candidates: {', '.join(r.label() for r in candidates)}")
    else:
        candidates = rules
        print("\nno guard curves: every rule is a candidate")
    overall, per_source, chosen = loso(all_splits, candidates, guard)
    print("\nleave one source out, auto's rule chosen among these on the other sources:")
    for src, rows in per_source.items():
        print(f"  {src:14s} {chosen[src]}")
    print_rows([r for r in overall if r[0] == "auto" or r[0] in LOSO_PEERS[:1]], "  ")
    print(f"chosen on all sources: {chosen['*']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
