"""``corecast numa`` and ``corecast machine``: output, the JSON contract, errors."""
from __future__ import annotations

import json

import pytest

from corecast.cli import main

from cli_checks import assert_one_line_error

K = 8


def write(path, obj) -> str:
    path.write_text(json.dumps(obj))
    return str(path)


@pytest.fixture
def samples(tmp_path) -> dict[str, str]:
    def rates(r):
        return {"llc": [r] * K, "bus": [1.25 * r] * K, "mct": [10 * r] * K}

    return {
        "compute": write(tmp_path / "compute.json", rates(0.0)),
        "balanced": write(tmp_path / "balanced.json", rates(0.001)),
        "memory": write(tmp_path / "memory.json", rates(0.004)),
        "raw": write(tmp_path / "raw.json", {"llc": 4e6, "bus": [1e6] * K, "total_cycles": 8e9}),
    }


def run_json(capsys, *argv) -> dict:
    assert main(list(argv)) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


def test_json_contract(capsys, samples):
    out = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--json")
    preds = out["predictions"]
    assert [p["nodes"] for p in preds] == list(range(1, K + 1))
    assert [p["cores"] for p in preds] == [8 * k for k in range(1, K + 1)]
    assert preds[0]["speedup"] == pytest.approx(1.0)
    best = max(preds, key=lambda p: p["speedup"])
    assert out["preferred_nodes"] == best["nodes"]


def test_compute_bound_is_linear_memory_bound_is_not(capsys, samples):
    lin = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["compute"], "--json")
    assert [p["speedup"] for p in lin["predictions"]] == pytest.approx(list(range(1, K + 1)))
    mem = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["memory"], "--json")
    assert mem["predictions"][-1]["speedup"] < 4 and mem["preferred_nodes"] < K


def test_efficiency_picks_fewer_nodes(capsys, samples):
    best = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--json")
    eff = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"],
                   "--efficiency", "0.2", "--json")
    top = max(p["speedup"] for p in best["predictions"])
    k = eff["preferred_nodes"]
    assert k < best["preferred_nodes"]
    assert eff["predictions"][k - 1]["speedup"] >= 0.8 * top
    assert all(p["speedup"] < 0.8 * top for p in eff["predictions"][: k - 1])


def test_co_runner(capsys, samples):
    alone = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--json")
    co = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"],
                  "--co-run", samples["memory"], "--co-nodes", "3", "--json")
    assert len(co["predictions"]) == K - 3
    assert co["co_runner"] == {"nodes": 3, "node_ids": [5, 6, 7]}
    assert all(c["speedup"] < a["speedup"] for c, a in zip(co["predictions"], alone["predictions"]))
    cpu = run_json(capsys, "numa", "--machine", "opteron6380", "--sample", samples["balanced"],
                   "--co-run", samples["compute"], "--co-nodes", "3", "--json")
    assert [p["speedup"] for p in cpu["predictions"]] == pytest.approx(
        [p["speedup"] for p in alone["predictions"][: K - 3]])


def test_table_and_raw_counts(capsys, samples):
    assert main(["numa", "--machine", "opteron6380", "--sample", samples["raw"]]) == 0
    out = capsys.readouterr().out
    # the best node count is named as predict names it: fastest
    assert "nodes  cores  speedup" in out and "fastest:" in out and "preferred" not in out
    assert "note: work cycles W =" in out and "split by the DRAM request ratio" in out


def test_errors(capsys, samples, tmp_path):
    bad = write(tmp_path / "bad.json", {"llc": [1], "bus": [1]})
    notjson = tmp_path / "x.json"
    notjson.write_text("{")
    for argv, text in [
        (["numa", "--machine", "nope", "--sample", samples["balanced"]], "no such file or preset"),
        (["numa", "--machine", "opteron6380", "--sample", bad], "has 1 entry"),
        (["numa", "--machine", "opteron6380", "--sample", str(notjson)], "not a JSON sample"),
        (["numa", "--machine", "opteron6380", "--sample", str(tmp_path / "none.json")], "no such file"),
        (["numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--co-nodes", "2"],
         "go together"),
        (["numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--co-run",
          samples["memory"], "--co-nodes", "8"], "leaves no node"),
        (["numa", "--machine", "opteron6380", "--sample", samples["balanced"], "--efficiency", "1.5"],
         "must be in [0, 1)"),
        (["numa", "--machine", "opteron6380"], "one of the arguments"),
        (["numa", "--machine", str(notjson), "--sample", samples["balanced"]], "not JSON"),
        (["numa", "--machine", "opteron6380", "--replay", str(notjson)], "not JSON"),
        # fuzz40: an empty name was taken for no --replay: 'internal error: TypeError'
        (["numa", "--machine", "opteron6380", "--replay", ""], "an empty file name"),
    ]:
        err = assert_one_line_error(capsys, argv)
        assert text in err, (argv, err)


def test_replay(capsys, tmp_path):
    """A recorded region (as corecast run --target-machine writes it) predicted again for
    another machine; events without NUMA inputs are skipped."""
    event = {"event": "region", "name": "loop", "object": "prog",
             "predicted_nodes": [{"nodes": 1, "cores": 16, "speedup": 1.0},
                                 {"nodes": 2, "cores": 32, "speedup": 1.9}],
             "numa": {"inputs": {"team_times": [[1, 1.0], [2, 0.6]]}, "sync": [1.0, 2.0]}}
    path = tmp_path / "run.jsonl"
    summary = {"event": "summary", "numa": {"nodes": 1, "node_cpus": [2], "measured": []}}
    path.write_text(json.dumps(summary) + "\n" + json.dumps(event) + "\n")
    out = run_json(capsys, "numa", "--machine", "opteron6380", "--replay", str(path), "--json")
    (region,) = out["regions"]
    assert region["name"] == "loop" and region["fitted"] == ["llc", "bus", "mct"]
    assert len(region["predictions"]) == K and region["predictions"][0]["speedup"] == pytest.approx(1.0)
    assert region["predictions"][1]["speedup"] < 2.0  # the fitted traffic costs something
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"event": "summary"}) + "\n")
    assert "no region with NUMA inputs" in assert_one_line_error(
        capsys, ["numa", "--machine", "opteron6380", "--replay", str(empty)])


def test_replay_names_the_count_it_prints(capsys, tmp_path):
    """Without --efficiency the replayed node count is the fastest and is printed so; with
    it, the fewest nodes within that share of it, printed as preferred (as the sample
    report names them).  It was printed as 'fastest' either way."""
    event = {"event": "region", "name": "loop", "object": "prog",
             "predicted_nodes": [{"nodes": 1, "cores": 16, "speedup": 1.0}],
             "numa": {"inputs": {"team_times": [[1, 1.0], [2, 0.55]]}}}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(event) + "\n")
    best = run_json(capsys, "numa", "--machine", "opteron6380", "--replay", str(path), "--json")
    within = run_json(capsys, "numa", "--machine", "opteron6380", "--replay", str(path), "--json",
                      "--efficiency", "0.5")
    k, k_eff = best["regions"][0]["preferred_nodes"], within["regions"][0]["preferred_nodes"]
    assert k_eff < k  # the premise: the efficiency names another count
    assert main(["numa", "--machine", "opteron6380", "--replay", str(path)]) == 0
    assert f"fastest {k}\n" in capsys.readouterr().out
    assert main(["numa", "--machine", "opteron6380", "--replay", str(path), "--efficiency", "0.5"]) == 0
    text = capsys.readouterr().out
    # the fastest beside it, as the sample report has it (session newuser32)
    assert f"preferred (within 50%) {k_eff} (fastest {k})\n" in text


def test_replay_refuses_a_newer_schema(capsys, tmp_path):
    """numa --replay reads what replay and merge read: a line of a schema this corecast
    does not know is one error naming it, not predicted as if it were understood."""
    event = {"event": "region", "schema": 99, "name": "loop", "object": "prog",
             "predicted_nodes": [{"nodes": 1, "cores": 16, "speedup": 1.0}],
             "numa": {"inputs": {"team_times": [[1, 1.0], [2, 0.6]]}, "sync": [1.0, 2.0]}}
    path = tmp_path / "newer.jsonl"
    path.write_text(json.dumps(event) + "\n")
    err = assert_one_line_error(capsys, ["numa", "--machine", "opteron6380", "--replay", str(path)])
    assert "line 1" in err and "schema 99" in err and "newer corecast" in err, err
    assert main(["replay", str(path)]) == 2  # as replay refuses it
    capsys.readouterr()


def test_machine_commands(capsys, tmp_path):
    assert main(["machine", "presets"]) == 0
    out = capsys.readouterr().out
    assert "opteron6380" in out and "two-socket" in out
    assert main(["machine", "show", "two-socket"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["nodes"] == 2 and shown["bus_delay"] == [[3.0, 5.5], [5.5, 3.0]]
    dest = tmp_path / "here.json"
    assert main(["machine", "detect", "-o", str(dest), "--delays", "two-socket"]) == 0
    here = json.loads(dest.read_text())
    assert here["nodes"] >= 1 and here["bus_delay"][0][0] == 3.0
    # the detected file works as a machine for the model
    sample = write(tmp_path / "s.json", {"llc": [0.001] * here["nodes"], "bus": [0.001] * here["nodes"]})
    assert main(["numa", "--machine", str(dest), "--sample", sample]) == 0
    capsys.readouterr()
    calib = write(tmp_path / "calib.json", {"bus_delay_by_hops": [2.0, 3.0], "controller_delay": 7.0})
    assert main(["machine", "detect", "--delays", calib]) == 0
    assert json.loads(capsys.readouterr().out)["controller_delay"] == 7.0
    badcal = write(tmp_path / "badcal.json", {"bus_delay_by_hops": [-1], "controller_delay": 7.0})
    assert "> 0" in assert_one_line_error(capsys, ["machine", "detect", "--delays", badcal])
    assert "no such file or preset" in assert_one_line_error(capsys, ["machine", "show", "nope"])
    assert "cannot write" in assert_one_line_error(
        capsys, ["machine", "detect", "-o", str(tmp_path / "no/dir/m.json")])
