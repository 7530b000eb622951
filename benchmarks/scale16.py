"""Calibration benchmark: the runtime's one-run predictions against 16-core measurements.

For every curve in a scale16-style directory (``NAME.csv``: threads,time of the whole
process, several repetitions; ``samples/NAME-N.jsonl``: what ``corecast run --target 16``
recorded with N threads), the recording at N = 2 and 4 is replayed with the current model
(``corecast.runtime.replay``, the live library's predictor) and compared with the
measured curve:

* error: |ln(predicted S(16) / measured S(16))|, S(16) = median T(1) / median T(16).  A
  curve without T(1) is compared relative to the sampled count:
  predicted S(16)/S(N) against measured T(N)/T(16);
* preferred-count loss: measured time at the process's preferred count (log-interpolated
  between measured counts) over the best measured time, minus 1.

    python benchmarks/scale16.py [DIR] [--counts 2,4] [--json]

DIR defaults to ../shared/datasets/scale16 next to the repository.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from corecast.fileio import read_measurements
from corecast.runtime.numa import interpolate
from corecast.runtime.replay import replay

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT.parent / "shared" / "datasets" / "scale16"
TARGET = 16


def measured_curve(path: Path) -> dict[int, float]:
    """threads -> median time (corecast's own CSV reader folds the repetitions)."""
    m = read_measurements(str(path), "time")
    return {int(n): float(t) for n, t in zip(m.counts, m.values)}


def time_at(curve: dict[int, float], n: int) -> float:
    """Measured time at ``n`` threads, log-log interpolated between measured counts."""
    return curve[n] if n in curve else interpolate(list(curve.items()), n)


def evaluate(directory: Path, counts: list[int]) -> list[dict]:
    rows = []
    for csv in sorted(directory.glob("*.csv")):
        curve = measured_curve(csv)
        if TARGET not in curve:
            continue
        for n0 in counts:
            rec = directory / "samples" / f"{csv.stem}-{n0}.jsonl"
            if not rec.exists():
                continue
            rep = replay(str(rec), TARGET)[0]
            proc = rep.process
            if proc is None:
                continue
            pred = dict(zip(proc[1].threads, proc[1].speedup))
            if 1 in curve:
                measured, predicted = curve[1] / curve[TARGET], pred[TARGET]
            else:
                measured = time_at(curve, n0) / curve[TARGET]
                predicted = pred[TARGET] / pred[n0]
            best = min(curve.values())
            rows.append({
                "curve": csv.stem, "sampled_at": n0, "measured_s16": round(measured, 3),
                "predicted_s16": round(predicted, 3),
                "log_error": round(abs(math.log(predicted / measured)), 4),
                "preferred": proc[1].preferred,
                "preferred_loss": round(time_at(curve, proc[1].preferred) / best - 1, 4),
                "basis": proc[1].basis,
            })
    return rows


def summary(rows: list[dict]) -> dict:
    errs = [r["log_error"] for r in rows]
    losses = [r["preferred_loss"] for r in rows]
    return {"points": len(rows),
            "median_log_error": round(statistics.median(errs), 4) if errs else None,
            "within_20pct": round(sum(e <= math.log(1.2) for e in errs) / len(errs), 3) if errs else None,
            "off_by_50pct": round(sum(e > math.log(1.5) for e in errs) / len(errs), 3) if errs else None,
            "median_preferred_loss": round(statistics.median(losses), 4) if losses else None,
            "max_preferred_loss": round(max(losses), 4) if losses else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", default=str(DEFAULT))
    ap.add_argument("--counts", default="2,4", help="sampled thread counts to replay (default 2,4)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    rows = evaluate(Path(args.directory), counts)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
        return 0
    print(f"{'curve':<16} {'n0':>3} {'S16 meas':>9} {'S16 pred':>9} {'|ln err|':>9} {'pref':>5} {'loss':>7}  basis")
    for r in rows:
        print(f"{r['curve']:<16} {r['sampled_at']:>3} {r['measured_s16']:>9.2f} {r['predicted_s16']:>9.2f} "
              f"{r['log_error']:>9.3f} {r['preferred']:>5} {r['preferred_loss']:>7.1%}  {r['basis'][:60]}")
    s = summary(rows)
    for n0 in counts:
        part = summary([r for r in rows if r["sampled_at"] == n0])
        print(f"sampled at {n0}: {part}")
    print(f"all: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
