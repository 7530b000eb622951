"""Builds this folder's curves (NAME.csv: threads,time, one line per run) from the device
runs' logs in raw/, the way benchmarks/scale16.py reads them next to samples/.

    python benchmarks/device16/collect.py

omp_triad is left out: the program runs its loop at every team size 1..cores whatever
OMP_NUM_THREADS says, so its wall time is no curve over the thread count."""
from __future__ import annotations

import collections
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MACHINE = ("device machine, 2026-11-26: 16-core Intel Xeon VM (family 6 model 207, 1 socket, "
           "1 NUMA node, no PMU), Linux 6.18, gcc 13.3; wall time of the whole process")
SOURCES = {
    "npb": "NAS Parallel Benchmarks 3.0 OpenMP C ({b}; gcc 13.3 -O3 -fopenmp), OMP_NUM_THREADS={{n}}",
    "omp_critical": "corecast examples/omp_critical.c 400 (gcc -O2 -fopenmp), OMP_NUM_THREADS={n}",
    "omp_slowdown": "corecast examples/omp_slowdown.c 4000 (gcc -O2 -fopenmp), OMP_NUM_THREADS={n}",
    "pthreads_sync": "corecast examples/pthreads_sync.c 2000 {n} (gcc -O2 -pthread)",
    "pigz": "pigz 2.6 (Debian) -p {n} -c, 60 MB of random-word text (scripts/gen.py)",
    "xz": "xz (the device image's, Ubuntu 24.04) -T{n} -1 -c, 60 MB of random-word text (scripts/gen.py)",
}
SKIP = {"omp_triad"}


def main() -> None:
    runs: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    for log in sorted((HERE / "raw").glob("run*.jsonl")):
        for line in log.read_text().splitlines():
            r = json.loads(line)
            if r.get("phase") == "truth" and r["prog"] not in SKIP:
                if r["rc"] != 0:
                    raise SystemExit(f"{log.name}: {r['prog']} at {r['n']} exited {r['rc']}")
                runs[r["prog"]].append((r["n"], r["time_s"]))
    for name, points in sorted(runs.items()):
        per = collections.Counter(n for n, _ in points)
        src = SOURCES["npb"].format(b=name[4:]) if name.startswith("npb-") else SOURCES[name]
        lo, hi = min(per.values()), max(per.values())
        lines = [f"# source: {src}; {MACHINE}, {lo if lo == hi else f'{lo}-{hi}'} runs per count "
                 "from 3 device calls, counts in alternating order", "# metric: time", "threads,time"]
        lines += [f"{n},{t:.4f}" for n, t in sorted(points)]
        (HERE / f"{name}.csv").write_text("\n".join(lines) + "\n")
    print(f"{len(runs)} curves written to {HERE}")


if __name__ == "__main__":
    main()
