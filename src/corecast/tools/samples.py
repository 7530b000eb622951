"""The one reader of a recording (the JSON Lines a run wrote with ``corecast run
--json-out`` or ``CORECAST_OUTPUT``): a file to its processes, the lines read by the
reader registry's ``recording`` reader (``io.readers.recording``) and each decoded by
``model.record`` (the schema, its fields and their decoders; ``docs/recording.md``).

``corecast replay``, ``corecast merge`` (``ranks``), ``corecast sweep`` (``sweep.runs``),
the calibration and the benchmarks read recordings here.  Every schema the library has
written stays readable, so recorded runs can be predicted again as the model changes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InputError, counted
from ..io.fileio import shown
from ..io.readers import RECORDING, read
from ..model.machine import calibration
from ..model.scaling import MAX_COUNT, over_max_count
from ..recording import record

TYPE_CHECKING = False  # annotations only
if TYPE_CHECKING:
    from ..recording.kernelstats import HostSeen, KernelStats
    from ..model.machine.calibration import Calibration
    from ..recording.record import RegionSample

EVENTS = ("region", "process", "summary", "kernel")  # the events a process is read from


class NoRecords(InputError):
    """A file that holds no process's records: empty, or other tools' lines only (an MPI
    rank killed before its exit report leaves its ``--json-out`` file empty)."""


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
    children_cpu_s: float = 0.0  # a serial run's waited-for children's CPU time (make -j2)
    rank: int | None = None   # schema 3, under an MPI launcher: the rank and world size
    ranks: int | None = None
    mpi_init_s: float = 0.0   # schema 3, MPI programs: MPI_Init and MPI_Finalize times
    mpi_finalize_s: float = 0.0
    calibration: Calibration | None = None  # schema 4: the machine calibration the run used
    target_machine: str | None = None  # the machine --target-machine predicted for (its name)
    host: HostSeen | None = None  # what the OpenCL layer saw of its host (kernel lines, session 37 on)
    regions: list[RegionSample] = field(default_factory=list)
    kernels: list[KernelStats] = field(default_factory=list)
    # Its records' texts as read (``read_once``: the same process read again has the same),
    # and how many of them its file held more than once, each read once.
    records: frozenset = field(default=frozenset(), repr=False, compare=False)
    read_again: int = 0


def read_recording(path: str, format: str | None = None) -> list[RecordedProcess]:
    """The processes recorded in ``path``, in the order they first appear, read by the
    registry's recording reader (``format``: its name; default: the one there is).  Bad
    input raises ``InputError`` naming the file and line."""
    return processes(path, read([path], RECORDING, format))


def processes(path: str, lines: Iterable[tuple[int, object]]) -> list[RecordedProcess]:
    """The processes in ``lines`` (line-numbered JSON values of ``path``: the recording
    reader's, or ``io.readers.recording.json_lines``), as ``read_recording``."""
    by_pid: dict[int, RecordedProcess] = {}
    texts: dict[int, set[str]] = {}  # each process's records, as read
    for no, rec in lines:
        if not isinstance(rec, dict) or rec.get("event") not in EVENTS:
            continue  # other tools' lines, and events replay has no use for
        text = json.dumps(rec, sort_keys=True)
        try:
            pid = record.pid_of(rec)
            if text in texts.get(pid, ()):  # a file joined to itself (`cat a a`): counted twice
                by_pid[pid].read_again += 1
                continue
            _add(by_pid, rec)
            texts.setdefault(pid, set()).add(text)
        except (KeyError, TypeError, ValueError) as exc:
            what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
            raise InputError(f"{shown(path)}: line {no}: not a corecast {rec.get('event')} record "
                             f"({what})") from None
    procs = [p for p in by_pid.values() if p.regions or p.kernels or p.serial_run]
    if not procs:
        raise NoRecords(f"{shown(path)}: no region, process or kernel records "
                         "(write them with corecast run --json-out FILE or CORECAST_OUTPUT)")
    for p in procs:  # the process record last, as the library hands the window over
        p.regions.sort(key=lambda r: r["name"] == "process")
        p.records = frozenset(texts.get(p.pid, ()))
    return procs


def read_once(path: str, proc: RecordedProcess, seen: dict[frozenset, str]) -> tuple[bool, list[str]]:
    """Whether ``proc`` (of the file ``path``) is read for the first time, and a warning
    for each time its records were read again, each counted once: records its file holds
    twice (a file joined to itself) and a process whose records an earlier file held (a file
    named twice, or a copy).  ``seen``: each process's records read so far -> its file."""
    who = f"rank {proc.rank} (pid {proc.pid})" if proc.rank is not None else f"pid {proc.pid}"
    said = []
    if proc.read_again:
        said.append(f"{shown(path)}: {who}'s records appear again in the file ({counted(proc.read_again, 'line')} "
                    "read already): counted once")
    if proc.records in seen:
        said.append(f"{shown(path)}: {who} was read already from {shown(seen[proc.records])}: counted once")
        return False, said
    seen[proc.records] = path
    return True, said


def _add(by_pid: dict[int, RecordedProcess], rec: dict) -> None:
    schema = record.schema_of(rec)
    pid = record.pid_of(rec)
    proc = by_pid.setdefault(pid, RecordedProcess(pid))
    proc.schema = max(proc.schema, schema)
    event = rec["event"]
    rank = record.rank_of(rec)
    if rank is not None:
        proc.rank, proc.ranks = rank
    if event == "summary":
        facts = record.summary_from_json(rec)
        if "calibration" in facts:
            try:
                facts["calibration"] = calibration.from_dict(facts["calibration"])
            except calibration.OutdatedCalibration:  # a schema-1 calibration the run used: replayed without
                del facts["calibration"]
            except calibration.CalibrationError as exc:
                raise ValueError(f"machine_calibration: {exc}") from None
        for key, value in facts.items():
            setattr(proc, key, value)
    elif event == "kernel":
        kernel = record.kernel_from_json(rec)
        if kernel.compute_units > MAX_COUNT:  # as a region's threads: replay walks the counts up to it
            raise ValueError(f"threads {over_max_count(str(kernel.compute_units))}")
        proc.kernels.append(kernel)
        proc.host = proc.host or record.host_from_json(rec)
        facts = record.process_facts_of(rec)
        proc.cores = facts.get("cores", proc.cores)
        proc.target = proc.target or facts.get("target", 0)
    else:
        region = record.region_from_json(rec)
        if region["threads"] > MAX_COUNT:  # the models walk every count up to it: 10^9 ran for hours
            raise ValueError(f"threads {over_max_count(str(region['threads']))}")
        proc.regions.append(region)
        proc.steer = proc.steer or "steering" in rec
        # the target its predictions reached: a recording without its summary line (cut
        # short) replayed up to 1 thread, every speedup 1.00; the summary's, when read, wins
        proc.target = proc.target or record.process_facts_of(rec).get("target", 0)
