"""A new user's pass over the offline CLI (session newuser30): a CSV of an MPI curve
labelled threads, and hyperfine's exports, which a performance engineer brings first."""
from __future__ import annotations

import json

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main

CURVE = "1,10\n2,5.5\n4,3\n8,2\n"


@pytest.mark.parametrize("column, unit, one", [
    ("ranks", "ranks", "rank"), ("Processes", "processes", "process"), ("nodes", "nodes", "node"),
    ("core", "cores", "core"), ("threads", "threads", "thread"), ("n", "threads", "thread"),
])
def test_a_csv_count_column_names_the_counts_unit(tmp_path, capsys, column, unit, one):
    # 'ranks,time' was printed as threads in the table, the lines and the JSON's
    # count_unit, while an Extra-P file whose parameter is ranks said ranks.
    path = tmp_path / "c.csv"
    path.write_text(f"{column},time\n{CURVE}")
    assert main(["predict", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count_unit"] == unit
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{unit} ") and f"each {one} added" in out
    if unit != "threads":
        assert "thread" not in out


# hyperfine -P threads 1 8 -D 1 './prog {threads}' (a power-of-two scan) --export-csv / --export-json
HF_HEADER = "command,mean,stddev,median,user,system,min,max,parameter_threads\n"
HF_ROWS = [(1, [10.1, 10.0, 9.9]), (2, [5.6, 5.5, 5.4]), (4, [3.1, 3.0, 2.9]), (8, [2.1, 2.0, 1.9])]


def _hf_csv(rows=HF_ROWS, header=HF_HEADER) -> str:
    return header + "".join(f'"./prog {n}",{sum(t) / 3},0.1,{sorted(t)[1]},1,0,{min(t)},{max(t)},{n}\n'
                            for n, t in rows)


def _hf_json(rows=HF_ROWS, name="threads") -> str:
    return json.dumps({"results": [
        {"command": f"./prog {n}", "mean": sum(t) / 3, "stddev": 0.1, "median": sorted(t)[1], "user": 1.0,
         "system": 0.0, "min": min(t), "max": max(t), "times": t, "exit_codes": [0] * len(t),
         "parameters": {name: str(n)}} for n, t in rows]})


def _prediction(capsys, path) -> dict:
    assert main(["predict", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_hyperfine_exports_are_predicted_as_their_scan(tmp_path, capsys):
    # Both were refused ('unknown column mean'; 'no "measured" key, not a sweep result').
    from corecast import predict

    csv_path, json_path = tmp_path / "hf.csv", tmp_path / "hf.json"
    csv_path.write_text(_hf_csv())
    json_path.write_text(_hf_json())
    want = predict([n for n, _ in HF_ROWS], [sorted(t)[1] for _, t in HF_ROWS], metric="time").to_dict()
    for path in (csv_path, json_path):
        got = _prediction(capsys, path)
        assert got["metric"] == "time" and got["count_unit"] == "threads"
        assert [p["value"] for p in got["predictions"][:8]] == pytest.approx(
            [p["value"] for p in want["predictions"][:8]], rel=0.05)
    # The JSON's runs are repetitions: their spread is the band's at a measured count.
    got = _prediction(capsys, json_path)
    assert got["predictions"][0]["low"] < 9.9 and got["predictions"][0]["high"] > 10.1
    # The parameter's name labels the counts.
    json_path.write_text(_hf_json(name="ranks"))
    assert _prediction(capsys, json_path)["count_unit"] == "ranks"


NO_PARAMETER = 'command,mean,stddev,median,user,system,min,max\n"OMP_NUM_THREADS=1 ./prog",10,0,10,10,0,10,10\n'
TWO_PARAMETERS = HF_HEADER.replace("\n", ",parameter_size\n") + '"./prog 1 7",10,0,10,10,0,10,10,1,7\n'


@pytest.mark.parametrize("text, words", [
    (NO_PARAMETER, "--parameter-scan threads"),
    (_hf_json().replace('"parameters": {"threads": "1"}', '"parameters": {}'), "no parameter threads"),
    (_hf_csv(rows=HF_ROWS + [(2, [5.0, 5.0, 5.0])]), "threads 2 has two commands"),
    (_hf_json(rows=[(1, [1.0] * 3), (1.5, [1.0] * 3)]), "1.5 is not a count"),
    (TWO_PARAMETERS, "2 parameters (threads, size)"),
    # fuzz40: 'internal error: TypeError' / AttributeError, or a string's letters read as parameters
    (_hf_json().replace('"times": [5.6, 5.5, 5.4]', '"times": -1.5'), "result 2 ('./prog 2'): \"times\" must be a list"),
    (_hf_json().replace('{"threads": "2"}', '["threads"]'), "result 2 ('./prog 2'): \"parameters\" must be an object"),
    (_hf_json().replace('{"threads": "2"}', '"threads"'), "\"parameters\" must be an object, not 'threads'"),
])
def test_a_hyperfine_export_without_one_count_per_command_is_refused(tmp_path, capsys, text, words):
    path = tmp_path / ("hf.json" if text.startswith("{") else "hf.csv")
    path.write_text(text)
    assert words in assert_one_line_error(capsys, ["predict", str(path)])


def test_options_that_do_not_apply_to_a_hyperfine_export_are_refused(tmp_path, capsys):
    path = tmp_path / "hf.csv"
    path.write_text(_hf_csv())
    for extra in (["--metric", "throughput"], ["--callpath", "x"], ["--count-attribute", "x"]):
        assert "does not apply to a hyperfine export" in assert_one_line_error(
            capsys, ["predict", str(path), *extra])
    other = tmp_path / "m.csv"
    other.write_text(f"threads,time\n{CURVE}")
    assert "not a hyperfine CSV export" in assert_one_line_error(
        capsys, ["predict", str(other), "--format", "hyperfine-csv"])
    other.write_text(f"threads,time\n{CURVE}")
    assert "not valid JSON" in assert_one_line_error(capsys, ["predict", str(other), "--format", "hyperfine-json"])
    other.write_text('{"results": [{"name": "x"}]}')
    assert "not a hyperfine JSON export" in assert_one_line_error(
        capsys, ["predict", str(other), "--format", "hyperfine-json"])
    other.write_text('{"results": []}')  # newuser31: said as what it is
    assert "a hyperfine JSON export with no results" in assert_one_line_error(
        capsys, ["predict", str(other), "--format", "hyperfine-json"])


def test_the_plot_of_one_of_a_files_curves_names_it(tmp_path, capsys, monkeypatch):
    # --plot with --callpath drew one region of a profile's many with no word of which.
    from matplotlib.axes import Axes

    titles = []
    real = Axes.set_title
    monkeypatch.setattr(Axes, "set_title", lambda ax, text, *a, **k: (titles.append(text), real(ax, text, *a, **k))[1])
    path = tmp_path / "e.txt"
    path.write_text("PARAMETER p\nPOINTS 1 2 4\nREGION solve$1\nMETRIC time\nDATA 10\nDATA 5\nDATA 3\n"
                    "REGION io\nMETRIC time\nDATA 1\nDATA 1\nDATA 1\n")
    assert main(["predict", str(path), "--callpath", "solve$1", "--plot", str(tmp_path / "p.png")]) == 0
    assert titles[-1].startswith("solve\\$1 [time]\ncorecast auto")  # '$': no mathtext
    csv_path = tmp_path / "c.csv"
    csv_path.write_text(f"threads,time\n{CURVE}")
    assert main(["predict", str(csv_path), "--plot", str(tmp_path / "q.png")]) == 0
    assert titles[-1].startswith("corecast auto")  # one curve: nothing to name


def test_a_hyperfine_csv_gives_each_commands_median(tmp_path):
    # The median, not the mean: one slow run (a cold cache) pulls the mean, not the median.
    from corecast.io.readers import read_inputs

    path = tmp_path / "hf.csv"
    path.write_text(_hf_csv(rows=[(1, [10.0, 10.0, 16.0]), (2, [5.0, 5.0, 8.0]), (4, [3.0, 3.0, 6.0])]))
    (s,) = read_inputs([str(path)])
    assert s.data.values.tolist() == [10.0, 5.0, 3.0]


def test_a_hyperfine_jsons_runs_are_repetitions(tmp_path):
    from corecast.io.readers import read_inputs

    path = tmp_path / "hf.json"
    path.write_text(_hf_json(rows=[(1, [10.0, 10.0, 16.0]), (2, [5.0, 5.0, 8.0]), (4, [3.0, 3.0, 6.0])]))
    (s,) = read_inputs([str(path)])
    assert s.data.repetitions.tolist() == [3, 3, 3] and s.data.values.tolist() == [10.0, 5.0, 3.0]


def test_a_hyperfine_json_time_that_is_no_number_is_refused(tmp_path, capsys):
    path = tmp_path / "hf.json"
    path.write_text(_hf_json().replace("[10.1, 10.0, 9.9]", "[true, 10.0, 9.9]"))
    assert "time 'True' is not a number" in assert_one_line_error(capsys, ["predict", str(path)])
