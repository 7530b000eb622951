"""A host that races its own exit: how often it crashes bare, and with corecast.

    python benchmarks/exit_race.py [--runs 200] [--threads 2] [--all] [--lib PRELOAD]

benchmarks/stress_host.c's `thread-exit`, built with clang -fopenmp (LLVM's libomp): one
thread calls exit(5) while two others run OpenMP regions.  libomp frees its threads' state
in its destructor, so threads still in regions may touch freed memory until the process is
gone: the program's own race, which stress.py leaves out because the bare run fails too.
What corecast may not do is make it worse.  Each way of running is repeated --runs times,
interleaved (bare, report, quiet, bare, ...; --all adds CORECAST_STEER=1,
CORECAST_PROBE=1 and steering in a quiet run), on whatever load the machine has; the table
counts exit statuses (5: the program's own; -11 SIGSEGV, -6 abort).  A crash rate is
timing, not a test: compare rows of one run of this script.
"""
from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import stress  # its clean environment: no corecast settings, no preload

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--threads", default="2", help="OMP_NUM_THREADS (default 2)")
    ap.add_argument("--all", action="store_true", help="also steering and probing runs")
    ap.add_argument("--lib", help="the preload library (default: the installed corecast's; another "
                                  "build's, to compare)")
    args = ap.parse_args(argv)
    if not shutil.which("clang"):
        print("exit_race: clang is not installed (apt-get install clang libomp-dev)", file=sys.stderr)
        return 1
    if args.lib:
        preload = args.lib
    else:
        from corecast._native import PRELOAD as preload
    if not Path(preload).is_file():
        print(f"exit_race: no preload library at {preload}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="exit_race"))
    host = work / "stress_host_clang"
    r = subprocess.run(["clang", "-O2", "-fopenmp", "-pthread", str(ROOT / "benchmarks" / "stress_host.c"),
                        "-o", str(host)], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"exit_race: clang cannot build the host: {r.stderr.strip()[:200]}", file=sys.stderr)
        return 1
    base = {**stress.clean_env(), "OMP_NUM_THREADS": args.threads}
    ways = {"bare": {}, "corecast (report at exit)": {"LD_PRELOAD": preload},
            "corecast, CORECAST_QUIET=1": {"LD_PRELOAD": preload, "CORECAST_QUIET": "1"}}
    if args.all:
        ways.update({"corecast, CORECAST_STEER=1": {"LD_PRELOAD": preload, "CORECAST_STEER": "1"},
                     "corecast, CORECAST_PROBE=1": {"LD_PRELOAD": preload, "CORECAST_PROBE": "1"},
                     "corecast, CORECAST_STEER=1 CORECAST_QUIET=1": {"LD_PRELOAD": preload, "CORECAST_STEER": "1",
                                                                     "CORECAST_QUIET": "1"}})
    counts = {w: collections.Counter() for w in ways}
    for _ in range(args.runs):
        for way, extra in ways.items():
            p = subprocess.run([str(host), "thread-exit"], env={**base, **extra}, cwd=work, capture_output=True,
                               timeout=120)
            counts[way][p.returncode] += 1
    shutil.rmtree(work, ignore_errors=True)
    statuses = sorted({s for c in counts.values() for s in c}, key=lambda s: (s != 5, s))
    print(f"| run ({args.runs} each, OMP_NUM_THREADS={args.threads}) | "
          + " | ".join(f"status {s}" for s in statuses) + " | crashed |")
    print("|---|" + "---|" * (len(statuses) + 1))
    for way, c in counts.items():
        crashed = sum(n for s, n in c.items() if s != 5)
        print(f"| {way} | " + " | ".join(str(c.get(s, 0)) for s in statuses) + f" | {crashed} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
