"""The sampling of critical sections (native/omp_call.h): every acquisition counted, the
timed ones scaled up without bias, the gap following what was measured, and one long
sample (a preemption) unable to stand for a thousand acquisitions."""
import pathlib
import shutil
import subprocess

import pytest

from .helpers import clean_env, events, read_lines, run

NATIVE = pathlib.Path(__file__).resolve().parents[2] / "native"

# Drives the helpers the wrappers use with chosen durations: the hold is what the release
# passes in (``now``), so every acquisition's true hold is known exactly.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "omp_call.h"

static struct cc_thread th;
static const char obj;

static uint64_t next(uint64_t *rng) { /* xorshift */
    *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
    return *rng;
}

/* The sampling's decision for one critical section: 0 (counted, not timed) or its scale. */
static uint32_t due(struct cc_thread *t) {
    uint32_t scale = cc_sample_due(t);
    if (!scale)
        CC_ADD(cc_counts(t)->acq[CC_STALL_CRITICAL], 1);
    return scale;
}

/* n acquisitions holding ``hold`` ticks each; the ``spike``-th timed one (0: the first, which
 * is exact; 1: the first scaled up) holds ``big`` (a preemption), or with spike < -1 one in
 * -spike at random does (two kinds of hold, as under contention): prints acquisitions
 * counted, timed, estimated hold, true hold, final gap.  The gaps are random: the spike is
 * placed by its rank among the timed ones. */
static void run(long n, uint64_t hold, long spike, uint64_t big) {
    struct cc_thread *t = &th;
    *t = (struct cc_thread){0};
    long timed = 0;
    uint64_t truth = 0, rng = 88172645463325252ull;
    for (long i = 0; i < n; i++) {
        uint64_t h = spike < -1 && next(&rng) % (uint64_t)-spike == 0 ? big : hold;
        uint32_t scale = due(t);
        if (!scale) {
            truth += h;
            continue;
        }
        if (spike >= 0 && timed == spike)
            h = big;
        truth += h;
        timed++;
        uint64_t t0 = cc_now();
        cc_sampled_acquire(t, CC_STALL_CRITICAL, t0, &obj, scale);
        cc_held_pop(t, &obj, t->held_t0[t->nheld - 1] + h);
    }
    printf("%llu %ld %llu %llu %u\n", (unsigned long long)t->n.acq[CC_STALL_CRITICAL], timed,
           (unsigned long long)t->n.hold[CC_STALL_CRITICAL], (unsigned long long)truth,
           t->sample_span);
}

/* n sections, two in turn: a cheap one (``ha`` ticks held) and a costly one (``hb``), as a
 * loop takes them: prints the estimated hold and the true one. */
static void alternating(long n, uint64_t ha, uint64_t hb) {
    static const char a, b;
    struct cc_thread *t = &th;
    *t = (struct cc_thread){0};
    uint64_t truth = 0;
    for (long i = 0; i < n; i++) {
        const void *o = i & 1 ? &b : &a;
        uint64_t h = i & 1 ? hb : ha;
        truth += h;
        uint32_t scale = due(t);
        if (!scale)
            continue;
        cc_sampled_acquire(t, CC_STALL_CRITICAL, cc_now(), o, scale);
        cc_held_pop(t, o, t->held_t0[t->nheld - 1] + h);
    }
    printf("%llu %llu\n", (unsigned long long)t->n.hold[CC_STALL_CRITICAL], (unsigned long long)truth);
}

/* ``trav`` walks down a list of 8 OpenMP locks hand over hand (take the next, then let the
 * previous go: not the last taken), each held 200 ticks of a clock of the test's own; one
 * set in ``every`` finds its lock taken (shims/gomp.c: an exact hold after a failed test),
 * the others are sampled as a test that succeeds is: prints the estimated and true hold. */
static void handover(long trav, long every) {
    enum { K = 8 };
    static char node[K];
    struct cc_thread *t = &th;
    *t = (struct cc_thread){0};
    uint64_t clock = 1000000, truth = 0, rng = 88172645463325252ull, t0[K];
    for (long r = 0; r < trav; r++) {
        for (int i = 0; i < K; i++) {
            if (every && next(&rng) % (uint64_t)every == 0) {
                cc_held_push(t, &node[i], CC_STALL_OMPLOCK, clock, 1); /* as cc_timed_acquire */
            } else {
                uint32_t scale = cc_sample_due(t);
                if (scale) {
                    cc_sample_next(t);
                    cc_held_push(t, &node[i], CC_STALL_OMPLOCK, clock, scale);
                }
            }
            t0[i] = clock;
            clock += 200;
            if (i > 0) {
                truth += clock - t0[i - 1];
                cc_held_pop(t, &node[i - 1], clock);
            }
        }
        clock += 200;
        truth += clock - t0[K - 1];
        cc_held_pop(t, &node[K - 1], clock);
        clock += 2000;
    }
    printf("%llu %llu\n", (unsigned long long)t->n.hold[CC_STALL_OMPLOCK], (unsigned long long)truth);
}

/* n acquisitions of a section every thread wants at once: each waits from ``lo`` to ``hi``
 * ticks (never free), holds ``timing`` + ``body``; with ``rel`` > 0 each timed release takes
 * ``rel`` (a free one's cost, as libgomp's path times it), with 0 none is timed (the OMPT
 * path): prints the estimated wait, the waiting beyond ``rel``, the estimated hold, n x body. */
static void contended(long n, uint64_t lo, uint64_t hi, uint64_t timing, uint64_t body, uint64_t rel) {
    struct cc_thread *t = &th;
    *t = (struct cc_thread){0};
    uint64_t beyond = 0, rng = 88172645463325252ull;
    for (long i = 0; i < n; i++) {
        uint64_t w = lo + next(&rng) % (hi - lo + 1);
        beyond += w - rel;
        uint32_t scale = due(t);
        if (!scale)
            continue;
        cc_sampled_acquire(t, CC_STALL_CRITICAL, cc_now() - w, &obj, scale);
        uint32_t s = cc_held_pop(t, &obj, t->held_t0[t->nheld - 1] + timing + body);
        if (rel)
            cc_released(t, CC_STALL_CRITICAL, cc_now() - rel, s);
    }
    printf("%llu %llu %llu %llu\n", (unsigned long long)t->n.wait[CC_STALL_CRITICAL], (unsigned long long)beyond,
           (unsigned long long)t->n.hold[CC_STALL_CRITICAL], (unsigned long long)(n * body));
}

/* n acquisitions that wait ``base`` ticks each (the lock was free: what the call costs) but
 * one in ``every`` at random (0: none), which waits ``big`` (a hand-off), each released at
 * once: prints the estimated wait and the waiting beyond ``base`` there was. */
static void waits(long n, uint64_t base, long every, uint64_t big) {
    struct cc_thread *t = &th;
    *t = (struct cc_thread){0};
    uint64_t beyond = 0, rng = 88172645463325252ull;
    for (long i = 0; i < n; i++) {
        uint64_t w = every && next(&rng) % (uint64_t)every == 0 ? big : base;
        beyond += w - base;
        uint32_t scale = due(t);
        if (!scale)
            continue;
        cc_sampled_acquire(t, CC_STALL_CRITICAL, cc_now() - w, &obj, scale);
        cc_held_pop(t, &obj, cc_now());
    }
    printf("%llu %llu\n", (unsigned long long)t->n.wait[CC_STALL_CRITICAL], (unsigned long long)beyond);
}

int main(int argc, char **argv) {
    if (argv[1][0] == 'a') {
        alternating(atol(argv[2]), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10));
        return 0;
    }
    if (argv[1][0] == 'o') {
        handover(atol(argv[2]), atol(argv[3]));
        return 0;
    }
    if (argv[1][0] == 'c') {
        contended(atol(argv[2]), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10), strtoull(argv[5], 0, 10),
                  strtoull(argv[6], 0, 10), strtoull(argv[7], 0, 10));
        return 0;
    }
    if (argv[1][0] == 'w')
        waits(atol(argv[2]), strtoull(argv[3], 0, 10), atol(argv[4]), strtoull(argv[5], 0, 10));
    else
        run(atol(argv[1]), strtoull(argv[2], 0, 10), atol(argv[3]), strtoull(argv[4], 0, 10));
    return 0;
}
"""


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("sampling")
    (d / "s.c").write_text(PROGRAM)
    subprocess.run([cc, "-O2", "-I", str(NATIVE), str(d / "s.c"), "-o", str(d / "s")],
                   check=True)

    def run(n, hold, spike=-1, big=0):
        out = subprocess.run([str(d / "s"), str(n), str(hold), str(spike), str(big)],
                             check=True, capture_output=True, text=True).stdout.split()
        acq, timed, est, truth, span = map(int, out)
        return acq, timed, est, truth, span

    def mode(*args):
        out = subprocess.run([str(d / "s"), *map(str, args)], check=True, capture_output=True,
                             text=True).stdout.split()
        return tuple(map(int, out))
    run.mode = mode
    run.waits = lambda n, base, every, big: mode("w", n, base, every, big)
    return run


def test_every_acquisition_counted_and_short_holds_sampled_sparsely(sampler):
    acq, timed, est, truth, span = sampler(200_000, 10)
    assert acq == 200_000
    assert span > 16                  # short holds: the gap grew past the minimum
    assert timed < 200_000 / 16
    assert abs(est - truth) / truth < 0.10


def test_long_holds_keep_the_minimum_gap_and_an_exact_scale(sampler):
    acq, timed, est, truth, span = sampler(100_000, 5000)
    assert acq == 100_000
    assert 8 <= span < 24  # the gap is drawn around 16 (a fixed one fell in step with loops)
    assert abs(est - truth) / truth < 0.01


def test_one_preempted_sample_counts_once_not_a_thousand_times(sampler):
    """A spike on a timed acquisition once the gap has grown (the 30th)."""
    n, hold, big = 200_000, 10, 50_000_000
    _, timed, est, truth, _ = sampler(n, hold, 30, big)
    assert timed > 30
    assert est < truth * 1.5, (est, truth)  # scaled by its gap it would be ~100x the truth


def test_the_first_scaled_sample_has_a_bound_too(sampler):
    """The first sample scaled up comes at the widest gap with no running mean yet: a spike
    there counted in full times its gap (51e9 ticks for a 50e6-tick spike); now only
    CC_SAMPLE_CAP_MIN (65536 ticks) of it is scaled, by a gap of at most 1535."""
    n, hold, big = 200_000, 10, 50_000_000
    _, timed, est, truth, _ = sampler(n, hold, 1, big)
    assert timed > 1
    assert est < truth + 65536 * 1535, (est, truth)


def test_sections_taken_in_turn_are_sampled_alike(sampler):
    """A fixed gap fell in step with a loop of two sections: 5 samples on the cheap one,
    24924 on the costly one, holds +65%."""
    for hb in (1000, 3000):
        est, truth = sampler.mode("a", 400_000, 100, hb)
        assert abs(est - truth) / truth < 0.10, (hb, est, truth)


@pytest.mark.parametrize("every", [0, 10, 3])
def test_locks_let_go_out_of_order_end_their_own_holds(sampler, every):
    """Hand over hand, a lock is let go below the top of the timed holds: left there, a
    later release of the same lock ended it from long before (1.15x to 7.3x the truth), and
    a full stack timed no more holds."""
    est, truth = sampler.mode("o", 20_000, every)
    assert abs(est - truth) / truth < 0.15, (every, est, truth)


def test_a_hand_off_under_twice_a_free_acquisition_still_counts(sampler):
    """The lock's line moving to the other core makes a hand-off cost little more than a
    free acquisition (1.8x here): taking all under twice the fastest for free left a
    2-thread convoy of empty sections at critical 3-5% where 1 thread was 1.4-2x as fast,
    and steering kept 2 threads."""
    est, beyond = sampler.waits(400_000, 1000, 2, 1800)
    assert abs(est - beyond) / beyond < 0.15, (est, beyond)


def test_short_waits_that_all_hand_off_are_not_taken_for_free_ones(sampler):
    """Every acquisition waits 800-1600 ticks: what looks free to the thread is itself a
    wait (with the fastest and twice it: 8% of the waiting was left); a free release's
    cost bounds it."""
    est, beyond, _, _ = sampler.mode("c", 400_000, 800, 1600, 0, 0, 200)
    assert abs(est - beyond) / beyond < 0.10, (est, beyond)


def test_holds_keep_their_body(sampler):
    """A version that took a hold's timing off by the thread's fastest waits took whole
    holds of 360 ticks off on the OMPT path (360 ticks estimated for 120 million); no
    timing comes off a hold now (docs/runtime.md)."""
    _, _, est, body = sampler.mode("c", 400_000, 400, 1500, 60, 300, 0)
    assert est > 0.9 * body, (est, body)


def test_two_kinds_of_hold_are_not_cut_short(sampler):
    """Contention mixes short holds with long ones (a hand-off): the long ones are the
    common case, not outliers, and count in full."""
    for every in (2, 5, 20):
        acq, timed, est, truth, span = sampler(4_000_000, 20, -every, 3000)
        assert acq == 4_000_000
        assert abs(est - truth) / truth < 0.10, (every, est, truth)


def test_an_uncontended_acquisition_is_no_wait(sampler):
    """What a free lock's acquisition costs (the timestamps and the real call) is not
    waiting: scaled up to the untimed acquisitions it read as 35-60% of a lone thread's time
    spent in critical waits."""
    est, beyond = sampler.waits(200_000, 1000, 0, 0)
    assert beyond == 0
    # every one counted whole: 200000 x 1000; an interrupt inside a timed one is a wait
    assert est < 200_000 * 1000 * 0.05, est


def test_waits_that_are_all_hand_offs_count_in_full(sampler):
    """No acquisition finds the lock free: none is an uncontended one's cost (a first
    version took each thread's first wait for one, and recorded these as 0)."""
    est, beyond = sampler.waits(100_000, 0, 1, 50_000)
    assert abs(est - beyond) / beyond < 0.05, (est, beyond)


@pytest.mark.parametrize("every", [3, 20])
def test_contended_waits_count_beyond_the_uncontended_cost(sampler, every):
    """Hand-offs among free acquisitions: what they waited beyond a free one's cost."""
    est, beyond = sampler.waits(400_000, 1000, every, 50_000)
    assert abs(est - beyond) / beyond < 0.10, (every, est, beyond)


# Thread 0 takes an empty critical section 4 million times; thread 1 never does: nothing
# ever waits for the lock.
ALONE_C = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
    volatile long shared = 0;
    volatile double sink = 0;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            for (long i = 0; i < 4000000; i++) {
#pragma omp critical
                shared += i & 7;
            }
        } else {
            double x = 1;
            for (long i = 0; i < 16000000; i++)
                x = x * 1.0000001 + 1e-9;
            sink = x;
        }
    }
    printf("%ld\n", (long)shared);
    return 0;
}
"""


def test_a_lock_nobody_else_takes_records_no_critical_wait(build, lib, tmp_path):
    """It recorded 0.10-0.13 s of critical waits in 0.21 thread-s, every run (46-61% of the
    region's busy time; table: critical 33-47%).  Now 4-16%, but a preemption inside a
    timed acquisition counts once beyond its bound (up to ~20 ms scaled by its gap): under
    two busy loops 2 runs of 25 read 23% and 30%.  So the least of three runs is judged."""
    exe = build("alone_critical", ALONE_C, "-fopenmp")
    shares = []
    for k in range(3):
        out = tmp_path / f"cc{k}.jsonl"
        proc = run([exe], env=clean_env(), preload=lib, output=out, keep_counting="1")
        assert proc.returncode == 0 and proc.stdout == b"14000000\n", proc.stderr[-300:]
        (region,) = events(read_lines(out), "region")
        assert region["counters"]["acquisitions"]["critical"] == 4_000_000
        shares.append(region["stalls_s"]["critical"] / region["counters"]["busy_s"])
    assert min(shares) < 0.2, shares


# Thread 0 takes the lock and holds it 50 ms; thread 1 asks for it once thread 0 holds it.
ONCE_C = r"""
#include <omp.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(void) {
    volatile int held = 0;
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
#pragma omp critical
            {
                held = 1;
                for (double t0 = now(); now() - t0 < 0.05;)
                    ;
            }
        } else {
            while (!held)
                ;
#pragma omp critical
            held = 2;
        }
    }
    printf("%d\n", held);
    return 0;
}
"""


def test_one_long_wait_for_a_held_lock_is_recorded(build, lib, tmp_path):
    """Thread 1 waits at least the rest of the 50 ms hold: its one acquisition is an exact
    sample, and no uncontended cost comes off it (a first version recorded 0.00002 s)."""
    exe = build("once_critical", ONCE_C, "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([exe], env=clean_env(), preload=lib, output=out)
    assert proc.returncode == 0 and proc.stdout == b"2\n", proc.stderr[-300:]
    (region,) = events(read_lines(out), "region")
    assert region["stalls_s"]["critical"] > 0.025, region["stalls_s"]
