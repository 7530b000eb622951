"""The Python side's copy of the C<->Python contract (native/model_abi.h, native/core.c's
CC_STALL_NAMES and CC_COUNTER_NAMES, the sizes in corecast.h): stall names in CC_STALL_*
order, NUMA counter roles in CC_NUMA_* bit order, array sizes, and the NUMA event plan's
struct.  Defined once here and checked against the C sources by tests/runtime/test_abi.py;
the header is not shipped with the package and this module is imported by every profiled
program, so it stays plain constants (no parsing, no imports): the plan's ctypes
Structures are built when first asked for (``abi.NumaPlan``), by the launcher alone."""

# CC_STALL_* order; CC_NSTALL == len(STALLS).
STALLS = ("mutex", "condvar", "pthread_barrier", "rwlock", "semaphore", "critical",
          "atomic", "omp_lock", "omp_barrier", "imbalance", "runqueue", "mpi_p2p", "mpi_collective")
# A rank's waits for other ranks do not change with its thread count (`corecast merge`
# predicts over rank counts), so the thread models leave them out.
MPI_WAITS = ("mpi_p2p", "mpi_collective")
THREAD_STALLS = tuple(s for s in STALLS if s not in MPI_WAITS)
# Thread synchronisation: the thread stalls less load imbalance and run-queue wait.
SYNC_WAITS = tuple(s for s in THREAD_STALLS if s not in ("imbalance", "runqueue"))
# The categories that take a lock (native/steer_start.c's lock_waits): pthreads' and OpenMP's.
LOCKS = ("mutex", "rwlock", "critical", "atomic", "omp_lock")

# CC_COUNTER_NAMES (core.c) in CC_CTR_* order; the hardware ones are perf's, read only
# where a PMU is exposed (bit i of cc_sample.counters_measured: counter i was read).
COUNTERS = ("task_clock_s", "context_switches", "migrations", "page_faults",
            "cycles", "instructions", "llc_misses", "backend_stall_cycles")
HARDWARE = COUNTERS[4:]

MAX_PRED = 64    # CC_MAX_PRED
MAX_NODES = 16   # CC_MAX_NODES
MAX_THREADS = 1024       # CC_MAX_THREADS (corecast.h): rows of corecast_thread_waits
NUMA_ROLES = ("cycles", "llc", "bus", "mct")  # bit order of CC_NUMA_CYCLES .. CC_NUMA_MCT
NUMA_MAX_EVENTS = 256    # CC_NUMA_MAX_EVENTS
NUMA_PLAN_VERSION = 2    # CC_NUMA_PLAN_VERSION: struct cc_numa_plan's layout
NUMA_SOURCE_LEN = 64     # cc_numa_plan.source, cc_numa_counts.source


def _numa_plan_structs() -> dict[str, type]:
    """struct cc_numa_event and struct cc_numa_plan (model_abi.h) as ctypes Structures."""
    import ctypes as c

    class NumaEvent(c.Structure):
        _fields_ = [("config", c.c_uint64), ("config1", c.c_uint64), ("type", c.c_uint32),
                    ("role", c.c_uint32), ("node", c.c_int32), ("cpu", c.c_int32)]

    class NumaPlan(c.Structure):
        _fields_ = [("version", c.c_uint32), ("n", c.c_uint32), ("source", c.c_char * NUMA_SOURCE_LEN),
                    ("ev", NumaEvent * NUMA_MAX_EVENTS)]

    return {"NumaEvent": NumaEvent, "NumaPlan": NumaPlan}


def __getattr__(name: str) -> type:
    # PEP 562: ctypes (2 ms to import) only for whoever reads the plan's structs.
    if name in ("NumaEvent", "NumaPlan"):
        globals().update(_numa_plan_structs())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
