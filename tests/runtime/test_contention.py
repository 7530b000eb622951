"""corecast.model.runtime.contention on synthetic samples with known answers (dicts as the
bridge decodes them).  Samples with locks are built self-consistently: their measured
waits are what the M/M/1/N/N queue predicts at the sampled team size."""
from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from corecast.model.queueing import waiting_time
from corecast.model.runtime import bound
from corecast.recording.abi import THREAD_STALLS as STALLS
from corecast.model.runtime.contention import (
    LOOP_CALL_COST_S,
    barrier_episodes,
    barrier_latency,
    compose_process,
    process_contention,
    region_contention,
)
from corecast.model.runtime.lockqueue import HANDOFF_PRIOR_S
from corecast.model.runtime.teamcurve import ContentionPrediction



def region(threads=4, busy=4.0, serial=0.0, wall=None, calls=10, acq=None, contended=None,
           loop_calls=0, nested=False, **stalls) -> dict:
    s = {k: 0.0 for k in STALLS}
    s.update(stalls)
    a = {k: 0 for k in STALLS}
    a.update(acq or {})
    c = {k: 0 for k in STALLS}
    c.update(contended or {})
    if wall is None:  # no team overhead: wall = mean thread span
        wall = (busy + s["imbalance"]) / threads
    return {"name": "main._omp_fn.0", "object": "prog", "runtime": "openmp", "threads": threads,
            "nested": nested, "calls": calls, "wall_s": wall, "busy_s": busy, "serial_s": serial,
            "cpu_s": 0.0, "stalls_s": s, "acquisitions": a, "contended": c,
            "loop_calls": loop_calls, "hold_sampled_s": 0.0, "hold_samples": 0}


def locked_region(n0, think, hold, acquisitions=10_000, cat="critical", calls=10, wait=None,
                  contended=None) -> dict:
    """A loop of ``acquisitions`` lock cycles (think, then hold) shared by ``n0`` threads;
    the measured wait per acquisition is the queue's unless given."""
    lam = math.inf if think == 0 else 1.0 / think
    w = waiting_time(n0, lam, 1.0 / hold) if wait is None else wait
    busy = acquisitions * (think + hold + w)
    return region(threads=n0, busy=busy, serial=acquisitions * hold, calls=calls,
                  acq={cat: acquisitions}, contended={cat: contended or 0},
                  **{cat: acquisitions * w})


def process(threads=4, wall=1.0, cpu=1.0, hold=0.0, hold_samples=0, acq=None, contended=None,
            **stalls) -> dict:
    r = region(threads=threads, busy=cpu, wall=wall, calls=1, acq=acq, contended=contended,
               **stalls)
    r.update(name="process", runtime="pthreads", cpu_s=cpu, hold_sampled_s=hold,
             hold_samples=hold_samples)
    return r


def assert_sane(pred, target=None) -> None:
    assert isinstance(pred, ContentionPrediction)
    assert isinstance(pred, bound.TeamPrediction)
    if target is not None:
        assert pred.threads == bound.prediction_counts(target)
    assert pred.threads[0] == 1
    assert pred.speedup[0] == 1.0
    assert pred.low[0] == pytest.approx(1.0) and pred.high[0] == pytest.approx(1.0)
    for lo, c, hi in zip(pred.low, pred.speedup, pred.high):
        assert 0 < lo <= c <= hi and math.isfinite(hi)
    assert pred.fastest in pred.threads
    best = max(pred.speedup)
    i = pred.threads.index(pred.fastest)
    assert pred.speedup[i] >= bound.FASTEST_SHARE * best
    assert all(s < bound.FASTEST_SHARE * best for s in pred.speedup[:i])
    assert pred.basis.startswith("contention model:") and len(pred.basis) < 96
    assert len(",".join(pred.fitted)) < 96


# ---- no contention ------------------------------------------------------------------------
def test_no_stalls_is_linear_up_to_cores():
    pred = region_contention(region(threads=4, busy=4.0), target=16, cores=16)
    assert_sane(pred, 16)
    assert pred.speedup == pytest.approx(list(range(1, 17)))
    assert pred.low == pytest.approx(pred.speedup)
    assert pred.high == pytest.approx(pred.speedup)
    assert pred.fastest == 16
    assert pred.bottleneck is None
    assert pred.fitted == []


def test_oversubscription_flattens():
    pred = region_contention(region(threads=4, busy=4.0), target=32, cores=8)
    assert_sane(pred, 32)
    assert pred.speedup == pytest.approx([min(n, 8) for n in range(1, 33)])
    assert pred.fastest == 8
    assert pred.bottleneck == "runqueue"


def test_sample_taken_oversubscribed_is_deflated():
    # 8 threads on 4 cores: every thread's busy span is twice its CPU work.
    r = region(threads=8, busy=16.0)
    pred = region_contention(r, target=8, cores=4)
    assert pred.speedup == pytest.approx([1, 2, 3, 4, 4, 4, 4, 4])
    assert "cpu_share" in pred.fitted


def test_single_blocks_are_amdahl():
    # T1 = 4 s per 10 calls, 1 s of it in single blocks (no locks taken):
    # the others wait (n0 - 1) x single at the barrier after it, which is not imbalance.
    r = region(threads=4, busy=4.0 + 3.0, serial=1.0, omp_barrier=3.0)
    pred = region_contention(r, target=8, cores=8)
    assert_sane(pred, 8)
    assert pred.speedup == pytest.approx([4.0 / (1.0 + 3.0 / n) for n in range(1, 9)])
    assert pred.bottleneck == "serial"


# ---- locks ---------------------------------------------------------------------------------
def test_fully_locked_loop_gains_nothing():
    r = locked_region(n0=4, think=0.0, hold=1e-4)
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert pred.speedup == pytest.approx([1.0] * 64, abs=1e-9)
    assert pred.high == pytest.approx([1.0] * 64, abs=1e-9)
    assert pred.fastest == 1
    assert pred.bottleneck == "critical"


def test_lock_wait_is_the_queue_waiting_time():
    think, hold, n0 = 3e-4, 1e-4, 2
    pred = region_contention(locked_region(n0, think, hold), target=16, cores=64)
    for n, s in zip(pred.threads, pred.speedup):
        w = waiting_time(n, 1.0 / think, 1.0 / hold)
        assert s == pytest.approx((think + hold) / ((think + hold + w) / n), rel=1e-9)


@pytest.mark.parametrize("n0", [1, 2, 4])
def test_hot_lock_saturates(n0):
    # Light at 1 thread (no waits), hot at 2: S(n) flattens at (Z + H) / H = 4.
    think, hold = 3e-4, 1e-4
    pred = region_contention(locked_region(n0, think, hold), target=64, cores=64)
    assert_sane(pred, 64)
    limit = (think + hold) / hold
    # (at n0 = 1 the assumed hand-off of 100 ns adds about 0.1% here)
    assert pred.speedup[1] == pytest.approx(2 * (think + hold) / (think + hold
                                            + waiting_time(2, 1 / think, 1 / hold)), rel=2e-3)
    assert pred.speedup[-1] == pytest.approx(limit, rel=0.01)
    # deterministic: min(n, limit) exactly (the hand-off assumed at n0 = 1 shaves 0.1%)
    assert max(pred.high) == pytest.approx(limit, rel=2e-3)
    assert pred.high[:4] == pytest.approx([1, 2, 3, 4], rel=2e-3)
    assert all(b >= a * (1 - 1e-3) for a, b in zip(pred.speedup, pred.speedup[1:]))
    # low band: holds +25%, and at n0 = 1 the assumed hand-off growing linearly with the team
    handoff = HANDOFF_PRIOR_S * 64 if n0 == 1 else 0.0
    assert pred.low[-1] == pytest.approx((think + hold) / (1.25 * hold + handoff), rel=0.01)
    assert pred.bottleneck == "critical"
    assert pred.fastest < 16  # nothing to gain once the lock saturates
    assert "think_time" in pred.fitted


def test_sample_at_any_team_gives_the_same_curve():
    think, hold = 5e-4, 1e-4
    curves = [region_contention(locked_region(n0, think, hold), 32, 64).speedup for n0 in (1, 2, 8)]
    assert curves[2] == pytest.approx(curves[1], rel=1e-9)
    # n0 = 1: the assumed hand-off (40 ns, growing as sqrt(n)) against 100 us holds
    assert curves[1] == pytest.approx(curves[0], rel=3e-3)


def test_model_reproduces_the_sample():
    # With team overhead and imbalance too: T(n0) is the measured wall time per call.
    think, hold, n0, acq, calls = 2e-4, 1e-4, 4, 10_000, 10
    w = waiting_time(n0, 1 / think, 1 / hold)
    busy = acq * (think + hold + w)
    wall = (busy + 0.2) / n0 + 0.05
    r = region(threads=n0, busy=busy, serial=acq * hold, calls=calls, wall=wall,
               acq={"critical": acq}, critical=acq * w, imbalance=0.2)
    pred = region_contention(r, target=8, cores=8)
    t1 = acq * (think + hold) / calls
    assert pred.speedup[n0 - 1] == pytest.approx(t1 / (wall / calls), rel=1e-9)
    assert pred.work_s == pytest.approx(t1 * calls)


def test_longer_waits_than_the_queue_fit_a_handoff():
    think, hold, n0 = 4e-4, 1e-4, 4
    w = 3 * waiting_time(n0, 1 / think, 1 / hold)
    r = locked_region(n0, think, hold, wait=w, contended=5000)
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert "handoff" in pred.fitted
    t1 = think + hold
    assert pred.speedup[n0 - 1] == pytest.approx(n0 * t1 / (t1 + w), rel=1e-6)
    plain = region_contention(locked_region(n0, think, hold), target=64, cores=64)
    assert pred.speedup[-1] < plain.speedup[-1]


def test_few_contended_acquisitions_fit_nothing():
    think, hold, n0 = 4e-4, 1e-4, 4
    w = 3 * waiting_time(n0, 1 / think, 1 / hold)
    pred = region_contention(locked_region(n0, think, hold, wait=w, contended=3), 64, 64)
    assert "handoff" not in pred.fitted
    plain = region_contention(locked_region(n0, think, hold), target=64, cores=64)
    assert pred.speedup == pytest.approx(plain.speedup)


def test_shorter_waits_on_one_lock_mean_steadier_holds():
    think, hold, n0 = 4e-4, 1e-4, 4
    w = 0.3 * waiting_time(n0, 1 / think, 1 / hold)
    pred = region_contention(locked_region(n0, think, hold, wait=w, contended=500), 64, 64)
    assert_sane(pred, 64)
    assert "lock_cv" in pred.fitted
    t1 = think + hold
    assert pred.speedup[n0 - 1] == pytest.approx(n0 * t1 / (t1 + w), rel=1e-6)
    # one critical section: the limit stays (Z + H) / H
    assert pred.speedup[-1] == pytest.approx(t1 / hold, rel=0.01)


def test_shorter_waits_on_omp_locks_mean_several_locks():
    think, hold, n0 = 4e-4, 1e-4, 4
    w = 0.2 * waiting_time(n0, 1 / think, 1 / hold)
    r = locked_region(n0, think, hold, cat="omp_lock", wait=w, contended=500)
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert "lock_copies" in pred.fitted
    t1 = think + hold
    assert pred.speedup[n0 - 1] == pytest.approx(n0 * t1 / (t1 + w), rel=1e-6)
    assert pred.speedup[-1] > 1.5 * t1 / hold  # striped locks: beyond one lock's limit


def test_unobserved_omp_lock_contention_widens_the_band():
    # One thread: the lock's contention cannot be seen; the high curve takes it as striped.
    pred = region_contention(locked_region(1, 3e-4, 1e-4, cat="omp_lock"), 16, 16)
    assert pred.high == pytest.approx(list(range(1, 17)))
    assert pred.speedup[-1] == pytest.approx(4.0, rel=0.02)


def test_two_lock_kinds_share_the_measured_hold():
    acq, think, hold = 10_000, 4e-4, 1e-4
    r = region(threads=1, busy=acq * (think + hold), serial=acq * hold,
               acq={"critical": acq // 2, "atomic": acq // 2})
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert "hold_split" in pred.fitted
    # two servers of half the load each: the limit is twice one lock's
    assert pred.speedup[-1] == pytest.approx(2 * (think + hold) / hold, rel=0.05)
    assert pred.bottleneck in ("critical", "atomic")


# ---- imbalance, loops, team overhead --------------------------------------------------------
def test_imbalance_lowers_speedup_and_grows():
    even = region_contention(region(threads=4, busy=4.0), target=64, cores=64)
    uneven = region_contention(region(threads=4, busy=4.0, imbalance=0.8), target=64, cores=64)
    assert_sane(uneven, 64)
    for a, b in zip(even.speedup[1:], uneven.speedup[1:]):
        assert b < a
    efficiency = [s / n for n, s in zip(uneven.threads, uneven.speedup)]
    assert all(b < a for a, b in zip(efficiency[1:], efficiency[2:]))
    # at n0 the measured idle share: T(4) = (4 + 0.8) / 4 per 10 calls
    assert uneven.speedup[3] == pytest.approx(4.0 / 1.2)
    assert uneven.bottleneck == "imbalance"
    assert uneven.low[-1] < uneven.speedup[-1] < uneven.high[-1]


def barriered(threads=4, calls=100, episodes=48, phase=25e-6, wait=5e-6) -> dict:
    """A region of ``episodes`` barrier phases per call (the last one the region's end),
    each ``phase`` of work per thread followed by ``wait`` at the barrier."""
    r = region(threads=threads, calls=calls, busy=calls * threads * episodes * (phase + wait),
               acq={"omp_barrier": calls * threads * (episodes - 1)},
               omp_barrier=calls * threads * (episodes - 1) * wait, imbalance=calls * threads * wait)
    r["busy_s"] -= r["stalls_s"]["imbalance"]  # the end barrier's wait is not busy time
    r["wall_s"] = calls * episodes * (phase + wait)
    return r


def test_barrier_latency_is_the_smallest_idle_per_barrier():
    fine = barriered(episodes=48, wait=5e-6)
    coarse = barriered(episodes=1, phase=30e-3, wait=8e-3, calls=8)
    assert barrier_episodes(fine) == pytest.approx(48)
    assert barrier_episodes(coarse) == pytest.approx(1)
    assert barrier_latency([fine, coarse]) == pytest.approx(5e-6)
    # One region bounds nothing but itself; one-call, nested and one-thread regions count not.
    assert barrier_latency([coarse]) == 0.0
    assert barrier_latency([coarse, {**fine, "calls": 1}]) == 0.0
    assert barrier_latency([coarse, {**fine, "nested": True}]) == 0.0
    assert barrier_latency([coarse, {**fine, "threads": 1}]) == 0.0


def latest_of(n: int, n0: int) -> float:
    """How the latest of n threads' delays grows against n0's (teamcurve's g)."""
    return math.sqrt(math.log(n) / math.log(n0))


def test_barrier_latency_does_not_shrink_with_the_team():
    fine = barriered(episodes=48, phase=25e-6, wait=5e-6)
    spread = region_contention(fine, target=16, cores=16)
    latency = region_contention(fine, target=16, cores=16, latency=5e-6)
    assert_sane(latency, 16)
    assert "barrier_latency" in latency.fitted and "barrier_latency" not in spread.fitted
    # Both go through the sample at n0 = 4; beyond it the latency's share stays.
    assert latency.speedup[3] == pytest.approx(spread.speedup[3])
    assert latency.speedup[15] < spread.speedup[15]
    work = 4 * 48 * 25e-6
    # The 47 barriers inside each call wait for the latest of 16 threads' delays, which
    # grow as the latest of n draws; the region's end keeps its latency.
    assert latency.speedup[15] == pytest.approx(work / (work / 16 + 5e-6 * (1 + 47 * latest_of(16, 4))))
    # The band's high end is the constant latency (the model before the growth).
    assert latency.high[15] == pytest.approx(work / (work / 16 + 48 * 5e-6))
    # Below n0 the latest of fewer threads comes sooner.
    assert latency.speedup[1] > work / (work / 2 + 48 * 5e-6)
    # A coarse region's wait is mostly spread: the same latency hardly moves it.
    coarse = barriered(episodes=1, phase=30e-3, wait=8e-3, calls=8)
    a = region_contention(coarse, target=16, cores=16)
    b = region_contention(coarse, target=16, cores=16, latency=5e-6)
    assert b.speedup[15] == pytest.approx(a.speedup[15], rel=1e-3)


def test_the_region_end_barriers_latency_stays_constant():
    """One barrier per call, the region's end: its latency is the join's and does not grow
    with the team (Rodinia's lud and nw: those waits shrank from 2 to 16 threads)."""
    ends = barriered(episodes=1, phase=200e-6, wait=20e-6, calls=500)
    pred = region_contention(ends, target=16, cores=16, latency=20e-6)
    work = 4 * 200e-6
    assert pred.speedup[15] == pytest.approx(work / (work / 16 + 20e-6))


def test_process_pthread_barriers_passed_many_times_grow_with_the_team():
    """A process whose threads pass a pthread barrier 1000 times: the wait per episode is
    the latest of n threads' delays (streamcluster's wake-up chain: 7, 10 and 24 us per
    episode at 2, 4 and 16 threads), not a spread of the work that splitting shrinks."""
    once = process_contention(process(threads=4, cpu=4.0, wall=1.25, pthread_barrier=1.0,
                                      acq={"pthread_barrier": 4}), target=16, cores=16)
    many = process_contention(process(threads=4, cpu=4.0, wall=1.25, pthread_barrier=1.0,
                                      acq={"pthread_barrier": 4000}), target=16, cores=16)
    assert_sane(many, 16)
    for pred in (once, many):
        assert pred.speedup[3] == pytest.approx(4.0 / 1.25, rel=1e-6)
    assert "barrier_latency" in many.fitted and "barrier_latency" not in once.fitted
    # 0.25 s per thread at the barriers: kept as the latest of 16 draws against 4's ...
    assert many.speedup[15] == pytest.approx(4.0 / (4.0 / 16 + 0.25 * latest_of(16, 4)), rel=1e-6)
    # ... where a barrier passed once spreads with the work per thread
    assert once.speedup[15] == pytest.approx(4.0 / (4.0 / 16 + 0.25 * 0.5 * latest_of(16, 4)), rel=1e-6)
    assert many.high[15] >= 4.0 / (4.0 / 16 + 0.25) - 1e-9  # the constant latency: the band's high


def test_dynamic_loop_counter_saturates():
    # 1 s of loop per call in chunks of 1 us: the shared counter (100 ns a claim) caps
    # the speedup near (chunk + claim) / claim = 11.
    chunks = 1_000_000
    r = region(threads=1, busy=10 * chunks * (1e-6 + LOOP_CALL_COST_S), calls=10,
               loop_calls=10 * chunks)
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert "loop_cost" in pred.fitted
    assert pred.speedup[-1] == pytest.approx(11.0, rel=0.02)
    assert pred.bottleneck == "loop_schedule"
    coarse = region_contention(region(threads=1, busy=10.0, calls=10, loop_calls=1000), 64, 64)
    assert coarse.speedup[-1] == pytest.approx(64, rel=0.01)


def test_team_overhead_grows_with_the_team():
    # 1 ms regions with 0.2 ms of start/join at 4 threads.
    calls = 1000
    r = region(threads=4, busy=4e-3 * calls, calls=calls, wall=(1e-3 + 2e-4) * calls)
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert pred.speedup[3] == pytest.approx(4e-3 / 1.2e-3)
    assert pred.speedup[-1] < pred.speedup[15]  # too many threads cost more than they give
    assert pred.bottleneck == "fork_join"


def test_band_ordering_over_many_shapes():
    for n0 in (1, 2, 4, 16):
        for frac in (0.0, 0.1, 0.9):
            for imbalance in (0.0, 0.5, 2.0):
                for cat in ("critical", "omp_lock"):
                    r = locked_region(n0, 1e-4 * (1 - frac) + 1e-9, 1e-4 * frac + 1e-9, cat=cat)
                    r["stalls_s"]["imbalance"] = imbalance
                    pred = region_contention(r, target=40, cores=24)
                    assert_sane(pred, 40)


STALL_NAMES = st.sampled_from(STALLS)


@settings(max_examples=150, deadline=None)
@given(threads=st.integers(1, 64), calls=st.integers(1, 1000),
       busy=st.floats(1e-6, 100.0), serial_share=st.floats(0.0, 1.0),
       stalls=st.dictionaries(STALL_NAMES, st.floats(0.0, 10.0), max_size=5),
       acq=st.dictionaries(STALL_NAMES, st.integers(0, 10 ** 6), max_size=4),
       contended=st.dictionaries(STALL_NAMES, st.integers(0, 10 ** 5), max_size=4),
       loop_calls=st.integers(0, 10 ** 6), wall=st.floats(1e-6, 100.0),
       target=st.integers(1, 200), cores=st.integers(1, 128))
# A subnormal stall time once overflowed the lock queue's throughput (speedup 0).
@example(threads=1, calls=1, busy=1.0, serial_share=1.0, stalls={"mutex": 2.2250738585e-313},
         acq={"mutex": 10}, contended={}, loop_calls=0, wall=1.0, target=2, cores=1)
def test_any_region_sample_gives_a_sane_curve(threads, calls, busy, serial_share, stalls, acq,
                                              contended, loop_calls, wall, target, cores):
    r = region(threads=threads, busy=busy, serial=busy * serial_share, wall=wall, calls=calls,
               acq=acq, contended=contended, loop_calls=loop_calls, **stalls)
    r["hold_samples"] = acq.get("mutex", 0) // 10 if calls % 2 else 0
    r["hold_sampled_s"] = stalls.get("mutex", 0.0) / 3
    assert_sane(region_contention(r, target=target, cores=cores), target)


# ---- processes -------------------------------------------------------------------------------
def test_process_without_locks_is_karp_flatt_up_to_cores():
    for kw in (dict(threads=4, wall=1.0, cpu=2.0), dict(threads=4, wall=2.0, cpu=8.0),
               dict(threads=4, wall=2.0, cpu=2.0)):
        ref = bound.process_bound(process(**kw), target=4, cores=4)
        pred = process_contention(process(**kw), target=8, cores=4)
        assert_sane(pred, 8)
        assert pred.speedup[:4] == pytest.approx(ref.speedup)
        assert pred.speedup[4:] == pytest.approx([pred.speedup[3]] * 4)  # 4 cores
        assert "serial_fraction" in pred.fitted


def test_process_hot_mutex_saturates():
    n0, acq, think, hold = 4, 100_000, 3e-5, 1e-5
    w = waiting_time(n0, 1 / think, 1 / hold)
    p = process(threads=n0, cpu=acq * (think + hold), wall=acq * (think + hold + w) / n0,
                hold=hold * 5000, hold_samples=5000, acq={"mutex": acq},
                contended={"mutex": 20_000}, mutex=acq * w)
    pred = process_contention(p, target=64, cores=64)
    assert_sane(pred, 64)
    assert pred.speedup[-1] == pytest.approx((think + hold) / hold, rel=0.02)
    assert pred.speedup[n0 - 1] == pytest.approx(n0 * (think + hold) / (think + hold + w), rel=1e-3)
    assert pred.bottleneck == "mutex"
    # the lock, not a serial fraction, explains the sample
    assert pred.losses.get("serial", 0.0) < 1e-3 * pred.losses["mutex"]


def test_process_mutex_without_hold_samples_infers_the_hold():
    n0, acq, think, hold = 4, 100_000, 3e-5, 1e-5
    w = waiting_time(n0, 1 / think, 1 / hold)
    p = process(threads=n0, cpu=acq * (think + hold), wall=acq * (think + hold + w) / n0,
                acq={"mutex": acq}, mutex=acq * w)
    pred = process_contention(p, target=64, cores=64)
    assert_sane(pred, 64)
    assert "hold_time" in pred.fitted
    assert pred.speedup[-1] == pytest.approx((think + hold) / hold, rel=0.05)


def test_process_rwlock_and_mutex_without_samples():
    # Both holds come from the waits; the model reproduces the sample.
    p = process(threads=4, cpu=4.0, wall=1.5, acq={"mutex": 10_000, "rwlock": 10_000},
                contended={"mutex": 100, "rwlock": 100}, mutex=1.0, rwlock=1.0)
    pred = process_contention(p, target=32, cores=32)
    assert_sane(pred, 32)
    assert "hold_time" in pred.fitted
    assert pred.bottleneck in ("mutex", "rwlock")


def test_single_blocks_and_hold_split_from_optional_keys():
    acq, think, hold = 10_000, 4e-4, 1e-4
    r = region(threads=1, busy=acq * (think + hold) + 0.5, serial=acq * hold + 0.5,
               acq={"critical": acq // 2, "atomic": acq // 2})
    r["single_s"] = 0.5
    r["hold_s"] = {"critical": acq * hold, "atomic": 0.0}
    pred = region_contention(r, target=64, cores=64)
    assert_sane(pred, 64)
    assert "hold_split" not in pred.fitted
    # critical: half the acquisitions with all the hold time, plus 0.5 s of single blocks
    t1 = acq * (think + hold) + 0.5
    t_inf = 0.5 + acq * hold
    assert pred.speedup[-1] == pytest.approx(t1 / t_inf, rel=0.05)
    assert pred.bottleneck == "critical"


def test_process_barrier_imbalance():
    pred = process_contention(process(threads=4, cpu=4.0, wall=1.25, pthread_barrier=1.0),
                              target=32, cores=32)
    assert_sane(pred, 32)
    assert pred.speedup[3] == pytest.approx(4.0 / 1.25, rel=1e-6)
    assert pred.bottleneck == "imbalance"


def test_process_runqueue_from_other_load_is_not_serial():
    busy_box = process_contention(process(threads=4, cpu=4.0, wall=2.0, runqueue=4.0), 8, 8)
    assert busy_box.speedup == pytest.approx(list(range(1, 9)))


def test_process_one_runnable_thread():
    # One thread did the work: no evidence of how it divides, no gain claimed, the band up
    # to all of it parallel (issue #38).
    pred = process_contention(process(threads=1, cpu=1.0, wall=1.0), target=4, cores=4)
    assert pred.speedup == pytest.approx([1, 1, 1, 1])
    assert pred.high == pytest.approx([1, 2, 3, 4])
    assert "serial_fraction" not in pred.fitted
    assert_sane(pred, 4)
    one_core = process_contention(process(threads=4, cpu=1.0, wall=1.0, hold=0.25), 4, cores=1)
    assert one_core.speedup == pytest.approx([1.0] * 4)  # one core: nothing to gain
    assert_sane(one_core, 4)


def test_threads_that_took_turns_on_one_cpu_are_no_evidence():
    # An MPI rank bound to one core, its work on main beside Open MPI's progress thread
    # (5% of the CPU): S@2 1.94 with a narrow band (runuser37).  Sharing one CPU, the
    # threads show nothing of how the work divides on a machine of more cores.
    rank = process(threads=2, cpu=1.0, wall=1.0)
    rank["team_threads"] = 2
    pred = process_contention(rank, target=16, cores=1, target_cores=16)
    assert pred.speedup == pytest.approx([1.0] * 16)
    assert pred.high[-1] > 8  # the band up to all of it parallel
    assert "no evidence, 2 threads on one CPU" in pred.basis
    assert "serial_fraction" not in pred.fitted
    assert_sane(pred, 16)
    # The runtime's predictor names no fastest count for it, as for one busy thread.
    from corecast.model.runtime.predictor import predict_window

    (window,) = predict_window([rank], 16, 1, 16, {})
    assert window.fastest is None and "no evidence" in window.basis


def test_compose_process():
    # 10 s of wall time, 5 s of it in a linear 4-thread region (20 s of thread work).
    r = region(threads=4, busy=20.0, calls=10)
    rp = region_contention(r, target=8, cores=8)
    pred = compose_process(process(threads=4, wall=10.0, cpu=25.0), [(r, rp)])
    assert pred.speedup == pytest.approx([25.0 / (5.0 + 20.0 / n) for n in range(1, 9)])
    assert pred.bottleneck == "serial"
    nested = region(threads=2, busy=6.0, serial=6.0, nested=True)
    with_nested = compose_process(process(wall=10.0), [(r, rp), (nested, region_contention(nested, 8, 8))])
    assert with_nested.speedup == pytest.approx(pred.speedup)
    assert_sane(pred, 8)


def test_compose_process_keeps_the_region_bottleneck():
    r = locked_region(4, 3e-4, 1e-4)
    rp = region_contention(r, target=64, cores=64)
    pred = compose_process(process(threads=4, wall=r["wall_s"] + 0.01, cpu=1.0), [(r, rp)])
    assert pred.bottleneck == "critical"
    assert pred.speedup[-1] == pytest.approx(rp.speedup[-1], rel=0.02)


def test_large_target_is_fast_enough():
    # CPU time, not wall time: on the loaded 2-core VM this took 1.08 s of wall time for
    # 0.085 s of CPU (against the limit of 2).
    import time
    t0 = time.process_time()
    pred = region_contention(locked_region(16, 3e-4, 1e-4, contended=1000,
                                           wait=2 * waiting_time(16, 1 / 3e-4, 1 / 1e-4)),
                          target=4096, cores=4096)
    assert time.process_time() - t0 < 2.0
    assert_sane(pred, 4096)


@settings(max_examples=150, deadline=None)
# Found by hypothesis: run-queue wait as long as the wall, no CPU time (a divide by zero).
@example(threads=2, cpu=0.0, wall=0.5, stalls={"runqueue": 1.0}, acq={}, contended={}, hold=0.0,
         hold_samples=0, target=1, cores=2)
@given(threads=st.integers(1, 300), cpu=st.floats(0.0, 100.0), wall=st.floats(1e-6, 100.0),
       stalls=st.dictionaries(STALL_NAMES, st.floats(0.0, 100.0), max_size=5),
       acq=st.dictionaries(STALL_NAMES, st.integers(0, 10 ** 7), max_size=4),
       contended=st.dictionaries(STALL_NAMES, st.integers(0, 10 ** 6), max_size=4),
       hold=st.floats(0.0, 10.0), hold_samples=st.integers(0, 10 ** 5),
       target=st.integers(1, 300), cores=st.integers(1, 256))
def test_any_process_sample_gives_a_sane_curve(threads, cpu, wall, stalls, acq, contended, hold,
                                               hold_samples, target, cores):
    p = process(threads=threads, cpu=cpu, wall=wall, hold=hold, hold_samples=hold_samples,
                acq=acq, contended=contended, **stalls)
    assert_sane(process_contention(p, target=target, cores=cores), target)


def test_tight_critical_loop_sampled_at_one_thread_predicts_a_slowdown():
    # Hold and think of a few nanoseconds: at two threads every acquisition pays the
    # assumed hand-off between cores, far more than the work it protects.
    pred = region_contention(locked_region(1, 1e-8, 1e-8), target=4, cores=4)
    assert pred.speedup[1] < 1.0
    assert "handoff_prior" in pred.fitted
    assert pred.bottleneck == "critical"


# ---- convoys and worker pools (16-core failure modes, issue 12) -------------------------
def test_worker_pool_helpers_are_not_the_team():
    # pigz -p 2: two compressors busy for the whole run, a reader and a writer that wait on
    # condition variables.  Counting the helpers as the team made 2 busy threads out of 4
    # look like a serial third (S(16) ~ 2.6); the team is the two workers.
    helpers_in = process(threads=4, wall=1.0, cpu=2.0, condvar=1.9)
    team = dict(helpers_in, team_threads=2)
    blind = process_contention(helpers_in, target=16, cores=16)
    seen = process_contention(team, target=16, cores=16)
    assert blind.speedup[-1] < 3.0
    assert seen.speedup[-1] > 10.0
    assert seen.speedup[1] == pytest.approx(2.0, rel=0.02)  # the sample itself: 2 busy threads




def test_sampled_waits_beyond_the_threads_time_are_shrunk_to_fit():
    # A tight convoy: waits timed on sampled acquisitions add up to more than the busy time.
    acq, calls, hold = 16_000_000, 4000, 40e-9
    r = region(threads=2, busy=4.37, serial=acq * hold, calls=calls, wall=2.23,
               acq={"critical": acq}, contended={"critical": 1_200_000}, critical=7.5, imbalance=0.08)
    pred = region_contention(r, target=16, cores=16)
    assert_sane(pred, 16)
    assert "wait_scale" in pred.fitted
    # T(1) is at least the holds: the speedup at n0 stays a slowdown of the order measured
    assert 0.05 < pred.speedup[1] < 0.6
    assert pred.speedup[-1] < pred.speedup[1]  # hand-offs grow with the contenders
    assert pred.fastest == 1


def test_handoff_grows_with_the_contenders_within_its_band():
    think, hold = 1e-8, 4e-8
    r = locked_region(2, think, hold, wait=4e-7, contended=10_000)
    pred = region_contention(r, target=16, cores=16)
    assert "handoff" in pred.fitted
    # central: sqrt(n / n0) growth; high: constant hand-off (flat); low: linear
    assert pred.speedup[-1] < pred.speedup[1]
    assert pred.high[-1] / pred.high[1] > pred.speedup[-1] / pred.speedup[1]
    assert pred.low[-1] < pred.speedup[-1] < pred.high[-1]


def test_the_runtime_predictor_takes_the_latency_from_its_window():
    from corecast.model.runtime.predictor import predict_window

    fine = barriered(episodes=48, wait=5e-6)
    coarse = barriered(episodes=1, phase=30e-3, wait=8e-3, calls=8)
    for r, name in ((fine, "fine._omp_fn.0"), (coarse, "coarse._omp_fn.0")):
        r.update(name=name, hist=[(4, r["calls"], r["wall_s"])])  # every call at the team of 4
    proc = process(threads=4, wall=fine["wall_s"] + coarse["wall_s"], cpu=1.0)
    preds = predict_window([fine, coarse, proc], 16, 16, 16, {})
    alone = predict_window([fine, proc], 16, 16, 16, {})
    assert "barrier_latency" in preds[0].fitted and "barrier_latency" not in alone[0].fitted
    assert preds[0].speedup[15] < alone[0].speedup[15]


# ---- explicit tasks: libgomp's task queue ---------------------------------------------------
def task_region(tasks, work, spawn, waits=0.0, threads=2, calls=1) -> dict:
    """A task-parallel region at ``threads``: ``tasks`` tasks doing ``work`` thread-s in all,
    ``spawn`` thread-s creating them and ``waits`` at taskwaits and barriers."""
    r = region(threads=threads, busy=work + spawn + waits, calls=calls, omp_barrier=waits,
               acq={"omp_barrier": tasks // 2})
    r.update(tasks=tasks, task_s=work + spawn, task_spawn_s=spawn)
    return r


def test_fine_grained_tasks_take_their_creating_time_out_of_one_threads_work():
    """BOTS knapsack's shape (tasks of 0.2 us, half of it creating their children): T(1) is the work
    without the creating time, and no team beats the queue, whose service is that time
    (S(n) <= work / creating time at every n); the band's high end keeps the reading that
    counted the creating time as work (the prediction before tasks were counted)."""
    r = task_region(tasks=10_000_000, work=1.0, spawn=1.0, waits=0.5)
    new = region_contention(r, 16, 16)
    old = region_contention({k: v for k, v in r.items() if not k.startswith("task")}, 16, 16)
    assert new.work_s == pytest.approx(1.0, rel=1e-6) and old.work_s == pytest.approx(2.0, rel=1e-6)
    assert "task_queue" in new.fitted and "tasks of 0.2 us, created in 0.1 us" in new.basis
    for i, n in enumerate(new.threads):
        if n > 1:
            assert new.speedup[i] <= 1.0 / 1.0 * (1 + 1e-9)  # work / creating time
            assert new.low[i] <= new.speedup[i] < old.speedup[i] <= new.high[i]
    assert new.speedup[-1] < 0.5 * old.speedup[-1]


def test_coarse_tasks_predict_as_before():
    """Tasks of a millisecond, created in a microsecond: both changes are a sliver."""
    r = task_region(tasks=1000, work=1.0, spawn=1e-3, waits=0.05)
    new = region_contention(r, 16, 16)
    old = region_contention({k: v for k, v in r.items() if not k.startswith("task")}, 16, 16)
    assert new.speedup == pytest.approx(old.speedup, rel=0.01)


def test_recordings_without_task_counters_or_at_one_thread_keep_the_old_model():
    """No counters (recordings made before they existed), none counted, or a team of one:
    exactly the model that was."""
    r = task_region(tasks=10_000_000, work=1.0, spawn=1.0, waits=0.5)
    plain = {k: v for k, v in r.items() if not k.startswith("task")}
    base = region_contention(plain, 16, 16)
    for changed in ({"tasks": 0}, {"task_spawn_s": 0.0}):
        p = region_contention({**r, **changed}, 16, 16)
        assert (p.speedup, p.low, p.high, p.basis) == (base.speedup, base.low, base.high, base.basis)
    one = task_region(tasks=10_000_000, work=1.0, spawn=1.0, threads=1)
    p = region_contention(one, 16, 16)
    q = region_contention({k: v for k, v in one.items() if not k.startswith("task")}, 16, 16)
    assert (p.speedup, p.basis) == (q.speedup, q.basis)


def test_a_contended_queue_of_plain_tasks_goes_through_its_own_sample():
    """Creating a task without dependences at n0 is the queue lock's service (100 ns
    assumed) plus its wait: read so, the model's T(n0) is the measured wall (BOTS fft at 16
    threads had been predicted at 0.15 of its own measured speedup with the whole creating
    time as service).  T(1) is the same either way: the creating time is out of it."""
    r = task_region(tasks=1_000_000, work=1.0, spawn=2.0, waits=0.2, threads=4)
    def at_n0(depend):
        p = region_contention({**r, "task_depend": depend}, 16, 16)
        return p, p.work_s / p.speedup[p.threads.index(4)]
    plain, t_plain = at_n0(0)
    mixed, t_mixed = at_n0(500_000)
    dependent, t_dependent = at_n0(1_000_000)
    assert t_plain == pytest.approx(r["wall_s"], rel=0.02) and "handoff" in plain.fitted
    assert t_plain < t_mixed < t_dependent and t_dependent > 2 * r["wall_s"]
    assert plain.work_s == pytest.approx(dependent.work_s, rel=1e-9) == pytest.approx(1.0, rel=1e-6)
    assert all(lo <= s <= hi for lo, s, hi in zip(plain.low, plain.speedup, plain.high))


def test_dependent_or_uncounted_tasks_keep_the_creating_time_as_service():
    """A task with dependences is hashed and linked as it is created: all of its creating
    time is service.  A recording that did not count dependences (made before
    ``task_depend``) reads as all dependent: exactly the model those recordings had."""
    r = task_region(tasks=1_000_000, work=1.0, spawn=2.0, waits=0.2, threads=4)
    base = region_contention(r, 16, 16)
    p = region_contention({**r, "task_depend": 1_000_000}, 16, 16)
    assert (p.speedup, p.low, p.high, p.basis, p.fitted) == (base.speedup, base.low, base.high, base.basis,
                                                              base.fitted)
    from corecast.model.runtime.taskqueue import dependent_share

    assert [dependent_share(x) for x in (r, {**r, "task_depend": 250_000}, {**r, "task_depend": 2_000_000},
                                         {**r, "tasks": 0, "task_depend": 0})] == [1.0, 0.25, 1.0, 1.0]


def test_task_durations_in_the_basis_read_without_an_exponent():
    """Tasks of 350 us (omp_tasks' leaves) once read "tasks of 3.5e+02 us"; a millisecond
    reads in ms.  Only the text: the numbers are the model's as before."""
    r = task_region(tasks=1000, work=0.349, spawn=0.001, waits=0.05)
    p = region_contention(r, 16, 16)
    assert "task_queue" in p.fitted and "tasks of 350 us, created in 1 us" in p.basis and "e+" not in p.basis
    from corecast.model.runtime.taskqueue import duration

    assert [duration(s) for s in (2.7e-7, 3.5e-4, 1.2e-3, 9.997e-4, 2.5)] == [
        "0.27 us", "350 us", "1.2 ms", "1 ms", "2.5 s"]
