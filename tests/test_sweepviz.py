"""Views of a sweep result (PNG, HTML, Extra-P JSON Lines), ``corecast export`` and
``corecast predict`` reading a sweep JSON, on hand-made results (no program is run)."""
from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from corecast.cli import main
from corecast.model.curve.entities import InputError
from corecast.io.readers.measurements import read_measurements
from corecast.views.sweepviz import export_extrap, extrap_records, html_report, plot_sweep, render_html

from cli_checks import TOP_KEYS, assert_one_line_error

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
EXTRAP_KEYS = {"params", "callpath", "metric", "value"}
MEASURED_COUNTS = (1, 2, 4, 6, 8)
HORIZON = 32


def _time(n: float) -> float:
    return 10.0 * (0.08 + 0.92 / n) + 0.05 * n


def _stalls(n: float) -> dict:
    return {"imbalance": 0.3 * (n - 1) ** 1.1, "lock": 0.05 * n * (n - 1) / 2}


def make_result() -> dict:
    """A sweep result as ``corecast sweep`` builds it: 5 counts, 2 stall categories."""
    measured = [{"threads": n, "time_s": _time(n), "spread_s": 0.02 * _time(n), "stalls_s": _stalls(n)}
                for n in MEASURED_COUNTS]
    predictions = [{"threads": n, "value": _time(n), "low": 0.9 * _time(n), "high": 1.1 * _time(n),
                    "speedup": _time(1) / _time(n)} for n in range(1, HORIZON + 1)]
    stall_predictions = {k: [{"threads": n, "value": _stalls(n)[k]} for n in range(1, HORIZON + 1)]
                         for k in ("imbalance", "lock")}
    return {
        "measured": measured,
        "predictions": predictions,
        "stall_predictions": stall_predictions,
        "preferred_threads": 14,
        "bottleneck": "lock",
        "command": ["./prog", "--name", "<script>alert('x')</script>", "a&b"],
        "runtime": "openmp",
        "warnings": ["stall category 'lock' <grew> & was held"],
        "failed": [{"threads": 16, "reason": "exit status 1: <oops>"}],
    }


@pytest.fixture
def result() -> dict:
    return make_result()


@pytest.fixture
def sweep_json(tmp_path, result) -> Path:
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(result))
    return path


def only_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# ---------------------------------------------------------------- PNG


def test_plot_writes_a_png_and_no_temp_file(tmp_path, result):
    out = tmp_path / "sweep.png"
    plot_sweep(result, str(out))
    assert out.read_bytes().startswith(PNG_MAGIC)
    assert only_files(tmp_path) == ["sweep.png"]


@pytest.mark.parametrize("strip", [
    ("stall_predictions",),                        # measured stalls only: points, no area
    ("stall_predictions", "stalls"),               # no stall data at all: two panels
    ("predictions", "stall_predictions"),          # nothing predicted (a failed sweep)
    ("preferred_threads", "bottleneck", "command", "runtime", "warnings", "failed"),
])
def test_plot_without_optional_parts(tmp_path, result, strip):
    for key in strip:
        if key == "stalls":
            for e in result["measured"]:
                del e["stalls_s"]
        else:
            del result[key]
    out = tmp_path / "p.png"
    plot_sweep(result, str(out))
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_plot_of_a_single_count_and_linear_axis(tmp_path, result):
    result["measured"] = result["measured"][:1]
    result["predictions"] = result["predictions"][:4]
    result["stall_predictions"] = {k: v[:4] for k, v in result["stall_predictions"].items()}
    plot_sweep(result, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes().startswith(PNG_MAGIC)


def test_plot_shows_dollar_signs_as_written(tmp_path, result):
    # Paired $ would be matplotlib mathtext; these would not even parse as such.
    result["command"] = ["sh", "-c", r"echo $\nosuchcommand$ ${HOME}$"]
    result["stall_predictions"]["$x_{$"] = result["stall_predictions"].pop("lock")
    result["bottleneck"] = "$x_{$"
    plot_sweep(result, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("mutate, words", [
    (lambda r: r.pop("measured"), "no \"measured\" key"),
    (lambda r: r.update(measured=[]), "no successful runs"),
    (lambda r: r["measured"][0].pop("time_s"), "measured[0]: no \"time_s\" key"),
    (lambda r: r.update(predictions={"a": 1}), "\"predictions\" is not a list"),
    (lambda r: r["predictions"][3].update(value=None), "predictions[3]"),
    (lambda r: r.update(stall_predictions=[1]), "stall_predictions"),
])
def test_plot_rejects_bad_results_and_leaves_nothing(tmp_path, result, mutate, words):
    mutate(result)
    with pytest.raises(InputError, match=re.escape(words)):
        plot_sweep(result, str(tmp_path / "p.png"))
    assert only_files(tmp_path) == []


# ---------------------------------------------------------------- HTML


def test_html_is_self_contained_with_tables_and_escapes_text(tmp_path, result):
    out = tmp_path / "r.html"
    html_report(result, str(out))
    text = out.read_text(encoding="utf-8")
    assert only_files(tmp_path) == ["r.html"]
    assert text.startswith("<!DOCTYPE html>")
    # Nothing from outside the file: no scripts, links or remote images.
    assert "<script" not in text.lower()
    assert not re.search(r"(src|href)=\"(?!data:)", text)
    # Every piece of text from the result is escaped.
    assert "&lt;script&gt;alert(" in text and "a&amp;b" in text
    assert "&lt;grew&gt; &amp; was held" in text
    assert "exit status 1: &lt;oops&gt;" in text
    # The plot is inlined and is a PNG.
    m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)
    assert m and base64.b64decode(m.group(1)).startswith(PNG_MAGIC)
    # Tables: measured (5 runs), predicted (1..32), failed (1 run).
    tables = re.findall(r"<table>.*?</table>", text, flags=re.S)
    assert len(tables) == 3
    measured, predicted, failed = tables
    assert measured.count("<tr") == 1 + len(MEASURED_COUNTS)
    assert predicted.count("<tr") == 1 + HORIZON
    assert failed.count("<tr") == 2
    for header in ("stall: imbalance (s)", "stall: lock (s)", "speedup", "spread (s)"):
        assert f"<th>{header}</th>" in measured
    assert f"<td>{_time(8):.4g}</td>" in measured
    assert '<tr class="preferred"><td>14</td>' in predicted
    assert "<dt>bottleneck</dt><dd>lock</dd>" in text
    assert "<dt>runtime</dt><dd>openmp</dd>" in text


def test_html_of_a_sweep_where_every_run_failed(tmp_path, result):
    result.update(measured=[], predictions=[], stall_predictions={}, preferred_threads=None, bottleneck=None,
                  failed=[{"threads": n, "reason": "not found"} for n in (1, 2)])
    text = render_html(result)
    assert "No successful runs" in text and "data:image/png" not in text
    assert text.count("not found") == 2


def test_html_rejects_a_result_without_measured(tmp_path):
    with pytest.raises(InputError, match="not a sweep result"):
        html_report({"predictions": []}, str(tmp_path / "r.html"))
    assert only_files(tmp_path) == []


# ---------------------------------------------------------------- Extra-P


def read_jsonl(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_extrap_lines(tmp_path, result):
    out = tmp_path / "x.jsonl"
    export_extrap(result, str(out))
    lines = read_jsonl(out)
    assert len(lines) == len(MEASURED_COUNTS) * (1 + 2)  # time + one line per stall category
    assert all(set(r) == EXTRAP_KEYS for r in lines)
    assert all(list(r["params"]) == ["threads"] and isinstance(r["params"]["threads"], int) for r in lines)
    assert {r["callpath"] for r in lines} == {"main"}
    assert {r["metric"] for r in lines} == {"time", "stall:imbalance", "stall:lock"}
    times = {r["params"]["threads"]: r["value"] for r in lines if r["metric"] == "time"}
    assert times == {n: pytest.approx(_time(n)) for n in MEASURED_COUNTS}
    locks = {r["params"]["threads"]: r["value"] for r in lines if r["metric"] == "stall:lock"}
    assert locks == {n: pytest.approx(_stalls(n)["lock"]) for n in MEASURED_COUNTS}
    # Predictions and failed runs are not measurements.
    assert 16 not in times and max(times) == max(MEASURED_COUNTS)


def test_extrap_repetitions_and_runs_without_stalls(result):
    result["measured"] = [{"threads": 2, "time_s": 5.0}, {"threads": 2, "time_s": 5.2},
                          {"threads": 4.0, "time_s": 3.0, "stalls_s": {}}]
    records = extrap_records(result)
    assert [(r["params"]["threads"], r["metric"], r["value"]) for r in records] == [
        (2, "time", 5.0), (2, "time", 5.2), (4, "time", 3.0)]


# ---------------------------------------------------------------- corecast export


def test_export_cli_writes_all_three(tmp_path, sweep_json, capsys):
    argv = ["export", str(sweep_json), "--extrap", str(tmp_path / "o.jsonl"),
            "--html", str(tmp_path / "o.html"), "--plot", str(tmp_path / "o.png")]
    assert main(argv) == 0
    assert capsys.readouterr() == ("", "")
    assert len(read_jsonl(tmp_path / "o.jsonl")) == 15
    assert (tmp_path / "o.png").read_bytes().startswith(PNG_MAGIC)
    assert "<table>" in (tmp_path / "o.html").read_text()


def test_export_extrap_option_before_the_file(tmp_path, sweep_json, capsys):
    assert main(["export", "--extrap", str(tmp_path / "o.jsonl"), str(sweep_json)]) == 0
    assert [r["metric"] for r in read_jsonl(tmp_path / "o.jsonl")][:3] == ["time", "stall:imbalance", "stall:lock"]


BAD_SWEEPS = [
    # (file text, words the message must contain)
    ("", "file is empty"),
    ("{\"measured\": [", "line 1: column 15: not valid JSON"),
    ("threads,time\n1,2\n", "not valid JSON"),
    ("[1, 2]", "top level is a JSON list, not an object"),
    ("{\"predictions\": []}", "no \"measured\" key, not a sweep result"),
    ("{\"measured\": {}}", "\"measured\" is a JSON object, not a list"),
    ("{\"measured\": []}", "no successful runs"),
    ("{\"measured\": [3]}", "measured[0]: a JSON number, not an object"),
    ("{\"measured\": [{\"time_s\": 1}]}", "measured[0]: no \"threads\" key"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": 1}, {\"threads\": 2}]}", "measured[1]: no \"time_s\" key"),
    ("{\"measured\": [{\"threads\": 0, \"time_s\": 1}]}", "\"threads\" 0 must be a whole number >= 1"),
    ("{\"measured\": [{\"threads\": 1.5, \"time_s\": 1}]}", "whole number"),
    ("{\"measured\": [{\"threads\": true, \"time_s\": 1}]}", "\"threads\" true must be"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": -1}]}", "\"time_s\" -1 must be a positive number"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": \"3\"}]}", "\"time_s\" \"3\" must be a positive number"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": NaN}]}", "\"time_s\" nan must be"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": 1e999}]}", "\"time_s\" inf must be"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": 1, \"spread_s\": -0.1}]}", "\"spread_s\" -0.1"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": 1, \"stalls_s\": [1]}]}", "\"stalls_s\" is a JSON list"),
    ("{\"measured\": [{\"threads\": 1, \"time_s\": 1, \"stalls_s\": {\"lock\": -1}}]}",
     "\"stalls_s\" \"lock\": -1 must be a number >= 0"),
    ("{\"event\": \"region\"}\n{\"event\": \"process\"}\n", "line 2: more than one JSON value"),
]


@pytest.mark.parametrize("text, words", BAD_SWEEPS)
def test_export_bad_sweep_is_one_line_naming_the_file(tmp_path, capsys, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    out = tmp_path / "o.jsonl"
    err = assert_one_line_error(capsys, ["export", "--extrap", str(out), str(path)])
    assert f"corecast: error: {path}: " in err
    assert words in err
    assert only_files(tmp_path) == ["bad.json"]


def test_export_missing_file_and_directory(tmp_path, capsys):
    err = assert_one_line_error(capsys, ["export", "--extrap", str(tmp_path / "o"), str(tmp_path / "nope.json")])
    assert "nope.json: no such file" in err
    err = assert_one_line_error(capsys, ["export", "--extrap", str(tmp_path / "o"), str(tmp_path)])
    assert "is a directory" in err


def test_export_without_an_output_option(sweep_json, capsys):
    err = assert_one_line_error(capsys, ["export", str(sweep_json)])
    assert "nothing to export" in err


def test_export_to_a_missing_folder(tmp_path, sweep_json, capsys):
    out = tmp_path / "no" / "such" / "o.jsonl"
    err = assert_one_line_error(capsys, ["export", "--extrap", str(out), str(sweep_json)])
    assert f"{out}: cannot write" in err


def test_export_bad_predictions_are_one_line(tmp_path, result, capsys):
    result["predictions"] = "soon"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(result))
    err = assert_one_line_error(capsys, ["export", "--plot", str(tmp_path / "o.png"), str(path)])
    assert "\"predictions\" is not a list" in err
    assert only_files(tmp_path) == ["s.json"]


# ---------------------------------------------------------------- corecast predict SWEEP.json


def test_predict_reads_a_sweep_json(sweep_json, capsys):
    assert main(["predict", str(sweep_json), "--json", "--upto", "24"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    data = json.loads(out)
    assert set(data) == TOP_KEYS
    assert data["metric"] == "time"
    assert [p["threads"] for p in data["predictions"]] == list(range(1, 25))
    at = {p["threads"]: p["value"] for p in data["predictions"]}
    for n in MEASURED_COUNTS:  # a smooth curve: the fit passes close to the measurements
        assert at[n] == pytest.approx(_time(n), rel=0.1)


def test_predict_table_and_plot_from_a_sweep_json(tmp_path, sweep_json, capsys):
    plot = tmp_path / "p.png"
    assert main(["predict", str(sweep_json), "--plot", str(plot)]) == 0
    out, _ = capsys.readouterr()
    assert "preferred count" in out
    assert plot.read_bytes().startswith(PNG_MAGIC)


def test_sweep_measurements(tmp_path, result):
    result["measured"].append({"threads": 8, "time_s": _time(8) * 1.1, "stalls_s": {"lock": 2.0}})
    path = tmp_path / "s.txt"  # not named .json: recognised by its leading brace
    path.write_text("\n  " + json.dumps(result))
    data = read_measurements(str(path))
    assert data.metric == "time"
    assert data.counts.tolist() == list(MEASURED_COUNTS)
    assert sorted(data.stalls) == ["imbalance", "lock"]
    assert data.repetitions.tolist() == [1, 1, 1, 1, 2]
    # spread_s (half the range, seconds) -> relative spread; repetitions give their own.
    assert data.spread[:4] == pytest.approx([0.02] * 4)
    assert data.spread[4] == pytest.approx(0.05 / 1.05)
    # A category missing from a run counts as 0 there (the median of 2.551 and 0).
    assert data.stalls["imbalance"][4] == pytest.approx(_stalls(8)["imbalance"] / 2)
    assert data.stalls["lock"][4] == pytest.approx((_stalls(8)["lock"] + 2.0) / 2)


def test_sweep_json_metric_argument(sweep_json):
    assert read_measurements(str(sweep_json), "time").metric == "time"
    with pytest.raises(InputError, match="--metric throughput conflicts with a sweep result"):
        read_measurements(str(sweep_json), "throughput")


def test_predict_bad_sweep_json_is_one_line(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text("{\"measured\": [{\"threads\": 2, \"time_s\": 0}]}")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert f"{path}: measured[0]: \"time_s\" 0 must be a positive number" in err


def test_csv_input_is_unchanged(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("threads,time,stall:lock\n1,10,0\n2,5.3,0.2\n")
    data = read_measurements(str(path))
    assert data.values.tolist() == [10, 5.3] and list(data.stalls) == ["lock"]
    path.write_text("{not a table")  # a CSV name starting with a brace is read as JSON
    with pytest.raises(InputError, match="not valid JSON"):
        read_measurements(str(path))


def test_result_dict_is_not_modified(result, tmp_path):
    before = copy.deepcopy(result)
    plot_sweep(result, str(tmp_path / "p.png"))
    render_html(result)
    extrap_records(result)
    assert result == before
    assert np.isfinite([e["time_s"] for e in result["measured"]]).all()


# ---------------------------------------------------------------- per-region curves (issue 17)


def with_regions(result: dict) -> dict:
    def region(name, scale, bottleneck):
        return {"name": name, "share": 0.4,
                "measured": [{"threads": e["threads"], "time_s": e["time_s"] * scale, "spread_s": 0.0,
                              "stalls_s": {bottleneck: 0.01 * e["threads"]}} for e in result["measured"]],
                "predictions": [dict(p, value=p["value"] * scale, low=p["low"] * scale, high=p["high"] * scale)
                                for p in result["predictions"]],
                "stall_predictions": {}, "preferred_threads": 4, "bottleneck": bottleneck, "warnings": []}

    return dict(result, regions=[region("main._omp_fn.0", 0.5, "imbalance"),
                                 region("main._omp_fn.1", 0.3, "critical")])


def test_plot_has_a_facet_per_region(tmp_path, result):
    from matplotlib.image import imread

    plain, faceted = tmp_path / "plain.png", tmp_path / "regions.png"
    plot_sweep(result, str(plain))
    plot_sweep(with_regions(result), str(faceted))
    # a second row of panels: the figure is twice as tall
    assert imread(str(faceted)).shape[0] == 2 * imread(str(plain)).shape[0]


def test_extrap_region_callpaths(result):
    records = extrap_records(with_regions(result))
    region = [r for r in records if r["callpath"] == "main->main._omp_fn.1"]
    assert [r["params"]["threads"] for r in region] == [e["threads"] for e in result["measured"]]
    assert [r["value"] for r in region] == pytest.approx([e["time_s"] * 0.3 for e in result["measured"]])
    assert all(r["metric"] == "time" for r in region)


def test_html_lists_regions(tmp_path, result):
    out = tmp_path / "r.html"
    html_report(with_regions(result), str(out))
    text = out.read_text()
    assert "<h2>Regions</h2>" in text and "main._omp_fn.1" in text and "critical" in text


def test_bad_regions_are_one_line(result):
    bad = dict(result, regions=[{"name": "r", "measured": [{"threads": 0, "time_s": 1}]}])
    with pytest.raises(InputError, match="regions\\[0\\]"):
        extrap_records(bad)


@pytest.mark.parametrize("field, value", [("low", 0), ("high", -1.0), ("value", 0), ("speedup", 0)])
def test_export_refuses_a_prediction_time_that_is_not_positive(tmp_path, result, capsys, field, value):
    # fuzz40: "low": 0 was read, then the plot's speedup band divided by it ('internal error:
    # ZeroDivisionError'); a predicted time, its band and speedup are positive numbers.
    result["predictions"][3][field] = value
    path = tmp_path / "s.json"
    path.write_text(json.dumps(result))
    for option, out in (("--html", "o.html"), ("--plot", "o.png")):
        err = assert_one_line_error(capsys, ["export", option, str(tmp_path / out), str(path)])
        assert f"predictions[3]: \"{field}\" must be a positive number" in err
    assert only_files(tmp_path) == ["s.json"]


@pytest.mark.parametrize("where", ["predictions", "stall_predictions", "failed"])
def test_export_refuses_a_count_past_the_largest(tmp_path, result, capsys, where):
    # fuzz40: "threads": 1e308 in a prediction or a failed run was read, then the plot's
    # log-axis ticks overflowed ('internal error: OverflowError')
    entry = {"predictions": result["predictions"], "stall_predictions": result["stall_predictions"]["lock"],
             "failed": result["failed"]}[where][0]
    entry["threads"] = 1e308
    path = tmp_path / "s.json"
    path.write_text(json.dumps(result))
    err = assert_one_line_error(capsys, ["export", "--html", str(tmp_path / "o.html"), str(path)])
    assert "\"threads\" 1e+308 is above 100000, the largest count corecast predicts" in err
