"""``corecast replay``: the current runtime model on the samples a run recorded.

Each recorded process goes through the predictor the live library calls
(``predictor.predict_window`` for regions and the process, ``kernelmodel.predict`` for
kernels), as one final window with a fresh history: what replay prints is what the run
would have printed with this model.  Differences from the live run, all small: the live
history credits each window's stalls to the team size that ran most in that window,
replay credits the whole run's to the team size that ran most calls; steering is not
replayed, and node-count predictions (``--target-machine``) only by ``replay_nodes``
(``corecast numa --replay``), on a machine of the caller's choice.  An OpenCL host's
process line is predicted from all its threads (a warning says so): what the OpenCL layer
saw of the runtime's threads and the device waits is not recorded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model.runtime.bound import TeamPrediction
from ..model.scaling import MAX_COUNT
from ..recording.values import json_number, shown_value
from .samples import RecordedProcess, read_once, read_recording

if TYPE_CHECKING:
    from ..model.machine.numa import Machine
    from ..model.machine.calibration import Calibration
    from ..recording.record import RegionSample


@dataclass
class ReplayedProcess:
    recorded: RecordedProcess
    target: int
    predicted_cores: int
    predictions: list[TeamPrediction]        # one per recorded region, process last
    kernels: list[tuple] = field(default_factory=list)  # (KernelStats, prediction or None)
    warnings: list[str] = field(default_factory=list)   # what the predictions rest on that may not hold
    # per kernel, its compute units' lost time per category (kernelmodel.stalls; None: not measured)
    kernel_stalls: list[dict | None] = field(default_factory=list)
    target_given: bool = False  # the caller's target (replay --target), not the recorded one
    # The kernels' largest target: a device that is not a CPU is predicted to its own
    # compute units (kernelmodel.default_target), as the run's kernel table did; 0: ``target``.
    kernel_target: int = 0

    @property
    def process(self) -> tuple[RegionSample, TeamPrediction] | None:
        """The process record and its prediction, if the run recorded one."""
        for region, pred in zip(self.recorded.regions, self.predictions):
            if region["name"] == "process":
                return region, pred
        return None


def replay_process(proc: RecordedProcess, target: int | None = None,
                   histories: dict | None = None, machine: Calibration | None = None) -> ReplayedProcess:
    """Predictions for one recorded process, up to ``target`` threads (default: the
    recorded target) on a machine of that many cores.  ``histories`` (the bridge's
    {(region, object): RegionHistory}) holds what earlier windows saw, if anything;
    ``machine``: the recording machine's calibration (``corecast calibrate``), if any."""
    from ..model.runtime.predictor import predict_window

    given = bool(target)
    target = max(1, int(target or proc.target or proc.cores))
    cores = proc.cores or max(target, *(k.compute_units for k in proc.kernels), 1)  # unrecorded: enough
    measured = proc.cpus_allowed if 0 < proc.cpus_allowed < cores else cores
    preds = predict_window(proc.regions, target, max(1, measured), target,
                           {} if histories is None else histories, machine=machine) if proc.regions else []
    kernels, lost = [], []
    if proc.kernels:
        from ..model.runtime import kernelmodel

        # The run's kernel table: the target asked for, else each kernel's default (the
        # recorded target is the host's: a GPU's 132 units were cut at its 16 cores).
        targets = [target if given or k.device_type == "cpu" else kernelmodel.default_target(k, cores)
                   for k in proc.kernels]
        kernels = [(k, kernelmodel.predict(k, t, cores, machine)) for k, t in zip(proc.kernels, targets)]
        lost = [kernelmodel.stalls(k) for k in proc.kernels]
    if proc.host is not None and proc.regions:  # the run's own process line (openclhost)
        from ..model.runtime.openclhost import host_predictions

        preds = host_predictions(proc.regions, preds, proc.host, lambda r: predict_window(
            [r], target, max(1, measured), target, {}, False, machine)[0])
    warnings = calibration_warnings(machine, proc)
    if proc.target_machine:  # the run's node model is numa --replay's, not this replay's
        warnings.append(f"recorded with --target-machine ({proc.target_machine}): these thread counts "
                        "are predicted without that machine's node model, so they may differ from the "
                        "run's; 'corecast numa --replay' replays its node counts")
    if proc.kernels and proc.host is None and any(r["name"] == "process" for r in proc.regions):
        # what the OpenCL layer saw of its host (runtime.devicewait) is not in the recording
        warnings.append("an OpenCL host: its process line is predicted from every thread the library "
                        "saw; the run's own left out the OpenCL runtime's threads and its device waits, "
                        "which the recording does not hold, so the two may differ")
    return ReplayedProcess(proc, target, target, preds, kernels, warnings, lost, target_given=given,
                           kernel_target=max(targets) if proc.kernels else 0)


def calibration_warnings(machine: Calibration | None, proc: RecordedProcess) -> list[str]:
    """Why a machine calibration may not describe the recording's machine: a ``--quick`` one
    measures nothing, and one measured on another number of CPUs is another machine's."""
    if machine is None:
        return []
    out = []
    if machine.quick:
        out.append("the machine calibration is a --quick one (tiny runs that check the kernels): "
                   "its figures mean nothing")
    if proc.cores and machine.cpus != proc.cores:
        out.append(f"the machine calibration was measured on {machine.cpus} CPUs, the recording's "
                   f"machine had {proc.cores}: its curves may be another machine's")
    return out


def replay(path: str, target: int | None = None, machine: str | None = None,
           format: str | None = None) -> list[ReplayedProcess]:
    """Every process recorded in ``path``, predicted again (``InputError`` on bad files),
    with the machine calibration the run recorded, or the one in the file ``machine``;
    ``format``: the recording reader's name (default: the one there is)."""
    cal = None
    if machine is not None:
        from ..errors import InputError
        from ..io.fileio import read_text, shown
        from ..model.machine.calibration import CalibrationError, parse

        text = read_text(machine)  # the CLI's reader: limits, FIFOs, one-line errors
        try:
            cal = parse(text)
        except CalibrationError as exc:
            raise InputError(f"{shown(machine)}: not a usable machine calibration: {exc}") from None
    reps = []
    for p in read_recording(path, format):
        rep = replay_process(p, target, machine=cal or p.calibration)
        rep.warnings[:0] = read_once(path, p, {})[1]  # records the file holds twice: read once (as merge)
        reps.append(rep)
    return reps


def _check_numa_record(inputs: dict, sync: object) -> None:
    """The values of a ``numa`` member that the node model divides by or walks up to, as
    a run writes them: ``sync`` speedups > 0 (a -1 made 2:1189235474924.02), ``team_times``
    [team, seconds] pairs of a team from 1 to MAX_COUNT (one of 10^9 ran for hours) and a
    time > 0.  ValueError naming the value otherwise."""
    for i, v in enumerate(sync if isinstance(sync, list) else []):
        f = json_number(v)
        if f is None or f <= 0:
            raise ValueError(f"sync[{i}] is {shown_value(v)}, not a speedup > 0")
    counts = inputs.get("counts")
    if counts:  # raw counts, read as a --sample's are (a -1 beside a 1 summed to no traffic)
        if not isinstance(counts, dict):
            raise ValueError(f"counts is {shown_value(counts)}, not an object")
        for key in ("total_cycles", "llc", "bus"):
            if key not in counts:
                raise ValueError(f"counts has no {key!r}")
        for key in (k for k in ("total_cycles", "llc", "bus", "mct", "cores") if k in counts):
            value = counts[key]
            if key in ("bus", "mct") and not isinstance(value, list):
                raise ValueError(f"counts.{key} is {shown_value(value)}, not a list of counts per node")
            for v in value if isinstance(value, list) and key in ("llc", "bus", "mct") else [value]:
                if json_number(v) is None or json_number(v) < 0:
                    raise ValueError(f"counts.{key} holds {shown_value(v)}, not a count >= 0")
        for key in ("llc_from", "bus_from"):
            if key in counts and counts[key] not in ("mct", "llc", "bus"):
                raise ValueError(f"counts.{key} is {shown_value(counts[key])}, not mct, llc or bus")
    times = inputs.get("team_times") or []
    if not isinstance(times, list):
        raise ValueError(f"team_times is {shown_value(times)}, not a list of [team, seconds] pairs")
    for i, pair in enumerate(times):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"team_times[{i}] is {shown_value(pair)}, not a [team, seconds] pair")
        team, t = pair
        if isinstance(team, bool) or not isinstance(team, int) or not 1 <= team <= MAX_COUNT:
            raise ValueError(f"team_times[{i}]'s team is {shown_value(team)}, not a count from 1 to {MAX_COUNT}")
        if (json_number(t) or 0) <= 0:
            raise ValueError(f"team_times[{i}]'s time is {shown_value(t)}, not a number of seconds > 0")


def replay_nodes(path: str, machine: Machine, efficiency: float | None = None,
                 format: str | None = None) -> list[dict]:
    """Every event of ``path`` with node-count inputs (a ``--target-machine`` recording)
    predicted again per NUMA node count on ``machine``; [] when none has them.  Each
    region is ``{"name", "object", "predictions": [{"nodes", "cores", "speedup"}],
    "preferred_nodes", "fastest_nodes", "basis", "measured", "fitted", "notes"}``; ``InputError`` (naming
    the file and line) for lines that are not JSON or records that cannot be used.  The
    lines are the registry's recording reader's (``format``: its name)."""
    from ..errors import InputError
    from ..io.fileio import shown
    from ..model.numa import preferred_nodes
    from ..model.runtime.numa import interpolate, node_prediction
    from ..io.readers import RECORDING, read
    from ..recording.record import schema_of

    regions = []
    for no, event in read([path], RECORDING, format):
        if isinstance(event, dict) and "event" in event:
            try:  # every line of a schema this corecast reads, as replay and merge ask
                schema_of(event)
            except ValueError as exc:
                raise InputError(f"{shown(path)}: line {no}: {exc}") from None
        # region, process and kernel events with node predictions (the summary's "numa"
        # is the recording machine's topology)
        if (not isinstance(event, dict) or not isinstance(event.get("numa"), dict)
                or not isinstance(event.get("predicted_nodes"), list)):
            continue
        rec = event["numa"]
        inputs = rec.get("inputs") if isinstance(rec.get("inputs"), dict) else {}
        sync = rec.get("sync")
        c = machine.cores_per_node
        try:
            _check_numa_record(inputs, sync)
            if isinstance(sync, list) and sync:
                # the recorded sync factor was for the recording's machine: re-sample it per core
                c0 = event["predicted_nodes"][0]["cores"]
                if not (isinstance(c0, int) and not isinstance(c0, bool) and 1 <= c0 <= MAX_COUNT):
                    raise ValueError(f"predicted_nodes[0].cores is {shown_value(c0)}, not a count of cores")
                pts = [(c0 * (i + 1), float(v)) for i, v in enumerate(sync)]
                sync = [interpolate(pts, k * c) / interpolate(pts, c) for k in range(1, machine.nodes + 1)]
            else:
                sync = None
            speedup, basis, measured, fitted, _, notes = node_prediction(machine, inputs, sync)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise InputError(f"{shown(path)}: line {no}: unusable numa record: {exc}") from None
        regions.append({"name": event.get("name"), "object": event.get("object"),
                        "predictions": [{"nodes": k, "cores": k * c, "speedup": round(s, 6)}
                                        for k, s in enumerate(speedup, 1)],
                        "preferred_nodes": preferred_nodes(speedup, efficiency),
                        # what the table calls fastest, as numa --sample's JSON and a run's line name it
                        "fastest_nodes": preferred_nodes(speedup), "basis": basis,
                        "measured": measured, "fitted": fitted, "notes": notes})
    return regions
