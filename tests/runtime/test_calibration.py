"""The machine calibration (``corecast calibrate``, machine/calibration.py): the file it
writes, how a run and ``replay --machine`` put its e(n) into the one-sample predictions,
and files that cannot be used (one line, never a failed prediction).  No test here
depends on how fast the machine is: only on what was measured being well formed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.io.settings import calibration_path
from corecast.model.machine import calibration as machine
from corecast.model.runtime.predictor import apply_calibration
from corecast.model.runtime.bound import TeamPrediction
from corecast.model.runtime.history import BASIS_LEN
from corecast.tools.replay import replay, replay_process
from corecast.tools.samples import read_recording

from .helpers import clean_env, events, read_lines, run

RECORDING = Path(__file__).resolve().parents[1] / "data" / "recordings" / "schema1-npb-mg.A-4.jsonl"
EFFICIENCY = [[1, 1.0], [2, 0.97], [4, 0.94], [8, 0.91], [16, 0.82]]


def calibration(cpus: int = 16, model: str = "a cpu", rows=None) -> str:
    return json.dumps({machine.KEY: machine.SCHEMA, "machine": {"cpus": cpus, "cpu_model": model},
                       "efficiency": EFFICIENCY if rows is None else rows})


def this_machine(tmp_path: Path, rows=None) -> Path:
    path = tmp_path / "calibration.json"
    path.write_text(calibration(os.sysconf("SC_NPROCESSORS_ONLN"), machine.cpu_model(), rows))
    return path


def corecast(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecast", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_efficiency_is_log_linear_between_measured_counts_and_held_beyond():
    cal = machine.parse(calibration())
    assert cal.at(1) == 1.0 and cal.at(16) == pytest.approx(0.82) and cal.at(64) == pytest.approx(0.82)
    assert cal.at(2) == pytest.approx(0.97)
    assert 0.91 > cal.at(12) > 0.82
    assert cal.at(12) == pytest.approx((0.91 * 0.82) ** 0.5 * (0.82 / 0.91) ** (0.585 - 0.5), rel=1e-3)


def test_a_file_not_measured_from_one_copy_alone_is_put_on_that_footing():
    cal = machine.parse(calibration(rows=[[1, 2.0], [4, 1.5]]))
    assert cal.efficiency == [1.0, 0.75]


@pytest.mark.parametrize("text, message", [
    ("{", "not JSON"),
    ('{"corecast_calibration": 2}', "not a corecast calibration"),
    (calibration(rows=[]), "[threads, efficiency] pairs"),
    (calibration(rows=[[1, 1.0], [1, 0.9]]), "ascending"),
    (calibration(rows=[[2, 1.0]]), "must start at 1 thread"),
    (calibration(rows=[[1, 1.0], [2, 0]]), "(0, 2]"),
    (calibration(rows=[[1, 1.0], [2, float("nan")]]), "(0, 2]"),  # Python's JSON reads NaN
    (calibration(rows=[[True, 1.0]]), "[threads, efficiency] pairs"),
    (json.dumps({machine.KEY: 1, "machine": {"cpus": 0, "cpu_model": ""}, "efficiency": EFFICIENCY}), "cpus"),
])
def test_files_that_cannot_be_used_say_why(text, message):
    with pytest.raises(machine.CalibrationError) as err:
        machine.parse(text)
    assert message in str(err.value)


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
    # unset: the default path, when there is a file there ($XDG_CACHE_HOME is the test's own)
    assert machine.for_this_machine(here, None, str(default)) == (None, "")
    default.parent.mkdir(parents=True, exist_ok=True)
    default.write_text(ours.read_text())
    try:
        assert machine.for_this_machine(here, None, str(default))[0] is not None
    finally:
        default.unlink()


def test_apply_keeps_the_sampled_time_and_scales_the_rest():
    cal = machine.parse(calibration())
    threads = list(range(1, 17))
    speedup = [float(n) for n in threads]
    pred = TeamPrediction(threads, list(speedup), [s * 0.9 for s in speedup], [s * 1.1 for s in speedup],
                          16, "contention model: " + "x" * 90, work_s=8.0)
    out = apply_calibration(pred, 4, 0.0, cal)
    assert out.speedup[15] == pytest.approx(16 * 0.82) and out.speedup[0] == 1.0
    assert out.low[15] == pytest.approx(16 * 0.9 * 0.82) and out.high[15] == pytest.approx(16 * 1.1 * 0.82)
    # T(4) = T(1) / S(4) is the measured time: work 8 s at 4 threads took 2 s, and still does
    assert out.work_s / out.speedup[3] == pytest.approx(8.0 / 4)
    assert len(out.basis) <= BASIS_LEN and out.basis.endswith("; machine x0.87 4->16")


def test_replay_with_the_machine_file(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(calibration())
    plain = replay(str(RECORDING), 16)[0]
    calibrated = replay(str(RECORDING), 16, str(path))[0]
    s16 = plain.process[1].speedup[15]
    # composed from regions sampled at 4: every outermost region's gain from 4 to 16 falls by
    # e(16)/e(4), the serial time between them stays: the process falls by at most that
    ratio = calibrated.process[1].speedup[15] / s16
    assert 0.82 / 0.94 - 1e-9 <= ratio < 1.0
    at4 = [p.speedup[3] for p in (plain.process[1], calibrated.process[1])]
    t16 = [p.speedup[3] / p.speedup[15] for p in (plain.process[1], calibrated.process[1])]
    assert at4[1] < at4[0] and t16[1] > t16[0]
    for (region, p), q in zip(zip(plain.recorded.regions, plain.predictions), calibrated.predictions):
        if region["name"] != "process" and not region["nested"]:
            assert q.speedup[15] / q.speedup[3] == pytest.approx(p.speedup[15] / p.speedup[3] * 0.82 / 0.94, rel=0.02)
    out = corecast("replay", "--machine", str(path), "--target", "16", "--json", str(RECORDING))
    assert out.returncode == 0, out.stderr
    proc = json.loads(out.stdout)["processes"][0]
    assert proc["predicted"][-1]["speedup"] == pytest.approx(calibrated.process[1].speedup[15], rel=1e-3)


@pytest.mark.parametrize("content", ["{}", None])
def test_replay_with_a_bad_machine_file_is_one_line(tmp_path, content):
    path = tmp_path / "cal.json"
    if content is not None:
        path.write_text(content)
    out = corecast("replay", "--machine", str(path), str(RECORDING))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "cal.json" in out.stderr and "Traceback" not in out.stderr


def test_a_recording_with_a_bad_calibration_is_one_line(tmp_path):
    lines = RECORDING.read_text().splitlines()
    bad = [json.dumps({**json.loads(line), "machine_calibration": {"corecast_calibration": 1}})
           if json.loads(line)["event"] == "summary" else line for line in lines]
    assert bad != lines
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(bad) + "\n")
    out = corecast("replay", str(path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "machine_calibration" in out.stderr


def test_a_fifo_named_as_the_machine_file_does_not_hold_up_a_run(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cal, note = machine.for_this_machine(os.sysconf("SC_NPROCESSORS_ONLN"), str(fifo), "")
    assert cal is None and "not a regular file" in note


def test_calibrate_writes_a_file_runs_use(tmp_path):
    env = clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))
    out = corecast("calibrate", "--max", "2", env=env)
    assert out.returncode == 0, out.stderr
    written = tmp_path / "cache" / "corecast" / "calibration.json"
    assert f"written to {written}" in out.stdout
    cal = machine.read(str(written))
    assert cal.counts == [1, 2] and cal.efficiency[0] == 1.0 and 0 < cal.efficiency[1] <= 2
    assert cal.cpus == os.sysconf("SC_NPROCESSORS_ONLN") and cal.cpu_model == machine.cpu_model()
    again = corecast("calibrate", "--max", "1", "--json", "-o", str(tmp_path / "one.json"), env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["efficiency"] == [[1, 1.0]]
    assert machine.read(str(tmp_path / "one.json")).counts == [1]


def test_calibrate_into_a_folder_is_one_line(tmp_path):
    out = corecast("calibrate", "--max", "1", "-o", str(tmp_path))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")  # $XDG_CACHE_HOME/corecast cannot be made under a file
    out = corecast("calibrate", "--max", "1", env=clean_env(XDG_CACHE_HOME=str(blocked)))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "internal error" not in out.stderr
    assert "cannot make the folder" in out.stderr


def test_a_run_puts_this_machines_calibration_into_its_predictions(build, lib, tmp_path):
    """The exit report says the predictions are for a calibrated machine, and the sampled
    region's speedup beyond its count falls as the file says; a file measured elsewhere is
    named on stderr and left out."""
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
        assert ("machine calibration not used" in proc.stderr.decode()) == (name == "other")

    (region,) = [e for e in outs["ours"][1] if e["event"] == "region" and e["name"] != "process"]
    live = {p["threads"]: p["speedup"] for p in region["predicted"]}
    assert "machine x0.50 2->16" in region["basis"]
    (summary,) = events(outs["ours"][1], "summary")
    assert summary["machine_calibration"]["efficiency"] == [[1, 1.0], [2, 0.9], [16, 0.45]]
    assert "machine_calibration" not in events(outs["none"][1], "summary")[0]

    def gain(proc) -> float:
        pred = next(p for r, p in zip(proc.recorded.regions, proc.predictions) if r["name"] != "process")
        return pred.speedup[15] / pred.speedup[1]

    # Replay uses the calibration the run recorded, so it prints what the run printed; the
    # same sample without it gained e(2)/e(16) times more from 2 to 16 threads.
    (rec,) = read_recording(str(tmp_path / "ours.jsonl"))
    assert gain(replay(str(tmp_path / "ours.jsonl"), 16)[0]) == pytest.approx(live[16] / live[2], rel=0.01)
    assert live[16] / live[2] == pytest.approx(gain(replay_process(rec, 16, machine=None)) * 0.5, rel=0.01)


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
