"""Per-kernel measurement of pyopencl launches: the launch path (over 400 lines: one
wrapper's state, the launch, the hidden queues it launches on and the argument notes it
reads, in one class).

Every launch that goes through ``enqueue_nd_range_kernel`` (``Kernel.__call__`` included)
is timed from its event's profiling timestamps (queued, submit, start, end):

* device time = end - start, queue delay = start - queued, host enqueue cost = the time the
  call took on the host (``time.monotonic_ns`` around it);
* an in-order queue created without ``PROFILING_ENABLE`` is not changed: the kernel goes
  to a profiling queue that only corecast holds, one per program queue (two queues of the
  program stay as independent as they were), behind a marker of the program's queue (so it
  starts after everything enqueued before it there) and with a barrier on the program's
  queue waiting for it (so everything enqueued after it waits for it, as it would have);
  the program gets that launch's event back.  Results are the same;
* an out-of-order queue created without ``PROFILING_ENABLE`` is left alone and its kernels
  are not measured (a warning at exit says how many): a marker and barrier there would order
  commands the program left unordered (a kernel waiting on a user event would hold back an
  independent one the host waits for: a deadlock).

``Profiler`` wraps that function and records each launch into its kernel's record; its
base class ``sampling.Sampler`` resolves the launches' events, samples the runtime's
threads and gives each kernel its rates.
"""
from __future__ import annotations

import threading
import time

from ..recording.kernelstats import KernelStats
from .sampling import RESOLVE_EVERY, Sampler

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from types import ModuleType

MAX_SAMPLED_IN_FLIGHT = 64
MAX_SIZES = 8  # distinct (global, local) shapes kept per kernel
CACHE_SIZE = 256  # queues and kernels whose details are remembered


def _shape(value) -> tuple | None:
    if value is None:
        return None
    try:
        return tuple(int(v) for v in value)
    except TypeError:
        return (int(value),)


ARGS_ATTR = "_corecast_buffers"  # on a kernel: {argument index: (int_ptr, bytes)}, and their total


def _note_arg(kernel, index: int, value, buffer_cls: type) -> None:
    """Argument ``index`` of ``kernel`` set to ``value``: a buffer's bytes noted, anything
    else drops what the index held.  (Kept on the kernel object itself: it lives as long
    as the kernel, and pyopencl's kernels take no weak references.)"""
    held = getattr(kernel, ARGS_ATTR, None)
    if held is None:
        if not isinstance(value, buffer_cls):
            return
        held = [{}, 0]
        setattr(kernel, ARGS_ATTR, held)
    if isinstance(value, buffer_cls):
        held[0][int(index)] = (value.int_ptr, int(value.size))
    elif held[0].pop(int(index), None) is None:
        return
    held[1] = None  # the total again at the next launch


def buffer_bytes(kernel) -> int:
    """The bytes of ``kernel``'s buffer arguments as last set, each buffer once; 0 where
    none was seen set."""
    held = getattr(kernel, ARGS_ATTR, None)
    if held is None:
        return 0
    if held[1] is None:
        held[1] = sum(dict(held[0].values()).values())
    return held[1]


class Profiler(Sampler):
    """pyopencl's launch function wrapped: every launch recorded into its kernel's record."""

    def __init__(self, cl: ModuleType) -> None:  # pyopencl
        super().__init__(cl.profiling_info)
        self.cl = cl
        self._cl = cl._cl
        self.active = False
        self.devices: dict[int, tuple] = {}  # device int_ptr -> (name, type, compute units)
        self.hidden_token = object()  # marks the profiling queues this process made
        self.unmeasured_launches = 0  # launches left alone (out-of-order queue, no profiling)
        self.queues: dict[int, tuple] = {}   # id(queue) -> (queue, info)
        self.queue_lock = threading.Lock()  # a queue's first launch: one profiling queue made
        self.names: dict[int, tuple] = {}    # id(kernel) -> (kernel, function name)
        self.profiling_flag = int(cl.command_queue_properties.PROFILING_ENABLE)
        self.out_of_order_flag = int(cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
        self.originals: dict = {}
        self.host_wait_ns = 0  # the program's time in blocking OpenCL calls (WAITS)
        self.wait_depth = threading.local()

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
        self._patch_waits()
        self._patch_args()
        self.active = True

    # The calls in which the host waits for the device: their time tells a host that
    # waits on the device from one that computes (the process line's "waiting on the device").
    WAITS = (("CommandQueue", "finish"), ("Event", "wait"), (None, "wait_for_events"),
             (None, "enqueue_copy"))

    def _patch_waits(self) -> None:
        for owner_name, attr in self.WAITS:
            owner = self.cl if owner_name is None else getattr(self.cl, owner_name, None)
            key = ("wait", owner_name, attr)
            orig = self.originals.get(key) or getattr(owner, attr, None)
            if orig is None:
                continue
            try:
                setattr(owner, attr, self._make_timed(orig))
                self.originals[key] = orig
            except (AttributeError, TypeError):  # a build that does not allow it: unmeasured
                pass

    def _make_timed(self, orig):
        prof = self
        now = time.monotonic_ns
        depth = self.wait_depth  # nested waits (enqueue_copy -> Event.wait) count once

        def timed(*args, **kwargs):
            if getattr(depth, "n", 0):
                return orig(*args, **kwargs)
            depth.n = 1
            t0 = now()
            try:
                return orig(*args, **kwargs)
            finally:
                prof.host_wait_ns += now() - t0  # a lost update between threads is noise
                depth.n = 0

        timed.__wrapped__ = orig
        timed.__doc__ = getattr(orig, "__doc__", None)
        timed.__name__ = getattr(orig, "__name__", "wait")
        return timed

    # Where a kernel's arguments are set (``set_args`` and ``Kernel.__call__`` go through
    # ``_set_arg_multi``): its buffers' bytes, noted there, are each launch's compulsory
    # traffic (``KernelStats.Sample.buffer_bytes``).  Null and SVM arguments drop a buffer.
    ARG_SETTERS = ("set_arg", "_set_arg_multi", "_set_arg_null", "_set_arg_svm")

    def _patch_args(self) -> None:
        kernel_cls = getattr(self._cl, "Kernel", None)
        buffer_cls = getattr(self._cl, "Buffer", None)
        if kernel_cls is None or buffer_cls is None:
            return
        for attr in self.ARG_SETTERS:
            key = ("args", attr)
            orig = self.originals.get(key) or getattr(kernel_cls, attr, None)
            if orig is None:
                continue
            try:
                setattr(kernel_cls, attr, self._make_noting(orig, attr, buffer_cls))
                self.originals[key] = orig
            except (AttributeError, TypeError):  # a build that does not allow it: B unknown
                pass

    def _make_noting(self, orig, attr: str, buffer_cls: type):
        prof = self
        pairs = attr == "_set_arg_multi"

        def noting(kernel, *args, **kwargs):
            result = orig(kernel, *args, **kwargs)  # the program's error, if any, before anything is noted
            if prof.active:
                try:
                    given = list(args) + list(kwargs.values())  # pyopencl's order: index, then value
                    if pairs:
                        flat = given[0]
                        for i in range(0, len(flat) - 1, 2):
                            _note_arg(kernel, flat[i], flat[i + 1], buffer_cls)
                    elif args or not kwargs or "arg_index" in kwargs:
                        index = args[0] if args else kwargs["arg_index"]
                        value = (args[1] if len(args) > 1 else kwargs.get("arg")) if attr == "set_arg" else None
                        _note_arg(kernel, index, value, buffer_cls)
                except Exception as exc:
                    prof._disable(exc)
            return result

        noting.__wrapped__ = orig
        noting.__doc__ = getattr(orig, "__doc__", None)
        noting.__name__ = getattr(orig, "__name__", attr)
        return noting

    def unpatch(self) -> None:
        if not self.originals:
            return
        self._cl.enqueue_nd_range_kernel = self.originals["_cl"]
        if self.originals.get("cl") is not None:
            self.cl.enqueue_nd_range_kernel = self.originals["cl"]
        for owner_name, attr in self.WAITS:
            orig = self.originals.get(("wait", owner_name, attr))
            if orig is not None:
                setattr(self.cl if owner_name is None else getattr(self.cl, owner_name), attr, orig)
        for attr in self.ARG_SETTERS:
            orig = self.originals.get(("args", attr))
            if orig is not None:
                setattr(self._cl.Kernel, attr, orig)
        self.active = False

    def _disable(self, exc: BaseException) -> None:
        """Our own bookkeeping failed: stop measuring, keep the program running."""
        super()._disable(exc)
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
            if plan is None:  # an out-of-order queue without profiling: left alone
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
            try:
                group = int(dev.max_work_group_size)
            except Exception:
                group = 0
            info = self.devices[key] = (name, kind, int(dev.max_compute_units), platform, group)
        return key, info

    def _queue_info(self, queue) -> tuple:
        """(device key, device info, corecast's profiling queue or None, in order) of a
        program queue, or None for an out-of-order queue without profiling (its kernels are
        left alone); cached per queue object (held, so its id is not reused while cached)."""
        hit = self.queues.get(id(queue))
        if hit is not None and hit[0] is queue:
            return hit[1]
        with self.queue_lock:  # two threads' first launches on a queue made two profiling queues
            hit = self.queues.get(id(queue))
            if hit is not None and hit[0] is queue:
                return hit[1]
            props = int(queue.properties)
            in_order = not props & self.out_of_order_flag
            if props & self.profiling_flag:
                result = (*self._device(queue), None, in_order)
            elif in_order:
                result = (*self._device(queue), self._hidden_queue(queue), True)
            else:
                result = None
            if len(self.queues) >= CACHE_SIZE:
                self.queues.clear()
            self.queues[id(queue)] = (queue, result)
            return result

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
        """(kernel record, hidden queue or None, sampled, device key, shape, in order,
        buffer bytes); None for a launch left alone (counted, not measured)."""
        qinfo = self._queue_info(queue)
        if qinfo is None:
            self.unmeasured_launches += 1  # a lost update between threads is noise
            return None
        dev_key, (dev_name, dev_type, units, platform, group), hidden, in_order = qinfo
        name = self._kernel_name(kernel)
        rec = self.kernels.get((name, dev_key))
        if rec is None:
            with self.lock:
                rec = self.kernels.setdefault((name, dev_key), KernelStats(name, dev_name, dev_type, units,
                                                                                 platform, group))
        gsize = args[0] if len(args) > 0 else kwargs.get("global_work_size", kwargs.get("global_size"))
        lsize = args[1] if len(args) > 1 else kwargs.get("local_work_size", kwargs.get("local_size"))
        g_times_l = args[4] if len(args) > 4 else kwargs.get("g_times_l", False)
        g, loc = _shape(gsize), _shape(lsize)
        if g_times_l and g is not None and loc is not None:
            g = tuple(a * b for a, b in zip(g, loc))
        sampled = rec.sampling and rec.in_flight_sampled < MAX_SAMPLED_IN_FLIGHT
        if sampled:
            self._start_sampled()
        return rec, hidden, sampled, dev_key, (g, loc), in_order, buffer_bytes(kernel) if sampled else 0

    HIDDEN_ATTR = "_corecast_profiling_queue"  # on a program queue: (token, its profiling queue)

    def _hidden_queue(self, queue):
        """The program queue's own profiling queue (one per program queue: a queue shared
        between two program queues would chain commands the program left independent).
        Kept on the queue object, so it lives as long as the program's queue."""
        held = getattr(queue, self.HIDDEN_ATTR, None)
        if held is not None and held[0] is self.hidden_token:
            return held[1]
        q = self.cl.CommandQueue(queue.context, queue.device, properties=self.profiling_flag)
        try:
            setattr(queue, self.HIDDEN_ATTR, (self.hidden_token, q))
        except (AttributeError, TypeError):  # a build that does not allow it: the cache holds it
            pass
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
        rec, hidden, sampled, dev_key, shape, in_order, moved = plan
        item = (rec, event, sampled, dev_key, h0, h1, moved)
        resolve = False
        with self.lock:
            rec.launches += 1
            rec.enqueue_ns += h1 - h0
            if rec.first_ns == 0:
                rec.first_ns = h0
            if hidden is not None:
                rec.hidden += 1
            if in_order:
                rec.in_order += 1
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

    # ---- the end ------------------------------------------------------------------------
    def finish(self) -> list[KernelStats]:
        """``Sampler.finish``, then the cached queues and kernels let go."""
        kernels = super().finish()
        with self.lock:
            self.queues.clear()
            self.names.clear()
        return kernels

    def _after_fork(self) -> None:
        super()._after_fork()  # and no queue or kernel of the parent's cached
        self.hidden_token = object()  # the parent's profiling queues are not used
        self.unmeasured_launches = 0
        self.queues, self.names = {}, {}
        self.queue_lock = threading.Lock()  # a parent's thread may have held it at the fork
        self.host_wait_ns = 0
        self.wait_depth = threading.local()
