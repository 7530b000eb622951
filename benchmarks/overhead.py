"""Overhead of the corecast preload library: each program runs without and with it.

    python benchmarks/overhead.py [--runs 7] [--pairs 20000000] [--regions 200000] [--pigz-mb 64]
                                  [--lib PATH]   # another build of libcorecast_preload.so

- mutex: uncontended pthread_mutex_lock/unlock pairs on one thread, ns per pair, before
  and after the program's first pthread_create (corecast activates on parallel activity);
- omp: empty `#pragma omp parallel` regions, ns per region, OMP_NUM_THREADS=1 and 2;
- whole programs, wall seconds (target) and user+sys CPU seconds (for reference):
  start/exit of a program that creates one thread (corecast's fixed cost, in ms),
  examples/omp_critical.c, examples/pthreads_sync.c (if present; 20000 iterations, about
  1 s) and pigz -p 2 on a deterministic text file (if pigz is installed; the file is kept
  in the temporary directory for later runs).

The micro benchmarks time themselves (clock_gettime, benchmarks/overhead_micro.c); whole
programs are timed with time.perf_counter around the subprocess.  Runs alternate
without/with (the order flips each round) to cancel drift; the table gives the median
and the spread (min-max) of each side.  The library runs in its default mode: the report
(with the model's predictions) goes to stderr, which is captured and dropped.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecast._native import PRELOAD

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"


def compile_c(src: Path, out: Path, *flags: str) -> str:
    subprocess.run(["gcc", "-O2", *flags, str(src), "-o", str(out), "-lm"], check=True)
    return str(out)


def text_file(path: Path, megabytes: int) -> Path:
    """Deterministic, moderately compressible text (seeded pseudo-words)."""
    size = megabytes << 20
    if path.exists() and path.stat().st_size == size:
        return path
    rng = random.Random(2024)
    vocab = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10)))
             for _ in range(8192)]
    with open(path, "w") as f:
        written = 0
        while written < size:
            chunk = "\n".join(" ".join(rng.choices(vocab, k=12)) for _ in range(20000)) + "\n"
            chunk = chunk[: size - written]
            f.write(chunk)
            written += len(chunk)
    return path


def run_once(cmd: list[str], env: dict[str, str], lib: str | None, micro: bool) -> dict:
    """One run: the micro benchmark's own figures, or wall and CPU seconds."""
    env = dict(os.environ, **env)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if micro else subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{shlex.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    if micro:
        return {k: float(v) for k, v in (line.split() for line in p.stdout.splitlines())}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu}


def measure(cmd: list[str], env: dict[str, str], runs: int, lib: str, micro: bool) -> dict:
    """{metric: {False: [values without], True: [values with]}}, runs interleaved."""
    out: dict = {}
    for i in range(runs):
        for preload in ((False, True) if i % 2 == 0 else (True, False)):
            for k, v in run_once(cmd, env, lib if preload else None, micro).items():
                out.setdefault(k, {False: [], True: []})[preload].append(v)
    return out


def row(name: str, kind: str, metric: str, without: list[float], with_: list[float]) -> tuple:
    """One table line: medians with spreads, the overhead and the verdict on its target."""
    a, b = statistics.median(without), statistics.median(with_)
    if kind == "ns":  # the target: ns added per operation
        unit, scale, fmt, target = "ns", 1, ".1f", 100.0 if metric == "omp" else 3.0
        diff, limit, ok = f"{b - a:+.1f} ns", f"<= +{target:g} ns", b - a <= target
    elif kind == "fixed":  # no target: the cost per process
        unit, scale, fmt = "ms", 1e3, ".1f"
        diff, limit, ok = f"{(b - a) * 1e3:+.1f} ms", "", None
    else:  # whole programs: relative; the target is on wall time only
        unit, scale, fmt = "s", 1, ".3f"
        rel = 100 * (b / a - 1)
        diff, limit, ok = f"{rel:+.1f}%", "<= +2%" if metric == "wall" else "", rel <= 2
        ok = ok if metric == "wall" else None

    def cell(xs: list[float]) -> str:
        xs = [x * scale for x in xs]
        return f"{statistics.median(xs):{fmt}} [{min(xs):{fmt}}-{max(xs):{fmt}}]"

    return (name, unit, cell(without), cell(with_), diff, limit,
            {True: "ok", False: "OVER", None: ""}[ok])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs each way (default 7)")
    ap.add_argument("--pairs", type=int, default=20_000_000, help="mutex lock/unlock pairs")
    ap.add_argument("--regions", type=int, default=200_000, help="empty parallel regions")
    ap.add_argument("--pigz-mb", type=int, default=64, help="pigz input size in MiB")
    ap.add_argument("--lib", default=str(PRELOAD), help="preload library (default: this install's)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="corecast-overhead-"))
    micro = compile_c(HERE / "overhead_micro.c", tmp / "overhead_micro", "-fopenmp")
    # (label, command, extra env, kind): kind "ns" = the program prints ns/op itself
    cases = [
        ("mutex pair", [micro, "mutex", str(args.pairs)], {}, "ns"),
        ("omp region, 1 thread", [micro, "omp", str(args.regions)], {"OMP_NUM_THREADS": "1"}, "ns"),
        ("omp region, 2 threads", [micro, "omp", str(args.regions)], {"OMP_NUM_THREADS": "2"}, "ns"),
        ("start+exit, 1 thread", [micro, "thread", "1"], {}, "fixed"),
        ("omp_critical", [compile_c(EXAMPLES / "omp_critical.c", tmp / "omp_critical",
                                    "-fopenmp")], {}, "wall"),
    ]
    if (EXAMPLES / "pthreads_sync.c").exists():
        exe = compile_c(EXAMPLES / "pthreads_sync.c", tmp / "pthreads_sync", "-pthread")
        cases.append(("pthreads_sync 20000", [exe, "20000"], {}, "wall"))
    else:
        print("skipped: examples/pthreads_sync.c is absent")
    if shutil.which("pigz"):
        data = text_file(Path(tempfile.gettempdir()) / f"corecast-overhead-{args.pigz_mb}MiB.txt",
                         args.pigz_mb)
        cases.append((f"pigz -p 2, {args.pigz_mb} MiB", ["pigz", "-p", "2", "-c", str(data)],
                      {}, "wall"))
    else:
        print("skipped: pigz is not installed")

    print(f"library: LD_PRELOAD={args.lib}\ncommands (each run without and with LD_PRELOAD, "
          f"report to stderr (dropped), {args.runs} runs each way, interleaved):", flush=True)
    rows = []
    for label, cmd, env, kind in cases:
        print("  " + "".join(f"{k}={v} " for k, v in env.items()) + shlex.join(cmd)
              + ("" if kind == "ns" else " >/dev/null"), flush=True)
        for metric, v in measure(cmd, env, args.runs, args.lib, kind == "ns").items():
            name = {"mutex_before": f"{label}, before 1st thread",
                    "mutex_after": f"{label}, after 1st thread",
                    "cpu": f"{label} (CPU)"}.get(metric, label)
            rows.append(row(name, kind, metric, v[False], v[True]))

    head = ("benchmark", "unit", "without: median [min-max]", "with: median [min-max]",
            "overhead", "target", "")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    print()
    for r in [head, *rows]:
        print("  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip())
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
