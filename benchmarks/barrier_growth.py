"""How the latency at repeated barriers grows with the team, scored leave-one-suite-out on
the development recordings (issue #38).

A barrier's wait has a part the work sets (the spread of the threads' arrival, which
splitting the work shrinks) and a latency (wake-ups, the counter's cache line), which
``contention.barrier_latency`` bounds by the window's smallest wait per episode.  At
barriers passed again and again within a call (explicit and worksharing barriers, and a
pthreads process's barriers), the 16-core recordings show that latency growing with the
team: from 2 to 16 threads the wait per episode grew 1.3-19x in NPB's bt, sp, lu, cg and
is (median about 4), and 7, 10, 24 us at 2, 4, 16 threads at Rodinia streamcluster's
pthread barriers, where about n - 1 context switches follow each barrier.  Each episode
waits for the latest of n threads' delays, whose size the work does not set, so the
model grows it as the latest of n draws (``teamcurve.repeated_growth``).  The region's
end barrier keeps a constant latency (Rodinia lud's and nw's waits there shrank).

The variants below are replayed on every development recording at 2 and 4 threads (the
``--probe`` runs at 16 predict their own count, which no variant changes), and scored by
the median |ln(predicted / measured S(16))|:

* ``before``: the latency constant, a process's pthread barrier waits spread with the
  work (the model up to d66efef);
* ``latest``: g(n)/g(n0), g(n) = sqrt(2 ln n), the model's own order statistic for the
  latest of n threads (shipped);
* ``latest-openmp``: the same for OpenMP regions only;
* ``exponential``: (H_n - 1)/(H_n0 - 1), the expected maximum of n exponential delays less
  their mean, which grows faster (4.8x from 2 to 16 against 2x).

Leave-one-suite-out, each suite is scored with the variant chosen on the others (ties go
to the earlier one in the list, so a suite the others cannot tell apart keeps
``before``); the pooled figure is the headline and the in-sample choice stands beside
it.  A variant that makes either guard worse (``benchmarks/scale16_curves`` and
``benchmarks/device16``, from 2 and 4 threads) is not chosen.  Beside them: the bands'
leave-one-suite-out figure (``benchmarks/bands.py``) with each variant.

    python benchmarks/barrier_growth.py [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bands  # noqa: E402
import scale16  # noqa: E402

from corecast.model.runtime import contention, teamcurve  # noqa: E402

COUNTS = (2, 4)
GUARDS = ("scale16_curves", "device16")


def _harmonic_excess(n: int) -> float:
    return sum(1.0 / k for k in range(2, n + 1))


VARIANTS = {
    "before": (lambda n, n0: 1.0, False),
    "latest": (lambda n, n0: teamcurve._growth(n) / teamcurve._growth(n0), True),
    "latest-openmp": (lambda n, n0: teamcurve._growth(n) / teamcurve._growth(n0), False),
    "exponential": (lambda n, n0: _harmonic_excess(n) / _harmonic_excess(n0), True),
}
SHIPPED = "latest"
# Tried on 2026-11-27 (session dev38) and turned down on the development suites, figures as
# this script prints them (all points: median |ln err| from 2 and 4; bands.py's
# leave-one-suite-out coverage, median high/low, interval score):
# - ``exponential``: in sample 0.1356 (``latest`` 0.1368), but the scale16 guard went from
#   0.0882 to 0.0925 (within 20% 0.786 -> 0.750) and the bands' interval score from 2.274 to
#   2.386;
# - every barrier's latency grown, the region's end one too (g): Rodinia's median from 0.236
#   to 0.247 (nw at 2: 0.009 -> 0.050), its lud and nw end-of-region waits shrank measured;
# - a window with one region taking its own wait per episode as the latency (where it
#   passed more than one barrier per call; with g): BOTS from 0.294 to 0.359 (fib at 2
#   0.05 -> 1.25, floorplan 0.04 -> 1.02: these recordings count taskwaits as barriers),
#   PolyBench syrk at 2 0.14 -> 0.74.
REJECTED = ["exponential"]


@contextmanager
def variant(name: str):
    growth, pthreads = VARIANTS[name]
    was = teamcurve.repeated_growth, contention.repeated_pthread_barriers
    teamcurve.repeated_growth = growth
    if not pthreads:
        contention.repeated_pthread_barriers = lambda process, n0: False
    try:
        yield
    finally:
        teamcurve.repeated_growth, contention.repeated_pthread_barriers = was


def rows_of(name: str, dirs: list[Path], suites) -> tuple[list[dict], dict]:
    """One row per recording at 2 and 4 threads (suite, folder, |ln err| of S(16)) and the
    bands' leave-one-suite-out score, with the variant ``name`` in place."""
    rows = []
    with variant(name):
        for d in dirs:
            for r in scale16.evaluate(d, list(COUNTS), suites=suites):
                rows.append({"dir": d.name, "suite": scale16.suite_of(d / f"{r['curve']}.csv"),
                             "curve": r["curve"], "n0": r["sampled_at"], "err": r["log_error"],
                             "predicted": r["predicted_s16"], "measured": r["measured_s16"]})
        points = bands.points(dirs, suites)
        held, per_suite = bands.leave_one_suite_out(points)
        at = {s["suite"]: s for s in per_suite}
        total = sum(bands.interval_score([p for p in points if p["suite"] == s], at[s]["lo"], at[s]["hi"])
                    * at[s]["points"] for s in at)
        held["interval_score"] = round(total / sum(s["points"] for s in per_suite), 4)
    return rows, held


def median(rows: list[dict]) -> float:
    return round(statistics.median(r["err"] for r in rows), 4) if rows else float("nan")


def part(rows: list[dict]) -> dict:
    return {"points": len(rows), "median_log_error": median(rows),
            "within_20pct": round(sum(r["err"] <= math.log(1.2) for r in rows) / len(rows), 3) if rows else None}


def choose(by: dict[str, list[dict]], keep, allowed: list[str]) -> str:
    return min(allowed, key=lambda v: (median([r for r in by[v] if keep(r)]), list(VARIANTS).index(v)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    suites = scale16.suite_filter("", bands.DEFAULT_SKIP)
    by, banded = {}, {}
    for name in VARIANTS:
        by[name], banded[name] = rows_of(name, bands.DEFAULT_DIRS, suites)
    guards = {v: {g: part([r for r in by[v] if r["dir"] == g]) for g in GUARDS} for v in VARIANTS}
    # a variant that makes a guard worse than the model before it is not chosen
    allowed = [v for v in VARIANTS if all(guards[v][g]["median_log_error"] <= guards["before"][g]["median_log_error"]
                                          for g in GUARDS)]
    names = sorted({r["suite"] for r in by["before"]})
    held, per_suite = [], []
    for s in names:
        v = choose(by, lambda r, s=s: r["suite"] != s, allowed)
        mine = [r for r in by[v] if r["suite"] == s]
        held += mine
        per_suite.append({"suite": s, "variant": v, **part(mine)})
    chosen = choose(by, lambda r: True, allowed)
    result = {"held_out": part(held), "in_sample": {"variant": chosen, **part(by[chosen])},
              "per_suite": per_suite, "allowed": allowed,
              "variants": {v: {"all": part(by[v]), "guards": guards[v], "bands_held_out": banded[v],
                               "per_suite": {s: median([r for r in by[v] if r["suite"] == s]) for s in names}}
                           for v in VARIANTS}}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"suites: {', '.join(names)}; recordings at {', '.join(map(str, COUNTS))} threads")
        for v, x in result["variants"].items():
            b = x["bands_held_out"]
            print(f"{v:<14} all {x['all']['median_log_error']:.4f} ({x['all']['within_20pct']:.3f} within 20%)  "
                  + "  ".join(f"{g.split('_')[0]} {x['guards'][g]['median_log_error']:.4f}" for g in GUARDS)
                  + f"  bands: coverage {b['coverage']} high/low {b['median_high_over_low']} "
                    f"interval score {b['interval_score']}")
            print("               " + "  ".join(f"{s} {m:.4f}" for s, m in x["per_suite"].items()))
        print(f"allowed by the guards: {', '.join(allowed)}")
        for p in per_suite:
            print(f"  {p['suite']:<14} chose {p['variant']:<14} {p['median_log_error']:.4f} ({p['points']} points)")
        print(f"held out (leave-one-suite-out): {result['held_out']}")
        print(f"in sample ({chosen}):          {result['in_sample']}")
    if chosen != SHIPPED and chosen not in REJECTED:
        print(f"barrier_growth.py: teamcurve.repeated_growth ships {SHIPPED}, not the {chosen} chosen here",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
