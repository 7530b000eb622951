"""What session 32's new-user pass found and left (session newfix32): one count limit for
every reader, --plot's PostScript, numa's sample messages, tune-sim's noise and unit,
replay's unrecorded time, python -m corecast.opencl's argv[0], and an exported Extra-P
file's oversubscribed counts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main

CURVE = [(1, 10.0), (2, 5.5), (4, 3.0)]


def _sweep(path: Path, counts=CURVE, **extra) -> Path:
    path.write_text(json.dumps({"measured": [{"threads": n, "time_s": t} for n, t in counts], **extra}))
    return path


@pytest.mark.parametrize("count", [2**70, 1e30, 100_001])
def test_a_sweep_results_count_past_the_limit_is_refused_as_the_csvs_is(tmp_path, capsys, count):
    # the sweep reader took any count: export wrote 2^70 out, and only the fit refused it
    sweep = _sweep(tmp_path / "s.json", CURVE + [(count, 1.0)])
    out = tmp_path / "o.jsonl"
    err = assert_one_line_error(capsys, ["export", "--extrap", str(out), str(sweep)])
    assert "measured[3]" in err and "above 100000, the largest count corecast predicts" in err
    assert not out.exists()
    err = assert_one_line_error(capsys, ["predict", str(sweep)])
    assert "measured[3]" in err and "above 100000" in err
    csv = tmp_path / "m.csv"
    csv.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in CURVE) + f"{count},1\n")
    err = assert_one_line_error(capsys, ["predict", str(csv)])
    assert "line 5" in err and "above 100000, the largest count corecast predicts" in err


def test_the_count_limit_has_one_home_the_readers_reach_without_numpy():
    import subprocess
    import sys

    code = ("import sys; from corecast.io.readers import sweepjson, measurements, raw; "
            "from corecast.io import sweepresult; from corecast.model import scaling; "
            "from corecast.model.curve import prediction; from corecast.sweep import inputs; "
            "assert prediction.MAX_COUNT is scaling.MAX_COUNT")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = ("import sys; from corecast.io import sweepresult; from corecast.io.readers import raw; "
            "assert 'numpy' not in sys.modules, 'numpy'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_extrap_files_count_past_the_limit_is_refused_at_reading(tmp_path, capsys):
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"params": {"p": n}, "callpath": "main", "metric": "time", "value": t}) + "\n"
                            for n, t in CURVE + [(2**70, 1.0)]))
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "a count of 22 digits is above 100000" in err


def test_sweep_threads_past_the_limit_are_refused(capsys):
    from corecast.sweep import default_upto, parse_threads
    from corecast.errors import InputError

    with pytest.raises(InputError, match="200000 is above 100000"):
        parse_threads("1,200000")
    assert default_upto([60_000]) == 100_000  # the default horizon stops at the limit


@pytest.mark.parametrize("suffix", ["eps", "ps", "EPS", "pgf"])
@pytest.mark.parametrize("command", ["predict", "export"])
def test_plot_refuses_postscript_with_one_line_not_matplotlibs_warning(tmp_path, capfd, suffix, command):
    # --plot x.eps wrote the band opaque and matplotlib's "The PostScript backend does not
    # support transparency" on stderr (.pgf: an internal error, LaTeX not found)
    plot = tmp_path / f"x.{suffix}"
    source = tmp_path / ("m.csv" if command == "predict" else "s.json")
    if command == "predict":
        source.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in CURVE))
        argv = ["predict", str(source), "--plot", str(plot)]
    else:
        argv = ["export", "--plot", str(plot), str(_sweep(source))]
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert err.count("\n") == 1 and err.startswith("corecast: error: ") and "internal error" not in err
    assert f"cannot plot to a .{suffix.lower()} file" in err and ".pdf or .svg" in err
    assert "transparency" not in err or "PostScript has no transparency" in err
    assert not plot.exists()


NODES = 8  # the opteron6380 preset's memory nodes
OK_SAMPLE = {"llc": 0.01, "bus": [0.004] + [0] * 7, "mct": [0.03] + [0] * 7}
HUGE_SAMPLE = {key: [1e306] * NODES for key in ("llc", "bus", "mct")}


@pytest.mark.parametrize("co_run", [False, True])
def test_numa_names_the_sample_whose_rates_are_too_large(tmp_path, capsys, co_run):
    # "the sample's rates are too large to model" named no file, beside every other
    # sample error that does
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps(HUGE_SAMPLE))
    argv = ["numa", "--machine", "opteron6380", "--sample", str(huge)]
    if co_run:
        ok = tmp_path / "ok.json"
        ok.write_text(json.dumps(OK_SAMPLE))
        argv += ["--co-run", str(ok), "--co-nodes", "2"]
    err = assert_one_line_error(capsys, argv)
    assert err == f"corecast: error: {huge}: the sample's rates are too large to model (the memory cycles overflow)\n"


def test_numa_says_llc_may_be_one_total(tmp_path, capsys):
    sample = tmp_path / "s.json"
    sample.write_text(json.dumps({**OK_SAMPLE, "llc": "0.01"}))
    err = assert_one_line_error(capsys, ["numa", "--machine", "opteron6380", "--sample", str(sample)])
    assert "'llc' must be a list with one number per memory node, or one number" in err
