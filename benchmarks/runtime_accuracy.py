"""Runtime prediction accuracy on real programs (issue 4): sample each program at one
thread under the preload library with target 2, predict its whole-program speedup at two
threads, and compare with the measured one (median of --runs runs each way).

    python benchmarks/runtime_accuracy.py [--runs 3]

Programs: examples/omp_critical.c (imbalance, critical section), examples/omp_slowdown.c
(two threads slower than one), pigz (pthreads; -p 1 vs -p 2: with one process pigz starts
no thread, so there is nothing to sample) and ImageMagick's convert (OpenMP; +noise and
a blur on a large canvas) when installed.  The prediction read is the process
line's speedup at 2 threads.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecast._native import PRELOAD

ROOT = Path(__file__).resolve().parents[1]
IMAGEMAGICK = next((p for p in ("/usr/bin/convert-im6.q16", "/usr/bin/convert-im7.q16") if os.path.exists(p)), None)


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def predicted(cmd: list[str], env: dict[str, str], out: Path) -> float | None:
    """The process line's predicted speedup at 2; None if the run had no parallel activity."""
    env = dict(env, LD_PRELOAD=str(PRELOAD), CORECAST_TARGET="2", CORECAST_OUTPUT=str(out),
               CORECAST_QUIET="1")
    out.unlink(missing_ok=True)
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    if not out.exists():
        return None
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    process = next(d for d in lines if d["event"] == "process")
    return next(p["speedup"] for p in process["predicted"] if p["threads"] == 2)


def programs(tmp: Path) -> list[tuple[str, list[str], list[str], dict, dict]]:
    """(name, command at 1 thread, command at 2 threads, env at 1, env at 2)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    one, two = dict(base, OMP_NUM_THREADS="1"), dict(base, OMP_NUM_THREADS="2")
    out = []
    for name, src, args in (("omp_critical", "omp_critical.c", ["400"]), ("omp_slowdown", "omp_slowdown.c", ["8000"])):
        exe = tmp / name
        subprocess.run(["gcc", "-O2", "-fopenmp", str(ROOT / "examples" / src), "-o", str(exe), "-lm"], check=True)
        out.append((name, [str(exe), *args], [str(exe), *args], one, two))
    if shutil.which("pigz"):
        data = tmp / "data.txt"
        with open(data, "w") as f:
            for i in range(1_500_000):
                f.write(f"line {i} {i * 2654435761 % 1000003} corecast\n")
        out.append(("pigz", ["pigz", "-p", "1", "-c", str(data)], ["pigz", "-p", "2", "-c", str(data)], base, base))
    if IMAGEMAGICK:
        cmd = [IMAGEMAGICK, "-size", "1500x1500", "xc:gray", "-seed", "1", "+noise", "Random", "-blur", "0x2",
               str(tmp / "out.ppm")]
        out.append(("imagemagick", cmd, cmd, one, two))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print(f"{'program':14s} {'T(1) s':>8s} {'T(2) s':>8s} {'measured S(2)':>14s} {'predicted S(2)':>15s} {'error':>7s}")
        errors = []
        for name, cmd1, cmd2, env1, env2 in programs(tmp):
            t1 = statistics.median(timed(cmd1, env1) for _ in range(args.runs))
            t2 = statistics.median(timed(cmd2, env2) for _ in range(args.runs))
            preds = [predicted(cmd1, env1, tmp / "cc.jsonl") for _ in range(args.runs)]
            measured = t1 / t2
            if None in preds:
                print(f"{name:14s} {t1:8.3f} {t2:8.3f} {measured:14.2f}  (one thread runs no parallel code: nothing to sample)")
                continue
            pred = statistics.median(preds)
            err = pred / measured - 1
            errors.append(abs(err))
            print(f"{name:14s} {t1:8.3f} {t2:8.3f} {measured:14.2f} {pred:15.2f} {err:+7.0%}")
        print(f"mean absolute error {statistics.mean(errors):.0%} over {len(errors)} programs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
