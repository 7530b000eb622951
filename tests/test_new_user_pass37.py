"""A new user's pass over predict and sweep (session 37, #41): answers that moved with the
counts asked, a speedup above 1 at the base count, a knee below the preferred count,
weak scaling read into a strong curve without a word, and smaller slips."""
from __future__ import annotations

import json

import numpy as np
import pytest

import corecast
from cli_checks import assert_one_line_error
from corecast.cli import main
from corecast.model.curve.entities import Measurements
from corecast.model.curve.preference import measured_preferred
from corecast.model.machine.hardware import Hardware

# README's ESTIMA example: a fit that misses the first point and dips from 1 to 2 threads.
ESTIMA_CSV = ("threads,time,stall:lock\n1,10.0,0.01\n2,5.3,0.2\n4,2.9,0.4\n8,1.8,0.9\n"
              "12,1.5,1.5\n16,1.4,2.3\n")


def test_speedup_is_one_at_the_base_count_whatever_the_fit(tmp_path, capsys):
    # ESTIMA's time at 1 thread is 7.1 where 10 was measured: the row read 1.41 and 141%.
    path = tmp_path / "e.csv"
    path.write_text(ESTIMA_CSV)
    assert main(["predict", str(path), "--method", "estima", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    first = d["predictions"][0]
    assert first["threads"] == 1 and first["speedup"] == pytest.approx(1.0)
    assert first["efficiency"] == pytest.approx(1.0)
    # Gustafson's law fitted to a hump: the same.
    p = corecast.predict([1, 2, 4, 8, 16], [10, 6, 5, 5.5, 7], metric="time", method="gustafson", upto=16)
    assert p.speedup[0] == pytest.approx(1.0) and p.efficiency[0] == pytest.approx(1.0)


def test_a_dip_the_curve_climbs_out_of_is_no_knee(tmp_path, capsys):
    # The ESTIMA example said "knee: 1 (adding threads beyond 1 gains less than 10%)" beside
    # "preferred count: 7 (each thread added up to it gains at least 25%)".
    path = tmp_path / "e.csv"
    path.write_text(ESTIMA_CSV)
    assert main(["predict", str(path), "--method", "estima", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["knee_count"] is not None and d["knee_count"] >= d["preferred_count"] > 1
    # On a concave curve the knee is still the first count one more thread barely helps.
    n = np.arange(1, 33)
    amdahl = 1.0 / (0.1 + 0.9 / n)
    p = corecast.predict(n, amdahl, metric="throughput", method="plateau", upto=32)
    gains = np.diff(amdahl)
    assert p.knee == int(n[np.flatnonzero(gains < 0.1 * amdahl[0])[0]])


def test_an_optimum_never_run_is_not_said_to_be_measured():
    # A launcher sweep said "the model's optimum 5 was measured 5% slower" of ranks 1..16
    # in powers of two: 5 was never run.
    curve = Measurements.from_samples([1, 2, 4, 8, 16], [10, 6, 4, 5, 8], "time")
    count, note = measured_preferred(6, curve, 16)
    assert count == 4 and "optimum 6 lies between the measured 4 and 8" in note and "measured 11%" not in note
    count, note = measured_preferred(8, curve, 16)
    assert count == 4 and "optimum 8 was measured 25% slower" in note


def test_weak_scaling_asked_of_a_strong_curve_is_warned():
    # --scaling weak on a 7x-at-16 curve printed 715% efficiency without a word.
    n, t = [1, 2, 4, 8, 16], [9.93, 5.45, 3.13, 1.95, 1.39]
    weak = corecast.predict(n, t, metric="time", scaling="weak", upto=16)
    said = [w for w in weak.warnings if "the time falls with the count" in w]
    assert len(said) == 1 and "an efficiency of 714% at 16" in said[0]
    assert not any("the time falls" in w for w in corecast.predict(n, t, metric="time", upto=16).warnings)
    # A weak curve read as weak says nothing; read as strong it says how to read it, in
    # the words of the CLI and of the Python API.
    grows = [1.0, 1.1, 1.2, 1.3, 1.4]
    assert not any("falls" in w for w in corecast.predict(n, grows, metric="time", scaling="weak").warnings)
    strong = corecast.predict(n, grows, metric="time")
    assert any('(--scaling weak, scaling="weak" in Python)' in w for w in strong.warnings)
    # A weak curve a little faster at the largest count (below WEAK_GAIN) is weak
    # scaling's still: nothing said.
    dips = [1.0, 0.98, 0.95, 0.93, 0.9]
    assert not any("the time falls" in w for w in corecast.predict(n, dips, metric="time", scaling="weak").warnings)


def test_a_curve_over_less_than_a_four_fold_range_is_not_judged_either_way():
    # Three counts over 1..3 say too little to call the scaling weak or strong (_judged).
    n = [1, 2, 3]
    falls = corecast.predict(n, [9.0, 4.7, 3.2], metric="time", scaling="weak", upto=4)
    assert not any("the time falls" in w for w in falls.warnings)
    grows = corecast.predict(n, [1.0, 1.2, 1.4], metric="time", upto=4)
    assert not any("--scaling weak" in w for w in grows.warnings)


def test_the_core_units_note_stops_at_the_hardware_threads():
    # "--hw-threads 36 --cores 18 --upto 40": "16 and 40 threads are 16 and 27.4", but
    # nothing past 36 gains (36 threads are 23.4 units).
    hw = Hardware.of(36, 18)
    note = next(w for w in hw.notes(16, 40) if "core units" in w)
    assert "16 and 36 threads are 16 and 23.4" in note
    assert "27.4" not in note


def test_sockets_that_do_not_divide_the_cores_are_refused(capsys, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("threads,time\n1,10\n2,5.5\n4,3\n")
    err = assert_one_line_error(capsys, ["predict", str(path), "--sockets", "3", "--cores", "8"])
    assert "3 sockets but 8 cores" in err
    assert Hardware.of(16, 8, 2) is not None


@pytest.mark.parametrize("name, magic", [(".svg", b"<?xml"), ("out.PDF", b"%PDF")])
def test_a_plot_is_written_in_the_format_its_name_says(tmp_path, name, magic):
    # "--plot .svg" wrote PNG bytes: os.path reads ".svg" as a name without a suffix.
    path = tmp_path / "c.csv"
    path.write_text("threads,time\n1,10\n2,5.5\n4,3\n")
    assert main(["predict", str(path), "--plot", str(tmp_path / name)]) == 0
    assert (tmp_path / name).read_bytes().startswith(magic)


def test_a_plot_name_ending_in_a_dot_is_refused(tmp_path, capsys):
    path = tmp_path / "c.csv"
    path.write_text("threads,time\n1,10\n2,5.5\n4,3\n")
    err = assert_one_line_error(capsys, ["predict", str(path), "--plot", str(tmp_path / "x.")])
    assert "ends in a dot" in err
    assert not (tmp_path / "x.").exists()


def test_one_count_is_named_in_the_singular():
    from corecast.views.sweepviz.png import _counted

    assert (_counted(1, "threads"), _counted(2, "ranks"), _counted(1, "compute units")) == \
        ("1 thread", "2 ranks", "1 compute unit")


def test_hyperfine_files_are_named_as_such(tmp_path, capsys):
    runs = [{"command": f"OMP_NUM_THREADS={n} ./p", "mean": 10.0 / n, "times": [10.0 / n] * 3,
             "exit_codes": [0, 0, 1 if n == 2 else 0], "parameters": {"threads": str(n)}} for n in (1, 2, 4, 8)]
    path = tmp_path / "hf.json"
    path.write_text(json.dumps({"results": runs}))
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 of 12 runs exited non-zero (hyperfine --ignore-failure) and was left out" in out
    # tune-sim reads what predict reads (session 38; it read CSV and sweep results only, and
    # said what a hyperfine file is and who reads it)
    assert main(["tune-sim", str(path)]) == 0
    out = capsys.readouterr().out
    assert "4 counts of threads (1..8)" in out
    # and says what the reader left out, as predict does (review38: the failed run went unsaid)
    assert "warning: 1 of 12 runs exited non-zero" in out
    assert main(["tune-sim", str(path), "--json"]) == 0
    assert any("exited non-zero" in w for w in json.loads(capsys.readouterr().out)["input"]["warnings"])


def test_the_regression_says_count_not_threads():
    # A launcher's sweep over ranks read "wait grows with threads".
    from corecast.model.curve.methods.regression import wait_time, split_decision

    data = Measurements.from_samples([1, 2, 4, 8], [10.0, 6.0, 4.0, 3.5], "time",
                                     stalls={"mpi_collective": [0.1, 1.0, 4.0, 12.0]})
    split, why = split_decision(data, wait_time(data))
    assert split and "wait grows with the count" in why


def test_counts_are_named_in_the_singular_for_one():
    # merge said "run at 1 ranks" and "rank(s)", numa "1 node(s)" (runuser37).
    from corecast.errors import counted

    assert (counted(1, "rank"), counted(2, "rank"), counted(1, "node"), counted(3, "process", "processes")) == \
        ("1 rank", "2 ranks", "1 node", "3 processes")


def test_weak_scaling_past_the_hardware_threads_gains_no_work_rate():
    # Each count does its own work: time-shared past 32 hardware threads the time grows
    # as n / 32, so the work rate n / T(n) stays at 32's.  It read S@64 51.35 against
    # 27.27 at 32, beside "predicted no faster than at 32" (review37).
    n = [1, 2, 4, 8, 16]
    t = [1.0, 1.02, 1.05, 1.1, 1.2]
    p = corecast.predict(n, t, metric="time", scaling="weak", upto=64, hw_threads=32, cores=16)
    at = dict(zip(p.counts.tolist(), p.speedup.tolist()))
    assert at[64] == pytest.approx(at[32], rel=1e-6) and at[40] == pytest.approx(at[32], rel=1e-6)
    assert p.fastest <= 32 and p.preferred <= 32
    # The band too: its fastest time at 64 does no more work per second than at 32.
    low = dict(zip(p.counts.tolist(), p.low.tolist()))
    assert 64 / low[64] <= 1.05 * 32 / low[32]
