"""The OpenMP examples built with gcc (libgomp, the GOMP wrappers) and clang (LLVM libomp,
the OMPT tool), each run under the preload library: regions, calls, team sizes, the
largest stalls and the predicted speedups, side by side.

    python benchmarks/compilers.py [--threads 2] [--target 4]

Both builds of one example should name the same regions with the same calls and teams;
times, stalls and predictions differ by the machine's noise and by what the runtimes do
differently (libomp's idle threads spin for KMP_BLOCKTIME, clang keeps the barrier of an
`omp for` that ends a region).  Programs whose output differs under the library are an
error.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from corecast._native import PRELOAD

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# example, arguments: about a second each on two cores
CASES = [("omp_critical", ["200"]), ("omp_repeat", []), ("omp_teams", []), ("omp_triad", ["20", "8"]),
         ("omp_slowdown", ["2000"])]


def build(cc: str, name: str, folder: Path) -> Path:
    out = folder / f"{name}_{cc}"
    subprocess.run([cc, "-O2", "-fopenmp", str(EXAMPLES / f"{name}.c"), "-o", str(out), "-lm"], check=True)
    return out


def measure(prog: Path, args: list[str], threads: int, target: int, folder: Path) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env["OMP_NUM_THREADS"] = str(threads)
    plain = subprocess.run([str(prog), *args], env=env, capture_output=True)
    out = folder / "run.jsonl"
    out.unlink(missing_ok=True)
    env.update(LD_PRELOAD=str(PRELOAD), CORECAST_OUTPUT=str(out), CORECAST_QUIET="1",
               CORECAST_TARGET=str(target))
    proc = subprocess.run([str(prog), *args], env=env, capture_output=True)
    if (proc.returncode, proc.stdout) != (plain.returncode, plain.stdout):
        sys.exit(f"{prog.name}: output or exit status changed under the library")
    return [json.loads(line) for line in out.read_text().splitlines()]


def stalls(record: dict) -> str:
    wall = record["wall_s"] * max(record["threads"], 1)
    top = sorted(((v, k) for k, v in record["stalls_s"].items() if v > 0.01 * wall), reverse=True)[:3]
    return ", ".join(f"{k} {100 * v / wall:.0f}%" for v, k in top) or "-"


def speedup(record: dict, n: int) -> str:
    return next((f"{p['speedup']:.2f}" for p in record.get("predicted", []) if p["threads"] == n), "-")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS (default 2)")
    ap.add_argument("--target", type=int, default=4, help="predicted up to this count (default 4)")
    args = ap.parse_args()
    if not shutil.which("clang"):
        sys.exit("clang is not installed (apt-get install clang libomp-dev)")
    folder = Path(tempfile.mkdtemp(prefix="corecast-compilers-"))
    head = ("example", "cc", "region", "calls", "thr", "time s", "stalls (share of thread time)",
            f"S@{args.threads}", f"S@{args.target}")
    rows = [head]
    for name, prog_args in CASES:
        for cc in ("gcc", "clang"):
            records = measure(build(cc, name, folder), prog_args, args.threads, args.target, folder)
            for r in records:
                if r["event"] in ("region", "process"):
                    rows.append((name, cc, r["name"], str(r["calls"]), str(r["threads"]), f"{r['wall_s']:.3f}",
                                 stalls(r), speedup(r, args.threads), speedup(r, args.target)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
