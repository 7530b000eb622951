"""Tasks a single block makes (``single_tasks``, ``single_task_spawn_s``): the producer of
OpenMP's parallel + single + task idiom, counted apart from tasks made elsewhere in the
region (by every thread after the block, or inside tasks), so that a later model can tell a
region whose tasks one thread makes from one whose tasks are made everywhere (#38, BOTS
sparselu-for).  Counts are compared exactly; times only as inequalities any load keeps."""
from __future__ import annotations

import pytest

from corecast.recording.record import region_from_json

from .helpers import clean_env, events, read_lines, run

CALLS = 3  # region calls in each program

# Each call: N tasks made in the single block, then (after its barrier) M by every thread.
# A task's work: the same in every program, so that their counts alone differ.
SPIN_C = r"""
#include <stdio.h>
static long spin(long i) {
    long s = i;
    for (int k = 0; k < 20000; k++)
        s = (s * 7 + k) % 1000003;
    return s;
}
"""

PRODUCER_C = SPIN_C + r"""
enum { CALLS = 3, N = 40, M = 5 };
int main(void) {
    long total = 0;
    for (int c = 0; c < CALLS; c++) {
#pragma omp parallel shared(total)
        {
#pragma omp single
            for (long i = 0; i < N; i++) {
#pragma omp task firstprivate(i) shared(total)
                {
                    long v = spin(i);
#pragma omp atomic
                    total += v;
                }
            }
            for (long j = 0; j < M; j++) {
#pragma omp task firstprivate(j) shared(total)
                {
                    long v = spin(1000 + j);
#pragma omp atomic
                    total += v;
                }
            }
        }
    }
    printf("%ld\n", total % 1000);
    return 0;
}
"""
PRODUCED, PER_THREAD = 40, 5

# Each call: the single block makes one root task and waits for it; the tree of fib(N)'s
# tasks is made inside tasks (on the block's thread too, while it waits in the taskwait).
FIB_C = r"""
#include <stdio.h>
enum { CALLS = 3, N = 12 };
static long fib(int n) {
    if (n < 2)
        return n;
    long x, y;
#pragma omp task shared(x) firstprivate(n)
    x = fib(n - 1);
#pragma omp task shared(y) firstprivate(n)
    y = fib(n - 2);
#pragma omp taskwait
    return x + y;
}
int main(void) {
    long r = 0, total = 0;
    for (int c = 0; c < CALLS; c++) {
#pragma omp parallel shared(r)
#pragma omp single
        {
#pragma omp task shared(r)
            r = fib(N);
#pragma omp taskwait
        }
        total += r;
    }
    printf("%ld\n", total);
    return 0;
}
"""
FIB_N = 12

# Each call: a single block (nowait) makes N tasks that the team runs in the explicit barrier
# after it; every thread then makes M that run in the implicit barrier of a loop.  No task is
# left for the region's end; each task enters a critical section once.
BARRIER_C = SPIN_C + r"""
enum { CALLS = 3, N = 30, M = 4 };
int main(void) {
    long total = 0, loop = 0;
    for (int c = 0; c < CALLS; c++) {
#pragma omp parallel shared(total) reduction(+ : loop)
        {
#pragma omp single nowait
            for (long i = 0; i < N; i++) {
#pragma omp task firstprivate(i) shared(total)
                {
                    long v = spin(i);
#pragma omp critical
                    total += v;
                }
            }
#pragma omp barrier
            for (long j = 0; j < M; j++) {
#pragma omp task firstprivate(j) shared(total)
                {
                    long v = spin(1000 + j);
#pragma omp critical
                    total += v;
                }
            }
#pragma omp for
            for (int k = 0; k < 8; k++)
                loop += k;
        }
    }
    printf("%ld %ld\n", total % 1000, loop);
    return 0;
}
"""
BARRIER_N, BARRIER_M = 30, 4


def fib_tasks(n: int) -> int:
    """Tasks fib(n) of FIB_C makes: two per call with n >= 2."""
    return 0 if n < 2 else 2 + fib_tasks(n - 1) + fib_tasks(n - 2)


def recorded(prog, lib, out, threads: str) -> tuple[dict, dict]:
    """The region and process lines of one run, its output unchanged by the library."""
    env = clean_env(OMP_NUM_THREADS=threads)
    plain = run([prog], env=env)
    proc = run([prog], env=env, preload=lib, output=out, quiet="1")
    assert plain.returncode == 0 and proc.returncode == 0 and proc.stdout == plain.stdout
    (region,) = events(read_lines(out), "region")
    (process,) = events(read_lines(out), "process")
    return region, process


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_tasks_made_in_a_single_block_are_counted_apart(build, lib, tmp_path, threads):
    """The single block's tasks, exactly; the team's after it are tasks but not the block's;
    the block's creating time is some of all creating time."""
    prog = build("omp_single_producer", PRODUCER_C, "-fopenmp")
    region, process = recorded(prog, lib, tmp_path / "producer.jsonl", threads)
    team = region["threads"]
    assert region["calls"] == CALLS and team == int(threads)
    for rec in (region, process):
        c = rec["counters"]
        assert (c["tasks"], c["single_tasks"]) == (CALLS * (PRODUCED + PER_THREAD * team), CALLS * PRODUCED)
        assert 0 < c["single_task_spawn_s"] <= c["task_spawn_s"]
    sample = region_from_json(region)
    assert (sample["single_tasks"], sample["single_task_spawn_s"]) == (
        CALLS * PRODUCED, region["counters"]["single_task_spawn_s"])


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_tasks_made_inside_tasks_are_not_the_single_blocks(build, lib, tmp_path, threads):
    """A recursive tree under one root task: the block made one task a call, the tasks made
    the rest, also those its own thread ran while waiting in the block's taskwait."""
    prog = build("omp_single_fib", FIB_C, "-fopenmp")
    region, process = recorded(prog, lib, tmp_path / "fib.jsonl", threads)
    for rec in (region, process):
        c = rec["counters"]
        assert (c["tasks"], c["single_tasks"]) == (CALLS * (1 + fib_tasks(FIB_N)), CALLS)
        assert 0 < c["single_task_spawn_s"] <= c["task_spawn_s"]
