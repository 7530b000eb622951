"""Barnes et al. log-log regression: recovery, form choice, compute/wait split."""
import numpy as np
import pytest

from corecast.model.curve import methods
from corecast.model.curve.entities import InputError, Measurements
from corecast.model.curve.methods.regression import fit_loglog, fit_regression, fit_split, wait_time
from corecast.model.curve.prediction import predict

Q = np.array([1, 2, 4, 8, 16], float)
SIZES = np.array([100, 200, 400], float)


def power_law(q, s):
    return 3.0 * q**-0.9 * s**1.2


def grid():
    q = np.tile(Q, SIZES.size)
    s = np.repeat(SIZES, Q.size)
    return q, s


def test_registered():
    spec = methods.get("regression")
    assert spec.min_points == 3 and spec.needs == ()


def test_exact_power_law_recovered():
    q, s = grid()
    model = fit_loglog(q, power_law(q, s), {"n": s})
    assert model.degree == 1
    gamma0, gamma1, beta = model.coef
    assert gamma1 == pytest.approx(-0.9, abs=1e-9)
    assert beta == pytest.approx(1.2, abs=1e-9)
    assert gamma0 == pytest.approx(np.log2(3.0), abs=1e-9)
    assert model.predict([64.0], {"n": 400.0})[0] == pytest.approx(power_law(64.0, 400.0), rel=1e-9)


def test_method_predicts_power_law_at_target_size():
    q, s = grid()
    data = Measurements.from_samples(q, power_law(q, s), "time", sizes={"n": s})
    fit = fit_regression(data, 64.0)
    assert fit.method == "regression" and fit.candidate == "loglog-linear"
    assert fit.params["gamma1"] == pytest.approx(-0.9, abs=1e-9)
    assert fit.params["beta_n"] == pytest.approx(1.2, abs=1e-9)
    n = np.array([32.0, 64.0])
    np.testing.assert_allclose(fit.perf(n), 1.0 / power_law(n, 400.0), rtol=1e-9)
    assert fit.residual < 1e-9
    assert fit.extras["within_training_error"] < 1e-9


def test_noisy_power_law_recovered():
    q, s = grid()
    q, s = np.tile(q, 3), np.tile(s, 3)  # three repetitions' worth of points
    t = power_law(q, s) * np.exp(0.02 * np.random.default_rng(3).standard_normal(q.size))
    model = fit_loglog(q, t, {"n": s}, degree=1)
    assert model.coef[1] == pytest.approx(-0.9, abs=0.03)
    assert model.coef[2] == pytest.approx(1.2, abs=0.03)
    auto = fit_loglog(q, t, {"n": s})
    assert auto.predict([32.0], {"n": 400.0})[0] == pytest.approx(power_law(32.0, 400.0), rel=0.08)


def test_quadratic_chosen_when_curved():
    q = np.arange(1, 13, dtype=float)
    lq = np.log2(q)
    t = np.exp2(3.0 - 1.0 * lq + 0.08 * lq**2)
    model = fit_loglog(q, t)
    assert model.degree == 2 and model.form == "loglog-quadratic"
    np.testing.assert_allclose(model.coef, [3.0, -1.0, 0.08], atol=1e-9)
    assert model.scores[2] < model.scores[1]
    # And with a little noise it still prefers the curve.
    noisy = t * np.exp(0.005 * np.random.default_rng(0).standard_normal(q.size))
    assert fit_loglog(q, noisy).degree == 2


def test_linear_kept_for_straight_data_with_noise():
    q = np.arange(1, 13, dtype=float)
    t = 5.0 * q**-0.8
    assert fit_loglog(q, t).degree == 1
    assert fit_loglog(q, t, degree=2).degree == 2  # forcing still works


def test_implausible_quadratic_rejected():
    # Curving down fast: extrapolated, the quadratic would speed up faster than q^1.5.
    q = np.arange(1, 9, dtype=float)
    lq = np.log2(q)
    t = np.exp2(-0.6 * lq - 0.1 * lq**2)
    assert fit_loglog(q, t).degree == 2
    assert fit_loglog(q, t, nmax=64).degree == 1


def test_too_few_counts():
    with pytest.raises(InputError):
        fit_loglog([4, 4, 4], [1.0, 1.1, 0.9])
    with pytest.raises(InputError):
        fit_loglog([1, 2], [1.0, 0.5], degree=2)


# --- compute / wait split -----------------------------------------------------------

def compute_wait(q):
    compute = 10.0 * q**-1.0  # perfectly parallel work
    wait = 0.2 * q**1.0  # synchronisation that grows with the threads
    return compute, wait


def test_split_when_wait_grows_and_predicts_better():
    q = np.arange(1, 13, dtype=float)
    compute, wait = compute_wait(q)
    t = compute + wait
    data = Measurements.from_samples(q, t, "time", stalls={"lock": wait * q * 0.25, "barrier": wait * q * 0.75})
    fit = fit_regression(data, 48.0)
    assert fit.extras["split"] is True
    assert fit.candidate.startswith("compute+wait loglog")
    assert "separately" in fit.reason
    assert fit.params["compute_gamma1"] == pytest.approx(-1.0, abs=1e-6)
    assert fit.params["wait_gamma1"] == pytest.approx(1.0, abs=1e-6)

    far = np.array([24.0, 32.0, 48.0])
    c_far, w_far = compute_wait(far)
    truth = 1.0 / (c_far + w_far)
    split_err = np.abs(fit.perf(far) / truth - 1)
    single = fit_loglog(q, t, nmax=48.0)
    single_err = np.abs(1.0 / single.predict(far) / truth - 1)
    assert split_err.max() < 1e-6
    assert single_err.max() > 10 * split_err.max() + 0.01


def test_split_when_wait_dominates():
    q = np.array([1, 2, 3, 4, 6, 8], float)
    compute = 10.0 / q
    wait = 6.0 * q**-0.3  # decreasing, but most of the time
    data = Measurements.from_samples(q, compute + wait, "time", stalls={"barrier": wait * q})
    fit = fit_regression(data, 32.0)
    assert fit.extras["split"] is True
    assert "compute" in fit.reason and "%" in fit.reason
    n = np.array([16.0, 32.0])
    np.testing.assert_allclose(fit.perf(n), 1.0 / (10.0 / n + 6.0 * n**-0.3), rtol=1e-6)


def test_no_split_when_compute_bound():
    q = np.arange(1, 9, dtype=float)
    t = 10.0 / q**0.95
    wait = 0.001 * t  # 0.1% of the time, not growing
    data = Measurements.from_samples(q, t, "time", stalls={"lock": wait * q})
    fit = fit_regression(data, 32.0)
    assert fit.extras["split"] is False
    assert "compute bound" in fit.reason


def test_stalls_summed_over_threads_are_divided():
    q = np.arange(1, 9, dtype=float)
    compute, wait = compute_wait(q)
    t = compute + wait
    data = Measurements.from_samples(q, t, "time", stalls={"lock": wait * q})  # totals over threads
    np.testing.assert_allclose(wait_time(data), wait)


def test_split_with_sizes():
    q, s = grid()
    compute = 2.0 * s / q
    wait = 0.5 * s**0.5 * q**0.7
    model = fit_split(q, compute + wait, wait, {"n": s})
    assert model.compute.params()["beta_n"] == pytest.approx(1.0, abs=1e-6)
    assert model.wait.params()["beta_n"] == pytest.approx(0.5, abs=1e-6)
    assert model.predict([64.0], {"n": 400.0})[0] == pytest.approx(2 * 400 / 64 + 0.5 * 20 * 64**0.7, rel=1e-6)


# --- metric symmetry and the public API ---------------------------------------------

@pytest.mark.parametrize("with_stalls", [False, True])
def test_time_and_throughput_agree(with_stalls):
    q = np.arange(1, 11, dtype=float)
    compute, wait = compute_wait(q)
    t = (compute + wait) * np.exp(0.01 * np.random.default_rng(1).standard_normal(q.size))
    stalls = {"lock": wait} if with_stalls else None
    a = fit_regression(Measurements.from_samples(q, t, "time", stalls=stalls), 40.0)
    b = fit_regression(Measurements.from_samples(q, 1.0 / t, "throughput", stalls=stalls), 40.0)
    n = np.arange(1, 41, dtype=float)
    assert a.candidate == b.candidate
    np.testing.assert_allclose(a.perf(n), b.perf(n), rtol=1e-9)


def test_predict_api_with_sizes():
    q, s = grid()
    t = power_law(q, s)
    pred = predict(q, t, metric="time", method="regression", sizes={"n": s}, upto=32)
    assert pred.method == "regression"
    assert pred.value_at(32) == pytest.approx(power_law(32.0, 400.0), rel=1e-9)
