"""Per-kernel measurement of pyopencl launches: what happens to a launch once
``profile.Profiler`` recorded it.

The sample of a kernel: its launches until their device time reaches the window
(``CORECAST_WINDOW_MS``, default 200 ms), or until ``SAMPLE_WALL`` windows of wall time
have passed since its first launch (short kernels: sampling costs the program time).
While a sampled launch is in flight, a thread takes a snapshot every ``TICK_S``: the CPU
time of the OpenCL runtime's threads (every thread of the process that Python's
``threading`` does not know: pocl's workers), their run-queue wait
(``/proc/self/task/*/schedstat``: runnable while the CPU ran something else) and, under
the preload library, their pthread waits, acquisitions and contended acquisitions per
category.  That thread takes every snapshot, the first of an episode too (the launch that
opens it waits for it, ``SNAP_WAIT_S`` at most): their /proc reads stay in its descriptor
table, never the program's.  Each snapshot interval is then one equation: what it added equals, summed over
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

The least squares are ``rates``.
"""
from __future__ import annotations

import os
import threading
import time

from ..io import settings
from ..runtime import channel
from ..recording.kernelstats import TICK_S, HostSeen, KernelStats
from .rates import add_interval, solve_rates
from .shim import Shim
from .warn import warn

RESOLVE_EVERY = 256
EXIT_WAIT_S = 5.0
SAMPLE_WALL = 10  # a sample also ends this many windows (wall clock) after the first launch
SCAN_LIMIT = 64   # launches in flight looked at per tick before giving up on the rest
# The longest a launch that opens an episode waits for the sampling thread's first snapshot.
# Past it the launch goes ahead and the snapshot comes late: the intervals are still true
# (they are what the snapshots' own times bound), the episode's first moments are just not
# covered.  Never the snapshot on the program's thread: it opens /proc files there.
SNAP_WAIT_S = 0.1


def thread_cpu_ns(tid: int) -> int | None:
    """The CPU time of this process's thread ``tid`` (its CPU clock: the kernel's
    MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)), or None when it is gone."""
    try:
        return time.clock_gettime_ns((~tid << 3) | 6)
    except OSError:
        return None


class Sampler:
    """The kernels' records, their launches waiting to be resolved, the snapshots of the
    runtime's threads and the thread that takes them."""

    def __init__(self, profiling_info: type) -> None:  # pyopencl.profiling_info
        self.pid = os.getpid()
        self.window_ns = settings.integer(settings.WINDOW_MS, warn=channel.warn_setting) * 1_000_000
        self.started_ns = time.monotonic_ns()
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
        info = profiling_info
        self._pi = (info.QUEUED, info.SUBMIT, info.START, info.END)
        self.shim = Shim()
        self.wake = threading.Event()    # the idle sampling thread: an episode starts
        self.asked = threading.Event()   # the ticking sampling thread: a snapshot is asked for
        self.opening: threading.Event | None = None  # set once the episode's first snapshot is taken
        self.stop = False
        self.thread: threading.Thread | None = None
        self.exit_deadline: float | None = None  # the exit's wait for launches in flight (EXIT_WAIT_S)
        try:
            os.register_at_fork(after_in_child=self._after_fork)
        except AttributeError:
            pass

    def _disable(self, exc: BaseException) -> None:
        """Our own bookkeeping failed: say so once (``Profiler`` also stops measuring)."""
        if self.failed_reason is None:
            self.failed_reason = f"{type(exc).__name__}: {exc}"
            warn(f"measurement stopped: {self.failed_reason}")

    # ---- resolving events -------------------------------------------------------------
    def _resolve(self, item) -> bool:
        """Read a finished launch into its record; False while it is in flight.  Caller
        holds the lock."""
        rec, event, sampled, dev_key, h0, h1, moved = item
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
            smp.buffer_bytes += moved
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
            v = thread_cpu_ns(tid)
            if v is None:
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

    def _start_sampled(self) -> None:
        """A sampled launch is about to start (the program's thread, lock not held).  When
        it opens an episode (or one is opening), the sampling thread takes the first
        snapshot before the launch goes on, so that the interval starts before this launch
        can.  The snapshot opens /proc files: only that thread's descriptor table may hold
        them."""
        with self.lock:
            if not self.sampled and not self.starting and self.opening is None:
                self.opening = threading.Event()
            self.starting += 1  # until _record: the episode must not end meanwhile
            opening = self.opening
        if opening is None:
            return
        self._ensure_thread()
        self.wake.set()
        self.asked.set()
        opening.wait(SNAP_WAIT_S)

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
        # Its /proc reads in a descriptor table of its own: they must not take the program's
        # descriptor numbers or show in its /proc/self/fd.
        channel.own_descriptor_table()
        while not self.stop:
            with self.lock:
                idle = (not self.sampled and not self.starting and len(self.snaps) <= 1
                        and self.opening is None)
                if idle:  # the episode is over: its intervals are all in the sums
                    self.snaps, self.timeline = [], []
            if idle:
                self.wake.wait()
                self.wake.clear()
                continue
            self.asked.clear()  # before the tick: a request made during it ends the wait below
            try:
                self._tick()
            except Exception as exc:
                self._disable(exc)
                if self.opening is not None:
                    self.opening.set()  # no launch waits for a snapshot that will not come
                return
            self.asked.wait(TICK_S)

    def _tick(self) -> None:
        with self.lock:
            opening, self.opening = self.opening, None
            if opening is not None:  # a launch waits for it: that alone, the rest next tick
                try:
                    self._snapshot()
                finally:
                    opening.set()
                return
            running = bool(self.sampled)
            self.sampled = [it for it in self.sampled if not self._resolve(it)]
            if self.snaps:
                self._resolve_pending(before=self.snaps[-1][0])
            if running:
                self._snapshot()  # after the resolution: it covers what just finished
            self._finalize()

    def finish(self) -> list[KernelStats]:
        """Resolve what is left; the kernels launched, for the exit report (none in a
        forked child that inherited this profiler)."""
        if os.getpid() != self.pid:
            return []
        # The sampling thread resolves the sampled launches and takes the snapshots that
        # close their intervals until they are done: the snapshots' /proc reads stay in its
        # descriptor table.  Without it (never started, or stopped) they are resolved here,
        # and their last interval is not closed.
        self._await_in_flight(None)
        self.stop = True
        self.wake.set()
        self.asked.set()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=1.0)
        with self.lock:
            self._finalize(force=True)
            self._solve()
            kernels = [k for k in self.kernels.values() if k.launches]
            self.pending, self.sampled, self.snaps = [], [], []
        return kernels

    def _await_in_flight(self, lock_timeout: float | None) -> bool:
        """Resolve the launches in flight at the exit as they finish, until none is left or
        the exit's ``EXIT_WAIT_S`` (one budget, shared by the process prediction's wait and
        the kernel report's) has passed.  With ``lock_timeout``, False where the lock's
        holder is stuck (an exit inside a tick)."""
        if self.exit_deadline is None:
            self.exit_deadline = time.monotonic() + EXIT_WAIT_S
        while True:
            sampler = (self.thread is not None and self.thread.is_alive()
                       and self.thread is not threading.current_thread())
            if not self.lock.acquire(timeout=-1 if lock_timeout is None else lock_timeout):
                return False
            try:
                if not sampler:
                    self.sampled = [it for it in self.sampled if not self._resolve(it)]
                self._resolve_pending()
                self._finalize()
                left = len(self.sampled) + len(self.pending)
            finally:
                self.lock.release()
            if not left or time.monotonic() > self.exit_deadline:
                return True
            time.sleep(0.001)

    def device_wait(self) -> HostSeen | None:
        """What the process prediction needs of this host (``recording.kernelstats.HostSeen``):
        the busy time of the devices that are not CPUs, the time the program waited in
        blocking OpenCL calls, and the runtime's threads, also when no kernel ran (a program
        that found no device predicted a speedup from numpy's idle OpenBLAS pool).
        Launches still in flight are awaited first, as the kernel report awaits them (it
        runs after this prediction): a program that left with its kernels running read as
        one that ran none, the OpenCL runtime's threads counted as its own."""
        if os.getpid() != self.pid or not self._await_in_flight(0.5) or not self.lock.acquire(timeout=0.5):
            return None  # the lock's holder is stuck (an exit inside a tick): no claim
        try:
            self.sampled = [it for it in self.sampled if not self._resolve(it)]
            self._resolve_pending()
            ran = [k for k in self.kernels.values() if k.completed]
        finally:
            self.lock.release()
        busy = sum(k.device_ns for k in ran if k.device_type != "cpu") * 1e-9
        on_cpu = sum(k.device_ns for k in ran if k.device_type == "cpu") * 1e-9
        seen = HostSeen(busy, getattr(self, "host_wait_ns", 0) * 1e-9, cpu_device_s=on_cpu)
        self._runtime_threads(seen)
        return seen

    def _runtime_threads(self, seen: HostSeen) -> None:
        """The threads the library lists (the program's, corecast's own left out) that the
        interpreter did not start, live now: the OpenCL runtime's and driver's, a BLAS
        pool's (numpy's OpenBLAS starts cores - 1 at import, which spin a while and sleep).
        Their CPU time and pthread waits into ``seen``; nothing without the library."""
        listed = self.shim.tids()
        if not listed:
            return
        tids = listed - {t.native_id for t in threading.enumerate()}

        def cpu_s(tid: int) -> float | None:
            ns = thread_cpu_ns(tid)
            return None if ns is None else ns * 1e-9

        runtime = [c for c in map(cpu_s, tids) if c is not None]
        seen.runtime_threads, seen.runtime_cpu_s = len(runtime), sum(runtime)
        seen.program_cpu_s = [c for c in map(cpu_s, listed - tids) if c is not None]
        got = self.shim.read(tids)
        if got is not None:
            for name, w, a, c in zip(self.shim.names, *got):
                seen.runtime_waits_s[name], seen.runtime_acquisitions[name], seen.runtime_contended[name] = w, a, c

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
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.asked = threading.Event()
        self.opening = None
        self.thread = None
        self.exit_deadline = None
        self.started_ns = time.monotonic_ns()
