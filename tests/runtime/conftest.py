"""Fixtures for the runtime tests: gcc, compiling small C programs, the preload library."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from corecast._native import PRELOAD

from .helpers import TIMEOUT


@pytest.fixture(scope="session")
def gcc() -> str:
    path = shutil.which("gcc")
    if path is None:
        pytest.skip("gcc is not installed")
    return path


def openmp_works(gcc: str, folder: Path) -> bool:
    src = folder / "_openmp_probe.c"
    src.write_text("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
    r = subprocess.run([gcc, "-fopenmp", "-o", str(folder / "_openmp_probe"), str(src)],
                       capture_output=True, timeout=TIMEOUT)
    return r.returncode == 0


@pytest.fixture(scope="session")
def build(gcc, tmp_path_factory):
    """``build(name, source, *flags)``: compiles C text (or a Path) into a session folder."""
    folder = tmp_path_factory.mktemp("bin")

    def _build(name: str, source, *flags: str) -> Path:
        if isinstance(source, Path):
            src = source
        else:
            src = folder / f"{name}.c"
            src.write_text(source)
        out = folder / name
        if not out.exists():
            r = subprocess.run([gcc, "-O2", "-o", str(out), str(src), *flags], capture_output=True,
                               text=True, timeout=TIMEOUT)
            if r.returncode != 0:
                if "-fopenmp" in flags and not openmp_works(gcc, folder):
                    pytest.skip("gcc cannot build OpenMP programs here (no libgomp)")
                pytest.fail(f"gcc failed for {name}:\n{r.stderr}")
        return out

    return _build


@pytest.fixture(scope="session")
def lib() -> Path:
    if not os.path.isfile(PRELOAD):
        pytest.skip(f"the preload library is not built ({PRELOAD})")
    return Path(PRELOAD)
