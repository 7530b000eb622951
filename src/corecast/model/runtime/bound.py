"""The measured bound: speedup predictions from one sample, before any contention model,
and the types both runtime predictors share (TeamPrediction, prediction_counts).

The runtime reports contention.py's model; this bound is kept as its reference: with no
lock contention the contention model must reduce to it (tests/runtime/test_contention.py),
and ``corecast.model.runtime.bound`` stays importable for users who want the optimistic bound.

OpenMP regions: the sample splits each call into serialised work S (critical, atomic and
OpenMP-lock hold time, single blocks), parallel work P and implicit-barrier imbalance.
With T1 = S + P the work of one thread,
- high (work/span, Cilkview-style):  T1 / max(S, T1 / n)
- central (Amdahl + imbalance):      T1 / (S + P (1 + i(n)) / n)
- low:                               the same with imbalance growing linearly in n
where the measured imbalance ratio i(p) = idle / P grows with the team as the expected
maximum of n draws does (sqrt(2 ln n)).

Processes with OpenMP regions: the time outside the (outermost) regions stays serial and
each region scales as predicted, T(n) = outside + sum T_r(n).  (CPU-time parallelism
would mislead there: libgomp's threads spin while they wait.)

Processes with plain threads: the Karp-Flatt serial fraction from the measured
parallelism psi = CPU time / wall time on q = min(threads, cores) runnable threads,
then Amdahl.

Both are upper-bound style estimates: they ignore contention that grows with the team.
"""
from __future__ import annotations

import math

from ..scaling import ScalingPrediction
from ...recording.abi import SYNC_WAITS

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.record import ProcessSample, RegionSample

KARP_FLATT_BAND = 0.05  # +- on the serial fraction
FASTEST_SHARE = 0.99  # fastest = fewest threads within 1% of the best speedup


class TeamPrediction(ScalingPrediction):
    """The runtime's answer for a region, a process or a kernel (its team: threads, or a
    kernel's compute units), from its samples: speedups at ``threads`` with their band
    ``low``/``high`` and the fastest count (``fastest_count``; None where the sample is no
    evidence of how the work divides, ``spread.one_thread``).  (A plain class: dataclasses would add milliseconds to every
    profiled program's start.)"""

    __slots__ = ("threads", "speedup", "low", "high", "fastest", "basis", "fitted", "bottleneck",
                 "work_s", "bandwidth")

    def __init__(self, threads: list[int], speedup: list[float], low: list[float],
                 high: list[float], fastest: int | None, basis: str, fitted: list[str] | None = None,
                 bottleneck: str | None = None, work_s: float = 0.0):
        self.threads = threads
        self.speedup = speedup
        self.low = low
        self.high = high
        self.fastest = fastest
        self.basis = basis
        self.fitted = fitted or []
        self.bottleneck = bottleneck  # stall category expected to dominate at the target
        self.work_s = work_s  # T(1) over the whole sample (0: not known; composing estimates it)
        # Measured growth of work per call from a smaller team to the sampled one (memory
        # bandwidth and cache sharing; history.anchor_t1); None: not measured.
        self.bandwidth: float | None = None

    @property
    def counts(self) -> list[int]:
        return self.threads

    def scale(self, factors: list[float]) -> None:
        """Speedups and band times ``factors`` (one per count), the fastest count again."""
        self.speedup = [s * f for s, f in zip(self.speedup, factors)]
        self.low = [s * f for s, f in zip(self.low, factors)]
        self.high = [s * f for s, f in zip(self.high, factors)]
        self.fastest = fastest_count(self.threads, self.speedup)

    def speedup_band(self) -> tuple[list[float], list[float]]:
        return self.low, self.high


def prediction_counts(target: int, limit: int = 64) -> list[int]:
    """Every count 1..target when it fits in ``limit``, else a geometric subset."""
    target = max(1, int(target))
    if target <= limit:
        return list(range(1, target + 1))
    counts = {1, target}
    ratio = target ** (1.0 / (limit - 2))
    x = 1.0
    while len(counts) < limit:
        x *= ratio
        counts.add(min(target, max(1, round(x))))
        if x >= target:
            break
    return sorted(counts)


def _growth(n: int) -> float:
    return math.sqrt(2.0 * math.log(n)) if n > 1 else 0.0


def fastest_count(counts: list[int], speedup: list[float]) -> int:
    """The fewest threads within 1% of the best predicted speedup."""
    best = max(speedup)
    return next(n for n, s in zip(counts, speedup) if s >= FASTEST_SHARE * best)


def region_bound(region: RegionSample, target: int) -> TeamPrediction:
    """Bound for an OpenMP region (``region``: its sample record)."""
    p = max(1, int(region["threads"]))
    work = region_work(region)
    serial = min(max(float(region["serial_s"]), 0.0), work)
    parallel = work - serial
    imbalance = float(region["stalls_s"].get("imbalance", 0.0))
    ratio = imbalance / parallel if parallel > 0 and p > 1 else 0.0
    counts = prediction_counts(target)
    central, low, high = [], [], []
    for n in counts:
        i_n = ratio * _growth(n) / _growth(p) if p > 1 else 0.0
        i_lin = ratio * (n - 1) / (p - 1) if p > 1 else 0.0
        central.append(work / (serial + parallel * (1 + i_n) / n))
        low.append(work / (serial + parallel * (1 + max(i_n, i_lin)) / n))
        high.append(work / max(serial, work / n))
    return TeamPrediction(counts, central, low, high, fastest_count(counts, central),
                          "bound: Amdahl with measured serial work and imbalance (work/span high)")


def region_work(region: RegionSample) -> float:
    """One thread's work for the region: busy time less its synchronisation waits."""
    waits = sum(region["stalls_s"].get(k, 0.0) for k in SYNC_WAITS)
    return max(float(region["busy_s"]) - waits, 1e-12)


def process_bound(process: ProcessSample, target: int, cores: int) -> TeamPrediction:
    """Karp-Flatt bound for a whole process with plain threads."""
    threads = max(1, int(process["threads"]))
    wall = max(float(process["wall_s"]), 1e-12)
    cpu = max(float(process["cpu_s"]), 0.0)
    q = min(threads, max(1, int(cores)))
    counts = prediction_counts(target)
    if q > 1 and cpu > 0:
        psi = min(max(cpu / wall, 1.0), q)
        serial = (1.0 / psi - 1.0 / q) / (1.0 - 1.0 / q)
        basis = "bound: Amdahl with the Karp-Flatt serial fraction of the measured parallelism"
        fitted = ["serial_fraction"]
    else:
        # One runnable thread: no parallelism was observed to measure; hold times of
        # contended locks are the only serial work seen.
        serial = min(1.0, float(process.get("hold_sampled_s", 0.0)) / max(cpu, 1e-12))
        basis = "bound: Amdahl with the sampled lock hold time (one runnable thread seen)"
        fitted = []
    serial = min(max(serial, 0.0), 1.0)
    lo_s, hi_s = min(1.0, serial + KARP_FLATT_BAND), max(0.0, serial - KARP_FLATT_BAND)

    def amdahl(s: float, n: int) -> float:
        return 1.0 / (s + (1.0 - s) / n)

    central = [amdahl(serial, n) for n in counts]
    return TeamPrediction(
        counts, central, [amdahl(lo_s, n) for n in counts], [amdahl(hi_s, n) for n in counts],
        fastest_count(counts, central), basis, fitted,
    )
