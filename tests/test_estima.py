"""ESTIMA (Chatzopoulos, Dragojević and Guerraoui, "ESTIMA: Extrapolating ScalabiliTy of
In-Memory Applications", ACM TOPC 2017) and its stall plugins."""
from __future__ import annotations

import numpy as np
import pytest

from corecast.model.curve import methods
from corecast.model.curve.entities import InputError, Measurements
from corecast.model.curve.methods import estima
from corecast.model.curve.methods.presca import realistic
from corecast.io.stallplugin import StallPlugin, read_stall

TRAIN = np.arange(1.0, 9.0)  # the first 8 counts
GRID16 = np.arange(1.0, 17.0)


def lock_program(n, lock_growth=0.8):
    """T(n) = W/n + L(n): W = 100 units of work of which 60 are memory-stalled cycles
    (a hardware category), L = lock wait per thread, whose total over threads grows
    like (n-1)^2 and is 0 at one thread.  Time peaks in performance near n = 12.

    ESTIMA's premise is that stalls explain time (the paper measures correlation > 0.95),
    hence most of the work here is stalled cycles.
    """
    n = np.asarray(n, float)
    memory = 60.0 + n  # total over threads, slowly growing
    lock = lock_growth * (n - 1.0) ** 2
    time = (40.0 + memory + lock) / n
    return time, {"memory": memory, "lock": lock}


def measurements(n, time, stalls) -> Measurements:
    return Measurements.from_samples(n, time, "time", stalls=stalls)


def test_registered_with_stalls_needed():
    method = methods.get("estima")
    assert method.needs == ("stalls",)
    assert method.min_points == estima.MIN_POINTS == 6
    with pytest.raises(InputError, match="stall"):
        methods.check_usable(method, Measurements.from_samples(TRAIN, 1 / TRAIN, "time"))


def test_category_extrapolation_recovers_synthetic_stall_curve():
    y = 50.0 + 3.0 * TRAIN + 0.5 * TRAIN**2
    curve = estima.extrapolate_stall(TRAIN, y, 16)
    truth = 50.0 + 3.0 * GRID16 + 0.5 * GRID16**2
    assert curve.label != "flat"
    np.testing.assert_allclose(curve(GRID16), truth, rtol=0.02)


def test_category_zero_at_one_thread_is_fitted_where_positive():
    y = 2.0 * (TRAIN - 1.0) ** 2  # lock wait: nothing to wait for with one thread
    curve = estima.extrapolate_stall(TRAIN, y, 16)
    assert curve(np.array([1.0]))[0] == 0.0
    np.testing.assert_allclose(curve(GRID16[1:]), 2.0 * (GRID16[1:] - 1.0) ** 2, rtol=0.02)


def test_all_zero_category_stays_zero():
    curve = estima.extrapolate_stall(TRAIN, np.zeros(8), 16, scale=100.0)
    assert curve.label == "zero"
    assert np.all(curve(GRID16) == 0)
    tiny = estima.extrapolate_stall(TRAIN, np.full(8, 1e-9), 16, scale=100.0)
    assert tiny.label == "zero"


def test_realism_filter_drops_negative_candidates():
    y = 100.0 - 10.0 * TRAIN  # falls linearly: straight extrapolation goes below 0
    every = estima.checkpoint_candidates(TRAIN, y, 16, lambda f: True)
    assert any(np.min(c.fit(GRID16)) < 0 for c in every)  # the filter has work to do
    kept = estima.checkpoint_candidates(
        TRAIN, y, 16, lambda f: bool(np.all(f(GRID16) >= 0)))
    assert len(kept) < len(every)
    assert all(np.min(c.fit(GRID16)) >= 0 for c in kept)
    curve = estima.extrapolate_stall(TRAIN, y, 16)
    assert np.all(np.isfinite(curve(GRID16))) and np.all(curve(GRID16) >= 0)


def test_factor_candidates_pass_realism_on_time():
    time, stalls = lock_program(TRAIN)
    curves = {k: estima.extrapolate_stall(TRAIN, v, 16) for k, v in stalls.items()}

    def s_of(q):
        return sum(c(q) for c in curves.values()) / q

    s_measured = sum(stalls.values()) / TRAIN
    choices = estima.choose_factor(TRAIN, time, s_measured, s_of, 16)
    assert choices
    for c in choices:
        assert realistic(lambda q, f=c.fit: 1.0 / (f(q) * s_of(q)), 16)


def test_lock_growth_predicts_the_slowdown_and_names_lock():
    time, stalls = lock_program(TRAIN)
    fit = estima.fit_estima(measurements(TRAIN, time, stalls), 16)
    truth = lock_program(np.array([12.0, 16.0]))[0]
    predicted = 1.0 / fit.perf(np.array([12.0, 16.0]))
    np.testing.assert_allclose(predicted, truth, rtol=0.10)
    assert predicted[1] > predicted[0]  # past the peak, time grows again
    assert fit.extras["future_bottleneck"] == "lock"
    assert fit.candidate.startswith("F=")
    assert fit.checkpoints == [5.0, 6.0, 7.0, 8.0]
    cats = fit.extras["categories"]
    assert set(cats) == {"memory", "lock"} and len(cats["lock"]["values"]) == 16
    assert fit.warnings == []


def test_no_stall_growth_predicts_near_linear_scaling():
    n = TRAIN
    memory = np.full(8, 60.0)  # same total stalls however many threads share them
    time = (40.0 + memory) / n
    fit = estima.fit_estima(measurements(n, time, {"memory": memory}), 16)
    perf = fit.perf(GRID16)
    speedup = perf / perf[0]
    np.testing.assert_allclose(speedup, GRID16, rtol=0.05)


def test_zero_stalls_at_a_measured_count_fall_back_with_a_warning():
    # The only category is lock wait, 0 at one thread: s(1) = 0 leaves F undefined there
    # and T = F s would vanish at n = 1, so ESTIMA falls back to time extrapolation.
    n = TRAIN
    lock = 0.8 * (n - 1.0) ** 2
    time = 100.0 / n + lock / n
    fit = estima.fit_estima(measurements(n, time, {"lock": lock}), 16)
    assert any("extrapolated the time directly" in w for w in fit.warnings)
    perf = fit.perf(GRID16)
    assert np.all(np.isfinite(perf)) and np.all(perf > 0)
    assert fit.extras["future_bottleneck"] == "lock"


def test_too_few_points_is_an_input_error():
    time, stalls = lock_program(TRAIN[:5])
    with pytest.raises(InputError, match="at least 6"):
        estima.fit_estima(measurements(TRAIN[:5], time, stalls), 16)


def test_pearson_constant_side_is_zero():
    assert estima.pearson(np.ones(5), np.arange(5.0)) == 0.0
    assert estima.pearson(np.arange(5.0), 2 * np.arange(5.0)) == pytest.approx(1.0)


# -- plugins ---------------------------------------------------------------------------

REPORT = """\
thread 0: aborted cycles = 1200
thread 1: aborted cycles = 800
thread 2: aborted cycles = 1.5e3
"""


@pytest.mark.parametrize("reducer, expected", [
    ("sum", 3500.0), ("min", 800.0), ("max", 1500.0), ("mean", 3500.0 / 3),
])
def test_plugin_reducers_on_text(reducer, expected):
    assert read_stall(r"aborted cycles = (\S+)", reducer, text=REPORT) == pytest.approx(expected)


def test_plugin_reads_a_file(tmp_path):
    report = tmp_path / "stm.log"
    report.write_text(REPORT)
    plugin = StallPlugin("aborts", "file", r"aborted cycles = ([0-9.e+]+)", "max", path=str(report))
    assert plugin.read(path=plugin.path) == 1500.0
    assert plugin.read(text="aborted cycles = 7") == 7.0  # captured stdout instead


@pytest.mark.parametrize("pattern, message", [
    (r"aborted cycles = \S+", "exactly one capture group"),
    (r"(aborted) cycles = (\S+)", "exactly one capture group"),
    (r"aborted cycles = (\S+", "not a valid regular expression"),
    (r"commits = (\d+)", "matches nothing"),
    (r"thread (\d): aborted cycles = \S+|(x)", "exactly one capture group"),
    (r"(thread)", "not a number"),
])
def test_plugin_bad_patterns(pattern, message):
    with pytest.raises(InputError, match=message):
        read_stall(pattern, "sum", text=REPORT)


def test_plugin_unknown_reducer_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="unknown stall reducer 'median'"):
        read_stall(r"(\d+)", "median", text="1")
    with pytest.raises(InputError, match="cannot read stall report"):
        read_stall(r"(\d+)", "sum", path=tmp_path / "missing.log")
    with pytest.raises(InputError, match="either a file path or captured text"):
        read_stall(r"(\d+)", "sum")
