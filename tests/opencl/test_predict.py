"""Kernel samples to stalls and predictions, and the JSON line, on made-up samples."""
from __future__ import annotations

import json

import pytest

from corecast.io import settings
from corecast.opencl.report import KERNEL_STALLS, _top, kernel_line, write_lines
from corecast.model.runtime import kernelmodel as predict
from corecast.model.runtime import workgroups
from corecast.recording.kernelstats import KernelStats


def kernel(cpu_s=0.8, device_s=0.2, units=4, launches=10, kind="cpu", waits=None, runq_s=0.0,
           shape=((4096,), None)) -> KernelStats:
    k = KernelStats("k", "dev", kind, units)
    k.launches = k.completed = launches
    k.device_ns = int(device_s * 1e9)
    k.sizes = {shape: launches}
    s = k.sample
    s.launches = launches
    s.device_ns = int(device_s * 1e9)
    s.cpu_ns = cpu_s * 1e9
    s.runq_ns = runq_s * 1e9
    s.cpu_measured = True
    s.waits = dict(waits or {})
    s.shapes = {shape}
    return k


def test_busy_compute_units_scale_linearly_up_to_the_sampled_count():
    pred = predict.predict(kernel(cpu_s=0.8), target=8, cores=8)
    assert pred.threads == list(range(1, 9))
    assert pred.speedup[0] == pytest.approx(1.0)
    assert pred.speedup[3] == pytest.approx(4.0, rel=0.02)
    assert pred.fastest == 8
    assert predict.sample_stalls(kernel(cpu_s=0.8))["imbalance"] == pytest.approx(0.0, abs=1e-9)


def test_past_the_sampled_count_each_busy_unit_is_slower():
    """Units all busy at 4 (no idle, no waits: the sample cannot see a slower unit): past 4
    each busy unit runs at 1 / (1 + sigma (b - 1)) against 1 / (1 + 3 sigma) at 4, Gunther's
    contention term (issue #42: on the 16-core machine pocl kernels with their units busy
    reached S(16) of 9-13, predicted 16 before).  Up to the sampled count nothing changes,
    and the band's high end stays the no-loss prediction's."""
    sigma = predict.UNIT_CONTENTION
    assert 0 < sigma < 0.2
    pred = predict.predict(kernel(cpu_s=0.8), target=16, cores=16)
    import corecast.model.runtime.kernelmodel as km

    was, km.UNIT_CONTENTION = km.UNIT_CONTENTION, 0.0
    try:
        free = predict.predict(kernel(cpu_s=0.8), target=16, cores=16)
    finally:
        km.UNIT_CONTENTION = was
    assert free.speedup[-1] == pytest.approx(16.0, rel=0.02)
    assert pred.speedup[:4] == free.speedup[:4] and pred.low[:4] == free.low[:4]
    expect = free.speedup[-1] * (1 + sigma * (free.speedup[3] - 1)) / (1 + sigma * (free.speedup[-1] - 1))
    assert pred.speedup[-1] == pytest.approx(expect, rel=1e-9)
    assert pred.speedup[-1] < 0.8 * free.speedup[-1]
    assert pred.high == free.high  # unobserved: a kernel that loses nothing is not ruled out
    assert all(lo <= s <= hi for lo, s, hi in zip(pred.low, pred.speedup, pred.high))
    assert pred.low[-1] < free.low[-1]
    assert all(b > a for a, b in zip(pred.speedup, pred.speedup[1:]))  # slower units, still a gain
    assert "slower with more busy past the sampled 4" in pred.basis and "unit_contention" in pred.fitted


def test_no_unit_loss_where_no_more_units_are_busy():
    # 4 work-groups sampled at 4 units: no more than 4 are ever busy, so past 4 nothing is
    # lost per unit (nor gained); a GPU's kernel has no host cores to share.
    k = kernel(cpu_s=0.8, units=4, shape=((64,), (16,)))
    pred = predict.predict(k, target=16, cores=16)
    assert pred.speedup[-1] == pytest.approx(pred.speedup[3]) and "slower with more busy" not in pred.basis
    gpu = predict.predict(kernel(kind="gpu", units=8), 16, 16)
    assert gpu.speedup[-1] == pytest.approx(16.0) and "slower with more busy" not in gpu.basis
    assert predict.predict(kernel(cpu_s=0.8), target=4, cores=4).speedup[-1] == pytest.approx(4.0, rel=0.02)


def test_the_benchmark_chose_the_unit_contention():
    """kernelmodel.UNIT_CONTENTION is what benchmarks/kernel_loss.py chooses on the saved
    pocl run, and leave-one-kernel-out it beats no loss from 2 and from 4 units (the reason
    it ships; the figures themselves are the benchmark's, benchmarks/opencl16/README.md)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "kernel_loss.py"), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["chosen_on_all"] == predict.UNIT_CONTENTION
    for run in ("2", "4"):
        held, before = result["held_out"][run], result["no_loss"][run]
        assert held["median_abs_ln"] < before["median_abs_ln"]


def test_idle_compute_units_are_imbalance_that_grows():
    balanced = predict.predict(kernel(cpu_s=0.8), 16, 16)
    idle = predict.predict(kernel(cpu_s=0.6), 16, 16)
    assert idle.speedup[-1] < balanced.speedup[-1]
    assert idle.bottleneck == "imbalance"
    lost = predict.sample_stalls(kernel(cpu_s=0.6))
    assert lost["imbalance"] == pytest.approx(0.2)


def test_shim_waits_say_where_idle_time_went_and_never_exceed_it():
    lost = predict.sample_stalls(kernel(cpu_s=0.6, waits={"condvar": 0.05, "mutex": 0.01}))
    assert lost["condvar"] == pytest.approx(0.05) and lost["mutex"] == pytest.approx(0.01)
    assert lost["imbalance"] == pytest.approx(0.14)
    clipped = predict.sample_stalls(kernel(cpu_s=0.6, waits={"condvar": 0.3, "mutex": 0.1}))
    assert sum(clipped.values()) == pytest.approx(0.2)
    assert clipped["condvar"] == pytest.approx(0.15) and clipped["imbalance"] == pytest.approx(0.0)


def test_run_queue_wait_is_other_load_not_imbalance():
    lost = predict.sample_stalls(kernel(cpu_s=0.4, runq_s=0.4))
    assert lost["runqueue"] == pytest.approx(0.4) and lost["imbalance"] == pytest.approx(0.0)
    reg = predict.region(kernel(cpu_s=0.4, runq_s=0.4))
    assert reg["wall_s"] == pytest.approx(0.1) and reg["busy_s"] == pytest.approx(0.4)


def test_stalls_scale_from_the_sample_to_all_launches():
    k = kernel(cpu_s=0.6)
    k.device_ns *= 3
    assert predict.stalls(k)["imbalance"] == pytest.approx(0.6)


def test_work_groups_cap_the_speedup():
    k = kernel(shape=((64,), (16,)))
    assert workgroups.work_groups(k) == 4
    pred = predict.predict(k, target=8, cores=8)
    assert max(pred.speedup) <= 4.0 + 1e-9 and max(pred.high) <= 4.0 + 1e-9
    assert pred.fastest == 4 and pred.bottleneck == "work_groups"
    assert workgroups.work_groups(kernel(shape=((100, 10), (16, 4)))) == 7 * 3


def test_past_its_work_groups_a_kernel_gains_nothing_even_when_they_are_unequal():
    # 4 work-groups of unequal work sampled at 4 compute units, 2.27 of them busy on
    # average (pocl, examples' triangle): each group already had a unit of its own, so the
    # launch lasts as long as the largest group at 16 units too.  Before: S@16 = 4, the
    # speedup of 4 equal groups, with a band [3.0, 4.0] that missed the measured 2.28.
    k = kernel(cpu_s=0.2 * 2.27, device_s=0.2, units=4, shape=((64,), (16,)))
    pred = predict.predict(k, target=16, cores=16)
    at = {n: (v, lo, hi) for n, v, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)}
    assert at[16] == at[4] and at[8] == at[4]
    assert at[4][1] <= 2.27 <= at[4][2] and at[16][0] == pytest.approx(2.27, rel=0.1)
    assert pred.bottleneck == "work_groups" and pred.fastest <= 4
    assert "4 work-groups per launch: no gain past 4 compute units" in pred.basis


def test_below_its_work_groups_the_band_reaches_the_bound_of_unsplittable_groups():
    # Sampled at 2 units with 1.47 busy: the largest of 4 work-groups took at most a
    # launch, so on 3 units a launch takes at most B/3 + (2/3) T0 (Graham's bound).
    k = kernel(cpu_s=0.2 * 1.47, device_s=0.2, units=2, shape=((64,), (16,)))
    pred = predict.predict(k, target=16, cores=16)
    at = {n: (v, lo, hi) for n, v, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high)}
    assert at[3][1] <= 1 / (1 / 3 + (2 / 3) / 1.47) + 1e-9
    assert at[16] == at[4]


def test_devices_other_than_cpus_get_no_stalls_but_a_prediction():
    k = kernel(kind="gpu", units=8)
    assert predict.sample_stalls(k) is None and predict.stalls(k) is None
    assert predict.predict(k, 16, 2).speedup[-1] > 2  # no CPU run queue in the way


def test_no_sample_no_prediction():
    k = kernel()
    k.sample.launches = 0
    assert predict.predict(k, 4, 4) is None
    assert predict.memory_model(kernel()) is None


class FakeProfiler:
    pid = 42
    window_ns = 200_000_000

    class shim:
        available = True


def test_kernel_line_is_strict_json_with_the_contract_fields(tmp_path):
    k = kernel(cpu_s=0.7, waits={"condvar": 0.05})
    pred = predict.predict(k, 4, 4)
    line = kernel_line(FakeProfiler, k, pred, None)
    text = json.dumps(line, allow_nan=False)
    back = json.loads(text)
    assert back["event"] == "kernel" and back["runtime"] == "opencl" and back["calls"] == 10
    assert back["wall_s"] == pytest.approx(0.2) and back["threads"] == 4
    assert [p["threads"] for p in back["predicted"]] == [1, 2, 3, 4]
    assert back["fastest_threads"] == pred.fastest
    assert set(back["stalls_s"]) == set(predict.SHOWN)
    assert "runtime_waits" in back["inputs"]["measured"] and "predicted_nodes" not in back
    out = tmp_path / "x.jsonl"
    out.write_text('{"event": "process"}\n')
    write_lines(str(out), [line, line])
    rows = out.read_text().splitlines()
    assert len(rows) == 3 and json.loads(rows[2])["name"] == "k"


def test_snapshot_intervals_give_each_interleaved_kernel_its_own_busy_time():
    from corecast.opencl.profile import Profiler

    p = Profiler.__new__(Profiler)  # the attribution alone: no pyopencl needed
    p.snaps, p.timeline, p.normal, p.rhs, p.busy_max, p.sampled, p.pending = [], [], {}, {}, {}, [], []

    class NoShim:
        names: list = []

    p.shim = NoShim
    wide, narrow = kernel(units=2), kernel(units=2)  # 2 busy compute units, then 1
    launches, t = [], 0
    for _ in range(20):
        launches.append((wide, t, t + 3_000_000, 2.0))
        t += 3_500_000
        launches.append((narrow, t, t + 1_000_000, 1.0))
        t += 1_500_000  # the workers sleep in between

    def busy(x):
        return sum(rate * max(0, min(x, e) - s) for _, s, e, rate in launches)

    p.snaps = [(x, busy(x), None, 2, 0.0) for x in range(0, t + 2_000_000, 2_000_000)]
    p.timeline = [(r, s, e) for r, s, e, _ in launches]
    wide.sample.device_ns, narrow.sample.device_ns = 60_000_000, 20_000_000
    p._finalize(force=True)
    p._solve()
    assert len(p.snaps) == 1
    assert wide.sample.cpu_ns == pytest.approx(120_000_000, rel=0.01)
    assert narrow.sample.cpu_ns == pytest.approx(20_000_000, rel=0.01)
    assert predict.sample_stalls(narrow)["imbalance"] == pytest.approx(0.02, rel=0.02)


def test_node_counts_on_a_target_machine(monkeypatch):
    """With a machine description a CPU kernel gets node counts like an OpenMP region:
    without memory counters from its contention model alone, which the basis says."""
    monkeypatch.delenv(settings.TARGET_MACHINE, raising=False)
    assert predict.memory_model(kernel()) is None
    k = kernel(cpu_s=0.8)
    nodes = predict.memory_model(k, "two-socket")
    assert nodes.cores == [16, 32] and nodes.speedup[0] == pytest.approx(1.0)
    # all units busy: it scales as the kernel's own prediction does (its units slower past 4)
    whole = predict.predict(k, 32, 32).speedup[-1] / predict.predict(k, 16, 16).speedup[-1]
    assert nodes.speedup[1] == pytest.approx(whole, rel=0.05) and nodes.speedup[1] > 1.2
    assert "memory traffic unknown" in nodes.basis
    idle = predict.memory_model(kernel(cpu_s=0.4), "two-socket")
    assert idle.speedup[1] < nodes.speedup[1]  # half the units idle: imbalance grows
    line = kernel_line(FakeProfiler, k, predict.predict(k, 4, 4), nodes)
    back = json.loads(json.dumps(line, allow_nan=False))
    assert [p["nodes"] for p in back["predicted_nodes"]] == [1, 2]
    assert back["fastest_nodes"] == nodes.fastest and back["numa"]["machine"].startswith("two-socket")
    assert predict.memory_model(kernel(kind="gpu"), "two-socket") is None
    with pytest.raises(ValueError, match="no such file"):
        predict.memory_model(kernel(), "/nonexistent/m.json")


def test_a_cpu_devices_kernel_gets_the_empirical_band_regions_get():
    """The band around a pocl kernel's prediction is at least the one every CPU region's
    gets (model/runtime/spread.py); before, it was the model's own, 1.00-wide at 16 for a
    busy kernel, and held none of the kernels measured at 1..N compute units."""
    import math

    from corecast.model.runtime import spread

    pred = predict.predict(kernel(cpu_s=0.8), 16, 16)
    s = pred.speedup[-1]
    assert pred.low[-1] <= s * math.exp(spread.LOW_PER_DOUBLING * 4) * (1 + 1e-9)
    assert pred.high[-1] >= s * math.exp(spread.HIGH_PER_DOUBLING * 4) * (1 - 1e-9)
    assert pred.high[-1] / pred.low[-1] > 1.5


def test_the_kernel_table_names_stalls_whole_as_the_exit_table_does():
    """A kernel's stall cell keeps whole categories and says where one was left out
    (``views.columns.stall_cell``): it was cut at 30 characters, 'runqueue 70%,
    imbalance 8%, co' on examples/opencl_two_kernels.py."""
    k = kernel(cpu_s=0.0, device_s=1.0, units=2)
    cell = _top({"runqueue": 1.4, "imbalance": 0.16, "condvar": 0.12}, k)
    assert cell == "runqueue 70%, imbalance 8%, …" and len(cell) <= KERNEL_STALLS
    assert _top({"runqueue": 1.4, "imbalance": 0.16}, k) == "runqueue 70%, imbalance 8%"
