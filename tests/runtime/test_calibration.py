"""The machine calibration (``corecast calibrate``, model/machine/calibration.py): the file it
writes, the choice of curve a region's evidence makes (model/runtime/evidence.py), how a
run and ``replay --machine`` apply it, and files that cannot be used (one line, never a
failed prediction).  No test here depends on how fast the machine is: the choice is made
on synthetic samples, and the real kernels are checked for shape only."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.io.settings import calibration_path
from corecast.model.machine import calibration as machine
from corecast.model.runtime import evidence, predictor
from corecast.model.runtime.history import BASIS_LEN, RegionHistory
from corecast.tools.replay import replay, replay_process
from corecast.tools.samples import read_recording

from .helpers import clean_env, events, read_lines, run
from .test_contention import region

RECORDING = Path(__file__).resolve().parents[1] / "data" / "recordings" / "schema1-npb-mg.A-4.jsonl"
EFFICIENCY = [[1, 1.0], [2, 0.97], [4, 0.94], [8, 0.91], [16, 0.82]]
GBPS = [[1, 10.0], [2, 19.0], [4, 32.0], [8, 40.0], [16, 48.0]]  # e_b(16) = 0.3


def calibration(cpus: int = 16, model: str = "a cpu", rows=None, gbps=None) -> str:
    doc = {machine.KEY: machine.SCHEMA, "machine": {"cpus": cpus, "cpu_model": model},
           "compute": {"efficiency": EFFICIENCY if rows is None else rows}}
    if gbps is not False:
        doc["bandwidth"] = {"gbps": GBPS if gbps is None else gbps}
    return json.dumps(doc)


def this_machine(tmp_path: Path, rows=None) -> Path:
    path = tmp_path / "calibration.json"
    path.write_text(calibration(os.sysconf("SC_NPROCESSORS_ONLN"), machine.cpu_model(), rows))
    return path


def corecast(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecast", *args], capture_output=True, text=True,
                          timeout=120, env=env)


# ---- the file -----------------------------------------------------------------------------

def test_efficiency_is_log_linear_between_measured_counts_and_held_beyond():
    cal = machine.parse(calibration()).compute
    assert cal.at(1) == 1.0 and cal.at(16) == pytest.approx(0.82) and cal.at(64) == pytest.approx(0.82)
    assert cal.at(2) == pytest.approx(0.97)
    assert 0.91 > cal.at(12) > 0.82
    assert cal.at(12) == pytest.approx((0.91 * 0.82) ** 0.5 * (0.82 / 0.91) ** (0.585 - 0.5), rel=1e-3)


def test_the_bandwidth_curve_is_each_threads_share_of_the_triads_bandwidth():
    cal = machine.parse(calibration())
    assert cal.bandwidth.counts == [1, 2, 4, 8, 16]
    assert cal.bandwidth.efficiency == pytest.approx([1.0, 0.95, 0.8, 0.5, 0.3])
    again = machine.parse(cal.to_json())  # what a run records, read back by replay
    assert again.bandwidth.efficiency == pytest.approx(cal.bandwidth.efficiency)
    assert again.compute.efficiency == pytest.approx(cal.compute.efficiency)
    assert machine.parse(calibration(gbps=False)).bandwidth is None


def test_a_file_not_measured_from_one_thread_alone_is_put_on_that_footing():
    cal = machine.parse(calibration(rows=[[1, 2.0], [4, 1.5]]))
    assert cal.compute.efficiency == [1.0, 0.75]


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ('{"corecast_calibration": 3}', "a newer corecast wrote it"),
    ('{"corecast_calibration": "2"}', "not a corecast calibration"),
    (json.dumps({machine.KEY: 1, "machine": {"cpus": 16, "cpu_model": ""}, "efficiency": EFFICIENCY}),
     "remove it; runs need none"),
    (json.dumps({machine.KEY: 2, "machine": {"cpus": 16, "cpu_model": ""}}), 'neither "compute" nor "bandwidth"'),
    (calibration(rows=[]), "[threads, efficiency] pairs"),
    (calibration(rows=[[1, 1.0], [1, 0.9]]), "ascending"),
    (calibration(rows=[[2, 1.0]]), "must start at 1 thread"),
    (calibration(rows=[[1, 1.0], [2, 0]]), "(0, 2]"),
    (calibration(rows=[[1, 1.0], [2, float("nan")]]), "(0, 2]"),  # Python's JSON reads NaN
    (calibration(rows=[[True, 1.0]]), "[threads, efficiency] pairs"),
    (calibration(rows=[[1, 1.0], [2, 10 ** 400]]), "(0, 2]"),  # fuzz40: was OverflowError
    (calibration(gbps=[[1, 10 ** 400]]), "bandwidth gbps at 1 threads must be positive"),
    # review40: a count past float range was 'internal error: OverflowError' (replay --machine)
    (calibration(gbps=[[1, 10.0], [10 ** 400, 50.0]]), '"bandwidth" count a count of 401 digits is above 100000'),
    (calibration(rows=[[1, 1.0], [100_001, 0.5]]), '"compute" count 100001 is above 100000'),
    (calibration(gbps=[[1, 10.0], [2, -1.0]]), "bandwidth gbps at 2 threads must be positive"),
    (calibration(gbps={"1": 10.0}), "[threads, gbps] pairs"),
    (json.dumps({machine.KEY: 2, "machine": {"cpus": 0, "cpu_model": ""}, "compute": {"efficiency": EFFICIENCY}}),
     "cpus"),
])
def test_files_that_cannot_be_used_say_why(text, message):
    with pytest.raises(machine.CalibrationError) as err:
        machine.parse(text)
    assert message in str(err.value) and "\n" not in str(err.value)


# ---- the choice -----------------------------------------------------------------------------

@pytest.mark.parametrize("growth, stalls, chosen, why", [
    (1.30, {}, "bandwidth", "work/call x1.30"),
    (1.10, {}, "bandwidth", "work/call x1.10"),
    (1.02, {}, "compute", "work/call x1.02"),
    (0.97, {}, "compute", "work/call x0.97"),
    (1.07, {}, None, "work/call x1.07, neither"),   # between the two: no curve
    (0.80, {}, None, "work/call x0.80, neither"),   # shrank: the caches, not the machine
    (None, {}, None, "no evidence"),
    (1.30, {"imbalance": 4.4}, None, "waits 52% of its time"),  # bound by its barrier
    (1.30, {"imbalance": 2.4}, "bandwidth", "work/call x1.30"),  # 38%: its work still dominates
    (1.02, {"omp_barrier": 1.0, "critical": 1.2}, None, "waits 55% of its time"),
])
def test_the_evidence_chooses_the_curve(growth, stalls, chosen, why):
    r = region(threads=4, busy=4.0, **stalls)
    assert evidence.choose(r, growth) == (chosen, why)


def test_serialised_work_counts_as_waiting():
    assert evidence.choose(region(threads=4, busy=4.0, serial=2.5), 1.0)[0] is None
    assert evidence.choose(region(threads=4, busy=4.0, serial=0.5), 1.0)[0] == "compute"


def with_probes(r: dict, t1_per_call: float | None) -> tuple[dict, dict]:
    """``r`` (100 calls at 4 threads, 10 ms wall each) after probes at 1 thread that took
    ``t1_per_call`` each (None: no probes), with the histories the bridge keeps."""
    hist = [(4, 100, 1.0)] + ([(1, 2, 2 * t1_per_call)] if t1_per_call else [])
    r = dict(r, hist=hist, calls=100, requested=4, probes={1: 2} if t1_per_call else {})
    h = RegionHistory()
    if t1_per_call:
        h.update(dict(r, hist=hist[1:]))
    return r, {(r["name"], r["object"]): h}


def predict(r: dict, histories: dict, cal) -> object:
    return predictor.predict_region_threads(r, 16, 16, 16, histories, machine=cal)


@pytest.mark.parametrize("t1, kind, factor", [
    (0.030, "bandwidth", 0.3 / 0.8),   # work/call grew 4 x 10 ms / 30 ms = 1.33 from 1 to 4 threads
    (0.040, "compute", 0.82 / 0.94),   # work/call flat
    (None, None, 1.0),                 # no probes: no evidence
])
def test_a_region_gets_the_curve_its_evidence_names_and_no_other(t1, kind, factor):
    r, hist = with_probes(region(threads=4, busy=4.0, wall=1.0, calls=100), t1)
    plain = predict(r, hist, None)
    _, hist = with_probes(region(threads=4, busy=4.0, wall=1.0, calls=100), t1)
    pred = predict(r, hist, machine.parse(calibration()))
    assert pred.speedup[0] == 1.0  # T(1) is the anchored one
    assert pred.speedup[15] / plain.speedup[15] == pytest.approx(factor, rel=1e-6)
    assert pred.speedup[3] == pytest.approx(plain.speedup[3], rel=1e-6)  # the sampled count keeps its time
    # every count but 1 takes the curve's factor e(n) / e(4), not only the target (the
    # counts between, 2 among them, are the table's S@2 and S@8)
    curve = machine.parse(calibration()).curve(kind) if kind else None
    for i, n in enumerate(pred.threads):
        want = curve.at(n) / curve.at(4) if curve and n > 1 else 1.0
        assert pred.speedup[i] / plain.speedup[i] == pytest.approx(want, rel=1e-6), n
    assert len(pred.basis) <= BASIS_LEN
    if kind:
        assert pred.basis.startswith("contention + bandwidth: work/call x")  # the evidence
        assert pred.basis.endswith(f" (probes); {kind} curve x{factor:.2f} 4->16")
    else:
        assert pred.basis.endswith("; no machine curve: no evidence")


def test_a_curve_the_file_lacks_is_not_applied_and_said_so():
    r, hist = with_probes(region(threads=4, busy=4.0, wall=1.0, calls=100), 0.030)
    pred = predict(r, hist, machine.parse(calibration(gbps=False)))
    assert "no machine curve: bandwidth-bound, that curve not measured" in pred.basis


def test_a_plain_threads_process_has_no_evidence():
    from .test_contention import process

    proc = process(threads=4, wall=1.0, cpu=3.6)
    plain, = predictor.predict_window([proc], 16, 16, 16, {})
    pred, = predictor.predict_window([proc], 16, 16, 16, {}, machine=machine.parse(calibration()))
    assert pred.speedup == plain.speedup and pred.basis.endswith("; no machine curve: no evidence")


def test_a_run_uses_its_own_machines_file_only(tmp_path):
    here = os.sysconf("SC_NPROCESSORS_ONLN")
    ours = this_machine(tmp_path)
    default = Path(calibration_path())
    assert machine.for_this_machine(here, str(ours), str(default))[0] is not None
    assert machine.for_this_machine(here, "", str(ours)) == (None, "")  # CORECAST_MACHINE_FILE="": none
    other = tmp_path / "other.json"
    other.write_text(calibration(here + 1, machine.cpu_model()))
    cal, note = machine.for_this_machine(here, str(other), str(default))
    assert cal is None and f"measured on {here + 1} CPUs" in note
    cal, note = machine.for_this_machine(here, str(tmp_path / "missing.json"), str(default))
    assert cal is None and "missing.json" in note
    quick = tmp_path / "quick.json"  # `corecast calibrate --quick` writes the default file too
    quick.write_text(json.dumps({**json.loads(ours.read_text()), "quick": True}))
    cal, note = machine.for_this_machine(here, str(quick), str(default))
    assert cal is None and "measured with --quick" in note
    one = tmp_path / "one.json"  # `corecast calibrate --max 1`: one point, no curve
    doc = json.loads(ours.read_text())
    doc["compute"]["efficiency"] = doc["compute"]["efficiency"][:1]
    doc["bandwidth"]["gbps"] = doc["bandwidth"]["gbps"][:1]
    one.write_text(json.dumps(doc))
    assert len(machine.read(str(one)).compute.counts) == 1  # the premise: it reads
    cal, note = machine.for_this_machine(here, str(one), str(default))
    assert cal is None and "measured one thread only (no curve)" in note
    # unset: the default path, when there is a file there ($XDG_CACHE_HOME is the test's own)
    assert machine.for_this_machine(here, None, str(default)) == (None, "")
    default.parent.mkdir(parents=True, exist_ok=True)
    default.write_text(ours.read_text())
    try:
        assert machine.for_this_machine(here, None, str(default))[0] is not None
    finally:
        default.unlink()


def test_replay_with_the_machine_file(tmp_path):
    """A recording without probes (npb mg.A sampled at 4 threads) holds no evidence of a
    curve: the machine file changes no prediction, and every outermost region's basis
    says why."""
    path = tmp_path / "cal.json"
    path.write_text(calibration())
    plain = replay(str(RECORDING), 16)[0]
    calibrated = replay(str(RECORDING), 16, str(path))[0]
    outer = 0
    for region, p, q in zip(plain.recorded.regions, plain.predictions, calibrated.predictions):
        assert q.speedup == p.speedup
        if region["name"] != "process" and not region["nested"]:
            outer += 1
            assert re.search(r"; no machine curve: (no evidence|waits \d+% of its time)$", q.basis), q.basis
    assert outer > 0
    out = corecast("replay", "--machine", str(path), "--target", "16", "--json", str(RECORDING))
    assert out.returncode == 0, out.stderr
    proc = json.loads(out.stdout)["processes"][0]
    assert proc["predicted"][-1]["speedup"] == pytest.approx(calibrated.process[1].speedup[15], rel=1e-3)


def test_replay_says_when_the_machine_file_may_not_describe_the_recordings_machine(tmp_path):
    """A --quick calibration measures nothing, and one measured on 2 CPUs is not the
    16-core recording's machine: replay still uses the file (the user named it), and says
    so in the table and the JSON, as predict's warnings do."""
    same, other = tmp_path / "same.json", tmp_path / "other.json"
    same.write_text(calibration(16))
    doc = json.loads(calibration(2))
    doc["quick"] = True
    other.write_text(json.dumps(doc))
    assert replay(str(RECORDING), 16, str(same))[0].warnings == []
    table = corecast("replay", "--machine", str(other), "--target", "16", str(RECORDING))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].startswith("warning: the machine calibration is a --quick one")
    assert lines[2] == ("warning: the machine calibration was measured on 2 CPUs, the recording's machine "
                        "had 16: its curves may be another machine's")
    out = corecast("replay", "--machine", str(other), "--target", "16", "--json", str(RECORDING))
    assert len(json.loads(out.stdout)["processes"][0]["warnings"]) == 2
    assert machine.parse(machine.parse(json.dumps(doc)).to_json()).quick  # a run records it as such


@pytest.mark.parametrize("content", ["{}", None, json.dumps({machine.KEY: 1, "machine": {"cpus": 1, "cpu_model": ""},
                                                              "efficiency": [[1, 1.0]]})])
def test_replay_with_a_bad_machine_file_is_one_line(tmp_path, content):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    out = corecast("replay", "--machine", str(path), str(RECORDING))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "cal.json" in out.stderr and "Traceback" not in out.stderr


def test_a_recording_with_a_bad_calibration_is_one_line(tmp_path):
    lines = RECORDING.read_text().splitlines()
    bad = [json.dumps({**json.loads(line), "machine_calibration": {"corecast_calibration": 2}})
           if json.loads(line)["event"] == "summary" else line for line in lines]
    assert bad != lines
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(bad) + "\n")
    out = corecast("replay", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "machine_calibration" in out.stderr


def test_a_recording_that_used_a_schema_1_calibration_is_replayed_without_it(tmp_path):
    old = {machine.KEY: 1, "machine": {"cpus": 16, "cpu_model": "x"}, "efficiency": EFFICIENCY}
    lines = [json.dumps({**json.loads(line), "machine_calibration": old}) if json.loads(line)["event"] == "summary"
             else line for line in RECORDING.read_text().splitlines()]
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(lines) + "\n")
    (rec,) = read_recording(str(path))
    assert rec.calibration is None
    assert replay(str(path), 16)[0].process[1].speedup == replay(str(RECORDING), 16)[0].process[1].speedup


def test_a_fifo_named_as_the_machine_file_does_not_hold_up_a_run(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cal, note = machine.for_this_machine(os.sysconf("SC_NPROCESSORS_ONLN"), str(fifo), "")
    assert cal is None and "not a regular file" in note


def test_a_quick_calibration_keeps_a_full_one(tmp_path):
    """`corecast calibrate --quick` (to see the kernels work) replaced the calibration at
    the default path, measured for real, with figures that mean nothing."""
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    written = tmp_path / "cache" / "corecast" / "calibration.json"
    written.parent.mkdir(parents=True)
    written.write_text(calibration(2))
    out = corecast("calibrate", "--max", "2", "--quick", env=env)
    if out.returncode == 2 and "the machine was busy" in out.stderr:
        pytest.skip("this machine is busy itself: calibrate said so")
    assert out.returncode == 0, out.stderr
    assert written.read_text() == calibration(2)
    assert out.stderr.startswith(f"corecast: warning: not written: {written} holds a full calibration")
    assert "written to" not in out.stdout
    again = corecast("calibrate", "--max", "2", "--quick", "-o", str(written), env=env)  # told to: written
    if again.returncode == 0:
        assert json.loads(written.read_text())["quick"] is True


def test_calibrate_writes_a_file_runs_use(tmp_path):
    """The compiled kernels, run for real but tiny (--quick): shapes and sanity only."""
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = corecast("calibrate", "--max", "2", "--quick", env=env)
    if out.returncode == 2 and "the machine was busy" in out.stderr:
        # a loaded machine is told apart, as calibrate must (one line, no file); the test
        # of a busy measurement is test_a_busy_measurement_is_one_line_and_no_file
        assert out.stderr.count("\n") == 1
        pytest.skip("this machine is busy itself: calibrate said so")
    assert out.returncode == 0, out.stderr
    written = tmp_path / "cache" / "corecast" / "calibration.json"
    assert f"written to {written}" in out.stdout and "threads unbound" in out.stdout
    doc = json.loads(written.read_text())
    assert doc[machine.KEY] == 2 and doc["placement"] == "unbound" and doc["quick"] is True
    assert doc["compute"]["gflops_one_thread"] > 0 and doc["bandwidth"]["array_bytes"] > 0
    assert all(g > 0 for _, g in doc["bandwidth"]["gbps"])
    cal = machine.read(str(written))
    assert cal.compute.counts == cal.bandwidth.counts == [1, 2]
    assert cal.compute.efficiency[0] == cal.bandwidth.efficiency[0] == 1.0
    assert all(e > 0 for e in cal.compute.efficiency + cal.bandwidth.efficiency)
    assert cal.cpus == os.sysconf("SC_NPROCESSORS_ONLN") and cal.cpu_model == machine.cpu_model()
    again = corecast("calibrate", "--max", "1", "--quick", "--json", "-o", str(tmp_path / "one.json"), env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["compute"]["efficiency"] == [[1, 1.0]]
    assert machine.read(str(tmp_path / "one.json")).bandwidth.counts == [1]


def test_calibrate_places_its_threads_as_openmp_would(tmp_path):
    env = clean_env(OMP_PROC_BIND="close", OMP_PLACES="cores")
    out = corecast("calibrate", "--max", "1", "--quick", "--json", "-o", "-", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["placement"].startswith("close, ")


def test_calibrate_with_fewer_threads_than_asked_is_one_line(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no team to limit")
    out = corecast("calibrate", "--max", "2", "--quick", "-o", str(tmp_path / "c.json"),
                   env=clean_env(OMP_THREAD_LIMIT="1"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "fewer than 2 threads" in out.stderr


def test_calibrate_into_a_missing_folder_says_so_before_measuring(tmp_path, monkeypatch, capsys):
    # Like sweep's outputs: the whole measurement ran first, then "cannot write the
    # calibration: No such file or directory".
    from corecast import cli
    from corecast.tools import calibrate as cal

    def measured(*args, **kwargs):
        raise AssertionError("measured before the output's folder was checked")

    monkeypatch.setattr(cal, "measure", measured)
    path = tmp_path / "missing" / "c.json"
    assert cli.main(["calibrate", "--max", "1", "--quick", "-o", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"corecast: error: {path}: its folder does not exist\n"


def test_calibrate_writes_the_file_runs_read(tmp_path, monkeypatch, capsys):
    # CORECAST_MACHINE_FILE named the file runs read, but calibrate wrote the default one:
    # the next run said "machine calibration not used: ...: No such file or directory"
    from corecast import cli
    from corecast.tools import calibrate as cal

    cpus = os.sysconf("SC_NPROCESSORS_ONLN")
    measured = calibration(cpus, machine.cpu_model())
    monkeypatch.setattr(cal, "measure", lambda *args, **kwargs: json.loads(measured))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    named = tmp_path / "mine.json"
    monkeypatch.setenv("CORECAST_MACHINE_FILE", str(named))
    assert cli.main(["calibrate", "--json"]) == 0
    assert json.loads(named.read_text()) == json.loads(measured)
    assert not os.path.exists(calibration_path())
    used, note = machine.for_this_machine(cpus, os.environ["CORECAST_MACHINE_FILE"], calibration_path())
    assert used is not None and note == ""
    # set empty, runs read none: writing the default would be a file no run reads
    monkeypatch.setenv("CORECAST_MACHINE_FILE", "")
    capsys.readouterr()
    assert cli.main(["calibrate", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "CORECAST_MACHINE_FILE is set empty" in err and "-o FILE" in err
    assert not os.path.exists(calibration_path())
    assert cli.main(["calibrate", "--json", "-o", str(tmp_path / "told.json")]) == 0  # -o wins
    assert (tmp_path / "told.json").exists()


def test_calibrate_into_a_folder_is_one_line(tmp_path):
    out = corecast("calibrate", "--max", "1", "--quick", "-o", str(tmp_path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")  # $XDG_CACHE_HOME/corecast cannot be made under a file
    out = corecast("calibrate", "--max", "1", "--quick", env=clean_env(XDG_CACHE_HOME=str(blocked)))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "internal error" not in out.stderr
    assert "cannot make the folder" in out.stderr


def test_a_run_puts_this_machines_calibration_into_its_predictions(build, lib, tmp_path):
    """The exit report says the predictions are for a calibrated machine and the sampled
    region (no probes: no evidence) says the curves were not applied; the run records the
    calibration, so replay prints what the run printed; a file measured elsewhere is named
    on stderr and left out."""
    prog = build("calib_teams", TEAMS_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2")
    outs = {}
    for name, path in (("none", ""), ("ours", this_machine(tmp_path, [[1, 1.0], [2, 0.9], [16, 0.45]])),
                       ("other", tmp_path / "other.json")):
        if name == "other":
            path.write_text(calibration(os.sysconf("SC_NPROCESSORS_ONLN") + 1, "elsewhere"))
        out = tmp_path / f"{name}.jsonl"
        proc = run([prog], env=env, preload=lib, output=out, target="16", machine_file=str(path))
        assert proc.returncode == 0, proc.stderr
        outs[name] = (proc, read_lines(out))
    for name, (proc, lines) in outs.items():
        (summary,) = events(lines, "summary")
        assert summary["model"] == "ok"
        assert summary["predicted_for"]["source"] == ("target, calibrated" if name == "ours" else "target")
        # a warning as the run's others are (it lacked "warning:")
        assert ("corecast: warning: machine calibration not used" in proc.stderr.decode()) == (name == "other")

    (region,) = [e for e in outs["ours"][1] if e["event"] == "region" and e["name"] != "process"]
    live = [p["speedup"] for p in region["predicted"]]
    # which reason depends on the machine's load (its imbalance); a curve it cannot get
    assert re.search(r"; no machine curve: (no evidence|waits \d+% of its time)$", region["basis"])
    (summary,) = events(outs["ours"][1], "summary")
    assert summary["machine_calibration"]["compute"]["efficiency"] == [[1, 1.0], [2, 0.9], [16, 0.45]]
    assert summary["machine_calibration"]["bandwidth"]["gbps"] == GBPS
    assert "machine_calibration" not in events(outs["none"][1], "summary")[0]

    (rec,) = read_recording(str(tmp_path / "ours.jsonl"))
    assert rec.calibration is not None
    (again,) = replay(str(tmp_path / "ours.jsonl"), 16)
    pred = next(p for r, p in zip(again.recorded.regions, again.predictions) if r["name"] != "process")
    assert pred.speedup == pytest.approx(live, rel=0.01) and pred.basis == region["basis"]
    assert replay_process(rec, 16, machine=None).process[1].speedup == pytest.approx(again.process[1].speedup)


PYTHON_HOST = """
import threading, time
def work():
    t = time.perf_counter()
    while time.perf_counter() - t < 0.3:
        pass
threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
"""


def test_a_python_host_uses_the_calibration_too(lib, tmp_path):
    """A Python host starts the model with an empty sample (no machine in it): the
    calibration is looked up with the first real one."""
    out = tmp_path / "py.jsonl"
    proc = run([sys.executable, "-c", PYTHON_HOST], preload=lib, output=out, target="8",
               machine_file=str(this_machine(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    assert b"not used" not in proc.stderr
    (summary,) = events(read_lines(out), "summary")
    assert summary["predicted_for"]["source"] == "target, calibrated"


TEAMS_C = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int k = 0; k < 400; k++) {
#pragma omp parallel for reduction(+ : s) schedule(static)
        for (int i = 0; i < 200000; i++)
            s += (i % 7) * 0.5;
    }
    printf("%g\n", s);
    return 0;
}
"""


# ---- hardware counters: the first signal, and the roofline --------------------------------
# An injected counter source: the process record's ``hardware`` counts, as a run on a
# machine with a PMU records them (record.region_from_json / hardware_from_struct).

def counted(proc: dict, llc_misses: float) -> dict:
    return dict(proc, hardware={"cycles": 4e9, "instructions": 3e9, "llc_misses": llc_misses})


@pytest.mark.parametrize("memory, growth, stalls, chosen, why", [
    (0.80, None, {}, "bandwidth", "memory 80% of the triad's (counters)"),
    (0.80, 1.02, {}, "bandwidth", "memory 80% of the triad's (counters)"),  # counters first
    (0.05, None, {}, "compute", "memory 5% of the triad's (counters)"),
    (0.05, 1.30, {}, "compute", "memory 5% of the triad's (counters)"),
    (0.30, None, {}, None, "no evidence"),                  # in between: the work per call decides
    (0.30, 1.30, {}, "bandwidth", "work/call x1.30"),
    (0.80, None, {"imbalance": 4.4}, None, "waits 52% of its time"),  # its barrier binds first
])
def test_counters_are_the_first_evidence(memory, growth, stalls, chosen, why):
    r = region(threads=4, busy=4.0, **stalls)
    assert evidence.choose(r, growth, memory) == (chosen, why)


def test_the_memory_share_is_the_runs_traffic_over_the_triads_bandwidth():
    from .test_contention import process

    cal = machine.parse(calibration())
    proc = counted(process(threads=4, wall=2.0, cpu=7.0), 1e9)  # 64 GB in 2 s: 32 GB/s
    assert evidence.memory_share(proc, 4, cal) == pytest.approx(1.0)   # the triad's 32 GB/s at 4
    assert evidence.memory_share(proc, 16, cal) == pytest.approx(32 / 48)
    assert evidence.memory_share(process(threads=4, wall=2.0, cpu=7.0), 4, cal) is None  # no PMU
    assert evidence.memory_share(proc, 4, machine.parse(calibration(gbps=False))) is None


def window(llc_misses: float | None, cal) -> tuple[object, object]:
    """A region of 100 calls at 4 threads (no probes, no history) and its process, with
    the run's LLC misses where a PMU was read; their predictions."""
    from .test_contention import process

    r = dict(region(threads=4, busy=4.0, wall=1.0, calls=100), hist=[(4, 100, 1.0)], requested=4)
    proc = process(threads=4, wall=1.1, cpu=4.1)
    if llc_misses is not None:
        proc = counted(proc, llc_misses)
    return tuple(predictor.predict_window([r, proc], 16, 16, 16, {}, machine=cal))


def test_a_region_the_counters_call_bandwidth_bound_gets_the_bandwidth_curve():
    cal = machine.parse(calibration())
    plain, _ = window(None, cal)
    # 25.6 GB in 1.1 s: 23 GB/s, 73% of the triad's 32 GB/s at 4 threads
    pred, _ = window(4e8, cal)
    assert plain.basis.endswith("; no machine curve: no evidence")
    assert pred.basis.endswith("; bandwidth curve x0.37 4->16")
    assert pred.speedup[15] / plain.speedup[15] == pytest.approx(0.3 / 0.8, rel=1e-6)
    assert pred.speedup[3] == pytest.approx(plain.speedup[3], rel=1e-6)
    # 0.64 GB: 2% of it: compute-bound
    pred, _ = window(1e7, cal)
    assert pred.basis.endswith("; compute curve x0.87 4->16")


def test_the_roofline_holds_the_process_under_the_machines_bandwidth():
    """T(n) >= bytes / bw(n): S(16) <= T(1) x 32 GB/s / bytes (a triad saturated from 4
    threads on), and nothing changes where the bound does not bind or nothing was counted."""
    cal = machine.parse(calibration(rows=[[1, 1.0], [16, 1.0]], gbps=[[1, 10.0], [4, 32.0], [16, 32.0]]))
    _, plain = window(None, cal)
    _, pred = window(1e7, cal)   # 0.64 GB: the roofline is far off
    assert pred.speedup == pytest.approx(plain.speedup) and "roofline" not in pred.basis
    _, pred = window(2e8, cal)   # 12.8 GB in 1.1 s: 36% of the triad's bandwidth at 4, no curve
    assert "roofline 12.8 GB at 32 GB/s" in pred.basis
    t1 = pred.speedup[3] * 1.1   # the measured time at 4 threads: 1.1 s
    assert pred.speedup[15] == pytest.approx(t1 * 32e9 / 12.8e9, rel=1e-6)
    assert pred.speedup[15] < plain.speedup[15] and pred.high[15] >= pred.speedup[15] >= pred.low[15]
    assert pred.speedup[3] == pytest.approx(plain.speedup[3], rel=1e-6)  # the measured count keeps its time
    # The fastest count is the capped curve's: 14, where the cap starts to bind (S(14) =
    # S(16)), not the uncapped curve's 16, which the exit table would otherwise name.
    assert pred.speedup[13] == pytest.approx(pred.speedup[15], rel=1e-9)
    assert pred.speedup[12] < 0.99 * pred.speedup[15]
    assert pred.fastest == 14 and plain.fastest == 16


def test_replay_reads_the_counters_a_recording_holds(tmp_path):
    """The injected source end to end: a recording whose process line holds LLC misses
    (as a run with a PMU writes them) replays with the counters as evidence."""
    lines = [json.loads(line) for line in RECORDING.read_text().splitlines() if line.strip()]
    for d in lines:
        if d.get("event") == "process":
            d["counters"]["llc_misses"] = 4e8
    path = tmp_path / "counted.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    cal = tmp_path / "cal.json"
    cal.write_text(calibration())
    (proc,) = read_recording(str(path))
    assert proc.regions[-1]["hardware"] == {"llc_misses": 4e8}
    rep = replay(str(path), machine=str(cal))[0]
    assert any("(counters)" in p.basis or "curve" in p.basis for p in rep.predictions[:-1])


def test_a_note_cuts_the_basis_between_items_not_inside_a_word():
    """The C field holds BASIS_LEN characters: a note added to a long basis cuts it at its
    last whole item or word, so the report never shows a word cut in two."""
    from corecast.model.runtime.evidence import with_note
    from corecast.model.runtime.history import BASIS_LEN

    basis = "contention model: lock queues, imbalance, serial work, oversubscription; bandwidth unmeasured"
    cut = with_note(basis, "; no evidence at 1 thread")
    assert cut == "contention model: lock queues, imbalance, serial work; no evidence at 1 thread"
    assert with_note("short", "; x") == "short; x"
    assert len(with_note("x" * 200, "; n")) == BASIS_LEN  # no separator: cut where it must
    # A clause after a colon goes whole: cut at a word it read "...: more CPU; 3 runtime ...".
    device = "waiting on the device (66% of wall): more CPU threads do not shorten it"
    note = "; 3 runtime threads (1.89s CPU) not the program's"
    assert with_note(device, note) == "waiting on the device (66% of wall)" + note


def test_a_busy_measurement_is_one_line_and_no_file(tmp_path, monkeypatch):
    """A team that beats one thread per thread (the 2-core VM under other sessions' load
    measured 2.09 and 4.94 at 2 threads) is a disturbed measurement: one line, no file,
    rather than a file the reader refuses."""
    from corecast.tools import calibrate as cal

    times = iter([1.0] + [3.0, 1.0] * 10)  # the trial, then one thread 3x slower than two
    monkeypatch.setattr(cal, "_checked", lambda seconds, n, what: next(times))
    with pytest.raises(cal.CalibrateError, match="the machine was busy: 2 threads ran the compute kernel 3.00x"):
        cal.measure(2, quick=True)


def test_a_kernel_run_that_waited_for_cpus_is_refused():
    """disturbed() on synthetic measurements: a kept run whose threads waited for a CPU
    over BUSY_WAIT of their time is the busy machine's curve; one that did not is this
    machine's.  (Before, only a team faster than one thread was told apart, and a loaded
    2-core VM wrote e_c(2) = 0.51.)"""
    from corecast.tools.calibrate import BUSY_WAIT, disturbed

    best = {1: 1.0, 2: 1.9}  # two threads 1.9x slower per thread than one
    quiet = {"compute": {1: 0.0, 2: 0.02}, "bandwidth": {1: 0.0, 2: 0.01}}
    assert disturbed(best, quiet) is None
    busy = {"compute": {1: 0.0, 2: 0.45}, "bandwidth": {1: 0.0, 2: 0.01}}
    assert disturbed(best, busy) == ("at 2 threads the compute kernel's threads waited 45% of their time "
                                     "for a CPU other load held")
    assert "bandwidth kernel" in disturbed(best, {"bandwidth": {1: BUSY_WAIT + 0.01}})
    assert disturbed(best, {"bandwidth": {1: BUSY_WAIT}}) is None
    assert "ran the compute kernel 3.00x" in disturbed({1: 3.0, 2: 1.0}, quiet)


def test_the_kernels_time_what_their_threads_waited_for_a_cpu():
    """The compiled kernels' own account (schedstat's run delay): two threads confined to
    one CPU take turns, so each spends about half its time waiting for it, whatever else
    the machine runs (more
    load only adds waiting).  One thread per CPU of its own is not asserted: load decides."""
    if not os.access("/proc/thread-self/schedstat", os.R_OK):
        pytest.skip("no schedstat: the kernels cannot tell their run delay")
    code = r"""
import ctypes, os, sys
from corecast._native import CALIBRATE
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
lib = ctypes.CDLL(str(CALIBRATE))
lib.cc_cal_compute.argtypes = [ctypes.c_int, ctypes.c_long]
lib.cc_cal_compute.restype = ctypes.c_double
lib.cc_cal_triad.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_int]
lib.cc_cal_triad.restype = ctypes.c_double
lib.cc_cal_waited.restype = ctypes.c_double
assert lib.cc_cal_compute(2, 20_000_000) > 0
compute = lib.cc_cal_waited()
assert lib.cc_cal_triad(2, 4_000_000, 2) > 0
print(compute, lib.cc_cal_waited())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=clean_env(OMP_WAIT_POLICY="passive"))
    assert out.returncode == 0, out.stderr
    compute, triad = map(float, out.stdout.split())
    assert compute > 0.25 and triad > 0.25
