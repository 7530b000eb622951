"""Reading the JSON Lines a run wrote (``CORECAST_OUTPUT``) back into model inputs.

Every record version the library has written stays readable, so recorded runs can be
predicted again as the model changes (``corecast replay``):

* schema 1: records without a ``"schema"`` key.  Regions lack ``nested``, ``requested``,
  ``single_s`` and ``hold_s``; the model's defaults stand in (not nested, the team asked
  for is the largest seen, the locks' holds shared out of ``serial_s``).  Early files also
  lack the summary's ``cpus_allowed`` (then: all cores) and the process's
  ``runqueue_other_load_s`` (then: the process model's own rule).  OpenCL kernel lines
  lack the sample's run-queue wait and shapes (rebuilt from ``stalls_s`` and the sizes).
* schema 2: all of the above recorded.
* schema 3: the MPI stall categories (``mpi_p2p``, ``mpi_collective``), ``counters.bytes``
  and, under an MPI launcher, ``rank`` and ``ranks`` on every line.
* schema 4: the summary's ``machine_calibration`` when the run used one (``corecast
  calibrate``; ``model.machine``), which replay then uses too.

A region becomes the sample record ``bridge.decode_region`` gives (``record.RegionSample``,
the keys a schema lacks left out as there); a kernel becomes the ``KernelStats`` the
OpenCL predictor reads.  Standard library only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

from ..errors import InputError
from ..io.fileio import parse_json, read_text, shown
from .model import machine
from .model.abi import STALLS
from .model.kernelstats import KernelStats

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from .model.machine import Calibration
    from .model.record import ProcessSample, RegionSample

SCHEMA = 4          # the version this library writes (CC_SAMPLE_SCHEMA in native/model_abi.h)
SCHEMAS = (1, 2, 3, 4)  # the versions it reads


@dataclass
class RecordedProcess:
    """One process of a recording: its regions (the process record last) and kernels."""

    pid: int
    schema: int = 1
    cores: int = 0        # 0: not recorded (schema-1 kernel lines)
    cpus_allowed: int = 0
    target: int = 0
    elapsed_s: float = 0.0
    steer: bool = False
    serial_run: bool = False  # no thread started, no parallel region (nothing was sampled)
    rank: int | None = None   # schema 3, under an MPI launcher: the rank and world size
    ranks: int | None = None
    mpi_init_s: float = 0.0   # schema 3, MPI programs: MPI_Init and MPI_Finalize times
    mpi_finalize_s: float = 0.0
    calibration: Calibration | None = None  # schema 4: the machine calibration the run used
    regions: list[RegionSample] = field(default_factory=list)
    kernels: list = field(default_factory=list)  # kernelstats.KernelStats


def json_lines(path: str) -> Iterator[tuple[int, object]]:
    """(line number, decoded value) of each non-blank line of a JSON Lines file; a line
    that is not JSON raises ``InputError`` naming the file and line."""
    for no, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        yield no, parse_json(line, path, "JSON", line=no)


def read_recording(path: str) -> list[RecordedProcess]:
    """The processes recorded in ``path``, in the order they first appear.  Bad input
    raises ``InputError`` naming the file and line."""
    by_pid: dict[int, RecordedProcess] = {}
    for no, rec in json_lines(path):
        if not isinstance(rec, dict) or rec.get("event") not in ("region", "process", "summary", "kernel"):
            continue  # other tools' lines, and events replay has no use for
        try:
            _add(by_pid, rec)
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"{shown(path)}: line {no}: not a corecast {rec.get('event')} record "
                             f"({what})") from None
    procs = [p for p in by_pid.values() if p.regions or p.kernels or p.serial_run]
    if not procs:
        raise InputError(f"{shown(path)}: no region, process or kernel records "
                         "(write them with corecast run --json-out FILE or CORECAST_OUTPUT)")
    for p in procs:  # the process record last, as the library hands the window over
        p.regions.sort(key=lambda r: r["name"] == "process")
    return procs


def _schema(rec: dict) -> int:
    v = rec.get("schema", 1)
    if isinstance(v, bool) or not isinstance(v, int) or v not in SCHEMAS:
        raise ValueError(f"schema {v!r} is not one this corecast reads ({', '.join(map(str, SCHEMAS))}); "
                         "a newer corecast wrote it")
    return v


def _add(by_pid: dict[int, RecordedProcess], rec: dict) -> None:
    schema = _schema(rec)
    pid = _int(rec, "pid")
    proc = by_pid.setdefault(pid, RecordedProcess(pid))
    proc.schema = max(proc.schema, schema)
    event = rec["event"]
    if rec.get("rank") is not None:
        proc.rank = _int(rec, "rank")
        proc.ranks = max(1, _int(rec, "ranks")) if rec.get("ranks") is not None else None
    if event == "summary":
        mpi = rec.get("mpi")
        if isinstance(mpi, dict):
            proc.mpi_init_s = _num(mpi, "init_s")
            proc.mpi_finalize_s = _num(mpi, "finalize_s")
        proc.cores = max(1, _int(rec, "cores"))
        proc.cpus_allowed = _int(rec, "cpus_allowed") if "cpus_allowed" in rec else 0
        proc.target = max(1, _int(rec, "target"))
        proc.elapsed_s = _num(rec, "elapsed_s")
        proc.serial_run = rec.get("serial_run") is True
        if rec.get("machine_calibration") is not None:
            try:
                proc.calibration = machine.from_dict(rec["machine_calibration"])
            except machine.CalibrationError as exc:
                raise ValueError(f"machine_calibration: {exc}") from None
    elif event == "kernel":
        proc.kernels.append(kernel_from_record(rec))
        if "cores" in rec:
            proc.cores = max(1, _int(rec, "cores"))
        pred = rec.get("predicted")
        if not proc.target and isinstance(pred, list) and pred and isinstance(pred[-1], dict):
            proc.target = max(1, _int(pred[-1], "threads"))  # kernel lines carry no target
    else:
        region = region_from_record(rec)
        proc.steer = proc.steer or "steering" in rec
        proc.regions.append(region)


def _num(rec: dict, key: str) -> float:
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{key} is {v!r}, not a number >= 0")
    return float(v)


def _int(rec: dict, key: str) -> int:
    v = rec[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{key} is {v!r}, not a whole number >= 0")
    return v


def _per_category(rec: dict, key: str, kind=float) -> dict:
    table = rec.get(key) or {}
    if not isinstance(table, dict):
        raise ValueError(f"{key} is not an object")
    return {name: (_num if kind is float else _int)(table, name) if name in table else kind(0)
            for name in STALLS}


def region_from_record(rec: dict) -> RegionSample | ProcessSample:
    """A region or process record as ``bridge.decode_region`` decodes the live sample."""
    counters = rec["counters"]
    if not isinstance(counters, dict):
        raise ValueError("counters is not an object")
    threads = max(1, _int(rec, "threads"))
    name = str(rec["name"])
    region: RegionSample = {
        "name": name,
        "object": str(rec.get("object", "")),
        "runtime": "openmp" if rec.get("runtime") == "openmp" else "pthreads",
        "threads": threads,
        "nested": bool(rec.get("nested", False)),
        "calls": max(1, _int(rec, "calls")),
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
        "hist": [(max(1, _int(h, "threads")), _int(h, "calls"), _num(h, "wall_s"))
                 for h in rec.get("by_team") or [] if isinstance(h, dict)],
        # CORECAST_PROBE runs (schema 2): calls run at smaller teams, per team size
        "probe_calls": _int(rec, "probe_calls") if "probe_calls" in rec else 0,
        "probes": {max(1, _int(h, "threads")): _int(h, "probe_calls") for h in rec.get("by_team") or []
                   if isinstance(h, dict) and h.get("probe_calls")},
    }
    # Schema 2: the split of serial_s (absent keys leave the model's schema-1 defaults).
    if "single_s" in counters:
        region["single_s"] = _num(counters, "single_s")
    if isinstance(counters.get("hold_s"), dict):
        region["hold_s"] = _per_category(counters, "hold_s")
    if isinstance(counters.get("bytes"), dict):  # schema 3: payload bytes (MPI)
        region["bytes"] = _per_category(counters, "bytes", int)
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
    return process


TEAM_SHARE = 0.25  # native/sample.c team_of


def team_of(cpus: list) -> int:
    """Threads that did a process's work, from their CPU times (None: ended unseen): those
    with at least ``TEAM_SHARE`` of the second busiest's; 0 with fewer than two known."""
    known = sorted((float(c) for c in cpus if isinstance(c, (int, float)) and c >= 0), reverse=True)
    if len(known) < 2 or known[1] <= 0:
        return 0
    return sum(1 for c in cpus if not isinstance(c, (int, float)) or c < 0 or c >= TEAM_SHARE * known[1])


def kernel_from_record(rec: dict):
    """An OpenCL kernel line as the ``KernelStats`` its prediction was made from."""
    k = KernelStats(str(rec["name"]), str(rec.get("object", "")), str(rec.get("device_type", "")),
                    max(1, _int(rec, "threads")), str(rec.get("platform", "")))
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


def _shape(g, loc) -> tuple:
    return (tuple(int(v) for v in g) if isinstance(g, list) else None,
            tuple(int(v) for v in loc) if isinstance(loc, list) else None)
