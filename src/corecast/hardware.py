"""The machine a prediction is for: its hardware threads and cores, and what they do to
counts a curve was not measured at.

A model fitted on counts below the machine's cores extrapolates the gain of a whole core
per thread; beyond the cores a thread only gets a core's idle issue slots (SMT), and
beyond the hardware threads threads time-share them.  Neither step is visible in points
measured below it, so ``predict`` takes the machine as an input (``--hw-threads``,
``--cores``), as a user of LIKWID or hwloc would read it off the target machine.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError

# What a core's further hardware threads add, as a share of what a thread on a core of its
# own adds: the gain Hyper-Threading's designers report on server benchmarks, "up to 30%"
# (Marr et al., "Hyper-Threading Technology Architecture and Microarchitecture", Intel
# Technology Journal 6(1), 2002).  Taken from there, not fitted to any curve.
SMT_YIELD = 0.3
# What a further hardware thread of a core may add, from nothing (it only competes for the
# core) to a whole core's worth (a program stalled on memory or locks, not on issue slots):
# 0.3 is a designer's typical figure, not a bound, so beyond the cores the band spans both.
SMT_YIELD_RANGE = (0.0, 1.0)


@dataclass(frozen=True)
class Hardware:
    """``hw_threads`` logical CPUs on ``cores`` cores (equal when there is no SMT)."""

    hw_threads: int
    cores: int

    @classmethod
    def of(cls, hw_threads: int | None, cores: int | None) -> "Hardware | None":
        """From what the user gave (either may be None); None when neither was given.
        Raises InputError on counts below 1 or more cores than hardware threads."""
        for name, v in (("hardware threads", hw_threads), ("cores", cores)):
            if v is not None and v < 1:
                raise InputError(f"the machine's {name} must be at least 1, got {v}")
        if hw_threads is None and cores is None:
            return None
        hw = hw_threads if hw_threads is not None else cores
        c = cores if cores is not None else hw
        if c > hw:
            raise InputError(f"{c} cores but {hw} hardware threads: a core has at least one")
        return cls(int(hw), int(c))

    def effective(self, counts: np.ndarray, top: float, smt_yield: float = SMT_YIELD) -> np.ndarray:
        """The counts a model fitted up to ``top`` should be asked at: beyond the cores
        (when ``top`` is below them, so the fit never saw a shared core) each further
        thread counts as ``smt_yield`` of one, up to the hardware threads."""
        n = np.asarray(counts, dtype=float)
        if top > self.cores or self.cores == self.hw_threads:
            return n
        smt = np.clip(n - self.cores, 0.0, self.hw_threads - self.cores)
        return np.minimum(n, self.cores) + smt_yield * smt + np.maximum(n - self.hw_threads, 0.0)

    def notes(self, top: float, largest: float) -> list[str]:
        """What the report says about counts up to ``largest`` predicted from points up to ``top``."""
        out = []
        if top <= self.cores < self.hw_threads and largest > self.cores:
            out.append(f"counts above {self.cores} share the machine's {self.cores} cores (SMT): each further "
                       f"thread adds {SMT_YIELD:.0%} of what a thread on its own core adds")
        if largest > self.hw_threads:
            out.append(f"counts above {self.hw_threads} share the machine's {self.hw_threads} hardware threads: "
                       f"predicted no faster than at {self.hw_threads}")
        return out


def oversubscribed(grid: np.ndarray, perf: np.ndarray, low: np.ndarray, high: np.ndarray,
                   hw_threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Performance and band at counts beyond ``hw_threads`` (which ``grid`` holds).

    More threads than hardware threads time-share them: the work goes on at the rate of
    ``hw_threads`` (a model fitted below would extrapolate growth the machine cannot
    give, and a preferred count past it).  No more than ``hw_threads`` run at once, so at
    best it goes as fast as the band allows some count up to ``hw_threads`` (a blocking
    lock's sleeping waiters leave fewer contenders): the band's high end.  Each thread
    runs ``hw_threads / n`` of the time, so a program that waits for its slowest thread,
    or spins on a lock whose holder was preempted, falls by that much or more from what
    it did at ``hw_threads``: the band's low end there, times ``hw_threads / n``.
    """
    beyond = grid > hw_threads
    if not beyond.any():
        return perf, low, high
    at = int(np.flatnonzero(grid == hw_threads)[0])
    perf = np.where(beyond, np.minimum(perf, perf[at]), perf)
    high = np.where(beyond, np.minimum(high, np.max(high[grid <= hw_threads])), high)
    low = np.where(beyond, np.minimum(low, low[at] * hw_threads / grid), low)
    return perf, low, high
