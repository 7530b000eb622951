"""Calibration benchmark: the runtime's one-run predictions against 16-core measurements.

For every curve in a scale16-style directory (``NAME.csv``: threads,time of the whole
process, several repetitions; ``samples/NAME-N.jsonl``: what ``corecast run --target 16``
recorded with N threads), the recording at N = 2 and 4 is replayed with the current model
(``corecast.tools.replay``, the live library's predictor) and compared with the
measured curve:

* error: |ln(predicted S(16) / measured S(16))|, S(16) = median T(1) / median T(16).  A
  curve without T(1) is compared relative to the sampled count:
  predicted S(16)/S(N) against measured T(N)/T(16);
* preferred-count loss: measured time at the process's preferred count (log-interpolated
  between measured counts) over the best measured time, minus 1;
* the error's two parts, ln(predicted / measured): ``at_n0``, the speedup at the sampled
  count (how well the model rebuilt T(1) from the sample: busy time taken as work), and
  ``gain``, S(16) / S(N) (how well it extrapolated from N to 16 threads).  Their sum is
  the signed error; a curve without T(1) has only the gain.  ``at_n0`` splits further
  (``--json``): ``at_n0`` = ``work`` - ``wall``, ``work`` = ln(the model's T(1) / measured
  T(1)) and ``wall`` = ln(the recording's own wall time / the curve's median T(N)): a
  recording that ran slower than the curve at its own count (``wall`` > 0) lowers the
  speedup it predicts there unless its busy time grew with it (``benchmarks/noise16.py``
  shows the curves' own noise).

``--history 1`` replays each sample with the regions' history holding, as earlier
windows, what a ``--probe`` run measures at those smaller counts: 2 calls per size (the
library's PROBE_CALLS) at the time per call recorded at that count, largest size first,
while the probes' expected extra time (a call at n0 times n0/size - 1 each) stays within
3% of the region's time at n0 (the library's cost cap).

``--machine FILE`` replays with the machine's calibration (``corecast calibrate`` run on the
machine that recorded DIR; ``model/machine/calibration.py``) instead of the one each recording
holds, if any.

    python benchmarks/scale16.py [DIR] [--counts 2,4] [--history 1,2] [--only A,B | --skip A,B]
                                 [--suites A,B | --skip-suites A,B] [--machine FILE] [--gain-shrink A] [--json]

DIR defaults to benchmarks/scale16_curves (the scale16 set, a copy of
../shared/datasets/scale16).  corpus16's held-out suites (``bands.DEFAULT_SKIP``) are left
out unless ``--skip-suites ''`` (with ``--suites`` naming them, for the closing report).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Callable

from corecast.io.readers.measurements import read_measurements
from corecast.model.runtime.history import RegionHistory
from corecast.model.machine.calibration import Calibration
from corecast.model.machine.calibration import read as read_calibration
from corecast.model.runtime.numa import interpolate
from corecast.tools.replay import replay_process
from corecast.tools.samples import read_recording

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "benchmarks" / "scale16_curves"  # the scale16 set, kept here (README.md there)
TARGET = 16


def measured_curve(path: Path) -> dict[int, float]:
    """threads -> median time (corecast's own CSV reader folds the repetitions)."""
    m = read_measurements(str(path), "time")
    return {int(n): float(t) for n, t in zip(m.counts, m.values)}


def time_at(curve: dict[int, float], n: int) -> float:
    """Measured time at ``n`` threads, log-log interpolated between measured counts."""
    return curve[n] if n in curve else interpolate(list(curve.items()), n)


PROBE_CALLS, PROBE_COST = 2, 0.03  # shims/gomp.c: PROBE_CALLS, PROBE_COST_PCT


def recorded_wall(proc) -> float:
    """The recording's own wall time: the process's elapsed time (its summary, else the
    process record's ``wall_s``); 0 where neither was recorded."""
    if proc.elapsed_s > 0:
        return proc.elapsed_s
    return next((r["wall_s"] for r in proc.regions if r["name"] == "process"), 0.0)


def earlier_windows(directory: Path, stem: str, sample: list[dict], n0: int, sizes: list[int]) -> dict:
    """Region histories as probes at ``sizes`` threads would leave them in the run whose
    regions ``sample`` holds (see the module's text)."""
    own = {(r["name"], r["object"]): r for r in sample}
    reserved: dict = {}
    histories: dict = {}
    for n in sorted(sizes, reverse=True):
        rec = directory / "samples" / f"{stem}-{n}.jsonl"
        if not rec.exists():
            continue
        for region in read_recording(str(rec))[0].regions:
            key = (region["name"], region["object"])
            mine = own.get(key)
            if region["name"] == "process" or mine is None or mine["calls"] < 1:
                continue
            extra = reserved.get(key, 0.0) + PROBE_CALLS * (n0 / n - 1)  # in calls at n0
            if extra > PROBE_COST * mine["calls"]:
                continue
            reserved[key] = extra
            probes = [(t, PROBE_CALLS, w * PROBE_CALLS / c) for t, c, w in region["hist"] if c > 0]
            history = histories.setdefault(key, RegionHistory())
            history.update(cumulative({**region, "hist": probes}, history))
    return histories


def cumulative(region: dict, history: RegionHistory | None) -> dict:
    """``region`` with the calls of earlier windows in its per-team totals, as the library
    keeps them."""
    if history is None:
        return region
    seen = dict(history.seen)
    for team, calls, wall in region["hist"]:
        c0, w0 = seen.get(team, (0, 0.0))
        seen[team] = (c0 + calls, w0 + wall)
    return {**region, "hist": [(t, c, w) for t, (c, w) in seen.items()]}


EXAMPLES = {"omp_critical", "omp_slowdown", "pthreads_sync", "omp_triad", "omp_teams"}


def suite_of(csv: Path) -> str:
    """The curve's ``# suite:`` comment (benchmarks/corpus16 writes one), else its name's
    prefix (``npb-cg.A`` is NPB's); corecast's own examples are one suite, ``examples``."""
    with open(csv, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith("#"):
                break
            if line[1:].strip().startswith("suite:"):
                return line.split(":", 1)[1].strip()
    name = csv.stem
    if name in EXAMPLES:
        return "examples"
    return name.split("-", 1)[0] if "-" in name else name


def suite_filter(suites: str, skip_suites: str) -> Callable[[Path], bool]:
    """Keep a curve by its suite: in ``suites`` (comma-separated; empty: any) and not in
    ``skip_suites`` (how a held-out suite stays unreplayed while rules are chosen)."""
    want, skip = set(filter(None, suites.split(","))), set(filter(None, skip_suites.split(",")))
    return lambda csv: (not want or suite_of(csv) in want) and suite_of(csv) not in skip


def recordings(directory: Path, counts: list[int], keep: Callable[[str], bool] = lambda name: True,
               needs: tuple[int, ...] = (TARGET,), suites: Callable[[Path], bool] = lambda csv: True):
    """(csv, measured curve, sampled count, recording path) for every curve measured at
    ``needs`` and every count in ``counts`` recorded for it."""
    for csv in sorted(directory.glob("*.csv")):
        if not keep(csv.stem) or not suites(csv):
            continue
        curve = measured_curve(csv)
        if any(n not in curve for n in needs):
            continue
        for n0 in counts:
            rec = directory / "samples" / f"{csv.stem}-{n0}.jsonl"
            if rec.exists():
                yield csv, curve, n0, rec


def evaluate(directory: Path, counts: list[int], history: list[int] | None = None,
             keep: Callable[[str], bool] = lambda name: True, machine: Calibration | None = None,
             suites: Callable[[Path], bool] = lambda csv: True, shrink: float = 1.0) -> list[dict]:
    rows = []
    for csv, curve, n0, rec in recordings(directory, counts, keep, suites=suites):
        proc_rec = read_recording(str(rec))[0]
        histories = earlier_windows(directory, csv.stem, proc_rec.regions, n0,
                                    [n for n in history or [] if n < n0])
        proc_rec.regions = [cumulative(r, histories.get((r["name"], r["object"])))
                            for r in proc_rec.regions]
        rep = replay_process(proc_rec, TARGET, histories, machine or proc_rec.calibration)
        proc = rep.process
        if proc is None:
            continue
        pred = dict(zip(proc[1].threads, proc[1].speedup))
        # --gain-shrink: the extrapolated gain from n0 to 16 in log space times ``shrink``
        # (a candidate, not the model: benchmarks/gain_shrink.py)
        pred[TARGET] = pred[n0] * (pred[TARGET] / pred[n0]) ** shrink
        gain = math.log(pred[TARGET] / pred[n0] / (time_at(curve, n0) / curve[TARGET]))
        if 1 in curve:
            measured, predicted = curve[1] / curve[TARGET], pred[TARGET]
            at_n0 = math.log(pred[n0] / (curve[1] / time_at(curve, n0)))
        else:
            measured = time_at(curve, n0) / curve[TARGET]
            predicted = pred[TARGET] / pred[n0]
            at_n0 = None
        best = min(curve.values())
        wall = recorded_wall(proc_rec)
        rows.append({
            "curve": csv.stem, "sampled_at": n0, "measured_s16": round(measured, 3),
            "predicted_s16": round(predicted, 3),
            "log_error": round(abs(math.log(predicted / measured)), 4),
            "at_n0": None if at_n0 is None else round(at_n0, 4), "gain": round(gain, 4),
            "wall": round(math.log(wall / time_at(curve, n0)), 4) if wall > 0 else None,
            "work": (round(math.log(proc[1].work_s / curve[1]), 4)
                     if 1 in curve and proc[1].work_s > 0 else None),
            "preferred": proc[1].fastest,  # the count the report names (#38 "the preferred count")
            # None where the report names no count (a sample with no evidence: one thread)
            "preferred_loss": (None if proc[1].fastest is None
                               else round(time_at(curve, proc[1].fastest) / best - 1, 4)),
            "basis": proc[1].basis,
        })
    return rows


def summary(rows: list[dict]) -> dict:
    errs = [r["log_error"] for r in rows]
    losses = [r["preferred_loss"] for r in rows if r["preferred_loss"] is not None]
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
    ap.add_argument("--history", default="", help="smaller counts whose recordings are the "
                    "regions' earlier windows (what --probe measures), e.g. 1,2")
    ap.add_argument("--only", default="", help="comma-separated curve names: these alone")
    ap.add_argument("--skip", default="", help="comma-separated curve names: all but these")
    ap.add_argument("--suites", default="", help="comma-separated suites (a CSV's '# suite:' line): these alone")
    ap.add_argument("--skip-suites", default=None, help="comma-separated suites: all but these (default "
                    "bands.DEFAULT_SKIP, corpus16's held-out suites; '' for none)")
    ap.add_argument("--machine", metavar="FILE", help="the machine's calibration (corecast calibrate "
                    "on the machine the recordings were made on)")
    ap.add_argument("--gain-shrink", type=float, default=1.0, metavar="A",
                    help="score the candidate that shrinks the predicted gain from the sampled count to 16 "
                    "to its power A (ln S(16) = ln S(n0) + A ln(S(16)/S(n0)); benchmarks/gain_shrink.py)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not Path(args.directory).is_dir():
        print(f"scale16.py: no such directory: {args.directory} (the recordings: benchmarks/scale16_curves, "
              "benchmarks/device16, or a corpus16 output)", file=sys.stderr)
        return 2
    if args.skip_suites is None:
        from bands import DEFAULT_SKIP  # the held-out list's one home (bands imports this module)
        args.skip_suites = DEFAULT_SKIP
    cal = read_calibration(args.machine) if args.machine else None
    counts = [int(c) for c in args.counts.split(",")]
    history = [int(c) for c in args.history.split(",") if c]
    only, skip = set(filter(None, args.only.split(","))), set(filter(None, args.skip.split(",")))
    rows = evaluate(Path(args.directory), counts, history,
                    lambda name: (not only or name in only) and name not in skip, cal,
                    suite_filter(args.suites, args.skip_suites), args.gain_shrink)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
        return 0
    print(f"{'curve':<16} {'n0':>3} {'S16 meas':>9} {'S16 pred':>9} {'|ln err|':>9} {'at n0':>6} "
          f"{'gain':>6} {'wall':>6} {'pref':>5} {'loss':>7}  basis")
    for r in rows:
        at_n0 = "" if r["at_n0"] is None else f"{r['at_n0']:+.2f}"
        wall = "" if r["wall"] is None else f"{r['wall']:+.2f}"
        print(f"{r['curve']:<16} {r['sampled_at']:>3} {r['measured_s16']:>9.2f} {r['predicted_s16']:>9.2f} "
              f"{r['log_error']:>9.3f} {at_n0:>6} {r['gain']:>+6.2f} {wall:>6} {r['preferred'] or '?':>5} "
              f"{'-' if r['preferred_loss'] is None else format(r['preferred_loss'], '.1%'):>7}  {r['basis'].removeprefix('contention model: ')}")
    s = summary(rows)
    for n0 in counts:
        part = summary([r for r in rows if r["sampled_at"] == n0])
        print(f"sampled at {n0}: {part}")
    print(f"all: {s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
