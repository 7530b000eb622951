"""Issue #40's fixed costs of ``corecast run`` on ``omp_triad``, as instruction counts
(callgrind), which a shared machine's load does not move as it moves wall and CPU time:

- the launcher: ``corecast run [--target-machine M] -- true`` from the interpreter's start
  to the exec (``os.execve`` replaced by an exit, so that callgrind writes its counts),
  beside a bare ``python -c pass``;
- the exit: the sampler thread of ``omp_triad 40 4`` (2 threads) under the preload
  library, plain and with ``CORECAST_TARGET_MACHINE``: the model's interpreter start
  (``bridge.c``'s ``load``) and the exit's prediction.

    python benchmarks/launch_cost.py [--bin /tmp/bin] [--machine opteron6380] [--base VENV]

``--bin`` holds ``omp_triad`` built from examples/ (``gcc -O2 -fopenmp``); ``--base`` adds
the same rows for the corecast installed in another venv (before and after).  Needs
valgrind; each row is one run (the counts repeat to within 0.1%).

    python benchmarks/launch_cost.py --wall N

Where the launcher's wall time goes on a machine without valgrind (the device: session 33's
``launcher cpu`` was 0.058 s there against 0.023 s on the 2-core VM): the 15 slowest imports
of ``import corecast.cli.run`` (``-X importtime``, cumulative), then the median and least
wall of N runs each of ``python -c pass``, ``python -c 'import corecast.cli.run'`` and
``corecast run --quiet -- /bin/true``.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import statistics
import tempfile
import time
from pathlib import Path

LAUNCH = ("import os, sys; os.execve = lambda *a: os._exit(0); sys.argv[0] = 'corecast'; "
          "from corecast.__main__ import console; console()")
REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(cmd: list[str], env: dict[str, str] | None = None) -> int:
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                       capture_output=True, text=True, env=env)
    m = REFS.search(r.stderr)
    if not m:
        raise SystemExit(f"no count from valgrind for {cmd}: {r.stderr[-300:]}")
    return int(m.group(1).replace(",", ""))


def inclusive(out: Path, symbol: str) -> int | None:
    """Inclusive Ir of ``symbol`` in one thread's callgrind file (None: not there)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(out)], capture_output=True,
                          text=True).stdout
    for line in text.splitlines():
        if symbol in line:
            return int(line.split()[0].replace(",", ""))
    return None


def exit_counts(python: str, triad: str, machine: str | None) -> tuple[int, int]:
    """(sampler thread's Ir, of which the model's start) for omp_triad 40 4 at 2 threads."""
    lib, path = subprocess.run(
        [python, "-c", "from corecast._native import PRELOAD; from corecast.model.machine import numa; "
         f"print(PRELOAD); print(numa.path_of({machine or 'opteron6380'!r}))"],
        capture_output=True, text=True, check=True).stdout.split()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    # valgrind runs the model 20-50 times slower: the exit must wait for it, or the count
    # stops where the exit gave up (CORECAST_EXIT_TIMEOUT_MS, 10 s by default)
    env.update(LD_PRELOAD=lib, OMP_NUM_THREADS="2", CORECAST_EXIT_TIMEOUT_MS="600000")
    if machine:
        env.update(CORECAST_TARGET_MACHINE=path, CORECAST_TARGET="64")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "cg"
        r = subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes", f"--callgrind-out-file={base}",
                            triad, "40", "4"], env=env, capture_output=True, text=True)
        if "no predictions" in r.stderr or ("nodes:" not in r.stderr) == bool(machine):
            raise SystemExit(f"the exit did not predict as asked: {r.stderr[-400:]}")
        for out in sorted(Path(tmp).glob("cg-*")):
            total = inclusive(out, "sampler.c:sampler_main ")
            if total is not None:
                return total, inclusive(out, "bridge.c:load ") or 0
    raise SystemExit("no sampler thread in the callgrind output")


def import_times(py: str, module: str, top: int = 15) -> list[tuple[int, int, str]]:
    """The ``top`` imports of ``module`` by cumulative time: (cumulative us, self us, name)."""
    r = subprocess.run([py, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].strip().isdigit():
            rows.append((int(parts[1]), int(parts[0]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def walls(cmd: list[str], n: int) -> tuple[float, float, int]:
    """(median, least) wall seconds of ``n`` runs of ``cmd``, and how many failed."""
    out, failed = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        failed += subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0
        out.append(time.perf_counter() - t0)
    return statistics.median(out), min(out), failed


def wall_report(py: str, n: int) -> None:
    """``--wall``: where the launcher's wall time goes, without valgrind."""
    print(f"{py}: -X importtime -c 'import corecast.cli.run', the 15 slowest by cumulative time")
    print(f"{'cumulative us':>13} {'self us':>8}  module")
    for cum, own, name in import_times(py, "corecast.cli.run"):
        print(f"{cum:13,} {own:8,}  {name}")
    cli = str(Path(py).with_name("corecast"))
    print(f"\nwall seconds, {n} runs each: {'median':>7} {'least':>7}")
    for what, cmd in (("python -c pass", [py, "-c", "pass"]),
                      ("python -c 'import corecast.cli.run'", [py, "-c", "import corecast.cli.run"]),
                      ("corecast run --quiet -- /bin/true", [cli, "run", "--quiet", "--", "/bin/true"])):
        med, least, failed = walls(cmd, n)
        print(f"  {what:40} {med:7.4f} {least:7.4f}" + (f"  ({failed} FAILED)" if failed else ""))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="/tmp/bin", help="the folder holding omp_triad")
    ap.add_argument("--machine", default="opteron6380", help="the target machine (preset or file)")
    ap.add_argument("--base", help="a venv with another corecast build: its rows too")
    ap.add_argument("--wall", type=int, metavar="N", help="wall times of N runs and the imports, no valgrind")
    args = ap.parse_args()
    if args.wall:
        wall_report(sys.executable, args.wall)
        return 0
    triad = str(Path(args.bin) / "omp_triad")
    installs = {"this": sys.executable}
    if args.base:
        installs["base"] = str(Path(args.base) / "bin" / "python")
    print(f"{'install':8} {'what':52} {'Ir':>13}")
    for tag, py in installs.items():
        print(f"{tag:8} {'python -c pass':52} {instructions([py, '-c', 'pass']):13,}")
        for opts in ([], ["--target-machine", args.machine]):
            what = " ".join(["launcher: run", *opts, "-- true"])
            print(f"{tag:8} {what:52} {instructions([py, '-c', LAUNCH, 'run', *opts, '--', 'true']):13,}")
        for machine in (None, args.machine):
            total, start = exit_counts(py, triad, machine)
            what = "exit: sampler thread" + (", target machine" if machine else "")
            print(f"{tag:8} {what:52} {total:13,}  (model start {start:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
