"""Steering through the runtime's window path (tests/runtime/steer_sim.py: predict_window,
then RegionSteer.step) on measured time curves: each curve's region runs W windows, and
the work done is compared with the best fixed count's over the same windows.

Per curve: per-call time at k threads from the curve (log-log between measured counts),
the own count its largest; the share of thread time lost to stalls at k is what perfect
scaling from 1 thread leaves, 1 - T(1) / (k T(k)), given as the sim's ``category`` of
stall ("imbalance" or "critical").  Curves without a 1-thread time are skipped.

    python benchmarks/steer_curves.py [DIR ...] [--windows 5,20] [--per-curve]

DIR defaults to benchmarks/device16 and benchmarks/scale16_curves.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from runtime.steer_sim import SimRegion  # noqa: E402
from scale16 import measured_curve  # noqa: E402


def interpolated(curve: dict[int, float]):
    counts = sorted(curve)

    def at(k: int) -> float:
        lo, hi = max(c for c in counts if c <= k), min(c for c in counts if c >= k)
        w = 0.0 if lo == hi else (math.log(k) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return math.exp(math.log(curve[lo]) * (1 - w) + math.log(curve[hi]) * w)
    return at


def steer(path: Path, windows: int, category: str) -> dict | None:
    curve = measured_curve(path)
    if 1 not in curve or len(curve) < 3:
        return None
    own, t = max(curve), interpolated(curve)
    per_call = lambda k: t(k) / t(own) * 1e-3  # noqa: E731  (1 ms per call at the own count)
    lost = lambda k: 0.0 if k == 1 else min(0.95, max(0.0, 1 - curve[1] / (k * t(k))))  # noqa: E731
    sim = SimRegion(own, per_call, lost, category=category, first_window_s=0.025).run(windows)
    spans = [sim.first_window_s] + [sim.window_s] * (len(sim.teams) - 1)
    best = min(range(1, own + 1), key=per_call)
    work = lambda teams: sum(sim.busy * s / per_call(k) for s, k in zip(spans, teams))  # noqa: E731
    best_work = work([best] * len(spans))
    return {"curve": path.stem, "own": own, "best": best, "chosen": sim.steer.chosen(), "steps": sim.steer.steps,
            "loss": 1 - work(sim.teams) / best_work, "unsteered": 1 - work([own] * len(spans)) / best_work}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=[str(ROOT / "benchmarks" / "device16"),
                                                 str(ROOT / "benchmarks" / "scale16_curves")])
    ap.add_argument("--windows", default="5,20")
    ap.add_argument("--per-curve", action="store_true")
    args = ap.parse_args()
    files = [p for d in args.dirs for p in sorted(Path(d).glob("*.csv"))]
    for category in ("critical", "imbalance"):
        for windows in (int(w) for w in args.windows.split(",")):
            rows = [r for r in (steer(p, windows, category) for p in files) if r]
            if not rows:
                continue
            print(f"{category:9} {windows:2} windows, {len(rows)} curves: mean loss "
                  f"{statistics.mean(r['loss'] for r in rows):.3f}, median {statistics.median(r['loss'] for r in rows):.3f}, "
                  f"max {max(r['loss'] for r in rows):.3f}, mean steps {statistics.mean(r['steps'] for r in rows):.2f} "
                  f"(unsteered: mean loss {statistics.mean(r['unsteered'] for r in rows):.3f})")
            for r in rows if args.per_curve else []:
                print(f"    {r['curve']:<20} own {r['own']:2} best {r['best']:2} chosen {str(r['chosen']):>4} "
                      f"steps {r['steps']}  loss {r['loss']:.3f}  unsteered {r['unsteered']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
