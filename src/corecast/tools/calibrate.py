"""``corecast calibrate``: this machine's two curves of per-thread speed as more of its cores
are busy, measured once (``model/machine/calibration.py`` reads them; ``model/runtime/evidence.py``
applies one to a region only where the run's evidence names it).

The kernels are compiled (``native/calibrate/calibrate.c``, ``libcorecast_calibrate.so``,
called through ctypes) and run as one team of libgomp threads in this process, so its
threads are placed as an OpenMP program's are under the same environment: unbound unless
``OMP_PROC_BIND``/``OMP_PLACES`` say otherwise (a pthreads program's threads are unbound
too).  The earlier kernel, Python processes running a hash loop, read e(16) = 0.61 on the
16-core machine where a compute-bound program reached 0.90 (issue #38).

* compute (likwid-bench peakflops): multiply-add chains in registers, ``SECONDS`` of work
  per thread; e_c(n) = T(1) / T(n) for the same work per thread, T the team's time from
  its start barrier until its last thread is done (what a region with equal shares
  waits for);
* bandwidth (likwid-bench stream triad): a[i] = b[i] + s c[i] over three arrays that
  together hold at least ``LLC_MULTIPLE`` times the last-level cache (sysfs), capped at
  ``MAX_BYTES`` and a quarter of the available memory; mapped afresh for each count and
  first touched by the thread that streams each slice.  GB/s counts STREAM's 24 bytes
  per element.

Counts 1, 2, 4, ... up to the CPUs this process may run on, and that count.  Load only
ever slows a run down, so each count keeps its best: compute over ``REPEATS`` rounds
interleaved over the counts, the triad over ``REPEATS`` passes.
"""
from __future__ import annotations

import ctypes
import glob
import os
import time

from ..model.machine.calibration import KEY, SCHEMA, cpu_model

KERNELS = {"compute": "multiply-add chains in registers (likwid-bench peakflops), one libgomp team",
           "bandwidth": "STREAM triad, first-touched slices (likwid-bench triad), one libgomp team"}
SECONDS = 0.1          # one thread's compute run, about
REPEATS = 3
LLC_MULTIPLE = 4       # the triad's arrays together hold at least this many LLCs
MAX_BYTES = 2 << 30    # ... but no more than this
UNKNOWN_LLC = 64 << 20  # LLC size assumed where sysfs does not say
QUICK = {"seconds": 0.003, "bytes": 3 << 20, "repeats": 2}  # --quick: shapes, not figures


class CalibrateError(RuntimeError):
    """The measurement could not be made (its one-line reason)."""


def counts_upto(most: int) -> list[int]:
    """1, 2, 4, ... below ``most``, and ``most``."""
    counts, n = [], 1
    while n < most:
        counts.append(n)
        n *= 2
    return counts + [most]


def llc_bytes(root: str = "/sys/devices/system/cpu") -> int | None:
    """The last-level caches' total size: each instance (a distinct ``shared_cpu_list`` at
    the highest level sysfs lists) once; None where sysfs does not say."""
    best_level, sizes = 0, {}
    for index in glob.glob(os.path.join(root, "cpu[0-9]*", "cache", "index[0-9]*")):
        try:
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "type")) as f:
                if f.read().strip() == "Instruction":
                    continue
            with open(os.path.join(index, "size")) as f:
                size = _size(f.read().strip())
            with open(os.path.join(index, "shared_cpu_list")) as f:
                shared = f.read().strip()
        except (OSError, ValueError):
            continue
        if level > best_level:
            best_level, sizes = level, {}
        if level == best_level:
            sizes[shared] = size
    return sum(sizes.values()) or None


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text and text[-1] in units else int(text)


def triad_bytes(llc: int | None) -> int:
    """The three arrays' size together (see the module's text)."""
    avail = _mem_available()
    cap = min(MAX_BYTES, avail // 4) if avail else MAX_BYTES
    return max(3 << 20, min(LLC_MULTIPLE * (llc or UNKNOWN_LLC), cap))


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _library() -> ctypes.CDLL:
    from .._native import CALIBRATE

    try:
        lib = ctypes.CDLL(str(CALIBRATE))
    except OSError as exc:
        raise CalibrateError(f"the calibration kernels cannot be loaded ({exc}); `pip install .` builds them") from None
    lib.cc_cal_compute.argtypes = [ctypes.c_int, ctypes.c_long]
    lib.cc_cal_compute.restype = ctypes.c_double
    lib.cc_cal_triad.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_int]
    lib.cc_cal_triad.restype = ctypes.c_double
    lib.cc_cal_placement.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.cc_cal_placement.restype = ctypes.c_int
    lib.cc_cal_flops_per_iteration.restype = ctypes.c_int
    lib.cc_cal_waited.restype = ctypes.c_double
    return lib


def _checked(seconds: float, threads: int, what: str) -> float:
    if seconds == -1.0:
        raise CalibrateError(f"the {what} arrays could not be mapped")
    if seconds < 0:
        raise CalibrateError(f"the OpenMP runtime gave fewer than {threads} threads "
                             "(OMP_THREAD_LIMIT?); try --max")
    return max(seconds, 1e-9)


BUSY_EFFICIENCY = 1.5  # a team's per-thread speed over one thread's beyond which the run was disturbed
# A kernel's threads never block, so time one spent off a CPU it waited for one that other
# load held.  Beyond this share of its time, in the run kept as a count's best, the curve is
# the busy machine's, not this machine's (on the 2-core VM beside other sessions' builds the
# compute kernel read e(2) = 0.51, and every run at 2 threads predicted with it would lose
# half its speedup).
BUSY_WAIT = 0.10


def disturbed(best: dict[int, float], waits: dict[str, dict[int, float]]) -> str | None:
    """Why a measurement is the busy machine's and not this machine's, or None:
    ``best`` the compute kernel's best time per count (the same work per thread, so a team
    cannot beat one thread by much), ``waits`` per kernel the share of its threads' time
    off a CPU in each count's kept run."""
    for n, t in best.items():
        if best[1] / t > BUSY_EFFICIENCY:
            return f"{n} threads ran the compute kernel {best[1] / t:.2f}x as fast per thread as one"
    for kernel, by_count in waits.items():
        for n, w in by_count.items():
            if w > BUSY_WAIT:
                return (f"at {n} thread{'s' if n > 1 else ''} the {kernel} kernel's threads waited {w:.0%} "
                        f"of their time for a CPU other load held")
    return None


def measure(most: int | None = None, quick: bool = False) -> dict:
    """The calibration of this machine up to ``most`` threads (default: the CPUs this
    process may run on), as the file holds it (``machine.calibration.parse`` reads it)."""
    lib = _library()
    started = time.perf_counter()
    allowed = len(os.sched_getaffinity(0))
    most = max(1, min(most or allowed, allowed))
    counts = counts_upto(most)
    seconds = QUICK["seconds"] if quick else SECONDS
    repeats = QUICK["repeats"] if quick else REPEATS

    trial = 200_000
    t = _checked(lib.cc_cal_compute(1, trial), 1, "compute")
    iterations = max(10_000, int(trial * seconds / t))
    best = dict.fromkeys(counts, float("inf"))
    waits: dict[str, dict[int, float]] = {"compute": {}, "bandwidth": {}}
    for _ in range(repeats):
        for n in counts:
            t = _checked(lib.cc_cal_compute(n, iterations), n, "compute")
            if t < best[n]:
                best[n], waits["compute"][n] = t, lib.cc_cal_waited()
    gflops_1 = iterations * lib.cc_cal_flops_per_iteration() / best[1] / 1e9

    llc = llc_bytes()
    footprint = QUICK["bytes"] if quick else triad_bytes(llc)
    elements = footprint // (3 * 8)
    gbps = []
    for n in counts:
        t = _checked(lib.cc_cal_triad(n, elements, repeats), n, "triad")
        gbps.append([n, round(24 * elements / t / 1e9, 3)])
        waits["bandwidth"][n] = lib.cc_cal_waited()
    # A disturbed measurement is one line and no file rather than a file that misjudges
    # the machine (or one the reader refuses).  --quick's runs of milliseconds wait for a
    # CPU on any busy machine, and their figures mean nothing: only a team faster than
    # one thread stops them.
    why = disturbed(best, {} if quick else waits)
    if why:
        raise CalibrateError(f"the machine was busy: {why}; run it on an idle machine")

    name = ctypes.create_string_buffer(32)
    places = lib.cc_cal_placement(name, len(name))
    placement = name.value.decode()
    if places:
        placement += f", {places} places"
    return {KEY: SCHEMA,
            "machine": {"cpus": int(os.sysconf("SC_NPROCESSORS_ONLN")), "cpu_model": cpu_model(),
                        "cpus_measured": allowed, "llc_bytes": llc},
            "placement": placement,
            "compute": {"kernel": KERNELS["compute"], "gflops_one_thread": round(gflops_1, 3),
                        "efficiency": [[n, round(best[1] / best[n], 4)] for n in counts],
                        "cpu_wait": [[n, round(waits["compute"][n], 4)] for n in counts]},
            "bandwidth": {"kernel": KERNELS["bandwidth"], "array_bytes": 3 * 8 * elements, "gbps": gbps,
                          "cpu_wait": [[n, round(waits["bandwidth"][n], 4)] for n in counts]},
            "repeats": repeats, "quick": quick, "seconds": round(time.perf_counter() - started, 2),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
