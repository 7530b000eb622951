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
  beats it); K ``over``: the boundary is the hardware threads (added when ibr showed
  picks one count past them, #41).

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

And #41's last suggestions, also from the shipped rule (``voters``: its members and its
step member):

* ``pick K spread C`` / ``pick K growth C``: a band past the first unmeasured boundary of
  kind K as wide as the voters disagree there, C times their spread (max - min, log scale;
  ``growth``: the spread less its value at the boundary), and the pick judged at its low
  end past the boundary only;
* ``pick K quantile Q``: the same, the band's low end the voters' Q-quantile;
* ``coreshape Y``: a voter for the per-core shape: past the measured counts, the members'
  median at the cores the threads occupy (SMT yield 0) times 1 + Y x the further hardware
  threads per occupied core (the members are already fitted on core units and continued
  at an SMT yield: ``yield Y`` above; this voter scales the per-core curve instead);
* ``trim T`` / ``trim past T``: at counts whose voters span more than T (log scale), the
  voter furthest from the median of the others is left out (``past``: only past the
  first unmeasured boundary or the hardware threads);
* ``reliab R T``: the voters' weighted median, each voter's weight in a count's regime
  (``regimes``: measured placements, past an unmeasured SMT or socket boundary, past the
  hardware threads) exp(-(error - least error) / T) of its median error there on other
  splits (``best3``: the three least; ``inv``: 1 / error); R says where: ``past`` (past
  a boundary, each regime apart), ``all`` (in the measured placements too), ``pooled``
  (SMT and socket as one regime, so a socket crossing is judged by what SMT crossings
  did).  Learned in sample on every source; held out on the other sources only.

Each variant's figures in sample, then leave one source out: the variant (or none) with
the best ``accuracy.merit`` on the other sources, scored on the held-out one (a learned
variant's merit there from tables learned without each scored source, nested); then each
family of the last suggestions alone, chosen the same way among it and the shipped rule,
and each learned variant with its constant fixed, learned on the other sources.

    python benchmarks/topology.py [--datasets DIR] [--variants PREFIX,...]
"""
from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from accuracy import CORPUS, Score, aggregate, merit, predict_split, print_rows, score_values, source_of, splits_of
from corecast.model.curve.entities import InputError
from corecast.model.machine.hardware import SMT_YIELD_RANGE, Hardware
from corecast.model.curve.methods import auto, trend

BASE = replace(auto.DEFAULT_RULES, smt_member=None)
# ``over``: the hardware threads themselves (counts past them time-share the machine;
# ibr's maps lose up to half their throughput one count past them).
KINDS = {"smt": ("smt",), "socket": ("socket",), "smt+socket": ("smt", "socket"), "over": ("over",)}
GAINS = (0.05, 0.1, 0.2, 0.3, 0.5, "band")
# The step member's yields asked (SMT_YIELD_RANGE's ends and two between).
YIELDS = (*SMT_YIELD_RANGE, 0.5, 0.7)
SHIPPED = "yield 1"


def boundary(hw: Hardware | None, top: float, kinds: tuple[str, ...]) -> int | None:
    """The last count before the first one above ``top`` that puts a thread where no
    count up to ``top`` did, of ``kinds`` (``over``: the hardware threads); None: no such
    count up to the hardware threads."""
    if hw is None or top >= hw.hw_threads:
        return None
    slot, socket = hw._order()
    shared, last = bool((slot[:int(top)] > 1).any()), int(socket[:int(top)].max())
    for c in range(int(top) + 1, hw.hw_threads + 1):
        if ("smt" in kinds and slot[c - 1] > 1 and not shared) or ("socket" in kinds and socket[c - 1] > last):
            return c - 1
    return hw.hw_threads if "over" in kinds else None


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
    return {"pred": pred, "names": names, "logs": logs(machine.units(grid, equal_work=equal) if in_units else grid),
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
    """Per column of ``x`` (rows: voters) the weighted median, nan ignored; ``w``: a weight
    per row, or per cell of ``x`` (equal weights per row: numpy's median)."""
    if w.ndim == 1 and np.all(w == w[0]) and w[0] > 0:
        return np.nanmedian(x, axis=0)
    cell = np.broadcast_to(w[:, None] if w.ndim == 1 else w, x.shape)
    ok = np.isfinite(x) & (cell > 0)
    order = np.argsort(np.where(ok, x, np.inf), axis=0, kind="stable")
    v = np.take_along_axis(np.where(ok, x, np.nan), order, axis=0)
    c = np.cumsum(np.take_along_axis(np.where(ok, cell, 0.0), order, axis=0), axis=0)
    half = c[-1] / 2
    i = np.minimum(np.argmax(c >= half - 1e-12 * c[-1], axis=0), len(x) - 1)
    cols = np.arange(x.shape[1])
    tie = (np.abs(c[i, cols] - half) <= 1e-9 * c[-1]) & (i + 1 < ok.sum(axis=0))
    upper = v[np.minimum(i + 1, len(x) - 1), cols]
    out = np.where(tie, (v[i, cols] + upper) / 2, v[i, cols])
    return np.where(c[-1] > 0, out, np.nan)


def trimmed_median(x: np.ndarray, limit: float, where: np.ndarray) -> np.ndarray:
    """Per column of ``x`` (rows: voters) the median; in the columns ``where`` whose voters
    span more than ``limit`` (log scale) and number three or more, the voter furthest from
    the median of the others is left out first."""
    out = np.nanmedian(x, axis=0)
    with np.errstate(all="ignore"):
        spread = np.nanmax(x, axis=0) - np.nanmin(x, axis=0)
    for c in np.flatnonzero(where & (spread > limit) & (np.isfinite(x).sum(axis=0) >= 3)):
        ok = np.flatnonzero(np.isfinite(x[:, c]))
        far = [abs(x[j, c] - np.median(x[ok[ok != j], c])) for j in ok]
        out[c] = np.median(x[ok[ok != ok[int(np.argmax(far))]], c])
    return out


def regimes(split, rec: dict, pooled: bool = False) -> np.ndarray:
    """Per count 1..largest where its threads land, against the counts the split measured:
    ``in`` (placements measured, or no machine), ``smt`` (past the first unmeasured SMT
    boundary), ``socket`` (past the first unmeasured socket boundary), ``over`` (past the
    hardware threads); ``pooled``: ``smt`` and ``socket`` are one regime, ``past``."""
    n = np.arange(1, rec["logs"].shape[1] + 1)
    out = np.full(len(n), "in", dtype=object)
    machine = rec["machine"]
    if machine is None:
        return out
    top = float(split.train.counts.max())
    for kind in ("smt", "socket"):
        b = boundary(machine, top, (kind,))
        if b is not None:
            out[n > b] = "past" if pooled else kind
    out[n > machine.hw_threads] = "over"
    return out


def voters(rec: dict) -> tuple[np.ndarray, list[str]]:
    """The shipped rule's voters at counts 1..largest (the members, and the step member
    where the split steps ahead) and their names."""
    rows, names = rec["logs"], list(rec["names"])
    if rec["at_yield"]:
        rows = np.vstack([rows, np.nanmedian(rec["at_yield"][1.0], axis=0)[None, :]])
        names.append("step")
    return rows, names


def measured_logs(split, rec: dict) -> np.ndarray:
    """The measured curve in the members' units: log performance over ``value_scale``."""
    full, scale = split.full, rec["pred"].value_scale
    return np.log(full.values / scale) if full.metric == "throughput" else np.log(scale / full.values)


def voter_errors(split, rec: dict, pooled: bool = False) -> dict[str, dict[str, float]]:
    """Per regime (``regimes``) of the split's test counts, each shipped voter's mean
    |log error| there."""
    rows, names = voters(rec)
    reg = regimes(split, rec, pooled)
    full = split.full
    test = (full.counts > split.m) & (full.counts <= 2 * split.m)
    idx = full.counts[test].astype(int) - 1
    measured = measured_logs(split, rec)[test]
    out = {}
    for r in set(reg[idx]):
        sel = reg[idx] == r
        err = np.abs(rows[:, idx[sel]] - measured[sel][None, :])
        out[r] = {nm: float(np.nanmean(e)) for nm, e in zip(names, err) if np.isfinite(e).any()}
    return out


def reliability(errors: list[dict], index) -> dict[str, dict[str, float]]:
    """Per regime and voter, the median over the splits ``index`` of ``voter_errors``."""
    acc: dict[str, dict[str, list[float]]] = {}
    for i in index:
        for r, by_name in errors[i].items():
            for nm, e in by_name.items():
                acc.setdefault(r, {}).setdefault(nm, []).append(e)
    return {r: {nm: float(np.median(v)) for nm, v in d.items()} for r, d in acc.items()}


# ``reliab R T``'s regimes: where the learned weights apply (elsewhere every voter counts alike).
RELIABILITY_REGIMES = {"past": ("smt", "socket", "over"), "all": ("in", "smt", "socket", "over"),
                       "pooled": ("past", "over")}


def _reliability_weights(split, rec: dict, part: str, table: dict, names: list[str]) -> np.ndarray:
    """Per voter (``names``) and count the weights of ``reliab R T``: where a count's regime
    is one of R's, exp(-(error - least error) / T) of each voter's error there in ``table``
    (``best3``: the three least; ``inv``: 1 / error); a voter the table lacks gets the
    median error."""
    _, which, how = part.split()
    reg = regimes(split, rec, pooled=which == "pooled")
    w = np.ones((len(names), len(reg)))
    for r in RELIABILITY_REGIMES[which]:
        cols = reg == r
        e = np.array([table.get(r, {}).get(nm, np.nan) for nm in names])
        if not cols.any() or not np.isfinite(e).any():
            continue
        e = np.where(np.isfinite(e), e, np.nanmedian(e))
        if how == "best3":
            wr = np.zeros(len(e))
            wr[np.argsort(e, kind="stable")[:3]] = 1.0
        elif how == "inv":
            wr = 1.0 / np.maximum(e, 1e-3)
        else:
            wr = np.exp(-(e - e.min()) / float(how))
        w[:, cols] = wr[:, None]
    return w


def coreshape(split, rec: dict, smt_yield: float) -> np.ndarray | None:
    """The ``coreshape Y`` voter: past the measured counts, the members' median at the
    cores the threads occupy (SMT yield 0), times 1 + Y x the further hardware threads per
    occupied core: the per-core curve scaled by what siblings add, not continued along it."""
    machine = rec["machine"]
    if not rec["at_yield"]:
        return None
    grid = np.arange(1.0, rec["logs"].shape[1] + 1)
    inside = np.minimum(grid, machine.hw_threads)
    occupied = machine.units(inside, 0.0)
    v = np.nanmedian(rec["at_yield"][0.0], axis=0) + np.log1p(smt_yield * (inside - occupied) / occupied)
    return np.where(grid > float(split.train.counts.max()), v, np.nanmedian(rec["logs"], axis=0))


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


def values(split, rec: dict, variant: str, table: dict | None = None) -> np.ndarray:
    """The variant's prediction in the split's metric at counts 1..largest (parts joined
    by ``" + "`` add up: ``yield 1 + llo best 3``); ``table``: ``reliability``'s, for
    ``reliab R T``."""
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
    names = list(rec.get("names", [""] * logs.shape[0]))
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
        elif part.startswith("coreshape "):
            voter = coreshape(split, rec, float(part.split()[1]))
            extra = [] if voter is None else [voter]
        rows += [e[None, :] for e in extra]
        row_w += [np.array([vote])] * len(extra)
        names += ["step" if part.startswith("yield ") else part] * len(extra)
    trim = next((p for p in parts if p.startswith("trim ")), None)
    reliab = next((p for p in parts if p.startswith("reliab ")), None)
    if trim is not None:
        where = regimes(split, rec) != "in" if trim.startswith("trim past ") else np.ones(logs.shape[1], bool)
        perf = np.exp(trimmed_median(np.vstack(rows), float(trim.split()[-1]), where))
    elif reliab is not None:
        perf = np.exp(weighted_median(np.vstack(rows), _reliability_weights(split, rec, reliab, table or {}, names)))
    else:
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
    if rule.split()[1] in ("spread", "growth", "quantile"):
        return _spread_pick(split, rec, shown, base, rule)
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


def _spread_pick(split, rec: dict, shown: np.ndarray, base: Score, rule: str) -> Score:
    """``pick K spread C`` / ``pick K growth C``: every measured count past the first
    unmeasured boundary of kind K is judged at the prediction's log less C times the
    spread of the shipped voters there (``growth``: less their spread at the boundary),
    the low end of a band as wide as the members disagree; ``pick K quantile Q``: less
    the voters' median less their Q-quantile there (no constant scales the spread)."""
    kind, how, c = rule.split()
    full = split.full
    b = boundary(rec["machine"], float(split.train.counts.max()), KINDS[kind])
    if b is None or b >= len(shown):
        return base
    rows, _ = voters(rec)
    with np.errstate(all="ignore"):
        if how == "quantile":
            spread, c = np.nanmedian(rows, axis=0) - np.nanquantile(rows, float(c), axis=0), 1.0
        else:
            spread = np.nanmax(rows, axis=0) - np.nanmin(rows, axis=0)
    if how == "growth":
        spread = np.maximum(spread - spread[b - 1], 0.0)
    idx = full.counts.astype(int) - 1
    perf = np.log(shown[idx] if full.metric == "throughput" else 1 / shown[idx])
    chosen = int(np.argmax(np.where(full.counts > b, perf - float(c) * spread[idx], perf)))
    return replace(base, pick_loss=float(1 - full.perf[chosen] / full.perf.max()))


VARIANTS = (["none"] + [f"yield {y:g}" for y in YIELDS] + ["yield 1 x2", "yield 0.7+1"]
            + [f"flat {k}" for k in KINDS] + [f"pick {k} {g}" for k in KINDS for g in GAINS]
            + [f"{SHIPPED} + llo best {n}" for n in (2, 3, 4)] + [f"{SHIPPED} + llo weighted {t:g}" for t in (0.1, 0.2)]
            + [f"{SHIPPED} + socket yield {y:g}" for y in (0, 0.5)] + [f"{SHIPPED} + over {a:g}" for a in (0.5, 1)]
            + [f"{SHIPPED} + pick {k} {g}" for k in KINDS for g in ("backtest", "members")]
            + [f"{SHIPPED} + where {what} {side} {x:g}" for what in ("slope", "efficiency") for side in "<>"
               for x in (0.2, 0.4, 0.6, 0.8)]
            # #41's last suggestions: a band as wide as the members disagree
            # past the boundary, judged at its low end for the pick; a per-core-shape
            # voter; the median trimmed where the voters disagree; per-regime reliability.
            + [f"{SHIPPED} + pick {k} {how} {c:g}" for k in KINDS for how in ("spread", "growth")
               for c in (0.1, 0.15, 0.25, 0.5, 1)]
            + [f"{SHIPPED} + pick {k} quantile {q:g}" for k in KINDS for q in (0, 0.1, 0.25, 0.4)]
            + [f"{pre}coreshape {y:g}" for y in (0.3, 0.5, 1) for pre in ("", f"{SHIPPED} + ")]
            + [f"{SHIPPED} + trim {where}{t:g}" for t in (0.1, 0.2, 0.4, 0.8) for where in ("", "past ")]
            + [f"{SHIPPED} + reliab {r} {t}" for r in RELIABILITY_REGIMES for t in ("0.02", "0.05", "0.1", "0.2",
                                                                                     "best3", "inv")])


def learned(variant: str) -> bool:
    """Whether ``variant`` learns from other splits (``reliab``: its ``table``)."""
    return " reliab " in f" {variant}"


def score_variant(split, rec: dict, variant: str, table: dict | None = None) -> Score:
    if "pick " in variant:
        return picked(split, rec, variant)
    return score_values(split, values(split, rec, variant, table))


class Scorer:
    """Every variant's score per split; a learned variant's (``learned``) with its table
    learned on given splits only, kept per set of sources learned from."""

    def __init__(self, splits, recs, variants: list[str]):
        self.splits, self.recs = splits, recs
        self.sources = [source_of(sp) for sp in splits]
        self.fixed = {v: [score_variant(sp, r, v) for sp, r in zip(splits, recs)]
                      for v in variants if not learned(v)}
        self.errors = {pooled: [voter_errors(sp, r, pooled) for sp, r in zip(splits, recs)]
                       for pooled in (False, True)}
        self.memo: dict = {}

    def score(self, variant: str, i: int, without: frozenset = frozenset()) -> Score:
        """Split ``i``'s score, a learned variant's learned on the splits whose source is
        not in ``without``."""
        if not learned(variant):
            return self.fixed[variant][i]
        pooled = variant.split(" reliab ")[1].split()[0] == "pooled"
        key = (pooled, without)
        if key not in self.memo:
            self.memo[key] = reliability(self.errors[pooled],
                                         [j for j, s in enumerate(self.sources) if s not in without])
        return score_variant(self.splits[i], self.recs[i], variant, self.memo[key])

    def held_out(self, variants: list[str]) -> tuple[list[Score], dict[str, str]]:
        """Leave one source out: per source the variant of ``variants`` with the best merit
        on the other sources (a learned variant scored there on each other source with
        its table learned without that source and the held-out one), scored on it."""
        held: list = [None] * len(self.splits)
        chosen = {}
        for src in sorted(set(self.sources)):
            others = [i for i, s in enumerate(self.sources) if s != src]
            best = max(variants, key=lambda v: merit(aggregate(v, [
                self.score(v, i, frozenset((src, self.sources[i])) if learned(v) else frozenset())
                for i in others])))
            chosen[src] = best
            for i, s in enumerate(self.sources):
                if s == src:
                    held[i] = self.score(best, i, frozenset((src,)))
        return held, chosen


def rank_agreement(errors: list[dict], sources: list[str]) -> list[tuple[str, int, int, float, dict]]:
    """Per regime: the splits scored there, the sources with four voters' errors there or
    more, the mean Spearman correlation between two such sources' errors of the voters they
    share (how well one source's ranking of the voters carries to another: what
    ``reliab`` relies on), and the voters' errors over every source."""
    out = []
    everything = reliability(errors, range(len(errors)))
    for reg in ("in", "smt", "socket", "over"):
        per = {}
        for src in sorted(set(sources)):
            table = reliability(errors, [i for i, s in enumerate(sources) if s == src]).get(reg, {})
            if len(table) >= 4:
                per[src] = table
        rhos = []
        for a, b in itertools.combinations(per, 2):
            shared = sorted(set(per[a]) & set(per[b]))
            if len(shared) >= 4:
                rhos.append(spearmanr([per[a][n] for n in shared], [per[b][n] for n in shared])[0])
        out.append((reg, sum(reg in e for e in errors), len(per), float(np.nanmean(rhos)) if rhos else np.nan,
                    everything.get(reg, {})))
    return out


# The last suggestions, each family held out alone (its variants' prefixes).
FAMILIES = {"spread pick at SMT and socket": (f"{SHIPPED} + pick smt+socket spread",),
            "growth pick at SMT and socket": (f"{SHIPPED} + pick smt+socket growth",),
            "spread or growth pick at sockets": (f"{SHIPPED} + pick socket spread", f"{SHIPPED} + pick socket growth"),
            "spread or growth pick at SMT": (f"{SHIPPED} + pick smt spread", f"{SHIPPED} + pick smt growth"),
            "quantile pick": tuple(f"{SHIPPED} + pick {k} quantile" for k in KINDS if k != "over"),
            "coreshape": ("coreshape", f"{SHIPPED} + coreshape"),
            "trim": (f"{SHIPPED} + trim",),
            "pick past the hardware threads": (f"{SHIPPED} + pick over",),
            **{f"reliab {r}": (f"{SHIPPED} + reliab {r} ",) for r in RELIABILITY_REGIMES}}


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
    scorer = Scorer(splits, recs, variants)
    everything = range(len(splits))
    print(f"{len(splits)} splits from {args.datasets}; members of {BASE.label()} (in sample; learned variants "
          "learned on every source):")
    print_rows([aggregate(v, [scorer.score(v, i) for i in everything]) for v in variants], precise=True)
    print("\nleave one source out (the variant chosen on the other sources):")
    held, chosen = scorer.held_out(variants)
    for src, best in chosen.items():
        print(f"  {src}: {best}")
    print_rows([aggregate("held out", held)], precise=True)
    # Each of the last suggestions alone: chosen among its family and the shipped rule.
    rows = []
    for family, starts in FAMILIES.items():
        members = [v for v in variants if v.startswith(starts)]
        if members and SHIPPED in variants:
            held, chosen = scorer.held_out([SHIPPED] + members)
            rows.append(aggregate(f"held out: {family} or {SHIPPED}", held))
            print(f"  {family}: " + "; ".join(f"{s} {v}" for s, v in chosen.items()))
        if members and all(learned(v) for v in members):  # each constant held out alone
            for v in members:
                rows.append(aggregate(f"held out: {v} (learned on the other sources)", [
                    scorer.score(v, i, frozenset((scorer.sources[i],))) for i in everything]))
    if rows:
        print_rows(rows, precise=True)
    print("\nper regime, the shipped voters' mean |log error| and how alike the sources rank them:")
    for reg, k, n_src, rho, table in rank_agreement(scorer.errors[False], scorer.sources):
        shown = ", ".join(f"{nm} {e:.3f}" for nm, e in sorted(table.items(), key=lambda kv: kv[1]))
        print(f"  {reg:6s} {k:3d} splits, {n_src:2d} sources, mean Spearman between sources "
              f"{'-' if np.isnan(rho) else f'{rho:.2f}'}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
