"""corecast.model.queueing: the M/M/1/N/N (machine repairman) queue against a discrete-event
simulation of the same queue, its limits, and property tests."""
from __future__ import annotations

import heapq
import math
import random
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corecast.model.queueing import Q, mva, mva_response_times, p0, response_time, response_times
from corecast.model.queueing import throughput, utilisation, waiting_time


def simulate(n: int, lam: float, mu: float, completions: int, seed: int) -> dict:
    """N customers: exponential think (rate lam), one FCFS exponential server (rate mu).
    Returns the mean response time, mean waiting time, throughput and idle share."""
    rng = random.Random(seed)
    thinking = [(rng.expovariate(lam), i) for i in range(n)]  # (request time, customer)
    heapq.heapify(thinking)
    queue: deque = deque()  # request times, FCFS, head in service
    t = start = service_start = departure = 0.0
    busy = resp = wait = 0.0
    done = 0
    warmup = completions // 20
    while done <= completions + warmup:
        if thinking and (not queue or thinking[0][0] <= departure):
            t, i = heapq.heappop(thinking)
            queue.append((t, i))
            if len(queue) == 1:
                service_start, departure = t, t + rng.expovariate(mu)
            continue
        t = departure
        arrived, i = queue.popleft()
        if done == warmup:  # statistics from here on
            start, busy, resp, wait = t, 0.0, 0.0, 0.0
        elif done > warmup:
            busy += t - service_start
            resp += t - arrived
            wait += service_start - arrived
        done += 1
        heapq.heappush(thinking, (t + rng.expovariate(lam), i))
        if queue:
            service_start, departure = t, t + rng.expovariate(mu)
    span = t - start
    counted = completions
    return {"R": resp / counted, "W": wait / counted, "X": counted / span, "P0": 1 - busy / span}


def naive_p0(n: int, lam: float, mu: float) -> float:
    rho = lam / mu
    return 1.0 / sum(math.factorial(n) / math.factorial(n - k) * rho ** k for k in range(n + 1))


# ---- the formulas against the simulation ------------------------------------------------
@pytest.mark.parametrize("n,rho", [(1, 0.5), (2, 1.0), (4, 0.3), (8, 0.2), (16, 0.05),
                                   (10, 1.0), (32, 0.02)])
def test_formulas_match_simulation(n, rho):
    mu = 1.0
    lam = rho * mu
    sim = simulate(n, lam, mu, completions=120_000, seed=1000 * n + int(100 * rho))
    assert response_time(n, lam, mu) == pytest.approx(sim["R"], rel=0.02)
    assert throughput(n, lam, mu) == pytest.approx(sim["X"], rel=0.02)
    assert p0(n, lam, mu) == pytest.approx(sim["P0"], rel=0.03, abs=0.005)
    assert waiting_time(n, lam, mu) == pytest.approx(sim["W"], rel=0.04, abs=0.01 / mu)


def test_closed_form_matches_naive_sum():
    for n in (1, 2, 5, 12, 30):
        for rho in (1e-3, 0.1, 0.5, 1.0, 3.0):
            lam, mu = rho * 2.0, 2.0
            ref = naive_p0(n, lam, mu)
            assert p0(n, lam, mu) == pytest.approx(ref, rel=1e-10)
            # R from the printed formula where it is well conditioned
            assert response_time(n, lam, mu) == pytest.approx(n / (mu * (1 - ref)) - 1 / lam,
                                                              rel=1e-8)


def test_p0_is_the_reciprocal_of_the_sum():
    # N = 1: sum = 1 + rho; the paper's typo would give 1 + rho instead of 1 / (1 + rho).
    assert p0(1, 3.0, 1.0) == pytest.approx(0.25)
    assert p0(2, 1.0, 1.0) == pytest.approx(1.0 / 5.0)  # 1 + 2 + 2


# ---- limits -----------------------------------------------------------------------------
def test_one_customer_never_waits():
    for lam, mu in ((0.1, 1.0), (1.0, 1.0), (50.0, 2.0)):
        assert response_time(1, lam, mu) == pytest.approx(1.0 / mu)
        assert waiting_time(1, lam, mu) == 0.0
        assert throughput(1, lam, mu) == pytest.approx(1.0 / (1.0 / lam + 1.0 / mu))


def test_light_load():
    n, mu = 64, 1.0
    for lam in (1e-6, 1e-12, 1e-100, 1e-300):
        assert p0(n, lam, mu) == pytest.approx(1.0, abs=1e-4)
        assert response_time(n, lam, mu) == pytest.approx(1.0 / mu, rel=1e-4)
        assert throughput(n, lam, mu) == pytest.approx(n * lam, rel=1e-4)
        assert waiting_time(n, lam, mu) >= 0.0
    # waiting ~ (n - 1) rho / mu to first order
    assert waiting_time(n, 1e-9, mu) == pytest.approx((n - 1) * 1e-9, rel=1e-3)
    assert p0(n, 0.0, mu) == 1.0 and throughput(n, 0.0, mu) == 0.0
    assert response_time(n, 0.0, mu) == 1.0 / mu


def test_heavy_load_saturates_the_server():
    mu = 4.0
    for n in (2, 10, 500):
        for lam in (1e3, 1e9, 1e200, math.inf):
            assert throughput(n, lam, mu) == pytest.approx(mu, rel=1e-3)
            # everyone else is always ahead: R -> N / mu
            assert response_time(n, lam, mu) == pytest.approx(n / mu, rel=1e-2)
    assert p0(7, math.inf, mu) == 0.0


def test_large_population_is_stable():
    for n in (1000, 3000, 5000):
        for rho in (1e-6, 1e-3, 0.01, 1.0, 1e6):
            x = throughput(n, rho, 1.0)
            r = response_time(n, rho, 1.0)
            assert math.isfinite(x) and math.isfinite(r)
            assert 0 <= p0(n, rho, 1.0) <= 1
            # Little's law on the whole population: N = X (R + Z)
            assert n == pytest.approx(x * (r + 1.0 / rho), rel=1e-9)
    # far beyond the knee N* = 1 + 1/rho the asymptote holds: R = N/mu - 1/lam
    assert response_time(3000, 0.01, 1.0) == pytest.approx(3000 - 100, rel=1e-9)


def test_bad_arguments():
    with pytest.raises(ValueError):
        p0(-1, 1.0, 1.0)
    with pytest.raises(ValueError):
        p0(3, 1.0, 0.0)
    with pytest.raises(ValueError):
        response_time(3, -1.0, 1.0)
    assert p0(0, 1.0, 1.0) == 1.0 and waiting_time(0, 1.0, 1.0) == 0.0


def test_spec_q_argument_order():
    assert Q(8, 2.0, 0.3) == response_time(8, 0.3, 2.0)



def test_response_times_are_response_time_bit_for_bit():
    # Every population in one call shares log rho and the terms' logs: the same floats as
    # one call per population (the NUMA fit's output depends on it, to the last bit).
    rng = random.Random(40)
    for _ in range(400):
        lam = rng.choice([0.0, math.inf, 10 ** rng.uniform(-300, 300), 10 ** rng.uniform(-4, 4)])
        mu = 10 ** rng.uniform(-300, 300) if rng.random() < 0.3 else 10 ** rng.uniform(-4, 4)
        ns = [rng.choice([0, 1, 2, rng.randint(0, 40), rng.randint(0, 3000)]) for _ in range(6)]
        assert response_times(ns, lam, mu) == [response_time(n, lam, mu) for n in ns]
    assert response_times([], 1.0, 1.0) == []
    with pytest.raises(ValueError, match="customers"):
        response_times([2, -1], 1.0, 0.0)  # the population's complaint first, as response_time's
    with pytest.raises(ValueError, match="service rate"):
        response_times([2], 1.0, 0.0)


def test_mva_response_times_agree_to_a_few_ulps():
    rng = random.Random(41)
    for _ in range(200):
        n = rng.choice([2, 16, 64, 1024])
        mu = 10 ** rng.uniform(-3, 3)
        lam = 10 ** rng.uniform(-5, 2) / n * mu
        ns = list(range(n + 1))
        for exact, cheap in zip(response_times(ns, lam, mu), mva_response_times(ns, lam, mu)):
            assert cheap == pytest.approx(exact, rel=1e-13)
    assert mva_response_times([0, 1, 3], 0.0, 2.0) == [0.5, 0.5, 0.5]
    assert mva_response_times([1, 3], math.inf, 2.0) == [0.5, 1.5]

# ---- MVA: the same queue as a closed network ---------------------------------------------
def test_mva_one_station_is_the_machine_repairman():
    think, service = 3.0, 0.7
    rows = mva(40, think, [service])
    for k, (x, res) in enumerate(rows, start=1):
        assert x == pytest.approx(throughput(k, 1 / think, 1 / service), rel=1e-9)
        assert res[0] == pytest.approx(response_time(k, 1 / think, 1 / service), rel=1e-9)


def test_mva_copies():
    think, d = 1.0, 0.5
    no_queue = mva(10, think, [d], [math.inf])
    for k, (x, res) in enumerate(no_queue, start=1):
        assert res[0] == pytest.approx(d)
        assert x == pytest.approx(k / (think + d))
    # k copies of a server: the throughput limit rises to k / d
    many = mva(2000, think, [d], [4.0])
    assert many[-1][0] == pytest.approx(4.0 / d, rel=1e-2)
    assert all(x <= 4.0 / d for x, _ in many)


def test_mva_subnormal_demands_keep_finite_residence_times():
    # 1 / 7e-313 overflows: the queues must not become inf (then every later R is inf).
    rows = mva(3, 0.0, [7.4e-313])
    for k, (x, res) in enumerate(rows, start=1):
        assert math.isfinite(res[0]) and res[0] == pytest.approx(k * 7.4e-313)


def test_mva_two_stations_bottleneck():
    rows = mva(300, 1.0, [0.2, 0.05])
    assert rows[-1][0] == pytest.approx(1 / 0.2, rel=1e-3)
    assert rows[0][0] == pytest.approx(1 / 1.25)


# ---- properties --------------------------------------------------------------------------
rates = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(n=st.integers(min_value=1, max_value=400), lam=rates, mu=rates)
def test_properties(n, lam, mu):
    P0 = p0(n, lam, mu)
    R = response_time(n, lam, mu)
    X = throughput(n, lam, mu)
    W = waiting_time(n, lam, mu)
    assert 0.0 < P0 <= 1.0 or (P0 == 0.0 and lam / mu > 1e-3)  # may underflow when saturated
    assert R >= 1.0 / mu * (1 - 1e-12)
    assert R >= (n / mu - 1.0 / lam) * (1 - 1e-9)  # asymptotic bound
    assert X <= min(mu, n * lam) * (1 + 1e-12)
    assert W == pytest.approx(R - 1.0 / mu, rel=1e-9, abs=1e-12 / mu)
    assert utilisation(n, lam, mu) == pytest.approx(X / mu, rel=1e-12)
    # Little's law over the whole population
    assert n == pytest.approx(X * (R + 1.0 / lam), rel=1e-8)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(min_value=1, max_value=200), lam=rates, mu=rates)
def test_more_customers_wait_longer(n, lam, mu):
    assert response_time(n + 1, lam, mu) >= response_time(n, lam, mu) * (1 - 1e-12)
    assert throughput(n + 1, lam, mu) >= throughput(n, lam, mu) * (1 - 1e-12)
