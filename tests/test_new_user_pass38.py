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


def test_merge_over_one_of_its_recordings_is_refused(tmp_path, capsys):
    # `merge -o halo-0.jsonl halo-*.jsonl` replaced rank 0's recording with the report.
    rec = tmp_path / "run-0.jsonl"
    rec.write_text((RECORDINGS / "schema1-pthreads_sync-2.jsonl").read_text())
    before = rec.read_text()
    err = assert_one_line_error(capsys, ["merge", "-o", str(rec), str(rec)])
    assert "-o names an input file" in err
    assert rec.read_text() == before
