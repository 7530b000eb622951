"""The recording: the one definition of a sample record (what the runtime predictors read
about one region, or the whole process, in one window), of the JSON Lines a run writes
(``corecast run --json-out``, ``CORECAST_OUTPUT``; ``native/jsonl.c``) and of the
decoders into the record.  ``docs/recording.md`` describes the lines for readers.

* ``SCHEMA`` / ``SCHEMAS``: the version this library writes and the versions it reads.
* ``RegionSample`` / ``ProcessSample``: every key of the record with its unit.
* ``region_from_struct``: the live library's ``struct cc_region_sample``
  (``native/model_abi.h``) -> the record (``bridge.predict_sample``).
* ``region_from_json``, ``kernel_from_json``, ``host_from_json``, ``summary_from_json``,
  ``rank_of``, ``schema_of``: one line of a recording -> the record, the ``KernelStats``
  the OpenCL predictor reads, what it saw of the host, the process's facts.
  ``tools.samples.read_recording`` reads a file through them; it is the one reader.
* ``team_of``: the library's rule for the threads that did a process's work
  (``native/sample.c``'s ``team_of``), for recordings that predate ``team_threads``.

Other producers: ``kernelmodel.region``; ``tests/runtime/test_record.py`` checks every producer's keys.

Units: times in seconds, summed over the threads where they are thread time ("thread-s"),
cumulative since the program started (``history`` takes window differences itself; a
kernel's: its sampled launches).  Per-category tables are keyed by ``abi.STALLS`` names:
every name from the bridge and recordings (0 where none), a kernel's the ones it measures.

Standard library only, and no ``typing`` at run time: the bridge imports this module
inside profiled programs, where ``typing`` would cost start-up time.
"""
from __future__ import annotations

from .abi import COUNTERS, HARDWARE, STALLS
from .kernelstats import HostSeen, KernelStats
from .values import count as _count, number as _num, per_category as _per_category, target as _target, whole as _int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal, TypedDict
else:
    class TypedDict:
        """Run-time stand-in for ``typing.TypedDict`` (type checkers see the real one):
        keeps the key sets a ``TypedDict`` has, without importing ``typing``."""

        __required_keys__: frozenset = frozenset()
        __optional_keys__: frozenset = frozenset()

        def __init_subclass__(cls, total: bool = True) -> None:
            own = frozenset(cls.__dict__.get("__annotations__", {}))
            cls.__required_keys__ = cls.__required_keys__ | (own if total else frozenset())
            cls.__optional_keys__ = cls.__optional_keys__ | (frozenset() if total else own)

SCHEMA = 5              # the version this library writes (CC_SAMPLE_SCHEMA in native/model_abi.h)
SCHEMAS = (1, 2, 3, 4, 5)  # the versions it reads (docs/recording.md: what each added)
# The regions past the library's region table, counted together (native/core.c
# cc_region_or_other): outermost, nested.  Never steered or probed.
OTHER_REGIONS = ("(other regions)", "(other nested regions)")
TEAM_SHARE = 0.25       # native/sample.c TEAM_SHARE: a team thread's least share of the second busiest's CPU
ONE_THREAD_SHARE = 0.01  # native/sample.c ONE_THREAD_SHARE: below it the second busiest's CPU, the busiest alone worked
# The library's clock counts nanoseconds: a time or stall below one, such as a fitted curve
# that reaches 0 up to rounding (4.3e-19 s), was never measured and reads as 0.
CLOCK_RESOLUTION_S = 1e-9


class _Required(TypedDict):
    """The keys every producer gives."""

    name: str                 # outlined function ("main._omp_fn.0"), kernel name, or "process"
    object: str               # object file that holds it (executable, shared library); kernels: the device
    runtime: Literal["openmp", "pthreads", "opencl"]  # process: "openmp" if it ran OpenMP regions
    threads: int              # largest team seen (OpenMP), threads seen or most alive at once (process), compute units (kernel)
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
    # Absent in recordings made before the library counted explicit tasks (added to schema 4):
    tasks: int                # explicit OpenMP tasks run (libgomp's GOMP_task, or OMPT)
    task_s: float             # thread-s in them (outermost task per thread: its nested tasks and waits inside)
    task_spawn_s: float       # thread-s creating them (GOMP_task less tasks it ran at once; OMPT: 0)
    # Absent in recordings made before the library counted them (added to schema 5):
    task_depend: int          # of the tasks created, those with dependences (GOMP_task, or OMPT's task_create)
    taskwaits: int            # taskwaits and taskgroup ends outside any task (libgomp, or OMPT's waits)
    # Absent in recordings made before the library counted them (ABI 10, added to schema 5):
    # "not recorded", never 0.
    single_tasks: int         # of the tasks created, those a single block made outside any task (its producer's)
    single_task_spawn_s: float  # thread-s of task_spawn_s spent creating those (OMPT: 0)


class ProcessSample(RegionSample, total=False):
    """The process record (``name == "process"``, the last of a window): a region sample
    of every program thread, plus what only the process has (absent in early recordings)."""

    runqueue_other: float     # s of run-queue wait other load caused (kept out of stalls_s)
    team_threads: int         # threads that did the work (sample.c team_of; 0: unknown)
    hardware: dict[str, float]  # the whole run's perf hardware counts (HARDWARE names; only those read; none without a PMU)


def hardware_from_struct(sample: object) -> dict[str, float]:
    """The perf hardware counts a ``struct cc_sample`` holds (``counters_measured``'s
    bits): the whole run's so far, every program thread together."""
    return {name: float(sample.counters[i]) for i, name in enumerate(COUNTERS)
            if name in HARDWARE and sample.counters_measured & (1 << i)}


# --- the live library's struct ------------------------------------------------------------

def region_from_struct(ffi: object, g: object, hardware: dict[str, float] | None = None
                       ) -> RegionSample | ProcessSample:
    """A ``struct cc_region_sample`` (cffi) as the record every runtime predictor reads
    (``hardware``: the sample's, ``hardware_from_struct``, which the process record holds)."""
    region: RegionSample = {
        "name": ffi.string(g.name).decode(errors="replace"),
        "object": ffi.string(g.object).decode(errors="replace"),
        "runtime": "openmp" if g.runtime == 0 else "pthreads",
        "threads": g.threads,
        "nested": bool(g.nested),
        "calls": g.calls,
        "wall_s": g.wall_s,
        "busy_s": g.busy_s,
        "serial_s": g.serial_s,
        "hold_s": {name: g.hold_s[i] for i, name in enumerate(STALLS)},
        "single_s": g.single_s,
        "cpu_s": g.cpu_s,
        "stalls_s": {name: g.stall_s[i] for i, name in enumerate(STALLS)},
        "acquisitions": {name: g.acquisitions[i] for i, name in enumerate(STALLS)},
        "contended": {name: g.contended[i] for i, name in enumerate(STALLS)},
        "bytes": {name: g.bytes[i] for i, name in enumerate(STALLS)},
        "loop_calls": g.loop_calls,
        "hold_sampled_s": g.hold_sampled_s,
        "hold_samples": g.hold_samples,
        "requested": g.requested,
        "steered_to": g.steered_to,
        "hist": [(g.hist[i].threads, g.hist[i].calls, g.hist[i].wall_s) for i in range(g.nhist)],
        "probe_calls": g.probe_calls,
        "probes": {g.hist[i].threads: g.hist_probes[i] for i in range(g.nhist) if g.hist_probes[i]},
        "tasks": g.tasks,
        "task_s": g.task_s,
        "task_spawn_s": g.task_spawn_s,
        "task_depend": g.task_depend,
        "taskwaits": g.taskwaits,
        "single_tasks": g.single_tasks,
        "single_task_spawn_s": g.single_task_spawn_s,
    }
    if ffi.string(g.name) != b"process":
        return region
    process: ProcessSample = {**region, "runqueue_other": g.runq_other_s, "team_threads": g.team_threads}
    if hardware:
        process["hardware"] = dict(hardware)
    return process


# --- one line of a recording ---------------------------------------------------------------
# Each decoder raises KeyError, TypeError or ValueError for a line it cannot use;
# tools.samples turns those into one line naming the file and line.

def schema_of(rec: dict) -> int:
    """The schema a line was written in (schema 1 lines have no ``"schema"`` key)."""
    v = rec.get("schema", 1)
    if isinstance(v, bool) or not isinstance(v, int) or v not in SCHEMAS:
        # only a larger whole number is a newer corecast's; 0, -1 or "4" are no one's
        why = "a newer corecast wrote it" if isinstance(v, int) and not isinstance(v, bool) \
            and v > max(SCHEMAS) else "no corecast writes it"
        raise ValueError(f"schema {v!r} is not one this corecast reads ({', '.join(map(str, SCHEMAS))}); {why}")
    return v


def pid_of(rec: dict) -> int:
    """The process that wrote a line."""
    return _int(rec, "pid")


def rank_of(rec: dict) -> tuple[int, int | None] | None:
    """(rank, world size or None) of a line written under an MPI launcher (schema 3), else None."""
    if rec.get("rank") is None:
        return None
    return _int(rec, "rank"), _count(rec, "ranks") if rec.get("ranks") is not None else None


def summary_from_json(rec: dict) -> dict:
    """A ``summary`` line's facts about its process: ``cores``, ``cpus_allowed`` (0: not
    recorded, then all cores), ``target``, ``elapsed_s``, ``serial_run`` and, when
    recorded, ``mpi_init_s``/``mpi_finalize_s`` (schema 3), ``calibration`` (schema 4:
    the calibration's JSON object, which ``machine.from_dict`` reads) and ``target_machine``
    (the name of the machine ``--target-machine`` predicted for)."""
    out: dict = {}
    mpi = rec.get("mpi")
    if isinstance(mpi, dict):
        out["mpi_init_s"] = _num(mpi, "init_s")
        out["mpi_finalize_s"] = _num(mpi, "finalize_s")
    out["cores"] = _count(rec, "cores")
    out["cpus_allowed"] = _int(rec, "cpus_allowed") if "cpus_allowed" in rec else 0
    out["target"] = _target(rec, "target")
    out["elapsed_s"] = _num(rec, "elapsed_s")
    out["serial_run"] = rec.get("serial_run") is True
    if "children_cpu_s" in rec:  # waited-for children's CPU (absent before session user44)
        out["children_cpu_s"] = _num(rec, "children_cpu_s")
    if rec.get("machine_calibration") is not None:
        out["calibration"] = rec["machine_calibration"]  # machine.from_dict's to read (its own format)
    source = (rec.get("predicted_for") or {}).get("source") if isinstance(rec.get("predicted_for"), dict) else None
    if isinstance(source, str) and source.startswith("target machine "):  # corecast run --target-machine
        out["target_machine"] = source[len("target machine "):]
    return out


def region_from_json(rec: dict) -> RegionSample | ProcessSample:
    """A ``region`` or ``process`` line as ``region_from_struct`` decodes the live sample
    (keys the line's schema lacks left out, or given the model's defaults)."""
    counters = rec["counters"]
    if not isinstance(counters, dict):
        raise ValueError("counters is not an object")
    threads = _count(rec, "threads")
    name = str(rec["name"])
    region: RegionSample = {
        "name": name,
        "object": str(rec.get("object", "")),
        "runtime": "openmp" if rec.get("runtime") == "openmp" else "pthreads",
        "threads": threads,
        "nested": bool(rec.get("nested", False)),
        "calls": _count(rec, "calls"),
        "wall_s": _num(rec, "wall_s"),
        "busy_s": _num(counters, "busy_s"),
        "serial_s": _num(counters, "serial_s"),
        "cpu_s": _num(counters, "cpu_s") if "cpu_s" in counters else 0.0,
        "stalls_s": _per_category(rec, "stalls_s"),
        "acquisitions": _per_category(counters, "acquisitions", int),
        "contended": _per_category(counters, "contended", int),
        "loop_calls": _int(counters, "loop_calls") if "loop_calls" in counters else 0,
        "hold_sampled_s": _num(counters, "hold_sampled_s") if "hold_sampled_s" in counters else 0.0,
        "hold_samples": _int(counters, "hold_samples") if "hold_samples" in counters else 0,
        "requested": _int(rec, "requested") if "requested" in rec else threads,
        "steered_to": 0,
        "hist": [(_count(h, "threads"), _int(h, "calls"), _num(h, "wall_s"))
                 for h in rec.get("by_team") or [] if isinstance(h, dict)],
        "probe_calls": _int(rec, "probe_calls") if "probe_calls" in rec else 0,
        "probes": {_count(h, "threads"): _int(h, "probe_calls") for h in rec.get("by_team") or []
                   if isinstance(h, dict) and h.get("probe_calls")},
    }
    # Schema 2: the split of serial_s (absent keys leave the model's schema-1 defaults).
    if "single_s" in counters:
        region["single_s"] = _num(counters, "single_s")
    if isinstance(counters.get("hold_s"), dict):
        region["hold_s"] = _per_category(counters, "hold_s")
    if isinstance(counters.get("bytes"), dict):  # schema 3: payload bytes (MPI)
        region["bytes"] = _per_category(counters, "bytes", int)
    if "tasks" in counters:  # added to schema 4: explicit tasks
        region["tasks"] = _int(counters, "tasks")
        region["task_s"] = _num(counters, "task_s")
        region["task_spawn_s"] = _num(counters, "task_spawn_s")
    for key in ("task_depend", "taskwaits", "single_tasks"):  # added to schema 5: dependences, phases, producer
        if key in counters:
            region[key] = _int(counters, key)
    if "single_task_spawn_s" in counters:
        region["single_task_spawn_s"] = _num(counters, "single_task_spawn_s")
    if name != "process":
        return region
    process: ProcessSample = {**region}
    if "runqueue_other_load_s" in counters:
        process["runqueue_other"] = _num(counters, "runqueue_other_load_s")
    if "team_threads" in counters:
        process["team_threads"] = _int(counters, "team_threads")
    elif isinstance(rec.get("per_thread"), list):  # schema 1: the library's rule, here
        process["team_threads"] = team_of([t.get("cpu_s") if isinstance(t, dict) else None
                                           for t in rec["per_thread"]])
    hardware = {name: _num(counters, name) for name in HARDWARE if name in counters}
    if hardware:
        process["hardware"] = hardware
    return process


def team_of(cpus: list) -> int:
    """Threads that did a process's work, from their CPU times (None or < 0: ended
    unseen): those with at least ``TEAM_SHARE`` of the second busiest's; 0 with fewer
    than two known or none busy; 1 when the second busiest did under ``ONE_THREAD_SHARE``
    of the busiest's and none ended unseen (helpers that only wait), else 0 with the
    second busiest idle.  The rule of ``native/sample.c``'s ``team_of``;
    ``tests/runtime/test_record.py`` runs both on the same cases."""
    known = sorted((float(c) for c in cpus if isinstance(c, (int, float)) and c >= 0), reverse=True)
    if len(known) < 2 or known[0] <= 0:
        return 0
    if known[1] < ONE_THREAD_SHARE * known[0] and len(known) == len(cpus):
        return 1
    if known[1] <= 0:
        return 0
    return sum(1 for c in cpus if not isinstance(c, (int, float)) or c < 0 or c >= TEAM_SHARE * known[1])


def host_from_json(rec: dict) -> HostSeen | None:
    """A ``kernel`` line's ``host`` (``HostSeen.to_json``; None where absent, before session 37)."""
    if not isinstance(host := rec.get("host"), dict):
        return None
    t = [_num(host, k) for k in ("device_s", "wait_s", "cpu_device_s", "runtime_cpu_s")]
    counts = {k: {str(c): read(host[k], c) for c in host[k]} for k, read in (("runtime_waits_s", _num),
              ("runtime_acquisitions", _int), ("runtime_contended", _int)) if isinstance(host.get(k), dict)}
    if not isinstance(cpus := host["program_cpu_s"], list):
        raise ValueError("host.program_cpu_s is not a list")
    cpus = [_num({"program_cpu_s": c}, "program_cpu_s") for c in cpus]  # each as _num's rule: finite, >= 0
    return HostSeen(t[0], t[1], _int(host, "runtime_threads"), t[3], program_cpu_s=cpus, cpu_device_s=t[2], **counts)


def kernel_from_json(rec: dict) -> KernelStats:
    """An OpenCL ``kernel`` line as the ``KernelStats`` its prediction was made from.
    Its ``threads`` (the device's compute units, which OpenCL reports as 1 or more) is a
    count as a region's threads are: 0 is refused, not replayed as 1."""
    k = KernelStats(str(rec["name"]), str(rec.get("object", "")), str(rec.get("device_type", "")),
                    _count(rec, "threads"), str(rec.get("platform", "")))
    lim = rec.get("limits")
    if isinstance(lim, dict) and lim.get("max_work_group_size"):
        k.max_group = _int(lim, "max_work_group_size")
    if "in_order_launches" in rec:
        k.in_order = _int(rec, "in_order_launches")
    k.launches = _int(rec, "calls")
    k.completed = _int(rec, "completed") if "completed" in rec else k.launches
    k.device_ns = _num(rec, "wall_s") * 1e9
    s = rec.get("sample") or {}
    if not isinstance(s, dict):
        raise ValueError("sample is not an object")
    k.sample.launches = _int(s, "launches") if "launches" in s else 0
    k.sample.device_ns = _num(s, "device_s") * 1e9 if "device_s" in s else 0.0
    if s.get("runtime_cpu_s") is not None:
        k.sample.cpu_ns = _num(s, "runtime_cpu_s") * 1e9
        k.sample.cpu_measured = True
    for key, into in (("waits_s", k.sample.waits), ("acquisitions", k.sample.acquisitions),
                      ("contended", k.sample.contended)):
        table = s.get(key) or {}
        if isinstance(table, dict):
            into.update({c: _num(table, c) for c in table})
    if s.get("buffer_bytes") is not None:  # per launch; the sample holds their sum
        k.sample.buffer_bytes = _num(s, "buffer_bytes") * k.sample.launches
    if "runqueue_s" in s:
        k.sample.runq_ns = _num(s, "runqueue_s") * 1e9
    else:  # schema 1: stalls_s holds the run-queue wait scaled to all launches
        stalls = rec.get("stalls_s") or {}
        runq = float(stalls.get("runqueue", 0.0) or 0.0) if isinstance(stalls, dict) else 0.0
        k.sample.runq_ns = runq * 1e9 * (k.sample.device_ns / k.device_ns if k.device_ns else 1.0)
    shapes = s.get("shapes")
    if isinstance(shapes, list):
        k.sample.shapes = {_shape(g, loc) for g, loc in shapes}
    else:  # schema 1: one global and one local size pair the sample's shape, if unique
        g, loc = rec.get("global_sizes") or [], rec.get("local_sizes") or []
        if len(g) == 1 and len(loc) == 1:
            k.sizes = {_shape(g[0], loc[0]): k.launches}
    return k


def process_facts_of(rec: dict) -> dict:
    """What a ``kernel``, ``region`` or ``process`` line says about its process: ``cores``
    when recorded (kernel lines), and the ``target`` its last prediction reached (only the
    summary line names the target)."""
    out = {}
    if "cores" in rec:
        out["cores"] = _count(rec, "cores")
    pred = rec.get("predicted")
    if isinstance(pred, list) and pred and isinstance(pred[-1], dict):
        out["target"] = _target(pred[-1], "threads")
    return out


def _shape(g: object, loc: object) -> tuple:
    def sizes(v: object) -> tuple | None:
        return tuple(_int({"a work size": x}, "a work size") for x in v) if isinstance(v, list) else None

    return sizes(g), sizes(loc)
