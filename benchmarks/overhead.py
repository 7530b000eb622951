"""Overhead of the corecast preload library: each program runs without and with it.

    python benchmarks/overhead.py [--runs 7] [--pairs 20000000] [--regions 200000] [--pigz-mb 64]
                                  [--lib PATH]   # another build of libcorecast_preload.so
    python benchmarks/overhead.py --startup [--runs 7]   # start-up costs only

- mutex: uncontended pthread_mutex_lock/unlock pairs on one thread, ns per pair, before
  and after the program's first pthread_create (corecast activates on parallel activity);
- omp: empty `#pragma omp parallel` regions, ns per region, OMP_NUM_THREADS=1 and 2, and
  empty critical sections in a team of one (uncontended), ns per section; built with gcc
  (libgomp: the GOMP wrappers) and, when clang can build OpenMP programs, with clang
  (LLVM libomp: the OMPT callbacks);
- whole programs, wall seconds (target) and user+sys CPU seconds (for reference):
  start/exit of a program that creates one thread (corecast's fixed cost, in ms),
  examples/omp_critical.c, examples/pthreads_sync.c (if present; 20000 iterations, about
  1 s) and pigz -p 2 on a deterministic text file (if pigz is installed; the file is kept
  in the temporary directory for later runs).

- start-up (``--startup``, also printed first by a full run): wall ms of bare
  ``python3 -c pass`` and, side by side, ``corecast --version``, ``corecast lib``,
  ``corecast run -- true`` (target: at most 60 ms over bare Python), ``true`` without and
  with LD_PRELOAD (the preload library's fixed cost per process), an empty OpenMP region at
  1 and 2 threads without and with the quiet library (its fixed cost per OpenMP process:
  the start at the first region, the sampler's thread, the exit), and the model's start:
  the CPU time of a process importing the runtime bridge (the embedded interpreter's first
  import, minus bare Python), and of two OpenMP examples run with the model (JSON output
  file) minus the same run with CORECAST_QUIET=1 (the model is then never started):
  examples/omp_triad.c, 40 calls on 8 MiB arrays (team sizes vary, so the model fits the
  region's history with numpy and scipy), and examples/omp_critical.c, 100 iterations (one
  team size: the standard-library model only).

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


def compile_c(src: Path, out: Path, *flags: str, cc: str = "gcc") -> str:
    subprocess.run([cc, "-O2", *flags, str(src), "-o", str(out), "-lm"], check=True)
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
        unit, scale, fmt, target = "ns", 1, ".1f", {"omp": 100.0, "critical": 20.0}.get(metric, 3.0)
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


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall and user+sys CPU seconds of one run, and its exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


def startup(runs: int, lib: str, tmp: Path) -> None:
    """Start-up costs, all commands interleaved round by round; medians of ``runs``."""
    py = sys.executable
    corecast = shutil.which("corecast", path=str(Path(py).parent)) or shutil.which("corecast")
    if corecast is None:
        sys.exit("the corecast command is not installed next to this Python")
    base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("CORECAST_")}
    triad = compile_c(EXAMPLES / "omp_triad.c", tmp / "omp_triad", "-fopenmp")
    critical = compile_c(EXAMPLES / "omp_critical.c", tmp / "omp_critical", "-fopenmp")
    out = str(tmp / "out.jsonl")
    # One empty parallel region: the quiet library's fixed cost per OpenMP process (its start
    # at the first region, the sampler's thread, the exit), where tiny and short programs pay it.
    (tmp / "omp_tiny.c").write_text("#include <omp.h>\nvolatile int sink;\nint main(void) {\n"
                                    "#pragma omp parallel\n    sink = omp_get_thread_num();\n    return 0;\n}\n")
    tiny = compile_c(tmp / "omp_tiny.c", tmp / "omp_tiny", "-fopenmp")
    # (label, command, environment changes, what the row reports)
    cases = [
        ("python3 -c pass", [py, "-c", "pass"], {}, "wall"),
        ("corecast --version", [corecast, "--version"], {}, "wall"),
        ("corecast lib", [corecast, "lib"], {}, "wall"),
        ("corecast run -- true", [corecast, "run", "--", "true"], {}, "wall"),
        ("true", ["true"], {}, "wall"),
        ("LD_PRELOAD=lib true", ["true"], {"LD_PRELOAD": lib}, "wall"),
        ("omp_tiny, 1 thread", [tiny], {"OMP_NUM_THREADS": "1"}, "wall"),
        ("omp_tiny, 1 thread, CORECAST_QUIET=1", [tiny], {"OMP_NUM_THREADS": "1", "LD_PRELOAD": lib,
                                                          "CORECAST_QUIET": "1"}, "wall"),
        ("omp_tiny, 2 threads", [tiny], {"OMP_NUM_THREADS": "2"}, "wall"),
        ("omp_tiny, 2 threads, CORECAST_QUIET=1", [tiny], {"OMP_NUM_THREADS": "2", "LD_PRELOAD": lib,
                                                           "CORECAST_QUIET": "1"}, "wall"),
        ("python3 -c 'import corecast.runtime.bridge'",
         [py, "-c", "import corecast.runtime.bridge"], {}, "cpu"),
        ("omp_triad 40 8, CORECAST_QUIET=1 (no model)", [triad, "40", "8"],
         {"LD_PRELOAD": lib, "CORECAST_QUIET": "1"}, "cpu"),
        ("omp_triad 40 8, model on (CORECAST_OUTPUT)", [triad, "40", "8"],
         {"LD_PRELOAD": lib, "CORECAST_QUIET": "1", "CORECAST_OUTPUT": out}, "cpu"),
        ("omp_critical 100, CORECAST_QUIET=1 (no model)", [critical, "100"],
         {"LD_PRELOAD": lib, "CORECAST_QUIET": "1"}, "cpu"),
        ("omp_critical 100, model on (CORECAST_OUTPUT)", [critical, "100"],
         {"LD_PRELOAD": lib, "CORECAST_QUIET": "1", "CORECAST_OUTPUT": out}, "cpu"),
    ]
    print(f"start-up, {runs} rounds, commands interleaved (output dropped):")
    for label, cmd, env, _ in cases:
        print("  " + "".join(f"{k}={v} " for k, v in env.items()) + shlex.join(cmd), flush=True)
    got: dict[str, list[tuple[float, float, int]]] = {c[0]: [] for c in cases}
    for i in range(runs):
        for label, cmd, env, _ in cases[:: 1 if i % 2 == 0 else -1]:
            got[label].append(timed(cmd, dict(base, **env)))
    med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v),
               max(rc for _, _, rc in v)) for k, v in got.items()}
    bare_wall, bare_cpu = med["python3 -c pass"][0], med["python3 -c pass"][1]
    print()
    print(f"  {'command':46s} {'wall ms: median [min-max]':>26s} {'CPU ms':>7s}  vs reference")
    for label, _, _, kind in cases:
        wall, cpu, rc = med[label]
        walls = [w for w, _, _ in got[label]]
        cell = f"{wall * 1e3:.1f} [{min(walls) * 1e3:.1f}-{max(walls) * 1e3:.1f}]"
        note = ""
        if rc != 0:
            note = f"FAILED (exit {rc})"
        elif label.startswith("corecast ") and label != "corecast --version":
            added = (wall - bare_wall) * 1e3
            note = f"{added:+.1f} ms wall over python3 -c pass (target <= +60): " + (
                "ok" if added <= 60 else "OVER")
        elif label == "corecast --version":
            note = f"{(wall - bare_wall) * 1e3:+.1f} ms wall over python3 -c pass"
        elif label == "LD_PRELOAD=lib true":
            note = f"{(wall - med['true'][0]) * 1e3:+.1f} ms wall over true (fixed cost per process)"
        elif label.startswith("omp_tiny") and label.endswith("QUIET=1"):
            plain = med[label.removesuffix(", CORECAST_QUIET=1")]
            note = (f"{(wall - plain[0]) * 1e3:+.1f} ms wall, {(cpu - plain[1]) * 1e3:+.1f} ms CPU "
                    "(fixed cost per OpenMP process)")
        elif kind == "cpu" and label.startswith("python3"):
            note = f"{(cpu - bare_cpu) * 1e3:+.1f} ms CPU over python3 -c pass (embedded model import)"
        elif "model on" in label:
            quiet = label.replace("model on (CORECAST_OUTPUT)", "CORECAST_QUIET=1 (no model)")
            note = f"{(cpu - med[quiet][1]) * 1e3:+.1f} ms CPU over no model (model start + predictions)"
        print(f"  {label:46s} {cell:>26s} {cpu * 1e3:7.1f}  {note}".rstrip())
    print(flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="runs each way (default 7)")
    ap.add_argument("--pairs", type=int, default=20_000_000, help="mutex lock/unlock pairs")
    ap.add_argument("--regions", type=int, default=200_000, help="empty parallel regions")
    ap.add_argument("--pigz-mb", type=int, default=64, help="pigz input size in MiB")
    ap.add_argument("--lib", default=str(PRELOAD), help="preload library (default: this install's)")
    ap.add_argument("--startup", action="store_true", help="only the start-up costs")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="corecast-overhead-"))
    startup(args.runs, args.lib, tmp)
    if args.startup:
        shutil.rmtree(tmp)
        return
    micro = compile_c(HERE / "overhead_micro.c", tmp / "overhead_micro", "-fopenmp")
    # (label, command, extra env, kind): kind "ns" = the program prints ns/op itself
    cases = [
        ("mutex pair", [micro, "mutex", str(args.pairs)], {}, "ns"),
        ("omp region, 1 thread", [micro, "omp", str(args.regions)], {"OMP_NUM_THREADS": "1"}, "ns"),
        ("omp region, 2 threads", [micro, "omp", str(args.regions)], {"OMP_NUM_THREADS": "2"}, "ns"),
        ("critical, uncontended", [micro, "critical", str(args.regions * 10)], {}, "ns"),
        ("start+exit, 1 thread", [micro, "thread", "1"], {}, "fixed"),
        ("omp_critical", [compile_c(EXAMPLES / "omp_critical.c", tmp / "omp_critical",
                                    "-fopenmp")], {}, "wall"),
    ]
    try:  # the OMPT path: the same micro benchmarks on LLVM's libomp
        clang_micro = compile_c(HERE / "overhead_micro.c", tmp / "overhead_micro_clang", "-fopenmp",
                                cc="clang")
        cases += [
            ("omp region, 1 thread, clang", [clang_micro, "omp", str(args.regions)],
             {"OMP_NUM_THREADS": "1"}, "ns"),
            ("omp region, 2 threads, clang", [clang_micro, "omp", str(args.regions)],
             {"OMP_NUM_THREADS": "2"}, "ns"),
            ("critical, uncontended, clang", [clang_micro, "critical", str(args.regions * 10)], {}, "ns"),
        ]
    except (OSError, subprocess.CalledProcessError):
        print("skipped: clang cannot build OpenMP programs (apt-get install clang libomp-dev)")
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
