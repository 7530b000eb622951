"""Where the process prediction learns that the host waits on an OpenCL device: the
OpenCL layer (above this one) registers a function that says how long its devices were
busy and how long the program waited in blocking OpenCL calls; ``bridge`` asks it at the
exit prediction.  A slot filled from above, so the runtime never imports ``opencl``."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable

# () -> (non-CPU devices' busy seconds, seconds the program waited in OpenCL calls), or None
_source: Callable[[], tuple[float, float] | None] | None = None


def register(source: Callable[[], tuple[float, float] | None] | None) -> None:
    """Set (None: clear) the function ``measured`` asks."""
    global _source
    _source = source


def measured() -> tuple[float, float] | None:
    """(device busy s, host wait s) from the registered source; None without one or when it fails."""
    source = _source
    if source is None:
        return None
    try:
        return source()
    except Exception:  # the exit report must not fail for it
        return None
