"""Uses of the machine's topology for auto, scored on the corpus (#41, #15 re-scoped).

Every split of ``accuracy.splits_of`` (with its machine) is predicted as ``accuracy.py``
does, by auto's shipped rule without its step member (``Rules.smt_member``); the members'
curves at every count up to the curve's largest are kept as ``predict`` asked them (in
core units where threads ahead land where no measured count placed one;
corecast.model.machine.hardware).  Each variant is then the members' per-count median with more
voters or other weights, or the same prediction with another pick:

* ``yield Y``: the members' median asked at SMT yield Y votes too (what auto ships at
  Y = 1); ``yield 1 x2``: that voter votes twice; ``yield 0.7+1``: one voter at each;
* ``flat K``: the median held flat from the first count ahead that puts a thread where no
  measured count did, of kind K (``smt``: a core's further hardware thread; ``socket``:
  the next socket under ``--fill sockets``): the new placement adds nothing;
* ``pick K T``: the pick (the best predicted measured count, ``accuracy.score_values``)
  stays at or below that first boundary of kind K unless the best predicted past it
  gains more than T over the best up to it (``band``: unless the band's low end there
  beats it).

The variants below start from the shipped rule (the step member at yield 1):

* ``llo best N`` / ``llo weighted T``: the members weighted by their leave-last-point-out
  error on the curve itself (each refitted without the largest measured count, as
  ``predict`` fitted it, and scored there): the median of the N best, or the weighted
  median with weights exp(-(error - least error) / T);
* ``socket yield Y``: past the first unmeasured socket boundary the members' median votes
  again with each thread past it worth Y of what ``Hardware.units`` counts (Y = 0: the
  second socket adds nothing; cross-socket traffic eats what its cores add);
* ``over A``: past the hardware threads one more voter falls as (hardware threads /
  n)^A from the median there (time-shared spinning threads lose what they wait on);
* ``where slope < S`` (or ``>``), ``where efficiency < E`` (or ``>``): the rest of the
  variant only on curves whose log-log slope over the last measured doubling
  (``trend.recent_slope``), or whose parallel efficiency at the largest measured count,
  lies on that side (elsewhere ``none``): whether what a curve did so far says which
  curves gain from a core's further hardware threads;
* ``pick K backtest`` / ``pick K members``: the pick crosses the first unmeasured
  boundary of kind K only where the predicted gain past it exceeds the members' median
  backtest error per doubling of the count (the ``band`` auto widens by), or where the
  lowest member gains too.

Each variant's figures in sample, then leave one source out: the variant (or none) with
the best ``accuracy.merit`` on the other sources, scored on the held-out one.

    python benchmarks/topology.py [--datasets DIR] [--variants PREFIX,...]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from accuracy import CORPUS, Score, aggregate, merit, predict_split, print_rows, score_values, source_of, splits_of
from corecast.model.curve.entities import InputError
from corecast.model.machine.hardware import SMT_YIELD_RANGE, Hardware
from corecast.model.curve.methods import auto, trend

BASE = replace(auto.DEFAULT_RULES, smt_member=None)
KINDS = {"smt": ("smt",), "socket": ("socket",), "smt+socket": ("smt", "socket")}
GAINS = (0.05, 0.1, 0.2, 0.3, 0.5, "band")
# The step member's yields asked (SMT_YIELD_RANGE's ends and two between).
YIELDS = (*SMT_YIELD_RANGE, 0.5, 0.7)
SHIPPED = "yield 1"


def boundary(hw: Hardware | None, top: float, kinds: tuple[str, ...]) -> int | None:
    """The last count before the first one above ``top`` that puts a thread where no
    count up to ``top`` did, of ``kinds``; None: no such count up to the hardware threads."""
    if hw is None or top >= hw.hw_threads:
        return None
    slot, socket = hw._order()
    shared, last = bool((slot[:int(top)] > 1).any()), int(socket[:int(top)].max())
    for c in range(int(top) + 1, hw.hw_threads + 1):
        if ("smt" in kinds and slot[c - 1] > 1 and not shared) or ("socket" in kinds and socket[c - 1] > last):
            return c - 1
    return None


def _log(rows: list[np.ndarray]) -> np.ndarray:
    return np.vstack([np.where(r > 0, np.log(np.where(r > 0, r, 1.0)), np.nan) for r in rows])


def members_of(split) -> dict | None:
    """The split's prediction and its members' log performance at counts 1..largest (at
    the model counts ``predict`` used, and at each SMT yield of YIELDS), with each
    member's leave-last-point-out error and backtest error."""
    kept: list = []
    fitted: list = []
    combined, backtest = auto._combined_curve, auto.backtest_errors

    def keep(fits, weights, weighted_mean):  # the first call is predict's fit (leave-last-out refits follow)
        if not kept:
            kept.extend(f for f, w in zip(fits, weights) if w > 0)
        return combined(fits, weights, weighted_mean)

    def seen(data, names, nmax, damping=trend.DAMPING, anchor=False):  # the data predict fitted
        if not fitted:
            fitted.append((data, nmax, damping, anchor))
        return backtest(data, names, nmax, damping, anchor)

    auto._combined_curve, auto.backtest_errors = keep, seen
    try:
        pred = predict_split(split, "auto", BASE)
    except InputError:
        return None
    finally:
        auto._combined_curve, auto.backtest_errors = combined, backtest
    top, largest = float(split.train.counts.max()), int(split.full.counts.max())
    grid = np.arange(1.0, largest + 1)
    hw = Hardware.of(*split.machine)
    machine = hw if hw and top <= hw.hw_threads else None
    in_units = machine is not None and machine.step_ahead(top, float(largest))
    equal = machine is not None and machine.waits_for_slowest(split.full.metric)

    def logs(at):
        with np.errstate(all="ignore"):
            return _log([np.asarray(f.perf(at), float) for f in kept])

    at_yield = {y: logs(machine.model_counts(grid, top, y, equal)) for y in YIELDS} if in_units else {}
    names = [f.method for f in kept]
    bt = pred.extras.get("backtest") or {}
    return {"pred": pred, "logs": logs(machine.units(grid, equal_work=equal) if in_units else grid),
            "units": machine.units(grid, equal_work=equal) if in_units else grid,
            "at_yield": at_yield, "machine": machine, "llo": _leave_last_out(names, fitted),
            "backtest": np.array([np.inf if bt.get(m) is None else bt[m] for m in names]) if bt else None}


def _leave_last_out(names: list[str], fitted: list) -> np.ndarray | None:
    """Each member refitted without the largest count of the data ``predict`` fitted (in
    core units where it used them), its |log error| there (inf: it cannot be fitted)."""
    if not fitted:
        return None
    data, nmax, damping, anchor = fitted[0]
    curve = data.at_target_size()
    last = float(curve.counts.max())
    head = data.subset(np.flatnonzero(data.counts < last))
    errors = []
    for name in names:
        try:
            fit = auto._fit_member(name, head, nmax, damping, anchor)
            with np.errstate(all="ignore"):
                got = float(np.asarray(fit.perf(np.array([last])), float)[0])
            errors.append(abs(np.log(got / float(curve.perf[-1]))) if got > 0 and np.isfinite(got) else np.inf)
        except (InputError, ValueError, np.linalg.LinAlgError, FloatingPointError):
            errors.append(np.inf)
    return np.array(errors)


def weighted_median(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per column of ``x`` (rows: voters) the weighted median, nan ignored (equal weights:
    numpy's median)."""
    if np.all(w == w[0]) and w[0] > 0:
        return np.nanmedian(x, axis=0)
    ok = np.isfinite(x) & (w[:, None] > 0)
    order = np.argsort(np.where(ok, x, np.inf), axis=0, kind="stable")
    v = np.take_along_axis(np.where(ok, x, np.nan), order, axis=0)
    c = np.cumsum(np.take_along_axis(np.where(ok, w[:, None], 0.0), order, axis=0), axis=0)
    half = c[-1] / 2
    i = np.minimum(np.argmax(c >= half - 1e-12 * c[-1], axis=0), len(x) - 1)
    cols = np.arange(x.shape[1])
    tie = (np.abs(c[i, cols] - half) <= 1e-9 * c[-1]) & (i + 1 < ok.sum(axis=0))
    upper = v[np.minimum(i + 1, len(x) - 1), cols]
    out = np.where(tie, (v[i, cols] + upper) / 2, v[i, cols])
    return np.where(c[-1] > 0, out, np.nan)


def _weights(rec: dict, part: str) -> np.ndarray:
    """The members' weights of ``llo best N`` / ``llo weighted T`` (equal otherwise)."""
    n = rec["logs"].shape[0]
    e = rec["llo"]
    if not part.startswith("llo ") or e is None or not np.isfinite(e).any():
        return np.ones(n)
    how, value = part.split()[1:]
    if how == "best":
        w = np.zeros(n)
        w[np.argsort(e, kind="stable")[:int(value)]] = 1.0
        return w
    return np.where(np.isfinite(e), np.exp(-(e - e[np.isfinite(e)].min()) / float(value)), 0.0)


def _holds(split, part: str) -> bool:
    """Whether the split's training curve meets ``where slope|efficiency </> X``."""
    _, what, side, bound = part.split()
    curve = split.train.at_target_size()
    if what == "slope":
        x = trend.recent_slope(curve)
    else:
        x = float(curve.perf[-1] / curve.perf[0] / (curve.counts[-1] / curve.counts[0]))
    return x < float(bound) if side == "<" else x > float(bound)


def values(split, rec: dict, variant: str) -> np.ndarray:
    """The variant's prediction in the split's metric at counts 1..largest (parts joined
    by ``" + "`` add up: ``yield 1 + llo best 3``)."""
    logs, machine = rec["logs"], rec["machine"]
    top = float(split.train.counts.max())
    parts = variant.split(" + ")
    if not all(_holds(split, p) for p in parts if p.startswith("where ")):
        parts = ["none"]
    weights = np.ones(logs.shape[0])
    for part in parts:
        if part.startswith("llo "):
            weights = _weights(rec, part)
    rows, row_w = [logs], [weights]
    vote = float(weights.max())

    def median() -> np.ndarray:
        return weighted_median(np.vstack(rows), np.concatenate(row_w))

    for part in parts:
        extra = []
        if part.startswith("yield ") and rec["at_yield"]:
            ys = part.split()[1]
            times = 2 if part.endswith(" x2") else 1
            extra = [weighted_median(rec["at_yield"][float(y)], weights) for y in ys.split("+")] * times
        elif part.startswith("flat "):
            b = boundary(machine, top, KINDS[part.split()[1]])
            if b is not None and b < logs.shape[1]:
                med = np.nanmedian(logs, axis=0)
                extra = [np.where(np.arange(1, logs.shape[1] + 1) > b, med[b - 1], med)]
        elif part.startswith("socket yield "):
            b = boundary(machine, top, ("socket",))
            if b is not None and b < logs.shape[1]:
                u, grid = rec["units"], np.arange(1.0, logs.shape[1] + 1)
                asked = np.where(grid > b, u[b - 1] + float(part.split()[2]) * (u - u[b - 1]), u)
                order = np.argsort(u, kind="stable")
                extra = [np.interp(asked, u[order], median()[order])]
        elif part.startswith("over ") and machine is not None and logs.shape[1] > machine.hw_threads:
            hw, med = machine.hw_threads, median()
            grid = np.arange(1.0, logs.shape[1] + 1)
            extra = [np.where(grid > hw, med[hw - 1] + float(part.split()[1]) * np.log(hw / grid), med)]
        rows += [e[None, :] for e in extra]
        row_w += [np.array([vote])] * len(extra)
    perf = np.exp(median())
    if machine is not None and len(perf) > machine.hw_threads:  # as corecast.model.machine.hardware.oversubscribed
        perf[machine.hw_threads:] = np.minimum(perf[machine.hw_threads:], perf[machine.hw_threads - 1])
    scale = rec["pred"].value_scale
    return perf * scale if split.full.metric == "throughput" else scale / perf


def picked(split, rec: dict, variant: str) -> Score:
    """The figures of the prediction before ``" + pick "`` (the shipped prediction of
    ``members_of`` where nothing precedes it) with the pick of ``pick K T``."""
    before, _, rule = variant.rpartition("pick ")
    pred = rec["pred"]
    shown = values(split, rec, before.rstrip(" +")) if before else pred.values
    base = score_values(split, shown, pred.low, pred.high) if not before else score_values(split, shown)
    kind, gain = rule.split()
    full = split.full
    idx = full.counts.astype(int) - 1
    better = (lambda v: v) if full.metric == "throughput" else (lambda v: 1 / v)
    perf = better(shown[idx])
    top = float(split.train.counts.max())
    b = boundary(rec["machine"], top, KINDS[kind])
    inside = full.counts <= (b if b is not None else np.inf)
    chosen = int(np.argmax(perf))
    if inside.any() and not inside.all():
        below, past = (int(np.argmax(np.where(mask, perf, -np.inf))) for mask in (inside, ~inside))
        if gain == "band":
            low = better((pred.low if full.metric == "throughput" else pred.high)[idx])
            beats = low[past] > perf[below]
        elif gain == "members":  # the lowest member gains past the boundary too
            scale = pred.value_scale if full.metric == "throughput" else 1 / pred.value_scale
            beats = np.exp(np.nanmin(rec["logs"][:, int(full.counts[past]) - 1])) * scale > perf[below]
        elif gain == "backtest":
            finite = rec["backtest"][np.isfinite(rec["backtest"])] if rec["backtest"] is not None else []
            need = float(np.median(finite)) * np.log2(max(full.counts[past] / top, 1.0)) if len(finite) else 0.0
            beats = np.log(perf[past] / perf[below]) > need
        else:
            beats = perf[past] > perf[below] * (1 + float(gain))
        chosen = past if beats else below
    return replace(base, pick_loss=float(1 - full.perf[chosen] / full.perf.max()))


VARIANTS = (["none"] + [f"yield {y:g}" for y in YIELDS] + ["yield 1 x2", "yield 0.7+1"]
            + [f"flat {k}" for k in KINDS] + [f"pick {k} {g}" for k in KINDS for g in GAINS]
            + [f"{SHIPPED} + llo best {n}" for n in (2, 3, 4)] + [f"{SHIPPED} + llo weighted {t:g}" for t in (0.1, 0.2)]
            + [f"{SHIPPED} + socket yield {y:g}" for y in (0, 0.5)] + [f"{SHIPPED} + over {a:g}" for a in (0.5, 1)]
            + [f"{SHIPPED} + pick {k} {g}" for k in KINDS for g in ("backtest", "members")]
            + [f"{SHIPPED} + where {what} {side} {x:g}" for what in ("slope", "efficiency") for side in "<>"
               for x in (0.2, 0.4, 0.6, 0.8)])


def score_variant(split, rec: dict, variant: str) -> Score:
    if "pick " in variant:
        return picked(split, rec, variant)
    return score_values(split, values(split, rec, variant))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    ap.add_argument("--variants", default="",
                    help="only the variants starting with one of these comma-separated prefixes (and none)")
    args = ap.parse_args(argv)
    splits = splits_of(args.datasets)
    recs = [members_of(sp) for sp in splits]
    splits, recs = zip(*[(sp, r) for sp, r in zip(splits, recs) if r is not None])
    prefixes = [p for p in args.variants.split(",") if p]
    variants = [v for v in VARIANTS if v == "none" or not prefixes or any(v.startswith(p) for p in prefixes)]
    scores = {v: [score_variant(sp, r, v) for sp, r in zip(splits, recs)] for v in variants}
    print(f"{len(splits)} splits from {args.datasets}; members of {BASE.label()} (in sample):")
    print_rows([aggregate(v, scores[v]) for v in variants])
    sources = [source_of(sp) for sp in splits]
    held: list[Score | None] = [None] * len(splits)
    print("\nleave one source out (the variant chosen on the other sources):")
    for src in sorted(set(sources)):
        others = [i for i, s in enumerate(sources) if s != src]
        best = max(variants, key=lambda v: merit(aggregate(v, [scores[v][i] for i in others])))
        print(f"  {src}: {best}")
        for i, s in enumerate(sources):
            if s == src:
                held[i] = scores[best][i]
    print_rows([aggregate("held out", held)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
