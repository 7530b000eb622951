"""The truth's own noise: how far corpus16's measured S(16) moves between rounds, and how far
each recording's own run lies from its curve (issue #38).

scale16.py scores a prediction against S(16) = median T(1) / median T(16) over a curve's
repetitions.  Those repetitions were run in interleaved rounds (every program and count once
per round; ``runs.jsonl`` names each run's round as ``rep``), so each round has its own
S(16) = T(1) of round r / T(16) of round r.  Per program this prints:

* ``S16 rounds``: each round's S(16), and ``spread``, ln(max / min) of them;
* ``med |ln|``: the median over rounds of |ln(S16 of round r / S(16))|, S(16) the median-based
  truth.  An oracle that predicted each round's S(16) exactly scores this against the
  headline's truth: no model can be expected to do better from one run of the program;
* ``cross``: the same over every pairing of a round's T(1) with any round's T(16) (a
  prediction from one run is scored against runs it was not part of);
* ``wall@N``: ln(recording's wall time / the curve's median T(N)) for each recording
  ``samples/NAME-N.jsonl`` (the process's elapsed time, ``scale16.recorded_wall``), with ``*`` where
  it lies outside the curve's own repetitions at N.  A recording that ran slower than the
  curve at its own count describes another run than the one its prediction is scored on.

The noise floor per suite group (development; phoenix, miniapps, pyhost; gapbs, kastors) is
the median and the share within 20% of the oracle's |ln| over every program and round of the
group.  It is an optimistic floor: the round scored is one of the three the median is taken
over.  Without ``runs.jsonl`` a curve's repetitions are taken as rounds in file order (the
i-th row of a count is round i).

    python benchmarks/noise16.py [DIR] [--counts 1,2,4,16] [--suites A,B | --skip-suites A,B] [--json]

DIR defaults to benchmarks/corpus16/data.  Nothing is replayed, so the held-out suites are
included (nothing the model predicts is looked at).
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale16  # noqa: E402  (benchmarks/scale16.py: curves, suites)

from corecast.errors import InputError  # noqa: E402
from corecast.tools.samples import read_recording  # noqa: E402

DEFAULT = Path(__file__).resolve().parent / "corpus16" / "data"
TARGET = scale16.TARGET
# corpus16's split (corpus16/data/README.md, "The split"): every other suite is development.
# Together the held-out groups are bands.DEFAULT_SKIP (a test checks it).
HELD_OUT_GROUPS = ("phoenix,miniapps,pyhost", "gapbs,kastors", "splash3", "ompscr", "kastors-task")
DEVELOPMENT = "development"
WITHIN = math.log(1.2)


def group_of(suite: str) -> str:
    """The suite group a suite is reported in: a held-out group's name, or ``development``."""
    return next((g for g in HELD_OUT_GROUPS if suite in g.split(",")), DEVELOPMENT)


def rounds_from_runs(path: Path) -> dict[str, dict[int, dict[int, float]]]:
    """name -> round -> threads -> time, from a ``runs.jsonl`` (timed runs that ended well)."""
    out: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                run = json.loads(line)
                if run.get("kind") != "time" or run.get("rc") != 0:
                    continue
                out[run["name"]][int(run["rep"])][int(run["threads"])] = float(run["time_s"])
            except (ValueError, KeyError, TypeError) as exc:
                raise InputError(f"{path}: line {no}: not a timed run ({exc})") from None
    return out


def rounds_from_csv(csv: Path) -> dict[int, dict[int, float]]:
    """round -> threads -> time, the i-th row of each count taken as round i."""
    out: dict[int, dict[int, float]] = defaultdict(dict)
    seen: dict[int, int] = defaultdict(int)
    with open(csv, encoding="utf-8", errors="replace") as f:
        for line in f:
            cells = line.strip().split(",")
            if len(cells) != 2 or line.startswith("#"):
                continue
            try:
                n, t = int(cells[0]), float(cells[1])
            except ValueError:
                continue  # the header
            out[seen[n]][n] = t
            seen[n] += 1
    return out


def program_noise(rounds: dict[int, dict[int, float]], curve: dict[int, float]) -> dict | None:
    """A program's S(16) per round against the median-based truth (``curve``: the medians
    scale16.py scores against); None without T(1) and T(16)."""
    if 1 not in curve or TARGET not in curve:
        return None
    truth = curve[1] / curve[TARGET]
    per_round = [r[1] / r[TARGET] for _, r in sorted(rounds.items()) if 1 in r and TARGET in r]
    if not per_round:
        return None
    t1s = [r[1] for r in rounds.values() if 1 in r]
    t16s = [r[TARGET] for r in rounds.values() if TARGET in r]
    cross = [a / b for a in t1s for b in t16s]
    return {"measured_s16": round(truth, 3), "s16_rounds": [round(s, 3) for s in per_round],
            "spread": round(math.log(max(per_round) / min(per_round)), 4),
            "oracle": [round(abs(math.log(s / truth)), 4) for s in per_round],
            "cross": [round(abs(math.log(s / truth)), 4) for s in cross]}


def recording_walls(directory: Path, stem: str, counts: list[int], curve: dict[int, float],
                    rounds: dict[int, dict[int, float]]) -> dict[int, dict]:
    """count -> the recording's wall time against the curve's repetitions at that count."""
    out = {}
    for n in counts:
        rec = directory / "samples" / f"{stem}-{n}.jsonl"
        reps = [r[n] for r in rounds.values() if n in r]
        if not rec.exists() or n not in curve or not reps:
            continue
        wall = scale16.recorded_wall(read_recording(str(rec))[0])
        if wall <= 0:
            continue
        out[n] = {"wall_s": round(wall, 4), "curve_s": round(curve[n], 4),
                  "ln_ratio": round(math.log(wall / curve[n]), 4),
                  "outside": not min(reps) <= wall <= max(reps)}
    return out


def evaluate(directory: Path, counts: list[int],
             suites: Callable[[Path], bool] = lambda csv: True) -> list[dict]:
    """A row per curve with T(1) and T(16): its rounds' S(16) and its recordings' wall times."""
    runs = directory / "runs.jsonl"
    by_name = rounds_from_runs(runs) if runs.exists() else {}
    rows = []
    for csv in sorted(directory.glob("*.csv")):
        if not suites(csv):
            continue
        curve = scale16.measured_curve(csv)
        rounds = by_name.get(csv.stem) or rounds_from_csv(csv)
        noise = program_noise(rounds, curve)
        if noise is None:
            continue
        suite = scale16.suite_of(csv)
        rows.append({"curve": csv.stem, "suite": suite, "group": group_of(suite), **noise,
                     "recordings": recording_walls(directory, csv.stem, counts, curve, rounds)})
    return rows


def floor(rows: list[dict], key: str = "oracle") -> dict:
    """The oracle's score over every program and round of ``rows``."""
    errs = [e for r in rows for e in r[key]]
    if not errs:
        return {"programs": 0}
    return {"programs": len(rows), "points": len(errs),
            "median_log_error": round(statistics.median(errs), 4),
            "within_20pct": round(sum(e <= WITHIN for e in errs) / len(errs), 3),
            "median_spread": round(statistics.median(r["spread"] for r in rows), 4)}


def recording_summary(rows: list[dict], n: int) -> dict:
    """How the recordings at ``n`` threads compare with their curves at ``n``."""
    got = [r["recordings"][n] for r in rows if n in r["recordings"]]
    if not got:
        return {"recordings": 0}
    ratios = [g["ln_ratio"] for g in got]
    return {"recordings": len(got), "median_ln_ratio": round(statistics.median(ratios), 4),
            "median_abs_ln_ratio": round(statistics.median(abs(x) for x in ratios), 4),
            "over_20pct": sum(abs(x) > WITHIN for x in ratios),
            "outside_repetitions": sum(g["outside"] for g in got)}


def groups(rows: list[dict]) -> list[str]:
    return [g for g in (DEVELOPMENT, *HELD_OUT_GROUPS) if any(r["group"] == g for r in rows)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", nargs="?", default=str(DEFAULT))
    ap.add_argument("--counts", default="1,2,4,16", help="recorded counts whose wall time is "
                    "compared with the curve (default 1,2,4,16)")
    ap.add_argument("--suites", default="", help="comma-separated suites: these alone")
    ap.add_argument("--skip-suites", default="", help="comma-separated suites: all but these")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    directory = Path(args.directory)
    if not directory.is_dir():
        print(f"noise16.py: no such directory: {args.directory}", file=sys.stderr)
        return 2
    try:
        counts = [int(c) for c in args.counts.split(",") if c]
    except ValueError:
        print(f"noise16.py: --counts: not a list of thread counts: {args.counts!r}", file=sys.stderr)
        return 2
    try:
        rows = evaluate(directory, counts, scale16.suite_filter(args.suites, args.skip_suites))
    except InputError as exc:
        print(f"noise16.py: {exc}", file=sys.stderr)
        return 2
    by_group = {g: {"oracle": floor([r for r in rows if r["group"] == g]),
                    "cross": floor([r for r in rows if r["group"] == g], "cross"),
                    "recordings": {n: recording_summary([r for r in rows if r["group"] == g], n)
                                   for n in counts}}
                for g in groups(rows)}
    if args.json:
        print(json.dumps({"rows": rows, "groups": by_group}, indent=1))
        return 0
    walls = "".join(f" {'wall@' + str(n):>8}" for n in counts)
    print(f"{'curve':<30} {'S16':>6}  {'S16 rounds':<20} {'spread':>6} {'med |ln|':>8} {'cross':>6}{walls}")
    for r in rows:
        cells = "".join(
            f" {r['recordings'][n]['ln_ratio']:>+7.2f}{'*' if r['recordings'][n]['outside'] else ' '}"
            if n in r["recordings"] else f" {'':>8}" for n in counts)
        shown = " ".join(f"{s:.2f}" for s in r["s16_rounds"])
        print(f"{r['curve']:<30} {r['measured_s16']:>6.2f}  {shown:<20} {r['spread']:>6.3f} "
              f"{statistics.median(r['oracle']):>8.3f} {statistics.median(r['cross']):>6.3f}{cells}")
    print("wall@N: ln(recording's wall time / curve's median T(N)); *: outside the curve's repetitions at N")
    for g, s in by_group.items():
        print(f"{g}: noise floor (oracle per round) {s['oracle']}")
        print(f"{' ' * len(g)}  across rounds {s['cross']}")
        for n, rec in s["recordings"].items():
            print(f"{' ' * len(g)}  recordings at {n}: {rec}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
