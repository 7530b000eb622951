"""A new user's pass over the runtime side's offline commands (session fixD): merge,
replay, a rank sweep's JSON and tune-sim, on synthetic JSON Lines records."""
from __future__ import annotations

import json
from pathlib import Path

from corecast.cli import main


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _rank(rank: int, ranks: int, wall: float, p2p: float, coll: float, pid: int) -> list[dict]:
    """One rank's process and summary records (test_new_user_pass32's shape); its MPI
    phase is ``wall`` less 0.15 s of MPI_Init and MPI_Finalize."""
    stalls = {"mpi_p2p": p2p, "mpi_collective": coll}
    return [{"event": "process", "schema": 3, "pid": pid, "runtime": "pthreads", "name": "process",
             "rank": rank, "ranks": ranks, "calls": 1, "threads": 1, "wall_s": wall, "stalls_s": stalls,
             "counters": {"busy_s": wall, "serial_s": 0, "cpu_s": wall}},
            {"event": "summary", "schema": 3, "pid": pid, "elapsed_s": wall, "cores": 4, "target": 4,
             "rank": rank, "ranks": ranks, "mpi": {"init_s": 0.1, "finalize_s": 0.05}}]


def _merge_json(capsys, *files: Path) -> dict:
    assert main(["merge", "--json", *map(str, files)]) == 0
    return json.loads(capsys.readouterr().out)


def test_merges_one_run_preferred_count_is_walked_from_one_rank(tmp_path, capsys):
    # `merge halo-*.jsonl` of a run at 2 ranks printed S 1.00 0.89 1.12 ... and "preferred:
    # 2 ranks (each rank added up to it pays off)": the walk started at 2, never asking 1 -> 2
    files = [_write(tmp_path / f"h-{r}.jsonl", _rank(r, 2, 1.0, 0.45, 0.02, 10 + r)) for r in range(2)]
    got = _merge_json(capsys, *files)
    speedup = {p["ranks"]: p["speedup"] for p in got["predicted"]}
    assert speedup[2] < 1.0 < speedup[4]  # the case: going 1 -> 2 loses time, more ranks gain again
    assert got["preferred_ranks"] == got["preferred_count"] == 1
    # S 1.00 1.04: the added rank gains less than a quarter of one
    files = [_write(tmp_path / f"g-{r}.jsonl", _rank(r, 2, 1.0, 0.01, 0.4, 20 + r)) for r in range(2)]
    got = _merge_json(capsys, *files)
    assert 1.0 < got["predicted"][1]["speedup"] < 1.25 and got["preferred_ranks"] == 1
    # a second rank that pays off is still preferred (and capped at the largest run)
    files = [_write(tmp_path / f"k-{r}.jsonl", _rank(r, 2, 1.0, 0.01, 0.01, 30 + r)) for r in range(2)]
    assert _merge_json(capsys, *files)["preferred_ranks"] == 2
