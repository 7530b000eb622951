"""Machine descriptions for the NUMA model (Cho, Oh and Egger, "Online Scalability
Characterization of Data-Parallel Programs on Many Cores", PACT 2016): nodes, cores per node, the
uncongested bus delay between every CPU node and memory node, the controller delay and
the order in which a program takes nodes.

JSON form (``corecast machine show`` prints it)::

    {"name": ..., "cores_per_node": c, "nodes": K,
     "bus_delay": [[D_b[n][m], ...], ...],      # K x K, CPU node n -> memory node m
     "controller_delay": D_m,
     "fill_order": [node ids]}                  # optional, default 0..K-1

Instead of ``bus_delay`` a file may give ``hops`` (K x K hop counts) and
``bus_delay_by_hops`` (the delay for 0, 1, 2, ... hops), as the NUMA paper's Table 3 does.
Delays are in the model's time unit (the paper's: cycles); a sample's rates must be per
the same unit of work.

Standard library only: the runtime model loads machine files inside profiled programs,
through corecast's one reader (opened once, size-limited), so that a hostile file costs
the program one warning.
"""
from __future__ import annotations

import math
import os

from ...errors import InputError, article
from ...io.fileio import parse_json, read_text, shown
from .sysfs import distances, topology

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Any

PRESET_DIR = os.path.join(os.path.dirname(__file__), "presets")  # os.path: pathlib costs a profiled program 3 ms


class MachineError(ValueError):
    """A machine description that cannot be used, with a one-line reason."""


class Machine:
    """A validated machine description (see the module docstring)."""

    __slots__ = ("name", "cores_per_node", "nodes", "bus_delay", "controller_delay", "fill_order")

    def __init__(self, name: str, cores_per_node: int, nodes: int, bus_delay: list[list[float]],
                 controller_delay: float, fill_order: list[int] | None = None):
        self.name = name
        self.cores_per_node = cores_per_node
        self.nodes = nodes
        self.bus_delay = bus_delay
        self.controller_delay = controller_delay
        self.fill_order = list(range(nodes)) if fill_order is None else fill_order

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "cores_per_node": self.cores_per_node, "nodes": self.nodes,
                "bus_delay": self.bus_delay, "controller_delay": self.controller_delay,
                "fill_order": self.fill_order}

    def to_json(self) -> str:
        import json  # here: a profiled program's exit reads machines, never writes one

        rows = ",\n    ".join(json.dumps(r) for r in self.bus_delay)
        head = json.dumps({"name": self.name, "cores_per_node": self.cores_per_node,
                           "nodes": self.nodes}, indent=2)[:-2]
        return (f"{head},\n  \"bus_delay\": [\n    {rows}\n  ],\n"
                f"  \"controller_delay\": {json.dumps(self.controller_delay)},\n"
                f"  \"fill_order\": {json.dumps(self.fill_order)}\n}}\n")


# Bounds on counts: Linux has at most 1024 NUMA nodes; larger values are typing errors
# (and a huge integer would overflow the model's floating-point arithmetic).
MAX_NODES = 1024
MAX_CORES_PER_NODE = 1 << 16


def _got(value: Any, limit: int = 40) -> str:
    """``value`` for a message: its repr, cut short (a hostile file's value may be huge)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10 ** limit else "a huge integer"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _number(value: Any, what: str, positive: bool = False) -> float:
    try:
        finite = (not isinstance(value, bool) and isinstance(value, (int, float))
                  and math.isfinite(value))
    except OverflowError:  # an integer beyond float range
        finite = False
    if not finite:
        raise MachineError(f"{what} must be a finite number, got {_got(value)}")
    if value < 0 or (positive and value == 0):
        raise MachineError(f"{what} must be {'> 0' if positive else '>= 0'}, got {_got(value)}")
    return float(value)


def _count(value: Any, what: str, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise MachineError(f"{what} must be a positive integer (at most {maximum}), got {_got(value)}")
    return value


def _matrix(value: Any, k: int, what: str) -> list[list[Any]]:
    if not isinstance(value, list) or len(value) != k or any(
            not isinstance(r, list) or len(r) != k for r in value):
        raise MachineError(f"{what} must be {article(k)} {k} x {k} matrix (one row per node)")
    return value


def from_dict(d: Any) -> Machine:
    """Validate a parsed machine description; raises MachineError with a one-line reason."""
    if not isinstance(d, dict):
        raise MachineError("a machine description is a JSON object")
    known = {"name", "cores_per_node", "nodes", "bus_delay", "hops", "bus_delay_by_hops",
             "controller_delay", "fill_order", "source", "distances"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise MachineError(f"unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    for key in ("cores_per_node", "nodes", "controller_delay"):
        if key not in d:
            raise MachineError(f"missing field {key!r}")
    c = _count(d["cores_per_node"], "cores_per_node", MAX_CORES_PER_NODE)
    k = _count(d["nodes"], "nodes", MAX_NODES)
    dm = _number(d["controller_delay"], "controller_delay", positive=True)
    both = [key for key in ("hops", "bus_delay_by_hops") if key in d]
    if "bus_delay" in d and both:  # one would be dropped unseen: which delays were meant?
        raise MachineError(f"bus_delay and {' and '.join(both)} both give the bus delays: give bus_delay, "
                           "or hops with bus_delay_by_hops")
    if "bus_delay" in d:
        rows = _matrix(d["bus_delay"], k, "bus_delay")
        bus = [[_number(v, f"bus_delay[{n}][{m}]", positive=True) for m, v in enumerate(r)]
               for n, r in enumerate(rows)]
    elif "hops" in d and "bus_delay_by_hops" in d:
        by_hops = d["bus_delay_by_hops"]
        if not isinstance(by_hops, list) or not by_hops:
            raise MachineError("bus_delay_by_hops must be a list of delays for 0, 1, ... hops")
        by_hops = [_number(v, f"bus_delay_by_hops[{i}]", positive=True) for i, v in enumerate(by_hops)]
        bus = []
        for n, r in enumerate(_matrix(d["hops"], k, "hops")):
            row = []
            for m, h in enumerate(r):
                if isinstance(h, bool) or not isinstance(h, int) or not 0 <= h < len(by_hops):
                    raise MachineError(f"hops[{n}][{m}] must be an integer 0..{len(by_hops) - 1}")
                row.append(by_hops[h])
            bus.append(row)
    else:
        raise MachineError("missing field 'bus_delay' (or 'hops' with 'bus_delay_by_hops')")
    order = d.get("fill_order")
    if order is None:
        order = list(range(k))
    elif (not isinstance(order, list) or any(type(v) is not int for v in order)
          or sorted(order) != list(range(k))):
        raise MachineError(f"fill_order must list every node id 0..{k - 1} once")
    name = d.get("name", "machine")
    if not isinstance(name, str):
        raise MachineError("name must be a string")
    if not name.isprintable():  # it is shown on terminals: no escape sequences
        raise MachineError("name must be printable text (no control characters)")
    return Machine(name, c, k, bus, dm, list(order))


def presets() -> list[str]:
    """Names of the machine descriptions shipped with corecast."""
    return sorted(name[:-5] for name in os.listdir(PRESET_DIR) if name.endswith(".json"))


def path_of(spec: str | os.PathLike) -> str:
    """The file ``spec`` names: itself, or a preset's file when no such file exists."""
    path = os.fspath(spec)
    if not os.path.exists(path) and path in presets():
        path = os.path.join(PRESET_DIR, f"{path}.json")
    return path


def load(spec: str | os.PathLike) -> Machine:
    """A machine from a JSON file, or a preset by name (``corecast machine presets``)."""
    return _machine(spec, _read(spec))


def _read(spec: str | os.PathLike) -> Any:
    """The parsed JSON of the file or preset ``spec``; MachineError with one line."""
    path = path_of(spec)
    if not os.path.exists(path) and str(spec) != "-":
        raise MachineError(f"{shown(spec)}: no such file or preset (presets: {', '.join(presets())})")
    try:
        return parse_json(read_text(path), spec, "JSON")
    except InputError as exc:  # already names the file
        raise MachineError(str(exc)) from None


def _machine(spec: str | os.PathLike, data: Any) -> Machine:
    try:
        return from_dict(data)
    except MachineError as exc:
        raise MachineError(f"{shown(spec)}: {exc}") from None


# ---- this machine, from sysfs ----------------------------------------------------------
def read_topology(sysfs: str | os.PathLike = "/sys") -> tuple[list[list[int]], list[list[int]]]:
    """(online CPUs per node, SLIT distance matrix) of the nodes that have CPUs; a kernel
    without NUMA support counts as one node holding every online CPU."""
    nodes = {n: c for n, c in topology(str(sysfs)).items() if c}
    ids = sorted(nodes)
    return [nodes[n] for n in ids], distances(str(sysfs), ids)


def hop_classes(distances: list[list[int]]) -> list[list[int]]:
    """Distances mapped to hop classes: the local distance is 0 hops, and each larger
    distinct value one more hop (SLIT values are relative, not hop counts)."""
    values = sorted({v for r in distances for v in r})
    local = min(r[i] for i, r in enumerate(distances))
    classes = [v for v in values if v > local]
    return [[0 if v <= local else 1 + classes.index(v) for v in r] for r in distances]


def load_delays(spec: str | os.PathLike) -> Machine | dict:
    """Delays for ``detect``: a preset or machine file, or a calibration file
    ``{"bus_delay_by_hops": [...], "controller_delay": D_m}``."""
    data = _read(spec)  # once: the file may be a FIFO
    if not isinstance(data, dict) or set(data) - {"bus_delay_by_hops", "controller_delay", "source"}:
        return _machine(spec, data)
    try:  # validated as a one-node machine
        from_dict({"cores_per_node": 1, "nodes": 1, "hops": [[0]], **data})
    except MachineError as bad:
        raise MachineError(f"{shown(spec)}: {bad}") from None
    return data


def detect(sysfs: str | os.PathLike = "/sys", delays: Machine | dict | None = None,
           name: str | None = None) -> Machine:
    """This machine's description: nodes and cores from sysfs, delays per hop class from
    ``delays`` (a preset/calibration machine whose delays are taken by hop count, or a dict
    ``{"bus_delay_by_hops": [...], "controller_delay": D_m}``).  Hop classes beyond the
    ones ``delays`` knows continue its last step."""
    cpus, dist = read_topology(sysfs)
    hops = hop_classes(dist)
    if delays is None:
        delays = load("opteron6380")
    if isinstance(delays, Machine):
        by_hops = _delays_by_hops(delays)
        dm = delays.controller_delay
    else:
        by_hops = [float(v) for v in delays["bus_delay_by_hops"]]
        dm = float(delays["controller_delay"])
    need = max(max(r) for r in hops) + 1
    while len(by_hops) < need:
        step = by_hops[-1] - by_hops[-2] if len(by_hops) > 1 else by_hops[-1]
        by_hops.append(by_hops[-1] + step)
    # Nodes with fewer CPUs (offline cores) are still nodes; the model takes the largest.
    machine = from_dict({"name": name or f"this machine ({len(cpus)} node{'' if len(cpus) == 1 else 's'})",
                         "cores_per_node": max(len(c) for c in cpus), "nodes": len(cpus),
                         "hops": hops, "bus_delay_by_hops": by_hops, "controller_delay": dm})
    return machine


def _delays_by_hops(machine: Machine) -> list[float]:
    """The distinct bus delays of ``machine`` in increasing order: 0 hops, 1 hop, ..."""
    return sorted({v for r in machine.bus_delay for v in r})
