"""What the preload library costs per OpenMP call (issue #40): the four shapes of
``benchmarks/hotpath_micro.c`` (many short regions, many barriers in one region, a dynamic
loop, omp_triad's alternating team sizes), each run without corecast, with the quiet
library (``CORECAST_QUIET=1``) and with the library reporting (the report dropped).

    python benchmarks/hotpath.py [--threads 16] [--runs 9] [--cases regions,barriers,dynamic,teams]
        [--scale 1.0] [--base VENV] [--instructions] [--no-cpu] [--json-out FILE]

Three figures per case and side, both against the side without corecast:
- CPU ns per call: the median over interleaved rounds (the sides' order rotates each
  round) of the process's user + system CPU (``os.wait4``'s rusage of the child, every
  thread), minus the median without corecast, over the calls; with wall time beside it.
  Waiting threads sleep (``OMP_WAIT_POLICY=passive`` unless ``--wait-policy`` says
  otherwise): libgomp's spinning would otherwise fill the CPU figure with however long
  the other threads took, which on a machine with fewer CPUs than threads is noise.
- minor page faults: the median over the same rounds of the child's ``ru_minflt`` (every
  thread's, the exit's included): a count, not a time, that load barely moves.
- instructions per call (``--instructions``: valgrind's callgrind, threads serialised, so
  load does not move the figure; skipped with a line where valgrind is missing), a
  ``steer`` side (the quiet library steering) added: each side runs N and 2N calls, a
  callgrind file per thread, and the difference over N calls leaves out the start, the exit
  and all else not per call.  ``all``: the program's threads' instructions beside the run
  without corecast; ``library``: those in the preload library's own code, with its
  heaviest functions; corecast's threads apart: the sampler's windows (``cc_settle_look``,
  once a window), its instructions per window and per sample build (``cc_build_sample``).
  Where a region makes few calls a window (settle.c's RATE_CALLS) its ends take boundary
  copies (boundary.c): callgrind's slowdown makes that so for some windows of a run.
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
LIBRARY = "libcorecast_preload.so"
OWN_THREADS = ("sampler_main", "keeper_main")


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


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """Wall seconds, the child's user + system CPU seconds, its calls (from its output) and
    its minor page faults (every thread's, the exit's included)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    m = re.search(rb" (\d+) calls", out)
    if p.returncode != 0 or not m:
        sys.exit(f"{' '.join(argv)} failed (exit {p.returncode})")
    return wall, ru.ru_utime + ru.ru_stime, int(m.group(1)), ru.ru_minflt


def cpu_rounds(exe: str, cases: list[str], sides_: dict, args: argparse.Namespace) -> dict:
    out: dict = {}
    names = list(sides_)
    for case in cases:
        n = max(1, int(CALLS[case] * args.scale))
        got: dict[str, list[tuple[float, float, int]]] = {s: [] for s in names}
        calls = 0
        for i in range(args.runs):
            for s in names[i % len(names):] + names[:i % len(names)]:
                wall, cpu, calls, faults = run([exe, case, str(n)],
                                               environment(args.threads, args.wait_policy, sides_[s]))
                got[s].append((wall, cpu, faults))
        med = {s: [statistics.median(x[k] for x in v) for k in range(3)] for s, v in got.items()}
        out[case] = {"calls": calls, "sides": {
            s: {"wall_s": med[s][0], "cpu_s": med[s][1], "minor_faults": med[s][2],
                "cpu_ns_per_call": (med[s][1] - med["none"][1]) / calls * 1e9,
                "wall_ns_per_call": (med[s][0] - med["none"][0]) / calls * 1e9,
                "cpu": [x[1] for x in got[s]], "wall": [x[0] for x in got[s]],
                "faults": [x[2] for x in got[s]]} for s in names}}
    return out


class Profile:
    """One callgrind thread file's counts: each function's own instructions (``self_``,
    keyed by object and function), and per callee the calls made to it and their
    instructions, callee's included (``calls``, ``called``: keyed by the callee)."""

    def __init__(self) -> None:
        self.self_: dict[tuple[str, str], int] = {}
        self.calls: dict[tuple[str, str], int] = {}
        self.called: dict[tuple[str, str], int] = {}

    def total(self) -> int:
        return sum(self.self_.values())

    def own(self) -> dict[str, int]:
        """Instructions in the preload library's own code, per function."""
        return {fn: v for (ob, fn), v in self.self_.items() if ob.endswith(LIBRARY)}

    def fn_calls(self, fn: str) -> int:
        return sum(v for (_, f), v in self.calls.items() if f == fn)

    def fn_inclusive(self, fn: str) -> int:
        return sum(v for (_, f), v in self.called.items() if f == fn)


def read_profile(path: Path, names: dict) -> Profile:
    """A callgrind output file (``--compress-strings`` ids resolved through ``names``,
    shared by one run's thread files)."""
    prof = Profile()
    ob = fn = cob = cfn = ""
    in_call = False

    def name(kind: str, v: str) -> str:
        m = re.match(r"\((\d+)\)(?: (.*))?$", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind, m.group(1)] = m.group(2)
        return names.get((kind, m.group(1)), "?")

    for line in path.read_text().splitlines():
        if not line or line[0] == "#":
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            cost = int(parts[1]) if len(parts) > 1 else 0
            if in_call:
                key = (cob or ob, cfn)
                prof.called[key] = prof.called.get(key, 0) + cost
                in_call = False
            else:
                prof.self_[ob, fn] = prof.self_.get((ob, fn), 0) + cost
            continue
        k, _, v = line.partition("=")
        if k == "ob":
            ob = name("ob", v)
        elif k == "fn":
            fn, cob = name("fn", v), ""
        elif k == "cob":
            cob = name("ob", v)
        elif k == "cfn":
            cfn = name("fn", v)
        elif k in ("fl", "fi", "fe", "cfi", "cfl"):
            name("fl", v)
        elif k == "calls":
            key = (cob or ob, cfn)
            prof.calls[key] = prof.calls.get(key, 0) + int(v.split()[0])
            in_call = True
    return prof


def profile_run(exe: str, case: str, n: int, env: dict[str, str], base: Path) -> tuple[int, list[Profile]]:
    """One run under callgrind, a file per thread: its calls and each thread's profile."""
    for old in base.parent.glob(base.name + "*"):
        old.unlink()
    p = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={base}",
                        exe, case, str(n)], env=env, capture_output=True, text=True)
    m = re.search(r" (\d+) calls", p.stdout)
    if p.returncode != 0 or not m:
        sys.exit(f"callgrind {case} failed:\n{p.stderr[-2000:]}")
    names: dict = {}
    files = sorted(base.parent.glob(base.name + "-*"), key=lambda f: int(f.name.rsplit("-", 1)[1]))
    return int(m.group(1)), [read_profile(f, names) for f in files]


def is_own_thread(prof: Profile) -> bool:
    """corecast's own threads: the sampler and the report channel's keeper."""
    return any(fn in OWN_THREADS for _, fn in prof.self_)


def instruction_rounds(exe: str, cases: list[str], sides_: dict, args: argparse.Namespace, tmp: Path) -> dict:
    """Per case and side, instructions per call on the program's threads: all of them
    beside the run without corecast (``all``) and the library's own code (``library``,
    its heaviest functions in ``functions``), each the difference between a run of N and
    one of 2N calls over N calls, so that the start, the exit and anything else not per
    call cancel out; and the sampler thread of the 2N run: its windows (``cc_settle_look``
    is called once a window), instructions in all and in its sample builds."""
    out: dict = {}
    for case in cases:
        n = max(1, int(CALLGRIND_CALLS[case] * args.scale))
        res: dict = {}
        for s, change in sides_.items():
            env = environment(args.threads, "passive", change)
            runs = [profile_run(exe, case, k, env, tmp / f"cg.{case}.{s.replace(' ', '_')}.{k}") for k in (n, 2 * n)]
            (c1, p1), (c2, p2) = runs
            prog = [[p for p in ps if not is_own_thread(p)] for ps in (p1, p2)]
            own = [[p for p in ps if is_own_thread(p)] for ps in (p1, p2)]
            per = c2 - c1
            fns: dict[str, int] = {}
            for sign, ps in ((-1, prog[0]), (1, prog[1])):
                for p in ps:
                    for fn, v in p.own().items():
                        fns[fn] = fns.get(fn, 0) + sign * v
            sampler = [p for p in own[1] if any(fn == "sampler_main" for _, fn in p.self_)]
            smp = sampler[0] if sampler else Profile()
            windows = smp.fn_calls("cc_settle_look")
            builds = smp.fn_calls("cc_build_sample")
            res[s] = {"calls": c2, "per": per,
                      "prog_ir": [sum(p.total() for p in ps) for ps in prog],
                      "library": sum(fns.values()) / per,
                      "functions": {k: v / per for k, v in sorted(fns.items(), key=lambda kv: -kv[1])[:12]},
                      "sampler_ir": smp.total(), "windows": windows,
                      "sampler_per_window": smp.total() / windows if windows else 0.0,
                      "build_per_sample": smp.fn_inclusive("cc_build_sample") / builds if builds else 0.0}
        none = res["none"]["prog_ir"]
        for r in res.values():
            r["all"] = ((r["prog_ir"][1] - none[1]) - (r["prog_ir"][0] - none[0])) / r["per"]
        out[case] = res
    return out


def print_instructions(rec: dict, threads: int) -> None:
    print(f"\n  instructions per call (callgrind, {threads} threads serialised; N and 2N calls apart)")
    print(f"  {'case':9} {'side':13} {'calls':>7} {'all':>8} {'library':>8} {'windows':>7} {'Ir/window':>10} "
          f"{'Ir/sample':>10}  heaviest library functions (Ir/call)")
    for case, r in rec.items():
        for s, v in r.items():
            if s == "none":
                continue
            top = ", ".join(f"{fn} {x:.0f}" for fn, x in list(v["functions"].items())[:4])
            print(f"  {case:9} {s:13} {v['calls']:7d} {v['all']:+8.1f} {v['library']:8.1f} {v['windows']:7d} "
                  f"{v['sampler_per_window']:10.0f} {v['build_per_sample']:10.0f}  {top}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--cases", default="regions,barriers,dynamic,teams")
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every case's calls")
    ap.add_argument("--wait-policy", default="passive", choices=("passive", "active"),
                    help="OMP_WAIT_POLICY of the CPU rounds (callgrind runs are always passive)")
    ap.add_argument("--base", help="a venv with another corecast build: its sides run in the same rounds")
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions per call (valgrind's callgrind; skipped without it)")
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
                  f"{'wall ns/call':>12} {'minor faults':>12}")
            for case, r in record["cpu"].items():
                for s, v in r["sides"].items():
                    print(f"  {case:9} {s:13} {r['calls']:8d} {v['wall_s']:7.3f} {v['cpu_s']:7.3f} "
                          f"{v['cpu_ns_per_call']:+11.1f} {v['wall_ns_per_call']:+12.1f} {v['minor_faults']:12.0f}")
                sys.stdout.flush()
        if args.instructions:
            if not shutil.which("valgrind"):
                print("\n  instructions: skipped, valgrind is not installed")
            else:
                sides_i = {**sides_, **{k.replace("quiet", "steer"): {**v, "CORECAST_STEER": "1"}
                                        for k, v in sides_.items() if k.endswith("quiet")}}
                record["instructions"] = instruction_rounds(exe, cases, sides_i, args, tmp)
                print_instructions(record["instructions"], args.threads)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
