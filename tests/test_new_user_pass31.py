"""A new user's pass over the offline CLI (session newuser31): JSON keys that say threads
when the count is ranks, hyperfine runs that failed, ESTIMA's poor fits, the CSV reader's
memory, tune-sim's JSON, and sweeps measured past their CPUs."""
from __future__ import annotations

import json

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main

CURVE = "1,10\n2,5.5\n4,3\n8,2\n"


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_predict_json_has_unit_neutral_count_keys(tmp_path, capsys):
    # 'ranks,time' gave "preferred_threads" (and only that) with "count_unit": "ranks".
    path = tmp_path / "r.csv"
    path.write_text(f"ranks,time\n{CURVE}")
    got = _json(capsys, ["predict", str(path), "--json"])
    assert got["count_unit"] == "ranks"
    assert got["preferred_count"] == got["preferred_threads"]
    assert got["fastest_count"] == got["fastest_threads"]
    assert got["knee_count"] == got["knee_threads"]


def test_sweep_result_keys_are_unit_neutral_and_read_either_way():
    from corecast.io.sweepresult import SweepResult, empty_result
    from corecast.model.curve.extrapolation import extrapolate

    result = empty_result(["prog"], "openmp", [], {})
    assert result["preferred_count"] is None and result["fastest_count"] is None
    times = {1: [10.0], 2: [5.5], 4: [3.0], 8: [2.0]}
    extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16)
    assert result["preferred_count"] == result["preferred_threads"] >= 1
    assert result["fastest_count"] == result["fastest_threads"]
    measured = [{"threads": n, "time_s": t[0]} for n, t in times.items()]
    # a result with only the new keys, and one with only the old: the same counts read
    new = SweepResult.read({"measured": measured, "preferred_count": 4, "fastest_count": 8})
    old = SweepResult.read({"measured": measured, "preferred_threads": 4, "fastest_threads": 8})
    assert (new.preferred, new.fastest) == (old.preferred, old.fastest) == (4, 8)


def _hf_json(rows, codes) -> str:
    # hyperfine --ignore-failure -P threads ... --export-json: every run, its exit code beside it
    return json.dumps({"results": [
        {"command": f"./prog {n}", "mean": sum(t) / len(t), "stddev": 0.1, "median": sorted(t)[len(t) // 2],
         "user": 1.0, "system": 0.0, "min": min(t), "max": max(t), "times": t, "exit_codes": c,
         "parameters": {"threads": str(n)}} for (n, t), c in zip(rows, codes)]})


ROWS = [(1, [10.1, 10.0, 9.9]), (2, [5.6, 5.5, 0.01]), (4, [3.1, 3.0, 2.9]), (8, [2.1, 0.02, 0.01])]


def test_hyperfine_runs_that_failed_are_left_out_and_counted(tmp_path, capsys):
    # --ignore-failure's crashed runs (0.01 s) were read as repetitions: the fastest at 8
    # threads was a crash's median, and nothing said that any run had failed.
    path = tmp_path / "hf.json"
    path.write_text(_hf_json(ROWS, [[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 2, None]]))
    got = _json(capsys, ["predict", str(path), "--json"])
    measured = {p["threads"]: p["value"] for p in got["predictions"] if p["threads"] in (1, 2, 4, 8)}
    assert measured[8] == pytest.approx(2.1, rel=0.05)  # the one run that exited 0
    note = next(w for w in got["warnings"] if "exited non-zero" in w)
    assert note.startswith("3 of 12 runs exited non-zero") and "threads 8: 2 of 3" in note
    clean = tmp_path / "ok.json"
    clean.write_text(_hf_json(ROWS[:1] + [(2, [5.6, 5.5, 5.4]), ROWS[2], (8, [2.1, 2.0, 1.9])], [[0] * 3] * 4))
    assert not any("exited" in w for w in _json(capsys, ["predict", str(clean), "--json"])["warnings"])


def test_hyperfine_every_run_failed_is_one_line(tmp_path, capsys):
    path = tmp_path / "hf.json"
    path.write_text(_hf_json(ROWS[:2], [[1, 1, 1], [1, 1, 1]]))
    assert "every run exited non-zero" in assert_one_line_error(capsys, ["predict", str(path)])


def test_estima_on_a_curve_it_fits_badly_says_so_with_its_figure(tmp_path, capsys):
    # docs/predict.md's example: ESTIMA predicts 7.1 s at 1 thread where 10 s was measured
    # (a speedup of 1.41 at one thread) and said nothing; its SMAPE is 21%.
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "predict.md").read_text()
    block = doc.split("```\nthreads,time,stall:lock\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "e.csv"
    path.write_text("threads,time,stall:lock\n" + block)
    got = _json(capsys, ["predict", str(path), "--method", "estima", "--json"])
    smape = got["fit_quality"][0]["smape"]
    assert smape > 10
    assert any(w.startswith(f"the fit is poor: SMAPE {smape:.1f}%") for w in got["warnings"])
    # the same curve's auto fit passes through its points: no such warning
    assert not any("fit is poor" in w for w in _json(capsys, ["predict", str(path), "--json"])["warnings"])


def test_the_csv_reader_does_not_keep_the_rows_as_text():
    # 600,000 rows (7 MB) took 290 MB of RSS: every row's cells were kept as a list of
    # strings (and every line in another list) before any was a number.  Its peak of traced
    # allocations was 26 times the text's size; read into a float array per column, 5 times.
    import random
    import tracemalloc

    from corecast.io.readers.measurements import parse_csv_measurements

    rng = random.Random(1)
    text = "threads,time,stall:lock\n" + "".join(
        f"{2 ** rng.randint(0, 4)},{rng.uniform(1, 2):.6f},{rng.uniform(0, 1):.4f}\n" for _ in range(200_000))
    parse_csv_measurements("threads,time\n1,2\n2,1\n", "warm.csv")  # numpy's own imports are not the reader's
    tracemalloc.start()
    try:
        data = parse_csv_measurements(text, "m.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sorted(data.counts) == [1, 2, 4, 8, 16] and sum(data.repetitions) == 200_000
    assert peak < 10 * len(text)


@pytest.mark.parametrize("text, says", [
    # a shape error further down is said before the header's unknown column, as before
    ("threads,time,bogus\n1,2,3\n2,1\n", "line 3: 2 cells, but the header has 3 columns"),
    ("threads,bogus\n1,2\n", "unknown column 'bogus'"),
    # the count column's first bad cell is said before an earlier row's bad value
    ("threads,time\n1,-2\n0,1\n", "line 3: column 'threads': count '0' must be a whole number >= 1"),
    # a column's first bad cell, not its last
    ("threads,time\n1,2\n0,1\n-1,1\n", "line 3: column 'threads': count '0' must be a whole number >= 1"),
    ("threads,time,stall:lock\n1,2,-1\n2,0,1\n", "line 3: column 'time': '0' must be positive"),
    ("threads,time\n1,2\n2,nan\n", "line 3: column 'time': 'nan' is not a finite number"),
    ("threads,value\n1,x\n", "column 'value' has no metric"),  # the metric before a cell
    ("threads,time\n1,2\n# metric: throughput\n2,1\n", "conflicts with column 'time'"),
])
def test_the_csv_readers_errors_keep_their_order(tmp_path, capsys, text, says):
    path = tmp_path / "e.csv"
    path.write_text(text)
    assert says in assert_one_line_error(capsys, ["predict", str(path)])


@pytest.mark.parametrize("text", ["".join(f"{i % 7 + 1},{i}.5\n" for i in range(1, 400)),
                                  "".join(f"{i % 7 + 1},{i}.5\r\n" for i in range(1, 400))])
def test_the_lines_read_a_chunk_at_a_time_are_the_files_lines(monkeypatch, text):
    # Each chunk must end just after a newline: a line cut in two at a chunk's end would be
    # two rows (or a bad cell) in a file over the chunk's size.  A small chunk, many ends.
    from corecast.io.readers import measurements

    monkeypatch.setattr(measurements, "_CHUNK", 16)
    assert list(measurements.text_lines(text)) == text.splitlines()


def test_tune_sim_json_has_the_texts_context(tmp_path, capsys):
    # The text's first line (file, counts, metric, best measured count, noise) was not in
    # the JSON, so its losses had nothing to be read against.
    path = tmp_path / "t.csv"
    path.write_text("# metric: time\nthreads,value\n1,8\n2,4.5\n4,3\n8,3.5\n")
    got = _json(capsys, ["tune-sim", str(path), "--json", "--noise", "0.1", "--seed", "7"])
    assert got["input"] == {"file": str(path), "counts": [1, 2, 4, 8], "count_unit": "threads", "metric": "time",
                            "best_measured": 4, "noise": 0.1, "seed": 7, "warnings": []}
    assert main(["tune-sim", str(path), "--noise", "0.1", "--seed", "7"]) == 0
    assert "best measured at 4 threads; noise 0.1" in capsys.readouterr().out


def test_a_sweeps_time_is_not_fitted_on_counts_past_its_cpus():
    # A sweep of 1,2,4,8 on 2 CPUs fitted its time on all four, so the slowdown from
    # sharing 2 CPUs at 4 and 8 was extrapolated as the program's own scaling.
    from corecast.io.sweepresult import empty_result
    from corecast.model.curve.extrapolation import extrapolate

    times = {1: [1.0], 2: [0.55], 4: [0.6], 8: [0.7]}
    out = {}
    for cpus in (None, 2, 8):
        result = empty_result(["prog"], "openmp", [], {})
        extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16, cpus=cpus)
        out[cpus] = result
    pred = {p["threads"]: p["value"] for p in out[2]["predictions"]}
    assert all(pred[n] >= pred[2] * (1 - 1e-9) for n in range(3, 17))  # no faster than on the 2 CPUs
    assert any("4, 8 ran oversubscribed on the sweep's 2 CPUs: left out of the time's fit" in w for w in out[2]["warnings"])
    # within the CPUs, nothing is left out: the same as without a CPU count
    assert out[8]["predictions"] == out[None]["predictions"]
    assert not any("oversubscribed" in w for w in out[8]["warnings"])
    # one count within the CPUs: fitted on all, and said so
    result = empty_result(["prog"], "openmp", [], {})
    extrapolate(result, times, [1, 2, 4, 8], [], {n: [{}] for n in times}, 16, cpus=1)
    assert any("fitted on counts 2, 4, 8, which ran oversubscribed" in w for w in result["warnings"])


@pytest.mark.parametrize("text, name, says", [
    # a negative time was said with no place: "value -1 is not positive"
    (json.dumps({"results": [{"command": "a", "mean": 1, "times": [1.0], "parameters": {"threads": "1"}},
                             {"command": "b", "mean": 1, "times": [-1.0], "parameters": {"threads": "2"}}]}),
     "hf.json", "result 2 ('b'): time -1 is not positive"),
    # a time of 0 is no time either, said at its result
    (json.dumps({"results": [{"command": "a", "mean": 1, "times": [1.0], "parameters": {"threads": "1"}},
                             {"command": "b", "mean": 1, "times": [0.0], "parameters": {"threads": "2"}}]}),
     "hf.json", "result 2 ('b'): time 0 is not positive"),
    # a hyperfine export of no command was read as a sweep result without "measured"
    ('{"results": []}', "hf.json", "a hyperfine JSON export with no results"),
    # the one pair's reason was only on stdout; the error line said none
    ("PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 1\nDATA 2\nDATA -3\n", "e.txt",
     "no (callpath, metric) pair could be predicted (r [time]: value -3 is not positive)"),
])
def test_odd_inputs_say_what_and_where(tmp_path, capsys, text, name, says):
    path = tmp_path / name
    path.write_text(text)
    assert main(["predict", str(path), "--json"]) == 2  # an Extra-P file's JSON still lists the pair
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("corecast: error: ") and says in err


def test_a_sweep_does_not_pass_on_estimas_time_fit_it_does_not_use():
    # The sweep takes only ESTIMA's stall categories (its time is auto's): ESTIMA's poor
    # fit of the time is not the sweep's.
    from corecast.io.sweepresult import empty_result
    from corecast.model.curve.extrapolation import extrapolate

    rows = [(1, 10.0, 0.01), (2, 5.3, 0.2), (4, 2.9, 0.4), (8, 1.8, 0.9), (12, 1.5, 1.5), (16, 1.4, 2.3)]
    result = empty_result(["prog"], "openmp", [], {})
    extrapolate(result, {n: [t] for n, t, _ in rows}, [n for n, _, _ in rows], ["lock"],
                {n: [{"lock": s}] for n, _, s in rows}, 32)
    assert result["stall_predictions"]["lock"] and not any("fit is poor" in w for w in result["warnings"])
