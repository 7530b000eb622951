"""Finite-source queues: the M/M/1/N/N "machine repairman" and its closed-network form.

``N`` customers (threads, cores) each alternate between an exponential *think* time of
mean ``1/lam`` and a request to one FCFS server with exponential service of mean
``1/mu``; ``rho = lam / mu``.  With the terms

    t_k = N! / (N - k)! * rho^k          (k = 0..N, t_k = probability of k in system * 1/P0)

the standard results are

    P0 = 1 / sum_k t_k                     (Cho, Oh and Egger 2016; the NUMA paper prints the sum
                                            without the reciprocal: a typo)
    X  = mu (1 - P0)                       throughput (server completions per unit time)
    R  = N / (mu (1 - P0)) - 1 / lam       mean response time (waiting + service)
    Wq = R - 1 / mu                        mean waiting time

Numerics.  The sum is taken in log space (log t_k by the terms ratio
``t_k / t_{k-1} = (N - k + 1) rho``, then log-sum-exp), so N in the thousands and rho from
1e-300 to 1e300 neither overflow nor underflow.  ``R`` is *not* evaluated as the
difference above, which cancels catastrophically when rho is small (both terms are about
1/lam while R is about 1/mu); Little's law gives the equivalent all-positive form

    R = (1/mu) * sum_{k>=1} k t_k / sum_{k>=1} t_k,
    Wq = (1/mu) * sum_{k>=1} (k - 1) t_k / sum_{k>=1} t_k,

which is what the functions compute.  Limits: ``lam = 0`` (nobody ever asks) gives
P0 = 1, X = 0, R = 1/mu, Wq = 0; ``lam = inf`` (no think time) gives P0 = 0, X = mu,
R = N/mu.

``mva`` is exact Mean Value Analysis for the closed product-form network of one delay
(think) station and several FCFS exponential stations; with one station it is the same
queue as above (tests check it), with several it is what corecast's lock model uses when
a program has several kinds of lock.

Standard library only: the runtime model imports this inside profiled programs.
"""
from __future__ import annotations

import math
from itertools import accumulate, repeat
from operator import mul, sub

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Sequence

__all__ = ["p0", "utilisation", "throughput", "response_time", "response_times",
           "mva_response_times", "waiting_time", "Q", "mva"]


def _check(n: int, lam: float, mu: float) -> int:
    n = int(n)
    if n < 0:
        raise ValueError(f"customers must be >= 0, got {n}")
    if not (mu > 0) or math.isnan(mu):
        raise ValueError(f"service rate must be > 0, got {mu}")
    if lam < 0 or math.isnan(lam):
        raise ValueError(f"request rate must be >= 0, got {lam}")
    return n


def _terms(n: int, lam: float, mu: float) -> list[float]:
    """log t_k / t_{k-1} = log(n - k + 1) + log rho for k = 1..n; assumes 0 < lam < inf.
    Population m's terms are the last m of population n's (m <= n), the same floats."""
    log_rho = math.log(lam) - math.log(mu)  # no overflow of lam / mu itself
    return [math.log(i) + log_rho for i in range(n, 0, -1)]


def _scaled(terms: list[float]) -> tuple[list[float], float]:
    """t_k scaled by the largest (k = 0..n, from their log ratios ``terms``) and their sum
    over k >= 1."""
    logs = list(accumulate(terms, initial=0.0))  # log t_k, summed left to right (t_0 = 1)
    top = max(logs)
    w = list(map(math.exp, map(sub, logs, repeat(top))))
    return w, math.fsum(w[1:])


def _weights(n: int, lam: float, mu: float) -> tuple[list[float], float]:
    """t_k scaled by the largest (k = 0..n) and their sum over k >= 1; 0 < lam < inf."""
    return _scaled(_terms(n, lam, mu))


def _moments(n: int, lam: float, mu: float) -> tuple[float, float, float, float]:
    """(P0, busy share 1 - P0, mean k and mean k - 1 over k >= 1), computed stably."""
    if n == 0 or lam == 0:
        return 1.0, 0.0, 1.0, 0.0
    if math.isinf(lam):
        return 0.0, 1.0, float(n), float(n - 1)
    w, busy = _weights(n, lam, mu)
    if busy == 0.0:  # rho so small that t_1 underflowed against t_0 = 1
        # 1 - P0 ~= n rho and the mean k over k >= 1 is ~= 1
        share = math.exp(math.log(n) + math.log(lam) - math.log(mu))
        return 1.0 - share, share, 1.0, 0.0
    total = w[0] + busy
    mean_k = math.fsum(k * wk for k, wk in enumerate(w)) / busy
    mean_km1 = math.fsum((k - 1) * wk for k, wk in enumerate(w) if k) / busy
    return w[0] / total, busy / total, mean_k, mean_km1


def p0(n: int, lam: float, mu: float) -> float:
    """Probability that the server is idle (no customer at it), ``1 / sum_k t_k``."""
    n = _check(n, lam, mu)
    return _moments(n, lam, mu)[0]


def utilisation(n: int, lam: float, mu: float) -> float:
    """Server utilisation ``1 - P0`` (computed without cancellation for small rho)."""
    n = _check(n, lam, mu)
    return _moments(n, lam, mu)[1]


def throughput(n: int, lam: float, mu: float) -> float:
    """Completions per unit time, ``mu (1 - P0)``; never above ``min(mu, n lam)``."""
    n = _check(n, lam, mu)
    return mu * _moments(n, lam, mu)[1]


def response_time(n: int, lam: float, mu: float) -> float:
    """Mean time from a request to its completion (waiting + service),
    ``R = N / (mu (1 - P0)) - 1/lam``; ``1/mu`` when nobody waits."""
    return response_times([n], lam, mu)[0]


def response_times(ns: Sequence[int], lam: float, mu: float) -> list[float]:
    """``response_time(n, lam, mu)`` for every population n in ``ns``, bit for bit, with what
    the populations share computed once: log rho and the terms' logs (``_terms``).  The
    NUMA fit asks one queue at every team size it saw (16 sizes at each of 108 rates on a
    16-core node): one call per rate, not one per size."""
    ns = [int(n) for n in ns]
    for n in ns:
        if n < 0:
            _check(n, lam, mu)  # raises, as response_time does, before the rates' checks
    _check(0, lam, mu)
    if not ns or lam == 0:  # nobody ever asks: nobody waits
        return [1.0 / mu for _ in ns]
    if math.isinf(lam):  # no think time: all n queue
        return [float(n) / mu if n > 1 else 1.0 / mu for n in ns]
    top_n = max(ns)
    terms = _terms(top_n, lam, mu)
    ks = [float(k) for k in range(top_n + 1)]  # k * t_k as the int k gives it
    solved: dict[int, float] = {}
    for n in set(ns):
        if n <= 1:  # one customer never waits (the sums below give exactly 1/mu)
            solved[n] = 1.0 / mu
            continue
        w, busy = _scaled(terms[top_n - n:])
        if busy == 0.0:  # rho so small that t_1 underflowed against t_0 = 1
            solved[n] = 1.0 / mu
        else:  # the mean k over k >= 1, summed exactly (fsum: the same in any order), over mu
            solved[n] = math.fsum(map(mul, ks, w)) / busy / mu
    return [solved[n] for n in ns]


def mva_response_times(ns: Sequence[int], lam: float, mu: float) -> list[float]:
    """``response_times(ns, lam, mu)`` by Mean Value Analysis's recursion over populations
    1..max(ns) (Reiser and Lavenberg 1980), ``R(k) = (1 + Q(k-1)) / mu`` and
    ``Q(k) = k R(k) lam / (1 + R(k) lam)``: a few operations per population, all positive
    (no cancellation), equal to ``response_times`` to about 1e-14 relative (measured to
    population 4096) but not bit for bit.  For a search that compares values only where the difference cannot
    decide (``model.numa.fit_rate``)."""
    ns = [_check(n, lam, mu) for n in ns]
    if not ns or lam == 0 or math.isinf(lam):
        return response_times(ns, lam, mu)
    d = 1.0 / mu
    out = [d]  # population 0: nobody waits
    q = 0.0
    for k in range(1, max(ns) + 1):
        r = d * (1.0 + q)
        x = r * lam  # R over the think time 1 / lam
        q = k * x / (1.0 + x)  # customers at the server, Little's law
        out.append(r)
    return [out[n] for n in ns]


def waiting_time(n: int, lam: float, mu: float) -> float:
    """Mean time a request waits before its service starts, ``R - 1/mu`` (>= 0)."""
    n = _check(n, lam, mu)
    if n == 0:
        return 0.0
    return _moments(n, lam, mu)[3] / mu


def Q(n: int, mu: float, lam: float) -> float:  # noqa: N802 - the NUMA paper's name
    """``Q(customers, service rate, request rate)`` of Cho, Oh and Egger ("Online Scalability
    Characterization of Data-Parallel Programs on Many Cores", PACT 2016): the mean
    response time of the M/M/1/N/N queue.  Note the argument order, as the NUMA model writes it:
    ``Q(N, mu, lam) == response_time(N, lam, mu)``."""
    return response_time(n, lam, mu)


def mva(n: int, think: float, demands: list[float],
        copies: list[float] | None = None) -> list[tuple[float, list[float]]]:
    """Exact MVA for ``n`` customers, one delay station of mean ``think`` and FCFS
    exponential stations with service demands ``demands`` (visits x service time per
    cycle).  ``copies[c]`` (default 1, may be fractional or ``inf``) splits station ``c``
    into that many identical independent servers, each receiving an equal share of the
    visits (lock striping: ``inf`` means no queueing at all).

    Returns, for populations 1..n, ``(X, R)``: cycles completed per unit time and the
    residence time per cycle at each station (service included).  With one station,
    ``R[0] == response_time(k, 1/think, 1/demand)`` and ``X == throughput(...)``.
    """
    n = int(n)
    if think < 0 or any(d < 0 for d in demands):
        raise ValueError("think time and demands must be >= 0")
    copies = list(copies) if copies is not None else [1.0] * len(demands)
    if len(copies) != len(demands) or any(not (c >= 1.0) for c in copies):
        raise ValueError("copies must match demands and be >= 1")
    queue = [0.0] * len(demands)  # customers at each station (all its copies)
    out: list[tuple[float, list[float]]] = []
    for k in range(1, n + 1):
        res = [d * (1.0 + (q / c if not math.isinf(c) else 0.0))
               for d, q, c in zip(demands, queue, copies)]
        cycle = think + sum(res)
        if cycle > 0:
            x = k / cycle  # inf when cycle is subnormal: the queues below stay finite
            queue = [k * (r / cycle) for r in res]  # Little's law, x * r, without overflow
        else:  # nothing takes any time
            x = math.inf
        out.append((x, res))
    return out
