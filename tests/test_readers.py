"""Extra-P and Caliper inputs (issue 17), read from real files of those projects'
repositories (tests/data/PROVENANCE.md), and the fit metrics shown beside each model."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main
from corecast.model.curve.entities import InputError
from corecast.model.curve.fitquality import count_params, fit_quality
from corecast.io.readers import read_inputs

DATA = Path(__file__).parent / "data"
XP = DATA / "extrap"
CAL = DATA / "caliper"
MPI = sorted((CAL / "mpi_scaling").glob("*.cali"), key=lambda p: int(p.name.split("_")[0]))


def _by_label(series):
    return {(s.callpath, s.metric_name): s for s in series}


# ---------------------------------------------------------------- Extra-P


def test_extrap_text_one_region_repetitions():
    (s,) = read_inputs([str(XP / "text_one_parameter_1.txt")])
    assert (s.callpath, s.metric_name, s.source) == ("compute", "time", "extrap")
    assert s.data.counts.tolist() == [20, 30, 40, 50, 60]
    assert s.data.repetitions.tolist() == [6, 6, 6, 6, 6]
    # the median of the six DATA values of the first point
    assert s.data.values[0] == pytest.approx(np.median(
        [82.00848518948744, 81.42023198759563, 81.98984501217201, 80.76019835580321,
         82.54252892405795, 82.54252892405795]))


def test_extrap_text_several_regions_without_metric():
    series = read_inputs([str(XP / "text_one_parameter_6.txt")])
    assert [s.callpath for s in series] == ["met1", "met2", "met3", "met4"]
    met2 = series[1]
    assert met2.data.counts.tolist() == [1000, 2000, 4000, 8000, 16000]
    assert met2.data.values[-1] == pytest.approx(256.0)  # median of 256.01 255.99 256 256


def test_extrap_legacy_and_nested_json_agree():
    (legacy,) = read_inputs([str(XP / "json_input_1.JSON")])
    (nested,) = read_inputs([str(XP / "json_new_input1.json")])
    for s in (legacy, nested):
        assert (s.callpath, s.metric_name) == ("sweep", "time")
        assert s.data.counts.tolist() == [4, 8, 16, 32, 64]
    assert legacy.data.values.tolist() == nested.data.values.tolist() == [3.5, 5.5, 9.5, 17.5, 33.5]


def test_extrap_two_parameters_refused_in_one_line(capsys):
    err = assert_one_line_error(capsys, ["predict", str(XP / "text_two_parameter_1.txt")])
    assert "2 parameters" in err and "one parameter, the count" in err


def test_predict_extrap_strong_scaling_json_has_fit_metrics(capsys):
    assert main(["predict", str(XP / "strong_scaling_one_parameter_1.txt"), "--json", "--upto", "120"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "extrap"
    (s,) = out["series"]
    assert (s["callpath"], s["metric_name"]) == ("compute", "time")
    assert s["predictions"][-1]["threads"] == 120
    models = [q["model"] for q in s["fit_quality"]]
    assert models[0] == "auto" and len(models) >= 3  # the median, then its members
    for q in s["fit_quality"]:
        assert q["params"] >= 1
        # a model through every point is not scored (no RSS of 0 claiming a perfect fit)
        assert (q["rss"] is None and q["smape"] is None) if q["interpolates"] else (q["rss"] >= 0 and q["smape"] >= 0)


def test_predict_extrap_callpath_picks_one(capsys):
    assert main(["predict", str(XP / "text_one_parameter_6.txt"), "--callpath", "met3"]) == 0
    out = capsys.readouterr().out
    assert "== met3" in out and "met1" not in out
    assert "fit quality against the 5 measured counts" in out and "adj. R²" in out


def test_predict_extrap_unknown_callpath(capsys):
    err = assert_one_line_error(capsys, ["predict", str(XP / "text_one_parameter_6.txt"), "--callpath", "nope"])
    assert "no callpath 'nope' (the file's callpaths: 'met1', 'met2'" in err


def test_export_extrap_round_trip(tmp_path, capsys):
    sweep = {"measured": [{"threads": n, "time_s": 8.0 / n + 0.5, "stalls_s": {"lock": 0.1 * n}}
                          for n in (1, 2, 4, 8)]}
    (tmp_path / "s.json").write_text(json.dumps(sweep))
    assert main(["export", "--extrap", str(tmp_path / "x.jsonl"), str(tmp_path / "s.json")]) == 0
    series = _by_label(read_inputs([str(tmp_path / "x.jsonl")]))
    # the stall category comes back as the time curve's stall column, as a CSV's stall:NAME
    # column does; a curve of its own got a speedup and a preferred count (newuser30)
    assert set(series) == {("main", "time")}
    assert series[("main", "time")].data.values.tolist() == [8.5, 4.5, 2.5, 1.5]
    assert series[("main", "time")].data.stalls["lock"].tolist() == pytest.approx([0.1, 0.2, 0.4, 0.8])
    (asked,) = read_inputs([str(tmp_path / "x.jsonl")], profile_metric="stall:lock")
    assert (asked.metric_name, asked.data.values.tolist()) == ("stall:lock", pytest.approx([0.1, 0.2, 0.4, 0.8]))


# ---------------------------------------------------------------- Caliper


def test_caliper_cali_profiles_by_rank_count():
    pytest.importorskip("caliperreader")
    series = _by_label(read_inputs([str(p) for p in MPI]))
    main_ = series[("main", "avg#inclusive#sum#time.duration")]
    # 'threads' is 1 in every profile: the count is the attribute that varies
    assert main_.data.counts.tolist() == [27, 64, 125, 216, 343]
    assert main_.source == "caliper"
    assert all(s.data is not None for s in series.values())


def test_caliper_single_profile_needs_more_counts(capsys):
    pytest.importorskip("caliperreader")
    err = assert_one_line_error(capsys, ["predict", str(CAL / "example-profile.cali")])
    assert "threads = 2" in err and "two or more counts" in err


@pytest.mark.parametrize("own", [
    "__rec=node,id=13,attr=8,data=attribute.alias,parent=13",
    # review40: as caliper-reader splits a line, not as a pattern of digits between commas
    " __rec=node,id=13,attr=8,data=attribute.alias,parent=13",  # the line is stripped
    "id=13,__rec=node,attr=8,data=attribute.alias,parent=13",  # any field order
    "__rec=node,id=13=1,attr=8,data=attribute.alias,parent=13",  # the first of several values
    "__rec=node,id=99,attr=8,data=attribute.alias,id=13,parent=13",  # a key's last values
    "__rec=node,id=1_3,attr=8,data=attribute.alias,parent=13",  # int() reads 1_3
    "__rec=no\\de,i\\d=13,attr=8,data=attribute.alias,par\\ent=13",  # escaped letters
])
def test_caliper_node_that_is_its_own_parent_is_one_line(tmp_path, own):
    # fuzz40: caliper-reader appends such a node to itself, then walks its parents forever:
    # 'corecast predict' hung.  A subprocess with a timeout, so that a regression fails.
    pytest.importorskip("caliperreader")
    text = (CAL / "example-profile.cali").read_text()
    line = "__rec=node,id=13,attr=8,data=attribute.alias,parent=12\n"
    assert line in text
    path = tmp_path / "cycle.cali"
    path.write_text(text.replace(line, own + "\n"))
    r = subprocess.run([sys.executable, "-m", "corecast", "predict", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "line 2: node 13 is its own parent" in r.stderr, r.stderr


def test_caliper_node_check_leaves_other_lines_to_the_package():
    # a value that merely mentions a node and its parent, and an escaped comma, are no node's
    from corecast.io.readers.caliper import _no_self_parent, _record

    assert _record("__rec=node,id=3,data=a\\,parent=3,parent=4") == {
        "__rec": ["node"], "id": ["3"], "data": ["a,parent", "3"], "parent": ["4"]}
    _no_self_parent("x.cali", "__rec=ctx,ref=3,data=node parent=3\n__rec=node,id=3,data=a\\,parent=3,parent=4\n")
    # the package's own split, where this version has it (corecast does not call it)
    package = getattr(pytest.importorskip("caliperreader.caliperstreamreader"), "_read_cali_record", None)
    for line in (" id=13=1,__rec=no\\de,a\\,b=x\\ny,id=7,\n", "__rec=ctx,ref=1=2,=3,,x", "k=\\\\,v"):
        assert package is None or _record(line) == package(line), line


def test_caliper_count_attribute_and_metric(capsys):
    pytest.importorskip("caliperreader")
    files = [str(p) for p in MPI]
    assert main(["predict", *files, "--callpath", "main", "--profile-metric",
                 "max#inclusive#sum#time.duration", "--count-attribute", "jobsize", "--json"]) == 0
    (s,) = json.loads(capsys.readouterr().out)["series"]
    assert s["metric_name"] == "max#inclusive#sum#time.duration"
    assert [p["threads"] for p in s["predictions"]][-1] == 686


def test_caliper_json_split(tmp_path):
    src = (CAL / "caliper-region-node-order.json").read_text()
    obj = json.loads(src)
    obj["threads"] = "2"  # the same profile as if run at 2 threads, 20% faster
    obj["data"] = [[r[0], r[1], r[2] * 0.8, r[3]] for r in obj["data"]]
    (tmp_path / "t2.json").write_text(json.dumps(obj))
    series = _by_label(read_inputs([str(CAL / "caliper-region-node-order.json"), str(tmp_path / "t2.json")]))
    s = series[("main/lulesh.cycle/LagrangeLeapFrog", "time")]
    assert s.data.counts.tolist() == [1, 2]
    assert s.data.values.tolist() == pytest.approx([0.000159, 0.000159 * 0.8])  # row [4, 0, 0.000159, 3]


def test_caliper_json_records(tmp_path, capsys):
    recs = [{"path": "main/solve", "omp.num.threads": n, "sum#time.duration": 10.0 / n + 1} for n in (1, 2, 4, 8)]
    (tmp_path / "q.json").write_text(json.dumps(recs))
    assert main(["predict", str(tmp_path / "q.json"), "--json"]) == 0
    (s,) = json.loads(capsys.readouterr().out)["series"]
    assert s["callpath"] == "main/solve" and s["metric_name"] == "sum#time.duration"


# ---------------------------------------------------------------- hostile inputs


@pytest.mark.parametrize("text", [
    "PARAMETER p\nPOINTS 1 2\nREGION r\nDATA 1\nDATA 2\nDATA 3\n",   # more DATA than POINTS
    "PARAMETER p\nPOINTS 1.5 2\nREGION r\nDATA 1\nDATA 2\n",          # not a count
    "PARAMETER p\nPOINTS 1 2\nBOGUS x\n",                             # unknown field
    "PARAMETER p\nPOINTS 1 2\nREGION r\nDATA 1 x\n",                  # not a number
    '{"callpaths": [], "parameters": [{"id": 1, "name": "p"}]}',      # missing tables
    '{"params": {"p": 1}, "value": 1}\n{"params": {"p": 1e400}, "value": 2}\n',
    '[{"path": "main", "threads": "two", "time": 1}]',
    '__rec=node,id=garbage\n\x01\x02',
])
def test_garbage_is_one_line(tmp_path, capsys, text):
    if text.startswith("__rec"):
        pytest.importorskip("caliperreader")
    path = tmp_path / ("g.cali" if text.startswith("__rec") else "g.txt")
    path.write_text(text)
    assert_one_line_error(capsys, ["predict", str(path)])


def test_huge_extrap_file_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CORECAST_MAX_INPUT_MB", "0.001")
    path = tmp_path / "big.txt"
    path.write_text("PARAMETER p\nPOINTS 1 2\nREGION r\n" + "DATA 1 2 3 4 5 6 7 8\n" * 400)
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "larger than the input limit" in err


def test_extrap_from_fifo(tmp_path, capsys):
    path = tmp_path / "in.fifo"
    os.mkfifo(path)
    data = (XP / "text_one_parameter_6.txt").read_bytes()
    writer = threading.Thread(target=lambda: path.write_bytes(data), daemon=True)
    writer.start()
    assert main(["predict", str(path), "--callpath", "met2", "--json"]) == 0
    writer.join(10)
    (s,) = json.loads(capsys.readouterr().out)["series"]
    assert s["callpath"] == "met2"


# ---------------------------------------------------------------- fit metrics


def test_fit_quality_matches_extrap_definitions():
    y = np.array([10.0, 5.0, 3.0, 2.0])
    p = np.array([9.0, 5.5, 3.0, 2.5])
    q = fit_quality(p, y, params=2)
    assert q["rss"] == pytest.approx(1 + 0.25 + 0 + 0.25)
    tss = float(np.sum((y - y.mean()) ** 2))
    assert q["adj_r2"] == pytest.approx(1 - (1.5 / tss) * 3 / 2)
    assert q["smape"] == pytest.approx(np.mean([2 / 19, 1 / 10.5, 0, 1 / 4.5]) * 100)
    assert fit_quality(p, y, params=4)["adj_r2"] is None  # no degrees of freedom left


def test_count_params():
    assert count_params({"lambda": 1.0, "sigma": 0.1, "kappa": 0.0}) == 3
    assert count_params({"kernel": "Rat22", "subset": 6, "coefficients": [1, 2, 3, 4, 5]}) == 5
    assert count_params({"usl": {"a": 1, "b": 2, "c": 3}, "amdahl": {"x": 1, "f": 2}}) == 3


def test_csv_table_shows_fit_quality(tmp_path, capsys):
    (tmp_path / "m.csv").write_text("threads,time\n1,10\n2,5.3\n4,2.9\n8,1.8\n16,1.4\n")
    assert main(["predict", str(tmp_path / "m.csv"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fit_quality"][0]["model"] == "auto"
    with pytest.raises(InputError):
        read_inputs([str(tmp_path / "m.csv")], callpath="x")


def test_csv_from_a_fifo_is_read_once(tmp_path, capsys):
    path = tmp_path / "csv.fifo"
    os.mkfifo(path)
    data = b"threads,time\n1,10\n2,5.3\n4,2.9\n"
    writer = threading.Thread(target=lambda: path.write_bytes(data), daemon=True)
    writer.start()
    assert main(["predict", str(path), "--json"]) == 0
    writer.join(10)
    assert json.loads(capsys.readouterr().out)["predictions"][0]["threads"] == 1


@pytest.mark.parametrize("unit", [1e-308, 1e300])
def test_fit_quality_in_far_off_units(unit):
    import warnings

    y = np.array([10.0, 5.0, 3.0, 2.0])
    p = np.array([9.0, 5.5, 3.0, 2.5])
    ref = fit_quality(p, y, params=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q = fit_quality(p * unit, y * unit, params=2)
    assert q["adj_r2"] == pytest.approx(ref["adj_r2"]) and q["smape"] == pytest.approx(ref["smape"])
    assert q["rss"] is None  # no float holds it (inf, or 0 for a fit that misses): not a perfect fit


def test_predict_on_a_recording_says_replay_reads_it(capsys, tmp_path):
    """A run's JSON Lines given to predict: it said 'line 2: more than one JSON value;
    expected a corecast sweep result', which sends a new user looking for a sweep."""
    rec = tmp_path / "cc.jsonl"
    rec.write_text(json.dumps({"event": "region", "schema": 4, "pid": 1}) + "\n"
                   + json.dumps({"event": "summary", "schema": 4, "pid": 1}) + "\n")
    err = assert_one_line_error(capsys, ["predict", str(rec)])
    assert "a run's recording" in err and "corecast replay" in err, err


@pytest.mark.parametrize("column", ["Time (s)", "time_s", "runtime", "elapsed", "wall_s", "time_ms"])
def test_common_time_column_names_are_time(tmp_path, column):
    # newuser30: hyperfine-like and corecast sweep's own (time_s) headers were 'unknown column'
    f = tmp_path / "t.csv"
    f.write_text(f"threads,{column}\n1,8\n2,4.4\n4,2.6\n")
    (s,) = read_inputs([str(f)])
    assert s.data.metric == "time" and s.data.values.tolist() == [8, 4.4, 2.6]


def test_table_of_a_curve_measured_far_from_one_starts_at_its_smallest_count(capsys):
    # newuser30: counts 1000..16000 printed rows 1, 2, .., 512, the models run backwards
    assert main(["predict", str(XP / "text_one_parameter_6.txt"), "--callpath", "met1"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split()[0] for ln in out.splitlines()[2:] if ln.strip() and ln.split()[0].isdigit()]
    assert rows[0] == "1000" and "512" not in rows
    assert "rows below 1000, the smallest measured count, left out" in out


@pytest.mark.parametrize("column", ["time (ms)", "elapsed_s", "wall", "wall time"])
def test_the_other_time_column_names_are_time_too(tmp_path, column):
    test_common_time_column_names_are_time(tmp_path, column)


def test_a_csv_with_quoted_cells_reads_as_unquoted(tmp_path):
    # What a spreadsheet writes: every cell quoted, a comma inside one.  The reader's fast
    # split (lines without quotes) must leave these to the csv module.
    f = tmp_path / "q.csv"
    f.write_text('"threads","time"\n"1","8"\n"2","4.4"\n"4","2.6"\n')
    (s,) = read_inputs([str(f)])
    assert s.data.counts.tolist() == [1, 2, 4] and s.data.values.tolist() == [8, 4.4, 2.6]
    f.write_text('threads;time\n1;"8,5"\n2;"4,5"\n4;2,5\n')
    (s,) = read_inputs([str(f)])
    assert s.data.values.tolist() == [8.5, 4.5, 2.5]


def test_stall_metrics_measured_at_other_counts_stay_curves_of_their_own(tmp_path):
    # Folded into the time curve only where measured at the same runs: a category missing
    # at a count is not lined up against another count's time.
    rows = [(n, m, v) for n, t, s in ((1, 8.5, 0.1), (2, 4.5, 0.2), (4, 2.5, 0.4), (8, 1.5, 0.8))
            for m, v in (("time", t), ("stall:lock", s)) if (n, m) != (8, "stall:lock")]
    f = tmp_path / "x.jsonl"
    f.write_text("".join(json.dumps({"params": {"threads": n}, "callpath": "main", "metric": m, "value": v}) + "\n"
                         for n, m, v in rows))
    series = _by_label(read_inputs([str(f)]))
    assert set(series) == {("main", "time"), ("main", "stall:lock")}
    assert series[("main", "time")].data.values.tolist() == [8.5, 4.5, 2.5, 1.5]
    assert not series[("main", "time")].data.stalls
    assert series[("main", "stall:lock")].data.values.tolist() == pytest.approx([0.1, 0.2, 0.4])


def test_an_unknown_callpath_lists_each_of_the_files_callpaths_once(tmp_path, capsys):
    f = tmp_path / "x.jsonl"
    f.write_text("".join(json.dumps({"params": {"threads": n}, "callpath": c, "metric": m, "value": 1.0}) + "\n"
                         for n in (1, 2) for c in ("main", "solve") for m in ("time", "stall:lock")))
    err = assert_one_line_error(capsys, ["predict", str(f), "--callpath", "nope"])
    assert "no callpath 'nope' (the file's callpaths: 'main', 'solve')" in err, err
    err = assert_one_line_error(capsys, ["predict", str(f), "--profile-metric", "nope"])
    assert "no metric 'nope' (the file's metrics: 'time', 'stall:lock')" in err, err


@pytest.mark.parametrize("counts, first", [
    ((8, 16, 32, 64), "8"),  # from 8 on: the rows below are left out
    ((7, 14, 28, 56), "1"),  # below 8: all of them shown
    ((10, 12, 14, 16), "1"),  # a short grid (1..32) is shown whole
])
def test_the_rows_below_the_smallest_measured_count_left_out_from_8_in_a_long_grid(tmp_path, capsys, counts, first):
    f = tmp_path / "c.csv"
    f.write_text("threads,time\n" + "".join(f"{n},{100.0 / n + 1}\n" for n in counts))
    assert main(["predict", str(f)]) == 0
    out = capsys.readouterr().out
    rows = [ln.split()[0] for ln in out.splitlines()[1:] if ln.strip() and ln.split()[0].isdigit()]
    assert rows[0] == first, out
    assert ("rows below" in out) == (first != "1"), out
