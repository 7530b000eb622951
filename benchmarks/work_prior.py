"""The runtime's assumed machine loss at the sampled count, chosen and scored
leave-one-suite-out (issue #38).

A one-run prediction takes a region's busy time at its sampled count n0 as the work of one
thread, but a thread runs slower when more of the machine's cores are busy (all-core turbo
below one-core turbo, shared cache and memory).  ``model/runtime/evidence.py``'s
``one_thread_work`` therefore takes T(1) as that work times e(n0) = exp(-c log2 n0) and
keeps the model's T(n) for n >= 2.  This script chooses c on the measured curves: every
recording at 2, 4 and 16 threads (``--probe``) is replayed with each c of a grid, and c is
the one with the smallest median |ln(predicted / measured S(16))| over all of them.
Leave-one-suite-out: each suite is scored with c chosen on the others, and that pooled
figure is the headline; the in-sample one stands beside it, with c = 0 (no prior) for
comparison, and the script says when ``evidence.LOSS_PER_DOUBLING`` is not its choice.

(It replaced ``machine_prior.py``, which applied e(n) at every count n through a
calibration: held out that made the 2- and 4-thread predictions worse, 0.143 to 0.153,
while this form leaves them at 0.143 to 0.145 and takes the ``--probe`` runs at 16 from
0.256 to 0.158, scored on the development suites before the model changed.)

    python benchmarks/work_prior.py [DIR ...] [--suites A,B | --skip-suites A,B] [--json]

DIRs and the suites left out by default are ``benchmarks/bands.py``'s.
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

from corecast.model.runtime import evidence  # noqa: E402

GRID = [round(0.01 * i, 2) for i in range(0, 21)]
# Choices turned down on the held-out suites (see bands.REJECTED).  Session 22: c = 0.05
# (BOTS back in, corpus16 recorded again); held out it took the --probe runs' median at 16
# from 0.109 to 0.191 and left the 2- and 4-thread runs' as they were (0.178, 0.177), so
# evidence.py keeps 0.03.  A shape (c (log2 n)^p, p in 1, 1.5, 2) was tried too: leave
# one suite out it did worse from 2 and 4 threads (0.160 against 0.158).
REJECTED = [0.05]
COUNTS = (2, 4, 16)


def errors(dirs: list[Path], suites) -> dict[float, list[dict]]:
    """c -> one row per recording: suite, sampled count, |ln err| of S(16)."""
    out: dict[float, list[dict]] = {}
    was = evidence.LOSS_PER_DOUBLING
    try:
        for c in GRID:
            evidence.LOSS_PER_DOUBLING = c
            rows = []
            for d in dirs:
                for n0 in COUNTS:
                    for r in scale16.evaluate(d, [n0], suites=suites):
                        rows.append({"suite": scale16.suite_of(d / f"{r['curve']}.csv"), "n0": n0,
                                     "curve": r["curve"], "err": r["log_error"]})
            out[c] = rows
    finally:
        evidence.LOSS_PER_DOUBLING = was
    return out


def median(rows: list[dict]) -> float:
    return statistics.median(r["err"] for r in rows) if rows else float("nan")


def summary(rows: list[dict]) -> dict:
    def part(sel: list[dict]) -> dict:
        return {"points": len(sel), "median_log_error": round(median(sel), 4),
                "within_20pct": round(sum(r["err"] <= math.log(1.2) for r in sel) / len(sel), 3) if sel else None}
    return {"from_2_and_4": part([r for r in rows if r["n0"] != 16]), "probe_16": part([r for r in rows if r["n0"] == 16])}


def best(by_c: dict[float, list[dict]], keep) -> float:
    return min(GRID, key=lambda c: (round(median([r for r in by_c[c] if keep(r)]), 4), c))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", type=Path)
    ap.add_argument("--suites", default="")
    ap.add_argument("--skip-suites", default=bands.DEFAULT_SKIP)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    dirs = bands.recording_dirs(args.dirs, "work_prior.py")
    if dirs is None:
        return 2
    by_c = errors(dirs, scale16.suite_filter(args.suites, args.skip_suites))
    suites = sorted({r["suite"] for r in by_c[0.0]})
    held, per_suite = [], []
    for s in suites:
        c = best(by_c, lambda r, s=s: r["suite"] != s)
        mine = [r for r in by_c[c] if r["suite"] == s]
        held += mine
        per_suite.append({"suite": s, "c": c, **summary(mine)})
    c_all = best(by_c, lambda r: True)
    result = {"held_out": summary(held), "in_sample": summary(by_c[c_all]), "no_prior": summary(by_c[0.0]),
              "chosen_on_all": c_all, "per_suite": per_suite}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"suites: {', '.join(suites)}")
    print(f"held out (leave-one-suite-out): {result['held_out']}")
    for p in per_suite:
        print(f"  {p['suite']:<14} c {p['c']:.2f}  2,4: {p['from_2_and_4']}  16: {p['probe_16']}")
    print(f"in sample (c = {c_all:.2f}):      {result['in_sample']}")
    print(f"no prior (c = 0):            {result['no_prior']}")
    if c_all != evidence.LOSS_PER_DOUBLING and c_all in REJECTED:
        print(f"work_prior.py: {c_all} was turned down held out (REJECTED); evidence.py keeps "
              f"{evidence.LOSS_PER_DOUBLING}")
    elif c_all != evidence.LOSS_PER_DOUBLING:
        print(f"model/runtime/evidence.py's LOSS_PER_DOUBLING is {evidence.LOSS_PER_DOUBLING}, not the "
              f"{c_all} chosen here")
    return 0


if __name__ == "__main__":
    sys.exit(main())
