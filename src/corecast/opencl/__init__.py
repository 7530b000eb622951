"""Kernel-level measurement of pyopencl programs (the runtime's OpenCL part).

``corecast run -- python prog.py`` instruments pyopencl automatically; so do
``python -m corecast.opencl prog.py ARGS`` and, from inside a program,
``corecast.opencl.instrument()``.  Every kernel launch is timed from its profiling events;
each kernel's first 200 ms of device time is its sample, joined with the CPU time and
pthread waits of the OpenCL runtime's worker threads; at exit a table goes to stderr and,
with ``CORECAST_OUTPUT``, one ``kernel`` JSON line per kernel (see README).

Importing this package is cheap (standard library only); pyopencl is never imported by
corecast: measurement starts when the program imports it.
"""
from __future__ import annotations

from .hook import instrument, profiler, uninstrument

__all__ = ["instrument", "uninstrument", "profiler", "autoload_dir", "autoload_env"]


def autoload_dir() -> str:
    """The folder whose ``sitecustomize`` instruments Python programs ``corecast run`` starts."""
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_autoload")


def autoload_env(env: dict) -> dict:
    """``env`` with the autoload folder first on PYTHONPATH: Python processes started with
    it (their Python children too) are instrumented while the preload library is in their
    LD_PRELOAD or ``CORECAST_OPENCL=1``; ``CORECAST_OPENCL=0`` turns it off."""
    import os

    folder = autoload_dir()
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != folder]
    env["PYTHONPATH"] = os.pathsep.join([folder] + parts)
    return env
