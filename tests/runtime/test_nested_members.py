"""A member's bookkeeping around teams started inside it (native/omp_call.c): a team a task
starts in a barrier, a team started inside a single block, and members past the depth the
OMPT shim tracks.  Each program is built with gcc (libgomp's entry points) and clang
(libomp's OMPT callbacks); the counts compared are exact on both."""
from __future__ import annotations

import pytest

from .helpers import clean_env, events, read_lines, run
from .test_ompt import acquisitions, both, clang  # noqa: F401 (fixtures)

CALLS = 20

# Each call: a single block makes one task, run in the single's barrier; the task enters a
# critical section and starts an inner team whose members enter one each; then every outer
# member enters one.
TASK_TEAM_C = r"""
#include <stdio.h>
enum { CALLS = %d };
int main(void) {
    long total = 0;
    for (int c = 0; c < CALLS; c++) {
#pragma omp parallel num_threads(2) shared(total)
        {
#pragma omp single
            {
#pragma omp task shared(total)
                {
#pragma omp critical
                    total += 1;
#pragma omp parallel num_threads(2) shared(total)
                    {
#pragma omp critical
                        total += 1;
                    }
                }
            }
#pragma omp critical
            total += 1;
        }
    }
    printf("%%ld\n", total);
    return 0;
}
""" % CALLS


@pytest.mark.parametrize("levels", [1, 2])
def test_a_team_a_task_starts_in_a_barrier_is_nested(both, lib, tmp_path, levels):
    """LLVM 14's libomp gives a single block's barrier the join's kind, so a member stops
    there as if at the join; it once left the team too, and a team a task started in that
    barrier was taken as an outermost region (not nested), whose start dropped the outer
    member's snapshot: the outer region counted 60 critical sections of 80."""
    for cc, prog in both("omp_task_team", TASK_TEAM_C).items():
        out = tmp_path / f"{cc}_{levels}.jsonl"
        proc = run([prog], env=clean_env(OMP_MAX_ACTIVE_LEVELS=str(levels)), preload=lib, output=out, quiet="1",
                   keep_counting="1")
        total = CALLS * (3 + levels)
        assert proc.returncode == 0 and proc.stdout == f"{total}\n".encode(), (cc, proc.stderr)
        lines = read_lines(out)
        regions = events(lines, "region")
        (proc,) = events(lines, "process")
        outer = [acquisitions(r)["critical"] for r in regions if not r["nested"]]
        inner = [acquisitions(r)["critical"] for r in regions if r["nested"]]
        assert (outer, inner) == ([CALLS * 4], [CALLS * levels]), (cc, levels)
        assert acquisitions(proc)["critical"] == total, (cc, levels)


BEFORE, AFTER = 3, 5
# Each call: a single block makes BEFORE tasks, starts an inner team whose members make one
# task each, then makes AFTER tasks.
SINGLE_TEAM_C = r"""
#include <stdio.h>
enum { CALLS = %d, BEFORE = %d, AFTER = %d };
static volatile long sink;
int main(void) {
    for (int c = 0; c < CALLS; c++) {
#pragma omp parallel num_threads(2)
        {
#pragma omp single
            {
                for (int i = 0; i < BEFORE; i++) {
#pragma omp task
                    sink++;
                }
#pragma omp parallel num_threads(2)
                {
#pragma omp task
                    sink++;
                }
                for (int i = 0; i < AFTER; i++) {
#pragma omp task
                    sink++;
                }
            }
        }
    }
    printf("ok\n");
    return 0;
}
""" % (CALLS, BEFORE, AFTER)


@pytest.mark.parametrize("levels", [1, 2])
def test_a_team_started_in_a_single_block_leaves_it_open(both, lib, tmp_path, levels):
    """An inner member's leave once closed the outer thread's single block: the tasks it
    made after the inner team went uncounted, the inner master's were counted as the
    block's (80 of 160), and the inner region took the block's time as its own."""
    for cc, prog in both("omp_single_team", SINGLE_TEAM_C).items():
        out = tmp_path / f"{cc}_{levels}.jsonl"
        proc = run([prog], env=clean_env(OMP_MAX_ACTIVE_LEVELS=str(levels)), preload=lib, output=out, quiet="1",
                   keep_counting="1")
        assert proc.returncode == 0 and proc.stdout == b"ok\n", (cc, proc.stderr)
        lines = read_lines(out)
        regions = events(lines, "region")
        (proc,) = events(lines, "process")
        made = CALLS * (BEFORE + AFTER)
        assert [r["counters"]["single_tasks"] for r in regions if not r["nested"]] == [made], (cc, levels)
        assert [(r["counters"]["single_tasks"], r["counters"]["single_s"]) for r in regions if r["nested"]] == \
            [(0, 0)], (cc, levels)
        assert proc["counters"]["single_tasks"] == made, (cc, levels)


TASKS = 30
# TASKS tasks on the main thread, then five teams of one, each inside the one before: the
# OMPT shim tracks four implicit tasks per thread (MAX_DEPTH), so the fifth is not measured.
DEEP_C = r"""
#include <stdio.h>
enum { TASKS = %d };
static volatile long sink;
int main(void) {
#pragma omp parallel num_threads(1)
    for (int i = 0; i < TASKS; i++) {
#pragma omp task
        sink++;
    }
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
#pragma omp parallel num_threads(1)
    sink++;
    printf("%%ld\n", sink);
    return 0;
}
""" % TASKS


def test_a_member_not_measured_leaves_no_end_for_the_join(both, lib, tmp_path):
    """The join read the unmeasured member's slot of a pooled call record as it was: never
    written, its thread slot 0 (the main thread's: the region took its 30 tasks) and its end
    0 (an imbalance as long as the machine's uptime)."""
    for cc, prog in both("omp_deep", DEEP_C).items():
        out = tmp_path / f"{cc}.jsonl"
        proc = run([prog], env=clean_env(OMP_MAX_ACTIVE_LEVELS="8"), preload=lib, output=out, quiet="1")
        assert proc.returncode == 0 and proc.stdout == f"{TASKS + 1}\n".encode(), (cc, proc.stderr)
        regions = events(read_lines(out), "region")
        assert sorted(r["counters"]["tasks"] for r in regions) == [0] * 5 + [TASKS], cc
        for r in regions:  # a member's idle time at the join lies inside the call
            assert r["stalls_s"]["imbalance"] <= r["wall_s"] * r["threads"] * (1 + 1e-5), (cc, r["name"])
