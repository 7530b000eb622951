"""A new user's pass over merge, predict, tune-sim and export: what was measured shown as
measured, the metric by its name, singular counts, small percentages and output suffixes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_checks import assert_one_line_error
from corecast.cli import main
from test_new_user_pass32 import _rank  # a rank's process and summary records


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_merge_of_two_world_sizes_uses_the_smaller_run(tmp_path, capsys):
    # `merge h1-0.jsonl h2-0.jsonl h2-1.jsonl` predicted from the 2-rank run alone: 0.478 s
    # at 1 rank beside the 0.219 s measured there, and S 1.16 at 2 ranks where the 2-rank
    # run took longer.  sweep over the same two counts fits both.
    def merged(one_rank_wall: float) -> dict:
        one = _write(tmp_path / "h1-0.jsonl", _rank(0, 1, one_rank_wall, 0.0, 10))
        two = [_write(tmp_path / f"h2-{r}.jsonl", _rank(r, 2, 0.563, 0.2 - 0.1 * r, 20 + r)) for r in (0, 1)]
        assert main(["merge", "--json", str(one), *map(str, two)]) == 0
        return json.loads(capsys.readouterr().out)

    got = merged(0.369)  # an MPI phase of 0.219 s at 1 rank, 0.413 s at 2
    at = {p["ranks"]: p for p in got["predicted"]}
    assert at[1]["time_s"] == pytest.approx(0.219, rel=0.02)
    assert at[2]["time_s"] == pytest.approx(0.413, rel=0.02)
    assert at[2]["speedup"] < 1 and got["preferred_count"] == 1
    assert "the regression over rank counts needs 3 counts: time extrapolated with auto" in got["warnings"]
    # the 1-rank run's time moves the prediction
    assert {p["ranks"]: p for p in merged(0.769)["predicted"]}[2]["speedup"] > 1


def test_no_count_below_the_measured_range_is_named(tmp_path, capsys):
    # `predict from4.csv --upto 3` over counts from 4 named 3 preferred and fastest;
    # docs/predict.md: no count below the smallest measured one is preferred.
    data = tmp_path / "from4.csv"
    data.write_text("threads,time\n4,10\n8,5.5\n16,3.2\n32,2.4\n")
    err = assert_one_line_error(capsys, ["predict", str(data), "--upto", "3"])
    assert "below the smallest measured count (4)" in err
    # a count asked from 4 on still predicts the ones below it
    assert main(["predict", str(data), "--upto", "3", "--at", "4", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["preferred_count"] >= 4 and got["fastest_count"] >= 4
    # sweep says so before any run
    err = assert_one_line_error(capsys, ["sweep", "--threads", "4,8", "--upto", "3", "--", "true"])
    assert "--upto 3 is below the smallest count swept (4)" in err


def test_oversubscribed_counts_show_what_was_measured(tmp_path, capsys):
    # A sweep result on 2 CPUs: counts 4 and 8 are left out of the fit (documented), but
    # their measured cells were empty though 6.5 and 9.0 were measured.
    data = tmp_path / "ov.json"
    data.write_text(json.dumps({"measured": [{"threads": 1, "time_s": 8.0}, {"threads": 2, "time_s": 4.2},
                                             {"threads": 4, "time_s": 6.5}, {"threads": 8, "time_s": 9.0}],
                                "cpus_allowed": 2}))
    assert main(["predict", str(data), "--upto", "8"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines()[1:9]}
    assert " 6.5  not fitted" in rows["4"] and " 9  not fitted" in rows["8"]
    assert "not fitted" not in rows["1"] + rows["2"]
    assert "fit quality against the 2 fitted of the 4 measured counts" in out


def test_a_small_min_gain_is_said_with_its_digits(tmp_path, capsys):
    # `--min-gain 0.004` printed "gains at least 0% of one"
    data = tmp_path / "m.csv"
    data.write_text("threads,time\n1,10\n2,5.5\n4,3.2\n8,2.4\n")
    assert main(["predict", str(data), "--min-gain", "0.004", "--knee-fraction", "0.125"]) == 0
    out = capsys.readouterr().out
    assert "gains at least 0.4% of one" in out and "12.5% of a thread" in out


def test_a_metric_that_is_no_time_keeps_its_name(tmp_path, capsys):
    # Extra-P's bytes_sent read as "time" in the header, the preferred count's line, the
    # fit-quality line and the weak-scaling warning.
    data = tmp_path / "bytes.txt"
    data.write_text("PARAMETER p\nPOINTS 1 2 4 8\nREGION sendrecv\nMETRIC bytes_sent\n"
                    "DATA 1000\nDATA 2000\nDATA 4000\nDATA 8000\n")
    assert main(["predict", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == ["p", "bytes_sent"]
    assert "(predicted bytes_sent 1000;" in out and "(bytes_sent in its unit)" in out
    assert "the bytes_sent grows with the count" in out and "bytes_sent is read as a cost" in out
    assert "predicted time" not in out and "(time in its unit)" not in out and "the time grows" not in out


@pytest.mark.parametrize("text, said", [("threads\n1,2\n", "line 2: 2 cells, but the header has 1 column"),
                                        ("threads,time\n1\n", "line 2: 1 cell, but the header has 2 columns")])
def test_a_row_of_the_wrong_width_is_counted_in_the_singular_for_one(tmp_path, capsys, text, said):
    data = tmp_path / "a.csv"
    data.write_text(text)
    assert assert_one_line_error(capsys, ["predict", str(data)]).endswith(said + "\n")


@pytest.mark.parametrize("count, unit", [("threads", "1 thread;"), ("ranks", "1 rank;")])
def test_tune_sim_names_one_best_count_in_the_singular(tmp_path, capsys, count, unit):
    data = tmp_path / "w.csv"
    data.write_text(f"{count},time\n1,10\n2,11\n4,12\n8,13\n")
    assert main(["tune-sim", str(data)]) == 0
    assert f"best measured at {unit}" in capsys.readouterr().out.splitlines()[0]


def test_a_rank_sweeps_plot_says_ranks_and_mpi(monkeypatch):
    # A rank sweep's PNG said "stall time (s, all threads, stacked)" and "(openmp)", where
    # its terminal table says "summed over ranks".
    from corecast.views.sweepviz import png
    from test_sweepviz import make_result

    drawn = []

    class Kept(png.Figure):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            drawn.append(self)

    monkeypatch.setattr(png, "Figure", Kept)

    def labels(result: dict) -> tuple[str, set[str]]:
        drawn.clear()
        png.render_png(result)
        (fig,) = drawn
        return fig._suptitle.get_text(), {ax.get_ylabel() for ax in fig.axes}

    ranks = {**make_result(), "count": "ranks", "runtime": "openmp",
             "launcher": ["mpirun", "-np", "{ranks}"]}
    title, ys = labels(ranks)
    assert "(mpi)" in title.splitlines()[0] and "openmp" not in title
    assert "stall time (s, summed over ranks, stacked)" in ys
    title, ys = labels(make_result())  # a thread sweep keeps its runtime and threads
    assert "(openmp)" in title and "stall time (s, summed over threads, stacked)" in ys


def test_html_refuses_a_suffix_of_another_format(tmp_path, capsys):
    # `export --html e.png` wrote HTML into a .png name, while --plot checks its suffix.
    sweep = tmp_path / "s.json"
    sweep.write_text(json.dumps({"measured": [{"threads": 1, "time_s": 2.0}, {"threads": 2, "time_s": 1.1}]}))
    out = tmp_path / "e.png"
    err = assert_one_line_error(capsys, ["export", "--html", str(out), str(sweep)])
    assert "cannot write the HTML report to a .png file: name it .html" in err and not out.exists()
    marker = tmp_path / "ran"
    assert_one_line_error(capsys, ["sweep", "--threads", "1,2", "--html", str(out), "--", "touch", str(marker)])
    assert not marker.exists()
    for name in ("e.htm", "e.HTML", "report"):
        assert main(["export", "--html", str(tmp_path / name), str(sweep)]) == 0
        assert (tmp_path / name).read_text().lstrip().lower().startswith("<!doctype html")
