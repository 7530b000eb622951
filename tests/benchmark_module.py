"""Loading a benchmark script (benchmarks/NAME.py, or a folder's: "corpus16/take_in") in a
test: one way for every test."""
from __future__ import annotations

import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Iterator

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextmanager
def benchmark_module(name: str) -> Iterator[ModuleType]:
    """benchmarks/NAME.py as module NAME (its file name's stem), registered in sys.modules
    (dataclasses look their module up there), with benchmarks/ on sys.path while the block
    runs (the scripts import their siblings, some of them lazily)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        stem = Path(name).name
        spec = importlib.util.spec_from_file_location(stem, BENCHMARKS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[stem] = mod
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.path.remove(str(BENCHMARKS))


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/NAME.py loaded as ``benchmark_module`` loads it, for use after loading."""
    with benchmark_module(name) as mod:
        return mod
