"""Per-kernel measurement of pyopencl launches.

Every launch that goes through ``enqueue_nd_range_kernel`` (``Kernel.__call__`` included)
is timed from its event's profiling timestamps (queued, submit, start, end):

* device time = end - start, queue delay = start - queued, host enqueue cost = the time the
  call took on the host (``time.monotonic_ns`` around it);
* a queue created without ``PROFILING_ENABLE`` is not changed: the kernel goes to a
  profiling queue of the same context and device that only corecast holds, behind a marker
  of the program's queue (so it starts after everything enqueued before it there) and
  with a barrier on the program's queue waiting for it (so everything enqueued after it
  waits for it); the program gets that launch's event back.  Results are the same; on an
  out-of-order queue later commands wait for the kernel where they might not have.

The sample of a kernel: its launches until their device time reaches the window
(``CORECAST_WINDOW_MS``, default 200 ms), or until ``SAMPLE_WALL`` windows of wall time
have passed since its first launch (short kernels: sampling costs the program time).
While a sampled launch is in flight, a thread takes a snapshot every ``TICK_S``: the CPU
time of the OpenCL runtime's threads (every thread of the process that Python's
``threading`` does not know: pocl's workers), their run-queue wait
(``/proc/self/task/*/schedstat``: runnable while the CPU ran something else) and, under
the preload library, their pthread waits, acquisitions and contended acquisitions per
category.  Each snapshot interval is then one equation: what it added equals, summed over
the kernels whose launches ran in it, the kernel's rate (busy compute units, waits per
second, ...) times its time in the interval (device timestamps mapped to the host clock
by the offset seen between each event's ``queued`` stamp and the host time of its enqueue
call; every launch resolved meanwhile counts, sampled or not).  Between launches the
workers sleep, so intervals need not line up with launches: least squares over the
intervals (rates >= 0, busy units at most the compute units) gives each kernel's rates,
and rate x the sample's device time its busy time, run-queue wait and waits.
Compute-unit time idle during the kernel = compute units x device time - busy time -
run-queue wait; the shim's waits say where it went (they are counted when they end, so
they are clipped to the idle time).

Launches are resolved (status and timestamps read) by that thread for sampled launches,
by the enqueue path every ``RESOLVE_EVERY`` launches for the others, and at exit, where
launches still in flight get ``EXIT_WAIT_S`` to finish (those that do not are counted as
in flight at exit).

The least squares live in ``rates``.  This module stays one class over 400 lines: the
launch wrapper, event resolution and the sampling thread share one lock and the same
in-flight lists, which a split would spread over modules.
"""
from __future__ import annotations

import os
import threading
import time

from .. import settings
from ..runtime.kernelstats import TICK_S, KernelStats
from .rates import add_interval, solve_rates
from .shim import Shim
from .warn import warn

WINDOW_MS_DEFAULT = 200
MAX_SAMPLED_IN_FLIGHT = 64
RESOLVE_EVERY = 256
EXIT_WAIT_S = 5.0
MAX_SIZES = 8  # distinct (global, local) shapes kept per kernel
CACHE_SIZE = 256  # queues and kernels whose details are remembered
SAMPLE_WALL = 10  # a sample also ends this many windows (wall clock) after the first launch
SCAN_LIMIT = 64   # launches in flight looked at per tick before giving up on the rest


def env_int(name: str, lo: int, hi: int, default: int) -> int:
    """Same rules as the preload library (which already warned about a bad value)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        v = int(text)
    except ValueError:
        return default
    return v if lo <= v <= hi else default


def _shape(value) -> tuple | None:
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        return (int(value),)


class Profiler:
    def __init__(self, cl):
        self.cl = cl
        self._cl = cl._cl
        self.pid = os.getpid()
        self.window_ns = env_int(settings.WINDOW_MS, 10, 60000, WINDOW_MS_DEFAULT) * 1_000_000
        self.started_ns = time.monotonic_ns()
        self.active = False
        self.failed_reason: str | None = None
        self.kernels: dict[tuple, KernelStats] = {}
        self.lock = threading.Lock()
        self.pending: list = []          # launches not sampled, not yet resolved
        self.resolve_at = RESOLVE_EVERY
        self.sampled: list = []          # sampled launches not yet resolved
        self.starting = 0                # sampled launches between _plan and _record
        self.snaps: list = []            # (t_ns, cpu_ns, shim (waits, acq, con), busy threads, runq_ns)
        self.timeline: list = []         # (record, host start, host end) of resolved launches
        self.normal: dict = {}           # (record, record) -> sum of overlap products
        self.rhs: dict = {}              # record -> sums of overlap x interval increments
        self.busy_max: dict = {}         # record -> runtime threads busy in its intervals
        self.cpu_last: dict[int, int] = {}
        self.runq_last: dict[int, int] = {}  # run-queue wait (schedstat)
        self.tids: set[int] = set()
        self.tids_at = 0.0
        self.offsets: dict[int, tuple] = {}  # device -> (error_ns, device - host offset)
        self.devices: dict[int, tuple] = {}  # device int_ptr -> (name, type, compute units)
        self.hidden_queues: dict[tuple, object] = {}
        self.queues: dict[int, tuple] = {}   # id(queue) -> (queue, info)
        self.names: dict[int, tuple] = {}    # id(kernel) -> (kernel, function name)
        self.profiling_flag = int(cl.command_queue_properties.PROFILING_ENABLE)
        info = cl.profiling_info
        self._pi = (info.QUEUED, info.SUBMIT, info.START, info.END)
        self.shim = Shim()
        self.wake = threading.Event()
        self.stop = False
        self.thread: threading.Thread | None = None
        self.originals: dict = {}
        try:
            os.register_at_fork(after_in_child=self._after_fork)
        except AttributeError:
            pass

    # ---- patching ---------------------------------------------------------------------
    def patch(self) -> None:
        if self.active:
            return
        orig = self.originals.get("_cl") or self._cl.enqueue_nd_range_kernel
        self.originals["_cl"] = orig
        self.originals["cl"] = getattr(self.cl, "enqueue_nd_range_kernel", None)
        wrapper = self._make_wrapper(orig)
        self._cl.enqueue_nd_range_kernel = wrapper
        if self.originals["cl"] is orig:
            self.cl.enqueue_nd_range_kernel = wrapper
        self.active = True

    def unpatch(self) -> None:
        if not self.originals:
            return
        self._cl.enqueue_nd_range_kernel = self.originals["_cl"]
        if self.originals.get("cl") is not None:
            self.cl.enqueue_nd_range_kernel = self.originals["cl"]
        self.active = False

    def _disable(self, exc: BaseException) -> None:
        """Our own bookkeeping failed: stop measuring, keep the program running."""
        if self.failed_reason is None:
            self.failed_reason = f"{type(exc).__name__}: {exc}"
            warn(f"measurement stopped: {self.failed_reason}")
        self.unpatch()

    def _make_wrapper(self, orig):
        prof = self
        now = time.monotonic_ns

        def enqueue_nd_range_kernel(queue, kernel, *args, **kwargs):
            if not prof.active:
                return orig(queue, kernel, *args, **kwargs)
            try:
                plan = prof._plan(queue, kernel, args, kwargs)
            except Exception as exc:
                prof._disable(exc)
                return orig(queue, kernel, *args, **kwargs)
            try:
                if plan[1] is None:
                    h0 = now()
                    event = orig(queue, kernel, *args, **kwargs)
                    h1 = now()
                else:
                    event, h0, h1 = prof._launch_hidden(orig, plan[1], queue, kernel, args, kwargs)
            except BaseException:  # the program's error: nothing to record
                if plan[2]:
                    with prof.lock:
                        prof.starting -= 1
                raise
            try:
                prof._record(plan, event, h0, h1)
            except Exception as exc:
                prof._disable(exc)
            return event

        enqueue_nd_range_kernel.__wrapped__ = orig
        enqueue_nd_range_kernel.__doc__ = getattr(orig, "__doc__", None)
        return enqueue_nd_range_kernel

    # ---- one launch -------------------------------------------------------------------
    def _device(self, queue) -> tuple[int, tuple]:
        dev = queue.device
        key = dev.int_ptr
        info = self.devices.get(key)
        if info is None:
            name = " ".join(str(dev.name).split())
            kind = "cpu" if dev.type & self.cl.device_type.CPU else (
                "gpu" if dev.type & self.cl.device_type.GPU else "other")
            try:
                platform = " ".join(str(dev.platform.name).split())
            except Exception:  # a broken ICD must not cost the measurement
                platform = ""
            info = self.devices[key] = (name, kind, int(dev.max_compute_units), platform)
        return key, info

    def _queue_info(self, queue) -> tuple:
        """(device key, device info, corecast's profiling queue or None) of a program queue;
        cached per queue object (held, so its id is not reused while cached)."""
        hit = self.queues.get(id(queue))
        if hit is not None and hit[0] is queue:
            return hit[1]
        dev_key, info = self._device(queue)
        hidden = None
        if not int(queue.properties) & self.profiling_flag:
            hidden = self._hidden_queue(queue)
        if len(self.queues) >= CACHE_SIZE:
            self.queues.clear()
        self.queues[id(queue)] = (queue, (dev_key, info, hidden))
        return dev_key, info, hidden

    def _kernel_name(self, kernel) -> str:
        hit = self.names.get(id(kernel))
        if hit is not None and hit[0] is kernel:
            return hit[1]
        name = kernel.function_name
        if len(self.names) >= CACHE_SIZE:
            self.names.clear()
        self.names[id(kernel)] = (kernel, name)
        return name

    def _plan(self, queue, kernel, args, kwargs) -> tuple:
        """(kernel record, hidden queue or None, sampled, device key, shape)."""
        dev_key, (dev_name, dev_type, units, platform), hidden = self._queue_info(queue)
        name = self._kernel_name(kernel)
        rec = self.kernels.get((name, dev_key))
        if rec is None:
            with self.lock:
                rec = self.kernels.setdefault((name, dev_key), KernelStats(name, dev_name, dev_type, units,
                                                                                 platform))
        gsize = args[0] if len(args) > 0 else kwargs.get("global_work_size", kwargs.get("global_size"))
        lsize = args[1] if len(args) > 1 else kwargs.get("local_work_size", kwargs.get("local_size"))
        g_times_l = args[4] if len(args) > 4 else kwargs.get("g_times_l", False)
        g, loc = _shape(gsize), _shape(lsize)
        if g_times_l and g is not None and loc is not None:
            g = tuple(a * b for a, b in zip(g, loc))
        sampled = rec.sampling and rec.in_flight_sampled < MAX_SAMPLED_IN_FLIGHT
        if sampled:
            with self.lock:
                if not self.sampled and not self.starting:
                    self._snapshot()  # the interval starts before this launch can
                self.starting += 1  # until _record: the episode must not end meanwhile
        return rec, hidden, sampled, dev_key, (g, loc)

    def _hidden_queue(self, queue):
        key = (queue.context.int_ptr, queue.device.int_ptr)
        q = self.hidden_queues.get(key)
        if q is None:
            q = self.cl.CommandQueue(queue.context, queue.device, properties=self.profiling_flag)
            self.hidden_queues[key] = q
        return q

    def _launch_hidden(self, orig, hq, queue, kernel, args, kwargs):
        """The kernel on corecast's profiling queue, ordered as on the program's queue."""
        cl = self.cl
        try:
            marker = cl.enqueue_marker(queue)
        except Exception:  # ours failed, not the program's launch: launch it as it asked
            h0 = time.monotonic_ns()
            event = orig(queue, kernel, *args, **kwargs)
            return event, h0, time.monotonic_ns()
        args = list(args)
        if len(args) > 3:
            waits = args[3]
            args[3] = [*(waits or ()), marker]
        else:
            kwargs = dict(kwargs)
            kwargs["wait_for"] = [*(kwargs.get("wait_for") or ()), marker]
        h0 = time.monotonic_ns()
        event = orig(hq, kernel, *args, **kwargs)
        h1 = time.monotonic_ns()
        try:
            hq.flush()
            cl.enqueue_barrier(queue, wait_for=[event])
        except Exception:  # no barrier: keep the order by finishing the kernel now
            event.wait()
        return event, h0, h1

    def _record(self, plan, event, h0, h1) -> None:
        rec, hidden, sampled, dev_key, shape = plan
        item = (rec, event, sampled, dev_key, h0, h1)
        resolve = False
        with self.lock:
            rec.launches += 1
            rec.enqueue_ns += h1 - h0
            if rec.first_ns == 0:
                rec.first_ns = h0
            if hidden is not None:
                rec.hidden += 1
            if shape in rec.sizes or len(rec.sizes) < MAX_SIZES:
                rec.sizes[shape] = rec.sizes.get(shape, 0) + 1
            if sampled:
                self.starting -= 1
                rec.in_flight_sampled += 1
                rec.sample.shapes.add(shape)
                self.sampled.append(item)
            else:
                self.pending.append(item)
                resolve = len(self.pending) >= self.resolve_at
        if sampled:
            self._ensure_thread()
            self.wake.set()
        elif resolve:
            with self.lock:
                self._resolve_pending()
                self.resolve_at = len(self.pending) + RESOLVE_EVERY

    # ---- resolving events -------------------------------------------------------------
    def _resolve(self, item) -> bool:
        """Read a finished launch into its record; False while it is in flight.  Caller
        holds the lock."""
        rec, event, sampled, dev_key, h0, h1 = item
        try:
            status = int(event.command_execution_status)
        except Exception:
            status = -1
        if status > 0:
            return False
        if sampled:
            rec.in_flight_sampled -= 1
        if status < 0:
            rec.failed += 1
            return True
        try:
            q, sub, s, e = (int(event.get_profiling_info(k)) for k in self._pi)
        except Exception:
            rec.unmeasured += 1
            return True
        rec.completed += 1
        rec.device_ns += max(e - s, 0)
        rec.queue_ns += max(s - q, 0)
        rec.submit_ns += max(sub - q, 0)
        err = (h1 - h0) // 2
        best = self.offsets.get(dev_key)
        if best is None or err < best[0]:
            self.offsets[dev_key] = best = (err, q - (h0 + h1) // 2)
        if sampled and rec.sampling:
            smp = rec.sample
            smp.launches += 1
            smp.device_ns += max(e - s, 0)
            if (smp.device_ns >= self.window_ns
                    or time.monotonic_ns() - rec.first_ns > SAMPLE_WALL * self.window_ns):
                rec.sampling = False
        if self.snaps and e > s:
            self.timeline.append((rec, s - best[1], e - best[1]))
        return True

    def _resolve_pending(self, before: int | None = None) -> None:
        """Resolve launches not sampled (enqueued before host time ``before``), giving up
        after ``SCAN_LIMIT`` still in flight unless ``before`` is None (lock held)."""
        keep, busy = [], 0
        for it in self.pending:
            if busy >= SCAN_LIMIT and before is not None:
                keep.append(it)
            elif before is not None and it[4] >= before:
                keep.append(it)
            elif not self._resolve(it):
                keep.append(it)
                busy += 1
        self.pending = keep

    # ---- snapshots --------------------------------------------------------------------
    def _runtime_tids(self) -> set[int]:
        now = time.monotonic()
        if now - self.tids_at > 0.05:
            known = {t.native_id for t in threading.enumerate()}
            try:
                tids = {int(t) for t in os.listdir("/proc/self/task")}
            except OSError:
                tids = set()
            self.tids = tids - known
            self.tids_at = now
        return self.tids

    def _snapshot(self) -> None:
        t = time.monotonic_ns()
        tids = self._runtime_tids()
        busy = 0
        for tid in tids:
            try:
                v = time.clock_gettime_ns((~tid << 3) | 6)  # the thread's CPU clock
            except OSError:
                continue  # gone: its last value stays in the sum
            if v > self.cpu_last.get(tid, 0):
                busy += 1
            self.cpu_last[tid] = v
            try:
                with open(f"/proc/self/task/{tid}/schedstat", "rb") as f:
                    self.runq_last[tid] = int(f.read().split()[1])
            except (OSError, IndexError, ValueError):
                pass
        cpu = sum(self.cpu_last.values())
        runq = sum(self.runq_last.values())
        shim = self.shim.read(tids | set(self.cpu_last)) if self.shim.available else None
        self.snaps.append((t, cpu, shim, busy, runq))

    def _finalize(self, force: bool = False) -> None:
        """Turn snapshot intervals every launch of which is resolved into least-squares
        sums (all of them with ``force``); lock held."""
        snaps = self.snaps
        if len(snaps) < 2:
            return
        limit = snaps[-1][0]
        if not force:
            for waiting in (self.sampled, self.pending):
                if waiting:  # in enqueue order: the first was enqueued first
                    limit = min(limit, waiting[0][4])
        i = 0
        while i + 1 < len(snaps) and snaps[i + 1][0] <= limit:
            add_interval(snaps[i], snaps[i + 1], self.timeline, self.normal, self.rhs, self.busy_max)
            i += 1
        if i:
            del snaps[:i]
            t0 = snaps[0][0]
            self.timeline = [x for x in self.timeline if x[2] > t0]

    def _solve(self) -> None:
        """Each kernel's rates from the least-squares sums, into its sample."""
        solve_rates(self.normal, self.rhs, self.busy_max, self.shim.names)

    # ---- the sampling thread ----------------------------------------------------------
    def _ensure_thread(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            return
        self.stop = False
        self.thread = threading.Thread(target=self._run, name="corecast-opencl", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.shim.mark_internal()
        while not self.stop:
            with self.lock:
                idle = not self.sampled and not self.starting and len(self.snaps) <= 1
                if idle:  # the episode is over: its intervals are all in the sums
                    self.snaps, self.timeline = [], []
            if idle:
                self.wake.wait()
                self.wake.clear()
                continue
            try:
                self._tick()
            except Exception as exc:
                self._disable(exc)
                return
            time.sleep(TICK_S)

    def _tick(self) -> None:
        with self.lock:
            running = bool(self.sampled)
            self.sampled = [it for it in self.sampled if not self._resolve(it)]
            if self.snaps:
                self._resolve_pending(before=self.snaps[-1][0])
            if running:
                self._snapshot()  # after the resolution: it covers what just finished
            self._finalize()

    # ---- the end ------------------------------------------------------------------------
    def finish(self) -> list[KernelStats]:
        """Resolve what is left; the kernels launched, for the exit report (none in a
        forked child that inherited this profiler)."""
        if os.getpid() != self.pid:
            return []
        self.stop = True
        self.wake.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=1.0)
        deadline = time.monotonic() + EXIT_WAIT_S
        while True:
            with self.lock:
                running = bool(self.sampled)
                self.sampled = [it for it in self.sampled if not self._resolve(it)]
                self._resolve_pending()
                if running and self.snaps:
                    self._snapshot()
                self._finalize()
                left = len(self.sampled) + len(self.pending)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.001)
        with self.lock:
            self._finalize(force=True)
            self._solve()
            kernels = [k for k in self.kernels.values() if k.launches]
            self.pending, self.sampled, self.snaps = [], [], []
            self.hidden_queues.clear()
            self.queues.clear()
            self.names.clear()
        return kernels

    def _after_fork(self) -> None:
        """A forked child starts with no launches of its own and reports alone."""
        self.pid = os.getpid()
        self.kernels = {}
        self.pending, self.sampled, self.snaps, self.timeline = [], [], [], []
        self.normal, self.rhs, self.busy_max = {}, {}, {}
        self.starting = 0
        self.resolve_at = RESOLVE_EVERY
        self.cpu_last = {}
        self.runq_last = {}
        self.tids_at = 0.0
        self.hidden_queues = {}
        self.queues, self.names = {}, {}
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread = None
        self.started_ns = time.monotonic_ns()
