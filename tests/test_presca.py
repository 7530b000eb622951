import numpy as np
import pytest

from corecast.model.curve import functions
from corecast.model.curve.entities import InputError, Measurements
from corecast.model.curve.methods import presca
from corecast.model.curve.prediction import predict

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


# A noisy time curve (a new user's spike.csv, issue 41) on which the degree-6 interpolant of
# the throughput crosses zero between the measured 16 and 24: its time had a pole near 18.
SPIKE_N = np.array([1, 2, 3, 4, 6, 8, 12, 16, 24], float)
SPIKE_T = np.array([0.43185, 0.27649, 0.23416, 0.22770, 0.17654, 0.22689, 0.19484, 0.23752, 0.29463])


@pytest.mark.parametrize("method", ["presca", "auto"])
def test_no_spike_between_measured_counts(method):
    pred = predict(SPIKE_N, SPIKE_T, metric="time", upto=30, method=method)
    for a, b, ya, yb in zip(SPIKE_N, SPIKE_N[1:], SPIKE_T, SPIKE_T[1:]):
        inside = (pred.counts > a) & (pred.counts < b)
        # Generous: twice either neighbour; the spike was 3.8x the larger one.
        lo, hi = min(ya, yb) / 2, max(ya, yb) * 2
        got = pred.values[inside]
        assert np.all((got >= lo) & (got <= hi)), (a, b, got)
        assert np.all(pred.high[inside] <= hi * 1.5), (a, b, pred.high[inside])


def test_interpolant_must_follow_the_gaps_too():
    y = 1 / SPIKE_T
    inner = presca.interpolate(SPIKE_N, y)
    assert np.allclose(inner(SPIKE_N), y, rtol=0.5)  # it passes near every measured point
    assert not presca.follows(inner, SPIKE_N, y)  # but crosses zero between 16 and 24


def test_no_pole_in_any_candidate():
    data = Measurements.from_samples(SPIKE_N, SPIKE_T, "time")
    for cand in presca.candidates(data.counts, data.perf, 30):
        kernel = cand.fit.kernel
        assert kernel.valid(cand.fit.params, 30), cand.label
        assert np.all(np.isfinite(cand.fit(np.linspace(1, 30, 2901)))), cand.label


MYDATA_N = np.array([1, 2, 4, 8, 12, 16], float)
MYDATA_T = np.array([10.0, 5.3, 2.9, 1.8, 1.5, 1.4])


@pytest.mark.parametrize("n, t", [(MYDATA_N, MYDATA_T), (SPIKE_N, SPIKE_T), (N, 1 + 0.05 * N + 4 / N)])
@pytest.mark.parametrize("method", ["presca", "auto"])
def test_near_answers_do_not_depend_on_the_asked_range(n, t, method):
    """The realism window is the measured range and a fixed horizon (twice the largest
    count), not what was asked: asking about 1000 does not move the answer at 17."""
    near = np.arange(1, int(2 * n.max()) + 1)
    base = predict(n, t, metric="time", method=method)
    assert base.counts.max() == near.max()
    for kw in ({"upto": int(n.max())}, {"upto": 4 * int(n.max())}, {"at": [1000]}, {"upto": 200, "at": [5000]}):
        other = predict(n, t, metric="time", method=method, **kw)
        both = np.isin(other.counts, near)
        np.testing.assert_allclose(other.values[both], base.values[np.isin(base.counts, other.counts[both])],
                                   rtol=1e-9, err_msg=str(kw))
        assert np.all(np.isfinite(other.values)) and np.all(other.values > 0)
        assert other.preferred == base.preferred or other.preferred > near.max(), kw


def test_far_counts_continue_the_near_form_without_a_jump():
    # Past the horizon the chosen form is kept where it stays realistic; else the best
    # candidate realistic out to the asked count continues it from the horizon's value.
    pred = predict(MYDATA_N, MYDATA_T, metric="time", method="presca", upto=200)
    far = pred.counts > MYDATA_N.max()  # (the interpolant meets the kernel at the largest count)
    step = np.abs(np.diff(np.log(pred.values[far])))
    assert step.max() < 0.05, pred.counts[far][step.argmax()]
