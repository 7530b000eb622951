"""``corecast calibrate``: this machine's loss of per-thread speed as more of its cores are
busy, e(n), measured once and applied to the runtime's one-sample predictions
(``machine/calibration.py`` says why and how).

The kernel is a copy of an integer hash loop per process: nothing is shared between the
copies, so each copy's speed with n of them running against its speed alone is the
machine's alone (clock frequencies that fall as cores wake, hyperthreads presented as
cores, shared power and cache), not a program's.  Processes rather than threads: Python
threads would share one interpreter lock.  The copies start together at a barrier; each
times its own loop, and e(n) is the median copy's speed over one copy's speed alone, the
best of ``REPEATS`` rounds (other load only ever slows a round down).  Counts: 1, 2, 4, ...
up to the CPUs this process may run on, and that count.
"""
from __future__ import annotations

import os
import time

from ..model.machine.calibration import SCHEMA, KEY, cpu_model

KERNEL = "integer hash loop, one process per copy, nothing shared"
SECONDS = 0.25   # one copy's loop alone, about
REPEATS = 3
_MASK = (1 << 64) - 1


def _spin(iterations: int) -> int:
    x = 1
    for _ in range(iterations):
        x = (x * 6364136223846793005 + 1442695040888963407) & _MASK
    return x


def _copy(iterations: int, start: object, out: object) -> None:
    start.wait()
    t0 = time.perf_counter()
    _spin(iterations)
    out.send(time.perf_counter() - t0)
    out.close()


def speed(copies: int, iterations: int) -> float:
    """The median copy's iterations per second with ``copies`` copies running at once."""
    import multiprocessing
    import statistics

    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(copies + 1)
    readers, procs = [], []
    for _ in range(copies):
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_copy, args=(iterations, start, w), daemon=True)
        p.start()
        w.close()
        readers.append(r)
        procs.append(p)
    try:
        start.wait(timeout=60)
        times = [r.recv() for r in readers]
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    return iterations / statistics.median(times)


def counts_upto(most: int) -> list[int]:
    """1, 2, 4, ... below ``most``, and ``most``."""
    counts, n = [], 1
    while n < most:
        counts.append(n)
        n *= 2
    return counts + [most]


def measure(most: int | None = None, seconds: float = SECONDS, repeats: int = REPEATS,
            progress=None) -> dict:
    """The calibration of this machine up to ``most`` copies (default: the CPUs this
    process may run on), as the file holds it (``machine.parse`` reads it back)."""
    allowed = len(os.sched_getaffinity(0))
    most = max(1, min(most or allowed, allowed))
    trial = 200_000
    t0 = time.perf_counter()
    _spin(trial)
    iterations = max(10_000, int(trial * seconds / max(time.perf_counter() - t0, 1e-6)))
    counts = counts_upto(most)
    best = dict.fromkeys(counts, 0.0)
    for round_ in range(repeats):
        for n in counts:
            best[n] = max(best[n], speed(n, iterations))
            if progress:
                progress(round_, n)
    return {KEY: SCHEMA,
            "machine": {"cpus": int(os.sysconf("SC_NPROCESSORS_ONLN")), "cpu_model": cpu_model(),
                        "cpus_measured": allowed},
            "kernel": KERNEL, "seconds_per_copy": round(iterations / best[1], 3), "repeats": repeats,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "efficiency": [[n, round(best[n] / best[1], 4)] for n in counts]}
