"""An adversarial pass over the commands that read user files (predict, merge, replay,
export, numa): each test holds one defect found, as a performance engineer's habits would
meet it (hand-edited recordings, options given twice, outputs piped on)."""
from __future__ import annotations

import json
from pathlib import Path

from cli_checks import assert_one_line_error
from corecast.cli import main

RECORDINGS = Path(__file__).parent / "data" / "recordings"


def _recording(tmp_path: Path, edit) -> str:
    lines = [json.loads(line) for line in (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text().splitlines()]
    edit(lines)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(path)


def test_replay_refuses_a_team_past_the_largest_count(tmp_path, capsys):
    # A region line's "threads": 1000000000 (a typo, a hand-edited file) made replay walk the
    # lock queues over every thread: it ran for hours instead of saying what is wrong.
    path = _recording(tmp_path, lambda lines: lines[0].__setitem__("threads", 10**9))
    err = assert_one_line_error(capsys, ["replay", path])
    assert "line 1" in err and "threads 1000000000 is above 100000" in err


def _rank_file(tmp_path: Path) -> str:
    stalls = {"mpi_p2p": 0.05, "mpi_collective": 0.1}
    records = [{"event": "process", "schema": 3, "pid": 101, "runtime": "pthreads", "name": "process", "rank": 0,
                "ranks": 1, "calls": 1, "threads": 1, "wall_s": 8.0, "stalls_s": stalls,
                "counters": {"busy_s": 8.0, "serial_s": 0, "cpu_s": 8.0}},
               {"event": "summary", "schema": 3, "pid": 101, "elapsed_s": 8.0, "cores": 4, "target": 4, "rank": 0,
                "ranks": 1, "mpi": {"init_s": 0.1, "finalize_s": 0.05}}]
    path = tmp_path / "run-0.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_merge_upto_is_bounded_as_every_count(tmp_path, capsys):
    # merge --upto 1000000000000000000000 printed 70 columns of ranks and "fastest count:
    # 1000000000000000000000 (predicted time 0.000 s)"; predict and sweep refuse past 100000.
    path = _rank_file(tmp_path)
    err = assert_one_line_error(capsys, ["merge", path, "--upto", "1000000000000000000000"])
    assert "--upto" in err and "at most 100000" in err
    assert main(["merge", "--json", path, "--upto", "100000"]) == 0
    assert json.loads(capsys.readouterr().out)["predicted"][-1]["ranks"] == 100000


def test_a_machine_file_with_two_kinds_of_bus_delay_is_refused(tmp_path, capsys):
    # A machine file with bus_delay and hops + bus_delay_by_hops (machine show's output,
    # then the preset's hop delays pasted in) was read as bus_delay alone: the edited delays
    # were dropped without a word, and the prediction changed with them unseen.
    machine = tmp_path / "m.json"
    machine.write_text(json.dumps({"cores_per_node": 4, "nodes": 2, "bus_delay": [[1, 2], [2, 1]],
                                   "hops": [[0, 1], [1, 0]], "bus_delay_by_hops": [3.0, 5.5],
                                   "controller_delay": 12.0}))
    sample = tmp_path / "s.json"
    sample.write_text('{"llc": [0.01, 0.01], "bus": [0.005, 0.005], "mct": [0.08, 0.08]}')
    err = assert_one_line_error(capsys, ["numa", "--machine", str(machine), "--sample", str(sample)])
    assert "bus_delay and hops and bus_delay_by_hops both give the bus delays" in err
    assert_one_line_error(capsys, ["machine", "show", str(machine)])


def _caliper_profile(path: Path, threads: int, seconds: float) -> str:
    path.write_text(json.dumps([{"path": "main", "omp.num.threads": threads,
                                 "avg#inclusive#sum#time.duration": seconds}]))
    return str(path)


def test_a_profile_named_twice_is_read_once(tmp_path, capsys):
    # `predict run_*.json run_1.json` read run_1.json twice: "10 ±0% (2 runs)", two
    # repetitions of one measurement, and a tighter band; CUBE profiles and merge's ranks
    # were already read once.
    one, two, four = (_caliper_profile(tmp_path / f"run_{n}.json", n, t) for n, t in ((1, 10.0), (2, 5.5), (4, 3.0)))
    again = str(tmp_path / "." / "run_1.json")
    assert main(["predict", "--json", one, two, four, again]) == 0
    twice = json.loads(capsys.readouterr().out)
    assert main(["predict", "--json", one, two, four]) == 0
    once = json.loads(capsys.readouterr().out)
    (got,), (want,) = twice["series"], once["series"]
    assert got["predictions"] == want["predictions"]
    assert [w for w in got["warnings"] if w not in want["warnings"]] == [f"{again}: named more than once: read once"]
    assert main(["predict", one, two, four, one]) == 0
    out = capsys.readouterr().out
    assert "(2 runs)" not in out and "named more than once: read once" in out


def _numa_recording(tmp_path: Path, inputs: dict, sync: list) -> str:
    event = {"event": "region", "name": "loop", "object": "prog",
             "predicted_nodes": [{"nodes": 1, "cores": 16, "speedup": 1.0}],
             "numa": {"inputs": inputs, "sync": sync}}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(event) + "\n")
    return str(path)


def test_numa_replay_refuses_values_no_run_writes(tmp_path, capsys):
    ok = {"team_times": [[1, 1.0], [2, 0.6]]}
    assert main(["numa", "--machine", "two-socket", "--replay", _numa_recording(tmp_path, ok, [1.0, 2.0])]) == 0
    capsys.readouterr()
    # sync -1: "loop (prog): 1:1.00  2:1189235474924.02  fastest 2"
    err = assert_one_line_error(capsys, ["numa", "--machine", "two-socket", "--replay",
                                         _numa_recording(tmp_path, ok, [-1.0, 2.0])])
    assert "line 1: unusable numa record: sync[0] is -1.0, not a speedup > 0" in err
    # a team of 10^9 threads: the rate fit walked every team size for hours
    err = assert_one_line_error(capsys, ["numa", "--machine", "two-socket", "--replay", _numa_recording(
        tmp_path, {"team_times": [[1, 1.0], [10**9, 0.6]]}, [1.0, 2.0])])
    assert "team_times[1]'s team is 1000000000, not a count from 1 to 100000" in err
    # raw counts: a negative one summed with the others into no traffic at all; a missing
    # one was said as Python's KeyError, "unusable numa record: 'bus'"
    counts = {"total_cycles": 1e9, "bus": [-1e6, 1e6], "llc": 2e6}
    err = assert_one_line_error(capsys, ["numa", "--machine", "opteron6380", "--replay",
                                         _numa_recording(tmp_path, {"counts": counts}, [1.0, 2.0])])
    assert "counts.bus holds -1000000.0, not a count >= 0" in err
    del counts["bus"]
    err = assert_one_line_error(capsys, ["numa", "--machine", "opteron6380", "--replay",
                                         _numa_recording(tmp_path, {"counts": counts}, [1.0, 2.0])])
    assert "counts has no 'bus'" in err


def test_extrap_json_values_must_be_a_list_of_values(tmp_path, capsys):
    # Extra-P's nested JSON: "values": "95" was read character by character as two runs,
    # 9 and 5 ("7 ±29% (2 runs)"), and "values": [] dropped the point without a word
    # (the text format's DATA line without a value is an error).
    def extrap(first) -> str:
        entries = [{"point": [1], "values": first}] + [{"point": [n], "values": [t]} for n, t in ((2, 5.5), (4, 3.0))]
        path = tmp_path / "in.json"
        path.write_text(json.dumps({"parameters": ["p"], "measurements": {"main": {"time": entries}}}))
        return str(path)
    assert main(["predict", extrap([10.0, 9.5])]) == 0
    capsys.readouterr()
    for bad, shown in (("95", '"95"'), ([], "[]"), (10, "10")):
        err = assert_one_line_error(capsys, ["predict", extrap(bad)])
        assert f'main time [0]: "values" must be a list of one value or more (the point\'s repetitions), not {shown}' in err
