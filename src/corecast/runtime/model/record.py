"""The sample record: what the runtime predictors read about one region, or the whole
process, in one window.  The one definition of its keys.

Producers: ``bridge.decode_region`` (the live library's ``struct cc_region_sample``,
native/model_abi.h), ``samples.region_from_record`` (a JSON Lines record of ``corecast
run``, schemas 1-3) and ``kernelmodel.region`` (an OpenCL kernel's sample).  Consumers:
``contention``, ``bound``, ``history``, ``steering``, ``numa``, ``replay`` and the views.
``tests/runtime/test_record.py`` checks that the producers give exactly these keys.

A ``TypedDict`` is a plain dict at run time: consumers index it and tests build it as
before, only type checkers see the record.  Importing ``typing`` costs start-up time in
profiled programs, so the runtime modules import this one for annotations only.

Units: times in seconds, summed over the threads where they are thread time ("thread-s"),
cumulative since the program started (``history`` takes window differences itself; a
kernel's: its sampled launches).  Per-category tables are keyed by ``abi.STALLS`` names:
every name from the bridge and recordings (0 where none), a kernel's the ones it measures.
"""
from __future__ import annotations

from typing import Literal, TypedDict


class _Required(TypedDict):
    """The keys every producer gives."""

    name: str                 # outlined function ("main._omp_fn.0"), kernel name, or "process"
    object: str               # object file that holds it (executable, shared library); kernels: the device
    runtime: Literal["openmp", "pthreads", "opencl"]  # process: "openmp" if it ran OpenMP regions
    threads: int              # largest team seen (OpenMP), threads seen (process), compute units (kernel)
    nested: bool              # ran inside another region (the process model composes outermost ones)
    calls: int                # calls of the region (kernel launches; the process: 1)
    wall_s: float             # s, summed wall time of all calls (the process: elapsed time)
    busy_s: float             # thread-s inside the calls, waits included (the process: its CPU time)
    serial_s: float           # thread-s serialised: lock holds (critical, atomic, ...) plus single blocks
    cpu_s: float              # thread-s of CPU time (the process; kernels: the runtime's; regions: 0)
    stalls_s: dict[str, float]       # thread-s waited, per category
    acquisitions: dict[str, int]     # synchronisation calls, per category
    contended: dict[str, int]        # of those, the ones that had to wait
    loop_calls: int           # GOMP_loop_*_start/next calls (dynamic-schedule chunks claimed)
    hold_sampled_s: float     # s of pthread-mutex hold time, sampled on contended acquisitions
    hold_samples: int         # acquisitions those holds were sampled on
    requested: int            # largest team the program asked for (its own count; steering's start)
    steered_to: int           # team size steering imposes now (0: none; recordings: 0)
    hist: list[tuple[int, int, float]]  # per team size run: (threads, calls, wall_s), cumulative
    probe_calls: int          # CORECAST_PROBE: calls run at a smaller team than the program's
    probes: dict[int, int]    # team size -> its probe calls (sizes with none left out)


class RegionSample(_Required, total=False):
    """One region's (or kernel's) sample; the keys below are left out where not measured."""

    # Absent in schema-1 recordings (the model then shares serial_s out over the locks):
    single_s: float           # thread-s in single blocks
    hold_s: dict[str, float]  # thread-s of lock hold time per category; serial_s = sum + single_s
    # Absent in schema-1 and -2 recordings and in kernels' samples:
    bytes: dict[str, int]     # payload bytes moved per category (MPI: sent plus received)


class ProcessSample(RegionSample, total=False):
    """The process record (``name == "process"``, the last of a window): a region sample
    of every program thread, plus what only the process has (absent in early recordings)."""

    runqueue_other: float     # s of run-queue wait other load caused (kept out of stalls_s)
    team_threads: int         # threads that did the work (report.c team_of; 0: unknown)
