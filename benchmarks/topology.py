"""Uses of the machine's topology for auto, scored on the corpus (#41, #15 re-scoped).

Every split of ``accuracy.splits_of`` (with its machine) is predicted as ``accuracy.py``
does, by auto's shipped rule without its step member (``Rules.smt_member``); the members'
curves at every count up to the curve's largest are kept as ``predict`` asked them (in
core units where threads ahead land where no measured count placed one;
corecast.model.machine.hardware).  Each variant is then the members' per-count median with one more
voter, or the same prediction with another pick:

* ``yield Y``: the members' median asked at SMT yield Y (what auto ships at Y = 1);
* ``flat K``: the median held flat from the first count ahead that puts a thread where no
  measured count did, of kind K (``smt``: a core's further hardware thread; ``socket``:
  the next socket under ``--fill sockets``): the new placement adds nothing;
* ``pick K T``: the pick (the best predicted measured count, ``accuracy.score_values``)
  stays at or below that first boundary of kind K unless the best predicted past it
  gains more than T over the best up to it (``band``: unless the band's low end there
  beats it).

Each variant's figures in sample, then leave one source out: the variant (or none) with
the best ``accuracy.merit`` on the other sources, scored on the held-out one.

    python benchmarks/topology.py [--datasets DIR]
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
from corecast.model.curve.methods import auto

BASE = replace(auto.DEFAULT_RULES, smt_member=None)
KINDS = {"smt": ("smt",), "socket": ("socket",), "smt+socket": ("smt", "socket")}
GAINS = (0.05, 0.1, 0.2, 0.3, 0.5, "band")


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


def members_of(split) -> dict | None:
    """The split's prediction and its members' log performance at counts 1..largest (at
    the model counts ``predict`` used, and at each SMT yield of SMT_YIELD_RANGE)."""
    kept: list = []
    combined = auto._combined_curve

    def keep(fits, weights, weighted_mean):  # the first call is predict's fit (leave-last-out refits follow)
        if not kept:
            kept.extend(f for f, w in zip(fits, weights) if w > 0)
        return combined(fits, weights, weighted_mean)

    auto._combined_curve = keep
    try:
        pred = predict_split(split, "auto", BASE)
    except InputError:
        return None
    finally:
        auto._combined_curve = combined
    top, largest = float(split.train.counts.max()), int(split.full.counts.max())
    grid = np.arange(1.0, largest + 1)
    hw = Hardware.of(*split.machine)
    machine = hw if hw and top <= hw.hw_threads else None
    in_units = machine is not None and machine.step_ahead(top, float(largest))
    equal = machine is not None and machine.waits_for_slowest(split.full.metric)

    def logs(at):
        with np.errstate(all="ignore"):
            rows = [np.asarray(f.perf(at), float) for f in kept]
        return np.vstack([np.where(r > 0, np.log(np.where(r > 0, r, 1.0)), np.nan) for r in rows])

    at_yield = {y: logs(machine.model_counts(grid, top, y, equal)) for y in SMT_YIELD_RANGE} if in_units else {}
    return {"pred": pred, "logs": logs(machine.units(grid, equal_work=equal) if in_units else grid),
            "at_yield": at_yield, "machine": machine}


def values(split, rec: dict, variant: str) -> np.ndarray:
    """The variant's prediction in the split's metric at counts 1..largest."""
    logs, machine = rec["logs"], rec["machine"]
    extra = None
    if variant.startswith("yield ") and rec["at_yield"]:
        extra = np.nanmedian(rec["at_yield"][float(variant.split()[1])], axis=0)
    elif variant.startswith("flat "):
        b = boundary(machine, float(split.train.counts.max()), KINDS[variant.split()[1]])
        if b is not None and b < logs.shape[1]:
            med = np.nanmedian(logs, axis=0)
            extra = np.where(np.arange(1, logs.shape[1] + 1) > b, med[b - 1], med)
    if extra is not None:
        logs = np.vstack([logs, extra[None, :]])
    perf = np.exp(np.nanmedian(logs, axis=0))
    if machine is not None and len(perf) > machine.hw_threads:  # as corecast.model.machine.hardware.oversubscribed
        perf[machine.hw_threads:] = np.minimum(perf[machine.hw_threads:], perf[machine.hw_threads - 1])
    scale = rec["pred"].value_scale
    return perf * scale if split.full.metric == "throughput" else scale / perf


def picked(split, rec: dict, variant: str) -> Score:
    """The shipped prediction's figures with the pick of ``pick K T``."""
    pred = rec["pred"]
    base = score_values(split, pred.values, pred.low, pred.high)
    _, kind, gain = variant.split()
    full = split.full
    idx = full.counts.astype(int) - 1
    better = (lambda v: v) if full.metric == "throughput" else (lambda v: 1 / v)
    perf = better(pred.values[idx])
    low = better((pred.low if full.metric == "throughput" else pred.high)[idx])
    b = boundary(rec["machine"], float(split.train.counts.max()), KINDS[kind])
    inside = full.counts <= (b if b is not None else np.inf)
    chosen = int(np.argmax(perf))
    if inside.any() and not inside.all():
        below, past = (int(np.argmax(np.where(mask, perf, -np.inf))) for mask in (inside, ~inside))
        beats = low[past] > perf[below] if gain == "band" else perf[past] > perf[below] * (1 + float(gain))
        chosen = past if beats else below
    return replace(base, pick_loss=float(1 - full.perf[chosen] / full.perf.max()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path, default=CORPUS)
    args = ap.parse_args(argv)
    splits = splits_of(args.datasets)
    recs = [members_of(sp) for sp in splits]
    splits, recs = zip(*[(sp, r) for sp, r in zip(splits, recs) if r is not None])
    variants = ["none"] + [f"yield {y:g}" for y in SMT_YIELD_RANGE] + [f"flat {k}" for k in KINDS] + [
        f"pick {k} {g}" for k in KINDS for g in GAINS]
    scores = {}
    for v in variants:
        if v.startswith("pick "):
            scores[v] = [picked(sp, r, v) for sp, r in zip(splits, recs)]
        else:
            scores[v] = [score_values(sp, values(sp, r, v)) for sp, r in zip(splits, recs)]
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
