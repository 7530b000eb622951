"""Bands that hold: the runtime's one-run predictions against measured 16-core curves, scored
leave-one-suite-out (issue #38).

Every recording at N = 2 and 4 threads in the directories given (``NAME.csv`` curves and
``samples/NAME-N.jsonl``, the layout ``benchmarks/scale16.py`` and
``benchmarks/corpus16/measure.py`` use) is replayed with the current model, without the
empirical band of ``model/runtime/spread.py``, and compared with the measured speedup
S(n) = T(1)/T(n) at n = 8 and 16.  The residual per doubling,
z = ln(measured / predicted) / log2(n), is what the band is made of: the band at n is
[S e^(lo w log2 n), S e^(hi w log2 n)] around the central S, w = 1 + k x the process
sample's stall share (``spread.stall_share``), lo and hi the 10th and 90th percentiles of
z / w (locally weighted split conformal prediction, Vovk et al. 2005; Lei et al. 2018,
section 5.2), joined with the model's own band.  k is the weight of WEIGHTS whose band has
the smallest mean interval score (Gneiting and Raftery 2007) on the points it is chosen on.

Scored leave-one-suite-out: for each suite, k, lo and hi are chosen on the other suites' points
and the held-out suite's points at n = 16 are scored (is the measured S(16) inside the band,
and the band's high/low).  That is the headline; the in-sample figure (chosen on all
points) stands beside it, with the constants the model would take from all suites, which
must be ``spread.py``'s (the script says when they are not).

    python benchmarks/bands.py [DIR ...] [--suites A,B | --skip-suites A,B] [--apply] [--json]

``--apply`` chooses nothing: it scores spread.py's constants on the recordings given (how
the held-out suites are reported).

DIRs default to benchmarks/scale16_curves, benchmarks/device16 and benchmarks/corpus16/data,
without the suites in DEFAULT_SKIP (corpus16's held-out suites, and BOTS until it is
recorded again).  A program's suite is its
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
# (corpus16/data/README.md), and BOTS, recorded before explicit tasks were timed (its
# recordings read task work as barrier wait; they are to be recorded again).
DEFAULT_SKIP = "phoenix,miniapps,pyhost,bots"
COUNTS = (2, 4)
SCORED = 16
LEVELS = (0.10, 0.90)
# Stall weights k tried: the band's scale is 1 + k * the sample's stall share.
WEIGHTS = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 12.0, 20.0)


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
            share = spread.stall_share([r for r in proc.regions if r["name"] == "process"][-1])
            for n in (8, 16):
                i = p.threads.index(n)
                measured = curve[1] / scale16.time_at(curve, n)
                rows.append({"dir": d.name, "program": csv.stem, "suite": scale16.suite_of(csv), "n0": n0,
                             "n": n, "measured": measured, "predicted": p.speedup[i],
                             "low": p.low[i], "high": p.high[i], "share": share,
                             "z": math.log(measured / p.speedup[i]) / math.log2(n)})
    return rows


def quantile(values: list[float], q: float) -> float:
    """The q-quantile, linear between order statistics."""
    v = sorted(values)
    k = q * (len(v) - 1)
    lo = math.floor(k)
    return v[lo] + (v[min(lo + 1, len(v) - 1)] - v[lo]) * (k - lo)


def choose_band(rows: list[dict], k: float) -> tuple[float, float]:
    """lo, hi for the stall weight k: the quantiles of z over the band's scale 1 + k share."""
    z = [r["z"] / (1 + k * r["share"]) for r in rows]
    return round(quantile(z, LEVELS[0]), 3), round(quantile(z, LEVELS[1]), 3)


def interval_score(rows: list[dict], lo: float, hi: float, k: float) -> float:
    """Mean interval score of the bands at 16 in log space (Gneiting and Raftery, "Strictly
    proper scoring rules, prediction, and estimation", JASA 2007, section 6.2): the band's
    width plus 2/alpha times how far the measured value falls outside it; alpha = 0.2."""
    alpha = 1.0 - (LEVELS[1] - LEVELS[0])
    total, at = 0.0, [r for r in rows if r["n"] == SCORED]
    for r in at:
        low, high = (math.log(v) for v in widened(r, lo, hi, k))
        y = math.log(r["measured"])
        total += (high - low) + 2 / alpha * (max(0.0, low - y) + max(0.0, y - high))
    return total / len(at) if at else 0.0


def choose(rows: list[dict]) -> tuple[float, float, float]:
    """k, lo, hi: the stall weight of WEIGHTS whose band scores best on ``rows`` (the
    smallest mean interval score: narrow, and rarely missed), with its lo and hi."""
    best = None
    for k in WEIGHTS:
        lo, hi = choose_band(rows, k)
        s = interval_score(rows, lo, hi, k)
        if best is None or s < best[0] - 1e-12:
            best = (s, k, lo, hi)
    return best[1], best[2], best[3]


def widened(r: dict, lo: float, hi: float, k: float) -> tuple[float, float]:
    """The row's band at its n: the model's own joined with the empirical one."""
    d = (1 + k * r["share"]) * math.log2(r["n"])
    return min(r["low"], r["predicted"] * math.exp(lo * d)), max(r["high"], r["predicted"] * math.exp(hi * d))


def score(rows: list[dict], lo: float | None, hi: float | None, k: float = 0.0) -> dict:
    """Coverage and median high/low at n = 16 of the model's band joined with [lo, hi]
    scaled by 1 + k share (lo None: the model's band alone)."""
    at = [r for r in rows if r["n"] == SCORED]
    inside, ratios = [], []
    for r in at:
        low, high = (r["low"], r["high"]) if lo is None else widened(r, lo, hi, k)
        inside.append(low <= r["measured"] <= high)
        ratios.append(high / low)
    errs = [abs(math.log(r["predicted"] / r["measured"])) for r in at]
    return {"points": len(at), "coverage": round(sum(inside) / len(at), 3) if at else None,
            "median_high_over_low": round(statistics.median(ratios), 3) if at else None,
            "median_log_error": round(statistics.median(errs), 4) if at else None}


def unweighted(rows: list[dict]) -> dict:
    """The held-out score of the band without the stall weight (k = 0), for comparison."""
    pooled = []
    for suite in sorted({r["suite"] for r in rows}):
        lo, hi = choose_band([r for r in rows if r["suite"] != suite], 0.0)
        pooled += [dict(zip(("low", "high"), widened(r, lo, hi, 0.0)), **{x: r[x] for x in r if x not in ("low", "high")})
                   for r in rows if r["suite"] == suite]
    return score(pooled, None, None)


def leave_one_suite_out(rows: list[dict]) -> tuple[dict, list[dict]]:
    """Each suite scored with lo, hi chosen on the others; the pooled held-out score."""
    per_suite, pooled = [], []
    for suite in sorted({r["suite"] for r in rows}):
        rest = [r for r in rows if r["suite"] != suite]
        mine = [r for r in rows if r["suite"] == suite]
        k, lo, hi = choose(rest)
        s = score(mine, lo, hi, k)
        per_suite.append({"suite": suite, "k": k, "lo": lo, "hi": hi, **s})
        pooled += [dict(zip(("low", "high"), widened(r, lo, hi, k)), **{x: r[x] for x in r if x not in ("low", "high")})
                   for r in mine]
    return score(pooled, None, None), per_suite


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="curve directories (default: scale16 and device16)")
    ap.add_argument("--suites", default="", help="comma-separated suites: these alone")
    ap.add_argument("--skip-suites", default=DEFAULT_SKIP, help="comma-separated suites: all but these "
                    f"(default {DEFAULT_SKIP}: held out, or recorded before task timing; '' for none)")
    ap.add_argument("--apply", action="store_true",
                    help="choose nothing: score spread.py's constants on these recordings (the held-out report)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    dirs = args.dirs or DEFAULT_DIRS
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        print(f"bands.py: no such directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows = points(dirs, scale16.suite_filter(args.suites, args.skip_suites))
    if not rows:
        print("bands.py: no recording at 2 or 4 threads with a measured curve at 1 and 16", file=sys.stderr)
        return 2
    if args.apply:
        k, lo, hi = spread.STALL_WEIGHT, spread.LOW_PER_DOUBLING, spread.HIGH_PER_DOUBLING
        applied = {"spread_py": {"k": k, "lo": lo, "hi": hi}, "score": score(rows, lo, hi, k),
                   "model_band_alone": score(rows, None, None)}
        print(json.dumps(applied, indent=1) if args.json else
              f"{len(rows)} points: spread.py's band (k {k:g}, lo {lo:+.3f}, hi {hi:+.3f}): {applied['score']}; "
              f"the model's own band alone: {applied['model_band_alone']}")
        return 0
    held_out, per_suite = leave_one_suite_out(rows)
    k, lo, hi = choose(rows)
    result = {"held_out": held_out, "per_suite": per_suite,
              "in_sample": score(rows, lo, hi, k), "model_band_alone": score(rows, None, None),
              "unweighted": {"held_out": unweighted(rows), "in_sample": score(rows, *choose_band(rows, 0.0))},
              "chosen_on_all": {"k": k, "lo": lo, "hi": hi},
              "spread_py": {"k": spread.STALL_WEIGHT, "lo": spread.LOW_PER_DOUBLING, "hi": spread.HIGH_PER_DOUBLING}}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{len(rows)} points from {len({(r['dir'], r['program']) for r in rows})} curves, "
              f"suites: {', '.join(sorted({r['suite'] for r in rows}))}")
        print(f"held out (leave-one-suite-out): {held_out}")
        for s in per_suite:
            print(f"  {s['suite']:<14} k {s['k']:4.1f} lo {s['lo']:+.3f} hi {s['hi']:+.3f}  coverage {s['coverage']}  "
                  f"median high/low {s['median_high_over_low']}  points {s['points']}")
        print(f"in sample:                     {result['in_sample']}")
        print(f"the model's own band alone:    {result['model_band_alone']}")
        print(f"without the stall weight (k = 0): held out {result['unweighted']['held_out']}, "
              f"in sample {result['unweighted']['in_sample']}")
        print(f"chosen on all suites: k {k:g}, lo {lo:+.3f} hi {hi:+.3f} per doubling; spread.py has "
              f"k {spread.STALL_WEIGHT:g}, lo {spread.LOW_PER_DOUBLING:+.3f} hi {spread.HIGH_PER_DOUBLING:+.3f}")
    if (k, lo, hi) != (spread.STALL_WEIGHT, spread.LOW_PER_DOUBLING, spread.HIGH_PER_DOUBLING) and not args.dirs \
            and args.skip_suites == DEFAULT_SKIP and not args.suites:
        print("bands.py: spread.py's constants are not the ones chosen on these suites", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
