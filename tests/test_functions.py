from collections import OrderedDict

import numpy as np
import pytest

from corecast.model.curve import functions

N = np.arange(1.0, 13.0)

# Known parameters per kernel (throughput-like curves that stay positive on 1..24).
TRUE = {
    "Rat11": [0.0, 10.0, 0.05],
    "Rat12": [0.0, 10.0, 0.05, 0.002],
    "Rat22": [1.0, 10.0, 0.1, 0.08, 0.003],
    "Rat23": [1.0, 10.0, 0.5, 0.1, 0.004, 0.0001],
    "Rat33": [1.0, 10.0, 0.5, 0.01, 0.1, 0.004, 0.0002],
    "CubicLn": [10.0, 8.0, 1.5, -0.3],
    "Poly25": [5.0, 9.0, -0.2, 0.01],
    "ExpRat": [1.0, 10.0, 0.04],
    "ExpRatE": [2.0, 0.6, 0.1],
    "Poly2": [1.0, 3.0, 0.1],
}


@pytest.mark.parametrize("name", sorted(TRUE))
def test_exact_curve_is_reproduced(name):
    k = functions.get(name)
    y = k.evaluate(N, np.array(TRUE[name]))
    fit = functions.fit(k, N, y, nmax=24)
    assert fit is not None
    assert fit.error < 1e-3
    q = np.arange(1.0, 25.0)
    np.testing.assert_allclose(fit(q), k.evaluate(q, np.array(TRUE[name])), rtol=0.02)


@pytest.mark.parametrize("name", ["Rat11", "Rat12", "CubicLn", "ExpRat", "ExpRatE", "Poly2"])
def test_parameters_recovered_exactly(name):
    k = functions.get(name)
    p = np.array(TRUE[name])
    fit = functions.fit(k, N, k.evaluate(N, p))
    np.testing.assert_allclose(fit.params, p, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", ["Rat12", "Rat22", "CubicLn", "ExpRat", "ExpRatE"])
def test_noisy_curve_fits_within_noise(name):
    k = functions.get(name)
    rng = np.random.default_rng(1)
    clean = k.evaluate(N, np.array(TRUE[name]))
    noisy = clean * (1 + rng.normal(0, 0.01, N.size))
    fit = functions.fit(k, N, noisy)
    assert fit is not None
    assert fit.error < 0.02
    np.testing.assert_allclose(fit(N), clean, rtol=0.03)


def test_too_few_points_gives_no_fit():
    assert functions.fit("Rat33", N[:6], N[:6]) is None
    assert functions.fit("CubicLn", N[:3], N[:3]) is None


def test_pole_inside_range_is_rejected():
    k = functions.get("Rat11")
    # Denominator 1 - 0.05 n vanishes at n = 20.
    p = np.array([0.0, 10.0, -0.05])
    y = k.evaluate(N, p)
    assert functions.fit(k, N, y, nmax=12) is not None
    # Beyond 20 the free fit has a pole: the fit falls back to a pole-free one or none.
    far = functions.fit(k, N, y, nmax=30)
    assert far is None or (k.valid(far.params, 30) and np.all(np.isfinite(far(np.arange(1.0, 31.0)))))
    assert far is None or far.params[2] >= 0
    assert not k.valid(p, 30)
    assert k.valid(p, 12)


def test_fit_minimises_relative_not_absolute_error():
    # One point 1000x larger must not dominate a linear fit.
    n = np.array([1.0, 2.0, 3.0, 4.0])
    y = np.array([1.0, 2.0, 3.0, 4000.0])
    fit = functions.fit("Poly1", n, y)
    rel = np.abs(fit(n) - y) / y
    assert np.median(rel) < 1.0


def test_registry_has_every_method_kernel():
    for name in functions.PRESCA_KERNEL + functions.ESTIMA_KERNEL + tuple(functions.OPRESCA_BY_COUNT.values()):
        assert name in functions.KERNELS
    with pytest.raises(KeyError):
        functions.get("Rat99")


def _counting_least_squares(monkeypatch) -> list:
    """Every scipy least_squares call from now on, counted (relative_lsq imports it per call)."""
    import scipy.optimize

    calls, real = [], scipy.optimize.least_squares

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(scipy.optimize, "least_squares", counted)
    return calls


def test_a_kernel_met_again_on_the_same_points_is_not_refitted(monkeypatch):
    # PreSca fits each prefix for its window and again for a count past it; auto's backtest
    # fits the same prefixes again: only what depends on nmax (the pole check) is redone.
    monkeypatch.setattr(functions, "_SOLVED", OrderedDict(), raising=False)  # none kept from other tests
    k = functions.get("Rat11")
    y = k.evaluate(N, np.array([0.0, 10.0, -0.05]))  # a pole at 20: the free fit holds to 12 only
    calls = _counting_least_squares(monkeypatch)
    near = functions.fit(k, N, y, nmax=12)
    assert len(calls) == 1  # the polish
    far = functions.fit(k, N, y, nmax=30)
    assert len(calls) == 2  # the same polish, and the bounded refit the pole asks for
    assert functions.fit(k, N, y, nmax=30) is not None and len(calls) == 2
    far.params[:] = 0.0  # each answer has its own parameters
    functions._SOLVED.clear()
    fresh_far, fresh_near = functions.fit(k, N, y, nmax=30), functions.fit(k, N, y, nmax=12)
    assert fresh_near.params.tobytes() == near.params.tobytes() and fresh_near.error == near.error
    assert functions.fit(k, N, y, nmax=30).params.tobytes() == fresh_far.params.tobytes()
    assert fresh_far.params.tobytes() != far.params.tobytes()


def test_a_kept_kernel_fit_is_not_changed_by_an_answer_given_from_it(monkeypatch):
    # The answer's parameters are its own: a caller that scales them in place leaves the
    # next fit of the same points as it was.
    monkeypatch.setattr(functions, "_SOLVED", OrderedDict(), raising=False)
    k = functions.get("Rat11")
    y = k.evaluate(N, np.array([0.0, 10.0, -0.05]))
    first = functions.fit(k, N, y, nmax=12)
    kept = first.params.copy()
    first.params[:] = 0.0
    assert functions.fit(k, N, y, nmax=12).params.tobytes() == kept.tobytes()


def test_the_kept_kernel_fits_are_the_last_few(monkeypatch):
    # A long-running program's windows fit new points each time: what is kept stays bounded,
    # the oldest let go first.
    monkeypatch.setattr(functions, "_SOLVED", OrderedDict(), raising=False)
    monkeypatch.setattr(functions, "_SOLVED_SIZE", 3)
    k = functions.get("Poly1")
    ys = [k.evaluate(N, np.array([1.0 + i, 0.1])) for i in range(5)]
    for y in ys:
        functions.fit(k, N, y)
    assert [key[2] for key in functions._SOLVED] == [y.tobytes() for y in ys[2:]]
