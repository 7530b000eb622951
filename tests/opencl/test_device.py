"""A device that is not a CPU, on synthetic profiles (no GPU needed): predictions to the
device's compute units with what limits them, a host that waits on the device on the
process line, and the time line with the queue wait."""
from __future__ import annotations

import json
import time

import pytest

from corecast.opencl import report
from corecast.runtime import bridge, devicewait
from corecast.model.runtime import kernelmodel, workgroups
from corecast.model.runtime.bound import TeamPrediction
from corecast.recording.record import kernel_from_json
from corecast.views import columns

from .test_predict import kernel

UNITS, MAX_GROUP = 132, 1024  # a fake GPU: an H100/H200-sized device description


def gpu_kernel(shape=((64,), (16,)), name="k", device_s=0.2, queue_s=0.0) -> object:
    k = kernel(kind="gpu", units=UNITS, shape=shape, device_s=device_s)
    k.name = name
    k.max_group = MAX_GROUP
    k.sample.cpu_measured = False  # no runtime threads to read on a GPU
    k.queue_ns = int(queue_s * 1e9)
    return k


class Prof:
    pid, window_ns, failed_reason, host_wait_ns = 7, 200_000_000, None, 0

    class shim:
        available = True

    def __init__(self, wall_s=1.0, host_wait_s=0.0):
        self.started_ns = time.monotonic_ns() - int(wall_s * 1e9)
        self.host_wait_ns = int(host_wait_s * 1e9)


def test_default_target_is_the_devices_compute_units_not_the_hosts_cores():
    assert kernelmodel.default_target(gpu_kernel(), cores=16) == UNITS
    assert kernelmodel.default_target(kernel(kind="cpu", units=4), cores=16) == 16


def test_few_work_groups_bound_the_gpu_prediction_and_are_named():
    k = gpu_kernel(shape=((64,), (16,)))  # 4 work-groups of 16
    pred = kernelmodel.predict(k, UNITS, cores=16)
    assert pred.threads[-1] == UNITS and {2, 4, 8, 16, 32, 64, 128} <= set(pred.threads)
    at = dict(zip(pred.threads, pred.speedup))
    assert at[2] == pytest.approx(2.0) and at[4] == pytest.approx(4.0) and at[UNITS] == pytest.approx(4.0)
    assert pred.fastest == 4 and pred.bottleneck == "work_groups"
    assert "4 work-groups per launch on 132 compute units" in pred.basis
    assert "work-group size 16 of at most 1024" in pred.basis
    assert "idle time inside launches is not measured" in pred.basis
    lim = workgroups.limits(k)
    assert lim == {"compute_units": UNITS, "work_groups": 4, "fewest_work_groups": 4, "work_group_size": 16,
                   "max_work_group_size": MAX_GROUP, "occupied_units": pytest.approx(4 / UNITS, abs=1e-4),
                   "groups_per_unit": 1}


def test_many_work_groups_scale_in_waves_with_a_band_for_unobserved_idle_time():
    k = gpu_kernel(shape=((1 << 20,), (256,)))  # 4096 work-groups
    pred = kernelmodel.predict(k, UNITS, cores=2)  # the host's 2 cores do not limit a GPU
    at = {n: (s, lo, hi) for n, s, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)}
    s, lo, hi = at[UNITS]
    assert s == pytest.approx(4096 / 32)  # ceil(4096 / 132) = 32 waves
    assert hi == pytest.approx(UNITS) and lo == pytest.approx(UNITS / 2, rel=0.01)
    assert all(low <= v <= high for v, low, high in at.values())
    assert at[1] == (1.0, 1.0, 1.0) and at[64][0] == pytest.approx(64.0)


def test_past_the_units_the_band_reaches_several_work_groups_resident_per_unit():
    # OpenCL does not say how many work-groups a unit runs at once; a GPU's unit held 2 of
    # 64 work-items at once on the H200 (264 work-groups took one wave on 132 units, where
    # one at a time takes 2).  The band reaches as many as the largest work-group holds.
    assert workgroups.launch_waves(2 * UNITS, UNITS, MAX_GROUP // 64) == (1, 2)
    assert workgroups.launch_waves(2 * UNITS, UNITS) == (2, 2)
    assert workgroups.launch_waves(40 * UNITS, UNITS, 16) == (3, 40)
    wide = gpu_kernel(shape=((2 * UNITS * 64,), (64,)))
    assert workgroups.resident_groups(wide) == MAX_GROUP // 64
    assert workgroups.resident_groups(gpu_kernel(shape=((4096,), None))) == 1
    # 4 work-groups of 16: one unit could hold all four, so no count is sure to gain.
    pred = kernelmodel.predict(gpu_kernel(shape=((64,), (16,))), UNITS, cores=16)
    at = {n: (s, lo, hi) for n, s, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)}
    assert at[UNITS] == (4.0, 1.0, 4.0) and at[2][1] == 1.0
    assert "nor how many work-groups a unit runs at once (1 to 64" in pred.basis


def test_runtime_chosen_local_size_leaves_the_work_groups_unknown():
    k = gpu_kernel(shape=((4096,), None))
    k.max_group = 0  # a device that did not say its largest work-group
    pred = kernelmodel.predict(k, UNITS, 2)
    assert pred.speedup[-1] == pytest.approx(UNITS) and pred.bottleneck == "unobserved"
    assert "work-groups per launch not known" in pred.basis
    assert workgroups.limits(k)["fewest_work_groups"] is None


def test_a_runtime_chosen_local_size_still_bounds_the_work_groups_from_below():
    # The H200 run of examples/opencl_device_bound.py: 262144 work-items, local size left to
    # the runtime, work-groups of at most 1024: at least 256, more than the 132 units.
    many = kernelmodel.predict(gpu_kernel(shape=((262144,), None)), UNITS, 16)
    assert workgroups.limits(gpu_kernel(shape=((262144,), None)))["fewest_work_groups"] == 256
    assert ("at least 256 work-groups per launch (the runtime chose the local size, at most 1024 "
            "work-items each): not the limit at 132 compute units") in many.basis
    at = {n: (s, lo, hi) for n, s, lo, hi in zip(many.threads, many.speedup, many.low, many.high)}
    assert at[UNITS][0] == pytest.approx(UNITS) and at[UNITS][2] == pytest.approx(UNITS)
    assert at[UNITS][1] <= 128 + 1e-9  # 256 work-groups take 2 waves on 132 units
    assert many.bottleneck == "unobserved"
    # 4096 work-items: as few as 4 work-groups, and the low end falls to them past 4 units.
    few = kernelmodel.predict(gpu_kernel(shape=((4096,), None)), UNITS, 16)
    assert "at least 4 work-groups per launch" in few.basis
    assert "the limit past 4 compute units if the runtime chose the largest" in few.basis
    at = {n: (s, lo, hi) for n, s, lo, hi in zip(few.threads, few.speedup, few.low, few.high)}
    assert at[UNITS][0] == pytest.approx(UNITS) and at[UNITS][1] == pytest.approx(4.0)
    assert at[2][1] <= 2.0 and all(lo <= s <= hi for s, lo, hi in at.values())
    # Launches of different global sizes bound nothing.
    mixed = gpu_kernel(shape=((4096,), None))
    mixed.sample.shapes = {((4096,), None), ((8192,), None)}
    assert workgroups.limits(mixed)["fewest_work_groups"] is None


def test_an_explicit_target_still_wins():
    pred = kernelmodel.predict(gpu_kernel(), 16, 16)
    assert pred.threads[-1] == 16


def test_report_table_predicts_to_the_devices_units(monkeypatch):
    shown = []
    monkeypatch.setattr(report.channel, "write", shown.append)
    monkeypatch.delenv("CORECAST_TARGET", raising=False)
    monkeypatch.delenv("CORECAST_OUTPUT", raising=False)
    monkeypatch.delenv("CORECAST_QUIET", raising=False)
    report.report(Prof(), [gpu_kernel(name="triangle"), gpu_kernel(shape=((1 << 20,), (256,)), name="smooth")])
    text = shown[0]
    assert "predicted speedup up to 132 compute units (gpu: its compute units" in text
    assert "S@132" in text and "work_groups" in text
    assert "triangle: work-group bound" in text and "smooth: work-group bound" in text


def test_a_table_of_two_devices_runs_to_the_larger_target(monkeypatch):
    """A CPU kernel (target: the host's cores) beside a GPU kernel (its 132 units): the one
    table's columns run to the larger target, so the GPU row keeps its S@132 (the smaller
    one cut every row at the host's cores)."""
    shown = []
    monkeypatch.setattr(report.channel, "write", shown.append)
    for name in ("CORECAST_TARGET", "CORECAST_OUTPUT", "CORECAST_QUIET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(report.os, "cpu_count", lambda: 4)
    cpu = kernel(kind="cpu", units=4)
    cpu.name = "host_side"
    report.report(Prof(), [gpu_kernel(name="triangle"), cpu])
    text = shown[0]
    assert "2 devices; predicted speedup up to 132 compute units" in text
    assert "S@132" in text and "band@132" in text


def test_the_kernel_table_shows_the_band_at_the_target(monkeypatch):
    """Each kernel row has the exit table's (and replay's) band@N column: how far the
    prediction at the device's units may be off, which a GPU cannot show from inside a
    launch.  The kernel table had none, while replay of the same run printed it."""
    shown = []
    monkeypatch.setattr(report.channel, "write", shown.append)
    for name in ("CORECAST_TARGET", "CORECAST_OUTPUT", "CORECAST_QUIET"):
        monkeypatch.delenv(name, raising=False)
    k = gpu_kernel(name="smooth", shape=((1 << 20,), (256,)))
    report.report(Prof(), [k])
    pred = kernelmodel.predict(k, UNITS, 2)
    head, row = [line for line in shown[0].splitlines() if line.startswith(("kernel ", "smooth"))]
    assert f"band@{UNITS}" in head
    i = pred.threads.index(UNITS)
    assert columns.band_cell(pred, UNITS) in row
    # right-aligned over the cell, which keeps its width at 132 units (66.00-132.00 did not)
    assert head.index(f"band@{UNITS}") + len(f"band@{UNITS}") == head.index(" fastest")
    assert row.index(columns.band_cell(pred, UNITS)) + 1 + columns.BAND == head.index(" fastest")
    assert pred.low[i] < pred.high[i]


def test_kernel_line_carries_the_limits_and_replays():
    k = gpu_kernel()
    line = json.loads(json.dumps(report.kernel_line(Prof(), k, kernelmodel.predict(k, UNITS, 2), None),
                                 allow_nan=False))
    assert line["limits"]["work_groups"] == 4 and line["limits"]["max_work_group_size"] == MAX_GROUP
    assert line["predicted"][-1]["threads"] == UNITS and line["future_bottleneck"] == "work_groups"
    back = kernel_from_json(line)
    assert back.max_group == MAX_GROUP and back.device_type == "gpu"
    assert kernelmodel.predict(back, UNITS, 2).speedup == kernelmodel.predict(k, UNITS, 2).speedup


def test_time_line_and_in_order_queue_note():
    a, b = gpu_kernel(name="smooth", device_s=2.1), gpu_kernel(name="triangle", device_s=2.0, queue_s=2.0)
    for k in (a, b):
        k.in_order = k.launches
    prof = Prof(wall_s=5.0, host_wait_s=4.5)
    lines = report.time_lines(prof, [(a, None, None), (b, None, None)])
    assert lines[0].startswith("time: wall 5.0")
    assert "device busy 4.100s (82% of wall)" in lines[0] and "queue wait 2.000s summed over 20 launches" in lines[0]
    assert "blocked in OpenCL calls" in lines[0]
    assert lines[1].startswith("in-order queue: 2 kernels (smooth, triangle) ran one after another")
    for k in (a, b):
        k.in_order = 0  # an out-of-order queue: nothing to say
    assert len(report.time_lines(prof, [(a, None, None), (b, None, None)])) == 1


def process_region(wall_s: float, threads: int = 22, cpu_s: float = 3.0) -> dict:
    return {"name": "process", "object": "python3", "runtime": "pthreads", "nested": False,
            "wall_s": wall_s, "threads": threads, "requested": threads, "calls": 1, "cpu_s": cpu_s,
            "busy_s": cpu_s, "serial_s": 0.0, "single_s": 0.0, "hold_s": {}, "stalls_s": {"condvar": 0.1},
            "acquisitions": {"mutex": 1000, "condvar": 10}, "contended": {"mutex": 0, "condvar": 0},
            "loop_calls": 0, "hold_sampled_s": 0.0, "hold_samples": 0, "steered_to": 0, "hist": [],
            "probe_calls": 0, "probes": {}, "team_threads": 17}


def cpu_prediction() -> TeamPrediction:
    counts = list(range(1, 17))
    return TeamPrediction(counts, [1.38] * 16, [1.0] * 16, [2.0] * 16, 12, "one-sample model", [], "serial")


def no_predictor(region):
    raise AssertionError("not predicted again")


def seen(device_s: float, wait_s: float, **kw) -> devicewait.HostSeen:
    return devicewait.HostSeen(device_s, wait_s, **kw)


def test_a_host_that_waits_on_the_device_says_so(monkeypatch):
    monkeypatch.setattr(devicewait, "_source", None)
    region, pred = process_region(10.0), cpu_prediction()
    assert bridge._opencl_host([region], [pred], no_predictor) == [pred]  # no OpenCL: unchanged
    devicewait.register(lambda: seen(8.2, 0.5))  # the device busy 82% of the wall time
    try:
        out = bridge._opencl_host([{"name": "main._omp_fn.0"}, region], [pred, pred], no_predictor)
    finally:
        devicewait.register(None)
    assert out[0] is pred
    p = out[1]
    assert p.basis.startswith("waiting on the device (82% of wall)")
    assert p.bottleneck == "waiting on device 82% of wall" and len(p.bottleneck) < 32  # the C field
    assert len(p.basis) < 96
    assert p.speedup == [1.0] * 16 and p.fastest == 1
    assert p.high[-1] == pytest.approx(1 / (0.82 + 0.18 / 16)) and p.low == [1.0] * 16


def test_host_blocked_in_opencl_calls_counts_too_and_a_busy_host_does_not(monkeypatch):
    region, pred = process_region(10.0), cpu_prediction()
    monkeypatch.setattr(devicewait, "_source", lambda: seen(1.0, 7.0))  # short kernels, long waits
    assert bridge._opencl_host([region], [pred], no_predictor)[0].basis.startswith(
        "waiting on the device (70% of wall)")
    monkeypatch.setattr(devicewait, "_source", lambda: seen(2.0, 1.0))  # the host computes
    assert bridge._opencl_host([region], [pred], no_predictor)[0] is pred
    monkeypatch.setattr(devicewait, "_source", lambda: 1 / 0)  # a broken source claims nothing
    assert bridge._opencl_host([region], [pred], no_predictor)[0] is pred
    monkeypatch.setattr(devicewait, "_source", lambda: (8.0, 0.0))  # not a HostSeen: no claim
    assert bridge._opencl_host([region], [pred], no_predictor)[0] is pred


# The H200 run of examples/opencl_two_kernels.py (dev22 gpu.jsonl): 2.03 s of wall, the
# program one Python thread (1.76 s CPU), 15 threads of numpy's OpenBLAS pool (0.128 s each:
# its spin before sleeping) and 6 of the NVIDIA driver, the device busy 3% of the wall.
H200_RUNTIME = dict(runtime_threads=21, runtime_cpu_s=15 * 0.128 + 0.0018,
                    runtime_waits_s={"condvar": 0.0}, runtime_acquisitions={"mutex": 15 + 117},
                    program_cpu_s=[1.756])


def test_a_host_busy_on_one_thread_beside_runtime_threads_is_a_serial_host(monkeypatch):
    # Before: the 21 runtime threads read as the program's parallelism, "S@16 1.64, best
    # 14, serial" on the process line.
    region = process_region(2.03, threads=23, cpu_s=3.759)
    pred = cpu_prediction()
    monkeypatch.setattr(devicewait, "_source", lambda: seen(0.0519, 0.0509, **H200_RUNTIME))
    p = bridge._opencl_host([region], [pred], no_predictor)[0]
    assert p.speedup == [1.0] * 16 and p.low == p.high == [1.0] * 16 and p.fastest == 1
    assert p.bottleneck == "serial host"
    assert p.basis == "one program thread (on the device 3% of wall); 21 runtime threads (1.92s CPU) not the program's"
    assert len(p.basis) < 96


def test_a_host_whose_workers_ended_before_the_exit_is_no_serial_host(monkeypatch):
    # One live program thread (1.76 s CPU) but 3.6 s of the program's CPU: workers that
    # ended before the exit ran the rest, so it did run in parallel.  Its own threads are
    # predicted again (the team the process record shows), never "serial host", whose S = 1
    # everywhere would tell the user threads give nothing.
    region = process_region(2.03, threads=23, cpu_s=H200_RUNTIME["runtime_cpu_s"] + 3.6)
    again = cpu_prediction()
    monkeypatch.setattr(devicewait, "_source", lambda: seen(0.0519, 0.0509, **H200_RUNTIME))
    p = bridge._opencl_host([region], [cpu_prediction()], lambda own: again)[0]
    assert p is again and p.bottleneck != "serial host"
    assert p.basis.endswith("; 21 runtime threads (1.92s CPU) not the program's")


def test_a_device_bound_host_names_the_runtime_threads_it_left_out(monkeypatch):
    region = process_region(2.03, threads=23, cpu_s=3.759)
    monkeypatch.setattr(devicewait, "_source", lambda: seen(1.8, 0.1, **H200_RUNTIME))
    p = bridge._opencl_host([region], [cpu_prediction()], no_predictor)[0]
    assert p.basis.startswith("waiting on the device (89% of wall)") and "21 runtime threads" in p.basis
    assert len(p.basis) < 96 and p.speedup == [1.0] * 16


def test_a_host_with_threads_of_its_own_is_predicted_from_them_alone(monkeypatch):
    from corecast.model.runtime.predictor import predict_window

    got = []

    def predict(own):
        got.append(own)
        return predict_window([own], 16, 16, 16, {}, False, None)[0]

    region = process_region(2.0, threads=23, cpu_s=1.92 + 3.6)  # two busy Python threads
    monkeypatch.setattr(devicewait, "_source", lambda: seen(0.05, 0.05, **dict(H200_RUNTIME, program_cpu_s=[1.8, 1.8])))
    p = bridge._opencl_host([region], [cpu_prediction()], predict)[0]
    own = got[0]
    assert own["threads"] == 2 and own["team_threads"] == 2
    assert own["cpu_s"] == pytest.approx(3.6, abs=0.01) and own["acquisitions"]["mutex"] == 1000 - 132
    assert p.basis.endswith("; 21 runtime threads (1.92s CPU) not the program's")
    assert p.speedup == predict_window([own], 16, 16, 16, {}, False, None)[0].speedup


def test_device_wait_sees_the_devices_that_are_not_cpus_and_the_runtime_threads():
    from corecast.opencl.profile import Profiler

    p = Profiler.__new__(Profiler)  # the bookkeeping alone: no pyopencl needed
    import os
    import threading

    class Shim:  # the library lists this thread and one the interpreter did not start
        names = ["mutex", "condvar"]

        def tids(self):
            return {threading.get_native_id(), os.getpid() + 10 ** 6}

        def read(self, tids):
            return [0.5, 0.25], [7, 3], [1, 0]

    p.pid, p.lock, p.sampled, p.pending, p.host_wait_ns = os.getpid(), threading.Lock(), [], [], 3_000_000_000
    p.shim, p.kernels, p.thread, p.exit_deadline, p.snaps = Shim(), {}, None, None, []
    none_ran = p.device_wait()  # no kernel ran (no device): the host and its threads still
    assert (none_ran.device_s, none_ran.wait_s) == (0.0, pytest.approx(3.0))
    p.kernels = {("c", 1): kernel(kind="cpu")}
    got = p.device_wait()
    assert (got.device_s, got.wait_s) == (0.0, pytest.approx(3.0))
    assert len(got.program_cpu_s) == 1 and got.runtime_threads == 0  # the other one is not alive
    p.kernels[("g", 2)] = gpu_kernel(device_s=4.0)
    assert p.device_wait().device_s == pytest.approx(4.0)


class _Finishing:
    """A launch's event still running when the exit first looks (pyopencl's status: 1,
    RUNNING), complete (0) from the ``after``-th look on, or never with ``after=None``."""

    def __init__(self, after):
        self.after, self.looks = after, 0

    @property
    def command_execution_status(self):
        self.looks += 1
        return 0 if self.after is not None and self.looks >= self.after else 1

    def get_profiling_info(self, which):  # queued, submit, start, end (ns): 2 s on the device
        return (0, 10, 100, 2_000_000_100)[which]


def _exiting_profiler(event):
    import os
    import threading

    from corecast.opencl.profile import Profiler
    from corecast.recording.kernelstats import KernelStats

    p = Profiler.__new__(Profiler)  # the bookkeeping alone: no pyopencl needed
    rec = KernelStats("k", "gpu0", "gpu", UNITS, "p", MAX_GROUP)
    p.pid, p.lock, p.sampled, p.host_wait_ns, p.thread, p.exit_deadline = (os.getpid(), threading.Lock(), [], 0,
                                                                         None, None)
    p.kernels, p.pending = {("k", 1): rec}, [(rec, event, False, 1, 0, 10, 0)]
    p._pi, p.offsets, p.snaps, p.timeline = (0, 1, 2, 3), {}, [], []

    class Shim:
        def tids(self):
            return set()

    p.shim = Shim()
    return p, rec


def test_device_wait_awaits_the_launches_still_in_flight_at_the_exit(monkeypatch):
    # A program that leaves with its kernels running (sys.exit, or the end of the script
    # without finish()): the process prediction asked before they ended, found no kernel
    # completed and took the OpenCL runtime's threads for the program's own (pocl: S@2 1.20,
    # fastest 2, where one that finished them was "serial host").  They are awaited, as
    # the kernel report awaits them.
    p, rec = _exiting_profiler(_Finishing(after=3))
    got = p.device_wait()
    assert got is not None and got.device_s == pytest.approx(2.0) and rec.completed == 1 and not p.pending
    # one that never ends is awaited for the exit's budget only, shared with the kernel report
    from corecast.opencl import sampling

    monkeypatch.setattr(sampling, "EXIT_WAIT_S", 0.05)
    p, rec = _exiting_profiler(_Finishing(after=None))
    got = p.device_wait()  # the host still, its runtime threads still not the program's
    assert got is not None and got.device_s == 0 and rec.completed == 0 and len(p.pending) == 1
    deadline = p.exit_deadline
    p._await_in_flight(None)
    assert p.exit_deadline == deadline


def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "opencl_cu.py"
    spec = importlib.util.spec_from_file_location("opencl_cu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_compares_a_kernel_line_with_the_measured_curve():
    bench = _bench()
    meas = {1: 0.4, 2: 0.2, 4: 0.125}  # measured S = 1, 2, 3.2
    line = {"predicted": [{"threads": n, "speedup": s, "low": lo, "high": hi}
                          for n, s, lo, hi in ((1, 1, 1, 1), (2, 2, 1.9, 2.1), (4, 4, 3.5, 4.0))],
            "future_bottleneck": None}
    c = bench.compare(meas, line, 4)
    assert c["abs_ln"] == pytest.approx(abs(__import__("math").log(4 / 3.2)))
    assert (c["held"], c["cases"]) == (1, 2)  # 2 inside its band, 4 outside
    assert bench.compare({2: 0.2, 4: 0.1}, line, 4) is None  # no T(1): nothing to compare


def test_benchmark_bad_arguments_end_in_one_line(capsys):
    bench = _bench()
    with pytest.raises(SystemExit) as exc:
        bench.main(["--max-cu", "0"])
    assert exc.value.code == 2
    assert "--max-cu must be 1..1024" in capsys.readouterr().err


HOST = r"""
import threading, time
from corecast.runtime import devicewait
devicewait.register(lambda: devicewait.HostSeen(1e6, 0.0))  # what opencl registers for a GPU always busy
worker = threading.Thread(target=time.sleep, args=(0.05,))  # measuring starts at a thread
worker.start()
worker.join()
"""


def test_the_live_process_line_says_the_host_waits_on_the_device(tmp_path):
    """The exit prediction of a Python host runs in its own interpreter: the registered
    source reaches the process line (no GPU: the source is the program's own)."""
    from .helpers import corecast_run, read_lines, text

    prog = tmp_path / "host.py"
    prog.write_text(HOST)
    out = tmp_path / "p.jsonl"
    r = corecast_run(["--json-out", str(out)], [str(prog)])
    err = text(r.stderr)
    assert r.returncode == 0, err
    assert "waiting on device 100% of wall" in err
    assert "speedups: waiting on the device (100% of wall)" in err
    proc = [d for d in read_lines(out) if d["event"] == "process"][-1]
    assert all(p["speedup"] == 1.0 for p in proc["predicted"])


def test_a_host_waiting_on_a_cpu_device_is_not_told_cpu_threads_do_not_help(monkeypatch):
    # pocl's kernels run on this machine's cores (its compute units), so "more CPU threads
    # do not shorten it" beside a kernel table that predicts S@2 1.7-1.85 contradicted it
    # (examples/opencl_device_bound.py on pocl, session 34).
    region, pred = process_region(10.0), cpu_prediction()
    monkeypatch.setattr(devicewait, "_source", lambda: seen(0.0, 8.9, cpu_device_s=9.5))
    p = bridge._opencl_host([region], [pred], no_predictor)[0]
    assert p.basis.startswith("waiting on the CPU device (89% of wall): the kernels scale with its compute units")
    assert "do not shorten" not in p.basis and len(p.basis) < 96
    assert p.speedup == [1.0] * 16 and p.fastest == 1  # the host's own threads still give nothing
    monkeypatch.setattr(devicewait, "_source", lambda: seen(9.0, 8.9, cpu_device_s=0.5))  # a GPU's
    assert bridge._opencl_host([region], [pred], no_predictor)[0].basis.startswith(
        "waiting on the device (90% of wall): more CPU threads do not shorten it")
