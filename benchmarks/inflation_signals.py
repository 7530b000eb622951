"""Does anything a recording holds predict the `at n0` error, and would a correction by it
improve S(16)?  (issue #38)

A one-run prediction takes the busy time recorded at the sampled count n0 (2 or 4) as the
program's one-thread work.  ``scale16.py`` splits each prediction's error into ``at_n0``,
ln(predicted / measured S(n0)) (T(1) rebuilt from busy time), and ``gain`` (the
extrapolation from n0 to 16).  Where the work per thread inflates with the team, busy time
over-states T(1) and ``at_n0`` is positive.  This script computes, for every development
recording, the signals the recording holds (process record and outermost regions: busy
time, task clock, page faults, context switches, migrations, synchronisation waits,
imbalance, serial time, region calls and wall, per-thread CPU), their correlation with
``at_n0`` (pooled Pearson and Spearman, and Spearman within each suite, which a suite's
own level cannot drive), and two kinds of correction, each scored leave-one-suite-out on
S(16) (a correction of T(1) by a factor f moves every S(n >= 2) by f, so the new signed
error of S(16) is ``at_n0 + gain - ln f``; ``one_thread_work`` applies such a factor):

* ``linear``: ln f = a + b x for one signal x, fitted by least squares on the other suites
  (``at_n0`` clipped to +-0.5, so that bots-knapsack's task runtime does not set it);
* ``overhead``: a fixed cost of o microseconds per region call at n0 that one thread does
  not pay, ln f = -ln(1 - p min(0.5, o / t)), t the outermost regions' wall per call, p
  their share of the run's wall; o from a grid, chosen on the other suites.

Development data only: scale16_curves, device16 and corpus16's development suites (rodinia,
bots, polybench-acc); the held-out suites (``bands.DEFAULT_SKIP``) are never read.

    python benchmarks/inflation_signals.py [DIR ...] [--counts 2,4] [--json]

Findings (session inflate38, 2026-11-27; 120 recordings at 2 and 4 threads, 7 suites):

* the development suites show no systematic inflation at 2 and 4 threads: ``at_n0``'s
  median is +0.016 (mean +0.077, carried by bots-knapsack's +1.7/+2.4, bots-fft,
  bots-floorplan and rodinia-streamcluster-omp, whose runs differ run to run); on the 55
  recordings with no stall seen (waits under 5% of busy time, imbalance under 10%), the
  GAP pattern's look, the median is -0.006: polybench-gemm, rodinia-lud and bots-nqueens
  are under-predicted at n0 (-0.15 to -0.28), rodinia-srad2 and npb cg.W over (+0.13 to
  +0.38);
* no signal correlates with it beyond |r| = 0.4 pooled.  Spearman pooled / within suites:
  utilisation (busy over wall x n0) +0.17 / +0.14, task clock over busy +0.02 / +0.02, page
  faults per busy second -0.14 / -0.02, context switches per second +0.03 / +0.27,
  migrations +0.07 / +0.03, synchronisation waits' share +0.23 / +0.04, imbalance +0.03 /
  +0.27, serial share +0.07 / -0.19, parallel share +0.15 / +0.15, region utilisation +0.02
  / -0.21, region calls per second +0.24 / +0.37 (the most consistent: +0.36 without bots,
  +0.45 with no stall seen; Pearson +0.04), wall per call -0.19 / -0.37, log wall -0.09 /
  -0.27, barriers per second +0.16 / +0.33, per-thread CPU spread -0.12 / -0.10, number
  of regions +0.07 / +0.35;
* no correction improves S(16) held out.  No correction: median |ln err| of S(16) 0.137,
  worst 3.452, median |at_n0| 0.082; a constant (the mean at_n0 of the other suites) 0.136,
  3.421, 0.103.  The linear corrections, leave one suite out, all leave |at_n0| worse
  (0.092 to 0.119) and S(16) at 0.133 to 0.190 (best: utilisation and per-thread CPU
  spread 0.133, serial share 0.134: 0.003 to 0.004 better in the median, within what one
  recording moves it, with |at_n0| worse, 0.092 to 0.101); the overhead form is the one
  that explains part of ``at_n0`` (|at_n0| 0.082 -> 0.071) but takes S(16) from 0.137 to
  0.144, since where a high call rate inflates busy time the model's extrapolation
  under-predicts by about as much (``gain``), so correcting T(1) alone undoes a
  cancellation; chosen on the other suites o is 0 us for 5 of 7 folds (npb 5, polybench 1);
* at the ``--probe`` 16-thread recordings (``--counts 16``; 51) the error is all ``at_n0``
  (median +0.157): no correction 0.196, a constant 0.170 held out (``work_prior.py``'s
  machine loss at the sampled count, not a new signal); the best signals, context switches
  per second 0.151 and the probes' own work-per-call growth (15 recordings with probe calls;
  Spearman -0.24, within suites -0.37: more growth, the bandwidth curve's evidence, goes
  with less over-prediction) 0.164, beat the constant in the median (by 0.019 and 0.006;
  the switches order nothing within a suite, +0.02) but with a worse worst case (3.874,
  3.838 against 3.801), and the overhead form gives 0.176.

Verdict: REJECTED, nothing switched on, the held-out suites replayed only to confirm the
model unchanged.  The inflation the held-out GAP kernels show at 2 threads has no
counterpart in the development suites, and none of the recording's counters tells it
apart; it needs a measurement at a smaller team (a ``--probe`` call at 1 thread anchors T(1):
``history.anchor_t1``) or a hardware counter the 16-core machine does not expose.

Held out, replayed once after this was committed (phoenix, miniapps, pyhost, gapbs,
kastors; the model unchanged, so before and after are the same figures): S(16) from 2
threads median |ln err| 0.358, worst 0.633 (19); from 4, 0.289, worst 0.609 (19); from 2
and 4, 0.296, within 20% 36.8%; --probe 16, 0.150, worst 0.437, within 20% 52.6% (19);
``bands.py --apply`` coverage 76.3%, median high/low 2.07, interval score 1.246.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bands  # noqa: E402
import scale16  # noqa: E402

from corecast.tools.samples import read_recording  # noqa: E402

SYNC = ("mutex", "condvar", "pthread_barrier", "rwlock", "semaphore", "critical", "atomic", "omp_lock",
        "omp_barrier")
CLIP = 0.5  # at_n0 beyond this (task runtimes, runs that differ) does not set a fit
OVERHEAD_GRID = [0, 1, 2, 5, 10, 20, 50, 100, 200]  # microseconds per region call
NAN = float("nan")
REJECTED = ["linear", "overhead"]  # turned down on the development suites themselves (docstring)


def signals(path: Path, n: int) -> dict[str, float]:
    """The candidate signals of one recording made with ``n`` threads: its busiest process
    and that process's outermost regions."""
    procs, regions = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("event") == "process":
                procs.append(rec)
            elif rec.get("event") == "region":
                regions.append(rec)
    p = max(procs, key=lambda d: d["counters"]["busy_s"])
    outer = [r for r in regions if r["pid"] == p["pid"] and not r.get("nested")]
    c, wall = p["counters"], p["wall_s"]  # p["threads"]: every thread the run made
    busy, stalls = c["busy_s"], p["stalls_s"]
    r_wall = sum(r["wall_s"] for r in outer)
    r_calls = sum(r["calls"] for r in outer)
    r_busy = sum(r["counters"]["busy_s"] for r in outer)
    cpu = [t["cpu_s"] or 0.0 for t in p.get("per_thread") or []]
    growth, weight = 0.0, 0.0  # work per call at n0 over a --probe call's at the smallest team
    for r in read_recording(str(path))[0].regions:
        if r["name"] == "process" or r["nested"]:
            continue
        per_call = {int(t): w * int(t) / c for t, c, w in r["hist"] if c > 0 and w > 0}
        small = min(per_call, default=n)
        if n in per_call and small < n:
            growth += r["wall_s"] * math.log(per_call[n] / per_call[small])
            weight += r["wall_s"]
    return {
        "utilisation": busy / (wall * n),
        "task_clock_over_busy": c.get("task_clock_s", NAN) / busy if busy else NAN,
        "log_faults_per_busy_s": math.log10(1 + c.get("page_faults", 0) / busy) if busy else NAN,
        "log_switches_per_s": math.log10(1 + c.get("context_switches", 0) / wall),
        "migrations_per_s": c.get("migrations", 0) / wall,
        "sync_share": sum(stalls.get(k, 0) for k in SYNC) / busy if busy else NAN,
        "imbalance_share": stalls.get("imbalance", 0) / (busy + stalls.get("imbalance", 0)) if busy else NAN,
        "serial_share": c.get("serial_s", 0) / wall,
        "parallel_share": r_wall / wall,
        "region_utilisation": r_busy / (r_wall * n) if r_wall else NAN,
        "log_calls_per_s": math.log10(1 + r_calls / wall),
        "log_us_per_call": math.log10(1e6 * r_wall / r_calls) if r_calls and r_wall else NAN,
        "log_wall": math.log10(wall),
        "log_barriers_per_s": math.log10(1 + c["acquisitions"].get("omp_barrier", 0) / wall),
        "thread_cpu_spread": (statistics.pstdev(cpu) / statistics.mean(cpu)
                              if len(cpu) > 1 and statistics.mean(cpu) > 0 else NAN),
        "regions": float(len(outer)),
        "log_probe_growth": growth / weight if weight else NAN,
    }


def rows(dirs: list[Path], counts: list[int], suites) -> list[dict]:
    out = []
    for d in dirs:
        for r in scale16.evaluate(d, counts, suites=suites):
            if r["at_n0"] is None:
                continue
            rec = d / "samples" / f"{r['curve']}-{r['sampled_at']}.jsonl"
            out.append({"curve": r["curve"], "dir": d.name, "n0": r["sampled_at"],
                        "suite": scale16.suite_of(d / f"{r['curve']}.csv"), "at_n0": r["at_n0"],
                        "signed": r["at_n0"] + r["gain"], **signals(rec, r["sampled_at"])})
    return out


def ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2
        i = j + 1
    return out


def pearson(x: list[float], y: list[float]) -> float:
    if len(x) < 3:
        return NAN
    mx, my = statistics.mean(x), statistics.mean(y)
    sx = math.sqrt(sum((a - mx) ** 2 for a in x))
    sy = math.sqrt(sum((b - my) ** 2 for b in y))
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / (sx * sy) if sx and sy else NAN


def correlations(data: list[dict], key: str) -> dict[str, float]:
    pairs = [(r[key], r["at_n0"], r["suite"]) for r in data if not math.isnan(r[key])]
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    wx, wy = [], []  # suite-centred ranks: a suite's own level cannot make this one
    for s in {p[2] for p in pairs}:
        sub = [p for p in pairs if p[2] == s]
        if len(sub) < 4:
            continue
        rx, ry = ranks([p[0] for p in sub]), ranks([p[1] for p in sub])
        wx += [a - statistics.mean(rx) for a in rx]
        wy += [b - statistics.mean(ry) for b in ry]
    return {"pearson": round(pearson(x, y), 3), "spearman": round(pearson(ranks(x), ranks(y)), 3),
            "within_suites": round(pearson(wx, wy), 3)}


def score(pairs: list[tuple[dict, float]]) -> dict:
    """Corrections (ln f per recording) to S(16)'s and S(n0)'s |ln error|."""
    e16 = [abs(r["signed"] - c) for r, c in pairs]
    e0 = [abs(r["at_n0"] - c) for r, c in pairs]
    return {"median_log_error": round(statistics.median(e16), 4), "worst": round(max(e16), 4),
            "within_20pct": round(sum(e <= math.log(1.2) for e in e16) / len(e16), 3),
            "median_at_n0": round(statistics.median(e0), 4)}


def linear_fit(train: list[dict], key: str) -> tuple[float, float, float]:
    """Intercept, slope, and the signal's mean (what a recording without it is given)."""
    pts = [(r[key], max(-CLIP, min(CLIP, r["at_n0"]))) for r in train if not math.isnan(r[key])]
    if len(pts) < 3:
        return statistics.mean(max(-CLIP, min(CLIP, r["at_n0"])) for r in train), 0.0, 0.0
    mx, my = statistics.mean(p[0] for p in pts), statistics.mean(p[1] for p in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else 0.0
    return my - b * mx, b, mx


def overhead(r: dict, o: float) -> float:
    if o <= 0 or math.isnan(r["log_us_per_call"]):
        return 0.0
    return -math.log(1 - r["parallel_share"] * min(0.5, o / 10 ** r["log_us_per_call"]))


def loso_linear(data: list[dict], key: str) -> dict:
    pairs = []
    for s in sorted({r["suite"] for r in data}):
        a, b, mean = linear_fit([r for r in data if r["suite"] != s], key)
        pairs += [(r, a + b * (mean if math.isnan(r[key]) else r[key])) for r in data if r["suite"] == s]
    return score(pairs)


def loso_overhead(data: list[dict]) -> tuple[dict, dict[str, float]]:
    pairs, chosen = [], {}
    for s in sorted({r["suite"] for r in data}):
        train = [r for r in data if r["suite"] != s]
        o = min(OVERHEAD_GRID, key=lambda o: (round(score([(r, overhead(r, o)) for r in train])
                                                    ["median_log_error"], 4), o))
        chosen[s] = o
        pairs += [(r, overhead(r, o)) for r in data if r["suite"] == s]
    return score(pairs), chosen


def choose(candidates: dict[str, dict], references: tuple[dict, ...]) -> str:
    """The candidate with the best held-out median, if it beats every reference (no
    correction; a constant one, the machine loss at n0 that work_prior.py already chooses)
    in the median by more than one recording moves it (0.01), without a worse worst case
    or at-n0 part; else "none"."""
    best = min(candidates, key=lambda k: candidates[k]["median_log_error"])
    h = candidates[best]
    wins = all(h["median_log_error"] < ref["median_log_error"] - 0.01 and h["worst"] <= ref["worst"]
               and h["median_at_n0"] <= ref["median_at_n0"] for ref in references)
    return best if wins else "none"


def analyse(dirs: list[Path], counts: list[int], suites) -> dict:
    data = rows(dirs, counts, suites)
    keys = [k for k in data[0] if k not in ("curve", "dir", "n0", "suite", "at_n0", "signed")
            and sum(not math.isnan(r[k]) for r in data) >= 10]  # probe growth: --probe runs only
    quiet = [r for r in data if r["sync_share"] < 0.05 and r["imbalance_share"] < 0.1]
    none = score([(r, 0.0) for r in data])
    intercept = score([(r, statistics.mean(max(-CLIP, min(CLIP, t["at_n0"])) for t in data
                                          if t["suite"] != r["suite"])) for r in data])
    linear = {k: loso_linear(data, k) for k in keys}
    held_overhead, by_suite = loso_overhead(data)
    candidates = {**{f"linear {k}": v for k, v in linear.items()}, "overhead": held_overhead}
    chosen = choose(candidates, (none, intercept))
    return {"recordings": len(data), "suites": sorted({r["suite"] for r in data}),
            "at_n0_median": round(statistics.median(r["at_n0"] for r in data), 4),
            "no_stall_seen": {"recordings": len(quiet),
                              "at_n0_median": round(statistics.median(r["at_n0"] for r in quiet), 4)
                              if quiet else None},
            "correlations": {k: correlations(data, k) for k in keys},
            "held_out": {"none": none, "constant": intercept, **candidates}, "overhead_us_by_left_out_suite": by_suite,
            "chosen": chosen}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--counts", default="2,4")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    dirs = bands.recording_dirs(args.dirs, "inflation_signals.py")
    if dirs is None:
        return 2
    try:
        counts = [int(c) for c in args.counts.split(",")]
    except ValueError:
        print(f"inflation_signals.py: --counts takes thread counts, e.g. 2,4, not {args.counts!r}",
              file=sys.stderr)
        return 2
    # development suites only: the held-out ones stay unread (module text)
    result = analyse(dirs, counts, scale16.suite_filter("", bands.DEFAULT_SKIP))
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{result['recordings']} recordings at {args.counts} threads, suites {', '.join(result['suites'])}; "
          f"at_n0 median {result['at_n0_median']:+.3f}; no stall seen: {result['no_stall_seen']}")
    print(f"{'signal':<24} {'pearson':>8} {'spearman':>9} {'in suite':>9}   S(16) held out: median worst |at_n0|")
    held = result["held_out"]
    for k, c in result["correlations"].items():
        h = held[f"linear {k}"]
        print(f"{k:<24} {c['pearson']:>+8.2f} {c['spearman']:>+9.2f} {c['within_suites']:>+9.2f}   "
              f"{h['median_log_error']:.3f} {h['worst']:.3f} {h['median_at_n0']:.3f}")
    for k in ("none", "constant", "overhead"):
        h = held[k]
        print(f"{k:<24} {'':>28}   {h['median_log_error']:.3f} {h['worst']:.3f} {h['median_at_n0']:.3f}")
    print(f"overhead per call chosen leaving each suite out (us): {result['overhead_us_by_left_out_suite']}")
    print(f"chosen: {result['chosen']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
