"""A new user's pass over the runtime commands (session runuser31): a misspelt setting,
a prediction's basis cut mid-word, a calibration's error cut mid-word, a sweep or an
OpenCL run of something that cannot run, and counts in the plural."""
from __future__ import annotations

from corecast.cli import main


def test_a_misspelt_setting_is_named_with_the_closest_one(monkeypatch, capsys):
    # CORECAST_TRAGET=8 was accepted without a word: the run predicted for this machine.
    monkeypatch.setenv("CORECAST_TRAGET", "8")
    monkeypatch.setenv("CORECAST_TARGET", "4")  # a known one says nothing
    assert main(["machine", "presets"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["corecast: warning: CORECAST_TRAGET is not a corecast setting (did you mean "
                   "CORECAST_TARGET?); ignored (docs/environment.md lists them)"]


def test_a_basis_with_a_note_is_cut_between_words():
    # --target-machine's exit printed "... serial work, oversubscript; no history fit: see
    # nodes": the basis was cut by bytes to leave room for the note.
    from corecast.runtime import bridge

    basis = "contention model: lock queues, imbalance, serial work, oversubscription"
    got = bridge._noted(basis, "; no history fit: see nodes")
    assert len(got.encode()) <= 95 and got.endswith("; no history fit: see nodes")
    head = got[: -len("; no history fit: see nodes")]
    assert head.endswith("\u2026")
    whole = {w.strip(",;:") for w in basis.split()}
    assert all(w.strip(",;:") in whole for w in head[:-1].split()), got
    assert bridge._shortened(basis, 95) == basis  # what fits is left alone
    assert len(bridge._shortened("é" * 60, 95).encode()) <= 95  # never half a character


def test_a_calibration_that_is_not_json_or_newer_is_told_whole(tmp_path, capsys):
    # The JSON error was cut at 60 characters ("... double quotes: line 2 co"), and a newer
    # schema read "not a corecast calibration".
    from corecast.model.machine.calibration import CalibrationError, parse

    try:
        parse('{"corecast_calibration": 2, "machine": {\n')
    except CalibrationError as exc:
        assert str(exc).startswith("not JSON: line 2 column 1: Expecting property name")
    else:
        raise AssertionError("parsed")
    try:
        parse('{"corecast_calibration": 9}')
    except CalibrationError as exc:
        assert "schema 9" in str(exc) and "newer corecast" in str(exc)
    else:
        raise AssertionError("parsed")


def test_an_opencl_run_of_what_python_cannot_run_is_one_line(tmp_path):
    # `python -m corecast.opencl FOLDER` (no __main__.py) and `-m missing` printed runpy's
    # traceback; Python itself says one line and exits 1.
    import subprocess
    import sys

    (tmp_path / "imports.py").write_text("import no_such_module_here\n")
    for argv in ([str(tmp_path)], ["-m", "no_such_module_here"]):
        done = subprocess.run([sys.executable, "-m", "corecast.opencl", *argv], capture_output=True, text=True,
                              cwd=tmp_path, timeout=120)
        assert done.returncode == 1, done.stderr
        assert done.stderr.startswith("corecast: error: ") and done.stderr.count("\n") == 1, done.stderr
    # the program's own ImportError stays its traceback, as Python prints it
    done = subprocess.run([sys.executable, "-m", "corecast.opencl", str(tmp_path / "imports.py")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1 and "Traceback" in done.stderr and "imports.py" in done.stderr


def test_a_sweep_of_what_cannot_run_says_why_as_bash_would(tmp_path, capsys):
    # `corecast sweep -- /tmp` said "/tmp: command not found"; corecast run says
    # "Is a directory", as bash does.
    from cli_checks import assert_one_line_error

    script = tmp_path / "noexec.sh"
    script.write_text("echo hi\n")
    script.chmod(0o644)
    for path, why in ((tmp_path, "Is a directory"), (tmp_path / "missing", "No such file or directory"),
                      (script, "Permission denied")):
        err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--", str(path)])
        assert err.strip().endswith(f"{path}: {why}"), err


def test_a_sweep_of_one_count_is_refused_before_it_runs(tmp_path, capsys):
    # `--threads 1` ran the program (three times) and only then said it needed 2 counts.
    from cli_checks import assert_one_line_error

    marker = tmp_path / "ran"
    prog = tmp_path / "prog.sh"
    prog.write_text(f"#!/bin/sh\ntouch {marker}\n")
    prog.chmod(0o755)
    err = assert_one_line_error(capsys, ["sweep", "--threads", "4", "--", str(prog)])
    assert "needs at least 2 counts, --threads gives 1" in err
    assert not marker.exists()


def test_one_node_and_one_entry_are_singular(tmp_path, capsys):
    # `corecast numa --machine here.json` on a one-node machine printed "(1 nodes x 2 cores)",
    # and a sample with one entry per list "'bus' has 1 entries".
    import json

    from cli_checks import assert_one_line_error

    here = tmp_path / "here.json"
    here.write_text(json.dumps({"name": "one", "cores_per_node": 2, "nodes": 1, "bus_delay": [[3.0]],
                                "controller_delay": 12.0}))
    sample = tmp_path / "s.json"
    sample.write_text(json.dumps({"llc": [0.01], "bus": [0.005], "mct": [0.04]}))
    assert main(["numa", "--machine", str(here), "--sample", str(sample)]) == 0
    assert "machine: one (1 node x 2 cores)" in capsys.readouterr().out
    err = assert_one_line_error(capsys, ["numa", "--machine", "opteron6380", "--sample", str(sample)])
    assert "'bus' has 1 entry but" in err


def test_an_empty_json_out_is_named_as_such(capsys):
    from cli_checks import assert_one_line_error

    err = assert_one_line_error(capsys, ["run", "--json-out", "", "--", "true"])
    assert "--json-out: an empty file name" in err
