"""A new user's pass over the offline side and the Python API (session newuser29): issue
41's fixes re-checked through the paths beside the one first fixed (the JSON, the API,
the plots, the HTML, numa), and bad input through the API."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

import corecast
from corecast.cli import main
from corecast.errors import InputError
from corecast.model.curve.fitquality import fit_quality

N = [1, 2, 4, 8, 16]
T = [10.0, 5.3, 2.9, 1.8, 1.4]


# -- 41.3: fit figures that cannot be true, in the JSON and for every model ------------------

def test_the_json_scores_no_interpolating_model_as_a_perfect_fit(tmp_path, capsys):
    # The table showed '-' for auto's continuation members, the JSON RSS 4.9e-30 and
    # SMAPE 3.7e-15: a perfect fit to anyone who reads the JSON.
    path = tmp_path / "t.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(N, T)))
    assert main(["predict", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["fit_quality"]
    through = [q for q in rows if q["interpolates"]]
    assert {q["model"] for q in through} >= {"auto", "plateau", "trend", "damped"}
    for q in through:
        assert q["rss"] is None and q["smape"] is None and q["adj_r2"] is None


def test_a_model_that_misses_its_points_is_not_said_to_pass_through_them():
    # sizemodel counts 9 fitted numbers on these 5 points, so no degree of freedom is
    # left, but it misses 10 by a factor of 11: it was shown 'interpolates: not a fit'.
    y = np.array([10.0, 20.0, 40.0, 80.0, 160.0])
    p = np.array([110.0, 25.0, 40.0, 80.0, 160.0])
    q = fit_quality(p, y, params=9)
    assert not q["interpolates"] and q["adj_r2"] is None
    assert q["rss"] == pytest.approx(100.0**2 + 5.0**2) and q["smape"] > 0
    # A model through every point, with degrees of freedom or without, interpolates.
    for params in (1, 9):
        assert fit_quality(y * (1 + 1e-9), y, params=params)["interpolates"]


def test_the_table_shows_a_saturated_model_that_misses_with_its_figures(tmp_path, capsys):
    path = tmp_path / "g.csv"
    path.write_text("threads,time\n1,10\n2,20\n4,40\n8,80\n16,160\n")
    assert main(["predict", str(path), "--method", "sizemodel"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("sizemodel "))
    assert "interpolates" not in row and "n/a" in row and "%" in row


def test_a_near_perfect_adjusted_r2_never_reads_as_1():
    from corecast.views.report import fit_quality_lines

    p = corecast.predict(N, T, metric="time", method="usl")
    q = dict(p.fit_quality[0], adj_r2=0.99998, interpolates=False)
    shown = "\n".join(fit_quality_lines(replace(p, fit_quality=[q])))
    assert "1.0000" not in shown and ">0.9999" in shown


@pytest.mark.parametrize("unit", [1e-308, 1e300])
def test_an_rss_no_float_holds_is_null_not_zero(unit):
    # (1e-308 s)² underflows to 0.0: an RSS of 0 claims a perfect fit of a curve that
    # misses by 11%.  Beyond the float range either way it is null, as inf already was.
    y = np.array([10.0, 5.0, 3.0, 2.0]) * unit
    q = fit_quality(y * np.array([0.9, 1.1, 1.0, 1.25]), y, params=2)
    assert q["rss"] is None and q["smape"] > 0 and 0 < q["adj_r2"] < 1


# -- the Python API: what its signature accepts, and bad input as InputError ------------------

def test_predict_takes_any_iterable_as_its_signature_says():
    # Iterable[float]: a generator gave "float() argument must be ... not 'list_iterator'".
    p = corecast.predict(iter(N), (t for t in T), metric="time", at=iter([24]),
                         stalls={"lock": iter([0.1, 0.2, 0.3, 0.5, 0.9])})
    q = corecast.predict(N, T, metric="time", at=[24], stalls={"lock": [0.1, 0.2, 0.3, 0.5, 0.9]})
    assert p.to_dict() == q.to_dict()


@pytest.mark.parametrize("counts, values, match", [
    (N, ["10", "x", "2", "1", "1"], "not a number"),
    (N, [10, 5j, 2, 1, 1], "not a number"),
    (N, [10, None, 2, 1, 1], "not a finite number"),  # numpy reads None as nan
    ([1, 2.5, 4, 8, 16], T, "whole number"),
    ([1, 2, 4, 8, "sixteen"], T, "not a number"),
])
def test_unusable_values_are_an_input_error(counts, values, match):
    # A ValueError or TypeError from numpy was all a caller got: the docstring promises
    # InputError with one line, and the CLI's readers refuse a count of 2.5 already.
    with pytest.raises(InputError, match=match):
        corecast.predict(counts, values, metric="time")


@pytest.mark.parametrize("kw, match", [
    (dict(knee_fraction=-1), "knee"), (dict(knee_fraction=0), "knee"),
    (dict(knee_fraction=float("nan")), "knee"), (dict(knee_fraction=2), "knee"),
    (dict(at=[2.5]), "whole number"), (dict(upto=20.5), "whole number"),
])
def test_the_api_checks_what_the_cli_checks(kw, match):
    # --knee-fraction -1 and --at 2.5 are one-line errors; the API took both silently
    # (knee None, and 2.5 asked as 2).
    with pytest.raises(InputError, match=match):
        corecast.predict(N, T, metric="time", **kw)


# -- preferred and fastest named alike in every view of a sweep, in its own unit -------------

def _sweep_result(count: str | None = None) -> dict:
    """A sweep result as corecast sweep writes it: the fastest count (6) lies past the
    preferred (3), and a region has both too."""
    times = {1: 0.43, 2: 0.28, 3: 0.23, 4: 0.23, 6: 0.18, 8: 0.23, 12: 0.19, 16: 0.24}
    pred = corecast.predict(list(times), list(times.values()), metric="time", upto=32)
    d = pred.to_dict()
    measured = [{"threads": n, "time_s": t, "runs": [{"time_s": t}]} for n, t in times.items()]
    result = {"measured": measured, "predictions": d["predictions"], "stall_predictions": {},
              "preferred_threads": d["preferred_threads"], "fastest_threads": d["fastest_threads"],
              "fastest_measured": d["fastest_measured"], "bottleneck": None, "command": ["./prog"],
              "runtime": "openmp", "warnings": [], "failed": [],
              "regions": [{"name": "work._omp_fn.0", "share": 0.9, "measured": measured,
                           "predictions": d["predictions"], "stall_predictions": {},
                           "preferred_threads": d["preferred_threads"],
                           "fastest_threads": d["fastest_threads"], "bottleneck": None, "warnings": []}]}
    if count:
        result["count"] = count
    assert result["preferred_threads"] < result["fastest_threads"]
    return result


def test_the_html_report_names_the_fastest_count_and_the_regions_counts():
    # The terminal report names both; the HTML named the preferred count only, and its
    # region table neither.
    from corecast.views.sweepviz.html import render_html

    page = render_html(_sweep_result())
    summary = page.split('<dl class="summary">')[1].split("</dl>")[0]
    assert "<dt>preferred threads</dt><dd>3</dd>" in summary and "<dt>fastest threads</dt><dd>6</dd>" in summary
    regions = page.split("<h2>Regions</h2>")[1].split("</table>")[0]
    assert "<th>preferred</th>" in regions and "<th>fastest</th>" in regions
    assert "<td>3</td><td>6</td>" in regions


def test_the_html_report_of_a_rank_sweep_says_ranks():
    # Issue 41 had ranks labelled threads; the HTML's headings still said threads.
    from corecast.views.sweepviz.html import render_html

    page = render_html(_sweep_result("ranks"))
    assert "<th>threads</th>" not in page and "<th>ranks</th>" in page
    assert "<dt>preferred ranks</dt>" in page and "measured (ranks: s)" in page


def _svg_texts(svg: bytes) -> str:
    """The text matplotlib's SVG writes as a comment before each text's glyphs."""
    return " ".join(part.split("-->")[0].strip() for part in svg.decode().split("<!--")[1:])


def test_the_sweep_plot_marks_the_fastest_count():
    from corecast.views.sweepviz.png import render_png

    texts = _svg_texts(render_png(_sweep_result(), "svg"))
    assert "preferred: 3" in texts and "fastest: 6" in texts


def test_the_predict_plot_marks_the_fastest_count(tmp_path):
    from corecast.views.plot import plot_prediction

    times = {1: 0.43, 2: 0.28, 3: 0.23, 4: 0.23, 6: 0.18, 8: 0.23, 12: 0.19, 16: 0.24}
    pred = corecast.predict(list(times), list(times.values()), metric="time", upto=32)
    assert (pred.preferred, pred.fastest) == (3, 6)
    plot_prediction(pred, str(tmp_path / "p.svg"))
    texts = _svg_texts((tmp_path / "p.svg").read_bytes())
    assert "preferred: 3" in texts and "fastest: 6" in texts
    # Where they are one count, one line says both.
    same = corecast.predict(N, T, metric="time", method="usl", upto=8)
    assert same.preferred == same.fastest
    plot_prediction(same, str(tmp_path / "q.svg"))
    texts = _svg_texts((tmp_path / "q.svg").read_bytes())
    assert f"preferred, fastest: {same.preferred}" in texts


# -- the machine's note says only what applies to it -------------------------------------------

def test_a_machine_without_smt_gets_no_smt_note():
    # 18 cores, 18 hardware threads in 2 sockets, filled socket by socket: no thread ever
    # shares a core, yet the note spoke of SMT threads at 30% and pinned threads that
    # share a core running at 65% (the units it gives are the counts themselves).
    p = corecast.predict([1, 2, 4, 8], [10, 5.3, 2.9, 1.8], metric="time", upto=40,
                         hw_threads=18, cores=18, sockets=2, fill="sockets")
    (note,) = [w for w in p.warnings if "no measured count did" in w]
    assert "SMT" not in note and "share a core" not in note and "core units" not in note
    assert note.startswith("counts above 9 place threads where no measured count did") and "socket" in note
    # With SMT the note keeps what it says of shared cores.
    q = corecast.predict([1, 2, 4, 8], [10, 5.3, 2.9, 1.8], metric="time", upto=40,
                         hw_threads=36, cores=18, sockets=2, fill="sockets")
    (note,) = [w for w in q.warnings if "no measured count did" in w]
    assert "SMT" in note and "share a core" in note


# -- numa: its JSON names the fastest node count as the run's JSON and predict's do ------------

def test_numa_json_names_the_fastest_node_count_beside_the_preferred(tmp_path, capsys):
    # preferred_nodes was the best count without --efficiency and the preferred one with
    # it; the fastest was then in no field (a run's JSON has fastest_nodes).
    sample = tmp_path / "s.json"
    sample.write_text(json.dumps({"llc": [0.01] * 8, "bus": [0.005] * 8, "mct": [0.04] * 8}))
    argv = ["numa", "--machine", "opteron6380", "--sample", str(sample), "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(argv + ["--efficiency", "0.1"]) == 0
    within = json.loads(capsys.readouterr().out)
    assert plain["fastest_nodes"] == plain["preferred_nodes"] == within["fastest_nodes"] == 3
    assert within["preferred_nodes"] == 2
    assert main(argv[:-1] + ["--efficiency", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "preferred: 2 nodes" in out and "fastest: 3 nodes, 24 cores" in out


# -- 41.2: a weak-scaling look is said on every path, in the user's numbers -------------------

def test_the_weak_look_quotes_the_measured_times_not_the_models_units():
    # Times of 1e-300 s are divided by their median before any model sees them; the
    # warning quoted those (0.9091 at 1, 1.182 at 8).
    w = [w for w in corecast.predict([1, 2, 4, 8], [1e-300, 1.1e-300, 1.2e-300, 1.3e-300],
                                     metric="time").warnings if "grows with the count" in w]
    assert len(w) == 1 and "(1e-300 at 1, 1.3e-300 at 8)" in w[0]


def test_a_sweep_that_looks_weak_says_so_and_how_to_read_it():
    # corecast predict on a sweep's JSON warned, the sweep itself said nothing: a command
    # with {threads} in its input size is a weak-scaling sweep as often as not.
    from corecast.model.curve.extrapolation import extrapolate

    counts, times = [1, 2, 4, 8, 16], [0.184, 0.174, 0.218, 0.222, 0.224]
    result = {"warnings": []}
    extrapolate(result, {n: [t] for n, t in zip(counts, times)}, counts, [], {n: [{}] for n in counts}, 32)
    (w,) = [w for w in result["warnings"] if "grows with the count" in w]
    assert "(0.184 at 1, 0.224 at 16)" in w and "corecast predict" in w and "--scaling weak" in w
