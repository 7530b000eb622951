"""A new user's pass over merge, predict, tune-sim and export: what was measured shown as
measured, the metric by its name, singular counts, small percentages and output suffixes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _rank(rank: int, ranks: int, wall: float, coll: float, pid: int) -> list[dict]:
    stalls = {"mpi_p2p": 0.01, "mpi_collective": coll}
    return [{"event": "process", "schema": 3, "pid": pid, "runtime": "pthreads", "name": "process",
             "rank": rank, "ranks": ranks, "calls": 1, "threads": 1, "wall_s": wall, "stalls_s": stalls,
             "counters": {"busy_s": wall, "serial_s": 0, "cpu_s": wall}},
            {"event": "summary", "schema": 3, "pid": pid, "elapsed_s": wall, "cores": 4, "target": 4,
             "rank": rank, "ranks": ranks, "mpi": {"init_s": 0.1, "finalize_s": 0.05}}]


def test_merge_of_two_world_sizes_uses_the_smaller_run(tmp_path, capsys):
    # `merge h1-0.jsonl h2-0.jsonl h2-1.jsonl` predicted from the 2-rank run alone: 0.478 s
    # at 1 rank beside the 0.219 s measured there, and S 1.16 at 2 ranks where the 2-rank
    # run took longer.  sweep over the same two counts fits both.
    def merged(one_rank_wall: float) -> dict:
        one = _write(tmp_path / "h1-0.jsonl", _rank(0, 1, one_rank_wall, 0.0, 10))
        two = [_write(tmp_path / f"h2-{r}.jsonl", _rank(r, 2, 0.563, 0.2 - 0.1 * r, 20 + r)) for r in (0, 1)]
        assert main(["merge", "--json", str(one), *map(str, two)]) == 0
        return json.loads(capsys.readouterr().out)

    got = merged(0.369)  # an MPI phase of 0.219 s at 1 rank, 0.413 s at 2
    at = {p["ranks"]: p for p in got["predicted"]}
    assert at[1]["time_s"] == pytest.approx(0.219, rel=0.02)
    assert at[2]["time_s"] == pytest.approx(0.413, rel=0.02)
    assert at[2]["speedup"] < 1 and got["preferred_count"] == 1
    assert "the regression over rank counts needs 3 counts: time extrapolated with auto" in got["warnings"]
    # the 1-rank run's time moves the prediction
    assert {p["ranks"]: p for p in merged(0.769)["predicted"]}[2]["speedup"] > 1
