"""Issue 41: answers a performance engineer can act on (preferred counts that pay off,
weak scaling, honest fit figures, no silent drops, small things)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import corecast
from corecast.cli import main
from corecast.errors import InputError

DATA = Path(__file__).parent / "data"
# 45% efficiency at 16 threads (speedup 7.27): gains per thread fall to ~0.2 at 16.
N = [1, 2, 4, 8, 12, 16]
T = [16.0, 8.6, 4.8, 2.9, 2.4, 2.2]


# -- 1. the preferred count is not the horizon --------------------------------------

@pytest.mark.parametrize("method", ["auto", "usl", "amdahl"])
def test_preferred_count_does_not_follow_the_horizon(method):
    picks = {corecast.predict(N, T, metric="time", method=method, **kw).preferred
             for kw in (dict(upto=16), dict(upto=32), dict(upto=16, at=[1000]), dict(at=[1000]))}
    assert len(picks) == 1
    (pick,) = picks
    assert pick <= 16


def test_preferred_pays_off_and_fastest_is_named_apart():
    p = corecast.predict(N, T, metric="time", upto=64)
    assert p.preferred < 16 <= p.fastest <= 16  # auto's band vouches for no unmeasured count
    i = int(np.flatnonzero(p.counts == p.preferred)[0])
    # each thread up to the preferred count adds at least min_gain of one
    assert p.speedup[i] - 1 >= p.min_gain * (p.preferred - 1)
    d = p.to_dict()
    assert d["preferred_threads"] == p.preferred and d["fastest_threads"] == p.fastest


def test_a_step_that_gains_exactly_min_gain_a_thread_is_taken():
    # "At least min_gain of one thread's performance" per added thread: a curve that gains
    # exactly a quarter of one thread per thread (binary-exact values) is preferred to its
    # end; one a hair below a quarter stops at once.
    from corecast.model.curve.preference import preferred_count

    grid = np.arange(1.0, 9.0)
    exact = 1.0 + 0.25 * (grid - 1)
    assert preferred_count(grid, exact, exact, 1.0, 8.0, min_gain=0.25) == 8
    short = 1.0 + 0.2490234375 * (grid - 1)
    assert preferred_count(grid, short, short, 1.0, 8.0, min_gain=0.25) == 1


def test_preferred_beyond_the_measured_range_only_where_the_band_gains():
    n = np.arange(1, 9)
    linear = corecast.predict(n, 100.0 * n, metric="throughput", method="amdahl", upto=32)
    assert linear.preferred > 8  # a law's low end still gains there
    flat = corecast.predict(n, 100.0 * n / (1 + 0.1 * (n - 1)), metric="throughput", method="amdahl", upto=64)
    assert flat.preferred <= 8


def test_an_answer_the_horizon_stopped_says_so(capsys):
    n = np.arange(1, 9)
    linear = corecast.predict(n, 100.0 * n, metric="throughput", method="amdahl", upto=32)
    assert linear.preferred == 32
    assert sum("bounded by the largest count asked (32)" in w for w in linear.warnings) == 1
    # Weak scaling (the Caliper LULESH files' main): the work rate keeps rising, so the
    # fastest count the band supports is wherever the horizon is.
    ranks, times = [27, 64, 125, 216, 343], [47.238, 55.113, 56.238, 42.838, 52.588]
    weak = corecast.predict(ranks, times, metric="time", scaling="weak", upto=686)
    assert weak.fastest == 686 and weak.preferred == 343
    assert sum("fastest count is bounded by the largest count asked (686)" in w for w in weak.warnings) == 1
    # Where the band stops vouching before the horizon nothing is said.
    p = corecast.predict(N, T, metric="time", upto=64)
    assert not any("largest count asked" in w for w in p.warnings)


def test_a_horizon_below_the_measured_counts_says_it_bounds_the_preferred_count():
    # Measured to 16, asked to 8: the preferred count is 8 only because nothing past it
    # was asked (it is 12 or so otherwise), and the answer must say so.
    whole = corecast.predict(N, T, metric="time", upto=16)
    cut = corecast.predict(N, T, metric="time", upto=8)
    assert cut.preferred == 8 < whole.preferred
    said = [w for w in cut.warnings if "bounded by the largest count asked (8)" in w]
    assert len(said) == 1 and "below the largest measured (16)" in said[0]
    # Asked over every measured count, nothing is said.
    assert not any("largest count asked" in w for w in whole.warnings)


def test_no_knee_is_claimed_at_the_horizon(tmp_path, capsys):
    n = np.arange(1, 9)
    p = corecast.predict(n, 100.0 * n, metric="throughput", method="amdahl", upto=32)
    assert p.knee is None and p.to_dict()["knee_threads"] is None
    path = tmp_path / "lin.csv"
    path.write_text("threads,throughput\n" + "".join(f"{c},{100 * c}\n" for c in n))
    assert main(["predict", str(path), "--method", "amdahl", "--upto", "32"]) == 0
    out = capsys.readouterr().out
    assert "knee: none up to 32" in out and "knee: 32" not in out
    assert not any(line.endswith("knee") for line in out.splitlines())
    # A knee inside the counts asked is still named.
    assert corecast.predict(N, T, metric="time", upto=32).knee == 16


def test_sweep_and_predict_share_the_rule():
    from corecast.model.curve.extrapolation import extrapolate

    result = {"warnings": []}
    times = {n: [t] for n, t in zip(N, T)}
    extrapolate(result, times, N, [], {n: [{}] for n in N}, 32)
    assert result["preferred_threads"] == corecast.predict(N, T, metric="time", upto=32).preferred


def test_sweep_names_the_fastest_count_as_predict_does():
    # Its warnings speak of "the fastest count": the report must name one.
    from corecast.model.curve.extrapolation import extrapolate
    from corecast.views.sweeptable import format_sweep

    p = corecast.predict(N, T, metric="time", upto=32)
    assert p.preferred != p.fastest
    result = {"warnings": [], "command": ["prog"], "runtime": "openmp", "failed": [], "bottleneck": None,
              "measured": [{"threads": n, "time_s": t, "spread_s": 0.0, "stalls_s": {}} for n, t in zip(N, T)]}
    extrapolate(result, {n: [t] for n, t in zip(N, T)}, N, [], {n: [{}] for n in N}, 32)
    assert (result["preferred_threads"], result["fastest_threads"]) == (p.preferred, p.fastest)
    lines = format_sweep(result).splitlines()
    assert sum(line.startswith(f"fastest count: {p.fastest} ") for line in lines) == 1
    row = next(line for line in lines if line.split()[:1] == [str(p.fastest)] and "measured" in line)
    assert row.endswith("fastest")


def test_a_fastest_count_taken_from_the_measurements_says_so_in_predict_and_sweep(tmp_path, capsys):
    # A 3-count sweep on a 2-core VM (examples/omp_two_regions.c at 1,2,4): the model's
    # optimum 1 was measured slower than 4, so 4 is named for its measurement; its line must
    # give the measured time and claim no band support, in the same words in both commands.
    from corecast.model.curve.extrapolation import extrapolate
    from corecast.views.sweeptable import format_sweep

    counts, times = [1, 2, 4], [0.38511, 0.62922, 0.33308]
    p = corecast.predict(counts, times, metric="time", upto=16)
    assert (p.preferred, p.fastest) == (1, 4)
    assert p.value_at(4) != pytest.approx(0.33308, rel=1e-3)  # the model's time is not the measured one
    said = "fastest count: 4 (the best measured: time 0.33308"
    assert main(["predict", str(_csv(tmp_path, counts, times)), "--upto", "16"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fastest count:"))
    assert line.startswith(said) and "band" not in line
    assert p.fastest_measured
    result = {"warnings": [], "command": ["prog"], "runtime": "openmp", "failed": [], "bottleneck": None,
              "measured": [{"threads": n, "time_s": t, "spread_s": 0.0, "stalls_s": {}}
                           for n, t in zip(counts, times)]}
    extrapolate(result, {n: [t] for n, t in zip(counts, times)}, counts, [], {n: [{}] for n in counts}, 16)
    assert result["fastest_measured"] is True
    line = next(x for x in format_sweep(result).splitlines() if x.startswith("fastest count:"))
    assert line.startswith(said + " s, speedup 1.16;") and "band" not in line
    # A fastest count the model chose keeps its words, in both.
    p = corecast.predict(N, T, metric="time", upto=32)
    assert p.fastest != p.preferred and not p.fastest_measured
    assert main(["predict", str(_csv(tmp_path, N, T)), "--upto", "32"]) == 0
    assert f"fastest count: {p.fastest} (predicted time " in capsys.readouterr().out


def _csv(tmp_path, counts, times) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(counts, times)))
    return path


def test_cli_min_gain(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(N, T)))
    assert main(["predict", str(path), "--json", "--min-gain", "0.05"]) == 0
    low = json.loads(capsys.readouterr().out)
    assert main(["predict", str(path), "--json", "--min-gain", "0.5"]) == 0
    high = json.loads(capsys.readouterr().out)
    assert high["preferred_threads"] < low["preferred_threads"]
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert "preferred count: " in out and "gains at least 25% of one" in out


# -- 2. weak scaling -------------------------------------------------------------------

def test_weak_looking_input_warns_and_prints_no_efficiency_above_100(capsys):
    assert main(["predict", str(DATA / "extrap" / "json_input_1.JSON")]) == 0
    out = capsys.readouterr().out
    assert sum("--scaling weak" in line for line in out.splitlines() if line.startswith("warning:")) == 1
    effic = [float(c[:-1]) for line in out.splitlines() for c in line.split() if c.endswith("%")
             and c[:-1].replace(".", "").isdigit() and "SMAPE" not in line]
    assert max(effic) <= 100


def test_scaling_weak(capsys):
    assert main(["predict", str(DATA / "extrap" / "json_input_1.JSON"), "--scaling", "weak", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["series"][0]
    assert d["scaling"] == "weak" and not any("--scaling weak" in w for w in d["warnings"])
    rows = {r["threads"]: r for r in d["predictions"]}
    measured = {4: 3.5, 8: 5.5, 16: 9.5}
    for n, t in measured.items():  # efficiency T(base) / T(n)
        assert rows[n]["efficiency"] == pytest.approx(3.5 / t, rel=0.02)
    assert rows[1]["efficiency"] is None  # below the base count: not defined
    assert d["preferred_threads"] >= 4  # never an unmeasured count below the measured ones


@pytest.mark.parametrize("times, weak", [
    ([1.0, 1.02, 1.1], True),    # never faster, slower at the largest count
    ([1.0, 0.81, 1.05], True),   # at most 1.23x faster (within 1.25x), slower at the largest
    ([1.0, 0.85, 0.9], False),   # within 1.25x, but faster at the largest count than at 1
    ([1.0, 0.75, 1.05], False),  # 1.33x faster at 2: strong scaling that stopped paying
])
def test_the_weak_look_is_a_flat_time_curve_slower_at_its_largest_count(times, weak):
    # Both halves of the rule (preference.looks_weak): a curve that gained more than
    # WEAK_GAIN somewhere, or ends faster than it began, is strong scaling, and is told so
    # by no "--scaling weak" warning.  The positive cases alone let either half go.
    p = corecast.predict([1, 2, 4], times, metric="time")
    assert any("--scaling weak" in w for w in p.warnings) == weak, p.warnings


def test_weak_scaling_of_a_throughput_is_one_line(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("threads,throughput\n1,10\n2,19\n4,30\n")
    assert main(["predict", str(path), "--scaling", "weak"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "weak scaling reads times" in err


def test_caliper_rank_counts_are_labelled_ranks(capsys):
    pytest.importorskip("caliperreader")
    files = sorted(str(p) for p in (DATA / "caliper" / "mpi_scaling").glob("*.cali"))
    assert main(["predict", *files, "--callpath", "main"]) == 0
    out = capsys.readouterr().out
    assert "\nranks " in out and "\nthreads " not in out
    assert any(line.startswith("warning:") and "--scaling weak" in line for line in out.splitlines())


# -- 4. corecast.predict needs the metric ---------------------------------------------

def test_predict_requires_the_metric():
    with pytest.raises(InputError, match="metric must be given"):
        corecast.predict(N, T)


# -- 3. fit figures that cannot be true -------------------------------------------------

def test_interpolating_members_are_not_scored_as_fits(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n1,10\n2,5.3\n4,2.9\n8,1.8\n16,1.4\n")
    assert main(["predict", str(path), "--json"]) == 0
    rows = {q["model"]: q for q in json.loads(capsys.readouterr().out)["fit_quality"]}
    for name in ("auto", "plateau", "trend", "damped"):
        assert rows[name]["interpolates"] and rows[name]["adj_r2"] is None
    assert rows["auto"]["holdout"] == "leave-last-out" and rows["auto"]["holdout_error"] >= 0
    assert rows["plateau"]["holdout"] == "backtest" and rows["plateau"]["holdout_error"] > 0
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert "interpolates: not a fit" in out and "1.0000" not in out.split("fit quality")[1]


def test_a_member_that_cannot_be_backtested_has_no_figure():
    # presca needs 5 counts; up to the cut (8) there are 4: it has no backtest error.
    p = corecast.predict(N, T, metric="time")
    assert "presca" in p.reason and "inf" not in p.reason
    assert "not backtested (cannot be fitted up to 8)" in p.reason
    assert p.to_dict()["extras"]["backtest"]["presca"] is None


def test_a_law_with_residuals_keeps_its_figures():
    p = corecast.predict(N, T, metric="time", method="usl")
    (q,) = p.fit_quality
    assert not q["interpolates"] and 0.9 < q["adj_r2"] < 1 and q["holdout"] == "leave-last-out"


# -- 4. silent drops -----------------------------------------------------------------------

def stall_warnings(tmp_path, capsys, rows: str) -> list[str]:
    """``predict``'s warnings about stall columns for a threads,time,stall:lock file."""
    path = tmp_path / "s.csv"
    path.write_text("threads,time,stall:lock\n" + rows)
    assert main(["predict", str(path)]) == 0
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning: stall:")]


def test_auto_says_when_stall_columns_go_unused(tmp_path, capsys):
    warned = stall_warnings(tmp_path, capsys, "1,10.0,0.0\n2,5.3,0.2\n4,2.9,0.4\n")
    assert len(warned) == 1 and "estima needs at least 6" in warned[0]


@pytest.mark.parametrize("columns, rows, said", [
    # Two counts whose time grows: auto fits USL alone and tried no column's member, yet
    # the warning that the columns went unused was left out (a sweep of an OpenMP lock
    # convoy at 1 and 2 threads: stall:omp_lock dropped without a word).
    ("stall:lock", "1,1.0,0.01\n2,8.0,10\n", "stall:* columns unused: method estima needs at least 6"),
    ("size:n", "1,1.0,100\n2,8.0,100\n1,2.0,200\n2,9.0,200\n",
     "size:* columns unused: method sizemodel needs at least 4"),
])
def test_auto_says_columns_go_unused_on_two_falling_points(tmp_path, capsys, columns, rows, said):
    path = tmp_path / "f.csv"
    path.write_text(f"threads,time,{columns}\n" + rows)
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert "chose usl: only usl could be fitted" in out
    assert [line for line in out.splitlines() if line.startswith(f"warning: {said}")]


def test_docs_estima_example_runs(tmp_path, capsys):
    readme = (Path(__file__).parents[1] / "docs" / "predict.md").read_text()
    block = readme.split("```\nthreads,time,stall:lock\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "e.csv"
    path.write_text("threads,time,stall:lock\n" + block)
    assert main(["predict", str(path), "--method", "estima"]) == 0
    out = capsys.readouterr().out  # the example shows ESTIMA using its stalls, not its fallback
    assert "method: estima, chose F=" in out and "extrapolated the time directly" not in out
    assert main(["predict", str(path)]) == 0
    assert "stall:* columns unused" not in capsys.readouterr().out


def test_auto_says_when_estima_ran_on_the_time_alone(tmp_path, capsys):
    # A lock wait of 0 at one thread leaves ESTIMA 5 counts for its factor: it falls back
    # to the time alone, and auto, which keeps it as a member, must say the column went unused.
    warned = stall_warnings(tmp_path, capsys, "1,10.0,0.0\n2,5.3,0.2\n4,2.9,0.4\n8,1.8,0.9\n12,1.5,1.5\n16,1.4,2.3\n")
    assert len(warned) == 1 and "estima ran on the time alone" in warned[0]


def test_estima_with_too_few_counts_is_one_line(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("threads,time,stall:lock\n1,10.0,0.0\n2,5.3,0.2\n4,2.9,0.4\n")
    assert main(["predict", str(path), "--method", "estima"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs at least 6" in err


def test_export_extrap_keeps_repetitions():
    from corecast.views.sweepviz import extrap_records

    result = {"measured": [
        {"threads": 1, "time_s": 2.0, "spread_s": 0.1, "stalls_s": {"lock": 0.0},
         "runs": [{"time_s": 1.9, "stalls_s": {"lock": 0.0}}, {"time_s": 2.0, "stalls_s": {"lock": 0.0}},
                  {"time_s": 2.1, "stalls_s": {"lock": 0.0}}]},
        {"threads": 2, "time_s": 1.1, "spread_s": 0.0, "stalls_s": {"lock": 0.1},
         "runs": [{"time_s": 1.1, "stalls_s": {"lock": 0.1}}]}]}
    times = [(r["params"]["threads"], r["value"]) for r in extrap_records(result) if r["metric"] == "time"]
    assert times == [(1, 1.9), (1, 2.0), (1, 2.1), (2, 1.1)]
    stalls = [r for r in extrap_records(result) if r["metric"] == "stall:lock"]
    assert len(stalls) == 4


@pytest.mark.parametrize("count, words", [(None, "each thread added"), ("ranks", "each rank added")])
def test_an_exported_sweep_names_what_it_counted(tmp_path, capsys, count, words):
    # Exported with Extra-P's customary "p", predict read it back as "units of p".
    from corecast.views.sweepviz import export_extrap

    result = {"measured": [{"threads": n, "time_s": 8.0 / n + 0.1} for n in (1, 2, 4, 8)]}
    if count:
        result["count"] = count
    path = tmp_path / "sweep.jsonl"
    export_extrap(result, str(path))
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert words in out and "units of p" not in out


# -- 5. small things ---------------------------------------------------------------------

@pytest.mark.parametrize("name, magic", [("c.svg", b"<?xml"), ("c.pdf", b"%PDF"), ("c.png", b"\x89PNG")])
def test_plot_format_follows_the_suffix(tmp_path, name, magic):
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(N, T)))
    assert main(["predict", str(path), "--plot", str(tmp_path / name)]) == 0
    assert (tmp_path / name).read_bytes().startswith(magic)


@pytest.mark.parametrize("name, magic", [("c.jpg", b"\xff\xd8"), ("c.webp", b"RIFF"), ("c", b"\x89PNG"), ("C.SVG", b"<?xml")])
def test_every_plot_suffix_gets_its_own_format(tmp_path, name, magic):
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(N, T)))
    assert main(["predict", str(path), "--plot", str(tmp_path / name)]) == 0
    assert (tmp_path / name).read_bytes().startswith(magic)


@pytest.mark.parametrize("suffix", ["bmp", "xyz", "out"])
@pytest.mark.parametrize("command", [["predict", "{csv}"], ["export", "{sweep}", "--extrap", "{out}"]])
def test_a_plot_suffix_no_format_has_is_one_line(tmp_path, capsys, command, suffix):
    csv = tmp_path / "t.csv"
    csv.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(N, T)))
    sweep = tmp_path / "s.json"
    sweep.write_text(json.dumps({
        "command": ["prog"], "runtime": "openmp", "failed": [], "warnings": [], "bottleneck": None,
        "stall_predictions": {}, "preferred_threads": 1,
        "measured": [{"threads": 1, "time_s": 1.0, "spread_s": 0.0, "stalls_s": {}}],
        "predictions": [{"threads": 1, "value": 1.0, "low": 0.9, "high": 1.1, "speedup": 1.0}]}))
    args = [a.format(csv=csv, sweep=sweep, out=tmp_path / "x.jsonl") for a in command]
    # .xyz and .out once got PNG bytes under their names; only .bmp and a few other image
    # suffixes were refused.
    assert main(args + ["--plot", str(tmp_path / f"c.{suffix}")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot plot to a .{suffix} file: name it .png, .svg or .pdf" in err
    assert not (tmp_path / f"c.{suffix}").exists() and not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("text", ["threads\ttime\n1\t10\n2\t5.3\n4\t2.9\n",
                                  "threads;time\n1;10\n2;5,3\n4;2,9\n",
                                  "# metric: time\nthreads;value\n1;10.0\n2;5.3\n4;2.9\n"])
def test_tab_and_semicolon_separated_files(tmp_path, capsys, text):
    path = tmp_path / "t.csv"
    path.write_text(text)
    assert main(["predict", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["metric"] == "time" and d["predictions"][1]["value"] == pytest.approx(5.3, rel=0.05)


@pytest.mark.parametrize("n, word", [(1, "a"), (8, "an"), (11, "an"), (16, "a"), (18, "an"), (80, "an"),
                                     (100, "a"), (800, "an"), (1100, "a"), (8000, "an"), (18000, "an")])
def test_article(n, word):
    from corecast.errors import article

    assert article(n) == word


def test_replay_header_says_an_8_core_and_calibrated(tmp_path):
    from corecast.tools.replay import replay
    from corecast.model.machine import calibration as machine
    from corecast.views.replayview import table

    recording = DATA / "recordings" / "schema1-npb-mg.A-4.jsonl"
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps({machine.KEY: machine.SCHEMA, "machine": {"cpus": 16, "cpu_model": "x"},
                               "compute": {"efficiency": [[1, 1.0], [4, 0.94], [16, 0.82]]}}))
    (rep,) = replay(str(recording), 8, str(cal))
    head = table(rep, str(cal)).splitlines()[0]
    assert "on an 8-core machine" in head and "calibrated" in head and "cal.json" in head
    (plain,) = replay(str(recording), 8)
    assert "calibrated" not in table(plain).splitlines()[0]


def test_sweep_table_shows_the_measured_speedup_beside_the_models():
    from corecast.views.sweeptable import format_sweep

    result = {"command": ["prog"], "runtime": "openmp", "failed": [], "warnings": [], "bottleneck": None,
              "stall_predictions": {}, "preferred_threads": 2,
              "measured": [{"threads": 1, "time_s": 1.0, "spread_s": 0.0, "stalls_s": {}},
                           {"threads": 2, "time_s": 0.9, "spread_s": 0.0, "stalls_s": {}}],
              "predictions": [{"threads": 1, "value": 1.0, "low": 0.9, "high": 1.1, "speedup": 1.0},
                              {"threads": 2, "value": 1.075, "low": 0.9, "high": 1.2, "speedup": 0.93}]}
    row = next(line for line in format_sweep(result).splitlines() if line.split()[:1] == ["2"]
               and "preferred" in line)
    assert "0.93" in row and "measured 1.11x, preferred" in row


def test_sweep_suggests_no_option_it_lacks():
    # predict's weak-looking warning says "--scaling weak", an option corecast sweep
    # has not: the sweep's own warning sends its JSON to corecast predict, which has it.
    from corecast.model.curve.extrapolation import extrapolate

    counts, times = [1, 2, 4], [0.23, 0.33, 0.31]
    assert any('(--scaling weak, scaling="weak" in Python)' in w
               for w in corecast.predict(counts, times, metric="time").warnings)
    result = {"warnings": []}
    extrapolate(result, {n: [t] for n, t in zip(counts, times)}, counts, [], {n: [{}] for n in counts}, 16)
    assert result["predictions"] and not any("say --scaling" in w for w in result["warnings"])
    assert all("corecast predict" in w for w in result["warnings"] if "--scaling" in w)


def test_the_exit_table_names_the_fastest_count_as_predict_does():
    # The runtime's count is the fewest threads within 1% of the best predicted speedup:
    # predict's "fastest", not its "preferred" (nor a third word, "best").
    from corecast.views.columns import c_header, heading
    from corecast.views.replayview import table
    from corecast.tools.replay import replay

    head = heading(16).split()
    assert "fastest" in head and "best" not in head and "preferred" not in head
    assert '"fastest"' in c_header()
    (rep,) = replay(str(DATA / "recordings" / "schema1-npb-mg.A-4.jsonl"), 8)
    lines = table(rep).splitlines()
    at = lines[1].index("fastest") + len("fastest")
    assert any(line[:at].rstrip()[-1:].isdigit() for line in lines[2:])  # the count under its heading


def test_merge_names_preferred_and_fastest_as_predict_does(monkeypatch):
    # One run: the one-run model's best was called "preferred"; predict's preferred count
    # is the one that pays off, and with no band nothing past the largest run is vouched for.
    from corecast.tools import ranks
    from corecast.views.mergeview import table, to_dict

    def sample(rank: int) -> "ranks.RankSample":
        return ranks.RankSample(rank, 100 + rank, "r.jsonl", 1, 1.0, 0.9, {"mpi_p2p": 0.05, "mpi_collective": 0.05},
                                {"mpi_p2p": 0, "mpi_collective": 0}, 0.0, 0.0)

    monkeypatch.setattr(ranks, "collect_runs", lambda paths, fmt=None: ([ranks.Run(4, [sample(r) for r in range(4)])], []))
    m = ranks.merge(["r.jsonl"], upto=64)
    assert m.preferred == 4 and m.fastest > 4
    d = to_dict(m)
    assert (d["preferred_ranks"], d["fastest_ranks"]) == (4, m.fastest)
    text = table(m)
    assert "preferred: 4 ranks" in text and "no band" in text
    assert f"  fastest count: {m.fastest} (predicted time " in text and not m.fastest_measured


def _merged(monkeypatch, times: list[float]):
    """``ranks.merge`` of one run per world size 1, 2, 4, ..., each rank's MPI phase the
    size's time (0.1 s of it MPI wait)."""
    from corecast.tools import ranks

    def sample(rank: int, wall: float) -> "ranks.RankSample":
        return ranks.RankSample(rank, 100 + rank, "r.jsonl", 1, wall, wall - 0.1,
                                {"mpi_p2p": 0.05, "mpi_collective": 0.05}, {"mpi_p2p": 0, "mpi_collective": 0},
                                0.0, 0.0)

    runs = [ranks.Run(2 ** i, [sample(r, t) for r in range(2 ** i)]) for i, t in enumerate(times)]
    monkeypatch.setattr(ranks, "collect_runs", lambda paths, fmt=None: (runs, []))
    return ranks.merge(["r.jsonl"], upto=64)


def test_merge_names_a_measured_fastest_count_in_predicts_words(monkeypatch):
    # The regression's optimum (6 ranks) was measured slower than 8: merge called 8 "the
    # best predicted" where predict and sweep say it is the best measured, with its time (#41).
    from corecast.views.mergeview import table, to_dict

    m = _merged(monkeypatch, [8.0, 4.2, 2.5, 2.0, 3.5])
    lines = table(m).splitlines()
    assert not any("best predicted" in line for line in lines)
    assert "  fastest count: 8 (the best measured: time 2.000 s; the model's optimum was measured slower)" in lines
    assert (m.preferred, m.fastest, m.fastest_measured) == (4, 8, True)
    assert to_dict(m)["fastest_measured"] is True


def test_predict_never_prints_a_tiny_speedup_as_zero(tmp_path, capsys):
    # A time growing with the count: at 16 threads and past it the speedup is a few
    # thousandths, and the table printed 0.00 there, as if nothing ran at all.
    counts, times = [1, 2, 4, 8], [1.0, 3.0, 20.0, 150.0]
    p = corecast.predict(counts, times, metric="time", upto=64)
    assert 0 < min(p.speedup) < 0.005
    assert main(["predict", str(_csv(tmp_path, counts, times)), "--upto", "64"]) == 0
    out = capsys.readouterr().out.splitlines()
    col = out[0].split().index("speedup") - 1  # the heading "band low..high" is one cell in a row
    rows = [row.split() for row in out[1:out.index("")] if row.split()[0].isdigit()]
    cells = {int(row[0]): row[col] for row in rows}
    assert all(float(c.lstrip("<")) > 0 for c in cells.values()), cells
    from corecast.views.report import speedup_cell

    assert cells[16] == speedup_cell(p.speedup[list(p.counts).index(16)]) != "0.00"
    assert cells[1] == "1.00"  # two decimals as before where they say something
    assert [speedup_cell(x) for x in (0.004, 0.0004, 0.0, 0.37, 12.345)] == ["0.004", "<0.001", "0.00", "0.37", "12.35"]


def test_sweep_and_merge_never_print_a_tiny_speedup_as_zero(monkeypatch):
    # The same rule as predict's table in sweep's and merge's speedup cells: both printed
    # two decimals, 0.00 where the time grows a hundredfold.
    from corecast.model.curve.extrapolation import extrapolate
    from corecast.views.mergeview import table
    from corecast.views.report import speedup_cell
    from corecast.views.sweeptable import format_sweep

    counts, times = [1, 2, 4, 8], [1.0, 3.0, 20.0, 150.0]
    result = {"warnings": [], "command": ["prog"], "runtime": "openmp", "failed": [], "bottleneck": None,
              "measured": [{"threads": n, "time_s": t, "spread_s": 0.0, "stalls_s": {}} for n, t in zip(counts, times)]}
    extrapolate(result, {n: [t] for n, t in zip(counts, times)}, counts, [], {n: [{}] for n in counts}, 64)
    tiny = [p for p in result["predictions"] if p["speedup"] < 0.01]
    assert tiny
    rows = {line.split()[0]: line.split() for line in format_sweep(result, max_rows=200).splitlines()
            if line.split()[:1] and line.split()[0].isdigit()}
    shown = [p for p in tiny if str(p["threads"]) in rows]
    assert shown  # the table shows some of them: the loop below checks something
    for p in shown:
        assert speedup_cell(p["speedup"]) in rows[str(p["threads"])] and "0.00" != speedup_cell(p["speedup"])
    s_row = next(line for line in table(_merged(monkeypatch, [1.0, 3.0, 20.0, 150.0, 1200.0])).splitlines()
                 if line.startswith("  S "))
    cells = s_row.split()[1:]
    assert "0.00" not in cells and any(c == "<0.001" or c.startswith("0.00") for c in cells)


def test_a_preferred_count_the_best_measured_one_capped_says_so(tmp_path, capsys, monkeypatch):
    # The best measured count (6) caps the rule's preferred count (7): the line claimed
    # that each thread added up to 6 gains at least 25% of one, which the rule never said.
    from corecast.views.mergeview import table

    counts, times = [1, 2, 4, 6, 8], [1.0, 0.5, 0.26, 0.18, 0.2]
    assert main(["predict", str(_csv(tmp_path, counts, times)), "--method", "usl", "--upto", "16"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("preferred count:")]
    assert line == "preferred count: 6 (the best measured count, below the model's preferred 7; measured time 0.18)"
    p = corecast.predict(counts, times, metric="time", upto=16, method="usl")
    assert (p.preferred, p.fastest, p.fastest_measured, p.model_preferred) == (6, 6, True, 7)
    # merge: the regression's preferred 9 ranks capped by the 8 measured fastest
    m = _merged(monkeypatch, [8.0, 4.0, 2.0, 1.05, 1.2])
    assert "  preferred: 8 ranks (the best measured count, below the model's preferred 9)" in table(m).splitlines()
    assert (m.preferred, m.fastest, m.model_preferred) == (8, 8, 9)
    # A preferred count the rule chose keeps the rule's words.
    p = corecast.predict(N, T, metric="time", upto=32)
    assert p.model_preferred is None
    assert main(["predict", str(_csv(tmp_path, N, T)), "--upto", "32"]) == 0
    assert "gains at least 25% of one)" in capsys.readouterr().out


def test_the_smt_note_names_the_first_count_past_the_measured_placement():
    # The README's --hw-threads 40 --cores 20 on a curve measured up to 16: threads 17-20
    # still get a core of their own, so the step is past 20, not past 16.
    p = corecast.predict(N, T, metric="time", upto=64, hw_threads=40, cores=20)
    (note,) = [w for w in p.warnings if "place threads where no measured count did" in w]
    assert note.startswith("counts above 20 ")


# -- the audit's loose ends: each thing said once, no rounding noise, the count's own name --

def test_the_base_count_is_said_once(capsys):
    # The report's own line and the prediction's warning both said that speedup is
    # relative to count 4.
    assert main(["predict", str(DATA / "extrap" / "json_input_1.JSON")]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if "relative to" in line]
    assert len(said) == 1 and said[0].endswith("relative to count 4")


def _sweep_warnings(counts: list[int], times: list[float], stalls: dict[str, list[float]]) -> list[str]:
    from corecast.model.curve.extrapolation import extrapolate

    per_count = {n: [{k: v[i] for k, v in stalls.items()}] for i, n in enumerate(counts)}
    result = {"warnings": []}
    extrapolate(result, {n: [t] for n, t in zip(counts, times)}, counts, list(stalls), per_count, 32)
    return result["warnings"]


def test_sweep_says_once_why_estima_left_the_stalls():
    # Three counts: auto's "stall:* columns unused: method estima needs at least 6" beside
    # the sweep's own "ESTIMA needs 6 measured counts, the sweep has 3".
    warned = _sweep_warnings([1, 2, 4], [10.0, 5.3, 2.9], {"lock": [0.0, 0.2, 0.4]})
    assert [w for w in warned if "estima" in w.lower()] == [
        "ESTIMA needs 6 measured counts, the sweep has 3: each stall category was extrapolated on its own "
        "with method auto (rough)"]
    # Six counts whose stalls ESTIMA cannot translate to time: its fallback, said once.
    from corecast.model.curve.methods.estima import TIME_ONLY

    warned = _sweep_warnings([1, 2, 4, 8, 12, 16], [10.0, 5.3, 2.9, 1.8, 1.5, 1.4],
                             {"lock": [0.0, 0.2, 0.4, 0.9, 1.5, 2.3]})
    assert sum(TIME_ONLY in w for w in warned) == 1 and not any(w.startswith("stall:*") for w in warned)


def test_sweep_prints_a_time_below_the_clock_as_0():
    from corecast.views.sweeptable import format_sweep

    noise = 4.3368e-19  # a fitted stall curve that reaches 0 up to rounding
    result = {"command": ["prog"], "runtime": "openmp", "failed": [], "warnings": [], "bottleneck": "lock",
              "preferred_threads": 1, "fastest_threads": 1,
              "measured": [{"threads": n, "time_s": 1.0 / n, "spread_s": 0.0, "stalls_s": {"lock": 0.1, "atomic": noise}}
                           for n in (1, 2)],
              "predictions": [{"threads": n, "value": 1.0 / n, "low": 0.9 / n, "high": 1.1 / n, "speedup": float(n)}
                              for n in (1, 2, 3, 4)],
              "stall_predictions": {"lock": [{"threads": n, "value": 0.1 if n < 4 else noise} for n in (1, 2, 3, 4)],
                                    "atomic": [{"threads": n, "value": noise} for n in (1, 2, 3, 4)]},
              "regions": [{"name": "f._omp_fn.0", "share": 0.5, "warnings": [], "bottleneck": None,
                           "preferred_threads": 1, "fastest_threads": 1,
                           "measured": [{"threads": n, "time_s": noise} for n in (1, 2)],
                           "predictions": [{"threads": 4, "value": noise, "speedup": 1.0}]}]}
    text = format_sweep(result)
    assert "e-19" not in text
    assert "atomic" not in text.split("predicted:")[0]  # no measured stall of 0 among the top stalls
    assert "(predicted lock 0 s, atomic 0 s)" in text
    row = next(line for line in text.splitlines() if line.startswith("f._omp_fn.0"))
    assert row.split()[2:5] == ["0", "0", "0"]


def test_a_stall_below_the_clock_is_no_bottleneck():
    from corecast.model.curve.extrapolation import extrapolate

    counts = [1, 2, 4]
    per_count = {n: [{"lock": v}] for n, v in zip(counts, (3e-10, 4e-10, 5e-10))}
    result = {"warnings": []}
    extrapolate(result, {n: [t] for n, t in zip(counts, (1.0, 0.6, 0.4))}, counts, ["lock"], per_count, 8)
    assert result["bottleneck"] is None


@pytest.mark.parametrize("name, unit", [("text_one_parameter_1.txt", "x"), ("text_one_parameter_6.txt", "p"),
                                        ("json_input_1.JSON", "x"), ("json_new_input1.json", "x")])
def test_extrap_counts_keep_their_parameter_name(capsys, name, unit):
    assert main(["predict", str(DATA / "extrap" / name)]) == 0
    out = capsys.readouterr().out
    assert "thread" not in out
    assert any(line.split()[:2] == [unit, "time"] for line in out.splitlines())
    assert f"each unit of {unit} added up to it" in out
    assert main(["predict", str(DATA / "extrap" / name), "--json"]) == 0
    assert {s["count_unit"] for s in json.loads(capsys.readouterr().out)["series"] if "count_unit" in s} == {unit}


@pytest.mark.parametrize("parameter, unit", [("threads", "threads"), ("Rank", "ranks"), ("p", "p")])
def test_extrap_json_lines_say_what_their_count_counts(tmp_path, capsys, parameter, unit):
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"params": {parameter: n}, "value": 8.0 / n}) + "\n" for n in (1, 2, 4, 8)))
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert any(line.split()[:2] == [unit, "time"] for line in out.splitlines())
    assert ("each thread added" in out) == (unit == "threads")


def test_a_weak_tie_names_the_measured_count(capsys):
    # Weak scaling's work rate 63/33.009 is within the 0.1% tie of 64/33.5: the fewest,
    # 63, was never measured, 64 was.
    assert main(["predict", str(DATA / "extrap" / "json_input_1.JSON"), "--scaling", "weak", "--json"]) == 0
    (d,) = json.loads(capsys.readouterr().out)["series"]
    assert d["fastest_threads"] == 64
    assert main(["predict", str(DATA / "extrap" / "json_input_1.JSON"), "--scaling", "weak"]) == 0
    assert "fastest count: 64 " in capsys.readouterr().out


def test_a_tie_names_the_measured_count_before_the_fewest():
    from corecast.model.curve.preference import fastest_count

    grid = np.arange(1.0, 9.0)
    perf = np.array([1.0, 1.9, 2.7, 3.4, 3.9, 3.999, 3.9995, 4.0])  # 6..8 tie within 0.1%
    assert fastest_count(grid, perf, perf, 1.0, 8.0) == 6
    assert fastest_count(grid, perf, perf, 1.0, 8.0, np.array([1.0, 2.0, 4.0, 8.0])) == 8
    assert fastest_count(grid, perf, perf, 1.0, 8.0, np.array([1.0, 2.0, 4.0, 7.0, 8.0])) == 7


def test_a_small_efficiency_never_reads_as_zero(tmp_path, capsys):
    # A time that grows a hundredfold per doubling (plateau follows the measured points):
    # 0.5% efficiency at 2 threads, below 0.1% at 4.
    n, t = [1, 2, 4, 8], [1, 100, 1e4, 1e6]
    p = corecast.predict(n, t, metric="time", upto=8, method="plateau")
    assert 0.001 <= p.efficiency[1] < 0.01 and 0 < p.efficiency[3] < 0.001
    assert main(["predict", str(_csv(tmp_path, n, t)), "--upto", "8", "--method", "plateau"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:9]]
    assert not any(r[4] == "0%" for r in rows)
    from corecast.views.report import percent

    assert [r[4] for r in rows] == [percent(e) for e in p.efficiency]
    assert rows[1][4] == f"{p.efficiency[1]:.1%}" and rows[3][4] == "<0.1%"
    assert not any(r[4] == "0%" for r in rows)
    assert (percent(0), percent(0.25), percent(0.002), percent(0.0004)) == ("0%", "25%", "0.2%", "<0.1%")
