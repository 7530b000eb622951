"""Cost of corecast's MPI wrappers (shims/mpi.c) per call: each run without and with the
preload library, alternating (the order flips each round) to cancel drift.

    python benchmarks/mpi_overhead.py [--runs 7] [--calls 100000] [--ranks 1,2]

benchmarks/mpi_overhead.c times MPI_Barrier and zero-byte MPI_Sendrecv (with the
neighbour rank; with itself at one rank) from inside with MPI_Wtime; the table gives, per
rank count and call, the median ns per call without and with the library, the spread
(min-max) and the median difference.  Needs Open MPI's mpicc and mpirun (run as root: the
script passes --allow-run-as-root; --oversubscribe lets 2 ranks share fewer cores, which
makes the 2-rank figures scheduling-bound on a busy machine).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from corecast._native import PRELOAD

HERE = Path(__file__).resolve().parent
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def once(prog: str, ranks: int, calls: int, preload: bool) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env.update(ROOT_ENV, CORECAST_QUIET="1")
    cmd = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks)]
    if preload:
        cmd += ["-x", f"LD_PRELOAD={PRELOAD}"]
    out = subprocess.run(cmd + [prog, str(calls)], env=env, capture_output=True, text=True, check=True).stdout
    words = out.split()
    return float(words[1]), float(words[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--ranks", default="1,2")
    args = ap.parse_args()
    if not shutil.which("mpicc") or not shutil.which("mpirun"):
        raise SystemExit("mpi_overhead: needs mpicc and mpirun (apt install openmpi-bin libopenmpi-dev)")
    with tempfile.TemporaryDirectory() as tmp:
        prog = str(Path(tmp) / "mpi_overhead")
        subprocess.run(["mpicc", "-O2", str(HERE / "mpi_overhead.c"), "-o", prog], check=True)
        print(f"{'ranks':>5} {'call':>9} {'without ns':>18} {'with ns':>18} {'diff ns':>8}")
        for ranks in (int(r) for r in args.ranks.split(",")):
            runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
            for i in range(args.runs):
                for preload in ((False, True) if i % 2 == 0 else (True, False)):
                    runs[preload].append(once(prog, ranks, args.calls, preload))
            for k, name in enumerate(("barrier", "sendrecv")):
                off = [r[k] for r in runs[False]]
                on = [r[k] for r in runs[True]]
                mo, mi = statistics.median(off), statistics.median(on)
                print(f"{ranks:>5} {name:>9} {mo:>7.0f} ({min(off):.0f}-{max(off):.0f}) "
                      f"{mi:>7.0f} ({min(on):.0f}-{max(on):.0f}) {mi - mo:>8.0f}")


if __name__ == "__main__":
    main()
