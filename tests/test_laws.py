import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corecast.model.curve.entities import Measurements
from corecast.model.curve.methods import laws

N = np.array([1, 2, 4, 6, 8, 12, 16, 24, 32], float)


def test_usl_recovers_parameters_from_exact_curve():
    p = np.array([100.0, 0.03, 0.0005])
    fit = laws.fit_usl(Measurements.from_samples(N, laws.usl(N, p)), 64)
    assert fit.params["lambda"] == pytest.approx(100.0, rel=1e-4)
    assert fit.params["sigma"] == pytest.approx(0.03, rel=1e-3)
    assert fit.params["kappa"] == pytest.approx(0.0005, rel=1e-3)


def test_usl_recovers_parameters_from_noisy_curve():
    rng = np.random.default_rng(3)
    p = np.array([100.0, 0.05, 0.001])
    y = laws.usl(N, p) * (1 + rng.normal(0, 0.01, N.size))
    fit = laws.fit_usl(Measurements.from_samples(N, y), 64)
    assert fit.params["sigma"] == pytest.approx(0.05, abs=0.015)
    assert fit.params["kappa"] == pytest.approx(0.001, abs=0.0005)
    q = np.arange(1, 49)
    np.testing.assert_allclose(fit.perf(q), laws.usl(q, p), rtol=0.08)


def test_usl_parameters_stay_physical_on_superlinear_data():
    y = N**1.2
    fit = laws.fit_usl(Measurements.from_samples(N, y), 64)
    assert fit.params["sigma"] >= 0 and fit.params["kappa"] >= 0


def test_amdahl_recovers_serial_fraction():
    fit = laws.fit_amdahl(Measurements.from_samples(N, laws.amdahl(N, [5.0, 0.1])), 64)
    assert fit.params["serial_fraction"] == pytest.approx(0.1, rel=1e-3)
    assert fit.params["x1"] == pytest.approx(5.0, rel=1e-3)


def test_gustafson_recovers_serial_fraction():
    fit = laws.fit_gustafson(Measurements.from_samples(N, laws.gustafson(N, [2.0, 0.3])), 64)
    assert fit.params["serial_fraction"] == pytest.approx(0.3, rel=1e-3)


def test_time_and_throughput_give_the_same_fit():
    y = laws.usl(N, [10.0, 0.02, 0.001])
    a = laws.fit_usl(Measurements.from_samples(N, y, "throughput"), 64)
    b = laws.fit_usl(Measurements.from_samples(N, 1 / y, "time"), 64)
    q = np.arange(1, 65)
    np.testing.assert_allclose(a.perf(q), b.perf(q), rtol=1e-9)


sigmas = st.floats(0.0, 1.0)
kappas = st.floats(0.0, 0.05)
counts = st.integers(1, 1024)


@given(sigmas, counts)
def test_usl_without_coherency_is_amdahl(sigma, n):
    assert laws.usl(n, [1.0, sigma, 0.0]) == pytest.approx(laws.amdahl(n, [1.0, sigma]))


@given(sigmas, kappas, counts)
def test_usl_never_beats_linear_scaling(sigma, kappa, n):
    assert laws.usl(n, [1.0, sigma, kappa]) <= n * (1 + 1e-12)


@given(st.floats(0.0, 0.9), st.floats(1e-5, 0.05))
@settings(max_examples=50)
def test_usl_peaks_where_theory_says(sigma, kappa):
    # dX/dn = 0 at n* = sqrt((1 - sigma) / kappa).
    peak = np.sqrt((1 - sigma) / kappa)
    n = np.linspace(1, 4 * peak + 4, 20001)
    x = laws.usl(n, [1.0, sigma, kappa])
    if peak > 1:
        assert n[np.argmax(x)] == pytest.approx(peak, rel=0.01, abs=0.01)


@given(sigmas, counts)
def test_amdahl_is_bounded_by_the_serial_fraction(s, n):
    assert laws.amdahl(n, [1.0, s]) <= (1 / s if s > 0 else np.inf)
    assert laws.amdahl(n, [1.0, s]) <= n * (1 + 1e-12)


@given(sigmas, counts)
def test_gustafson_is_linear_in_n(a, n):
    assert laws.gustafson(n + 1, [1.0, a]) - laws.gustafson(n, [1.0, a]) == pytest.approx(1 - a)
