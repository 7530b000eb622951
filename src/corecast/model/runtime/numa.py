"""Node-count predictions inside a profiled program (``corecast run --target-machine``).

Per region the NUMA prediction is k nodes times the product of two efficiencies
(speedup / k), each from what was measured here:
- memory: the two-level queueing model of Cho, Oh and Egger ("Online Scalability
  Characterization of Data-Parallel Programs on Many Cores", PACT 2016; ``model.numa``).  Its rates come from
  the memory counters of the first window the region dominates (at least half of the
  window's wall time), as the paper samples the start of each kernel; without counters
  (no PMU: VMs, containers) the DRAM request rate is fitted to the region's work time per
  call (stalls removed) at the team sizes it ran with inside one node, and the report
  marks llc/bus/mct as fitted.  With neither (one team size, no PMU) the memory traffic is
  unknown: the factor is left out and the basis says so.  Nothing is invented.
- synchronisation: the region's thread-level contention model at k nodes' cores relative
  to one node's (locks, barriers, imbalance: none of which the memory model sees).

The region's JSON event gains ``predicted_nodes``, ``fastest_nodes`` and ``numa`` (its
inputs, so that ``corecast numa --replay`` can predict again for another machine).

Standard library only (imported inside profiled programs).
"""
from __future__ import annotations

import math
import os

from ...io.fileio import json_text
from ..machine import numa as machines
from ..numa import Rates, SampleError, fit_rate, parse_sample, predict_nodes
from ..scaling import ScalingPrediction

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Any, Callable

    from ...recording.record import RegionSample

DOMINANT_SHARE = 0.5  # a window is a region's sample when the region ran this much of it


class NumaRegionPrediction(ScalingPrediction):
    """The runtime's NUMA answer for a region: speedup per node count, its counts given
    in cores; what the bridge copies into ``struct cc_region_prediction``."""

    __slots__ = ("cores", "speedup", "fastest", "basis", "json")

    def __init__(self, cores: list[int], speedup: list[float], fastest: int, basis: str,
                 members: str):
        self.cores, self.speedup, self.fastest = cores, speedup, fastest
        self.basis, self.json = basis, members

    count_unit = "cores"

    @property
    def counts(self) -> list[int]:
        return self.cores


class NumaState:
    """Per-process state: the target machine, the last cumulative counters and each
    region's counter sample (first dominant window)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.machine: machines.Machine | None = None
        self.error: str | None = None
        if self.path:
            try:
                self.machine = machines.load(self.path)
            except machines.MachineError as exc:
                self.error = str(exc)
        self.last: dict | None = None
        self.walls: dict[tuple[str, str], float] = {}
        self.samples: dict[tuple[str, str], dict] = {}

    def window(self, counts: dict | None, regions: list[RegionSample], window_s: float) -> None:
        """Credit this window's counter growth to the region that dominated it."""
        walls = {(r["name"], r["object"]): float(r["wall_s"]) for r in regions
                 if r["name"] != "process" and not r["nested"]}
        if not walls:  # plain threads: the process is the one region
            walls = {(r["name"], r["object"]): self.walls.get((r["name"], r["object"]), 0.0)
                     + window_s for r in regions if r["name"] == "process"}
        delta = {k: w - self.walls.get(k, 0.0) for k, w in walls.items()}
        self.walls = walls
        last, self.last = self.last, counts
        if not counts or not counts.get("measured") or not delta:
            return
        key = max(delta, key=delta.get)
        if key in self.samples or delta[key] < DOMINANT_SHARE * window_s:
            return
        diff = _difference(counts, last)
        if diff is not None:
            region = next(r for r in regions if (r["name"], r["object"]) == key)
            diff["cores"] = max(1, int(region["threads"]))
            self.samples[key] = diff


def _difference(now: dict, before: dict | None) -> dict | None:
    """Counter growth between two cumulative readings, as a raw-count sample.  Where a
    role has no event on this CPU family, it is derived (and the sample says from what):
    DRAM requests per node from the controllers' counts (the program as their only
    user), or from LLC misses spread evenly; LLC misses from DRAM requests."""
    def sub(a: Any, b: Any) -> Any:
        if isinstance(a, list):
            return [x - (b[i] if b else 0.0) for i, x in enumerate(a)]
        return a - (b or 0.0)

    measured = set(now["measured"])
    if "cycles" not in measured or not measured & {"bus", "mct", "llc"}:
        return None  # the W iteration needs cycles, the model some memory traffic
    b = before or {}
    out: dict = {"total_cycles": sub(now["cycles"], b.get("cycles")), "source": now.get("source", "")}
    llc = sub(now["llc_misses"], b.get("llc_misses")) if "llc" in measured else None
    mct = sub(now["mct"], b.get("mct")) if "mct" in measured else None
    if "bus" in measured:
        out["bus"] = sub(now["bus"], b.get("bus"))
    elif mct is not None:
        out["bus"], out["bus_from"] = list(mct), "mct"
    else:
        nodes = max(1, int(now.get("nodes") or 1))
        out["bus"], out["bus_from"] = [llc / nodes] * nodes, "llc"
    if llc is not None:
        out["llc"] = llc
    else:
        out["llc"], out["llc_from"] = sum(out["bus"]), "bus"  # reads and writes: an upper bound
    if mct is not None:
        out["mct"] = mct
    if out["total_cycles"] <= 0 or min(out["bus"]) < 0 or out["llc"] < 0:
        return None
    return out


def _spread(values: list[float], k: int) -> tuple[list[float], bool]:
    """Per-node values for a machine of ``k`` nodes: as they are when the shapes agree,
    else their total spread evenly (recorded on another machine)."""
    if len(values) == k:
        return list(values), False
    total = sum(values)
    return [total / k] * k, True


def rates_from_counts(counts: dict, machine: machines.Machine) -> tuple[Rates, list[str], list[str]]:
    """(rates, measured inputs, notes) from a raw-count sample of the runtime."""
    notes = []
    bus, moved = _spread(counts["bus"], machine.nodes)
    d = {"total_cycles": counts["total_cycles"], "bus": bus, "llc": counts["llc"]}
    if "mct" in counts:
        d["mct"], moved2 = _spread(counts["mct"], machine.nodes)
        moved = moved or moved2
    if moved:
        notes.append("per-node counts recorded on another node layout: spread evenly")
    c = machine.cores_per_node
    cores = max(1, int(counts.get("cores", c)))
    d["nodes"] = min(machine.nodes, max(1, math.ceil(cores / c)))
    d["cores"] = cores
    rates = parse_sample(d, machine)
    measured = ["cycles"] + [k for k in ("llc", "bus") if f"{k}_from" not in counts] + (
        ["mct"] if "mct" in counts else [])
    derived = {"mct": "memory-controller counts (the program as their only user)",
               "llc": "LLC misses spread evenly over the nodes", "bus": "DRAM requests"}
    for key in ("bus", "llc"):
        if f"{key}_from" in counts:
            notes.append(f"{key}: no event on this CPU, derived from {derived[counts[key + '_from']]}")
    return rates, measured, notes + rates.notes


def team_times(history: Any, node_cpus: int) -> list[tuple[int, float]]:
    """Work time per call (seconds, this region's waits removed) at each team size that
    fits in one node of this machine."""
    out = []
    for team, (calls, wall) in sorted(history.measured().items()):
        if team > node_cpus or calls <= 0:
            continue
        # One thread waits for nobody; with alternating team sizes the window's waits are
        # credited to one of them, so a lone thread's share would be someone else's.
        stalls = sum(history.stalls_by_team.get(team, {}).values()) if team > 1 else 0.0
        per_call = wall / calls - stalls / calls / team
        if per_call > 0:
            out.append((team, per_call))
    return out


def fitted_rates(times: list[tuple[int, float]], machine: machines.Machine) -> tuple[Rates, float]:
    """Rates from the fitted DRAM request rate: requests interleaved over all memory
    nodes, LLC misses equal to requests, a full node feeding each controller."""
    r, err = fit_rate(machine, times)
    k = machine.nodes
    share = [r / k] * k
    rates = Rates(list(share), list(share), [machine.cores_per_node * v for v in share],
                  ["llc, bus, mct fitted to work time per call at team sizes "
                   + ",".join(str(t) for t, _ in times)
                   + f" (rms log error {err:.3g}); memory interleaved over all nodes"])
    return rates, err


def sync_curve(predict: Callable[[int], Any], machine: machines.Machine) -> list[float]:
    """Thread-level speedup at k nodes' cores relative to one node's, k = 1..K."""
    c = machine.cores_per_node
    pred = predict(machine.nodes * c)
    pts = list(zip(pred.threads, pred.speedup))
    at = [interpolate(pts, k * c) for k in range(1, machine.nodes + 1)]
    return [s / at[0] for s in at]


def interpolate(points: list[tuple[int, float]], n: float) -> float:
    """Log-log interpolation of (count, speedup) points; the end segments extend them."""
    pts = sorted((float(x), max(float(y), 1e-12)) for x, y in points)
    if len(pts) == 1:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if n <= x1 or (x1, y1) == pts[-1]:
            if x0 == x1:
                return y1
            t = (math.log(n) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
    return pts[-1][1]


def node_prediction(machine: machines.Machine, inputs: dict, sync: list[float] | None) -> tuple[
        list[float], str, list[str], list[str], Rates | None, list[str]]:
    """Speedup per node count from recorded inputs (``{"counts": ...}`` or
    ``{"team_times": ...}`` or neither) and the sync factor; returns (speedup, basis,
    measured, fitted, rates, notes).  Shared by the runtime and ``corecast numa --replay``."""
    measured: list[str] = []
    fitted: list[str] = []
    notes: list[str] = []
    rates = None
    if inputs.get("counts"):
        rates, measured, notes = rates_from_counts(inputs["counts"], machine)
        basis = "two-level queue (counters)"
    elif len(inputs.get("team_times") or []) >= 2:
        rates, _ = fitted_rates([tuple(t) for t in inputs["team_times"]], machine)
        fitted = ["llc", "bus", "mct"]
        notes = list(rates.notes)
        basis = "two-level queue (fitted, no counters)"
    else:
        basis = "synchronisation only: memory traffic unknown (no counters, one team size)"
    if rates is not None:
        mem = predict_nodes(machine, rates).speedup
    else:
        mem = [float(k) for k in range(1, machine.nodes + 1)]
    if sync:
        # both factors contain the k-fold of more cores: combine their efficiencies
        speedup = [m * s / k for k, (m, s) in enumerate(zip(mem, sync), 1)]
        if rates is not None:
            basis += " x sync model"
    else:
        speedup = mem
    return speedup, basis, measured, fitted, rates, notes


def members(machine: machines.Machine, speedup: list[float], fastest: int, basis: str,
            measured: list[str], fitted: list[str], rates: Rates | None, notes: list[str],
            inputs: dict, sync: list[float] | None) -> str:
    """The JSON members the region's event gains (valid inside an object)."""
    c = machine.cores_per_node
    pred = [{"nodes": k, "cores": k * c, "speedup": round(s, 4)} for k, s in enumerate(speedup, 1)]
    numa = {"machine": machine.name, "basis": basis, "measured": measured, "fitted": fitted,
            "rates": None if rates is None else {k: [float(f"{v:.4g}") for v in vals]
                                                  for k, vals in rates.to_dict().items()},
            "notes": notes, "inputs": inputs,
            "sync": None if sync is None else [round(s, 4) for s in sync]}
    text = json_text({"predicted_nodes": pred, "fastest_nodes": fastest, "numa": numa})
    return text[1:-1]


def predict_region_nodes(state: NumaState, region: RegionSample, history: Any, numa_counts: dict | None,
                         predict_threads: Callable[[int], Any],
                         predict_bound: Callable[[int], Any] | None = None,
                         limit: int = 4095) -> NumaRegionPrediction | None:
    """The region's node-count prediction on the target machine (None without one).

    ``predict_threads(n)`` is the thread-level contention model up to n threads.  Its
    fork/join term is fitted to whatever slowed the measured team down, memory included;
    once the memory model has rates, ``predict_bound(n)`` (serial work and imbalance
    only) stands in for it so that the same slowdown is not counted twice."""
    machine = state.machine
    if machine is None:
        return None
    from ..numa import preferred_nodes

    key = (region["name"], region["object"])
    node_cpus = (numa_counts or {}).get("node_cpus") or [os.cpu_count() or 1]
    inputs: dict = {}
    if key in state.samples:
        inputs["counts"] = state.samples[key]
    elif history is not None:
        times = team_times(history, min(node_cpus))
        if len(times) >= 2:
            inputs["team_times"] = [[t, float(f"{v:.6g}")] for t, v in times]
    predictor = predict_bound if predict_bound is not None and inputs else predict_threads
    try:
        sync = sync_curve(predictor, machine)
    except (ValueError, ZeroDivisionError, ArithmeticError):
        sync = None
    try:
        speedup, basis, measured, fitted, rates, notes = node_prediction(machine, inputs, sync)
    except SampleError as exc:
        inputs.pop("counts", None)
        speedup, basis, measured, fitted, rates, notes = node_prediction(machine, inputs, sync)
        notes.append(f"counter sample not usable: {exc}")
    fastest = preferred_nodes(speedup)  # no efficiency asked: the best node count
    text = members(machine, speedup, fastest, basis, measured, fitted, rates, notes, inputs, sync)
    if len(text) > limit:  # never cut JSON in the middle: drop the bulky inputs instead
        inputs = {"dropped": "too large for the event"}
        text = members(machine, speedup, fastest, basis, measured, fitted, rates, notes, inputs, sync)
    label = basis + (", fitted: " + ",".join(fitted) if fitted else "")
    return NumaRegionPrediction([k * machine.cores_per_node for k in range(1, len(speedup) + 1)],
                                speedup, fastest, label, text)
