"""A new user's pass over sweep, export, merge, calibrate and the readers (session 38):
outputs that replaced each other or an input, and smaller slips."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main
from test_sweepviz import make_result

RECORDINGS = Path(__file__).parent / "data" / "recordings"


@pytest.fixture
def sweep_json(tmp_path) -> Path:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(make_result()))
    return path


def test_export_over_its_input_is_refused_and_the_input_kept(sweep_json, capsys):
    # `export --extrap sweep.json sweep.json` replaced the sweep result with Extra-P lines.
    before = sweep_json.read_text()
    err = assert_one_line_error(capsys, ["export", "--extrap", str(sweep_json), str(sweep_json)])
    assert "--extrap names an input file" in err
    assert sweep_json.read_text() == before
    # another spelling of the same file is the same file
    other = sweep_json.parent / "." / sweep_json.name
    assert_one_line_error(capsys, ["export", "--html", str(other), str(sweep_json)])
    assert sweep_json.read_text() == before


def test_export_two_outputs_to_one_file_are_refused(tmp_path, sweep_json, capsys):
    # `--plot o.png --html o.png` wrote the plot, then the HTML over it, exit 0.
    out = tmp_path / "o.png"
    err = assert_one_line_error(capsys, ["export", "--html", str(out), "--plot", str(out), str(sweep_json)])
    assert "--html and --plot name the same file" in err
    assert not out.exists()
    # two outputs to /dev/null are no clash
    assert main(["export", "--html", "/dev/null", "--extrap", "/dev/null", str(sweep_json)]) == 0


def test_sweep_two_outputs_to_one_file_are_refused_before_running(tmp_path, capsys):
    out = tmp_path / "s.json"
    marker = tmp_path / "ran"
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--repeat", "1", "--json-out", str(out),
                                         "--html", str(out), "--", "touch", str(marker)])
    assert "--json-out and --html name the same file" in err
    assert not marker.exists() and not out.exists()
    # --plot is an output too, and a file not yet written is one file by any spelling
    png = tmp_path / "s.png"
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--repeat", "1", "--json-out", str(png),
                                         "--plot", str(png), "--", "touch", str(marker)])
    assert "--json-out and --plot name the same file" in err
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--repeat", "1", "--json-out", str(out),
                                         "--html", f"{tmp_path}/./s.json", "--", "touch", str(marker)])
    assert "--json-out and --html name the same file" in err
    # the stall plugin's file is an input
    spec = tmp_path / "plugins.json"
    spec.write_text(json.dumps([{"name": "gc", "source": "stdout", "pattern": r"gc=([0-9.]+)"}]))
    err = assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--repeat", "1", "--stall-plugin", str(spec),
                                         "--json-out", str(spec), "--", "touch", str(marker)])
    assert "--json-out names an input file" in err
    assert not marker.exists() and not out.exists() and not png.exists()
    assert json.loads(spec.read_text())[0]["name"] == "gc"


def test_merge_over_one_of_its_recordings_is_refused(tmp_path, capsys):
    # `merge -o halo-0.jsonl halo-*.jsonl` replaced rank 0's recording with the report.
    rec = tmp_path / "run-0.jsonl"
    rec.write_text((RECORDINGS / "schema1-pthreads_sync-2.jsonl").read_text())
    before = rec.read_text()
    err = assert_one_line_error(capsys, ["merge", "-o", str(rec), str(rec)])
    assert "-o names an input file" in err
    assert rec.read_text() == before


def _calibration(quick: bool = False, threads: tuple[int, ...] = (1, 2)) -> dict:
    return {"corecast_calibration": 2, "machine": {"cpus": 2, "cpu_model": "x", "cpus_measured": 2,
                                                   "llc_bytes": None},
            "placement": "unbound",
            "compute": {"kernel": "k", "gflops_one_thread": 1.0, "efficiency": [[n, 1.0] for n in threads]},
            "bandwidth": {"kernel": "k", "array_bytes": 1 << 20, "gbps": [[n, 10.0 * n] for n in threads]},
            "repeats": 3, "quick": quick, "seconds": 0.1, "measured_at": "now"}


@pytest.mark.parametrize("doc", [
    {"corecast_calibration": 1, "machine": {"cpus": 2, "cpu_model": "x"}},  # the earlier Python kernel
    _calibration(quick=True),
    _calibration(threads=(1,)),
])
def test_a_calibration_not_used_never_advises_calibrating(tmp_path, doc):
    # Issue #38: calibrating is not advised, yet every run with such a file ended in
    # "warning: machine calibration not used: ...; run corecast calibrate again".
    from corecast.model.machine import calibration as machine

    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc))
    cal, note = machine.for_this_machine(2, str(path), str(tmp_path / "default.json"))
    assert cal is None and note.startswith("machine calibration not used")
    assert "calibrate again" not in note and machine.NOT_ADVISED in note and "remove it" in note


def test_calibrate_says_what_the_file_it_wrote_does(tmp_path, monkeypatch, capsys):
    # A full calibration at the path runs read changes their predictions: say so, and that
    # it is not advised, rather than a bare "written to PATH".
    from corecast.tools import calibrate

    monkeypatch.setattr(calibrate, "measure", lambda most, quick=False: _calibration())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CORECAST_MACHINE_FILE", raising=False)
    assert main(["calibrate"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"written to {tmp_path}") and "not advised yet" in last and "remove it" in last
    assert main(["calibrate", "-o", str(tmp_path / "elsewhere.json")]) == 0  # no run reads that one
    assert capsys.readouterr().out.splitlines()[-1] == f"written to {tmp_path / 'elsewhere.json'}"
    # a --quick one at that path is not used by runs (for_this_machine): nothing to say
    monkeypatch.setattr(calibrate, "measure", lambda most, quick=False: _calibration(quick=quick))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "quick"))
    assert main(["calibrate", "--quick"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith(f"written to {tmp_path / 'quick'}") and "runs read it" not in last


@pytest.mark.parametrize("sep", ["|", " ", ":"])
def test_a_csv_split_by_another_character_says_its_header_is_one_cell(tmp_path, capsys, sep):
    # "threads|time" said only "no value column (name one column time, ...)": it had one.
    path = tmp_path / "m.csv"
    path.write_text(f"threads{sep}time\n1{sep}10\n2{sep}5.5\n4{sep}3\n")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "the header is one cell" in err and "commas, tabs or semicolons" in err
    path.write_text("threads\n1\n2\n")  # one column, no separator in it: as before
    assert "one cell" not in assert_one_line_error(capsys, ["predict", str(path)])
    path.write_text("x y" + "\0" * 5000 + "\n1\n")  # a tar archive is ASCII, but no header
    assert "one cell" not in assert_one_line_error(capsys, ["predict", str(path)])
    path.write_text("thread count,stall:mutex\n1,10\n2,5\n")  # two cells, neither a value column
    assert "one cell" not in assert_one_line_error(capsys, ["predict", str(path)])
    header = "threads " + "x" * 200  # a long header is quoted short
    path.write_text(f"{header}\n1\n2\n")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert f"the header is one cell, {header[:40]!r}..." in err and "x" * 50 not in err


@pytest.mark.parametrize("args", [["--upto", "100001"], ["--at", "8,100001"]])
def test_a_count_past_what_predict_predicts_is_the_argument_s_error(tmp_path, capsys, args):
    # `predict data.csv --upto 100001` blamed the file ("data.csv: counts above 100000 are not
    # predicted"): the argument is what is wrong, and it is refused before the file is read.
    data = tmp_path / "data.csv"
    data.write_text("threads,time\n1,10\n2,5.2\n4,2.8\n8,1.6\n")
    err = assert_one_line_error(capsys, ["predict", str(data), *args])
    assert f"argument {args[0]}" in err and "at most 100000" in err and "data.csv" not in err
    # the bounds' ends are counts to predict
    assert main(["predict", str(data), args[0], "100000" if args[0] == "--upto" else "1,100000", "--json"]) == 0


CUBE = Path(__file__).parent / "data" / "cube"


def test_tune_sim_reads_what_predict_reads(tmp_path, capsys):
    # tune-sim read CSV and sweep results only: a Score-P set (or Extra-P, hyperfine,
    # Caliper input) got "not a CSV"-style errors although predict reads them.
    pytest.importorskip("pycubexr")
    assert main(["tune-sim", str(CUBE / "simple_threaded"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["input"]["counts"] == [1, 2, 3, 4, 5] and got["input"]["count_unit"] == "f"
    # an input of several curves: one is replayed, so the user picks it
    text = tmp_path / "two.txt"
    text.write_text("PARAMETER p\n\nPOINTS 1 2 4 8\n\nREGION a\nMETRIC time\n"
                    "DATA 8\nDATA 4.1\nDATA 2.2\nDATA 1.3\n\nREGION b\nMETRIC time\n"
                    "DATA 8\nDATA 4.5\nDATA 3\nDATA 2.5\n")
    err = assert_one_line_error(capsys, ["tune-sim", str(text)])
    assert "2 (callpath, metric) pairs" in err and "--callpath" in err
    assert main(["tune-sim", str(text), "--callpath", "b"]) == 0
    assert "4 counts of p (1..8)" in capsys.readouterr().out
    # predict's --count-attribute and --format are tune-sim's too, not ignored
    err = assert_one_line_error(capsys, ["tune-sim", str(CUBE / "simple_threaded"), "--count-attribute", "locations"])
    assert "every profile has locations = 4" in err
    err = assert_one_line_error(capsys, ["tune-sim", str(text), "--callpath", "b", "--format", "csv"])
    assert "two.txt" in err
    # a curve the reader could not build is its one line, as predict says it
    text.write_text("PARAMETER p\n\nPOINTS 1 2 4 8\n\nREGION a\nMETRIC time\nDATA 8\nDATA -4\nDATA 2\nDATA 1\n")
    assert "value -4 is not positive" in assert_one_line_error(capsys, ["tune-sim", str(text)])


def test_predict_s_plot_over_its_input_is_refused_and_the_input_kept(tmp_path, capsys):
    # `predict data --plot data` (no suffix: a PNG) wrote the plot over the measurements,
    # exit 0: outputs_apart held for export, merge and sweep, not for predict's --plot.
    data = tmp_path / "data"
    data.write_text("threads,time\n1,10\n2,5.2\n4,2.8\n8,1.6\n")
    before = data.read_text()
    err = assert_one_line_error(capsys, ["predict", str(data), "--plot", str(data)])
    assert "--plot names an input file" in err
    assert data.read_text() == before
    link = tmp_path / "link"
    link.symlink_to(data)
    assert "--plot names an input file" in assert_one_line_error(capsys, ["predict", str(data), "--plot", str(link)])
    assert data.read_text() == before


def test_tune_sim_replays_every_count_a_sweep_measured(tmp_path, capsys):
    # Reading predict's way, tune-sim took predict's fit of a sweep result: the counts past
    # its CPUs (6, 8 on 4) left out of the tuners' oracle without a word, and the best
    # measured count moved from 8 to 4. The oracle is what was measured, as before.
    result = make_result()
    result["cpus_allowed"] = 4
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(result))
    assert main(["tune-sim", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["input"]
    assert got["counts"] == [1, 2, 4, 6, 8] and got["best_measured"] == 8

