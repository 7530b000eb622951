"""The machine a prediction is for: its hardware threads, cores and sockets, the order
threads are placed on them, and what that does to counts a curve was not measured at.

A model fitted on threads that each had a core of their own extrapolates the gain of a
whole core per thread; a thread on a core whose other hardware threads are busy only
gets that core's idle issue slots (SMT), and beyond the hardware threads threads
time-share them.  Neither step is visible in points measured below it, so ``predict``
takes the machine as an input (``--hw-threads``, ``--cores``, ``--sockets``,
``--fill``), as a user of LIKWID or hwloc would read it off the target machine.

Which counts share a core depends on the order threads fill the machine (likwid-pin,
OpenMP's places, a benchmark's own pinning map; ``--fill``): ``cores`` puts a thread on
every core before any core gets a second one (Linux's scheduler does so with unpinned
threads, as do both of ``corecast sweep``'s pinned placements); ``sockets`` fills one
socket's cores, then their further hardware threads, then the next socket (likwid-pin
over socket domains, S0@S1).  Models are fitted and asked in *core units* (``units``):
the cores the first n threads in that order occupy, a further hardware thread of a busy
core counting SMT_YIELD of one.  Under ``sockets`` the next socket's cores are fresh
cores again, so a curve measured on one socket, its SMT threads included, continues on
the next one at the rate a fresh core gave.

A time is of a fixed amount of work, which threads usually share equally (a static
schedule, a benchmark's loop of N operations split across the threads).  Threads placed
socket by socket are pinned there (no scheduler places them so), and a pinned thread that
shares its core runs slower to the end, so the slowest sets the time for all
(``waits_for_slowest``): the first threads past a socket's cores make the run slower, not
faster, and n threads do the work of n times the slowest one.  Unpinned threads are
moved onto cores that fell idle and share the machine's capacity, the sum of the units.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...errors import InputError

# What a core's further hardware threads add, as a share of what a thread on a core of its
# own adds: the gain Hyper-Threading's designers report on server benchmarks, "up to 30%"
# (Marr et al., "Hyper-Threading Technology Architecture and Microarchitecture", Intel
# Technology Journal 6(1), 2002).  Taken from there, not fitted to any curve: chosen
# among 30%, 50% and 70% leave one source out on the corpus, the held-out figures were
# worse than at 30% (docs/accuracy.md).
SMT_YIELD = 0.3
# What a further hardware thread of a core may add, from nothing (it only competes for the
# core) to a whole core's worth (a program stalled on memory or locks, not on issue slots):
# SMT_YIELD is a typical figure, not a bound, so beyond the cores the band spans both.
SMT_YIELD_RANGE = (0.0, 1.0)
FILLS = ("cores", "sockets")
# Far beyond any machine; the rules keep a slot per hardware thread, so bound them.
MAX_HW_THREADS = 1 << 20


@dataclass(frozen=True)
class Hardware:
    """``hw_threads`` logical CPUs on ``cores`` cores (equal when there is no SMT) in
    ``sockets`` sockets, filled by threads in the order ``fill`` names (FILLS)."""

    hw_threads: int
    cores: int
    sockets: int = 1
    fill: str = "cores"

    @classmethod
    def of(cls, hw_threads: int | None, cores: int | None, sockets: int | None = None,
           fill: str | None = None) -> "Hardware | None":
        """From what the user gave (any may be None); None when neither hardware threads
        nor cores were given.  Raises InputError on counts below 1 or above
        MAX_HW_THREADS, more cores than hardware threads, more sockets than cores, cores
        that do not divide over the sockets, or sockets of unequal hardware threads filled
        one after the other."""
        for name, v in (("hardware threads", hw_threads), ("cores", cores), ("sockets", sockets)):
            if v is not None and not 1 <= v <= MAX_HW_THREADS:
                raise InputError(f"the machine's {name} must be between 1 and {MAX_HW_THREADS}, got {v}")
        if fill is not None and fill not in FILLS:
            raise InputError(f"the fill order must be one of {', '.join(FILLS)}, got {fill!r}")
        if hw_threads is None and cores is None:
            if sockets is not None or fill is not None:
                raise InputError("sockets and a fill order describe a machine: give its hardware threads or cores")
            return None
        hw = hw_threads if hw_threads is not None else cores
        c = cores if cores is not None else hw
        s = sockets if sockets is not None else 1
        if c > hw:
            raise InputError(f"{c} cores but {hw} hardware threads: a core has at least one")
        if s > c:
            raise InputError(f"{s} sockets but {c} cores: a socket has at least one")
        if (fill == "sockets" and s > 1) and (c % s or hw % c):
            raise InputError(f"filling socket by socket needs equal sockets: {hw} hardware threads and {c} cores "
                             f"do not divide evenly over {s} sockets")
        if c % s:  # "--sockets 3 --cores 8" was taken as it was
            raise InputError(f"{s} sockets but {c} cores: a machine's sockets hold as many cores each")
        return cls(int(hw), int(c), int(s), fill or "cores")

    def _order(self) -> tuple[np.ndarray, np.ndarray]:
        """Per hardware thread in fill order: which thread of its core it is (1: the
        core's first, 2: its second, ...) and its socket."""
        if self.fill == "sockets" and self.sockets > 1:
            cores = self.cores // self.sockets
            per_socket = self.hw_threads // self.sockets
            slot = np.tile(np.arange(per_socket) // cores + 1, self.sockets)
            return slot, np.repeat(np.arange(self.sockets), per_socket)
        return np.arange(self.hw_threads) // self.cores + 1, np.zeros(self.hw_threads, dtype=int)

    def waits_for_slowest(self, metric: str) -> bool:
        """Whether a curve of ``metric`` on this machine ends with its slowest thread: a
        time (equally shared work) of threads pinned socket by socket (module docstring)."""
        return metric == "time" and self.fill == "sockets"

    def units(self, counts: np.ndarray, smt_yield: float = SMT_YIELD, equal_work: bool = False) -> np.ndarray:
        """Core units of the first n threads in fill order (linear between whole
        counts): a core's first thread 1, a further one ``smt_yield``, a thread beyond
        the hardware threads 1 (``oversubscribed`` caps those).

        ``equal_work`` (``waits_for_slowest``): n threads do the work of n times the
        slowest one, and a thread on a core with j busy hardware threads runs at
        (1 + smt_yield (j - 1)) / j of a core of its own."""
        slot, _ = self._order()
        if equal_work:
            # The busiest core among the first k threads: the slowest thread's core.
            j = np.maximum.accumulate(slot).astype(float)
            k = np.arange(1, self.hw_threads + 1)
            steps = np.r_[0.0, k * (1.0 + smt_yield * (j - 1.0)) / j]
        else:
            steps = np.r_[0.0, np.cumsum(np.where(slot == 1, 1.0, smt_yield))]
        n = np.asarray(counts, dtype=float)
        inside = np.interp(np.minimum(n, self.hw_threads), np.arange(self.hw_threads + 1), steps)
        return inside + np.maximum(n - self.hw_threads, 0.0)

    def model_counts(self, counts: np.ndarray, top: float, smt_yield: float, equal_work: bool = False) -> np.ndarray:
        """The counts a model fitted in core units (``units``) up to the count ``top`` is asked
        at when a further hardware thread of a core adds ``smt_yield`` beyond ``top`` (the
        band's alternatives to SMT_YIELD): the units up to ``top``, then each further
        thread's share at ``smt_yield`` (``equal_work``: as ``units``)."""
        n = np.asarray(counts, dtype=float)
        base = self.units(n, equal_work=equal_work)
        shift = float(self.units(top, equal_work=equal_work)) - float(self.units(top, smt_yield, equal_work))
        return np.where(n > top, self.units(n, smt_yield, equal_work) + shift, base)

    def step_ahead(self, top: float, largest: float) -> bool:
        """Whether a count in (``top``, ``largest``] puts a thread where none of the counts up
        to ``top`` did: on a busy core (SMT) when no measured count shared one, or (under
        ``sockets``) on another socket.  Only then are models fitted in core units: a
        measured curve that already spans a kind of fill carries what it does."""
        return self.first_step(top, largest) is not None

    def first_step(self, top: float, largest: float) -> int | None:
        """The largest count up to which every count puts its threads where the counts up
        to ``top`` did (``step_ahead``'s boundary: a count above it is the first that does
        not), or None when no count up to ``largest`` steps ahead."""
        slot, socket = self._order()
        kinds = list(zip((slot == 1).tolist(), socket.tolist()))
        lo, hi = int(min(top, self.hw_threads)), int(min(largest, self.hw_threads))
        seen = set(kinds[:lo])
        return next((i for i in range(lo, hi) if kinds[i] not in seen), None)

    def notes(self, top: float, largest: float, equal_work: bool = False) -> list[str]:
        """What the report says about counts up to ``largest`` predicted from points up to
        ``top`` (``equal_work``: as ``units``)."""
        out = []
        first = self.first_step(top, largest)
        if first is not None:
            where = f"{self.cores} cores" + (f" in {self.sockets} sockets" if self.sockets > 1 else "")
            head = (f"counts above {first} place threads where no measured count did "
                    f"(filling {self.fill} first over {where})")
            if self.hw_threads == self.cores:
                # No core is ever shared: the step is only the next socket, whose cores are
                # whole cores again (the units are the counts themselves).
                out.append(f"{head}: the next socket's cores are predicted to add what a core of the "
                           "measured one added")
            else:
                # Past the hardware threads no count gains (the note below): the span
                # stops at them, not at units that count time-shared threads as cores.
                end = min(largest, float(self.hw_threads))
                span = self.units(np.array([top, end]), equal_work=equal_work)
                slowest = (", and the time waits for the slowest thread: pinned threads that share a core run at "
                           f"{(1 + SMT_YIELD) / 2:.0%} of a core each, so n threads do the work of n times that"
                           if equal_work else "")
                out.append(f"{head}: predicted in core units, a thread on a core already busy (SMT) adding "
                           f"{SMT_YIELD:.0%} of what a thread on a core of its own adds{slowest} (the method's counts "
                           f"are those units: {top:g} and {end:g} threads are {span[0]:.3g} and {span[1]:.3g})")
        if largest > self.hw_threads:
            out.append(f"counts above {self.hw_threads} share the machine's {self.hw_threads} hardware threads: "
                       f"predicted no faster than at {self.hw_threads}")
        return out


def fitted_within(counts: Sequence[float], cpus: int | None) -> tuple[list[int] | None, str | None]:
    """Which of ``counts``, measured on a machine of ``cpus`` CPUs, a curve is fitted on
    (their indices; None: all of them) and the warning that says so (None: nothing to say).

    Counts above the CPUs shared them: what slows them is time-sharing, not how the
    program scales, so where 2 counts or more ran within the CPUs the curve is fitted on
    those alone and predicted past them as on any machine of ``cpus`` hardware threads
    (``oversubscribed``).  With fewer, every count is fitted and the warning says what
    the fit then shows.  One rule for a sweep's own extrapolation and for ``predict`` of
    a sweep's result, so that the two give the same answer."""
    over = sorted({int(n) for n in counts if cpus is not None and n > cpus})
    if not over:
        return None, None
    listed = f"{'counts' if len(over) > 1 else 'count'} {', '.join(map(str, over))}"
    inside = [i for i, n in enumerate(counts) if n <= cpus]
    if len({counts[i] for i in inside}) >= 2:
        return inside, f"{listed} ran oversubscribed on the sweep's {cpus} CPUs: left out of the time's fit"
    return None, (f"the time is fitted on {listed}, which ran oversubscribed on the sweep's {cpus} CPUs "
                  "(fewer than 2 counts within them): it shows them shared, not how the program scales on more")


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
