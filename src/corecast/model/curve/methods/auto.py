"""auto: the default method, a per-count median of complementary models.

Why a median: on short curves no single model is reliably right.  USL extrapolates
contention (it predicts a peak from slight curvature, sometimes wrongly), PreSca follows
whatever shape the recent points have, ``plateau`` holds the last measured value,
``trend`` continues the slope over the last doubling and ``damped`` half of it (see
methods/trend.py).  Their errors are different, so the per-count median in log space is
rarely far off when one member is, and the preferred count it implies sits between "keeps
growing" and "peaks early".  Amdahl joins only on curves of 2-3 counts (too short for a
recent trend; ``Rules.base_for``): on the corpus it never predicts the fall of contended
curves.  USL continues from the last measured value (``Rules.anchor``, trend.anchored),
as the continuation members do, so it differs from them in shape, not in how far its
least-squares fit missed the last point: held out, that took the corpus's median error
from 8.8% to 7.6%.  Members the data can feed are added: ESTIMA with stall columns, the
size model and the log-log regression with size columns.  The members' spread becomes
part of the band.

Backtest (Barnes et al.'s "predict within the training runs"): every member is also
fitted on the counts up to half the largest one and scored on the rest, the same
doubling ``predict`` is asked for.  The reason names each member's backtest error; a
large error for every member means the measured range may be too short (a warning says
so).  ``Rules`` can also combine only the members that backtest best, or weight them by
their backtest error, but on the corpus the backtest barely ranks the members (its best
member is the best one beyond the measured range in about a quarter of the splits;
``benchmarks/selection.py``): contended curves change regime (sockets, SMT, more threads
than cores) beyond the counts a backtest sees; the last two are the machine's, which
``predict`` applies to every method when it is given (corecast.model.machine.hardware).
``benchmarks/accuracy.py --loso`` chooses among ``RULE_CHOICES`` on the other sources and
scores the choice on the held-out one; ``MAIN_RULES`` is its choice on all sources, and
``DEFAULT_RULES`` is it with ``FEW_COUNT_RULES`` for curves of few counts (below).

The backtest does say how far off a doubling of the count can be: beyond the measured
range the band widens per doubling by ``Rules.band`` times the members' median backtest
error (calibrated by the same benchmark to hold BAND_RATE of the held-out values in every
source and on the shared curves of programs), so a curve whose members disagreed with its
own upper half gets a wider band.

Where the counts ahead put threads on cores already busy that no measured count shared
(corecast.model.machine.hardware: SMT), every member is asked in core units at SMT_YIELD, one typical
figure for what such a thread adds.  ``Rules.smt_member`` adds one more voter to the
median: the members' median asked at another yield of SMT_YIELD_RANGE (``predict`` asks
``Fit.perf_with``), so a single guess of the yield does not decide every member at once.
Chosen like the rest of the rule, leave one source out (docs/accuracy.md).

Curves of FEW_COUNTS distinct counts or fewer (a 16-core machine's 1, 2, 4, 8) are
combined by a rule of their own, ``FEW_COUNT_RULES``: there a law of three parameters
(USL; Gunther, "Guerrilla Capacity Planning", 2007) keeps one degree of freedom and the
backtest fits the members on three counts, so the main rule's continuation members and
band say little.  It was chosen leave one suite out on the 16-core curves and the
corpus's few-count splits, and shipped after a test fixed before its deciding suites
were measured (GAP and KASTORS, docs/accuracy.md).

Kept as one at over 400 lines: the members, the rules that combine them and the rules'
choices are one method; its benchmarks reach all three through this module.
"""
from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

from ..entities import Fit, InputError, Measurements
from ..fitting import rms
from ...machine.hardware import SMT_YIELD_RANGE
from .registry import METHODS, STALL_COLUMNS, check_usable, register
from .laws import fit_usl_falling_pair
from . import estima, trend

# Members always tried (if they have enough points), then those the columns enable.
BASE_MEMBERS = ("usl", "amdahl", "presca", "plateau", "trend")
STALL_MEMBERS = ("estima",)
SIZE_MEMBERS = ("sizemodel", "regression")
# Laws a rule may continue from the last measured value (``Rules.anchor``, trend.anchored).
LAWS = ("usl", "amdahl")
BACKTEST_WARN = 0.2  # every member misses the upper half of the counts by more than this
BACKTEST_MIN_HEAD = 3  # counts a backtest fit needs below the cut
# The band auto states: at least this share of the values one doubling beyond the
# measured range inside it, in every source of the corpus it was not calibrated on and on
# the shared curves (``benchmarks/accuracy.py --loso`` picks ``Rules.band`` among
# BAND_CHOICES for it).
BAND_RATE = 0.8
BAND_CHOICES = (0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)
# Distinct measured counts at or below which ``Rules.few_counts`` combines a curve.
FEW_COUNTS = 4


@dataclass(frozen=True)
class Rules:
    """How the members' curves become auto's curve.

    ``combine``: ``"median"`` of every member; ``"best"``: median of the ``k`` members
    with the lowest backtest error; ``"weighted"``: weighted geometric mean, weights
    exp(-(error - smallest error) / ``tau``).  Without a backtest (too few counts) every
    rule is the median.  ``band``: beyond the measured range the band widens by this
    times the members' median backtest error per doubling of the count (0: only the
    members' spread and predict's generic band).  ``anchor``: the LAWS among the members
    continue from the last measured value instead of their own value there
    (trend.anchored); curves too short for the rule's members (``base_for``) are fitted
    as every rule fits them.  ``smt_member``: the SMT yield the step member is asked at
    (module docstring; not with ``weighted``), None for none.
    """

    combine: str = "median"
    k: int = 3
    tau: float = 0.2
    members: tuple[str, ...] = BASE_MEMBERS  # column-enabled members always join
    damping: float = trend.DAMPING  # of the ``damped`` member, when it is one
    band: float = 0.0
    anchor: bool = False
    smt_member: float | None = None
    # The rule curves of FEW_COUNTS distinct counts or fewer are combined by (None: this one).
    few_counts: Rules | None = None

    def for_curve(self, curve: Measurements) -> Rules:
        """The rule ``curve`` is combined by: ``few_counts`` on FEW_COUNTS counts or fewer,
        else this one without it."""
        if self.few_counts is None:
            return self
        return self.few_counts if len(set(curve.counts.tolist())) <= FEW_COUNTS else replace(self, few_counts=None)

    def combine_label(self) -> str:
        return {"median": "median", "best": f"best{self.k}", "weighted": f"weighted(tau={self.tau:g})"}[self.combine]

    def label(self) -> str:
        names = [f"damped({self.damping:g})" if m == "damped" else
                 f"{m}(anchored)" if self.anchor and m in LAWS else m for m in self.members]
        how = self.combine_label()
        label = how if self.members == BASE_MEMBERS and not self.anchor else f"{how} of {'+'.join(names)}"
        if self.smt_member is not None:
            label += f", step member at SMT yield {self.smt_member:g}"
        if self.few_counts is not None:
            label += f"; on {FEW_COUNTS} counts or fewer: {self.few_counts.label()}"
        return label

    def base_for(self, curve: Measurements) -> tuple[str, ...]:
        """The members combined on ``curve``: a curve too short for a recent trend (2-3
        counts, a profiled program's first team sizes) gets BASE_MEMBERS, so every rule
        predicts such curves alike."""
        return BASE_MEMBERS if _short(curve) else self.members

    def anchors(self, curve: Measurements) -> bool:
        """Whether the LAWS continue from the last measured value on ``curve``."""
        return self.anchor and not _short(curve)


def _short(curve: Measurements) -> bool:
    return len(set(curve.counts.tolist())) < trend.MIN_COUNTS


# What benchmarks/accuracy.py --loso chooses on every source of the corpus (and on every
# source's complement), among the rules no worse than Rules() on the shared curves; its
# band is the narrowest of BAND_CHOICES holding BAND_RATE of the values in every source.
MAIN_RULES = Rules(members=("usl", "presca", "plateau", "trend", "damped"), damping=0.5, band=2.0, anchor=True,
                   smt_member=SMT_YIELD_RANGE[1])
# What benchmarks/fewcounts.py chooses (by accuracy.merit) on the splits of FEW_COUNTS
# counts or fewer, leaving one suite out; presca cannot fit 4 counts, so on a 16-core
# curve it is the two anchored laws' geometric mean.  With the main rule's band and step
# member (a 2-3 count curve is then predicted as by the main rule, and LFCA's splits, whose
# threads ahead share cores, keep the SMT vote: benchmarks/fewcounts.py).
FEW_COUNT_RULES = Rules(members=("usl", "amdahl", "presca"), band=MAIN_RULES.band, anchor=True,
                        smt_member=MAIN_RULES.smt_member)
DEFAULT_RULES = replace(MAIN_RULES, few_counts=FEW_COUNT_RULES)
# The rules benchmarks/accuracy.py --loso chooses among (on the sources it does not score):
# member sets, then backtest-driven selection.  The first member-restricted one is auto as
# it was before plateau and trend joined.
_SETS = (("usl", "amdahl", "presca"), ("usl", "plateau", "trend"), ("usl", "plateau", "trend", "damped"),
         ("usl", "trend", "damped"), ("usl", "presca", "plateau", "trend", "damped"),
         ("usl", "amdahl", "presca", "damped"), BASE_MEMBERS + ("damped",))
RULE_CHOICES = (Rules(), Rules(anchor=True)) + tuple(
    Rules(members=m, damping=d, anchor=a) for m in _SETS for d in (0.25, 0.5) for a in (False, True)
    if "damped" in m or d == 0.25) + (
    Rules("best", k=2), Rules("best", k=3), Rules("weighted", tau=0.1), Rules("weighted", tau=0.3)) + tuple(
    # The shipped member set with a step member at each end of the SMT yield's range.
    Rules(members=_SETS[4], damping=0.5, anchor=True, smt_member=y) for y in SMT_YIELD_RANGE)
_rules: ContextVar[Rules] = ContextVar("auto_rules", default=DEFAULT_RULES)


@contextlib.contextmanager
def using(rules: Rules) -> Iterator[None]:
    """Combine members by ``rules`` inside the block (the LOSO benchmark's knob)."""
    token = _rules.set(rules)
    try:
        yield
    finally:
        _rules.reset(token)


def members_for(data: Measurements, base: tuple[str, ...] = BASE_MEMBERS) -> tuple[str, ...]:
    names = list(base)
    if data.stalls:
        names += STALL_MEMBERS
    if data.sizes:
        names += SIZE_MEMBERS
    return tuple(names)


# Member fits are pure functions of (member, data, nmax); the LOSO benchmark predicts the
# same split under several Rules, so the last few fits are kept.
_FIT_CACHE: OrderedDict = OrderedDict()
_FIT_CACHE_SIZE = 64


def _key(name: str, data: Measurements, nmax: float, damping: float, anchor: bool) -> tuple:
    h = hashlib.sha1(f"{data.metric} {damping if name == 'damped' else ''}".encode())
    for a in (data.counts, data.values, data.spread, data.repetitions,
              *(data.stalls[k] for k in sorted(data.stalls)), *(data.sizes[k] for k in sorted(data.sizes))):
        h.update(np.ascontiguousarray(a, dtype=float).tobytes())
    return name, anchor, h.hexdigest(), tuple(sorted(data.stalls)), tuple(sorted(data.sizes)), float(nmax)


def _fit_member(name: str, data: Measurements, nmax: float, damping: float = trend.DAMPING,
                anchor: bool = False) -> Fit:
    """Member ``name`` fitted to ``data`` (``anchor``: a law continued from the last
    measured value)."""
    anchor = anchor and name in LAWS
    key = _key(name, data, nmax, damping, anchor)
    if key in _FIT_CACHE:
        _FIT_CACHE.move_to_end(key)
        result = _FIT_CACHE[key]
    else:
        try:
            method = METHODS[name]
            check_usable(method, data)
            result = trend.damped_trend(data, damping) if name == "damped" else method.fit(data, nmax)
            if anchor:
                result = trend.anchored(result, data)
        except (InputError, ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
            result = exc
        _FIT_CACHE[key] = result
        if len(_FIT_CACHE) > _FIT_CACHE_SIZE:
            _FIT_CACHE.popitem(last=False)
    if isinstance(result, Exception):
        raise result
    return result


def _fit_members(data: Measurements, nmax: float, rules: Rules) -> tuple[list[Fit], list[str]]:
    fits, skipped = [], []
    curve = data.at_target_size()
    for name in members_for(data, rules.base_for(curve)):
        if name not in METHODS:
            continue
        try:
            fits.append(_fit_member(name, data, nmax, rules.damping, rules.anchors(curve)))
        except (InputError, ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
            skipped.append(f"{name}: {exc}")
    return fits, skipped


def backtest_cut(curve: Measurements) -> float | None:
    """The measured count nearest half the largest (ties: the smaller), when at least
    BACKTEST_MIN_HEAD counts lie at or below it and one above; else None."""
    n = curve.counts
    cut = float(min(n, key=lambda c: (abs(c - n.max() / 2), c)))
    if (n <= cut).sum() < BACKTEST_MIN_HEAD or not (n > cut).any():
        return None
    return cut


def backtest_errors(data: Measurements, names: list[str], nmax: float, damping: float = trend.DAMPING,
                    anchor: bool = False) -> tuple[float | None, dict[str, float]]:
    """Each member fitted on the counts up to ``backtest_cut`` and scored on the counts
    above it: the largest |log(predicted / measured)| there (inf when it cannot be
    fitted).  Returns the cut (None: too few counts) and the errors."""
    curve = data.at_target_size()
    cut = backtest_cut(curve)
    if cut is None:
        return None, {}
    # Points at other input sizes (size models) stay; the target size is cut.
    other_size = np.zeros(len(data), dtype=bool)
    for k, v in data.target_size().items():
        other_size |= data.sizes[k] != v
    head = data.subset(np.flatnonzero(other_size | (data.counts <= cut)))
    tail = curve.counts > cut
    errors = {}
    for name in names:
        try:
            fit = _fit_member(name, head, float(curve.counts.max()), damping, anchor)
            with np.errstate(all="ignore"):
                err = np.abs(np.log(np.asarray(fit.perf(curve.counts[tail]), float) / curve.perf[tail]))
            errors[name] = float(err.max()) if np.all(np.isfinite(err)) else np.inf
        except (InputError, ValueError, np.linalg.LinAlgError, FloatingPointError):
            errors[name] = np.inf
    return cut, errors


def _weights(names: list[str], errors: dict[str, float], rules: Rules) -> np.ndarray:
    """Weight of each member under ``rules`` (equal weights stand for the median)."""
    e = np.array([errors.get(n, np.inf) for n in names])
    if rules.combine == "median" or not np.isfinite(e).any():
        return np.ones(len(names))
    if rules.combine == "best":
        order = np.argsort(e, kind="stable")[: rules.k]
        w = np.zeros(len(names))
        w[order] = 1.0
        return w
    return np.where(np.isfinite(e), np.exp(-(e - e[np.isfinite(e)].min()) / rules.tau), 0.0)


def _combined_curve(fits: list[Fit], weights: np.ndarray, weighted_mean: bool):
    def logs(n):
        n = np.asarray(n, float)
        rows = []
        for f in fits:
            with np.errstate(all="ignore"):
                v = np.asarray(f.perf(n), float)
            rows.append(np.where(np.isfinite(v) & (v > 0), np.log(np.where(v > 0, v, 1.0)), np.nan))
        return np.vstack(rows)

    used = weights > 0

    def perf(n):
        x = logs(n)
        if not weighted_mean:
            return np.exp(np.nanmedian(x[used], axis=0))
        w = np.where(np.isfinite(x), weights[:, None], 0.0)
        return np.exp(np.nansum(np.where(np.isfinite(x), x, 0.0) * w, axis=0) / w.sum(axis=0))

    def low(n):
        return np.exp(np.nanmin(logs(n), axis=0))

    def high(n):
        return np.exp(np.nanmax(logs(n), axis=0))

    def perf_with(n, at):
        """The per-count median at ``n`` with the members' median at ``at`` voting too."""
        x = logs(n)[used]
        extra = np.nanmedian(logs(at)[used], axis=0)
        return np.exp(np.nanmedian(np.vstack([x, extra[None, :]]), axis=0))

    return perf, low, high, perf_with


def _widened(perf, low, high, top: float, per_doubling: float):
    """``low``/``high`` at least ``per_doubling`` (log scale) away from ``perf`` per
    doubling of the count beyond ``top``: a member that backtested well can still miss
    by what the members typically missed when the same doubling was backtested."""
    def width(n):
        return per_doubling * np.log2(np.maximum(np.asarray(n, float) / top, 1.0))

    return (lambda n: np.minimum(low(n), perf(n) * np.exp(-width(n))),
            lambda n: np.maximum(high(n), perf(n) * np.exp(width(n))))


# It reads the columns through its members and says itself when they went unused.
@register("auto", "per-count median of USL, PreSca, plateau, trend, damped (+ESTIMA, size models)", 2,
          reads=("stalls", "sizes"))
def fit_auto(data: Measurements, nmax: float) -> Fit:
    curve = data.at_target_size()
    rules = _rules.get().for_curve(curve)
    # Two points that fall: Amdahl cannot follow them; contention (USL) can.
    falling = fit_usl_falling_pair(curve) if len(curve) == 2 and curve.perf[1] < curve.perf[0] else None
    if falling is not None:
        fits, skipped = [falling], ["amdahl: cannot fall between two points"]
        # The columns' members are not tried here either: say why, as the warning below
        # does where they are tried, or the columns vanish silently.
        for name in members_for(data, ()):
            try:
                check_usable(METHODS[name], data)
                skipped.append(f"{name}: {name} is not tried on two points that fall (USL alone follows them)")
            except InputError as exc:
                skipped.append(f"{name}: {exc}")
    else:
        fits, skipped = _fit_members(data, nmax, rules)
    if not fits:
        raise InputError("method auto could not fit any model: " + "; ".join(skipped))
    names = [f.candidate if f.candidate == f.method else f"{f.method}:{f.candidate}" for f in fits]
    cut, errors = (None, {}) if falling is not None else backtest_errors(
        data, [f.method for f in fits], nmax, rules.damping, rules.anchors(curve))
    weights = _weights([f.method for f in fits], errors, rules)
    weighted_mean = rules.combine == "weighted" and bool(errors)
    perf, low, high, perf_with = _combined_curve(fits, weights, weighted_mean)
    per_doubling = None
    if errors and rules.band > 0:
        finite = [e for e in errors.values() if np.isfinite(e)]
        if finite:
            per_doubling = rules.band * float(np.median(finite))
            low, high = _widened(perf, low, high, float(curve.counts.max()), per_doubling)
    chosen = [nm for nm, w in zip(names, weights) if w > 0]
    n, y = curve.counts, curve.perf
    ends = np.array([float(n.max()), nmax])
    at_end = np.log(np.vstack([f.perf(ends) for f in fits]))
    closest = int(np.argmin(np.abs(at_end[:, 1] - np.log(perf(ends)[1]))))
    if len(fits) == 1:
        reason = f"only {names[0]} could be fitted"
    else:
        how = {"median": "per-count median", "best": f"per-count median of the {rules.k} best-backtested",
               "weighted": "backtest-weighted geometric mean"}[rules.combine if errors else "median"]
        reason = f"{how} of {len(chosen)} models ({', '.join(chosen)}); at {nmax:g} it is closest to {names[closest]}"
        used = np.flatnonzero((weights > 0) & np.isfinite(at_end[:, 1]))
        if how != "backtest-weighted geometric mean" and len(used) % 2 == 0:
            # An even median is the middle two's geometric mean, as far from one as from
            # the other: "closest to" would name float rounding's pick.
            a, b = used[np.argsort(at_end[used, 1], kind="stable")][len(used) // 2 - 1: len(used) // 2 + 1]
            reason = (f"{how} of {len(chosen)} models ({', '.join(chosen)}); at {nmax:g} it lies midway "
                      f"between {names[a]} and {names[b]}")
    if errors:
        # A member that cannot be fitted on the counts up to the cut (presca needs 5) has
        # no backtest error: "inf%" would read as a measured figure.
        shown = ", ".join(f"{nm} {errors[f.method]:.0%}" if np.isfinite(errors[f.method])
                          else f"{nm} not backtested (cannot be fitted up to {cut:g})" for nm, f in zip(names, fits))
        reason += f"; backtest (fitted up to {cut:g}, worst error above): {shown}"
    # predict widens every band with the distance too (band.band): this is a floor
    # on top of that, so "by 0%" would misstate a band that visibly widens.
    if per_doubling is not None and round(per_doubling, 2) > 0:
        reason += (f"; the band widens by at least {per_doubling:.0%} per doubling beyond "
                   f"{curve.counts.max():g} ({rules.band:g} x the members' median backtest error)")
    elif per_doubling is not None:
        reason += (f"; the members' median backtest error is 0%: it does not widen the band beyond "
                   f"{curve.counts.max():g}")
    warnings = []
    # Columns the user gave for a member that could not use them must not vanish silently.
    for what, names_ in ((STALL_COLUMNS, STALL_MEMBERS), ("size:* columns", SIZE_MEMBERS)):
        unused = [m for m in skipped if m.split(":", 1)[0] in names_]
        # A member that ran but fell back to the time alone used no column either.
        unused += [f"{f.method}: {f.method} ran on the time alone: {estima.TIME_ONLY}" for f in fits
                   if f.method in names_ and estima.TIME_ONLY in f.warnings]
        if unused:
            warnings.append(f"{what} unused: " + "; ".join(m.split(": ", 1)[-1] for m in unused))
    best_bt = min(errors.values()) if errors else None
    if best_bt is not None and best_bt > BACKTEST_WARN:
        warnings.append(
            f"fitted on the counts up to {cut:g}, every model misses the larger ones by {best_bt:.0%} "
            "or more: measure at larger counts before trusting far extrapolations"
        )
    checkpoints = next((f.checkpoints for f in fits if f.checkpoints), [])
    step = rules.smt_member is not None and len(fits) > 1 and not weighted_mean
    label = names[0] if len(names) == 1 else f"{rules.combine_label() if errors else 'median'}(" + ", ".join(chosen) + ")"
    return Fit(
        method="auto",
        candidate=label,
        perf=perf,
        reason=reason,
        params={f.method: f.params for f in fits},
        residual=rms((perf(n) - y) / y),
        low=low,
        high=high,
        checkpoints=checkpoints,
        extras={"members": names, "chosen": chosen, "skipped": skipped, "rules": rules.label(),
                "band_per_doubling": per_doubling,
                # JSON has no infinity: a member that could not be backtested is None.
                "backtest": {f.method: (errors[f.method] if np.isfinite(errors[f.method]) else None)
                             for f in fits if f.method in errors},
                **{k: f.extras[k] for f in fits for k in ("future_bottleneck",) if k in f.extras}},
        warnings=warnings,
        members=fits if len(fits) > 1 else [],
        perf_with=perf_with if step else None,
        step_yield=rules.smt_member if step else None,
    )
