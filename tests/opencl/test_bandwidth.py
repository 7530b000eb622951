"""A CPU device's kernel under its compulsory traffic (issue #42, session 31's pre-registered
rule): the bytes of its buffer arguments, noted where they are set, cap its speedup at
T(1) bw(n) / B where they exceed the last-level cache and a calibration gives bw and the
LLC; without a calibration nothing changes and the basis says the bandwidth is unmeasured.
Synthetic samples and calibrations: no test depends on the machine's speed."""
from __future__ import annotations

import json
import os

import pytest

from corecast.model.machine import calibration as machine
from corecast.model.runtime import kernelmodel
from corecast.opencl import profile
from corecast.opencl.report import kernel_line
from corecast.recording.record import kernel_from_json

from .helpers import measured, plain, read_lines
from .test_predict import FakeProfiler, kernel

MB = 1_000_000
GBPS = [[1, 10.0], [4, 20.0], [16, 40.0]]  # bw(4) 20 GB/s, bw(16) 40 GB/s


@pytest.fixture(autouse=True)
def _roofline_alone(monkeypatch):
    """The cap on its own: the units' assumed loss past the sampled count (its tests are
    test_predict's) off, so that a busy kernel's free prediction is 16 at 16."""
    monkeypatch.setattr(kernelmodel, "UNIT_CONTENTION", 0.0)


def cal(llc: int | None = 100 * MB, gbps=GBPS) -> machine.Calibration:
    doc = {machine.KEY: machine.SCHEMA, "machine": {"cpus": 16, "cpu_model": "a cpu"},
           "compute": {"efficiency": [[1, 1.0], [16, 0.9]]}}
    if llc is not None:
        doc["machine"]["llc_bytes"] = llc
    if gbps:
        doc["bandwidth"] = {"gbps": gbps}
    return machine.from_dict(doc)


def streaming(per_launch: int, **kw):
    """4 busy compute units for 20 ms a launch (T(1) 80 ms), ``per_launch`` buffer bytes."""
    k = kernel(cpu_s=0.8, device_s=0.2, units=4, launches=10, **kw)
    k.sample.buffer_bytes = per_launch * k.sample.launches
    return k


def test_buffers_past_the_llc_cap_the_speedup_at_the_triads_bandwidth():
    free = kernelmodel.predict(streaming(300 * MB), 16, 16)
    held = kernelmodel.predict(streaming(300 * MB), 16, 16, cal())
    assert free.speedup[-1] == pytest.approx(16, rel=0.02)
    # 300 MB take 7.5 ms at 40 GB/s: 80 ms of work cannot run faster than 10.7x
    cap = 0.08 * 40e9 / (300 * MB)
    assert held.speedup[-1] == pytest.approx(cap, rel=0.02) and held.high[-1] == pytest.approx(cap, rel=0.02)
    assert all(lo <= s <= hi for lo, s, hi in zip(held.low, held.speedup, held.high))
    assert held.speedup[3] == pytest.approx(free.speedup[3])  # the sampled count: 15 ms < 20 ms, free
    assert held.bottleneck == "bandwidth"
    assert held.basis.endswith("; bandwidth: 300 MB per launch, 40.0 GB/s at 16")


def test_a_flat_cap_moves_the_fastest_count_down():
    # bw flat past 4 units: the capped speedups are flat there, and the fastest count is the
    # fewest that reach them, not the free prediction's 16.
    from corecast.model.runtime.bound import fastest_count

    free = kernelmodel.predict(streaming(300 * MB), 16, 16)
    held = kernelmodel.predict(streaming(300 * MB), 16, 16, cal(gbps=[[1, 10.0], [4, 20.0], [16, 20.0]]))
    assert free.fastest == 16
    assert held.fastest == fastest_count(held.threads, held.speedup) < 16


def test_buffers_within_the_llc_or_without_a_calibration_change_nothing():
    free = kernelmodel.predict(streaming(300 * MB), 16, 16)
    inside = kernelmodel.predict(streaming(300 * MB), 16, 16, cal(llc=400 * MB))
    unknown = kernelmodel.predict(streaming(0), 16, 16, cal())
    for pred in (inside, unknown):
        assert pred.speedup == free.speedup and pred.high == free.high and pred.low == free.low
        assert "bandwidth" not in pred.basis and pred.bottleneck != "bandwidth"
    assert free.basis.endswith("; bandwidth unmeasured (no machine calibration)")
    no_curve = kernelmodel.predict(streaming(300 * MB), 16, 16, cal(gbps=None))
    assert no_curve.speedup == free.speedup and no_curve.basis.endswith("(no machine calibration)")
    no_llc = kernelmodel.predict(streaming(300 * MB), 16, 16, cal(llc=None))
    assert no_llc.speedup == free.speedup
    assert no_llc.basis.endswith("; bandwidth cap not applied: the calibration has no LLC size")


def test_the_cap_never_falls_below_the_sampled_point():
    """10 GB a launch could not have moved in the sampled 20 ms at 20 GB/s: B is held to
    what could (400 MB), so S(4) stays the model's and S(16) is 4 x bw(16) / bw(4)."""
    free = kernelmodel.predict(streaming(10_000 * MB), 16, 16)
    held = kernelmodel.predict(streaming(10_000 * MB), 16, 16, cal())
    assert held.speedup[3] == pytest.approx(free.speedup[3])
    assert held.speedup[-1] == pytest.approx(free.speedup[3] * 2, rel=0.02)
    assert "bandwidth: 10000 MB per launch" in held.basis


def test_a_gpus_kernel_is_not_capped_by_the_hosts_bandwidth():
    gpu = streaming(10_000 * MB, kind="gpu")
    assert kernelmodel.predict(gpu, 16, 16, cal()).speedup == kernelmodel.predict(gpu, 16, 16).speedup
    assert "bandwidth" not in kernelmodel.predict(gpu, 16, 16).basis


def test_the_kernel_line_carries_the_bytes_per_launch_and_replay_reads_them_back():
    k = streaming(300 * MB)
    line = json.loads(json.dumps(kernel_line(FakeProfiler, k, kernelmodel.predict(k, 16, 16, cal()), None)))
    assert line["sample"]["buffer_bytes"] == 300 * MB
    back = kernel_from_json(line)
    assert back.sample.buffer_bytes == pytest.approx(k.sample.buffer_bytes)
    assert kernelmodel.predict(back, 16, 16, cal()).speedup == pytest.approx(line_speedups(line), abs=1e-3)
    k.sample.buffer_bytes = 0
    assert kernel_line(FakeProfiler, k, None, None)["sample"]["buffer_bytes"] is None


def line_speedups(line: dict) -> list[float]:
    return [p["speedup"] for p in line["predicted"]]


def test_the_calibration_keeps_its_llc_size_and_refuses_a_bad_one():
    c = cal(llc=314572800)
    assert c.llc_bytes == 314572800
    assert machine.parse(c.to_json()).llc_bytes == 314572800
    assert cal(llc=None).llc_bytes == 0 and "llc_bytes" not in cal(llc=None).to_json()
    for bad in ("300MB", -1, 1.5, True):
        with pytest.raises(machine.CalibrationError, match="llc_bytes"):
            cal(llc=bad)


class Buffer:
    def __init__(self, size: int, ptr: int):
        self.size, self.int_ptr = size, ptr


class Kernel:
    pass


def test_buffer_arguments_are_noted_each_buffer_once_and_dropped_when_replaced():
    k, a, b = Kernel(), Buffer(1000, 1), Buffer(24, 2)
    assert profile.buffer_bytes(k) == 0
    for i, v in enumerate((a, a, 3.0)):
        profile._note_arg(k, i, v, Buffer)
    assert profile.buffer_bytes(k) == 1000  # the same buffer at two arguments: read once
    profile._note_arg(k, 1, b, Buffer)
    assert profile.buffer_bytes(k) == 1024
    profile._note_arg(k, 0, None, Buffer)  # a null (or SVM) argument where a buffer was
    assert profile.buffer_bytes(k) == 24
    plain = Kernel()
    profile._note_arg(plain, 0, 7, Buffer)
    assert not hasattr(plain, profile.ARGS_ATTR)  # no buffer, nothing kept


PROGRAM = r"""
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
prog = cl.Program(ctx, '''
__kernel void axpy(__global float *y, __global const float *x, const float a)
{ size_t i = get_global_id(0); y[i] += a * x[i]; }
__kernel void fill(__global float *y) { y[get_global_id(0)] = 1.0f; }''').build()
n = 4096
y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * n)
x = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 4 * 2 * n)
for _ in range(3):
    prog.axpy(queue, (n,), None, y, x, np.float32(2))           # __call__: 3 x 4n bytes
k = cl.Kernel(prog, "fill")
k.set_args(y)                                                    # set_args: 4n bytes
for _ in range(2):
    cl.enqueue_nd_range_kernel(queue, k, (n,), None)
k.set_arg(arg_index=0, arg=x)                                    # set_arg: 8n bytes
cl.enqueue_nd_range_kernel(queue, k, (n,), None)
queue.finish()
print("done")
"""


def test_the_hook_records_each_launchs_buffer_bytes(opencl, tmp_path):
    prog, out = tmp_path / "p.py", tmp_path / "k.jsonl"
    prog.write_text(PROGRAM)
    r = measured([str(prog)], env={**os.environ, "CORECAST_OUTPUT": str(out), "CORECAST_WINDOW_MS": "100000"})
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().strip() == "done"
    lines = {d["name"]: d for d in read_lines(out) if d["event"] == "kernel"}
    assert lines["axpy"]["sample"]["launches"] == 3 and lines["axpy"]["sample"]["buffer_bytes"] == 3 * 4096 * 4
    fill = lines["fill"]["sample"]
    assert fill["launches"] == 3 and fill["buffer_bytes"] == round((2 * 4 * 4096 + 8 * 4096) / 3)


def test_the_hook_leaves_pyopencls_kernel_methods_as_they_were_once_removed(opencl):
    code = ("import pyopencl as cl, corecast.opencl as o; before = cl._cl.Kernel.set_arg; "
            "o.instrument(); during = cl._cl.Kernel.set_arg; o.uninstrument(); "
            "print(during is not before, cl._cl.Kernel.set_arg is before)")
    r = plain(["-c", code])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().split() == ["True", "True"]


def test_the_hook_passes_this_hosts_calibration_to_a_cpu_devices_kernels(opencl, tmp_path):
    # The report finds the calibration the CPU runtime would use (CORECAST_MACHINE_FILE):
    # a CPU device's kernels then get the bandwidth cap's account, not "unmeasured".
    from corecast.model.machine.calibration import cpu_model

    doc = json.loads(cal(llc=1000).to_json())
    doc["machine"].update(cpus=os.sysconf("SC_NPROCESSORS_ONLN"), cpu_model=cpu_model())
    machine_file, prog, out = tmp_path / "m.json", tmp_path / "p.py", tmp_path / "k.jsonl"
    machine_file.write_text(json.dumps(doc))
    prog.write_text(PROGRAM)
    env = {**os.environ, "CORECAST_OUTPUT": str(out), "CORECAST_WINDOW_MS": "100000"}
    bases = {}
    for name, extra in (("without", {"CORECAST_MACHINE_FILE": ""}),
                        ("with", {"CORECAST_MACHINE_FILE": str(machine_file)})):
        r = measured([str(prog)], env={**env, **extra})
        assert r.returncode == 0, r.stderr.decode()
        bases[name] = {d["name"]: d["basis"] for d in read_lines(out) if d["event"] == "kernel"}
    if not all("bandwidth unmeasured" in b for b in bases["without"].values()):
        pytest.skip(f"not a CPU device (its kernels have no bandwidth cap): {opencl}")
    assert bases["with"].keys() == {"axpy", "fill"}
    assert not any("bandwidth unmeasured" in b for b in bases["with"].values()), bases["with"]
