"""Where the process prediction learns what an OpenCL host's runtime did: the OpenCL layer
(above this one) registers a function that says how long its devices were busy, how long
the program waited in blocking OpenCL calls, and which threads were the runtime's, not the
program's; ``bridge`` asks it at the exit prediction.  A slot filled from above, so the
runtime never imports ``opencl``."""
from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable


class HostSeen:
    """What the OpenCL layer saw of its host at exit.

    ``device_s``: busy seconds of the devices that are not CPUs (a CPU device's work is
    the host's own threads); ``wait_s``: seconds the program waited in blocking OpenCL
    calls; ``runtime_threads``: live threads the interpreter did not start (the OpenCL
    runtime's and driver's, a BLAS library's pool: not the program's code), with their CPU
    seconds and their pthread waits, acquisitions and contended acquisitions per stall
    category (``recording.abi.STALLS`` names; empty without the preload library);
    ``program_cpu_s``: the CPU seconds of each live thread the interpreter started."""

    __slots__ = ("device_s", "wait_s", "runtime_threads", "runtime_cpu_s", "runtime_waits_s",
                 "runtime_acquisitions", "runtime_contended", "program_cpu_s")

    def __init__(self, device_s: float, wait_s: float, runtime_threads: int = 0, runtime_cpu_s: float = 0.0,
                 runtime_waits_s: dict | None = None, runtime_acquisitions: dict | None = None,
                 runtime_contended: dict | None = None, program_cpu_s: list[float] | None = None) -> None:
        self.device_s, self.wait_s = float(device_s), float(wait_s)
        self.runtime_threads, self.runtime_cpu_s = int(runtime_threads), float(runtime_cpu_s)
        self.runtime_waits_s = dict(runtime_waits_s or {})
        self.runtime_acquisitions = dict(runtime_acquisitions or {})
        self.runtime_contended = dict(runtime_contended or {})
        self.program_cpu_s = [float(c) for c in program_cpu_s or []]


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
