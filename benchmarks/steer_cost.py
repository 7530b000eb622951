"""What steering (``corecast run --steer``) costs or gains: each OpenMP command runs at the
program's own count without corecast, under ``corecast run --steer``, and optionally at
the best fixed count (``--best N``) without corecast and under plain ``corecast run``, in
rounds whose order rotates (side by side, interleaved), and the table gives each side's
median and minimum wall seconds and the steered median against the others.  The steered
runs' stdout must be the unsteered ones' at the own count, or without those the best
count's (the preload library never changes a program's output; a program that prints
its team sizes prints other ones at another count).

    python benchmarks/steer_cost.py [--runs 5] --own 2 [--best 1] [--no-own] [--quiet] 'CMD ARGS' ...

``--no-own`` leaves out the unsteered run at the own count (for programs where it takes
minutes, such as a lock convoy on a loaded machine).  The report goes to /dev/null (with
``--quiet`` there is none, and a steered run skips the exit's fits); the environment
apart from OMP_NUM_THREADS and CORECAST_* is the caller's.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time

from corecast._native import PRELOAD


def one_run(cmd: list[str], threads: int, preload: bool, steer: bool, quiet: bool) -> tuple[float, bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    env["OMP_NUM_THREADS"] = str(threads)
    if preload:
        env.update(LD_PRELOAD=str(PRELOAD), CORECAST_STEER="1" if steer else "0", CORECAST_QUIET="1" if quiet else "0")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, r.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--own", type=int, required=True, help="the program's own thread count")
    ap.add_argument("--best", type=int, help="its best fixed count, timed too")
    ap.add_argument("--no-own", action="store_true", help="no unsteered run at the own count")
    ap.add_argument("--quiet", action="store_true", help="no report: the exit's fits do not run")
    ap.add_argument("commands", nargs="+")
    args = ap.parse_args()
    sides = {} if args.no_own else {"own": (args.own, False, False)}
    sides["steered"] = (args.own, True, True)
    if args.best:
        sides.update({"best": (args.best, False, False), "best+cc": (args.best, True, False)})
    print(f"{'command':32} " + " ".join(f"{s + ' s':>9} {'min':>6}" for s in sides) + "  steered vs")
    for text in args.commands:
        cmd = shlex.split(text)
        times: dict[str, list[float]] = {s: [] for s in sides}
        outputs: dict[str, set] = {s: set() for s in sides}
        names = list(sides)
        for i in range(args.runs):
            for name in names[i % len(names):] + names[: i % len(names)]:
                t, out = one_run(cmd, *sides[name], args.quiet)
                times[name].append(t)
                outputs[name].add(out)
        med = {s: statistics.median(v) for s, v in times.items()}
        same = len(outputs["steered"] | outputs["own" if "own" in sides else "best"]) == 1
        vs = ", ".join(f"{s} {100 * (med['steered'] / med[s] - 1):+.1f}%" for s in sides if s != "steered")
        print(f"{text[-32:]:32} " + " ".join(f"{med[s]:9.3f} {min(times[s]):6.3f}" for s in sides)
              + f"  {vs}; {'same output' if same else 'OUTPUTS DIFFER'}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
