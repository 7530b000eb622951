"""What the preload library costs per OpenMP call (issue #40): the four shapes of
``benchmarks/hotpath_micro.c`` (many short regions, many barriers in one region, a dynamic
loop, omp_triad's alternating team sizes), each run without corecast, with the quiet
library (``CORECAST_QUIET=1``) and with the library reporting (the report dropped).

    python benchmarks/hotpath.py [--threads 16] [--runs 9] [--cases regions,barriers,dynamic,teams]
        [--scale 1.0] [--base VENV] [--callgrind] [--json-out FILE]

Two figures per case and side, both against the side without corecast:
- CPU ns per call: the median over interleaved rounds (the sides' order rotates each
  round) of the process's user + system CPU (``os.wait4``'s rusage of the child, every
  thread), minus the median without corecast, over the calls; with wall time beside it.
  Waiting threads sleep (``OMP_WAIT_POLICY=passive`` unless ``--wait-policy`` says
  otherwise): libgomp's spinning would otherwise fill the CPU figure with however long
  the other threads took, which on a machine with fewer CPUs than threads is noise.
- instructions per call (``--callgrind``, one run per side under valgrind's callgrind,
  threads serialised, so the figure does not depend on load): the whole process's, minus
  the run without corecast, over the calls; and the parts that are not per call, from
  the inclusive counts of the library's own entry points: the sampler thread
  (``sampler_main``), the exit report (``cc_exit_report``) and the first activity's
  start (``cc_activity``'s hook, ``start_measuring``).  ``wrappers`` is the rest per call.
``--base VENV`` adds the same library sides from another install (an older build: before
and after in the same rounds).  The 16-core figures come from the device
(``benchmarks/steer_suite.py --cases hotpath``); on a 2-core machine at 16 threads the
CPU figure still holds what each call adds, but not what cache lines shared by 16 cores
cost.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecast._native import PRELOAD

HERE = Path(__file__).resolve().parent
# Calls per case at scale 1: a few tenths of a second each without corecast at 16 threads.
CALLS = {"regions": 20000, "barriers": 20000, "dynamic": 400000, "teams": 8000}
CALLGRIND_CALLS = {"regions": 1000, "barriers": 1000, "dynamic": 20000, "teams": 400}
PARTS = {"sampler": "sampler_main", "exit": "cc_exit_report", "start": "start_measuring"}


def preload_of(venv: Path) -> str:
    """The preload library of the corecast installed in ``venv``."""
    py = venv / "bin" / "python"
    return subprocess.run([str(py), "-c", "from corecast._native import PRELOAD; print(PRELOAD)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def build(out_dir: Path) -> str:
    exe = out_dir / "hotpath_micro"
    subprocess.run(["gcc", "-O2", "-fopenmp", str(HERE / "hotpath_micro.c"), "-o", str(exe)], check=True)
    return str(exe)


def sides(base: str | None) -> dict[str, dict[str, str]]:
    """name -> environment changes (LD_PRELOAD and settings)."""
    libs = {"": str(PRELOAD)}
    if base:
        libs["base "] = preload_of(Path(base))
    out: dict[str, dict[str, str]] = {"none": {}}
    for tag, lib in libs.items():
        out[f"{tag}quiet"] = {"LD_PRELOAD": lib, "CORECAST_QUIET": "1"}
        out[f"{tag}report"] = {"LD_PRELOAD": lib}
    return out


def environment(threads: int, policy: str, change: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env.update(OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY=policy, **change)
    return env


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, the child's user + system CPU seconds, and its calls (from its output)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(rb" (\d+) calls", out)
    if p.returncode != 0 or not m:
        sys.exit(f"{' '.join(argv)} failed (exit {p.returncode})")
    return wall, ru.ru_utime + ru.ru_stime, int(m.group(1))


def cpu_rounds(exe: str, cases: list[str], sides_: dict, args: argparse.Namespace) -> dict:
    out: dict = {}
    names = list(sides_)
    for case in cases:
        n = max(1, int(CALLS[case] * args.scale))
        got: dict[str, list[tuple[float, float]]] = {s: [] for s in names}
        calls = 0
        for i in range(args.runs):
            for s in names[i % len(names):] + names[:i % len(names)]:
                wall, cpu, calls = run([exe, case, str(n)], environment(args.threads, args.wait_policy, sides_[s]))
                got[s].append((wall, cpu))
        med = {s: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for s, v in got.items()}
        out[case] = {"calls": calls, "sides": {
            s: {"wall_s": med[s][0], "cpu_s": med[s][1],
                "cpu_ns_per_call": (med[s][1] - med["none"][1]) / calls * 1e9,
                "wall_ns_per_call": (med[s][0] - med["none"][0]) / calls * 1e9,
                "cpu": [c for _, c in got[s]], "wall": [w for w, _ in got[s]]} for s in names}}
    return out


def inclusive(annotated: str, function: str) -> int:
    """A function's inclusive instruction count in callgrind_annotate's output (0: absent)."""
    total = 0
    for line in annotated.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\*?\s*\S*:" + re.escape(function) + r"(?:\.part\.\d+)? ", line)
        if m:
            total = max(total, int(m.group(1).replace(",", "")))
    return total


def callgrind_rounds(exe: str, cases: list[str], sides_: dict, args: argparse.Namespace, tmp: Path) -> dict:
    if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
        sys.exit("--callgrind needs valgrind (callgrind and callgrind_annotate)")
    out: dict = {}
    for case in cases:
        n = max(1, int(CALLGRIND_CALLS[case] * args.scale))
        res: dict = {}
        for s, change in sides_.items():
            f = tmp / f"cg.{case}.{s.replace(' ', '_')}"
            env = environment(args.threads, "passive", change)
            p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={f}", exe, case, str(n)],
                               env=env, capture_output=True, text=True)
            m = re.search(r" (\d+) calls", p.stdout)
            if p.returncode != 0 or not m:
                sys.exit(f"callgrind {case} {s} failed:\n{p.stderr[-2000:]}")
            ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(f)],
                                 capture_output=True, text=True, check=True).stdout
            total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", ann).group(1).replace(",", ""))
            res[s] = {"calls": int(m.group(1)), "ir": total, **{k: inclusive(ann, fn) for k, fn in PARTS.items()}}
        none = res["none"]["ir"]
        for s, r in res.items():
            r["ir_per_call"] = (r["ir"] - none) / r["calls"]
            r["wrappers_per_call"] = (r["ir"] - none - sum(r[k] for k in PARTS)) / r["calls"]
        out[case] = res
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cases", default="regions,barriers,dynamic,teams")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every case's calls")
    ap.add_argument("--wait-policy", default="passive", choices=("passive", "active"),
                    help="OMP_WAIT_POLICY of the CPU rounds (callgrind runs are always passive)")
    ap.add_argument("--base", help="a venv with another corecast build: its sides run in the same rounds")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    ap.add_argument("--no-cpu", action="store_true", help="instructions only")
    ap.add_argument("--bin", help="where to build hotpath_micro (default: a temporary directory)")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CALLS]
    if unknown or args.runs < 1 or args.threads < 1 or args.scale <= 0:
        print(f"hotpath.py: bad arguments (cases: {', '.join(CALLS)}; runs, threads, scale > 0)", file=sys.stderr)
        return 2
    record: dict = {"threads": args.threads, "runs": args.runs, "cpus": os.cpu_count(),
                    "wait_policy": args.wait_policy, "preload": str(PRELOAD), "base": args.base}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(args.bin or tmpd)
        tmp.mkdir(parents=True, exist_ok=True)
        exe = build(tmp)
        sides_ = sides(args.base)
        print(f"{os.cpu_count()} CPUs, {args.threads} threads, OMP_WAIT_POLICY={args.wait_policy}, "
              f"{args.runs} interleaved rounds; library {PRELOAD}" + (f"; base {args.base}" if args.base else ""))
        if not args.no_cpu:
            record["cpu"] = cpu_rounds(exe, cases, sides_, args)
            print(f"\n  {'case':9} {'side':13} {'calls':>8} {'wall s':>7} {'cpu s':>7} {'cpu ns/call':>11} "
                  f"{'wall ns/call':>12}")
            for case, r in record["cpu"].items():
                for s, v in r["sides"].items():
                    print(f"  {case:9} {s:13} {r['calls']:8d} {v['wall_s']:7.3f} {v['cpu_s']:7.3f} "
                          f"{v['cpu_ns_per_call']:+11.1f} {v['wall_ns_per_call']:+12.1f}")
                sys.stdout.flush()
        if args.callgrind:
            record["callgrind"] = callgrind_rounds(exe, cases, sides_, args, tmp)
            print(f"\n  instructions (callgrind, {args.threads} threads serialised)")
            print(f"  {'case':9} {'side':13} {'calls':>7} {'Ir/call':>9} {'wrappers':>9} "
                  f"{'sampler':>10} {'exit':>10} {'start':>10}")
            for case, r in record["callgrind"].items():
                for s, v in r.items():
                    if s == "none":
                        continue
                    print(f"  {case:9} {s:13} {v['calls']:7d} {v['ir_per_call']:+9.1f} {v['wrappers_per_call']:+9.1f} "
                          f"{v['sampler']:10d} {v['exit']:10d} {v['start']:10d}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
