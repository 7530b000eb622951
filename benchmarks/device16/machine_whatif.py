"""What-if, not a feature: how far the machine's own loss of per-thread speed explains the
runtime's over-predicted gains on this folder's 16-core runs.

The recordings at 2 and 4 threads are replayed as ``benchmarks/scale16.py`` does; then each
outermost region's time at n threads is scaled by e(n0) / e(n), where e(n) = S(n) / n is the
measured efficiency of NPB ep.W (embarrassingly parallel: a stand-in for what a compute
kernel run at 1..16 threads would measure on that machine, 0.82 at 16).  A plain-threads
process's whole curve is scaled the same way.  ep.W itself is not scored, nor curves
without a 1-thread time.

    python benchmarks/device16/machine_whatif.py
"""
from __future__ import annotations

import copy
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import scale16  # noqa: E402  (benchmarks/scale16.py: the curve readers)

from corecast.runtime.model.contention import compose_process  # noqa: E402
from corecast.runtime.replay import replay_process  # noqa: E402
from corecast.runtime.samples import read_recording  # noqa: E402

HELD_OUT = {"npb-cg.A", "npb-cg.W", "npb-lu.W", "npb-sp.W", "pigz", "xz"}
TARGET = 16


def s16_with_factor(path: Path, n0: int, eff: dict[int, float]) -> tuple[float, float]:
    """Predicted S(16) as replayed, and with each region's time scaled by e(n0)/e(n)."""
    proc = read_recording(str(path))[0]
    rep = replay_process(proc, TARGET, {})
    process = rep.predictions[-1]
    f = [eff[n0] / eff[n] for n in process.threads]
    regions = [(r, p) for r, p in zip(proc.regions, rep.predictions) if r["name"] != "process"]
    if any(not r["nested"] for r, _ in regions):  # composed from its regions, as the runtime does
        slower = []
        for r, p in regions:
            q = copy.copy(p)
            q.speedup = [s / k for s, k in zip(p.speedup, f)]
            slower.append((r, q))
        speedup = compose_process(next(r for r in proc.regions if r["name"] == "process"), slower).speedup
    else:  # plain threads: the whole curve
        speedup = [s / k for s, k in zip(process.speedup, f)]
    old = dict(zip(process.threads, process.speedup))[TARGET]
    new = dict(zip(process.threads, speedup))
    return old, new[TARGET] / new[1]


def main() -> None:
    ep = scale16.measured_curve(HERE / "npb-ep.W.csv")
    eff = {n: ep[1] / scale16.time_at(ep, n) / n for n in range(1, TARGET + 1)}
    rows = []
    for csv in sorted(HERE.glob("*.csv")):
        curve = scale16.measured_curve(csv)
        if csv.stem == "npb-ep.W" or 1 not in curve or TARGET not in curve:
            continue
        for n0 in (2, 4):
            rec = HERE / "samples" / f"{csv.stem}-{n0}.jsonl"
            if rec.exists():
                measured = curve[1] / curve[TARGET]
                old, new = s16_with_factor(rec, n0, eff)
                rows.append((csv.stem in HELD_OUT, n0, abs(math.log(old / measured)), abs(math.log(new / measured))))
    print(f"e(n) from ep.W: " + ", ".join(f"{n}: {eff[n]:.2f}" for n in (2, 4, 8, 16)))
    for label, held in (("scale16 programs", False), ("held-out programs", True)):
        for n0 in (2, 4):
            part = [r for r in rows if r[0] == held and r[1] == n0]
            for i, what in ((2, "as replayed"), (3, "with e(n0)/e(n)")):
                errs = [r[i] for r in part]
                print(f"{label:17} sampled at {n0} ({len(part):2}), {what:16}: median |ln err| "
                      f"{statistics.median(errs):.3f}, within 20% {sum(e <= math.log(1.2) for e in errs) / len(errs):.2f}, "
                      f"off by > 50% {sum(e > math.log(1.5) for e in errs) / len(errs):.2f}")


if __name__ == "__main__":
    main()
