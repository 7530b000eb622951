"""A documentation-against-behaviour pass (doc43): each test holds one place where what a
command says about itself (its --help) or does differed from the docs a new user follows."""
from __future__ import annotations

import json
from pathlib import Path

from corecast.cli import main


def _rank_files(tmp_path: Path, ranks: int, wall: float) -> list[str]:
    """One run's per-rank JSON Lines at ``ranks`` ranks, each rank ``wall`` s."""
    paths = []
    for rank in range(ranks):
        pid = 1000 * ranks + rank
        stalls = {"mpi_p2p": 0.05, "mpi_collective": 0.1}
        records = [{"event": "process", "schema": 3, "pid": pid, "runtime": "pthreads", "name": "process",
                    "rank": rank, "ranks": ranks, "calls": 1, "threads": 1, "wall_s": wall, "stalls_s": stalls,
                    "counters": {"busy_s": wall, "serial_s": 0, "cpu_s": wall}},
                   {"event": "summary", "schema": 3, "pid": pid, "elapsed_s": wall, "cores": 4, "target": 4,
                    "rank": rank, "ranks": ranks, "mpi": {"init_s": 0.1, "finalize_s": 0.05}}]
        path = tmp_path / f"run{ranks}-{rank}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        paths.append(str(path))
    return paths


def test_merge_help_names_the_method_two_world_sizes_get(tmp_path, capsys):
    # 'corecast merge --help' said "regression over the world sizes measured when there are
    # 3 or more, else a one-run model"; docs/mpi.md (and merge itself: "model: auto over 2
    # rank counts") fit two world sizes with auto, not the one-run model.
    files = _rank_files(tmp_path, 1, 8.0) + _rank_files(tmp_path, 2, 4.5)
    assert main(["merge", "--json", *files]) == 0
    assert json.loads(capsys.readouterr().out)["model"].startswith("auto over 2 rank counts")
    assert main(["merge", "--help"]) == 0
    helptext = " ".join(capsys.readouterr().out.split())
    assert "auto over 2" in helptext and "one-run model from one" in helptext
