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


def _curve_csv(path: Path, column: str = "threads") -> Path:
    path.write_text(f"{column},time\n1,10\n2,5.5\n4,3\n8,2.5\n")
    return path


@pytest.mark.parametrize("noise", ["5", "1e308", "1.01", "-0.1", "nan"])
def test_tune_sim_bounds_the_noise_with_one_line(tmp_path, capsys, noise):
    # --noise 5 or 1e308 ran: 1 + noise * N(0, 1) below 0 in nearly half the intervals
    err = assert_one_line_error(capsys, ["tune-sim", str(_curve_csv(tmp_path / "t.csv")), "--noise", noise])
    assert "--noise" in err and "must be a fraction from 0 to 1" in err


def test_tune_sims_simulate_refuses_noise_past_one():
    from corecast.model.tuning.tunesim import simulate
    from corecast.model.tuning.tuners import Binsearch

    with pytest.raises(ValueError, match="from 0 to 1"):
        simulate(Binsearch([1, 2, 4]), [1, 2, 4], [1.0, 1.8, 3.0], noise=5.0)
    assert simulate(Binsearch([1, 2, 4]), [1, 2, 4], [1.0, 1.8, 3.0], noise=1.0)["chosen"] in (1, 2, 4)


@pytest.mark.parametrize("column,unit", [("threads", "threads"), ("ranks", "ranks"), ("n", "threads")])
def test_tune_sim_states_the_counts_unit(tmp_path, capsys, column, unit):
    path = _curve_csv(tmp_path / "t.csv", column)
    assert main(["tune-sim", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input"]["count_unit"] == unit
    assert main(["tune-sim", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"4 counts of {unit} (1..8)" in first and f"best measured at 8 {unit}" in first


def test_tune_sim_reads_a_rank_sweeps_unit(tmp_path, capsys):
    path = _sweep(tmp_path / "s.json", [(1, 10.0), (2, 5.5), (4, 3.0), (8, 2.5)], count="ranks")
    assert main(["tune-sim", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["input"]["count_unit"] == "ranks"


RECORDINGS = Path(__file__).resolve().parent / "data" / "recordings"


def test_replay_says_the_time_was_not_recorded_without_the_summary(tmp_path, capsys):
    # the header read "pid 1234, 16 cores, 0s" for a recording whose summary line is missing
    lines = (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text().splitlines()
    cut = tmp_path / "r.jsonl"
    cut.write_text("".join(line + "\n" for line in lines if json.loads(line)["event"] != "summary"))
    assert main(["replay", str(cut)]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert "time not recorded" in header and " 0s" not in header
    assert main(["replay", str(RECORDINGS / "schema1-omp_slowdown-2.jsonl")]) == 0
    assert "time not recorded" not in capsys.readouterr().out


PRINTS_ITS_NAMES = """\
import os, pickle, sys
class Point:
    pass
p = pickle.loads(pickle.dumps(Point()))  # a class of __main__ pickles as python's own
print(sys.argv, __name__, __file__, type(p).__name__)
"""


def _plain_and_ours(cwd, argv):
    """``python ARGV`` and ``python -m corecast.opencl ARGV``, run in ``cwd``."""
    import subprocess
    import sys

    return [subprocess.run([sys.executable, *runner, *argv], cwd=cwd, capture_output=True, text=True)
            for runner in ([], ["-m", "corecast.opencl"])]


@pytest.mark.parametrize("typed", ["prog.py", "./prog.py", "sub/../prog.py"])
def test_opencl_runner_keeps_argv0_as_typed(tmp_path, typed):
    # python -m corecast.opencl prog.py gave the program sys.argv[0] == '/abs/path/prog.py'
    import os

    (tmp_path / "prog.py").write_text(PRINTS_ITS_NAMES)
    (tmp_path / "sub").mkdir()
    plain, ours = _plain_and_ours(tmp_path, [typed, "x"])
    assert plain.returncode == ours.returncode == 0, ours.stderr
    assert ours.stdout.startswith(f"[{typed!r}, 'x'] __main__ {os.path.join(str(tmp_path), typed)} Point")
    assert ours.stdout.splitlines()[0] == plain.stdout.splitlines()[0]


PRINTS_ITS_PATHS = "import sys\nprint(sys.argv, __name__, __file__, sys.path[0], len(sys.path))\n"


@pytest.mark.parametrize("kind", ["folder", "zip"])
def test_opencl_runner_runs_a_folder_or_zip_as_python_does(tmp_path, kind):
    # a zip file was compiled as source (SyntaxError: null bytes), a folder's program got
    # argv[0] absolute and one more sys.path entry than under python
    import zipfile

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(PRINTS_ITS_PATHS)
    typed = "app"
    if kind == "zip":
        typed = "app.zip"
        with zipfile.ZipFile(tmp_path / typed, "w") as z:
            z.write(tmp_path / "app" / "__main__.py", "__main__.py")
    plain, ours = _plain_and_ours(tmp_path, [typed, "x"])
    assert plain.returncode == ours.returncode == 0, ours.stderr
    assert ours.stdout.startswith(f"[{typed!r}, 'x'] __main__ ")
    assert ours.stdout.splitlines()[0] == plain.stdout.splitlines()[0]


@pytest.mark.parametrize("typed", ["empty", "empty.zip"])
def test_opencl_runner_refuses_a_folder_or_zip_without_main_in_one_line(tmp_path, typed):
    import zipfile

    (tmp_path / "empty").mkdir()
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as z:
        z.writestr("other.py", "print(1)\n")
    plain, ours = _plain_and_ours(tmp_path, [typed])
    assert ours.returncode == plain.returncode == 1
    assert ours.stderr.startswith("corecast: error: can't find '__main__' module in ") and \
        len(ours.stderr.splitlines()) == 1, ours.stderr


OVERSUBSCRIBED = [(1, 10.0), (2, 5.2), (3, 3.8), (4, 6.0), (8, 7.0)]  # counts 4 and 8 past 3 CPUs


def test_predict_of_an_extrap_export_leaves_out_oversubscribed_counts_as_of_the_sweep(tmp_path, capsys):
    # the export lost cpus_allowed: predict of it fitted counts 4 and 8, which ran
    # time-shared on the sweep's 3 CPUs and which predict of the sweep result leaves out
    sweep = _sweep(tmp_path / "s.json", OVERSUBSCRIBED, cpus_allowed=3)
    exported = tmp_path / "s.jsonl"
    assert main(["export", "--extrap", str(exported), str(sweep)]) == 0
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    # Extra-P's JSON Lines reader reads params, callpath, metric and value and passes over the rest
    assert all(r["cpus_allowed"] == 3 and set(r) == {"params", "callpath", "metric", "value", "cpus_allowed"}
               for r in records)
    capsys.readouterr()
    assert main(["predict", str(sweep), "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert main(["predict", str(exported), "--json"]) == 0
    (via,) = json.loads(capsys.readouterr().out)["series"]
    assert any("counts 4, 8 ran oversubscribed on the sweep's 3 CPUs" in w for w in via["warnings"])
    for key in ("predictions", "preferred_count", "fastest_count", "hardware", "warnings"):
        assert via[key] == direct[key], key


def test_an_export_without_cpus_allowed_keeps_every_count(tmp_path, capsys):
    sweep = _sweep(tmp_path / "s.json", OVERSUBSCRIBED)  # a launcher's sweep, or one written before it
    exported = tmp_path / "s.jsonl"
    assert main(["export", "--extrap", str(exported), str(sweep)]) == 0
    assert "cpus_allowed" not in exported.read_text()
    assert main(["predict", str(exported), "--json"]) == 0
    (via,) = json.loads(capsys.readouterr().out)["series"]
    assert not any("oversubscribed" in w for w in via["warnings"])


def test_extrap_lines_of_two_sweeps_cpus_are_refused(tmp_path, capsys):
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"params": {"threads": n}, "callpath": "main", "metric": "time",
                                        "value": t, "cpus_allowed": 3 if n < 4 else 8}) + "\n"
                            for n, t in OVERSUBSCRIBED))
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "line 4" in err and "\"cpus_allowed\" 8, earlier lines have 3" in err
    path.write_text(path.read_text().replace('"cpus_allowed": 8', '"cpus_allowed": 0'))
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "line 4" in err and "must be a whole number >= 1" in err
