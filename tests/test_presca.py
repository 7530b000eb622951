import numpy as np
import pytest

from corecast.model.curve import functions
from corecast.model.curve.entities import InputError, Measurements
from corecast.model.curve.methods import presca

N = np.arange(1.0, 13.0)


def test_realistic_rejects_non_positive_values():
    assert not presca.realistic(lambda n: 10 - n, 16)
    assert presca.realistic(lambda n: 10 + 0 * n, 16)


def test_realistic_rejects_abrupt_growth_and_collapse():
    assert not presca.realistic(lambda n: n**2.5, 16)  # more than 1.5x linear per step
    assert not presca.realistic(lambda n: 1000 * np.exp(-2 * n), 16)  # collapses too fast
    assert presca.realistic(lambda n: n, 16)
    assert presca.realistic(lambda n: n / (1 + 0.01 * n * n), 64)


def test_filter_is_the_time_form_for_time_data():
    # The paper's time-domain bound T(n) >= (2/3)((n-1)/n) T(n-1) is the same as the
    # throughput bound on 1/T: a time curve at exactly that limit passes, below fails.
    t = [1.0]
    for n in range(2, 10):
        t.append(t[-1] * (2 / 3) * (n - 1) / n * 1.0001)
    tt = np.array(t)
    assert presca.realistic(lambda n: 1 / tt[np.asarray(n, int) - 1], 9)
    assert not presca.realistic(lambda n: 1 / (tt[np.asarray(n, int) - 1] * 0.9 ** (np.asarray(n) - 1)), 9)


def test_checkpoints_and_subsets():
    y = 10 * N / (1 + 0.05 * (N - 1) + 0.002 * N * (N - 1))
    fit = presca.fit_presca(Measurements.from_samples(N, y), 24)
    assert fit.checkpoints == [9.0, 10.0, 11.0, 12.0]
    assert fit.params["subset"] in (2, 4, 6, 8)
    assert fit.params["kernel"] in functions.PRESCA_KERNEL


def test_extrapolates_a_usl_curve():
    y = 10 * N / (1 + 0.05 * (N - 1) + 0.002 * N * (N - 1))
    fit = presca.fit_presca(Measurements.from_samples(N, y), 24)
    q = np.arange(13.0, 25.0)
    truth = 10 * q / (1 + 0.05 * (q - 1) + 0.002 * q * (q - 1))
    assert np.max(np.abs(fit.perf(q) - truth) / truth) < 0.05


def test_interpolation_inside_the_range():
    n = np.array([1, 2, 4, 6, 8, 10, 12], float)
    y = 5 * n / (1 + 0.1 * (n - 1))
    fit = presca.fit_presca(Measurements.from_samples(n, y), 24)
    q = np.array([3.0, 5.0, 7.0])
    np.testing.assert_allclose(fit.perf(q), 5 * q / (1 + 0.1 * (q - 1)), rtol=0.02)


def test_time_and_throughput_agree():
    y = 10 * N / (1 + 0.05 * (N - 1) + 0.002 * N * (N - 1))
    a = presca.fit_presca(Measurements.from_samples(N, y, "throughput"), 24)
    b = presca.fit_presca(Measurements.from_samples(N, 1 / y, "time"), 24)
    q = np.arange(1.0, 25.0)
    np.testing.assert_allclose(a.perf(q), b.perf(q), rtol=1e-9)


def test_needs_five_points():
    with pytest.raises(InputError, match="at least 5"):
        presca.fit_presca(Measurements.from_samples(N[:4], N[:4]), 8)


def test_interpolation_degree():
    fit = presca.interpolate(N[:5], N[:5] ** 2)
    assert fit.kernel.nparams == 4  # degree min(6, m - 2) = 3
    assert presca.interpolate(N[:5], N[:5] ** 2, online=True).kernel.nparams == 5
