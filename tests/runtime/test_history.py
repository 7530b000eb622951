"""A region's history in the runtime's predictor: T(1) measured at 1 thread (probes) anchors
the one-sample model, spread team sizes are extrapolated from the history, and a history
prediction carries its own T(1) into the process."""
from __future__ import annotations

import pytest

from corecast.model.runtime import predictor
from corecast.model.runtime.history import BASIS_LEN, RegionHistory, anchor_t1
from corecast.model.runtime.contention import region_contention as one_sample
from corecast.model.runtime.evidence import prior_loss

from .test_contention import process, region

TARGET = 16


def with_hist(r: dict, hist: list[tuple[int, int, float]]) -> dict:
    r = dict(r, hist=hist, calls=sum(c for _, c, _ in hist), requested=r["threads"], probes={})
    return r


def after(r: dict, earlier: list[tuple[int, int, float]]) -> dict:
    """Histories as the bridge keeps them after a window that saw ``earlier``."""
    h = RegionHistory()
    h.update(dict(r, hist=earlier))
    return {(r["name"], r["object"]): h}


def predict(r: dict, earlier: list[tuple[int, int, float]]) -> object:
    """The bridge's prediction for ``r`` after a window that saw ``earlier``."""
    return predictor.predict_region_threads(r, TARGET, TARGET, TARGET, after(r, earlier))


def test_measured_t1_rescales_a_lock_free_region():
    # 100 calls at 4 threads, 4 ms of thread work each (1 ms wall), no waits: the model
    # takes T(1) = 4 ms.  Probes found 3 ms at 1 thread: work per call grew 4/3 with the team.
    r = with_hist(region(threads=4, busy=0.4, calls=100), [(4, 100, 0.1), (1, 2, 0.006)])
    plain = one_sample(r, TARGET, TARGET, TARGET)
    t1_model = plain.work_s / r["calls"]
    assert t1_model == pytest.approx(0.004, rel=0.03)
    pred = predict(r, earlier=[(1, 2, 0.006)])
    t4_model = t1_model / plain.speedup[3]
    assert pred.speedup[3] == pytest.approx(0.003 / t4_model)  # measured T(1) / modelled T(4)
    f = 0.003 / t1_model
    assert [a / b for a, b in zip(pred.speedup, plain.speedup)] == pytest.approx([1.0] + [f] * 15)
    assert all(lo <= s <= hi for lo, s, hi in zip(pred.low, pred.speedup, pred.high))
    assert pred.high[3] >= plain.speedup[3] * 0.999  # the band keeps the unanchored reading
    assert pred.basis.startswith("contention + bandwidth: work/call x1.3")
    assert pred.basis.endswith("from 1 to 4 threads")
    assert pred.work_s == pytest.approx(f * plain.work_s)


def test_smallest_probed_size_anchors_when_one_thread_was_not_reached():
    r = with_hist(region(threads=4, busy=0.4, calls=100), [(4, 100, 0.1), (2, 2, 0.003)])
    plain = one_sample(r, TARGET, TARGET, TARGET)
    pred = predict(r, earlier=[(2, 2, 0.003)])
    t2_model = plain.work_s / r["calls"] / plain.speedup[1]
    # T(2) measured; T(1) from it, less the machine's assumed loss at 2 busy threads
    assert pred.speedup[1] / plain.speedup[1] == pytest.approx(0.0015 / t2_model * prior_loss(2))
    assert pred.basis.endswith("from 2 to 4 threads")


@pytest.mark.parametrize("held, anchored", [(0.1, False), (0.001, True)])
def test_regions_holding_locks_keep_the_one_sample_curve(held, anchored):
    r = with_hist(region(threads=4, busy=0.4, serial=held, calls=100, acq={"critical": 1000},
                         critical=0.01), [(4, 100, 0.1), (1, 2, 0.006)])
    history = RegionHistory()
    history.update(r)
    plain = one_sample(r, TARGET, TARGET, TARGET)
    assert (anchor_t1(plain, r, history) is not plain) == anchored


def test_probed_regions_are_not_extrapolated_from_the_history(monkeypatch):
    def fail(*_):
        raise AssertionError("history fit called for a region mostly at its own count")
    monkeypatch.setattr(predictor, "extrapolate", fail)
    r = with_hist(region(threads=4, busy=0.4, calls=100), [(4, 100, 0.1), (2, 2, 0.003), (1, 2, 0.006)])
    predict(r, earlier=[(2, 2, 0.003), (1, 2, 0.006)])


def test_spread_team_sizes_use_the_history():
    hist = [(1, 30, 0.3), (2, 30, 0.16), (4, 30, 0.09)]
    r = with_hist(region(threads=4, busy=0.36, calls=90), hist)
    pred = predict(r, earlier=hist)
    assert pred.basis.startswith("history:")


def test_history_prediction_brings_its_own_t1_into_the_process():
    # A region that slows down with its team (omp_slowdown-like): at 4 threads nearly all of
    # its busy time is barrier wait, so busy time leaves no work for the process to weigh.
    hist = [(1, 1000, 0.1), (2, 1000, 0.5), (4, 1000, 0.7)]
    r = with_hist(region(threads=4, busy=2.8, calls=3000, omp_barrier=2.8), hist)
    pred = predict(r, earlier=hist)
    # T(1) from the fit (busy less waits would leave ~0 s of work)
    assert pred.basis.startswith("history:") and 0.1 < pred.work_s < 1.0
    proc = process(threads=4, wall=1.31, cpu=3.0)
    whole = predictor.predict_window([r, proc], TARGET, TARGET, TARGET,
                                  after(r, hist))[-1]
    assert whole.speedup[-1] < 0.5  # slower at 16 than at 1, as the region is


def test_process_basis_names_the_measured_bandwidth_term():
    # Two regions of equal work per call; one was probed at 1 thread (work per call grew
    # 4/3 from 1 to 4 threads), the other was not: x1.33 on about half of the work.
    probed = with_hist(region(threads=4, busy=0.4, calls=100), [(4, 100, 0.1), (1, 2, 0.006)])
    other = dict(with_hist(region(threads=4, busy=0.4, calls=100), [(4, 100, 0.1)]),
                 name="other._omp_fn.0")
    histories = {**after(probed, [(1, 2, 0.006)]), **after(other, [])}
    proc = process(threads=4, wall=0.2, cpu=0.8)
    preds = predictor.predict_window([probed, other, proc], TARGET, TARGET, TARGET, histories)
    assert preds[0].bandwidth == pytest.approx(4 / 3, rel=0.03) and preds[1].bandwidth is None
    share = preds[0].work_s / (preds[0].work_s + preds[1].work_s)
    assert preds[-1].basis.endswith(f"bandwidth x{preds[0].bandwidth:.2f} ({share:.0%} of work)")
    assert len(preds[-1].basis) <= BASIS_LEN
    unprobed = predictor.predict_window([other, proc], TARGET, TARGET, TARGET, after(other, []))
    assert unprobed[-1].basis.endswith("; bandwidth unmeasured")


def test_history_spanning_every_count_is_interpolated_without_a_fit(monkeypatch):
    # Steered on the machine it ran on: measured at 1, 2 and 4 threads, target 4.
    from corecast.model.runtime import history as hist_mod

    def no_fit():
        raise AssertionError("numpy/scipy loaded for counts the history spans")
    monkeypatch.setattr(hist_mod, "load_numeric", no_fit)
    hist = [(1, 100, 0.4), (2, 100, 0.25), (4, 100, 0.16)]
    h = RegionHistory()
    h.update(with_hist(region(threads=4, busy=0.64, calls=300), hist))
    pred = hist_mod.extrapolate(h, 4)
    assert pred.threads == [1, 2, 3, 4]
    assert pred.speedup[0] == 1.0 and pred.speedup[1] == pytest.approx(1.6) and pred.speedup[3] == pytest.approx(2.5)
    # 3: between 2 and 4, on the power law through them, its band spanning theirs
    assert 1.6 < pred.speedup[2] < 2.5 and pred.low[2] == pytest.approx(1.6) and pred.high[2] == pytest.approx(2.5)
    assert pred.fastest == 4 and pred.basis.startswith("history: measured at 3 team sizes")
    # Beyond the measured sizes it still fits (and loads numpy there).
    with pytest.raises(AssertionError):
        hist_mod.extrapolate(h, 8)


def test_a_missing_numpy_leaves_the_one_sample_prediction_not_none(monkeypatch):
    # Seen on the 16-core machine: corecast in a venv whose numpy came from a .pth file the
    # model's interpreter did not read; the fit's import failed and the whole report with it.
    from corecast.model.runtime import history as hist_mod

    def no_numpy():
        raise ModuleNotFoundError("No module named 'numpy'", name="numpy")
    monkeypatch.setattr(hist_mod, "load_numeric", no_numpy)
    hist = [(1, 30, 0.3), (2, 30, 0.16), (4, 30, 0.09)]
    r = with_hist(region(threads=4, busy=0.36, calls=90), hist)
    pred = predictor.predict_region_threads(r, TARGET, TARGET, TARGET, after(r, hist))
    one = one_sample(r, TARGET, TARGET, TARGET)
    assert pred.speedup == one.speedup
    assert pred.basis.endswith("; no fit: numpy missing") and len(pred.basis) <= BASIS_LEN


def test_t1_from_busy_time_at_n0_carries_the_machines_loss_there():
    """Busy time at n0 threads is work at the speed n0 busy threads keep: without a
    measurement at 1 thread, T(1) is that work times the assumed loss e(n0); T(n) for
    n >= 2 keeps the model's, so S(n0) x T(n0) stays T(1)'s, and a probe at 1 thread
    (T(1) measured) takes no loss at all."""
    from corecast.model.runtime.evidence import LOSS_PER_DOUBLING

    assert LOSS_PER_DOUBLING > 0
    r = with_hist(region(threads=16, busy=1.6, calls=100), [(16, 100, 0.1)])
    plain = one_sample(r, TARGET, TARGET, TARGET)
    pred = predict(r, earlier=[])
    assert [a / b for a, b in zip(pred.speedup, plain.speedup)] == pytest.approx([1.0] + [prior_loss(16)] * 15)
    assert pred.work_s == pytest.approx(plain.work_s * prior_loss(16))
    assert "machine_loss" in pred.fitted
    probed = with_hist(region(threads=16, busy=1.6, calls=100), [(16, 100, 0.1), (1, 2, 0.02)])
    assert "machine_loss" not in predict(probed, earlier=[(1, 2, 0.02)]).fitted


def test_two_team_sizes_beyond_them_draw_two_laws_without_scipy():
    """Two team sizes and a target past them (a program that changes its team, --target 64
    on a small machine): Amdahl's law and a power law through the two points, their
    geometric mean and the pair as the band, and no fit: scipy stays unloaded (auto over
    two points took half a second of CPU at the program's exit on the 2-core VM)."""
    import subprocess
    import sys

    code = """
import math, sys
from corecast.model.runtime.history import RegionHistory, extrapolate
h = RegionHistory()
# 1 thread: 10 ms per call; 2 threads: 6 ms (Amdahl: s = 2 ms, p = 8 ms)
h.update({"hist": [(1, 10, 0.10), (2, 10, 0.06)], "stalls_s": {}})
pred = extrapolate(h, 64)
i = pred.threads.index(64)
amdahl, power = 10 / (2 + 8 / 64), 64 ** math.log2(10 / 6)
assert math.isclose(pred.low[i], min(amdahl, power), rel_tol=1e-9), pred.low[i]
assert math.isclose(pred.high[i], max(amdahl, power), rel_tol=1e-9), pred.high[i]
assert math.isclose(pred.speedup[pred.threads.index(2)], 10 / 6, rel_tol=1e-9)
assert pred.low[i] < pred.speedup[i] < pred.high[i]
assert pred.basis.startswith("history: 2 team sizes (1, 2), Amdahl and a power law")
assert "scipy" not in sys.modules and "numpy" not in sys.modules, sorted(sys.modules)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_steered_sizes_without_one_thread_are_interpolated_without_scipy():
    """Steering on the machine it ran on that stopped short of 1 thread (16, 8 and 4 of 16
    cores): the history reaches the target, so the exit report needs no fit with scipy
    (half a second of CPU after the program's own end, where it ran auto); T(1) and the
    counts below 4 come from Amdahl's law and a power law fitted to the three sizes, their
    geometric mean and the pair in the band; measured counts stay measured."""
    import subprocess
    import sys

    code = """
import math, sys
from corecast.model.runtime.history import RegionHistory, extrapolate, two_laws
h = RegionHistory()
# Amdahl's law with s = 2 ms, p = 40 ms: 12, 7 and 4.5 ms per call at 4, 8 and 16 threads
h.update({"hist": [(4, 10, 0.120), (8, 10, 0.070), (16, 10, 0.045)], "stalls_s": {}})
pred = extrapolate(h, 16)
amdahl, power = two_laws({4: 0.012, 8: 0.007, 16: 0.0045})
assert math.isclose(amdahl["serial"], 0.002, rel_tol=1e-9) and math.isclose(amdahl["p"], 0.040, rel_tol=1e-9)
power1 = math.exp(power["log_c"])
t1 = math.sqrt(0.042 * power1)
i = pred.threads.index(16)
assert math.isclose(pred.speedup[i], t1 / 0.0045, rel_tol=1e-9), pred.speedup[i]
assert math.isclose(pred.low[i], min(0.042, power1) / 0.0045, rel_tol=1e-9)
assert math.isclose(pred.high[i], max(0.042, power1) / 0.0045, rel_tol=1e-9)
assert pred.threads[0] == 1 and pred.speedup[0] == 1.0
assert pred.basis == "history: measured at 3 team sizes, interpolated between; below 4, Amdahl and a power law"
assert "scipy" not in sys.modules and "numpy" not in sys.modules, sorted(sys.modules)
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_two_team_sizes_whose_line_goes_below_zero_give_no_history():
    from corecast.model.runtime.history import extrapolate

    h = RegionHistory()
    # 10 ms at 1 thread, 1 ms at 4 (super-linear): Amdahl's line T(n) = -2 + 12/n goes
    # below zero, so two points tell nothing it can extend
    h.update({"hist": [(1, 10, 0.10), (4, 10, 0.01)], "stalls_s": {}})
    assert extrapolate(h, 64) is None


def test_a_measurement_spans_windows_until_a_team_made_min_calls():
    # Calls longer than a window: one call in each of two windows measures 2 threads over
    # both (before, each window's single call measured nothing, ever); then a new span.
    h = RegionHistory()
    r = dict(region(threads=2, busy=0.2, calls=1), stalls_s={})
    h.update(dict(r, hist=[(2, 1, 0.3)]))
    assert h.window_team is None and h.span_windows == 1
    h.update(dict(r, hist=[(2, 2, 0.6)]))
    assert h.window_team == 2 and h.window_perf == pytest.approx(2 / 0.6) and h.span_windows == 0
    # A step (new_span) to 1 thread: the old count's call in flight ends in it, 1 thread's
    # first call does not measure it, its second does, over its own calls only.
    h.new_span()
    h.update(dict(r, hist=[(2, 3, 0.9), (1, 1, 0.2)]))
    assert h.window_team is None and h.span_perf(1) == pytest.approx(5.0)
    h.update(dict(r, hist=[(2, 3, 0.9), (1, 2, 0.4)]))
    assert h.window_team == 1 and h.window_perf == pytest.approx(5.0)


def test_the_exits_fit_over_sixteen_team_sizes_does_no_work_the_report_drops(monkeypatch):
    """A region run at 1..16 threads, asked about 64 (a program that changes its team on a
    small machine): the exit fits auto once.  Counted, not timed: predict's leave-last-out
    refit (fit figures the report never shows) doubled it, and PreSca refitted the prefixes
    auto's backtest shares with the whole curve: 57 least-squares runs, 0.7 s of CPU after
    the program's end on the 2-core VM; 25 now."""
    import scipy.optimize

    from collections import OrderedDict
    from corecast.model.curve import functions, prediction
    from corecast.model.curve.methods import auto
    from corecast.model.runtime.history import extrapolate

    monkeypatch.setattr(auto, "_FIT_CACHE", OrderedDict())  # no fit kept from other tests
    monkeypatch.setattr(functions, "_SOLVED", OrderedDict(), raising=False)

    def no_refit(*args, **kwargs):
        raise AssertionError("leave-last-out refit on the runtime's path")
    monkeypatch.setattr(prediction, "leave_last_out", no_refit)
    calls, real = [], scipy.optimize.least_squares

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(scipy.optimize, "least_squares", counted)
    hist = [(n, 10, 10 * (0.002 + 0.040 / n + 0.0004 * n)) for n in range(1, 17)]
    h = RegionHistory()
    for i in range(len(hist)):  # one team size per window, as steering measures them
        h.update({"hist": hist[: i + 1], "stalls_s": {}})
    pred = extrapolate(h, 64)
    assert pred is not None and pred.basis.startswith("history: auto over 16 team sizes")
    assert len(calls) <= 25, len(calls)


def test_two_sizes_that_reach_the_target_are_measured_not_averaged():
    # A steered convoy: most calls at 1 thread (after steering), some at its own 2, on a
    # 2-core machine (target 2).  The report printed S@2 0.18 beside "1 thread measured
    # 22.9 times as fast": the geometric mean of the one-sample model and the measured
    # history, where the measurements reach every count predicted (runuser37).
    r = with_hist(region(threads=2, busy=0.4, calls=5000), [(2, 40, 0.02), (1, 4960, 0.0496)])
    pred = predictor.predict_region_threads(r, 2, 2, 2, after(r, [(2, 40, 0.02), (1, 2000, 0.02)]))
    assert pred.speedup == pytest.approx([1.0, (0.0496 / 4960) / (0.02 / 40)])
    assert pred.basis.startswith("history: measured at 2 team sizes")
    # Short of the target, two sizes still meet the one-sample model halfway.
    wide = predictor.predict_region_threads(r, 16, 2, 16, after(r, [(2, 40, 0.02), (1, 2000, 0.02)]))
    assert wide.basis.startswith("geometric mean of the one-sample model")
