"""Tables of predicted speedup per NUMA node count: ``corecast numa`` for one sample and
for the regions of a recording replayed (``tools.replay.replay_nodes``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import counted
from ..io.fileio import printable

if TYPE_CHECKING:
    from ..model.machine.numa import Machine


def node_table(rows: list[dict]) -> str:
    lines = ["  nodes  cores  speedup"]
    lines += [f"  {r['nodes']:5d}  {r['cores']:5d}  {r['speedup']:7.2f}" for r in rows]
    return "\n".join(lines)


def _machine_line(machine: Machine) -> str:
    return (f"machine: {machine.name} ({machine.nodes} node{'s' if machine.nodes != 1 else ''} x "
            f"{machine.cores_per_node} core{'s' if machine.cores_per_node != 1 else ''})")


def sample_report(machine: Machine, prediction: dict, notes: list[str], efficiency: float | None) -> str:
    """``prediction``: ``NumaPrediction.to_dict()``, with ``co_runner`` when one ran beside."""
    c = machine.cores_per_node
    lines = [_machine_line(machine)]
    if "co_runner" in prediction:
        lines.append(f"co-runner on nodes {','.join(map(str, prediction['co_runner']['node_ids']))}")
    lines += ["speedup relative to the program alone on one node:", node_table(prediction["predictions"])]
    k = prediction["preferred_nodes"]
    # The best node count is predict's "fastest"; --efficiency asks for a count of its own.
    if efficiency:
        lines.append(f"preferred: {counted(k, 'node')}, {k * c} cores (fewest within {efficiency:.0%} of the fastest)")
        f = prediction.get("fastest_nodes")
        if f is not None and f != k:
            lines.append(f"fastest: {counted(f, 'node')}, {f * c} cores")
    else:
        lines.append(f"fastest: {counted(k, 'node')}, {k * c} cores")
    lines += [f"note: {note}" for note in notes]
    return "\n".join(lines) + "\n"


def replay_report(machine: Machine, regions: list[dict], efficiency: float | None = None) -> str:
    """One line of speedups per replayed region, then its basis.  Its node count is the
    fastest, or with ``efficiency`` the preferred one (as ``sample_report`` names them)."""
    lines = [_machine_line(machine)]
    label = f"preferred (within {efficiency:.0%})" if efficiency else "fastest"
    for r in regions:
        curve = "  ".join(f"{p['nodes']}:{p['speedup']:.2f}" for p in r["predictions"])
        fastest = r.get("fastest_nodes")
        beside = f" (fastest {fastest})" if efficiency and fastest not in (None, r["preferred_nodes"]) else ""
        lines.append(printable(f"{r['name']} ({r['object']}): {curve}  {label} {r['preferred_nodes']}{beside}"))
        lines.append(f"  basis: {r['basis']}" + (f"; fitted: {','.join(r['fitted'])}" if r["fitted"] else ""))
    return "\n".join(lines) + "\n"
