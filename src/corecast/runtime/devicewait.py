"""Where the process prediction learns what an OpenCL host's runtime did: the OpenCL layer
(above this one) registers a function that says how long its devices were busy, how long
the program waited in blocking OpenCL calls, and which threads were the runtime's, not the
program's (a ``recording.kernelstats.HostSeen``); ``bridge`` asks it at the exit
prediction.  A slot filled from above, so the runtime never imports ``opencl``."""
from __future__ import annotations

from ..recording.kernelstats import HostSeen

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable

_source: Callable[[], HostSeen | None] | None = None


def register(source: Callable[[], HostSeen | None] | None) -> None:
    """Set (None: clear) the function ``measured`` asks."""
    global _source
    _source = source


def measured() -> HostSeen | None:
    """What the registered source saw; None without one or when it fails."""
    source = _source
    if source is None:
        return None
    try:
        seen = source()
    except Exception:  # the exit report must not fail for it
        return None
    return seen if isinstance(seen, HostSeen) else None
