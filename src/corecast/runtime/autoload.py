"""The environment that makes the Python programs ``corecast run`` starts measure their
pyopencl kernels: ``_autoload/`` first on PYTHONPATH.  Its ``sitecustomize`` is a program
entry point, not a module of this package: it starts ``corecast.opencl.hook`` in the
launched process, so this plumbing layer imports nothing above it.  Standard library
only: ``corecast.opencl`` re-exports these names and is imported by every such process."""
from __future__ import annotations

import os


def autoload_dir() -> str:
    """The folder whose ``sitecustomize`` instruments Python programs ``corecast run`` starts."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autoload")


def autoload_env(env: dict) -> dict:
    """``env`` with the autoload folder first on PYTHONPATH: Python processes started with
    it (their Python children too) are instrumented while the preload library is in their
    LD_PRELOAD or ``CORECAST_OPENCL=1``; ``CORECAST_OPENCL=0`` turns it off."""
    folder = autoload_dir()
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != folder]
    env["PYTHONPATH"] = os.pathsep.join([folder] + parts)
    return env
