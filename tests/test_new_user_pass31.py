"""A new user's pass over the offline CLI (session newuser31): JSON keys that say threads
when the count is ranks, hyperfine runs that failed, ESTIMA's poor fits, the CSV reader's
memory, tune-sim's JSON, and sweeps measured past their CPUs."""
from __future__ import annotations

import json

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main

CURVE = "1,10\n2,5.5\n4,3\n8,2\n"


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_json_has_unit_neutral_count_keys(tmp_path, capsys):
    # 'ranks,time' gave "preferred_threads" (and only that) with "count_unit": "ranks".
    path = tmp_path / "r.csv"
    path.write_text(f"ranks,time\n{CURVE}")
    got = _json(capsys, ["predict", str(path), "--json"])
    assert got["count_unit"] == "ranks"
    assert got["preferred_count"] == got["preferred_threads"]
    assert got["fastest_count"] == got["fastest_threads"]
    assert got["knee_count"] == got["knee_threads"]


def test_sweep_result_keys_are_unit_neutral_and_read_either_way():
    from corecast.io.sweepresult import SweepResult, empty_result
    from corecast.model.curve.extrapolation import extrapolate

    result = empty_result(["prog"], "openmp", [], {})
    assert result["preferred_count"] is None and result["fastest_count"] is None
    times = {1: [10.0], 2: [5.5], 4: [3.0], 8: [2.0]}
    extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16)
    assert result["preferred_count"] == result["preferred_threads"] >= 1
    assert result["fastest_count"] == result["fastest_threads"]
    measured = [{"threads": n, "time_s": t[0]} for n, t in times.items()]
    # a result with only the new keys, and one with only the old: the same counts read
    new = SweepResult.read({"measured": measured, "preferred_count": 4, "fastest_count": 8})
    old = SweepResult.read({"measured": measured, "preferred_threads": 4, "fastest_threads": 8})
    assert (new.preferred, new.fastest) == (old.preferred, old.fastest) == (4, 8)
