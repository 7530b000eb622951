"""benchmarks/candidates.py: the candidate members are the shapes they claim to be."""
from pathlib import Path

import numpy as np
import pytest

from corecast.model.curve.entities import Measurements
from corecast.model.curve.methods import METHODS, auto, trend
from benchmark_module import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def candidates():
    before = dict(METHODS)
    try:
        with benchmark_module("candidates") as mod:
            yield mod
    finally:
        METHODS.clear()
        METHODS.update(before)  # the candidates are registered for the benchmark's process alone


def test_decay_shrinks_the_slope_as_the_last_two_doublings_did(candidates):
    # Amdahl's law, f = 0.1: decay continues the 8-16 slope times its ratio to the 4-8 one,
    # which lands nearer the law at 32 than continuing half or all of the 8-16 slope.
    n = np.array([1.0, 2, 4, 8, 16])
    x = 1 / (0.1 + 0.9 / n)
    data = Measurements.from_samples(n, x)
    last, before = np.log(x[4] / x[3]) / np.log(2), np.log(x[3] / x[2]) / np.log(2)
    fit = candidates.fit_decay(data, 32)
    assert fit.params["slope"] == pytest.approx(last * last / before)
    assert np.allclose(fit.perf(n), x)
    truth = 1 / (0.1 + 0.9 / 32)
    err = abs(fit.perf([32])[0] / truth - 1)
    assert err < abs(trend.damped_trend(data, 0.5).perf([32])[0] / truth - 1)
    assert err < abs(trend.fit_trend(data, 32).perf([32])[0] / truth - 1)


def test_decay_of_a_fall_a_growing_slope_and_a_turn(candidates):
    n = np.array([1.0, 2, 4, 8, 16])
    # A fall whose slope halves each doubling levels off the same way.
    x = 100 * np.exp(np.concatenate([[0], np.cumsum(np.array([-0.8, -0.4, -0.2, -0.1]) * np.log(2))]))
    assert candidates.fit_decay(Measurements.from_samples(n, x), 32).params["slope"] == pytest.approx(-0.05)
    # A slope that grew is continued as it is (the ratio is at most 1).
    grew = Measurements.from_samples(n, n * [1, 1, 1, 1, 1.2])
    assert candidates.fit_decay(grew, 32).params["slope"] == pytest.approx(trend.recent_slope(grew))
    # Rising, then falling: the curve turned, so auto's damping of the last slope.
    turned = Measurements.from_samples(n, [10.0, 18, 30, 36, 30])
    assert candidates.fit_decay(turned, 32).params["slope"] == pytest.approx(
        auto.DEFAULT_RULES.damping * np.log(30 / 36) / np.log(2))
