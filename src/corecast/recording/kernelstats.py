"""The records of what the OpenCL layer measures: one kernel's launches and its sample
window (``KernelStats``), what ``opencl.profile`` fills while the program runs, what
``model.runtime.kernelmodel`` reads, and what ``record.kernel_from_json`` rebuilds from a
recorded ``kernel`` line for `corecast replay`; and what it saw of its host at exit
(``HostSeen``, handed to the process prediction through ``runtime.devicewait``).  They
live here, below both, so that reading a recording does not import the profiler and the
model does not import the plumbing.
(Plain classes with __slots__: this is on every instrumented program's path.)"""
from __future__ import annotations

TICK_S = 0.002  # snapshot interval of a sampled launch (opencl.profile's thread)


class Sample:
    """What the window of one kernel measured (nanoseconds; waits in seconds)."""

    __slots__ = ("launches", "device_ns", "cpu_ns", "runq_ns", "cpu_measured", "waits",
                 "acquisitions", "contended", "threads", "shapes", "buffer_bytes")

    def __init__(self):
        self.launches = 0
        self.device_ns = 0
        self.cpu_ns = 0.0
        self.runq_ns = 0.0    # the runtime threads' run-queue wait (other load)
        self.cpu_measured = False
        self.waits: dict[str, float] = {}
        self.acquisitions: dict[str, float] = {}
        self.contended: dict[str, float] = {}
        self.threads = 0      # runtime threads seen busy
        self.shapes: set = set()
        # bytes of the buffer arguments of the sampled launches, summed over them: the
        # compulsory traffic (each buffer read or written at least once); 0: not known
        self.buffer_bytes = 0


class KernelStats:
    """All launches of one kernel (by function name and device)."""

    __slots__ = ("name", "device", "platform", "device_type", "compute_units", "launches", "completed",
                 "failed", "unmeasured", "device_ns", "queue_ns", "submit_ns", "enqueue_ns",
                 "sizes", "sample", "sampling", "in_flight_sampled", "hidden", "first_ns", "max_group",
                 "in_order")

    def __init__(self, name: str, device: str, device_type: str, compute_units: int, platform: str = "",
                 max_group: int = 0):
        self.name = name
        self.device = device
        self.platform = platform  # e.g. "Portable Computing Language": which OpenCL ran it
        self.device_type = device_type
        self.compute_units = compute_units
        self.launches = 0
        self.completed = 0
        self.failed = 0        # finished with an error status
        self.unmeasured = 0    # finished but without timestamps
        self.device_ns = 0
        self.queue_ns = 0      # queued -> start
        self.submit_ns = 0     # queued -> submit (host side of the queue)
        self.enqueue_ns = 0    # host time in the enqueue call
        self.sizes: dict[tuple, int] = {}
        self.sample = Sample()
        self.sampling = True
        self.in_flight_sampled = 0
        self.hidden = 0        # launches moved to corecast's profiling queue
        self.first_ns = 0
        self.max_group = max_group  # the device's largest work-group (0: not known)
        self.in_order = 0  # launches on an in-order queue (they wait for every earlier command)

    @property
    def in_flight(self) -> int:
        return self.launches - self.completed - self.failed - self.unmeasured


class HostSeen:
    """What the OpenCL layer saw of its host at exit.

    ``device_s``: busy seconds of the devices that are not CPUs (a CPU device's work is
    the host's own threads); ``cpu_device_s``: those of CPU devices (pocl's: their compute
    units are this machine's cores); ``wait_s``: seconds the program waited in blocking
    OpenCL calls; ``runtime_threads``: live threads the interpreter did not start (the OpenCL
    runtime's and driver's, a BLAS library's pool: not the program's code), with their CPU
    seconds and their pthread waits, acquisitions and contended acquisitions per stall
    category (``recording.abi.STALLS`` names; empty without the preload library);
    ``program_cpu_s``: the CPU seconds of each live thread the interpreter started."""

    __slots__ = ("device_s", "wait_s", "runtime_threads", "runtime_cpu_s", "runtime_waits_s",
                 "runtime_acquisitions", "runtime_contended", "program_cpu_s", "cpu_device_s")

    def __init__(self, device_s: float, wait_s: float, runtime_threads: int = 0, runtime_cpu_s: float = 0.0,
                 runtime_waits_s: dict | None = None, runtime_acquisitions: dict | None = None,
                 runtime_contended: dict | None = None, program_cpu_s: list[float] | None = None,
                 cpu_device_s: float = 0.0) -> None:
        self.device_s, self.wait_s = float(device_s), float(wait_s)
        self.cpu_device_s = float(cpu_device_s)
        self.runtime_threads, self.runtime_cpu_s = int(runtime_threads), float(runtime_cpu_s)
        self.runtime_waits_s = dict(runtime_waits_s or {})
        self.runtime_acquisitions = dict(runtime_acquisitions or {})
        self.runtime_contended = dict(runtime_contended or {})
        self.program_cpu_s = [float(c) for c in program_cpu_s or []]

    def to_json(self) -> dict:
        """The kernel lines' ``host`` object (``record.host_from_json`` reads it back), so
        that ``corecast replay`` predicts the host's process line as the run did."""
        return {name: getattr(self, name) for name in self.__slots__}
