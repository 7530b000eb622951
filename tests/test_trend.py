import numpy as np
import pytest

import corecast
from corecast.model.curve.entities import Fit, Measurements
from corecast.model.curve.methods import METHODS, laws, trend


def test_plateau_holds_the_last_value_and_passes_through_the_points():
    n = np.array([1.0, 2, 4, 8])
    x = np.array([10.0, 19, 30, 33])
    fit = trend.fit_plateau(Measurements.from_samples(n, x), 32)
    assert np.allclose(fit.perf(n), x)
    assert np.allclose(fit.perf([12, 16, 32]), 33.0)


def test_trend_continues_the_last_slope_in_log_log():
    n = np.array([1.0, 2, 4, 8, 16])
    x = 5.0 * n**0.5
    fit = trend.fit_trend(Measurements.from_samples(n, x), 64)
    assert fit.params["slope"] == pytest.approx(0.5)
    assert fit.perf([64])[0] == pytest.approx(5.0 * 64**0.5)


def test_trend_slope_is_bounded_both_ways():
    n = np.array([1.0, 2, 4, 8])
    falling = Measurements.from_samples(n, [100.0, 50, 5, 0.1])
    assert trend.fit_trend(falling, 32).params["slope"] == -trend.MAX_SLOPE
    rising = Measurements.from_samples(n, [1.0, 2, 16, 512])
    assert trend.fit_trend(rising, 32).params["slope"] == trend.MAX_SLOPE


def test_both_are_methods_of_their_own():
    assert {"plateau", "trend"} <= set(METHODS)
    p = corecast.predict([1, 2, 4, 8], [10.0, 6.0, 4.0, 3.0], metric="time", method="plateau", upto=16)
    assert p.values[-1] == pytest.approx(3.0)


def test_damped_continues_a_share_of_the_recent_slope():
    n = np.array([1.0, 2, 4, 8, 16])
    data = Measurements.from_samples(n, 5.0 * n**0.8)
    half = trend.damped_trend(data, 0.5)
    assert half.params["slope"] == pytest.approx(0.4)
    assert np.allclose(half.perf(n), 5.0 * n**0.8)
    assert half.perf([64])[0] == pytest.approx(5.0 * 16**0.8 * 4**0.4)
    # The two ends of the damping are the other continuation members.
    assert trend.damped_trend(data, 0.0).perf([64])[0] == pytest.approx(trend.fit_plateau(data, 64).perf([64])[0])
    assert trend.damped_trend(data, 1.0).perf([64])[0] == pytest.approx(trend.fit_trend(data, 64).perf([64])[0])
    assert METHODS["damped"].fit(data, 64).params["slope"] == pytest.approx(0.8 * trend.DAMPING)


def test_recent_slope_is_the_last_doubling_however_densely_measured():
    # Linear up to 16, then n^0.2: measured at powers of 2 or every 2 threads, the recent
    # slope is the last doubling's (the last 3 powers of 2 would mix in the linear part).
    def curve(n):
        n = np.asarray(n, float)
        return np.where(n <= 16, 3.0 * n, 3.0 * 16 * (n / 16) ** 0.2)

    sparse = np.array([1.0, 2, 4, 8, 16, 32])
    dense = np.arange(2.0, 33, 2)
    for n in (sparse, dense):
        assert trend.recent_slope(Measurements.from_samples(n, curve(n))) == pytest.approx(0.2)
    # With the smallest count above half the largest, the window starts there.
    n = np.array([20.0, 24, 28, 32])
    assert trend.recent_slope(Measurements.from_samples(n, 2.0 * n**0.7)) == pytest.approx(0.7)


def test_anchored_law_continues_its_shape_from_the_last_measured_value():
    # USL fitted to noisy points misses the last one; anchored, it starts there and keeps
    # the law's ratio between counts beyond it.
    n = np.array([1.0, 2, 4, 6, 8, 12, 16])
    x = laws.usl(n, [10.0, 0.04, 0.002]) * np.array([1.0, 0.97, 1.03, 0.98, 1.02, 0.96, 1.06])
    data = Measurements.from_samples(n, x)
    fit = laws.fit_usl(data, 64)
    assert abs(fit.perf([16])[0] / x[-1] - 1) > 0.02  # the fit misses the last point
    anchored = trend.anchored(fit, data)
    assert np.allclose(anchored.perf(n), x)  # the measured points inside the range
    q = np.array([20.0, 32, 64])
    assert np.allclose(anchored.perf(q), fit.perf(q) * x[-1] / fit.perf([16])[0])
    assert anchored.method == "usl" and anchored.candidate == "anchored"
    assert anchored.params["anchor_scale"] == pytest.approx(x[-1] / fit.perf([16])[0])


def test_anchoring_a_law_without_a_finite_value_at_the_last_count_is_refused():
    data = Measurements.from_samples([1.0, 2, 4, 8], [1.0, 2, 3, 4])
    broken = Fit(method="usl", candidate="usl", perf=lambda q: np.zeros_like(np.asarray(q, float)), reason="r")
    with pytest.raises(ValueError, match="no finite value"):
        trend.anchored(broken, data)
