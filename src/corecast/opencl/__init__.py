"""Kernel-level measurement of pyopencl programs (the runtime's OpenCL part).

``corecast run -- python prog.py`` instruments pyopencl automatically; so do
``python -m corecast.opencl prog.py ARGS`` and, from inside a program,
``corecast.opencl.instrument()``.  Every kernel launch is timed from its profiling events;
each kernel's first 200 ms of device time is its sample, joined with the CPU time and
pthread waits of the OpenCL runtime's worker threads; at exit a table goes to stderr and,
with ``CORECAST_OUTPUT``, one ``kernel`` JSON line per kernel (see docs/opencl.md).

Importing this package is cheap (standard library only); pyopencl is never imported by
corecast: measurement starts when the program imports it.
"""
from __future__ import annotations

from ..runtime.autoload import autoload_dir, autoload_env
from .hook import instrument, profiler, uninstrument

__all__ = ["instrument", "uninstrument", "profiler", "autoload_dir", "autoload_env"]
