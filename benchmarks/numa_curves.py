"""Predicted node-count curves of three synthetic programs on a machine description
(default: the paper's Opteron 6380 preset): compute-bound, balanced and memory-bound,
alone and next to a memory-heavy co-runner on two nodes.

    python benchmarks/numa_curves.py [--machine opteron6380] [--plot curves.png]
"""
from __future__ import annotations

import argparse

from corecast.model.machine.numa import load
from corecast.model.numa import Rates, predict_nodes

# LLC misses per core per work cycle to each memory node (interleaved memory); DRAM
# requests 25% above them (writes), a full node feeding each controller.
PROGRAMS = {"compute-bound": 0.0, "balanced": 0.012, "memory-bound": 0.04}
CO_RUNNER = 0.08


def rates(machine, r: float) -> Rates:
    k, c = machine.nodes, machine.cores_per_node
    return Rates([r / k] * k, [1.25 * r / k] * k, [c * 1.25 * r / k] * k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--machine", default="opteron6380")
    ap.add_argument("--plot", metavar="OUT.png")
    args = ap.parse_args()
    m = load(args.machine)
    co = [(rates(m, CO_RUNNER), 2)] if m.nodes > 2 else []
    print(f"{m.name}: speedup at 1..{m.nodes} nodes relative to one node alone")
    curves = {}
    for name, r in PROGRAMS.items():
        alone = predict_nodes(m, rates(m, r))
        curves[name] = alone.speedup
        row = " ".join(f"{s:5.2f}" for s in alone.speedup)
        print(f"{name:14s} llc={r:<7g} {row}   preferred {alone.preferred}")
        if co:
            shared = predict_nodes(m, rates(m, r), co)
            row = " ".join(f"{s:5.2f}" for s in shared.speedup)
            print(f"{'  + co-runner':14s} {'':11s} {row}   preferred {shared.preferred}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        ks = list(range(1, m.nodes + 1))
        for name, s in curves.items():
            ax.plot(ks, s, marker="o", label=name)
        ax.set_xlabel(f"nodes ({m.cores_per_node} cores each)")
        ax.set_ylabel("speedup vs one node")
        ax.set_title(m.name, fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=100)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
