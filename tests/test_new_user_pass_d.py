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


RECORDINGS = Path(__file__).resolve().parent / "data" / "recordings"
SLOWDOWN = RECORDINGS / "schema1-omp_slowdown-2.jsonl"  # region, process, summary


def _replay_json(capsys, path: Path) -> dict:
    assert main(["replay", "--json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def test_replay_reads_a_process_whose_records_appear_twice_once(tmp_path, capsys):
    # `cat a.jsonl a.jsonl > dup.jsonl; corecast replay dup.jsonl` printed each region and the
    # process twice, their bands changed (0.03-0.18 -> 0.03-0.17), no warning
    dup = tmp_path / "dup.jsonl"
    dup.write_text(SLOWDOWN.read_text() * 2)
    once, twice = _replay_json(capsys, SLOWDOWN), _replay_json(capsys, dup)
    (p1,), (p2,) = once["processes"], twice["processes"]
    assert p2["regions"] == p1["regions"] and p2["predicted"] == p1["predicted"]
    (said,) = [w for w in p2["warnings"] if w not in p1["warnings"]]
    assert "records appear again in the file (3 lines read already): counted once" in said
    assert main(["replay", str(dup)]) == 0
    out = capsys.readouterr().out
    assert out.count("process (openmp)") == 1 and "warning: " in out and "counted once" in out


def test_merge_reads_a_rank_file_joined_to_itself_once(tmp_path, capsys):
    # merge's own case, now found where replay finds it (samples.read_once)
    r0 = _write(tmp_path / "h-0.jsonl", _rank(0, 2, 1.0, 0.01, 0.3, 10))
    r1 = _write(tmp_path / "h-1.jsonl", _rank(1, 2, 1.0, 0.01, 0.1, 11))
    joined = tmp_path / "hh-0.jsonl"
    joined.write_text(r0.read_text() * 2)
    once, got = _merge_json(capsys, r0, r1), _merge_json(capsys, joined, r1, r0)
    assert got["predicted"] == once["predicted"] and len(got["runs"]) == 1
    assert [w for w in got["warnings"] if "counted once" in w] == [
        f"{joined}: rank 0 (pid 10)'s records appear again in the file (2 lines read already): counted once",
        f"{r0}: rank 0 (pid 10) was read already from {joined}: counted once"]


def test_a_rank_sweeps_json_says_mpi_as_its_text_and_html_do(tmp_path, capsys):
    # rs2.json said "runtime": "openmp" (--runtime's default) beside "count": "ranks", while
    # the text header said mpi and `export --html` "runtime mpi".  A launcher that sets the
    # rank's variables needs no MPI; `true` takes whatever time it takes.
    out = tmp_path / "rs.json"
    assert main(["sweep", "--launcher", "env PMI_SIZE={ranks} PMI_RANK=0", "--ranks", "1,2", "--repeat", "1",
                 "--json-out", str(out), "--", "true"]) == 0
    got = json.loads(out.read_text())
    assert (got["runtime"], got["count"]) == ("mpi", "ranks")
    assert "corecast sweep (mpi: " in capsys.readouterr().out


def test_tune_sim_does_not_say_a_fit_leaves_out_a_count_it_replays(tmp_path, capsys):
    # tune-sim of a sweep with count 4 past its 2 CPUs warned "count 4 ran oversubscribed on
    # the sweep's 2 CPUs: left out of the time's fit": it fits nothing and replays count 4
    path = tmp_path / "sw.json"
    path.write_text(json.dumps({"measured": [{"threads": n, "time_s": t} for n, t in ((1, 1.0), (2, 0.6), (4, 0.9))],
                                "cpus_allowed": 2}))
    assert main(["tune-sim", str(path)]) == 0
    assert "oversubscribed" not in capsys.readouterr().out
    assert main(["tune-sim", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input"]
    assert got["counts"] == [1, 2, 4] and got["warnings"] == []
    # predict, which fits, still says it
    assert main(["predict", str(path)]) == 0
    assert "count 4 ran oversubscribed on the sweep's 2 CPUs: left out of the time's fit" in capsys.readouterr().out


def test_merges_run_time_names_the_rank_whose_mpi_phase_it_is(tmp_path, capsys):
    # "run at 2 ranks: 0.499s (MPI phase of the slowest rank), slowest rank 1" while the
    # 0.499 s was rank 0's MPI phase and rank 1's was 0.498 s
    r0 = _write(tmp_path / "h2-0.jsonl", _rank(0, 2, 1.0, 0.01, 0.3, 10))   # the longer MPI phase
    r1 = _write(tmp_path / "h2-1.jsonl", _rank(1, 2, 0.99, 0.01, 0.1, 11))  # the most compute
    (run,) = _merge_json(capsys, r0, r1)["runs"]
    walls = {r["rank"]: r["wall_s"] for r in run["per_rank"]}
    assert (run["slowest_rank"], run["longest_rank"]) == (1, 0) and run["time_s"] == walls[0] > walls[1]
    assert main(["merge", str(r0), str(r1)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith(f"run at 2 ranks: {walls[0]:.3f}s (the longest MPI phase: rank 0's), slowest rank 1 ")
    assert "MPI phase of the slowest rank" not in head


def test_merge_predicts_nothing_from_a_run_missing_ranks(tmp_path, capsys):
    # `merge halo-0.jsonl` (rank 1's file not named) predicted from half the compute, S 1.00
    # 0.39 0.24..., with only "run at 2 ranks: no records of rank 1"
    r0 = _write(tmp_path / "halo-0.jsonl", _rank(0, 2, 1.0, 0.01, 0.1, 10))
    got = _merge_json(capsys, r0)
    assert got["predicted"] == [] and got["model"] is None
    assert got["preferred_ranks"] is None and got["fastest_ranks"] is None
    assert got["warnings"][0] == "run at 2 ranks: no records of rank 1"
    assert got["warnings"][1].startswith("no prediction over rank counts: no run has every rank's records")
    assert main(["merge", str(r0)]) == 0
    out = capsys.readouterr().out
    assert "predicted speedup" not in out and "preferred:" not in out
    assert out.count("warning: no prediction over rank counts") == 1
    # a whole run beside it: predicted from that one alone, the other left out with a warning
    one = _write(tmp_path / "one-0.jsonl", _rank(0, 1, 2.0, 0.0, 0.0, 20))
    alone, got = _merge_json(capsys, one), _merge_json(capsys, one, r0)
    assert got["predicted"] == alone["predicted"] and len(got["runs"]) == 2
    assert "the run at 2 ranks, without every rank's records, left out of the prediction" in " ".join(got["warnings"])
