"""The machine predicted for: shared cores (SMT), sockets filled one after the other
(--fill sockets) and more threads than hardware threads."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from corecast import predict
from corecast.cli import main
from corecast.model.curve.entities import InputError
from corecast.model.machine.hardware import SMT_YIELD, Hardware, oversubscribed

from cli_checks import assert_one_line_error

N = np.arange(1, 9)
LINEAR = 100.0 * N  # every thread adds a whole core's worth


def test_without_a_machine_nothing_changes():
    plain = predict(N, LINEAR, metric="throughput", upto=32)
    same = predict(N, LINEAR, metric="throughput", upto=32, hw_threads=None, cores=None)
    assert np.array_equal(plain.values, same.values)
    assert plain.hardware is None and plain.to_dict()["hardware"] is None


def test_no_count_beyond_the_hardware_threads_is_preferred_or_faster():
    # amdahl: a law's band, which vouches for counts beyond the measured ones (auto's
    # plateau member holds its band's low end flat there: it prefers no unmeasured count).
    pred = predict(N, LINEAR, metric="throughput", upto=32, hw_threads=12, method="amdahl")
    assert pred.preferred == pred.fastest == 12
    at12 = pred.value_at(12)
    beyond = pred.counts > 12
    assert np.allclose(pred.values[beyond], at12)
    # Each thread runs 12/n of the time: the band's low end allows that fall.
    assert np.all(pred.low[beyond] <= at12 * 12 / pred.counts[beyond] * (1 + 1e-9))
    assert any("12 hardware threads" in w for w in pred.warnings)
    assert pred.to_dict()["hardware"] == {"hw_threads": 12, "cores": 12, "sockets": 1, "fill": "cores",
                                          "smt_yield": SMT_YIELD, "waits_for_slowest": False}


def test_a_time_curve_is_capped_the_same_way():
    pred = predict(N, 1000.0 / N, metric="time", upto=24, hw_threads=10, method="amdahl")
    assert pred.preferred == pred.fastest == 10
    assert np.allclose(pred.values[pred.counts > 10], pred.value_at(10))
    assert np.all(pred.high[pred.counts > 10] >= pred.values[pred.counts > 10])


def test_a_curve_that_falls_before_the_hardware_threads_keeps_falling():
    falling = 100.0 * N / (1 + 0.2 * (N - 1) + 0.02 * N * (N - 1))
    plain = predict(N, falling, metric="throughput", upto=32, method="usl")
    capped = predict(N, falling, metric="throughput", upto=32, method="usl", hw_threads=16)
    assert np.allclose(plain.values, capped.values)  # never raised to the value at 16


def test_threads_beyond_the_cores_add_a_share_of_a_core():
    plain = predict(N, LINEAR, metric="throughput", upto=16, method="amdahl")
    smt = predict(N, LINEAR, metric="throughput", upto=16, method="amdahl", hw_threads=16, cores=8)
    assert np.allclose(smt.values[:8], plain.values[:8])
    gain = np.diff(smt.values)[8:] / np.diff(plain.values)[8:]
    assert np.allclose(gain, SMT_YIELD, rtol=0.05)
    assert any("counts above 8 place threads where no measured count did" in w for w in smt.warnings)


def test_past_the_cores_the_band_spans_an_smt_thread_adding_nothing_to_a_whole_core():
    plain = predict(N, LINEAR, metric="throughput", upto=16, method="amdahl")
    smt = predict(N, LINEAR, metric="throughput", upto=16, method="amdahl", hw_threads=16, cores=8)
    past = smt.counts > 8
    # Nothing: the value at the cores; a whole core: the prediction without them.
    assert np.all(smt.low[past] <= smt.value_at(8) * (1 + 1e-9))
    assert np.all(smt.high[past] >= plain.values[past] * (1 - 1e-9))
    assert np.all((smt.low <= smt.values) & (smt.values <= smt.high))
    # Up to the cores the band is the plain one.
    assert np.allclose(smt.low[~past], plain.low[~past]) and np.allclose(smt.high[~past], plain.high[~past])


def test_past_the_hardware_threads_the_band_reaches_the_best_count_up_to_them():
    grid = np.arange(1.0, 9)
    perf = np.array([1.0, 2, 3, 4, 3, 2, 2, 2])
    low, high = perf * 0.9, np.array([1.1, 2.2, 3.3, 4.4, 3.3, 2.2, 10, 2.2])
    p, lo, hi = oversubscribed(grid, perf, low, high, hw_threads=6)
    assert np.array_equal(p[6:], [2, 2])  # no faster than at 6
    # As fast as the band let 4 threads go (the best up to 6), never above the model's band.
    assert np.allclose(hi[6:], [4.4, 2.2]) and np.array_equal(hi[:6], high[:6])
    p, lo, hi = oversubscribed(grid, 2 * grid, 1.8 * grid, 2.2 * grid, hw_threads=6)
    assert np.allclose(hi[6:], 2.2 * 6) and np.allclose(lo[6:], np.minimum(1.8 * grid, 1.8 * 6 * 6 / grid)[6:])


def test_a_curve_measured_past_the_cores_already_shows_smt():
    n = np.arange(1, 13)
    smt = predict(n, 100.0 * n, metric="throughput", upto=16, method="amdahl", hw_threads=16, cores=8)
    plain = predict(n, 100.0 * n, metric="throughput", upto=16, method="amdahl")
    assert np.allclose(smt.values, plain.values)


def test_a_curve_measured_past_the_hardware_threads_is_left_as_it_is():
    pred = predict(N, LINEAR, metric="throughput", upto=16, hw_threads=4)
    plain = predict(N, LINEAR, metric="throughput", upto=16)
    assert np.allclose(pred.values, plain.values)
    assert any("beyond the 4 hardware threads" in w for w in pred.warnings)


def test_a_count_asked_for_beyond_the_grid_is_capped_too():
    pred = predict(N, LINEAR, metric="throughput", upto=10, at=[64], hw_threads=20)
    # Evaluated, and reported only as a count the prediction names (the rows are those
    # asked and the named ones).
    named = {pred.preferred, pred.fastest, pred.knee}
    assert set(pred.counts.tolist()) == set(range(1, 11)) | {64} | (named & {20})
    assert pred.value_at(64) <= predict(N, LINEAR, metric="throughput", upto=20).value_at(20) * (1 + 1e-9)


@pytest.mark.parametrize("hw, cores", [(0, None), (None, 0), (4, 8)])
def test_impossible_machines_are_input_errors(hw, cores):
    with pytest.raises(InputError):
        Hardware.of(hw, cores)


def test_core_units_follow_the_fill_order():
    n = np.array([1, 20, 30, 40, 50])
    by_cores = Hardware(40, 20)  # every core before any core's second thread
    assert np.allclose(by_cores.units(n), [1, 20, 20 + 10 * SMT_YIELD, 20 + 20 * SMT_YIELD, 20 + 20 * SMT_YIELD + 10])
    # Two sockets of 10 cores, 20 hardware threads each, filled one after the other.
    by_socket = Hardware(40, 20, sockets=2, fill="sockets")
    n = np.array([10, 15, 20, 25, 30, 40])
    assert np.allclose(by_socket.units(n), [10, 10 + 5 * SMT_YIELD, 10 + 10 * SMT_YIELD, 15 + 10 * SMT_YIELD,
                                          20 + 10 * SMT_YIELD, 20 + 20 * SMT_YIELD])
    assert np.allclose(by_socket.units(np.array([25.0]), smt_yield=0.0), [15])


def test_models_switch_to_core_units_only_where_threads_land_where_none_did():
    by_cores = Hardware(40, 20)
    assert by_cores.step_ahead(16, 32) and not by_cores.step_ahead(24, 40) and not by_cores.step_ahead(8, 16)
    by_socket = Hardware(40, 20, sockets=2, fill="sockets")
    assert by_socket.step_ahead(10, 20)  # the first socket's second hardware threads
    assert by_socket.step_ahead(20, 40)  # the next socket
    assert not by_socket.step_ahead(4, 8) and not by_socket.step_ahead(12, 20)


def test_a_curve_measured_on_one_socket_continues_onto_the_next_at_a_fresh_cores_rate():
    # Linear per core, SMT threads adding SMT_YIELD of a core: what that machine does.
    by_socket = Hardware(16, 8, sockets=2, fill="sockets")
    n = np.arange(1, 9)
    pred = predict(n, 100.0 * by_socket.units(n), metric="throughput", upto=16, method="amdahl", hw_threads=16, cores=8, sockets=2,
                   fill="sockets")
    assert np.allclose(pred.values, 100.0 * by_socket.units(pred.counts), rtol=0.02)
    by_cores = predict(n, 100.0 * by_socket.units(n), metric="throughput", upto=16, method="amdahl", hw_threads=16, cores=8)
    assert by_cores.value_at(12) < 0.8 * pred.value_at(12)  # read as SMT only, the next socket looks flat
    assert any("sockets" in w for w in pred.warnings)


def test_pinned_threads_sharing_the_work_wait_for_the_slowest():
    by_socket = Hardware(40, 20, sockets=2, fill="sockets")
    assert by_socket.waits_for_slowest("time") and not by_socket.waits_for_slowest("throughput")
    assert not Hardware(40, 20).waits_for_slowest("time")  # unpinned: idle cores take the stragglers
    shared = (1 + SMT_YIELD) / 2  # each of two threads on one core
    n = np.array([10, 11, 20, 21, 40])
    assert np.allclose(by_socket.units(n, equal_work=True), [10, 11 * shared, 20 * shared, 21 * shared, 40 * shared])
    assert np.allclose(by_socket.units(n, smt_yield=1.0, equal_work=True), n)  # SMT as good as a core: no wait


def test_a_pinned_time_curve_is_predicted_slower_just_past_the_cores():
    n = np.arange(1, 11)
    times = 100.0 / n  # linear up to one socket's 10 cores
    machine = dict(hw_threads=40, cores=20, sockets=2)
    pinned = predict(n, times, metric="time", upto=20, method="amdahl", fill="sockets", **machine)
    # 11 pinned threads, two on one core: all wait for those two, at (1 + SMT_YIELD) / 2 of a core.
    assert pinned.value_at(11) == pytest.approx(100.0 / (11 * (1 + SMT_YIELD) / 2), rel=0.02)
    assert pinned.value_at(11) > pinned.value_at(10)
    assert any("waits for the slowest thread" in w for w in pinned.warnings)
    assert pinned.to_dict()["hardware"]["waits_for_slowest"]
    assert pinned.low[10] < pinned.values[10] < pinned.high[10]
    # Throughput (threads that work for a fixed time) and unpinned threads add a share of a core.
    rate = predict(n, 1.0 / times, metric="throughput", upto=20, method="amdahl", fill="sockets", **machine)
    assert rate.value_at(11) > rate.value_at(10)
    unpinned = predict(n, times, metric="time", upto=20, method="amdahl", **machine)
    assert unpinned.value_at(11) < unpinned.value_at(10)


@pytest.mark.parametrize("sockets, fill, words", [
    (3, "sockets", "do not divide evenly over 3 sockets"), (2, "packed", "fill order must be one of"),
    (16, None, "16 sockets but 8 cores")])
def test_impossible_layouts_are_input_errors(sockets, fill, words):
    with pytest.raises(InputError, match=words):
        Hardware.of(16, 8, sockets, fill)
    with pytest.raises(InputError, match="give its hardware threads or cores"):
        Hardware.of(None, None, 2, "sockets")


def test_cli_options(tmp_path, capsys):
    path = tmp_path / "tp.csv"
    path.write_text("threads,throughput\n" + "".join(f"{n},{100 * n}\n" for n in N))
    assert main(["predict", str(path), "--upto", "32", "--hw-threads", "16", "--cores", "8", "--json",
                 "--method", "amdahl"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hardware"] == {"hw_threads": 16, "cores": 8, "sockets": 1, "fill": "cores",
                               "smt_yield": SMT_YIELD, "waits_for_slowest": False}
    # A core's second thread may add nothing (the band's low end): no unmeasured SMT count is
    # preferred, though the prediction gains there.
    assert out["preferred_threads"] == 8
    rows = {r["threads"]: r["value"] for r in out["predictions"]}
    assert rows[16] > rows[8]
    assert main(["predict", str(path), "--upto", "16", "--hw-threads", "16", "--cores", "8", "--sockets", "2",
                 "--fill", "sockets", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hardware"]["sockets"] == 2 and out["hardware"]["fill"] == "sockets"


def test_cli_rejects_more_cores_than_hardware_threads(tmp_path, capsys):
    path = tmp_path / "tp.csv"
    path.write_text("threads,throughput\n" + "".join(f"{n},{100 * n}\n" for n in N))
    err = assert_one_line_error(capsys, ["predict", str(path), "--hw-threads", "4", "--cores", "8"])
    assert "8 cores but 4 hardware threads" in err
    err = assert_one_line_error(capsys, ["predict", str(path), "--hw-threads", "16", "--cores", "8",
                                         "--sockets", "3", "--fill", "sockets"])
    assert "do not divide evenly over 3 sockets" in err


def test_this_machine_reads_the_cpus_and_their_cores(tmp_path):
    from corecast.model.machine.sysfs import this_machine

    cpus = sorted(os.sched_getaffinity(0))
    for i, cpu in enumerate(cpus):  # every CPU this process may use, two per core
        d = tmp_path / f"devices/system/cpu/cpu{cpu}/topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text("0\n")
        (d / "core_id").write_text(f"{i // 2}\n")
        (d / "thread_siblings_list").write_text(",".join(str(c) for c in cpus[i - i % 2:i - i % 2 + 2]) + "\n")
    assert this_machine(str(tmp_path)) == (len(cpus), (len(cpus) + 1) // 2)
    assert this_machine(str(tmp_path / "hidden")) == (len(cpus), None)


def test_cli_this_machine(tmp_path, capsys):
    path = tmp_path / "tp.csv"
    path.write_text("threads,throughput\n1,100\n2,200\n")
    assert main(["predict", str(path), "--upto", "4", "--this-machine", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hardware"]["hw_threads"] == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("hw, cores, sockets", [(99999999999, None, None), (0, None, None),
                                                (16, 1 << 40, None), (16, 8, 10 ** 12)])
def test_machine_sizes_out_of_range_are_input_errors(hw, cores, sockets):
    # An absurd --hw-threads once became a 745 GiB allocation inside the model.
    with pytest.raises(InputError, match="must be between 1 and"):
        Hardware.of(hw, cores, sockets)


@pytest.mark.parametrize("upto, at", [(40, [75]), (50, [73]), (36, [75, 100]), (80, [])])
def test_no_count_past_the_hardware_threads_is_named_where_they_were_not_asked(upto, at):
    # usl's band vouches for growth past the 36 measured counts; 75 runs 72 threads' work
    # time-shared: never named over a count within the 72 hardware threads, asked or not.
    n = np.arange(1, 37)
    pred = predict(n, 100.0 * n, metric="throughput", upto=upto, at=at, hw_threads=72, method="usl")
    assert pred.fastest <= 72 and pred.preferred <= 72
    # Every count up to the largest asked is compared, 72 among them, asked or not.
    assert pred.fastest == 72
    # The machine bounds a count at 72, not the horizon: no larger --upto names more.
    assert not any("bounded by the largest count asked (72)" in w for w in pred.warnings)


def test_a_curve_measured_past_the_hardware_threads_may_be_named_there():
    n = np.arange(1, 13)
    pred = predict(n, 100.0 * n, metric="throughput", upto=16, hw_threads=8, method="usl")
    assert pred.fastest > 8  # measured there, and faster: the curve is taken as it is
