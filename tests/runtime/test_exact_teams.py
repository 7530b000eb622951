"""A program that asks OpenMP for exact team sizes gets them under steering and probing.

OpenMP may give a team fewer threads than asked only while dyn-var is true.  A program that
sets it false (`omp_set_dynamic(0)`, `OMP_DYNAMIC=false`) may split its work by thread
number and count on every share being done: steered or probed at a smaller team, such a
program summed 21100000 where it sums 42000000, and one whose thread waits for another hung.
corecast then leaves every team as asked and says so at the exit."""
from __future__ import annotations

import pytest

from .helpers import clean_env, run

# Each thread of the team takes its block of the 4000 iterations, by thread number.
BLOCKS_C = r"""
#include <omp.h>
#include <stdio.h>
#include <string.h>
void omp_set_dynamic_(const int *); /* Fortran's, as gfortran calls it */
int main(int argc, char **argv) {
    int no = 0;
    if (argc > 1 && !strcmp(argv[1], "call"))
        omp_set_dynamic(0);
    if (argc > 1 && !strcmp(argv[1], "fortran"))
        omp_set_dynamic_(&no);
    int nt = omp_get_max_threads();
    long shared = 0;
    for (int c = 0; c < 3000; c++) {
#pragma omp parallel
        {
            int t = omp_get_thread_num();
            for (int i = 4000 * t / nt; i < 4000 * (t + 1) / nt; i++) {
#pragma omp critical
                shared += (i ^ c) & 7;
            }
        }
    }
    printf("shared %ld\n", shared);
    return 0;
}
"""


@pytest.mark.parametrize("mode", ["steer", "probe"])
@pytest.mark.parametrize("how", ["call", "fortran", "env", "env spaced"])
def test_exact_team_sizes_are_left_as_asked(build, lib, mode, how):
    """Through the C call, Fortran's (libgomp forwards it past the C name) and the
    environment, read as libgomp reads it (spaces around the word, any case)."""
    exe = build("exact_teams", BLOCKS_C, "-fopenmp")
    dynamic = {"env": {"OMP_DYNAMIC": "false"}, "env spaced": {"OMP_DYNAMIC": " FALSE "}}.get(how, {})
    env = clean_env(OMP_NUM_THREADS="2", **dynamic)
    bare = run([exe, how], env=env)
    assert bare.returncode == 0 and bare.stdout == b"shared 42000000\n"
    measured = run([exe, how], env=env, preload=lib, **{mode: "1"})
    assert measured.returncode == 0 and measured.stdout == bare.stdout, measured.stderr[-300:]
    assert b"changed no team: the program asks for exact team sizes" in measured.stderr


PENDING_C = r"""
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    sigset_t bus, pending;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    sigprocmask(SIG_BLOCK, &bus, NULL); /* every thread made from here blocks it too */
    kill(getpid(), SIGBUS);             /* left pending, as the program means it */
    double s = 0;
    for (int c = 0; c < 3000; c++) {
#pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 20000; i++) s += i * 0.5;
    }
    sigpending(&pending);
    printf("pending %d\n", sigismember(&pending, SIGBUS));
    return 0;
}
"""


def test_a_fatal_signal_the_program_left_pending_stays_pending(build, lib):
    """The sampler lets faults through while it runs the model, for the exit guard: a SIGBUS
    the program had left pending (blocked everywhere) was taken there, and a steered run died
    of it, or its report lost the predictions.  A pending one stays blocked on the sampler."""
    exe = build("pending_bus", PENDING_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2")
    bare = run([exe], env=env)
    assert bare.returncode == 0 and bare.stdout == b"pending 1\n"
    for settings in ({"steer": "1"}, {}):
        measured = run([exe], env=env, preload=lib, **settings)
        assert (measured.returncode, measured.stdout) == (0, bare.stdout), measured.stderr[-300:]
        assert b"no predictions" not in measured.stderr
