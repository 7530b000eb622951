"""Counting that stops once steering has settled, or without steering once counting costs
(native/settle.c, its cc_settle_counting_costs, got.c): the callers'
slots for the critical-section wrappers are handed back to libgomp, in the program (lazy
PLT and a data slot) and in a library linked with -z now (a read-only, RELRO slot); the
output stays the program's, and the counts after the hand-back are credited at the
settled rate, close to the exact ones.  CORECAST_KEEP_COUNTING=1 keeps every wrapper."""
from __future__ import annotations

import subprocess

import pytest

from .helpers import (EXAMPLES, MODEL_MAPPED_FN_C, NATIVE_SOURCE, SCRIPTED_MODEL_C, TIMEOUT, beside_model, clean_env,
                      events, read_lines, run)

LIBRARY = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
void GOMP_critical_start(void);
void crit_add(long *x, int v) {
#pragma omp critical
    *x += v;
}
/* The object the library's own slot for GOMP_critical_start reaches now. */
const char *crit_target(void) {
    Dl_info info;
    if (!dladdr((void *)&GOMP_critical_start, &info) || !info.dli_fname)
        return "?";
    const char *b = strrchr(info.dli_fname, '/');
    return b ? b + 1 : info.dli_fname;
}
"""

PROGRAM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void crit_add(long *x, int v);
const char *crit_target(void);
void GOMP_critical_start(void);
int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    long shared = 0, other = 0;
    for (int c = 0; c < calls; c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 1000; i++) {
#pragma omp critical
            shared += (i ^ c) & 7;
            crit_add(&other, i & 3);
        }
    }
    printf("sum %ld %ld\n", shared, other);
    Dl_info info;
    const char *mine = dladdr((void *)&GOMP_critical_start, &info) && info.dli_fname ? info.dli_fname : "?";
    printf("main reaches %s\n", strrchr(mine, '/') ? strrchr(mine, '/') + 1 : mine);
    printf("library reaches %s\n", crit_target());
    return 0;
}
"""
CALLS = 8000
SECTIONS = CALLS * 1000 * 2  # the program's critical sections and the library's


@pytest.fixture(scope="module")
def program(gcc, tmp_path_factory):
    folder = tmp_path_factory.mktemp("settle")
    (folder / "crit.c").write_text(LIBRARY)
    (folder / "main.c").write_text(PROGRAM)
    steps = [[gcc, "-O2", "-fopenmp", "-fPIC", "-shared", "-fno-plt", "-Wl,-z,now,-z,relro", "-o",
              str(folder / "libcrit.so"), str(folder / "crit.c")],
             [gcc, "-O2", "-fopenmp", "-o", str(folder / "main"), str(folder / "main.c"), f"-L{folder}", "-lcrit",
              f"-Wl,-rpath,{folder}", "-ldl"]]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT)
        if r.returncode:
            pytest.skip(f"cannot build the test program: {r.stderr.decode(errors='replace')[:200]}")
    return folder / "main"


def lines(proc) -> list[str]:
    return proc.stdout.decode().splitlines()


def steered_run(program, lib, out, **settings):
    """The program, CALLS calls at 2 threads, steered in 50 ms windows: its run (exit
    status 0) and its one region record in ``out``."""
    proc = run([program, CALLS], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, steer="1",
               window_ms="50", **settings)
    assert proc.returncode == 0, proc.stderr
    (region,) = events(read_lines(out), "region")
    return proc, region


def test_settled_steering_hands_the_sections_back(program, lib, tmp_path):
    plain = run([program, CALLS], env=clean_env(OMP_NUM_THREADS="1"))
    assert lines(plain)[1:] == ["main reaches libgomp.so.1", "library reaches libgomp.so.1"]
    out = tmp_path / "cc.jsonl"
    steered, region = steered_run(program, lib, out)
    assert plain.returncode == 0
    assert lines(steered)[0] == lines(plain)[0]  # the sums: the program's own result
    assert region["steering"]["chosen"] == 1
    until = region["steering"]["sync_counted_until_s"]
    assert 0 < until
    # Both slots (the program's and the RELRO one in the -z now library) reach libgomp again.
    assert lines(steered)[1:] == ["main reaches libgomp.so.1", "library reaches libgomp.so.1"]
    assert "critical sections, atomics and OpenMP locks not counted for" in steered.stderr.decode()
    # Counted before, credited after at the settled rate: the same 1000 x 2 sections a call.
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(SECTIONS, rel=0.02)
    (proc,) = [d for d in read_lines(out) if d["event"] != "region" and "counters" in d]
    assert proc["counters"]["acquisitions"]["critical"] == pytest.approx(SECTIONS, rel=0.02)


def test_calls_made_while_the_sampler_stalls_after_the_rewrite_are_credited(program, lib, tmp_path):
    # The sampler loses its core for 30 ms just after the rewrite (CORECAST_TEST_FAULT=
    # slow_rewrite), as on a loaded machine: the calls made meanwhile were not counted, and
    # neither they nor the rate may come short (the snapshot taken after the rewrite once
    # left 12% of the sections out in such runs).
    _, region = steered_run(program, lib, tmp_path / "cc.jsonl", test_fault="slow_rewrite")
    assert region["steering"]["chosen"] == 1 and region["steering"]["sync_uncounted_s"] > 0
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(SECTIONS, rel=0.02)


def test_keep_counting_keeps_every_wrapper(program, lib, tmp_path):
    steered, region = steered_run(program, lib, tmp_path / "cc.jsonl", keep_counting="1")
    assert lines(steered)[1:] == ["main reaches libcorecast_preload.so", "library reaches libcorecast_preload.so"]
    assert region["steering"]["chosen"] == 1 and "sync_counted_until_s" not in region["steering"]
    assert region["counters"]["acquisitions"]["critical"] == SECTIONS


def test_without_steering_sections_that_cost_to_count_are_handed_back(program, lib, tmp_path):
    # One thread, 2000 sections a call and nothing else: counting them costs far more than
    # 1% of the program's CPU time (native/settle.c, cc_settle_counting_costs: 5 ns a section against
    # the sections' own few ns; a machine would have to take 500 ns a section to miss it).
    # The wrappers go back once a window gave the rate, the counts are credited at it, and
    # no model runs for it.
    out = tmp_path / "cc.jsonl"
    proc = run([program, 2000], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out)
    assert proc.returncode == 0, proc.stderr
    assert lines(proc)[1:] == ["main reaches libgomp.so.1", "library reaches libgomp.so.1"]
    assert "not counted for" in proc.stderr.decode()
    (region,) = events(read_lines(out), "region")
    assert "steering" not in region
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(2000 * 1000 * 2, rel=0.02)
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["sync_uncounted_s"] > 0 and summary["sampler"]["model_runs"] == 0
    assert summary["sampler"]["model_started_s"] is None


def test_keep_counting_without_steering_counts_them_all(program, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = run([program, 2000], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out, keep_counting="1")
    assert proc.returncode == 0
    assert lines(proc)[1:] == ["main reaches libcorecast_preload.so", "library reaches libcorecast_preload.so"]
    (region,) = events(read_lines(out), "region")
    assert region["counters"]["acquisitions"]["critical"] == 2000 * 1000 * 2
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["sync_uncounted_s"] == 0


HEAVY = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    double shared = 0;
    for (int c = 0; c < calls; c++) {
#pragma omp parallel
        {
            double x = c;
            for (int i = 0; i < 200000; i++) /* ~0.2 ms of work per section */
                x = x * 0.999999 + 1e-7 * i;
#pragma omp critical
            shared += x;
        }
    }
    printf("%.3f\n", shared);
    return 0;
}
"""


def test_sections_cheap_to_count_stay_counted(build, lib, tmp_path):
    # A section per 200000 iterations of work: counting it costs a hundred thousandth of the
    # time, far below the 1% that hands the wrappers back, on any machine.
    prog = build("settle_heavy", HEAVY, "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, 600], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, window_ms="20")
    assert proc.returncode == 0, proc.stderr
    (region,) = events(read_lines(out), "region")
    assert region["counters"]["acquisitions"]["critical"] == 600 * 2
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["sync_uncounted_s"] == 0 and summary["sampler"]["windows"] >= 1


# Sections a few times dearer to count than the 1% line and a few times cheaper than 10%:
# each comes with about 130 ns of the program's own work (measured in CPU time at its start,
# so that the share is the same on a fast machine and a slow one), against the 5 ns that
# cc_settle_counting_costs charges a section: about 3% of the CPU time.
MIDDLING = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static double spin(long n, double x) {
    for (long i = 0; i < n; i++)
        x = x * 0.999999 + 1e-7;
    return x;
}
int main(int argc, char **argv) {
    double run_s = atof(argv[1]), x = 1.0, fastest = 1;
    for (int k = 0; k < 10; k++) { /* the fastest of ten: a preempted or stolen one reads slow */
        double t0 = cpu_s();
        x = spin(1000000, x);
        double per = (cpu_s() - t0) / 1000000;
        fastest = per > 0 && per < fastest ? per : fastest;
    }
    long per_section = (long)(130e-9 / fastest);
    if (per_section < 1)
        per_section = 1;
    double shared = 0;
    long sections = 0;
    for (double end = cpu_s() + run_s; cpu_s() < end;) {
#pragma omp parallel reduction(+:sections)
        {
            double y = x; /* one chain of work, as measured: a section's work never overlaps the next's */
#pragma omp for schedule(static)
            for (int i = 0; i < 1000; i++) {
                y = spin(per_section, y);
#pragma omp critical
                shared += y;
                sections++;
            }
        }
    }
    printf("%ld sections\n", sections);
    return shared > 0 ? 0 : 1;
}
"""


def test_sections_that_cost_a_few_percent_to_count_are_handed_back(build, lib, tmp_path):
    # About 3% of the CPU time: over the 1% line, and a tenth of the way to 10% (a threshold
    # ten times too high once let this pass: only sections far dearer were handed back).
    prog = build("settle_middling", MIDDLING, "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, "0.6"], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out)
    assert proc.returncode == 0, proc.stderr
    sections = int(lines(proc)[0].split()[0])
    assert "not counted for" in proc.stderr.decode()
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["sync_uncounted_s"] > 0, summary["sampler"]
    (region,) = events(read_lines(out), "region")
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(sections, rel=0.05)


def test_a_step_window_ends_once_the_new_count_made_calls_enough(program, lib, tmp_path):
    # Windows of 400 ms: after the step to 1 thread the window ends at the first short window
    # (an eighth) by which the region made 64 calls there, and the hand-back follows at once (that window
    # ran at the settled count); a convoy stepped in C before the model's first answer may be
    # handed back at that answer (0).  A full step window would put it 400 ms or more after
    # the step.  Measured in the sampler's own time (the waits it asked for, which no load
    # stretches; wall time once failed this on a loaded machine): a window that ends early
    # ends there, and one that never does holds a whole window.
    # Its failures on a loaded VM (0.4 < 0.4, 3 of 40 runs with two busy loops beside) were
    # a convoy stepped in C whose window the model's first answer had not measured: that
    # window ran whole (settle.c now watches it; the scripted-model test below holds that).
    # What load still decides is whether 1 thread makes its 64 and 256 calls within the
    # 400 ms of short windows (a machine busy enough keeps it off the CPU that long; 4-8
    # busy loops and I/O beside left 0.05-0.25): one of three runs must show the early
    # end; every run must step to 1 thread and count.
    stops = []
    for attempt in range(3):
        out = tmp_path / f"cc{attempt}.jsonl"
        proc = run([program, 40000], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, steer="1",
                   window_ms="400", quiet="1")
        assert proc.returncode == 0, proc.stderr
        (region,) = events(read_lines(out), "region")
        assert region["steering"]["chosen"] == 1
        assert region["steering"]["sync_counted_until_s"] > 0
        stops.append(region["steering"]["sync_stop_scheduled_s"])
        assert stops[-1] >= 0
        if stops[-1] < 0.4:
            break
    assert min(stops) < 0.4, stops


# A convoy from its first call: its team started before (start_team), three threads on one
# lock, so that steer_start.c steps it in C at its first look (two threads' first calls may
# not look a convoy yet).
CONVOY = r"""
#include <stdio.h>
#include <stdlib.h>
static void start_team(void) {
#pragma omp parallel
    { }
}
int main(int argc, char **argv) {
    int calls = atoi(argv[1]);
    long shared = 0;
    start_team();
    for (int c = 0; c < calls; c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 1000; i++) {
#pragma omp critical
            shared += (i ^ c) & 7;
        }
    }
    printf("sum %ld\n", shared);
    return 0;
}
"""

@pytest.mark.parametrize("first_settles", [0, 1])
def test_a_convoy_stepped_in_c_ends_its_window_early_whatever_the_first_answer(build, lib, tmp_path, first_settles):
    # The convoy is stepped to 1 thread in C at the first look.  Unless the model's first
    # answer handed the sections back, the window after it is the step's (the new count not
    # yet measured): it ends at the first short window (an eighth of 400 ms) by which 1
    # thread made 64 calls (or, settled, the 256 a rate needs), and the hand-back follows.
    # It once ran whole, and the hand-back came 0.4 s after the step (as the step-window
    # test above saw on a loaded machine): with an unsettled first answer always, with a
    # settled one whenever no call at 1 thread had ended by then.  In sampler time (the
    # waits it asked for); 256 calls of 1000 uncontended sections take a few ms of the
    # program's CPU, and the program runs on for about a second at 1 thread.
    prog = build("settle_convoy", CONVOY, "-fopenmp")
    scripted = build(f"scripted_model{first_settles}.so", SCRIPTED_MODEL_C, "-shared", "-fPIC",
                     f"-I{NATIVE_SOURCE}", f"-DFIRST_SETTLES={first_settles}")
    preload = beside_model(lib, scripted, tmp_path / "alone")
    # Whether a look before the model's start finds the convoy depends on load (its stall
    # share is near the line: on the 2-core VM with 4 busy loops and I/O beside, all three
    # runs missed it in 1 of 12 repeats, and the test skipped): up to three runs, each of
    # which must hand back early, until one stepped it in C.
    stepped_in_c = []
    for attempt in range(3):
        out = tmp_path / f"cc{attempt}.jsonl"
        proc = run([prog, 60000], env=clean_env(OMP_NUM_THREADS="3"), preload=preload, output=out,
                   steer="1", window_ms="400", quiet="1")
        assert proc.returncode == 0, proc.stderr
        (region,) = [r for r in events(read_lines(out), "region") if r["calls"] == 60000]  # not start_team's
        steering = region["steering"]
        assert steering["chosen"] == 1 and steering["sync_counted_until_s"] > 0, steering
        assert 0 <= steering["sync_stop_scheduled_s"] < 0.4, steering
        if not first_settles:  # the step's window ran a short one (50 ms) at least: the clock counts it
            assert steering["sync_stop_scheduled_s"] >= 0.05 - 1e-9, steering
        stepped_in_c.append(region["first_answer_saw_steered_to"] == 1)
        if stepped_in_c[-1]:
            break
    if not any(stepped_in_c):
        pytest.skip("the first look did not find the convoy in 3 runs (a loaded machine): nothing stepped in C")


PHASES = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void GOMP_critical_start(void);
static int handed_back(void) {
    Dl_info info;
    return dladdr((void *)&GOMP_critical_start, &info) && info.dli_fname && strstr(info.dli_fname, "libgomp");
}
static long phase_a(int c) {
    long s = 0;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 1000; i++) {
#pragma omp critical
        s += (i ^ c) & 7;
    }
    return s;
}
static long phase_b(int c) {
    long s = 0;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 1000; i++) {
#pragma omp critical
        s += (i ^ c) & 3;
    }
    return s;
}
int main(int argc, char **argv) {
    int b_calls = atoi(argv[1]), preloaded = getenv("LD_PRELOAD") != NULL;
    long a = 0, b = 0;
    int c = 0;
    /* Phase A runs until corecast handed the sections back (at most 200000 calls). */
    for (; c < 200000 && (c < 2000 || (preloaded && !handed_back())); c++)
        a += phase_a(c);
    fprintf(stderr, "phase A: %d calls, handed back: %d\n", c, handed_back());
    for (int k = 0; k < b_calls; k++)
        b += phase_b(k);
    printf("b %ld\n", b);
    printf("end: handed back %d\n", handed_back());
    return 0;
}
"""


def test_a_region_steering_has_not_settled_takes_the_sections_back(gcc, build, lib, tmp_path):
    prog = build("settle_phases", PHASES, "-fopenmp", "-ldl")
    plain = run([prog, 20000], env=clean_env(OMP_NUM_THREADS="1"))
    out = tmp_path / "cc.jsonl"
    steered = run([prog, 20000], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, steer="1",
                  window_ms="50")
    assert plain.returncode == steered.returncode == 0, steered.stderr
    assert "handed back: 1" in steered.stderr.decode()  # phase A ended with the hand-back
    assert lines(steered)[0] == lines(plain)[0]
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a, b = regions["phase_a._omp_fn.0"], regions["phase_b._omp_fn.0"]
    # Phase B's convoy was seen (its sections counted again) and steered like A's.
    assert a["steering"]["chosen"] == 1 and b["steering"]["chosen"] == 1
    assert b["counters"]["acquisitions"]["critical"] == pytest.approx(20000 * 1000, rel=0.02)
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(a["calls"] * 1000, rel=0.02)
    assert lines(steered)[1] == "end: handed back 1"  # and handed back again once B settled


def test_without_steering_a_region_first_run_after_the_hand_back_is_counted(build, lib, tmp_path):
    # Phase A's sections go back (their counting costs); phase B first runs after that, so
    # it has no rate: the wrappers come back until a window gives B's, and go back again.
    prog = build("settle_phases", PHASES, "-fopenmp", "-ldl")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, 20000], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out, window_ms="50")
    assert proc.returncode == 0, proc.stderr
    assert "handed back: 1" in proc.stderr.decode()
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a, b = regions["phase_a._omp_fn.0"], regions["phase_b._omp_fn.0"]
    assert b["counters"]["acquisitions"]["critical"] == pytest.approx(20000 * 1000, rel=0.02)
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(a["calls"] * 1000, rel=0.02)
    assert lines(proc)[1] == "end: handed back 1"


LOCKS = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char *reaches(void) {
    Dl_info info;
    const char *to = dladdr((void *)&omp_set_lock, &info) && info.dli_fname ? info.dli_fname : "?";
    return strrchr(to, '/') ? strrchr(to, '/') + 1 : to;
}
int main(void) {
    omp_lock_t lock;
    omp_init_lock(&lock);
    long shared = 0;
    int c = 0, preloaded = getenv("LD_PRELOAD") != NULL;
    /* Until corecast handed the locks back (at least 2000 calls, at most 200000). */
    for (; c < 200000 && (c < 2000 || (preloaded && !strstr(reaches(), "libgomp"))); c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 1000; i++) {
            omp_set_lock(&lock);
            shared += i & 7;
            omp_unset_lock(&lock);
        }
    }
    printf("calls %d sum %ld\n", c, shared);
    printf("omp_set_lock reaches %s\n", reaches());
    return 0;
}
"""


def test_openmp_locks_are_handed_back_too(build, lib, tmp_path):
    prog = build("settle_locks", LOCKS, "-fopenmp", "-ldl")
    out = tmp_path / "cc.jsonl"
    steered = run([prog], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, steer="1", window_ms="50")
    assert steered.returncode == 0, steered.stderr
    calls = int(lines(steered)[0].split()[1])
    (region,) = events(read_lines(out), "region")
    steering = region["steering"]
    # The convoy's time is in the futex wakes of omp_unset_lock, counted as waits (a timed
    # hold's release): its stalls leave room to gain.  Before, 14 quiet runs in 25 said none.
    assert not (steering["not_explored"] or "").startswith("no room to gain"), steering
    if steering["chosen"] != 1:  # a loaded machine can make a window too short, or a step look slow
        pytest.skip(f"steering did not settle on 1 thread here: {steering}")
    assert lines(steered) == [f"calls {calls} sum {calls * 3500}", "omp_set_lock reaches libgomp.so.1"], region
    assert region["calls"] == calls and region["steering"]["chosen"] == 1
    assert region["steering"]["sync_uncounted_s"] > 0
    assert region["counters"]["acquisitions"]["omp_lock"] == pytest.approx(calls * 1000, rel=0.02)


# Steering that cannot pay (native/steer_start.c, region_may_pay): the model stays out and the
# section wrappers go back to libgomp, decided in C from the sampler's counts.
IDLE = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
void GOMP_critical_start(void);
""" + MODEL_MAPPED_FN_C + r"""
/* Not inlined: the slot's value must be read at each call, not once before the loop. */
static __attribute__((noinline)) int handed_back(void) {
    Dl_info info;
    return dladdr((void *)&GOMP_critical_start, &info) && info.dli_fname && strstr(info.dli_fname, "libgomp");
}
int main(int argc, char **argv) {
    /* Calls until the sections are handed back (at least argv[1], at most argv[2]), each
     * followed by a pause of argv[3] microseconds; argv[4] sections a call (1000). */
    int least = atoi(argv[1]), most = atoi(argv[2]), pause_us = atoi(argv[3]), c = 0;
    int sections = argc > 4 ? atoi(argv[4]) : 1000;
    long shared = 0;
    for (; c < most && (c < least || !handed_back()); c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < sections; i++) {
#pragma omp critical
            shared += (i ^ c) & 7;
        }
        if (pause_us)
            usleep(pause_us);
    }
    printf("sum %ld handed back %d mapped %d\n", shared, handed_back(), model_mapped());
    return 0;
}
"""


@pytest.fixture(scope="module")
def idle_program(gcc, tmp_path_factory):
    folder = tmp_path_factory.mktemp("idle")
    (folder / "idle.c").write_text(IDLE)
    r = subprocess.run([gcc, "-O2", "-fopenmp", "-o", str(folder / "idle"), str(folder / "idle.c"), "-ldl"],
                       capture_output=True, timeout=TIMEOUT)
    if r.returncode:
        pytest.skip(f"cannot build the test program: {r.stderr.decode(errors='replace')[:200]}")
    return folder / "idle"


def test_steering_that_cannot_pay_keeps_the_model_out_and_hands_the_sections_back(idle_program, lib, tmp_path):
    # One thread: nothing to steer.  The sections go back once a window at that count made
    # the calls a rate needs (the program runs until it sees that), and the model never
    # starts before the exit; the counts after the hand-back are credited.
    out = tmp_path / "cc.jsonl"
    proc = run([idle_program, 300, 400000, 0], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out,
               steer="1", window_ms="50")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().split()[-4:] == ["back", "1", "mapped", "0"]
    (region,) = events(read_lines(out), "region")
    assert region["steering"]["not_explored"] == "one thread"
    assert region["steering"]["sync_counted_until_s"] > 0 and "sync_stop_scheduled_s" not in region["steering"]
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(region["calls"] * 1000, rel=0.02)


def test_a_lock_taking_region_that_holds_little_of_the_run_keeps_the_model_out(idle_program, lib, tmp_path):
    # 2 threads on 10 sections a call, a call every 100 ms: the region takes locks (left to
    # the model) but holds a sliver of the run, and all its time to come (as long again as
    # it ran) saved would not pay for the model (steer_start.c, RUN_SHARE, MODEL_COST_S).
    # Before, it started the model at its first whole window (a lock-taking region was left
    # to the model however little of the run it held).  The model starts only for the
    # exit's report.
    out = tmp_path / "cc.jsonl"
    proc = run([idle_program, 6, 6, 100000, 10], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out,
               steer="1")
    assert proc.returncode == 0, proc.stderr
    (region,) = events(read_lines(out), "region")
    (summary,) = events(read_lines(out), "summary")
    assert summary["model"] == "ok"
    # The premise is the region's small share, and a loaded machine stretches its calls
    # (the team's wake-ups wait for CPUs) but not the pauses.  Under 50 ms in all (about 20
    # on the idle 2-core VM) it can never hold half the run at a look (2 calls by 100 ms,
    # 3 by 200), nor have 50 ms to come at a whole window's look (0.6 s in all); above
    # that the premise did not hold, and the model may rightly start.
    if region["wall_s"] >= 0.05:
        pytest.skip(f"a loaded machine stretched the region's 6 calls to {region['wall_s']:.3f} s: not a sliver")
    assert proc.stdout.decode().split()[-2:] == ["mapped", "0"]
    assert region["steering"]["chosen"] is None and region["steering"]["now"] == 0
    assert summary["sampler"]["model_started_s"] is None


def test_a_convoy_of_calls_longer_than_a_window_starts_the_model(build, lib, tmp_path):
    # omp_slowdown with 5M sections a call: 50-80 ms a call at 2 threads on the 2-core VM
    # (more under load), fewer than the 4 calls a 100-ms window is charged for; 1 thread
    # takes half that or less.  Each step is measured over the windows its calls need.
    # Before, the region was refused in C ("too few calls per window") and the model never
    # started during the run.  Which count the model then chooses rests on the two counts'
    # measured speeds, which a loaded machine changes (2 threads chosen in about 1 run of 8
    # beside two busy loops), so this checks only that the C rule let the model start: its
    # lock rule counts acquisitions, not time.  The choice itself is tested on simulated
    # windows (test_steer_decisions: a convoy of 300 ms calls settles on 1 thread).
    prog = build("slowdown", EXAMPLES / "omp_slowdown.c", "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, 20, 5000000], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out, steer="1",
               window_ms="100", quiet="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"shared 350000000\n"  # 20 calls x 28 per 8 sections
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["model_started_s"] is not None



# Regions of long calls (native/boundary.c): too few calls a window for a window's rate
# (RATE_CALLS, 256), their rate per call is taken between call ends with none in flight.
# Before, their sections stayed counted for the whole run (sync_uncounted_s 0).
LONG = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void GOMP_critical_start(void);
static __attribute__((noinline)) int handed_back(void) {
    Dl_info info;
    return dladdr((void *)&GOMP_critical_start, &info) && info.dli_fname && strstr(info.dli_fname, "libgomp");
}
static long phase_b(int sections, long *shared) {
    long taken = 0;
#pragma omp parallel for schedule(static) reduction(+ : taken)
    for (int i = 0; i < sections; i++) {
#pragma omp critical
        *shared += i & 3;
        taken++;
    }
    return taken;
}
static int seen_at = -1; /* the call after which the program saw its sections handed back */
static int more(int c, int least, int after) {
    if (seen_at < 0 && c >= least && handed_back())
        seen_at = c;
    return seen_at < 0 || c < seen_at + after;
}
int main(int argc, char **argv) {
    /* Calls of argv[3] sections until the sections are handed back (at least argv[1], at
     * most argv[2]) and argv[5] more, then argv[4] calls of a second region (with argv[6],
     * at most argv[6] more once it sees the sections taken back); the program's own count
     * of each region's sections on the last line. */
    int least = atoi(argv[1]), most = atoi(argv[2]), sections = atoi(argv[3]), c = 0;
    int b_calls = argc > 4 ? atoi(argv[4]) : 0, after = argc > 5 ? atoi(argv[5]) : 0;
    int b_after = argc > 6 ? atoi(argv[6]) : -1, back_at = -1;
    long shared = 0, taken = 0, taken_b = 0;
    for (; c < most && more(c, least, after); c++) {
#pragma omp parallel for schedule(static) reduction(+ : taken)
        for (int i = 0; i < sections; i++) {
#pragma omp critical
            shared += (i ^ c) & 7;
            taken++;
        }
    }
    fprintf(stderr, "phase A handed back: %d\n", seen_at >= 0);
    for (int k = 0; k < b_calls && (b_after < 0 || back_at < 0 || k < back_at + b_after); k++) {
        taken_b += phase_b(sections, &shared);
        if (back_at < 0 && !handed_back())
            back_at = k + 1;
    }
    fprintf(stderr, "phase B taken back: %d\n", back_at >= 0);
    printf("sum %ld handed back %d\nsections %ld %ld\n", shared, handed_back(), taken, taken_b);
    return 0;
}
"""
LONG_SECTIONS = 2_000_000  # 10-40 ms a call at 1 thread: a few calls a 50-ms window


def long_calls(build, lib, out, least, most, b_calls=0, threads="1", after=0, b_after=-1, **settings):
    """The long-call program's run: whether its sections were handed back at the end, and
    its own count of each region's sections."""
    prog = build("settle_long", LONG, "-fopenmp", "-ldl")
    proc = run([prog, least, most, LONG_SECTIONS, b_calls, after, b_after], env=clean_env(OMP_NUM_THREADS=threads),
               preload=lib, output=out, window_ms="50", **settings)
    assert proc.returncode == 0, proc.stderr
    first, second = lines(proc)
    return proc, first.split()[-1] == "1", [int(n) for n in second.split()[1:]]


def test_without_steering_a_region_of_long_calls_is_handed_back(build, lib, tmp_path):
    # One thread: counting 2M sections a call costs, and no window holds 256 calls.  The
    # program runs until it sees its sections handed back (at most 40 calls); the credit
    # rests on whole calls, so the region's count is the program's own within 1%.
    out = tmp_path / "cc.jsonl"
    proc, handed, (taken, _) = long_calls(build, lib, out, 4, 40)
    assert handed, proc.stderr
    (region,) = events(read_lines(out), "region")
    assert taken == region["calls"] * LONG_SECTIONS
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(taken, rel=0.01)
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["sync_uncounted_s"] > 0


def test_a_region_of_long_calls_first_run_after_the_hand_back_is_credited_and_handed_back(build, lib, tmp_path):
    # Without steering: phase A's sections go back; phase B (another region, as long a call)
    # first runs uncounted, takes the wrappers back, gets its rate from its call ends, its
    # uncounted calls are credited at it, and the sections go back again.
    out = tmp_path / "cc.jsonl"
    proc, handed, (taken_a, taken_b) = long_calls(build, lib, out, 4, 40, b_calls=30)
    assert "phase A handed back: 1" in proc.stderr.decode() and handed, proc.stderr
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a, b = regions["main._omp_fn.0"], regions["phase_b._omp_fn.0"]
    assert taken_b == 30 * LONG_SECTIONS and b["calls"] == 30
    assert b["counters"]["acquisitions"]["critical"] == pytest.approx(taken_b, rel=0.01)
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(taken_a, rel=0.01)


def test_a_region_first_run_after_the_hand_back_that_ends_before_its_rate_is_credited_at_exit(build, lib, tmp_path):
    # Phase B first runs uncounted, takes the wrappers back, and the program ends one call
    # after it sees them back: too soon for a window to find B's rate (its boundaries were
    # asked a window after the take-back), so its first calls went uncredited (9.2-9.8 of
    # 10 calls in 3 of 40 runs, once 7.0).  Now its call ends are boundaries from the
    # take-back, and the exit credits them from the first to the program's end.
    out = tmp_path / "cc.jsonl"
    proc, _, (taken_a, taken_b) = long_calls(build, lib, out, 4, 40, b_calls=40, b_after=1)
    err = proc.stderr.decode()
    assert "phase A handed back: 1" in err and "phase B taken back: 1" in err, err
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a, b = regions["main._omp_fn.0"], regions["phase_b._omp_fn.0"]
    assert taken_b == b["calls"] * LONG_SECTIONS and "sync_uncredited_calls" not in b
    assert b["counters"]["acquisitions"]["critical"] == pytest.approx(taken_b, rel=0.01)
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(taken_a, rel=0.01)


def test_a_region_that_never_had_a_rate_is_said_uncredited_at_exit(build, lib, tmp_path):
    # One call of phase B after the hand-back: it is in no sample until it ended, so nothing
    # takes the wrappers back for it, and none of its sections is counted.  No rate is
    # invented: the JSON and the report say the call is left out.
    out = tmp_path / "cc.jsonl"
    proc, _, (taken_a, taken_b) = long_calls(build, lib, out, 4, 40, b_calls=1)
    err = proc.stderr.decode()
    assert "phase A handed back: 1" in err, err
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a, b = regions["main._omp_fn.0"], regions["phase_b._omp_fn.0"]
    assert taken_b == LONG_SECTIONS and b["calls"] == 1 and b["sync_uncredited_calls"] == 1
    assert b["counters"]["acquisitions"]["critical"] == 0
    assert "sync_uncredited_calls" not in a
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(taken_a, rel=0.01)
    assert "phase_b._omp_fn.0: the critical sections, atomics and OpenMP locks of 1 of its 1 calls" in err


def test_a_steered_convoy_of_long_calls_is_credited_within_1_percent(build, lib, tmp_path):
    # Two threads, steered: handed back at the own count before the model starts, or at the
    # count steering settles on, then 6 more calls.  The model's first answer after an own-count
    # hand-back takes the sections back (it has not settled), mid-call: that call ran partly
    # uncounted, and its credit once went missing (8.3 of 9 calls in 3 of 30 runs under load).
    # Whether the sections go back at all within 40 calls rests on steering's judgement of a
    # convoy, which load changes (under two busy loops the 2-thread convoy was left at 2
    # threads, "efficient", in 4 of 13 runs at 9c328bb; session 44): the credit is checked
    # on the first of three runs that handed them back.
    for attempt in range(3):
        out = tmp_path / f"cc{attempt}.jsonl"
        proc, _, (taken, _) = long_calls(build, lib, out, 4, 40, threads="2", after=6, steer="1")
        if "phase A handed back: 1" in proc.stderr.decode():
            break
    else:
        pytest.skip("steering handed no sections back in 3 runs (a loaded machine): nothing to credit")
    (region,) = events(read_lines(out), "region")
    assert taken == region["calls"] * LONG_SECTIONS
    assert region["counters"]["acquisitions"]["critical"] == pytest.approx(taken, rel=0.01)


# Long calls handed back, then one call of a region new to the sampler: the wrappers come
# back at the next window's end, in a long call (they run back to back), until the
# new region has a rate; the program goes on until it sees them back, then 4 calls more.
TAKEN_BACK = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void GOMP_critical_start(void);
static __attribute__((noinline)) int handed_back(void) {
    Dl_info info;
    return dladdr((void *)&GOMP_critical_start, &info) && info.dli_fname && strstr(info.dli_fname, "libgomp");
}
static __attribute__((noinline)) long long_call(int sections, int c, long *shared) {
    long taken = 0;
#pragma omp parallel for schedule(static) reduction(+ : taken)
    for (int i = 0; i < sections; i++) {
#pragma omp critical
        *shared += (i ^ c) & 7;
        taken++;
    }
    return taken;
}
static volatile int ran;
static __attribute__((noinline)) void new_region(void) {
#pragma omp parallel
    ran = 1;
}
int main(int argc, char **argv) {
    int sections = atoi(argv[1]), c = 0, most = 60;
    long shared = 0, taken = 0;
    for (; c < most && (c < 4 || !handed_back()); c++)
        taken += long_call(sections, c, &shared);
    int back = handed_back();
    new_region();
    for (; c < most && handed_back(); c++)
        taken += long_call(sections, c, &shared);
    int taken_back = !handed_back();
    for (int k = 0; k < 4; k++, c++)
        taken += long_call(sections, c, &shared);
    printf("sum %ld\nflags %d %d\nsections %ld\n", shared, back, taken_back, taken);
    return 0;
}
"""


def test_a_long_call_in_flight_when_the_sections_are_taken_back_is_credited(build, lib, tmp_path):
    # One thread, no steering.  The call in flight at the take-back ran uncounted until then,
    # and the credit (calls ended since the hand-back, at the rate) left it out: a fraction
    # of a call in 10-20 calls.  Its credit now waits for the region's next call end.
    prog = build("settle_taken_back", TAKEN_BACK, "-fopenmp", "-ldl")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, LONG_SECTIONS], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out, window_ms="50")
    assert proc.returncode == 0, proc.stderr
    _, flags, sections = lines(proc)
    assert flags == "flags 1 1", proc.stderr  # handed back, then taken back
    taken = int(sections.split()[1])
    regions = {r["name"]: r for r in events(read_lines(out), "region")}
    a = regions["long_call._omp_fn.0"]
    assert taken == a["calls"] * LONG_SECTIONS
    assert a["counters"]["acquisitions"]["critical"] == pytest.approx(taken, rel=0.01)


def settled_waits_fit(record: dict) -> bool:
    """Whether a record's section waits (critical, atomic, OpenMP locks) fit beside its
    holds and its other in-span waits in its threads' time (a region's busy time, the
    process's threads x wall)."""
    stalls, counters = record["stalls_s"], record["counters"]
    span = counters["busy_s"] if record["event"] == "region" else record["threads"] * record["wall_s"]
    waits = sum(v for k, v in stalls.items() if k not in ("imbalance", "runqueue"))
    return waits + sum((counters.get("hold_s") or {}).values()) <= span * (1 + 1e-4) + 1e-6


@pytest.mark.parametrize("threads", ["1", "2"])
def test_section_waits_never_exceed_the_threads_time(build, lib, tmp_path, threads):
    # omp_lock_convoy recorded 0.52 thread-s of omp_lock waits in 0.44 s of busy time:
    # waits scaled from timed samples and credited after the hand-back at a window's rate
    # (its sections ran slower while counted) outgrew the time the threads had
    # (runuser37).  The final record fits them beside the holds, as the model does.
    prog = build("convoy", EXAMPLES / "omp_lock_convoy.c", "-fopenmp")
    for i in range(3):
        out = tmp_path / f"cv{i}.jsonl"
        proc = run([prog, 2000], env=clean_env(OMP_NUM_THREADS=threads), preload=lib, output=out)
        assert proc.returncode == 0, proc.stderr
        records = events(read_lines(out), "region") + events(read_lines(out), "process")
        assert records and all(settled_waits_fit(r) for r in records), records
