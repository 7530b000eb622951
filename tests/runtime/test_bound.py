"""corecast.model.runtime.bound on synthetic samples (dicts as the bridge decodes them)."""
from __future__ import annotations

import pytest

from corecast.recording.abi import THREAD_STALLS as STALLS
from corecast.model.runtime.bound import (
    FASTEST_SHARE,
    prediction_counts,
    process_bound,
    region_bound,
    region_work,
)
from corecast.model.runtime.contention import compose_process



def region(threads=4, busy=4.0, serial=0.0, wall=1.0, nested=False, **stalls) -> dict:
    s = {k: 0.0 for k in STALLS}
    s.update(stalls)
    return {"name": "main._omp_fn.0", "object": "prog", "runtime": "openmp", "threads": threads,
            "nested": nested, "calls": 10, "wall_s": wall, "busy_s": busy, "serial_s": serial,
            "cpu_s": 0.0, "stalls_s": s, "loop_calls": 0, "hold_sampled_s": 0.0, "hold_samples": 0}


def process(threads=4, wall=1.0, cpu=1.0, hold=0.0, **stalls) -> dict:
    r = region(threads=threads, busy=cpu, wall=wall, **stalls)
    r.update(name="process", runtime="pthreads", calls=1, cpu_s=cpu, hold_sampled_s=hold)
    return r


def assert_band(pred) -> None:
    for lo, c, hi in zip(pred.low, pred.speedup, pred.high):
        assert hi >= c - 1e-12 and c >= lo - 1e-12


# ---- counts and fastest ---------------------------------------------------------------------
def test_prediction_counts_every_count_up_to_64():
    assert prediction_counts(1) == [1]
    assert prediction_counts(8) == list(range(1, 9))
    assert prediction_counts(64) == list(range(1, 65))
    assert prediction_counts(0) == [1]


def test_prediction_counts_geometric_beyond_64():
    counts = prediction_counts(1000)
    assert len(counts) <= 64
    assert counts[0] == 1 and counts[-1] == 1000
    assert counts == sorted(set(counts))


# ---- OpenMP regions -----------------------------------------------------------------------
def test_no_serial_no_imbalance_is_linear():
    pred = region_bound(region(threads=4, busy=4.0), target=16)
    assert pred.threads == list(range(1, 17))
    assert pred.speedup == pytest.approx(list(range(1, 17)))
    assert pred.low == pytest.approx(pred.speedup)
    assert pred.high == pytest.approx(pred.speedup)
    assert pred.fastest == 16
    assert pred.basis.startswith("bound:")


def test_all_serial_is_flat():
    pred = region_bound(region(threads=4, busy=4.0, serial=4.0), target=8)
    assert pred.speedup == pytest.approx([1.0] * 8)
    assert pred.high == pytest.approx([1.0] * 8)
    assert pred.low == pytest.approx([1.0] * 8)
    assert pred.fastest == 1


def test_serial_work_is_amdahl():
    # T1 = 4 s of which 1 s serial: S(n) = 4 / (1 + 3/n); work/span high = 4 / max(1, 4/n).
    pred = region_bound(region(threads=4, busy=4.0, serial=1.0), target=8)
    for n, s, hi in zip(pred.threads, pred.speedup, pred.high):
        assert s == pytest.approx(4.0 / (1.0 + 3.0 / n))
        assert hi == pytest.approx(4.0 / max(1.0, 4.0 / n))
    assert_band(pred)


def test_imbalance_lowers_central():
    even = region_bound(region(threads=4, busy=4.0, serial=0.5), target=16)
    uneven = region_bound(region(threads=4, busy=4.0, serial=0.5, imbalance=0.8), target=16)
    assert uneven.speedup[0] == pytest.approx(1.0)
    for n, a, b in zip(even.threads, even.speedup, uneven.speedup):
        if n > 1:
            assert b < a
    assert uneven.high == pytest.approx(even.high)  # the work/span bound ignores imbalance
    assert_band(uneven)
    # Beyond the measured team the linear growth makes the low curve the lower one.
    assert uneven.low[-1] < uneven.speedup[-1]


def test_band_ordering_over_many_shapes():
    for serial in (0.0, 0.1, 1.0, 3.9):
        for imbalance in (0.0, 0.05, 0.5, 2.0):
            for threads in (1, 2, 4, 16):
                pred = region_bound(region(threads=threads, busy=4.0, serial=serial,
                                           imbalance=imbalance), target=32)
                assert pred.speedup[0] == pytest.approx(1.0)
                assert all(s > 0 for s in pred.low)
                assert_band(pred)
                assert 1 <= pred.fastest <= 32


def test_sync_waits_are_not_work():
    r = region(threads=4, busy=4.0, critical=0.5, omp_barrier=0.25, mutex=0.25, imbalance=0.3,
               runqueue=0.7)
    # imbalance and runqueue are not synchronisation waits inside the busy span
    assert region_work(r) == pytest.approx(3.0)


def test_fastest_is_fewest_threads_near_the_best():
    pred = region_bound(region(threads=4, busy=4.0, serial=2.0), target=64)
    best = max(pred.speedup)
    assert pred.speedup[pred.threads.index(pred.fastest)] >= FASTEST_SHARE * best
    assert all(s < FASTEST_SHARE * best for n, s in zip(pred.threads, pred.speedup) if n < pred.fastest)


# ---- plain-thread processes (Karp-Flatt) -------------------------------------------------
def test_karp_flatt_no_parallelism_is_flat():
    pred = process_bound(process(threads=4, wall=2.0, cpu=2.0), target=8, cores=4)
    assert pred.speedup == pytest.approx([1.0] * 8)
    assert pred.fitted == ["serial_fraction"]
    assert_band(pred)


def test_karp_flatt_full_parallelism_is_linear():
    pred = process_bound(process(threads=4, wall=2.0, cpu=8.0), target=8, cores=4)
    assert pred.speedup == pytest.approx(list(range(1, 9)))
    assert pred.fastest == 8
    assert_band(pred)


def test_karp_flatt_counts_only_runnable_threads():
    # 8 threads on 2 cores kept both busy: fully parallel as far as 2 cores can show.
    pred = process_bound(process(threads=8, wall=1.0, cpu=2.0), target=4, cores=2)
    assert pred.speedup == pytest.approx([1.0, 2.0, 3.0, 4.0])


def test_karp_flatt_partial_parallelism():
    # psi = 2 on 4 threads and 4 cores: e = (1/2 - 1/4) / (1 - 1/4) = 1/3.
    pred = process_bound(process(threads=4, wall=1.0, cpu=2.0), target=8, cores=4)
    e = 1.0 / 3.0
    assert pred.speedup == pytest.approx([1.0 / (e + (1 - e) / n) for n in range(1, 9)])
    assert pred.speedup[3] == pytest.approx(2.0)  # it reproduces the measured parallelism
    assert_band(pred)
    assert pred.low[-1] < pred.speedup[-1] < pred.high[-1]


def test_one_runnable_thread_uses_sampled_hold_time():
    pred = process_bound(process(threads=4, wall=1.0, cpu=1.0, hold=0.25), target=4, cores=1)
    assert pred.fitted == []
    assert pred.speedup == pytest.approx([1.0 / (0.25 + 0.75 / n) for n in range(1, 5)])


# ---- processes with OpenMP regions: bounds composed as the runtime composes them ----------
def test_compose_process_serial_time_outside_regions():
    # 10 s of wall time, 5 s of it in a linear 4-thread region (20 s of thread work):
    # T(n) = 5 + 20 / n, relative to T(1) = 25.
    r = region(threads=4, busy=20.0, wall=5.0)
    rp = region_bound(r, target=8)
    pred = compose_process(process(threads=4, wall=10.0, cpu=25.0), [(r, rp)])
    assert pred.threads == list(range(1, 9))
    assert pred.speedup == pytest.approx([25.0 / (5.0 + 20.0 / n) for n in range(1, 9)])
    assert pred.speedup[0] == pytest.approx(1.0)
    assert_band(pred)


def test_compose_process_ignores_nested_regions():
    outer = region(threads=4, busy=20.0, wall=5.0)
    inner = region(threads=2, busy=6.0, wall=3.0, serial=6.0, nested=True)
    regions = [(outer, region_bound(outer, 8)), (inner, region_bound(inner, 8))]
    with_nested = compose_process(process(wall=10.0), regions)
    alone = compose_process(process(wall=10.0), regions[:1])
    assert with_nested.speedup == pytest.approx(alone.speedup)


def test_compose_process_without_outside_time_is_the_region():
    r = region(threads=4, busy=4.0, serial=1.0, wall=2.0)
    rp = region_bound(r, target=8)
    pred = compose_process(process(wall=2.0), [(r, rp)])
    assert pred.speedup == pytest.approx(rp.speedup)
    assert pred.low == pytest.approx(rp.low)
    assert pred.high == pytest.approx(rp.high)
