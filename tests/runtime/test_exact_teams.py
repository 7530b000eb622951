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
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "call"))
        omp_set_dynamic(0);
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
@pytest.mark.parametrize("how", ["call", "env"])
def test_exact_team_sizes_are_left_as_asked(build, lib, mode, how):
    exe = build("exact_teams", BLOCKS_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2", **({"OMP_DYNAMIC": "false"} if how == "env" else {}))
    bare = run([exe, how], env=env)
    assert bare.returncode == 0 and bare.stdout == b"shared 42000000\n"
    measured = run([exe, how], env=env, preload=lib, **{mode: "1"})
    assert measured.returncode == 0 and measured.stdout == bare.stdout, measured.stderr[-300:]
    assert b"changed no team: the program asks for exact team sizes" in measured.stderr
