"""benchmarks/noise16.py on synthetic rounds: each round's S(16) against the median-based
truth scale16.py scores with, the noise floor per suite group, and a recording's own wall
time against its curve."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from benchmark_module import benchmark_module, load_benchmark

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "tests" / "data" / "recordings" / "schema1-npb-mg.A-4.jsonl"  # elapsed 1.81445 s

# round -> threads -> time.  Medians: T(1) 10, T(16) 1, so the truth is S(16) = 10, while
# the rounds' own S(16) are 12/1.2 = 10, 10/0.8 = 12.5 and 8/1 = 8.
ROUNDS = {0: {1: 12.0, 4: 2.0, 16: 1.2}, 1: {1: 10.0, 4: 1.5, 16: 0.8}, 2: {1: 8.0, 4: 1.6, 16: 1.0}}


def write_program(directory: Path, name: str, suite: str, rounds: dict, runs: list | None) -> None:
    lines = [f"# suite: {suite}", "# metric: time", "threads,time"]
    lines += [f"{n},{t}" for r in rounds.values() for n, t in r.items()]
    (directory / f"{name}.csv").write_text("\n".join(lines) + "\n")
    if runs is not None:
        runs += [{"kind": "time", "name": name, "suite": suite, "threads": n, "rep": rep,
                  "time_s": t, "rc": 0, "call": 1} for rep, r in rounds.items() for n, t in r.items()]


def test_each_rounds_speedup_against_the_median_truth(tmp_path):
    runs: list = []
    write_program(tmp_path, "dev", "rodinia", ROUNDS, runs)
    # a failed run is no round's time
    runs.append({"kind": "time", "name": "dev", "suite": "rodinia", "threads": 16, "rep": 0,
                 "time_s": 30.0, "rc": -1, "call": 1})
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    bench = load_benchmark("noise16")
    [row] = bench.evaluate(tmp_path, [4])
    assert row["measured_s16"] == 10.0 and row["group"] == "development"
    assert row["s16_rounds"] == [10.0, 12.5, 8.0]
    assert row["spread"] == pytest.approx(math.log(12.5 / 8), abs=1e-4)
    assert sorted(row["oracle"]) == pytest.approx(sorted([0.0, math.log(1.25), math.log(1.25)]), abs=1e-4)
    assert len(row["cross"]) == 9
    floor = bench.floor([row])
    assert floor["median_log_error"] == pytest.approx(math.log(1.25), abs=1e-4)
    assert floor["within_20pct"] == pytest.approx(1 / 3, abs=1e-3)


def test_rounds_pair_by_their_round_not_their_place_in_the_file(tmp_path):
    """runs.jsonl says which round a run was in; the CSV's order is the fallback only."""
    runs: list = []
    write_program(tmp_path, "dev", "bots", ROUNDS, runs)
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in reversed(runs)))
    bench = load_benchmark("noise16")
    assert bench.evaluate(tmp_path, [])[0]["s16_rounds"] == [10.0, 12.5, 8.0]
    (tmp_path / "runs.jsonl").unlink()
    assert bench.evaluate(tmp_path, [])[0]["s16_rounds"] == [10.0, 12.5, 8.0]


def test_a_recordings_wall_time_against_its_curve(tmp_path):
    (tmp_path / "samples").mkdir()
    rounds = {rep: {**r, 4: 1.5 + 0.1 * rep} for rep, r in ROUNDS.items()}  # 1.5, 1.6, 1.7 s
    write_program(tmp_path, "xsb", "miniapps", rounds, None)
    shutil.copy(RECORDING, tmp_path / "samples" / "xsb-4.jsonl")
    bench = load_benchmark("noise16")
    [row] = bench.evaluate(tmp_path, [2, 4])
    assert row["group"] == "phoenix,miniapps,pyhost"
    assert list(row["recordings"]) == [4]  # no recording at 2
    rec = row["recordings"][4]
    assert rec["curve_s"] == 1.6 and rec["wall_s"] == pytest.approx(1.8145, abs=1e-4)
    assert rec["ln_ratio"] == pytest.approx(math.log(1.81445 / 1.6), abs=1e-4)
    assert rec["outside"]  # slower than every repetition at 4
    summary = bench.recording_summary([row], 4)
    assert summary["recordings"] == 1 and summary["over_20pct"] == 0


def test_the_groups_are_the_held_out_split():
    """The held-out groups together are what bands.py and scale16.py leave out by default."""
    bench = load_benchmark("noise16")
    bands = load_benchmark("bands")
    assert set(",".join(bench.HELD_OUT_GROUPS).split(",")) == set(bands.DEFAULT_SKIP.split(","))
    assert bench.group_of("gapbs") == "gapbs,kastors" and bench.group_of("polybench-acc") == "development"
    assert bench.group_of("splash3") == "splash3" and bench.group_of("ompscr") == "ompscr"
    assert bench.group_of("kastors-task") == "kastors-task"


def test_bad_runs_are_one_line(tmp_path, capsys):
    write_program(tmp_path, "dev", "rodinia", ROUNDS, None)
    (tmp_path / "runs.jsonl").write_text('{"kind": "time", "name": "dev", "rc": 0}\n')
    with benchmark_module("noise16") as mod:
        assert mod.main([str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "runs.jsonl: line 1" in err
        assert mod.main([str(tmp_path / "none")]) == 2
        assert capsys.readouterr().err.count("\n") == 1


def test_the_recordings_summary_counts_both_directions_and_only_those_outside():
    """A recording 40% faster than its curve is as far off as one 40% slower, and only the
    recordings outside the curve's repetitions are counted as such."""
    bench = load_benchmark("noise16")
    rows = [{"recordings": {4: {"ln_ratio": -0.5, "outside": True}}},
            {"recordings": {4: {"ln_ratio": 0.05, "outside": False}}}, {"recordings": {}}]
    got = bench.recording_summary(rows, 4)
    assert (got["recordings"], got["over_20pct"], got["outside_repetitions"]) == (2, 1, 1)
    assert got["median_abs_ln_ratio"] == pytest.approx(0.275)
