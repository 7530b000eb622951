"""The OpenCL instrumentation's warning line, apart from ``hook`` so that the profiler and
the report can warn without importing the module that installs them."""
from __future__ import annotations


def warn(message: str) -> None:
    """One ``corecast: warning: opencl: ...`` line on the original stderr (never raises)."""
    from ..runtime import channel

    channel.warn("opencl: " + message)
