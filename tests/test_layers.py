"""The package's import graph (every import, also those inside functions) has no circle
and no arrow running up the layers ARCHITECTURE.md draws; no module is over 400 lines
without its docstring saying why."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "corecast"
# Entry points, not modules other code imports: the sitecustomize a launched Python runs.
ENTRY_POINTS = {"corecast.runtime._autoload.sitecustomize"}
# The recording (recording/: its schema and decoders, the C contract) is the lowest layer:
# the models, tools and views read it; it reads nothing of corecast's but errors.
RECORDING = ("corecast.recording",)
MODEL_CORE = ("corecast.errors",) + RECORDING + ("corecast.model",)
VIEWS = ("corecast.views",)
# The sweep result type (io/sweepresult) is I/O: readers and views read it; sweep/ runs programs.
IO = ("corecast.io",)
SWEEP = ("corecast.sweep",)
# Offline tools (replay, merge, calibrate, the recording's reader): above the runtime, below
# the views that render their results.
TOOLS = ("corecast.tools",)
# The in-process model (model/runtime/, part of the model core) takes what the plumbing
# (runtime/: bridge, launcher, channel) reads; it never imports the plumbing.
RUNTIME_MODEL = ("corecast.model.runtime",)
# The runtime's one-sample contention model, which views only render.
CONTENTION_MODEL = ("corecast.model.runtime.contention", "corecast.model.runtime.teamcurve",
                    "corecast.model.runtime.lockqueue")
ABOVE_RUNTIME = ("corecast.opencl", "corecast.cli") + SWEEP + TOOLS + VIEWS


def _modules() -> dict[str, Path]:
    mods = {}
    for path in SRC.rglob("*.py"):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    edges = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                subs = [f"{base}.{a.name}" for a in node.names]
                # ``from . import x`` of a submodule imports x, not the package's names
                targets = subs if all(t in mods for t in subs) else [base] + subs
            else:
                continue
            out.update(t for t in targets if t in mods and t != name)
        edges[name] = out
    return edges


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_no_import_circles():
    edges = _graph()
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(edges[node]):
            visit(nxt, path + [node])
        done.add(node)

    for name in sorted(edges):
        visit(name, [])


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """Every import in ``edges`` that runs up the layer table, one line each (also what
    ``benchmarks/module_graph.py`` counts)."""
    up = []
    for a, targets in edges.items():
        if a in ENTRY_POINTS:
            continue
        for b in targets:
            if _within(a, MODEL_CORE) and not _within(b, MODEL_CORE + ("corecast.io.fileio",)):
                up.append(f"model core {a} -> {b}")
            if _within(a, RECORDING) and not _within(b, RECORDING + ("corecast.errors",)):
                up.append(f"recording {a} -> {b}")
            if a.startswith("corecast.runtime.") and _within(b, ABOVE_RUNTIME) and not _within(a, VIEWS):
                up.append(f"runtime {a} -> {b}")
            if _within(a, RUNTIME_MODEL) and _within(b, ("corecast.runtime",)):
                up.append(f"runtime model {a} -> runtime plumbing {b}")
            if _within(a, VIEWS) and _within(b, ("corecast.model.curve.prediction", "corecast.model.curve.methods",
                                                 "corecast.runtime.bridge") + CONTENTION_MODEL):
                up.append(f"view {a} -> model {b}")
            if _within(a, IO) and not _within(b, MODEL_CORE + IO):
                up.append(f"I/O {a} -> {b}")
            if _within(a, VIEWS) and _within(b, SWEEP + ("corecast.cli",)) and not _within(b, IO):
                up.append(f"view {a} -> {b}")
            if _within(a, TOOLS) and _within(b, VIEWS + SWEEP + ("corecast.cli", "corecast.opencl")):
                up.append(f"tool {a} -> {b}")
    return sorted(up)


def test_no_arrow_runs_up():
    up = upward_imports(_graph())
    assert not up, "\n".join(up)


def test_models_neither_print_nor_read_the_environment_nor_name_cli_flags():
    found = []
    for name, path in _modules().items():
        if not _within(name, MODEL_CORE + RUNTIME_MODEL):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                found.append(f"{name}:{node.lineno}: print")
            elif isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                found.append(f"{name}:{node.lineno}: reads the environment")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith("--") and node.value[2:3].isalpha():
                found.append(f"{name}:{node.lineno}: names a CLI flag {node.value.split()[0]}")
            elif isinstance(node, ast.JoinedStr) and node.values and \
                    isinstance(node.values[0], ast.Constant) and str(node.values[0].value).startswith("--"):
                found.append(f"{name}:{node.lineno}: names a CLI flag")
    assert not found, "\n".join(found)


def test_modules_under_400_lines_or_say_why():
    long = []
    for name, path in sorted(_modules().items()):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > 400 and "over 400 lines" not in (ast.get_docstring(ast.parse(text)) or ""):
            long.append(f"{name}: {lines} lines, no reason in its docstring")
    assert not long, "\n".join(long)
