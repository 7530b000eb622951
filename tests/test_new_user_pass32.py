"""A performance engineer's first hour with the commands session 31's pass left out
(session newuser32): replay, merge, numa, export, sweep's and run's outputs, on the
examples' recordings and on hostile ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main

RECORDINGS = Path(__file__).resolve().parent / "data" / "recordings"
SLOWDOWN = RECORDINGS / "schema1-omp_slowdown-2.jsonl"  # region, process, summary (target 16)


def _lines(path: Path = SLOWDOWN) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write(path: Path, records: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def _replay_json(capsys, path: Path) -> dict:
    assert main(["replay", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_recorded_target_past_the_librarys_range_is_refused(tmp_path, capsys):
    # a summary saying "target": 1000000000 replayed up to a billion threads: it did not
    # end (the decoder is asked first, so that this test fails rather than hangs before the fix)
    from corecast.recording import record

    records = _lines()
    records[-1]["target"] = 10**9
    with pytest.raises(ValueError, match="target is 1000000000"):
        record.summary_from_json(records[-1])
    assert record.summary_from_json({**records[-1], "target": 1024})["target"] == 1024
    err = assert_one_line_error(capsys, ["replay", str(_write(tmp_path / "r.jsonl", records))])
    assert "line 3" in err and "target is 1000000000" in err and "1024" in err


def test_a_recording_without_its_summary_replays_to_its_predictions_target(tmp_path, capsys):
    # without the summary line (a run stopped before writing it) replay predicted up to
    # 1 thread on a 1-core machine: every speedup 1.00, fastest 1
    records = [r for r in _lines() if r["event"] != "summary"]
    whole = _replay_json(capsys, SLOWDOWN)["processes"][0]
    cut = _replay_json(capsys, _write(tmp_path / "r.jsonl", records))["processes"][0]
    assert cut["target"] == whole["target"] == 16
    assert [p["threads"] for p in cut["predicted"]] == [p["threads"] for p in whole["predicted"]]


def test_a_last_line_cut_short_is_said_as_such(tmp_path, capsys):
    records = _lines()
    path = _write(tmp_path / "r.jsonl", records[:-1], json.dumps(records[-1])[:40])
    err = assert_one_line_error(capsys, ["replay", str(path)])
    assert "line 3: not JSON: cut short, the file ends inside it" in err and "delete it" in err
    # a bad line that is not the file's end is told as before
    path.write_text(json.dumps(records[0])[:40] + "\n" + json.dumps(records[1]) + "\n")
    err = assert_one_line_error(capsys, ["replay", str(path)])
    assert "line 1: not JSON" in err and "file ends" not in err


def test_a_json_file_cut_short_says_so_not_half_of_jsons_sentence(tmp_path, capsys):
    # json's "Unterminated string starting at" lost its place and read as cut off
    path = tmp_path / "sweep.json"
    path.write_text('{"measured": [{"threads": 1, "time_s": 2.0, "com')
    err = assert_one_line_error(capsys, ["export", "--extrap", str(tmp_path / "o.jsonl"), str(path)])
    assert err.rstrip().endswith("cut short (the text ends inside a JSON value)")
    assert "starting at" not in err


def test_sweep_keeps_an_output_on_standard_output_whole(tmp_path, capfd):
    # --json-out - was followed on stdout by the table: no longer JSON (and --plot -'s PNG
    # had the table after it)
    prog = tmp_path / "prog.sh"
    prog.write_text("#!/bin/sh\nexit 0\n")
    prog.chmod(0o755)
    main(["sweep", "--threads", "1,2", "--repeat", "1", "--json-out", "-", "--", str(prog)])
    out, err = capfd.readouterr()
    assert json.loads(out)["command"] == [str(prog)]
    assert "placement" in err  # the table, beside the progress


@pytest.mark.parametrize("argv", [
    ["sweep", "--threads", "1,2", "--json-out", "-", "--plot", "-", "--", "true"],
    ["sweep", "--threads", "1,2", "--html", "-", "--plot", "-", "--", "true"],
    ["export", "--extrap", "-", "--plot", "-", "S"],
    ["export", "--extrap", "-", "--html", "-", "S"],
])
def test_two_outputs_on_standard_output_are_refused(tmp_path, capsys, argv):
    sweep = tmp_path / "s.json"
    sweep.write_text(json.dumps({"measured": [{"threads": 1, "time_s": 2.0}, {"threads": 2, "time_s": 1.1}]}))
    argv = [str(sweep) if a == "S" else a for a in argv]
    err = assert_one_line_error(capsys, argv)
    assert "would both write to standard output" in err


def test_run_refuses_json_out_dash(tmp_path, capsys, monkeypatch):
    # corecast --help: "'-' is standard input or output"; run's --json-out - made a file named '-'
    from corecast.runtime import launcher

    def launched(*args, **kwargs):  # the real one replaces this process with the program
        raise AssertionError("launched")

    monkeypatch.setattr(launcher, "run", launched)
    monkeypatch.chdir(tmp_path)
    err = assert_one_line_error(capsys, ["run", "--json-out", "-", "--", "true"])
    assert "'-' is not standard output here" in err
    assert not (tmp_path / "-").exists()


def _rank(rank: int, ranks: int, wall: float, coll: float, pid: int) -> list[dict]:
    stalls = {"mpi_p2p": 0.01, "mpi_collective": coll}
    return [{"event": "process", "schema": 3, "pid": pid, "runtime": "pthreads", "name": "process",
             "rank": rank, "ranks": ranks, "calls": 1, "threads": 1, "wall_s": wall, "stalls_s": stalls,
             "counters": {"busy_s": wall, "serial_s": 0, "cpu_s": wall}},
            {"event": "summary", "schema": 3, "pid": pid, "elapsed_s": wall, "cores": 4, "target": 4,
             "rank": rank, "ranks": ranks, "mpi": {"init_s": 0.1, "finalize_s": 0.05}}]


def test_merge_reads_a_file_named_twice_once(tmp_path, capsys):
    # `corecast merge halo-*.jsonl halo-0.jsonl`: rank 0's records again made a second run
    # at 2 ranks, rank 1 missing, and two runs in the report
    r0 = _write(tmp_path / "halo-0.jsonl", _rank(0, 2, 1.0, 0.3, 10))
    r1 = _write(tmp_path / "halo-1.jsonl", _rank(1, 2, 1.0, 0.1, 11))
    once = json.loads(_merge(capsys, str(r0), str(r1)))
    twice = json.loads(_merge(capsys, str(r0), str(r1), str(r0)))
    assert len(twice["runs"]) == 1 and twice["runs"] == once["runs"]
    assert twice["predicted"] == once["predicted"]
    assert any("rank 0 (pid 10) was read already" in w for w in twice["warnings"])
    # a second run (another pid) at the same size is still a repetition
    again = _write(tmp_path / "b-0.jsonl", _rank(0, 2, 1.2, 0.3, 20) + _rank(1, 2, 1.2, 0.1, 21))
    assert len(json.loads(_merge(capsys, str(r0), str(r1), str(again)))["runs"]) == 2


def _merge(capsys, *files: str) -> str:
    assert main(["merge", "--json", *files]) == 0
    return capsys.readouterr().out


def test_merge_json_has_predicts_unit_neutral_count_keys(tmp_path, capsys):
    r0 = _write(tmp_path / "halo-0.jsonl", _rank(0, 2, 1.0, 0.3, 10))
    r1 = _write(tmp_path / "halo-1.jsonl", _rank(1, 2, 1.0, 0.1, 11))
    got = json.loads(_merge(capsys, str(r0), str(r1)))
    assert got["count_unit"] == "ranks"
    assert (got["preferred_count"], got["fastest_count"]) == (got["preferred_ranks"], got["fastest_ranks"])


SAMPLE = {"llc": 0.01, "bus": [0.004, 0, 0, 0, 0, 0, 0, 0], "mct": [0.03, 0, 0, 0, 0, 0, 0, 0]}


def test_numa_json_has_predicts_unit_neutral_count_keys(tmp_path, capsys):
    sample = tmp_path / "s.json"
    sample.write_text(json.dumps(SAMPLE))
    assert main(["numa", "--machine", "opteron6380", "--sample", str(sample), "--json",
                 "--efficiency", "0.1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["count_unit"] == "NUMA nodes"
    assert (got["preferred_count"], got["fastest_count"]) == (got["preferred_nodes"], got["fastest_nodes"]) == (4, 5)


def test_numa_replay_names_the_fastest_node_count_as_its_table_does(tmp_path):
    # the table said "fastest 1" and the JSON had only preferred_nodes (a run's line and
    # numa --sample's JSON name it fastest_nodes)
    from corecast.model.machine import numa as machines
    from corecast.tools.replay import replay_nodes
    from corecast.views import nodeview

    machine = machines.load("opteron6380")
    path = tmp_path / "tm.jsonl"
    line = {"event": "region", "name": "loop", "object": "prog",  # test_numa_cli's recorded region
            "predicted_nodes": [{"nodes": 1, "cores": 16, "speedup": 1.0}, {"nodes": 2, "cores": 32, "speedup": 1.9}],
            "numa": {"inputs": {"team_times": [[1, 1.0], [2, 0.6]]}, "sync": [1.0, 2.0]}}
    path.write_text(json.dumps(line) + "\n")
    regions = replay_nodes(str(path), machine)
    (region,) = regions
    assert region["fastest_nodes"] == max(range(1, 9), key=lambda k: region["predictions"][k - 1]["speedup"])
    at_half = replay_nodes(str(path), machine, 0.5)[0]
    assert at_half["fastest_nodes"] == region["fastest_nodes"]
    text = nodeview.replay_report(machine, [at_half], 0.5)
    assert at_half["preferred_nodes"] < at_half["fastest_nodes"]
    assert f"(fastest {at_half['fastest_nodes']})" in text


def test_merges_one_run_preferred_count_says_it_stops_at_the_largest_run(tmp_path, capsys):
    # "preferred: 2 ranks (each rank added up to it pays off)" beside S rising to 16 read as
    # the model's verdict that a third rank does not pay off
    r0 = _write(tmp_path / "hy-0.jsonl", _rank(0, 2, 1.0, 0.01, 10))
    r1 = _write(tmp_path / "hy-1.jsonl", _rank(1, 2, 1.0, 0.01, 11))
    assert main(["merge", str(r0), str(r1)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "preferred:" in x]
    assert "preferred: 2 ranks" in line and "no further than the largest run" in line


def test_a_cut_short_last_line_is_told_apart_from_a_bad_one_and_a_one_line_file(tmp_path, capsys):
    # (mutation audit) the file's end inside its last line only when no newline follows it,
    # and "delete it to read the lines before" only where there are lines before it
    records = _lines()
    path = _write(tmp_path / "r.jsonl", records[:-1], json.dumps(records[-1])[:40] + "\n")
    err = assert_one_line_error(capsys, ["replay", str(path)])
    assert "line 3: not JSON" in err and "file ends inside it" not in err
    path.write_text(json.dumps(records[0])[:40])
    err = assert_one_line_error(capsys, ["replay", str(path)])
    assert "line 1: not JSON: cut short, the file ends inside it" in err and "delete it" not in err


def test_json_text_ending_after_a_comma_is_cut_short(tmp_path, capsys):
    # json says "Expecting property name" at the text's very end: no trailing newline
    path = tmp_path / "sweep.json"
    path.write_text('{"measured": [{"threads": 1,')
    err = assert_one_line_error(capsys, ["export", "--extrap", str(tmp_path / "o.jsonl"), str(path)])
    assert err.rstrip().endswith("cut short (the text ends inside a JSON value)")


def test_merge_keeps_two_runs_whose_rank_has_the_same_pid(tmp_path, capsys):
    # pids repeat across runs (another node, a recycled pid): other figures, another run
    r0 = _write(tmp_path / "a-0.jsonl", _rank(0, 2, 1.0, 0.3, 10) + _rank(1, 2, 1.0, 0.1, 11))
    r1 = _write(tmp_path / "b-0.jsonl", _rank(0, 2, 1.2, 0.3, 10) + _rank(1, 2, 1.2, 0.1, 21))
    got = json.loads(_merge(capsys, str(r0), str(r1)))
    assert len(got["runs"]) == 2 and not any("read already" in w for w in got["warnings"])


def test_merges_one_run_preferred_count_below_the_largest_run_has_no_cap_note(tmp_path, capsys):
    files = [str(_write(tmp_path / f"e-{r}.jsonl", _rank(r, 8, 1.0, 0.7, 50 + r))) for r in range(8)]
    assert main(["merge", *files]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "preferred:" in x]
    # 2, not 4: the walk starts at 1 rank (fixD); 2 -> 4 gains 0.09 of a rank, the fastest's cap was 4
    assert "preferred: 2 ranks" in line and "no further than the largest run" not in line
