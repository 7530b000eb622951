"""Corecast's profiling queues add no ordering the program did not ask for: two queues of
the program stay independent, and an out-of-order queue's kernels are not chained.  Each
program below waits for an independent kernel while another waits on a user event the host
sets only afterwards: it hangs if corecast joins the two (the timeout is a hang guard only)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from .helpers import clean_env, text

HANG_S = 120  # a hang guard, never a speed check: the programs take well under a second

HEAD = """
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
k = cl.Kernel(cl.Program(ctx, "__kernel void inc(__global float*c){c[get_global_id(0)]+=1;}").build(), "inc")
n = 1024
mk = lambda: cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(n, np.float32))
A, B = mk(), mk(); ue = cl.UserEvent(ctx)
"""
TAIL = """
eb.wait(); print("B done", flush=True)
ue.set_status(cl.command_execution_status.COMPLETE); ea.wait(); print("A done", flush=True)
out = np.empty(n, np.float32)
cl.enqueue_copy(q2, out, B); q2.finish(); print("B", out.min(), out.max())
cl.enqueue_copy(q1, out, A); q1.finish(); print("A", out.min(), out.max())
"""
# Two in-order queues without profiling: q1's kernel waits for the host, q2's does not.
TWO_QUEUES = HEAD + """
q1 = cl.CommandQueue(ctx); q2 = cl.CommandQueue(ctx)
ea = k(q1, (n,), None, A, wait_for=[ue])
eb = k(q2, (n,), None, B)
""" + TAIL
# One out-of-order queue without profiling: kernel A waits for the host, B does not.
OUT_OF_ORDER = HEAD + """
q1 = q2 = cl.CommandQueue(ctx, properties=cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE)
ea = k(q1, (n,), None, A, wait_for=[ue])
eb = k(q1, (n,), None, B)
""" + TAIL
EXPECTED = "B done\nA done\nB 1.0 1.0\nA 1.0 1.0\n"


def _run(cmd, tmp_path, source):
    prog = tmp_path / "prog.py"
    prog.write_text(source)
    try:
        return subprocess.run([*cmd, str(prog)], env=clean_env(), capture_output=True, timeout=HANG_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{' '.join(cmd[1:])} hung (no exit in {HANG_S}s); it printed "
                    f"{text(exc.stdout or b'')!r}")


MODES = {"module": [sys.executable, "-m", "corecast.opencl"],
         "run": [sys.executable, "-m", "corecast", "run", "--", sys.executable]}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_two_queues_stay_independent(opencl, tmp_path, mode):
    r = _run(MODES[mode], tmp_path, TWO_QUEUES)
    assert r.returncode == 0, text(r.stderr)
    assert text(r.stdout) == EXPECTED
    err = text(r.stderr)
    assert "inc" in err and "kernel launches not measured" not in err, err  # both launches measured


@pytest.mark.parametrize("mode", sorted(MODES))
def test_an_out_of_order_queue_gets_no_added_order(opencl, tmp_path, mode):
    r = _run(MODES[mode], tmp_path, OUT_OF_ORDER)
    assert r.returncode == 0, text(r.stderr)
    assert text(r.stdout) == EXPECTED
    assert "2 kernel launches not measured: out-of-order queues" in text(r.stderr), text(r.stderr)


def test_the_programs_run_plainly(opencl, tmp_path):
    for source in (TWO_QUEUES, OUT_OF_ORDER):
        r = _run([sys.executable], tmp_path, source)
        assert r.returncode == 0, text(r.stderr)
        assert text(r.stdout) == EXPECTED


def test_two_threads_launching_first_on_one_queue_make_one_profiling_queue():
    # Thread A makes the queue's profiling queue; thread B's first launch on that queue
    # comes meanwhile.  B either reaches CommandQueue too (two profiling queues for one
    # program queue) or waits for A at the lock; either releases A: no timing involved.
    import threading
    from types import SimpleNamespace

    from corecast.opencl.profile import Profiler

    made, a_inside, b_there = [], threading.Event(), threading.Event()

    class CL:  # the pyopencl parts the first launch on a queue reads
        device_type = SimpleNamespace(CPU=2, GPU=4)

        @staticmethod
        def CommandQueue(context, device, properties):
            made.append(properties)
            if len(made) == 1:
                a_inside.set()
                b_there.wait(HANG_S)
            else:
                b_there.set()
            return object()

    class Watched:  # a lock that says when a thread waits for it
        def __init__(self):
            self.lock = threading.Lock()

        def __enter__(self):
            if not self.lock.acquire(blocking=False):
                b_there.set()
                self.lock.acquire()

        def __exit__(self, *exc):
            self.lock.release()

    p = Profiler.__new__(Profiler)  # the bookkeeping alone: no pyopencl needed
    p.cl, p.profiling_flag, p.out_of_order_flag = CL, 2, 1
    p.queues, p.devices, p.hidden_token, p.queue_lock = {}, {}, object(), Watched()
    device = SimpleNamespace(int_ptr=1, name="cpu", type=2, max_compute_units=2,
                             platform=SimpleNamespace(name="p"), max_work_group_size=256)
    queue = SimpleNamespace(properties=0, device=device, context=None)  # in order, no profiling
    got = {}
    a = threading.Thread(target=lambda: got.setdefault("a", p._queue_info(queue)))
    a.start()
    assert a_inside.wait(HANG_S)
    b = threading.Thread(target=lambda: got.setdefault("b", p._queue_info(queue)))
    b.start()
    a.join(HANG_S)
    b.join(HANG_S)
    assert len(made) == 1, f"{len(made)} profiling queues for one program queue"
    assert got["a"][2] is got["b"][2] is not None
