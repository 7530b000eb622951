"""The command line: JSON contract, table, plot, demo, and one-line errors with exit 2."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.cli import main

from cli_checks import TOP_KEYS, assert_one_line_error

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DATASETS = Path(__file__).resolve().parent / "data" / "curves"  # copies of ../shared/datasets/*.csv
PREDICTION_KEYS = {"threads", "value", "low", "high", "speedup", "efficiency"}


@pytest.fixture
def time_csv(tmp_path) -> str:
    """Amdahl-like time curve, serial fraction 5%, two repetitions at 4 threads."""
    rows = [(n, 100 * (0.05 + 0.95 / n)) for n in (1, 2, 3, 4, 6, 8)] + [(4, 100 * (0.05 + 0.95 / 4) * 1.02)]
    path = tmp_path / "time.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in rows))
    return str(path)


@pytest.fixture
def throughput_csv(tmp_path) -> str:
    path = tmp_path / "tp.csv"
    path.write_text("# metric: throughput\ncores,value\n" + "".join(
        f"{n},{1000 * n / (1 + 0.03 * (n - 1) + 0.001 * n * (n - 1))}\n" for n in (1, 2, 4, 6, 8, 12)))
    return str(path)


def run_json(capsys, *argv: str) -> dict:
    assert main(["predict", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)  # exactly one JSON document, nothing else on stdout


# ---------------------------------------------------------------- JSON contract


@pytest.mark.parametrize("method", ["usl", "amdahl", "auto"])
def test_json_contract(capsys, time_csv, method):
    d = run_json(capsys, time_csv, "--method", method, "--upto", "16", "--at", "24,64,3")
    assert set(d) == TOP_KEYS
    assert d["method"] == method
    assert d["metric"] == "time"
    threads = [p["threads"] for p in d["predictions"]]
    # The rows asked, and the counts the prediction names (every count up to the largest
    # asked is compared, so a knee at 43 is a row of its own).
    named = {d[k] for k in ("preferred_count", "fastest_count", "knee_count") if d[k] is not None}
    assert threads == sorted(set(range(1, 17)) | {24, 64} | named)
    for p in d["predictions"]:
        assert set(p) == PREDICTION_KEYS
        assert p["low"] <= p["value"] <= p["high"]
    assert isinstance(d["preferred_threads"], int) and 1 <= d["preferred_threads"] <= 64
    # null: no count asked where one more thread gains less than knee_fraction of one
    assert d["knee_threads"] is None or isinstance(d["knee_threads"], int) and 1 <= d["knee_threads"] <= 64
    assert d["knee_fraction"] == 0.1


@pytest.mark.parametrize("method", ["usl", "amdahl"])
def test_time_predictions_stay_in_the_users_metric(capsys, time_csv, method):
    d = run_json(capsys, time_csv, "--method", method, "--upto", "8")
    values = [p["value"] for p in d["predictions"]]
    assert values == sorted(values, reverse=True)  # time falls as threads are added
    assert values[0] == pytest.approx(100, rel=0.1)
    speedups = [p["speedup"] for p in d["predictions"]]
    assert speedups == sorted(speedups)


def test_default_upto_is_twice_the_largest_count(capsys, throughput_csv):
    d = run_json(capsys, throughput_csv, "--method", "usl", "--knee-fraction", "0.25")
    assert [p["threads"] for p in d["predictions"]] == list(range(1, 25))
    assert d["metric"] == "throughput"
    assert d["knee_fraction"] == 0.25


def test_upto_below_the_largest_measured_count(capsys, tmp_path):
    # The best measured count (4) lies beyond --upto: the preferred count is one asked for,
    # and the table can name it (it raised KeyError before).
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n1,10\n2,5\n4,3\n")
    assert main(["predict", str(path), "--upto", "3"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "preferred count: 3" in out
    d = run_json(capsys, str(path), "--upto", "2")
    assert [p["threads"] for p in d["predictions"]] == [1, 2] and d["preferred_threads"] == 2


def test_metric_option_for_value_column(capsys, tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("threads,value\n1,8\n2,4.2\n4,2.3\n")
    d = run_json(capsys, str(path), "--metric", "time", "--method", "amdahl", "--upto", "4")
    assert d["metric"] == "time"


# ---------------------------------------------------------------- table and plot


def test_table_output(capsys, time_csv):
    assert main(["predict", time_csv, "--method", "amdahl", "--upto", "12"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["threads", "time"]
    assert "measured" in lines[0]
    assert sum(1 for l in lines if l.strip() and l.split()[0].isdigit()) == 12
    assert "(2 runs)" in out  # the repeated count shows its spread
    assert "method: amdahl" in out
    assert "preferred count:" in out
    assert "knee:" in out and "of a thread" in out


def test_long_grid_table_is_compact(capsys, time_csv):
    assert main(["predict", time_csv, "--method", "amdahl", "--upto", "1000", "--at", "1500"]) == 0
    out, _ = capsys.readouterr()
    counts = [int(l.split()[0]) for l in out.splitlines() if l.strip() and l.split()[0].isdigit()]
    assert len(counts) < 40
    for n in (1, 2, 3, 4, 6, 8, 16, 512, 1000, 1500):
        assert n in counts
    assert "..." in out


def test_plot_writes_png(capsys, time_csv, tmp_path):
    out = tmp_path / "plot.png"
    assert main(["predict", time_csv, "--method", "usl", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert "threads" in capsys.readouterr().out


def test_plot_with_json(capsys, throughput_csv, tmp_path):
    out = tmp_path / "plot.png"
    d = run_json(capsys, throughput_csv, "--method", "amdahl", "--plot", str(out))
    assert d["method"] == "amdahl"
    assert out.read_bytes()[:8] == PNG_MAGIC


# ---------------------------------------------------------------- errors


@pytest.fixture
def bad_files(tmp_path) -> dict[str, str]:
    files = {
        "nonnumeric": "threads,time\n1,10\n2,abc\n",
        "nometric": "threads,value\n1,10\n2,6\n",
        "unknown": "threads,time,color\n1,10,red\n",
        "negative": "threads,time\n1,-1\n",
        "empty": "",
        "two_points": "threads,time\n1,10\n2,6\n",
    }
    out = {}
    for name, text in files.items():
        (tmp_path / f"{name}.csv").write_text(text)
        out[name] = str(tmp_path / f"{name}.csv")
    return out


@pytest.mark.parametrize(
    "args, words",
    [
        (["{nonnumeric}"], "{nonnumeric}: line 3"),
        (["{nometric}"], "--metric"),
        (["{unknown}"], "unknown column 'color'"),
        (["{negative}"], "must be positive"),
        (["{empty}"], "empty"),
        (["{missing}"], "no such file"),
        (["{dir}"], "directory"),
        (["{ok}", "--metric", "throughput"], "conflicts"),
        (["{ok}", "--upto", "0"], "--upto"),
        (["{ok}", "--upto", "-3"], "--upto"),
        (["{ok}", "--upto", "2.5"], "--upto"),
        (["{ok}", "--upto", "many"], "--upto"),
        (["{ok}", "--at", "4,x"], "--at"),
        (["{ok}", "--at", "4,,8"], "--at"),
        (["{ok}", "--at", "0"], "--at"),
        (["{ok}", "--at", ""], "--at"),
        (["{ok}", "--method", "nosuch"], "--method"),
        (["{ok}", "--metric", "speed"], "--metric"),
        (["{ok}", "--knee-fraction", "2"], "--knee-fraction"),
        (["{two_points}", "--method", "usl"], "{two_points}: method usl needs at least 3"),
        (["{ok}", "--method", "estima"], "stall"),
        (["{ok}", "--bogus"], "unrecognized"),
        ([], "FILE"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(capsys, tmp_path, time_csv, bad_files, args, words):
    names = dict(bad_files, ok=time_csv, missing=str(tmp_path / "missing.csv"), dir=str(tmp_path))
    plot = tmp_path / "out" / "never.png"
    plot.parent.mkdir()
    argv = ["predict"] + [a.format(**names) for a in args] + ["--plot", str(plot)]
    err = assert_one_line_error(capsys, argv, plot)
    assert words.format(**names) in err


@pytest.mark.parametrize("argv", [["predict", "{ok}", "--uptoo", "5"], ["run", "--targt", "4", "--", "true"],
                                  ["lib", "extra"], ["replay", "x.jsonl", "--bogus"]])
def test_unknown_option_points_at_the_subcommands_help(capsys, time_csv, argv):
    # 'corecast --help' lists no subcommand's options: the line must name the one that does.
    argv = [a.format(ok=time_csv) for a in argv]
    err = assert_one_line_error(capsys, argv)
    assert "unrecognized arguments" in err and f"(see 'corecast {argv[0]} --help')" in err


@pytest.mark.parametrize("argv", [
    ["predict", "{ok}", "--plot", ""], ["sweep", "--threads", "1,2", "--json-out", "", "--", "true"],
    ["sweep", "--threads", "1,2", "--stall-plugin", "", "--", "true"], ["export", "{ok}", "--html", ""],
    ["merge", "{ok}", "-o", ""], ["calibrate", "--quick", "-o", ""], ["replay", "{ok}", "--machine", ""],
    ["numa", "--machine", "", "--sample", "{ok}"],
])
def test_an_empty_file_name_is_refused(capsys, time_csv, argv):
    # fuzz40: '' read as the option left out: 'predict --plot ""' and 'merge -o ""' went on
    # without the file asked for, 'calibrate -o ""' wrote to the default path
    err = assert_one_line_error(capsys, [a.format(ok=time_csv) for a in argv])
    assert "an empty file name" in err


@pytest.mark.parametrize("option, value", [("--upto", "1_0"), ("--at", "1_6"), ("--upto", "\uff11\uff16"),
                                           ("--knee-fraction", "0.1_5"), ("--min-gain", "\uff10.5")])
def test_a_number_written_with_underscores_or_other_digits_is_refused(capsys, time_csv, option, value):
    # fuzz40: int() and float() read '1_0' as 10 and fullwidth digits as their value
    err = assert_one_line_error(capsys, ["predict", time_csv, option, value])
    assert f"argument {option}: {value!r} is not a" in err


def test_no_subcommand(capsys):
    assert_one_line_error(capsys, [])
    assert_one_line_error(capsys, ["nosuch"])


def test_unwritable_plot_path(capsys, time_csv, tmp_path):
    err = assert_one_line_error(capsys, ["predict", time_csv, "--plot", str(tmp_path / "no" / "dir" / "p.png")])
    assert "p.png: cannot write plot" in err


@pytest.fixture
def usl_crashes(monkeypatch):
    """The usl method raises ZeroDivisionError("oops"): a bug in a model."""
    from corecast.model.curve import methods

    def boom(data, nmax):
        raise ZeroDivisionError("oops")

    spec = methods.METHODS["usl"]
    monkeypatch.setitem(methods.METHODS, "usl", methods.Method(spec.name, spec.summary, spec.min_points, spec.needs, boom))


@pytest.mark.parametrize("debug", [None, "", "0"])
def test_model_crash_is_one_line(capsys, time_csv, monkeypatch, usl_crashes, debug):
    # CORECAST_DEBUG=0 gave the traceback: a user who writes 0 means off
    if debug is None:
        monkeypatch.delenv("CORECAST_DEBUG", raising=False)
    else:
        monkeypatch.setenv("CORECAST_DEBUG", debug)
    err = assert_one_line_error(capsys, ["predict", time_csv, "--method", "usl"], internal=True)
    assert "internal error in method usl: ZeroDivisionError: oops" in err


def test_debug_set_shows_the_models_traceback(time_csv, monkeypatch, usl_crashes):
    monkeypatch.setenv("CORECAST_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["predict", time_csv, "--method", "usl"])


def test_help_exits_zero(capsys):
    assert main(["predict", "--help"]) == 0
    out = capsys.readouterr().out
    for name in ("auto", "usl", "amdahl"):
        assert name in out


# ---------------------------------------------------------------- demo and subprocess


def test_demo_table(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "held out" in out
    assert "median relative error on the 16 held-out counts (17..32):" in out
    rows = [l for l in out.splitlines() if l.strip() and l.split()[0].isdigit()]
    assert [int(l.split()[0]) for l in rows] == list(range(1, 33))


def test_demo_json_and_plot(capsys, tmp_path):
    png = tmp_path / "demo.png"
    assert main(["demo", "--json", "--plot", str(png)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [p["threads"] for p in d["predictions"]] == list(range(1, 33))
    assert len(d["demo"]["held_out"]) == 16
    assert d["demo"]["median_relative_error"] >= 0
    assert png.read_bytes()[:8] == PNG_MAGIC


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecast", *argv], capture_output=True, text=True, timeout=300)


def test_subprocess_json(time_csv):
    proc = run_cli("predict", time_csv, "--method", "amdahl", "--upto", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["predictions"]) == 8


def test_subprocess_error(tmp_path):
    plot = tmp_path / "p.png"
    proc = run_cli("predict", str(tmp_path / "missing.csv"), "--plot", str(plot))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("corecast: error: ") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
    assert not plot.exists()


def test_subprocess_usage_error():
    proc = run_cli("predict")
    assert proc.returncode == 2
    assert proc.stderr.startswith("corecast: error: ") and proc.stderr.count("\n") == 1


def test_subprocess_demo():
    proc = run_cli("demo")
    assert proc.returncode == 0, proc.stderr
    assert "median relative error" in proc.stdout


def test_shared_dataset_predicts(capsys):
    d = run_json(capsys, str(DATASETS / "usl-R__raytracer.csv"), "--method", "usl", "--at", "100")
    assert d["metric"] == "throughput"
    assert d["predictions"][-1]["threads"] == 128


def test_ctrl_c_is_one_line(capsys, monkeypatch, time_csv):
    # Ctrl-C while predict reads a FIFO or fits: one error line, no traceback.
    from corecast.cli import predict as predict_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(predict_cli, "_predict", interrupted)
    assert main(["predict", time_csv]) == 130  # the console entry then dies of SIGINT
    out, err = capsys.readouterr()
    assert out == "" and err == "corecast: error: interrupted\n"


def test_plot_to_standard_output_is_the_png_alone(capsysbinary, time_csv):
    assert main(["predict", time_csv, "--plot", "-"]) == 0
    out, err = capsysbinary.readouterr()
    assert out.startswith(PNG_MAGIC) and out.endswith(b"IEND\xaeB`\x82")  # no table after it
    assert main(["predict", time_csv, "--plot", "-", "--json"]) == 2
    out, err = capsysbinary.readouterr()
    assert out == b"" and b"would both write to standard output" in err


def test_a_huge_count_is_not_echoed_whole(capsys, time_csv):
    assert main(["predict", time_csv, "--upto", "9" * 300]) == 2
    err = capsys.readouterr().err
    assert "..." in err and "at most 100000" in err and len(err) < 200  # the argument's error
    assert main(["predict", time_csv, "--knee-fraction", "x" * 300]) == 2
    err = capsys.readouterr().err
    assert "..." in err and len(err) < 200


def test_launch_commands_declare_only_themselves():
    # `corecast run` starts a program: the other subcommands' arguments are not declared
    # (they cost every run's start-up), yet its help and errors read as with the full parser.
    import argparse

    from corecast.cli import LAUNCHERS, build_parser

    def commands(parser: argparse.ArgumentParser) -> list[str]:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return list(sub.choices)

    assert set(LAUNCHERS) == {"run", "lib"}
    for name in LAUNCHERS:
        assert commands(build_parser(name)) == [name]
        assert build_parser(name).parse_args([name] + (["--", "true"] if name == "run" else [])).command == name
    assert {"predict", "run", "lib", "sweep", "numa"} <= set(commands(build_parser()))
    assert commands(build_parser("predict")) == commands(build_parser())


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_json_output_never_writes_nan_or_inf_bare(bad, capsys):
    # NaN and Infinity are no JSON: another tool's parser refuses the whole line.  The
    # models' results reach print_json finite (predict's as null); a value that did not is
    # refused here, never printed.
    from corecast.cli.common import print_json

    with pytest.raises(ValueError):
        print_json({"speedup": [1.0, bad]})
    assert capsys.readouterr().out == ""
