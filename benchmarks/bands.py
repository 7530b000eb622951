"""Bands that hold: the runtime's one-run predictions against measured 16-core curves, scored
leave-one-suite-out (issue #38).

Every recording at N = 2 and 4 threads in the directories given (``NAME.csv`` curves and
``samples/NAME-N.jsonl``, the layout ``benchmarks/scale16.py`` and
``benchmarks/corpus16/measure.py`` use) is replayed with the current model, without the
empirical band of ``model/runtime/spread.py``, and compared with the measured speedup
S(n) = T(1)/T(n) at n = 8 and 16.  The residual per doubling,
z = ln(measured / predicted) / log2(n), is what the band is made of: the band at n is
[S e^(lo log2 n), S e^(hi log2 n)] around the central S, lo and hi the 10th and 90th
percentiles of z (split conformal prediction, Vovk et al. 2005; Lei et al. 2018), joined
with the model's own band.

Scored leave-one-suite-out: for each suite, lo and hi are chosen on the other suites' points
and the held-out suite's points at n = 16 are scored (is the measured S(16) inside the band,
and the band's high/low).  That is the headline; the in-sample figure (chosen on all
points) stands beside it, with the constants the model would take from all suites, which
must be ``spread.py``'s (the script says when they are not).

    python benchmarks/bands.py [DIR ...] [--suites A,B | --skip-suites A,B] [--apply] [--json]

``--apply`` chooses nothing: it scores spread.py's constants on the recordings given, which
is how the held-out suites are reported once (``benchmarks/corpus16/data --suites
phoenix,miniapps,pyhost --skip-suites '' --apply``).  Beside coverage and median high/low
it gives the mean interval score at 16 (Gneiting and Raftery, "Strictly proper scoring
rules, prediction, and estimation", JASA 2007, section 6.2: the band's log width plus
2/alpha times how far outside it the measured value fell; alpha = 0.2), which weighs
the two against each other.

Beside it, bands whose width depends on evidence the run carries (issue #38: the single
band is as wide for a program the model predicts well as for one it misses), scored the same
way, leave one suite out and in sample (``SCHEMES``): a scheme names each point's class
(Mondrian conformal prediction, Vovk et al. 2005 section 4.5: lo and hi apart per class)
and its scale s (normalized conformal prediction, Lei et al. 2018 section 5.2: lo and hi
are percentiles of ln(measured / predicted) / s, the band at n is [S e^(lo s), S e^(hi s)]);
``single`` is spread.py's, s = log2 n.  They are scored on the process's band joined with
the scheme's, which is what the runtime would give only if every prediction were widened
after the process is composed from its regions' own bands (``predict_window`` widens the
regions first: with ``bottleneck``'s constants the composed process inherited its
imbalance-bound regions' wide band, in sample coverage 0.925 and median high/low 3.81
instead of 0.883 and 2.66).  None is applied: see ``REJECTED_SCHEMES``.  ``waits_high`` (session bands38) keeps
the single band's low end and scales its high end by the share of the target's thread time
the model extrapolates as waits (``waits_share``), its shape chosen in each fold: turned
down held out too (``WAITS_CHOSEN``).

DIRs default to benchmarks/scale16_curves, benchmarks/device16 and benchmarks/corpus16/data,
without the suites in DEFAULT_SKIP (corpus16's held-out suites).  A program's suite is its
CSV's ``# suite:`` comment (corpus16 writes one), else the part of its name before the
first '-' (``npb-cg.A`` is NPB's); names without one are their own suite, but corecast's
own examples (omp_critical, omp_slowdown, pthreads_sync) are one suite, ``examples``.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale16  # noqa: E402  (benchmarks/scale16.py: curves, the default directory)

from corecast.model.runtime import spread  # noqa: E402
from corecast.tools.replay import replay_process  # noqa: E402
from corecast.tools.samples import read_recording  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_DIRS = [scale16.DEFAULT, HERE / "device16", HERE / "corpus16" / "data"]
# Left out by default: corpus16's held-out suites, replayed only for the report
# (corpus16/data/README.md, "The split").  gapbs and kastors were added unmeasured and
# unreplayed (session fresh38): fresh held-out suites for the final report.  splash3 was
# added the same way on 2026-11-28 (session splash34), before any of it was measured, once
# gapbs and kastors had been replayed, and ompscr (OpenMP, what most predictions are about)
# the same day (session suite34), and kastors-task (KASTORS's plain-task programs: the task
# queue split's test) in session 35.  scale16.py, calibrated.py and work_prior.py skip them by
# default too.
DEFAULT_SKIP = "phoenix,miniapps,pyhost,gapbs,kastors,splash3,ompscr,kastors-task"
# Choices this script made that the held-out suites turned down, kept so that the check
# below and its test tell a reviewed choice from a stale constant.  Session 22 (corpus16
# recorded again with 7868f00, BOTS back in): lo -0.181 hi +0.045 (and lo -0.174 hi +0.054
# with work_prior's rejected c = 0.05); on the held-out suites each widened the band (median
# high/low 2.07 -> 2.47, 2.49) and held no more (coverage 0.667 all three), interval score
# 1.46 -> 1.75, 1.77, so spread.py kept lo -0.128 hi +0.054 (chosen on session 19's
# recordings).  Session dev38 (the repeated barriers' latency grows with the team,
# benchmarks/barrier_growth.py): chosen on all development suites lo -0.139 hi +0.047;
# held out (phoenix, miniapps, pyhost) coverage stayed 0.667, median high/low 2.07 -> 2.10,
# interval score 1.46 -> 1.57, so it was turned down too.  Session work38 (branch kept
# unmerged): a band whose width in log grows 0.5 per doubling up to the sampled count (T(1)
# rebuilt from busy time loses more the more threads ran) plus the doublings past it times
# the share of T(n) not pinned by serial time the sample measured, lo -0.282 hi +0.103;
# leave one suite out on the development suites coverage 0.875 -> 0.908, median high/low
# 3.44 -> 2.96, interval score 2.27 -> 2.00; held out coverage 0.667 -> 0.722, median
# high/low 2.07 -> 3.54, interval score 1.46 -> 1.65 (the held-out programs' time is mostly
# inside their regions, where that band is widest): turned down.
REJECTED = [{"lo": -0.181, "hi": 0.045}, {"lo": -0.174, "hi": 0.054}, {"lo": -0.139, "hi": 0.047}]
# Evidence-dependent bands (session bands31): {class: (lo, hi)} of each scheme as chosen on
# all development suites.  ``bottleneck`` (two classes: the model's future bottleneck at the
# target is imbalance, or anything else) was the best of those tried leave one suite out
# (coverage 0.875 -> 0.858, median high/low 3.44 -> 2.62, interval score 2.27 -> 1.82; in
# sample 0.883 -> 0.883, 2.10 -> 2.66, 1.91 -> 1.55) and was applied once to the held-out
# suites (phoenix, miniapps, pyhost, gapbs, kastors: 38 points): coverage 0.763 -> 0.658,
# median high/low 2.07 -> 2.36, interval score 1.25 -> 1.59.  Turned down: the runtime keeps
# the single band.  The narrow class ("other": all of Phoenix, the mini-apps and the Python
# hosts) lost four points the single band held: phoenix-matrix-multiply and xsbench from 2
# threads above its high end (+0.026 per doubling against +0.054), kastors-sparselu-taskdep
# from 2 and 4 below its low end (-0.082 against -0.128); the wide class held none more.
# Session 34 (BOTS's recordings replaced by ones with the task counters): chosen on all
# development suites again, imbalance -0.218/+0.065, other -0.091/+0.030; held out (all
# five suites, 38 points) coverage 0.658 against the single band's 0.763 (lo -0.123 hi
# +0.053, chosen on the same suites), median high/low 2.36 against 2.02, interval score
# 1.40 against 1.23: turned down again.
# Session 36 (BOTS recorded again with task_depend, splash3 and kastors-task held out):
# imbalance -0.172/+0.067, other -0.085/+0.032 on all development suites; held out (the
# seven suites, 62 points) coverage 0.677 against the single band's 0.774 (lo -0.107 hi
# +0.053), median high/low 2.24 against 1.90, interval score 1.42 against 1.32: turned down.
REJECTED_SCHEMES = {"bottleneck": {"imbalance": (-0.172, 0.067), "other": (-0.085, 0.032)}}
SCHEMES = {
    "single": (lambda r: "all", lambda r: math.log2(r["n"])),
    "bottleneck": (lambda r: "imbalance" if r["bottleneck"] == "imbalance" else "other",
                   lambda r: math.log2(r["n"])),
    # the predicted parallel efficiency S(n) / n plus a floor (0.2: of 0.1, 0.2, 0.5 the
    # narrowest leave one suite out, chosen on these suites, not nested)
    "efficiency": (lambda r: "all", lambda r: math.log2(r["n"]) * (r["predicted"] / r["n"] + 0.2)),
    # the model's own band's log width at n plus a floor (0.2, chosen as above)
    "own_band": (lambda r: "all", lambda r: math.log2(r["n"]) * (math.log(r["high"] / r["low"]) + 0.2)),
}
COUNTS = (2, 4)
SCORED = 16
# waits_high (session bands38, pre-registered in docs/runtime-model.md): a's choices
# (choose_waits), and (lo, hi, a) chosen on the development suites, which --apply scored on
# the held-out ones: coverage 0.774 -> 0.726, high/low 1.896 -> 1.876; turned down.
WAITS_SHAPES = (0.25, 0.5, 1.0, 2.0)
WAITS_CHOSEN = (-0.107, 0.076, 0.25)
LEVELS = (0.10, 0.90)


def waits_share(p) -> float:
    """The share of the thread time at the prediction's last count (n T(n), the target) that
    its central curve loses to anything but serial time: imbalance, fork/join and barriers,
    locks, the task queue, the run queue, each extrapolated from n0 by a law, where the serial
    time between regions is measured.  1 where the prediction has no loss breakdown."""
    losses = getattr(p, "losses", None)
    if losses is None or p.work_s <= 0 or p.speedup[-1] <= 0:
        return 1.0
    total = p.threads[-1] * p.work_s / p.speedup[-1]
    return min(1.0, max(0.0, sum(v for k, v in losses.items() if k != "serial" and v > 0) / total))


def points(dirs: list[Path], suites=lambda csv: True) -> list[dict]:
    """One row per (recording, n in 8 and 16): measured and predicted S(n), the model's own band."""
    rows = []
    for d in dirs:
        for csv, curve, n0, rec in scale16.recordings(d, list(COUNTS), needs=(1, SCORED), suites=suites):
            proc = read_recording(str(rec))[0]
            with spread.disabled():
                rep = replay_process(proc, SCORED, {}, proc.calibration)
            if rep.process is None:
                continue
            p = rep.process[1]
            for n in (8, 16):
                i = p.threads.index(n)
                measured = curve[1] / scale16.time_at(curve, n)
                rows.append({"dir": d.name, "program": csv.stem, "suite": scale16.suite_of(csv), "n0": n0,
                             "n": n, "measured": measured, "predicted": p.speedup[i],
                             "low": p.low[i], "high": p.high[i], "bottleneck": p.bottleneck,
                             "waits": waits_share(p),
                             "z": math.log(measured / p.speedup[i]) / math.log2(n)})
    return rows


def quantile(values: list[float], q: float) -> float:
    """The q-quantile, linear between order statistics."""
    v = sorted(values)
    k = q * (len(v) - 1)
    lo = math.floor(k)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (k - lo)


def choose(rows: list[dict]) -> tuple[float, float]:
    z = [r["z"] for r in rows]
    return round(quantile(z, LEVELS[0]), 3), round(quantile(z, LEVELS[1]), 3)


def score(rows: list[dict], lo: float | None, hi: float | None) -> dict:
    """Coverage and median high/low at n = 16 of the model's band joined with [lo, hi]
    (None: the model's band alone)."""
    at = [r for r in rows if r["n"] == SCORED]
    inside, ratios = [], []
    for r in at:
        low, high = r["low"], r["high"]
        if lo is not None:
            low = min(low, r["predicted"] * math.exp(lo * math.log2(SCORED)))
            high = max(high, r["predicted"] * math.exp(hi * math.log2(SCORED)))
        inside.append(low <= r["measured"] <= high)
        ratios.append(high / low)
    errs = [abs(math.log(r["predicted"] / r["measured"])) for r in at]
    return {"points": len(at), "coverage": round(sum(inside) / len(at), 3) if at else None,
            "median_high_over_low": round(statistics.median(ratios), 3) if at else None,
            "median_log_error": round(statistics.median(errs), 4) if at else None}


def interval_score(rows: list[dict], lo: float | None, hi: float | None) -> float:
    """Mean interval score of the bands at 16 in log space, the model's band joined with
    [lo, hi] (None: the band as given; lower is better)."""
    alpha = 1.0 - (LEVELS[1] - LEVELS[0])
    at = [r for r in rows if r["n"] == SCORED]
    total = 0.0
    for r in at:
        d = math.log2(r["n"])
        low = math.log(r["low"] if lo is None else min(r["low"], r["predicted"] * math.exp(lo * d)))
        high = math.log(r["high"] if hi is None else max(r["high"], r["predicted"] * math.exp(hi * d)))
        y = math.log(r["measured"])
        total += (high - low) + 2 / alpha * (max(0.0, low - y) + max(0.0, y - high))
    return round(total / len(at), 4) if at else float("nan")


def choose_table(rows: list[dict], scheme: str) -> dict[str, tuple[float, float]]:
    """{class: (lo, hi)}: the 10th and 90th percentiles of ln(measured / predicted) / s per
    class of ``scheme``, and "all" over every point (for a class the rows lack)."""
    cls, scale = SCHEMES[scheme]
    u = [(cls(r), math.log(r["measured"] / r["predicted"]) / scale(r)) for r in rows]
    table = {}
    for k in sorted({c for c, _ in u} | {"all"}):
        mine = [x for c, x in u if c == k or k == "all"]
        table[k] = (round(quantile(mine, LEVELS[0]), 3), round(quantile(mine, LEVELS[1]), 3))
    return table


def banded(rows: list[dict], table: dict[str, tuple[float, float]], scheme: str) -> list[dict]:
    """``rows`` with the model's band joined with ``scheme``'s band from ``table``."""
    cls, scale = SCHEMES[scheme]
    out = []
    for r in rows:
        lo, hi = table.get(cls(r), table.get("all"))
        s = scale(r)
        out.append({**r, "low": min(r["low"], r["predicted"] * math.exp(lo * s)),
                    "high": max(r["high"], r["predicted"] * math.exp(hi * s))})
    return out


def scheme_scores(rows: list[dict], scheme: str, table: dict | None = None) -> dict:
    """Leave one suite out and in sample for ``scheme`` (``table`` given: that table scored
    on ``rows``, choosing nothing), each with its mean interval score."""
    def scored(points: list[dict]) -> dict:
        return {**score(points, None, None), "interval_score": interval_score(points, None, None)}
    if table is not None:
        return {"applied": scored(banded(rows, table, scheme)), "table": table}
    held = []
    for suite in sorted({r["suite"] for r in rows}):
        held += banded([r for r in rows if r["suite"] == suite],
                       choose_table([r for r in rows if r["suite"] != suite], scheme), scheme)
    chosen = choose_table(rows, scheme)
    return {"held_out": scored(held), "in_sample": scored(banded(rows, chosen, scheme)), "chosen_on_all": chosen}


def waits_band(rows: list[dict], lo: float, hi: float, a: float) -> list[dict]:
    """``rows`` with the model's band joined with [S e^(lo log2 n), S e^(hi log2 n (a + w))]."""
    return [{**r, "low": min(r["low"], r["predicted"] * math.exp(lo * math.log2(r["n"]))),
             "high": max(r["high"], r["predicted"] * math.exp(hi * math.log2(r["n"]) * (a + r["waits"])))}
            for r in rows]


def choose_waits(rows: list[dict]) -> tuple[float, float, float]:
    """(lo, hi, a) of the waits band chosen on ``rows``: for each a in WAITS_SHAPES the 10th
    percentile of ln(measured / predicted) / log2 n and the 90th of it / (log2 n (a + w)),
    the a whose band has the lowest mean interval score at 16 on ``rows`` (the first on a tie)."""
    best = None
    for a in WAITS_SHAPES:
        lo = quantile([math.log(r["measured"] / r["predicted"]) / math.log2(r["n"]) for r in rows], LEVELS[0])
        hi = quantile([math.log(r["measured"] / r["predicted"]) / (math.log2(r["n"]) * (a + r["waits"]))
                       for r in rows], LEVELS[1])
        lo, hi = round(lo, 3), round(hi, 3)
        s = interval_score(waits_band(rows, lo, hi, a), None, None)
        if best is None or s < best[0]:
            best = (s, (lo, hi, a))
    return best[1]


def waits_scores(rows: list[dict], chosen: tuple[float, float, float] | None = None) -> dict:
    """The waits band leave one suite out (a, lo and hi chosen on the other suites) and in
    sample (``chosen`` given: those constants scored on ``rows``, choosing nothing)."""
    def scored(points: list[dict]) -> dict:
        return {**score(points, None, None), "interval_score": interval_score(points, None, None)}
    if chosen is not None:
        return {"applied": scored(waits_band(rows, *chosen)), "constants": list(chosen)}
    held, per_fold = [], {}
    for suite in sorted({r["suite"] for r in rows}):
        c = choose_waits([r for r in rows if r["suite"] != suite])
        per_fold[suite] = list(c)
        held += waits_band([r for r in rows if r["suite"] == suite], *c)
    c = choose_waits(rows)
    return {"held_out": scored(held), "in_sample": scored(waits_band(rows, *c)), "chosen_on_all": list(c),
            "per_fold": per_fold}


def leave_one_suite_out(rows: list[dict]) -> tuple[dict, list[dict]]:
    """Each suite scored with lo, hi chosen on the others; the pooled held-out score."""
    per_suite, pooled = [], []
    for suite in sorted({r["suite"] for r in rows}):
        rest = [r for r in rows if r["suite"] != suite]
        mine = [r for r in rows if r["suite"] == suite]
        lo, hi = choose(rest)
        s = score(mine, lo, hi)
        per_suite.append({"suite": suite, "lo": lo, "hi": hi, **s})
        pooled += [{**r, "low": min(r["low"], r["predicted"] * math.exp(lo * math.log2(r["n"]))),
                    "high": max(r["high"], r["predicted"] * math.exp(hi * math.log2(r["n"])))} for r in mine]
    return score(pooled, None, None), per_suite


def recording_dirs(given: list[Path], prog: str) -> list[Path] | None:
    """The directories given (DEFAULT_DIRS without any), or None after one line naming
    those that are missing."""
    dirs = given or DEFAULT_DIRS
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        print(f"{prog}: no such directory: {', '.join(missing)}", file=sys.stderr)
        return None
    return dirs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="curve directories (default: scale16 and device16)")
    ap.add_argument("--suites", default="", help="comma-separated suites: these alone")
    ap.add_argument("--skip-suites", default=DEFAULT_SKIP, help="comma-separated suites: all but these "
                    f"(default {DEFAULT_SKIP}: held out; '' for none)")
    ap.add_argument("--apply", action="store_true",
                    help="choose nothing: score spread.py's constants on these recordings (the held-out report)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    dirs = recording_dirs(args.dirs, "bands.py")
    if dirs is None:
        return 2
    rows = points(dirs, scale16.suite_filter(args.suites, args.skip_suites))
    if not rows:
        print("bands.py: no recording at 2 or 4 threads with a measured curve at 1 and 16", file=sys.stderr)
        return 2
    if args.apply:
        lo, hi = spread.LOW_PER_DOUBLING, spread.HIGH_PER_DOUBLING
        applied = {"spread_py": {"lo": lo, "hi": hi},
                   "score": {**score(rows, lo, hi), "interval_score": interval_score(rows, lo, hi)},
                   "model_band_alone": score(rows, None, None),
                   "turned_down": {k: scheme_scores(rows, k, t) for k, t in REJECTED_SCHEMES.items()},
                   "waits_high": waits_scores(rows, WAITS_CHOSEN)}
        if args.json:
            print(json.dumps(applied, indent=1))
            return 0
        print(f"{len(rows)} points: spread.py's band (lo {lo:+.3f}, hi {hi:+.3f}): {applied['score']}; "
              f"the model's own band alone: {applied['model_band_alone']}")
        for k, v in applied["turned_down"].items():
            print(f"turned down, {k} {v['table']}: {v['applied']}")
        w = applied["waits_high"]
        print(f"waits_high (lo, hi, a) {tuple(w['constants'])}: {w['applied']}")
        return 0
    held_out, per_suite = leave_one_suite_out(rows)
    lo, hi = choose(rows)
    result = {"held_out": held_out, "per_suite": per_suite,
              "in_sample": score(rows, lo, hi), "model_band_alone": score(rows, None, None),
              "chosen_on_all": {"lo": lo, "hi": hi},
              "spread_py": {"lo": spread.LOW_PER_DOUBLING, "hi": spread.HIGH_PER_DOUBLING},
              "schemes": {k: scheme_scores(rows, k) for k in SCHEMES},
              "waits_high": waits_scores(rows)}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{len(rows)} points from {len({(r['dir'], r['program']) for r in rows})} curves, "
              f"suites: {', '.join(sorted({r['suite'] for r in rows}))}")
        print(f"held out (leave-one-suite-out): {held_out}")
        for s in per_suite:
            print(f"  {s['suite']:<10} lo {s['lo']:+.3f} hi {s['hi']:+.3f}  coverage {s['coverage']}  "
                  f"median high/low {s['median_high_over_low']}  points {s['points']}")
        print(f"in sample:                     {result['in_sample']}")
        print(f"the model's own band alone:    {result['model_band_alone']}")
        print(f"chosen on all suites: lo {lo:+.3f} hi {hi:+.3f} per doubling; spread.py has "
              f"lo {spread.LOW_PER_DOUBLING:+.3f} hi {spread.HIGH_PER_DOUBLING:+.3f}")
        print("evidence-dependent bands (SCHEMES; interval score beside coverage and median high/low):")
        for k, v in result["schemes"].items():
            h, i = v["held_out"], v["in_sample"]
            print(f"  {k:<10} held out {h['coverage']} {h['median_high_over_low']} {h['interval_score']}  "
                  f"in sample {i['coverage']} {i['median_high_over_low']} {i['interval_score']}  "
                  + " ".join(f"{c} {a:+.3f}/{b:+.3f}" for c, (a, b) in v["chosen_on_all"].items()))
        w = result["waits_high"]
        h, i = w["held_out"], w["in_sample"]
        print(f"  {'waits_high':<10} held out {h['coverage']} {h['median_high_over_low']} {h['interval_score']}  "
              f"in sample {i['coverage']} {i['median_high_over_low']} {i['interval_score']}  "
              "(lo, hi, a) {:+.3f} {:+.3f} {}".format(*w["chosen_on_all"]))
    if (lo, hi) != (spread.LOW_PER_DOUBLING, spread.HIGH_PER_DOUBLING) and not args.dirs \
            and args.skip_suites == DEFAULT_SKIP and not args.suites:
        if {"lo": lo, "hi": hi} in REJECTED:
            print("bands.py: this choice was turned down held out (REJECTED); spread.py keeps its own", file=sys.stderr)
        else:
            print("bands.py: spread.py's constants are not the ones chosen on these suites", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
