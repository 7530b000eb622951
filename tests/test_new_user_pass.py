"""A new user's pass over the offline CLI (session newuser27): answers that depended on
the horizon without saying so, input silently dropped, counts mislabelled, and a
default that turned valid input into an error."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import corecast
from cli_checks import assert_one_line_error
from corecast.cli import main

# Amdahl with 45% efficiency at 16 threads (issue 41's curve).
N = [1, 2, 4, 8, 12, 16]
T = [100.0, 54.0741, 31.1111, 19.6296, 15.8025, 13.8889]


def test_the_counts_named_do_not_depend_on_which_counts_between_were_asked():
    # --at 1000 asked 1..32 and 1000 and named 32, the end of the counts asked, where
    # --upto 1000 names 66 (#41: "the preferred count is the horizon"); every count up to
    # the largest asked is now predicted, so both name the same counts.
    upto = corecast.predict(N, T, metric="time", method="amdahl", upto=32)
    gap = corecast.predict(N, T, metric="time", method="amdahl", at=[1000])
    far = corecast.predict(N, T, metric="time", method="amdahl", upto=1000)
    assert upto.fastest == 32 < gap.fastest == far.fastest == 66
    assert (gap.preferred, gap.knee) == (far.preferred, far.knee) == (12, 26)
    assert sum("fastest count is bounded by the largest count asked (32)" in w for w in upto.warnings) == 1
    assert not any("bounded" in w for w in gap.warnings)
    # The named counts are rows of the prediction, asked or not; the rows asked stay.
    assert set(gap.counts.tolist()) == set(range(1, 33)) | {66, 1000}


def test_a_horizon_below_the_measured_counts_names_what_the_full_range_names():
    # newuser37: --upto 4 --at 16 on a 1..16 curve preferred 16 (the step from 4 to 16
    # gained 0.33 of a thread each on average), --upto 16 preferred 12; --upto 8 --at 1000
    # named 8 and called it "the model's optimum 8", measured 41% slower.
    n = [1, 2, 4, 8, 16]
    t = [9.9269, 5.4451, 3.1277, 1.9535, 1.3889]
    full = corecast.predict(n, t, metric="time", upto=16)
    for kw in ({"upto": 4, "at": [16]}, {"upto": 8, "at": [1000]}, {"upto": 6, "at": [100]}):
        p = corecast.predict(n, t, metric="time", **kw)
        assert (p.preferred, p.fastest) == (full.preferred, full.fastest) == (12, 16), kw
        assert not any("optimum" in w for w in p.warnings), kw


def test_a_preferred_count_at_the_horizon_says_so():
    n = list(range(1, 9))
    near_linear = [100.0 * c / (1 + 0.02 * (c - 1)) for c in n]
    p = corecast.predict(n, near_linear, metric="throughput", method="amdahl", at=[1000])
    # Every count up to 1000 is compared: the band still vouches for growth there, so the
    # fastest count is the horizon's, and the warning says a larger one may be named.
    q = corecast.predict(n, near_linear, metric="throughput", method="amdahl", upto=1000)
    assert (p.preferred, p.fastest) == (q.preferred, q.fastest)
    said = [w for w in p.warnings if "count is bounded" in w]
    assert len(said) == 1 and "the fastest count is bounded by the largest count asked (1000)" in said[0]


def test_a_large_measured_count_predicts_without_an_upto(tmp_path, capsys):
    # The default horizon, twice the largest measured count, was over the grid's limit:
    # the error named a count (120000) the user never gave.
    path = tmp_path / "big.csv"
    path.write_text("threads,time\n1,10\n2,5\n60000,3\n")
    assert main(["predict", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert max(p["threads"] for p in d["predictions"]) == 100_000
    assert corecast.predict([1, 2, 60000], [10, 5, 3], metric="time").counts.max() == 100_000
    # A measured count past the limit is refused in the user's terms.
    path.write_text("threads,time\n1,10\n2,5\n200000,3\n")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "200000" in err and "400000" not in err


def test_extrap_text_with_fewer_data_lines_than_points_is_refused(tmp_path, capsys):
    # Three POINTS and two DATA lines: the point at 4 had no value and was dropped
    # silently (more DATA lines than POINTS was already an error).
    path = tmp_path / "e.txt"
    path.write_text("PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 10\nDATA 5\n"
                    "METRIC visits\nDATA 1\nDATA 1\nDATA 1\n")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "2 DATA lines for the 3 POINTS" in err and "line 6" in err
    path.write_text("PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 10\nDATA 5\nDATA 3\n"
                    "REGION s\nMETRIC time\nDATA 10\n")
    err = assert_one_line_error(capsys, ["predict", str(path)])
    assert "1 DATA line for the 3 POINTS" in err
    # A REGION line followed by its METRIC line has no DATA between them: that is fine.
    path.write_text("PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 10\nDATA 5\nDATA 3\n")
    assert main(["predict", str(path)]) == 0


def test_a_rank_sweep_result_is_predicted_in_ranks(tmp_path, capsys):
    result = {"count": "ranks", "measured": [{"threads": n, "time_s": t, "spread_s": 0.0, "stalls_s": {}}
                                             for n, t in ((1, 8.0), (2, 4.4), (4, 2.6), (8, 1.9))]}
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps(result))
    assert main(["predict", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count_unit"] == "ranks"
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ranks ") and "each rank added" in out and "thread" not in out
    # A thread sweep's stays threads.
    del result["count"]
    path.write_text(json.dumps(result))
    assert main(["predict", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count_unit"] == "threads"


def test_export_extrap_keeps_each_regions_repetitions():
    from corecast.views.sweepviz import extrap_records

    region_runs = {1: [0.50, 0.54], 2: [0.30, 0.26, 0.28]}
    result = {"measured": [{"threads": n, "time_s": 1.0, "spread_s": 0.0, "stalls_s": {},
                            "runs": [{"time_s": 1.0, "stalls_s": {}}] * len(ts)} for n, ts in region_runs.items()],
              "regions": [{"name": "f._omp_fn.0", "share": 0.5, "measured": [
                  {"threads": n, "time_s": sorted(ts)[len(ts) // 2], "spread_s": 0.0, "stalls_s": {},
                   "runs": [{"time_s": t, "stalls_s": {}} for t in ts]} for n, ts in region_runs.items()]}]}
    got = [(r["params"]["threads"], r["value"]) for r in extrap_records(result)
           if r["callpath"] == "main->f._omp_fn.0"]
    assert got == [(n, t) for n, ts in region_runs.items() for t in ts]


def test_sweep_regions_keep_their_runs(monkeypatch):
    # run_sweep with a stand-in for one run: each region's measured entry lists its runs.
    from corecast.sweep import runner
    from corecast.sweep.runs import RunResult

    def fake_run(command, n, *args, **kwargs):
        fake_run.calls += 1
        wall = 1.0 / n + 0.01 * fake_run.calls
        return RunResult(n, True, wall, {"imbalance": 0.01}, active=True,
                         regions={"f._omp_fn.0": (0.8 * wall, {"imbalance": 0.01})})
    fake_run.calls = 0
    monkeypatch.setattr(runner, "run_once", fake_run)
    monkeypatch.setattr(runner, "check_command", lambda command: None)  # no program is started
    result = runner.run_sweep(["true"], threads=[1, 2, 4], repeat=2, placement="none")
    (region,) = result["regions"]
    for entry in region["measured"]:
        assert len(entry["runs"]) == 2
        assert sorted(r["time_s"] for r in entry["runs"])[0] <= entry["time_s"]


def test_merge_one_run_fastest_at_the_horizon_says_so(monkeypatch):
    # The halo exchange's one-run model still gains at 16, the default --upto: its fastest
    # count was 8, 16, 64 or 128 as --upto said (8, 16, 64, 1000) with no word that the
    # horizon chose it, where predict warns.
    from corecast.tools import ranks

    def sample(rank: int) -> "ranks.RankSample":
        return ranks.RankSample(rank, 100 + rank, "r.jsonl", 1, 1.0, 0.9, {"mpi_p2p": 0.01, "mpi_collective": 0.01},
                                {"mpi_p2p": 0, "mpi_collective": 0}, 0.0, 0.0)

    monkeypatch.setattr(ranks, "collect_runs", lambda paths, fmt=None: ([ranks.Run(2, [sample(r) for r in range(2)])], []))
    m = ranks.merge(["r.jsonl"], upto=16)
    assert m.fastest == 16
    said = [w for w in m.warnings if "fastest count is bounded by the largest count asked (16)" in w]
    assert len(said) == 1
    # Where the model's optimum lies inside the counts asked, nothing is said.
    far = ranks.merge(["r.jsonl"], upto=100_000)
    assert far.fastest < 100_000 and not any("bounded" in w for w in far.warnings)


def test_autos_reason_does_not_say_a_widening_band_widens_by_0_percent():
    # Amdahl's exact throughputs: the members backtest at 0%, yet predict widens the band
    # beyond 8 (its distance rule); the reason said "the band widens by 0% per doubling".
    n = [1, 2, 4, 8]
    p = corecast.predict(n, [100, 190, 350, 600], metric="throughput", upto=16)
    i8, i16 = list(p.counts).index(8), list(p.counts).index(16)
    assert p.high[i16] / p.low[i16] > 1.2 * p.high[i8] / p.low[i8]  # it widens
    assert "widens by 0%" not in p.reason and "does not widen the band beyond 8" in p.reason
    wide = corecast.predict(N, T, metric="time", upto=32)
    assert "the band widens by at least 23% per doubling beyond 16" in wide.reason


@pytest.mark.parametrize("text", ["threads,time\n1,10\n2,5.5\n4,3\n",
                                  "PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 10\nDATA 5.5\nDATA 3\n"])
def test_count_attribute_is_refused_where_it_means_nothing(tmp_path, capsys, text):
    # --callpath was refused for a CSV; --count-attribute was silently ignored.
    path = tmp_path / "in.txt"
    path.write_text(text)
    err = assert_one_line_error(capsys, ["predict", str(path), "--count-attribute", "omp.num.threads"])
    assert "--count-attribute is for Caliper and CUBE inputs" in err


def test_replay_target_is_bounded_as_runs_is(capsys):
    # --target 100000000 was accepted and ran for about 9 minutes on a 2-core VM; the
    # library it replays predicts up to 1024 threads.
    recording = str(Path(__file__).parent / "data" / "recordings" / "schema1-omp_slowdown-2.jsonl")
    err = assert_one_line_error(capsys, ["replay", "--target", "100000000", recording])
    assert "--target" in err and "1024" in err
    assert main(["replay", "--target", "1024", "--json", recording]) == 0
    (proc,) = json.loads(capsys.readouterr().out)["processes"]
    assert proc["target"] == 1024
