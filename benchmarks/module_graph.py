"""The package's module graph in figures (issue #39's closing note: before and after):
modules, how many sit at the package's top level, levels (the longest import chain), the
imports that run up the layer table, and import cycles.

    python benchmarks/module_graph.py [--list]

The graph and the layer table are ``tests/test_layers.py``'s (every import, also those
inside functions): this script only counts what that test checks, so the two cannot drift.
It lives with the benchmarks, not in the package, because it measures the code rather than
a program: nothing installed imports it.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_layers", TESTS / "test_layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan 1972),
    each sorted: every import cycle lies within one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for v in sorted(edges):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest import chain a -> b -> ... (modules in import order); a cycle's modules
    count once, as one node of the condensed graph."""
    comp = {v: v for v in edges}
    for c in cycles(edges):
        for v in c:
            comp[v] = c[0]
    dag: dict[str, set[str]] = {}
    for a, targets in edges.items():
        dag.setdefault(comp[a], set()).update(comp[b] for b in targets if comp[b] != comp[a])
    best: dict[str, list[str]] = {}

    def chain(v: str) -> list[str]:
        if v not in best:
            tails = [chain(w) for w in sorted(dag.get(v, ()))]
            best[v] = [v] + max(tails, key=len, default=[])
        return best[v]

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        return max((chain(v) for v in sorted(dag)), key=len, default=[])
    finally:
        sys.setrecursionlimit(limit)


def summary(edges: dict[str, set[str]], upward: list[str], package: str = "corecast") -> dict:
    """The figures of one graph (``upward``: the layer test's lines for it)."""
    top = [m for m in edges if m.count(".") == 1 and m.startswith(package + ".")]
    chain = longest_chain(edges)
    return {"modules": len(edges), "top_level": len(top), "top_level_names": sorted(top),
            "levels": len(chain), "chain": chain, "upward": upward, "cycles": cycles(edges)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="also list the top-level modules")
    args = ap.parse_args(argv)
    layers = _layers()
    edges = layers._graph()
    s = summary(edges, layers.upward_imports(edges))
    print(f"modules: {s['modules']} ({s['top_level']} at the package's top level)")
    if args.list:
        print("  " + " ".join(m.split(".", 1)[1] for m in s["top_level_names"]))
    print(f"levels: {s['levels']} (longest import chain: {' -> '.join(s['chain'])})")
    print(f"upward imports: {len(s['upward'])}")
    for line in s["upward"]:
        print("  " + line)
    print(f"import cycles: {len(s['cycles'])}")
    for c in s["cycles"]:
        print("  " + ", ".join(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
