"""The model inside a C program: numpy's and scipy's OpenBLAS start no thread pool there,
and the program's environment is the same after the model ran as before."""
from __future__ import annotations

import os
import re

import pytest

from .helpers import clean_env, run

# OpenMP regions at team sizes 1 and 2, then 1 and 3, for about 1 s (the pool grows once and
# never shrinks to a team that regrows it, so libgomp makes the same threads in every
# run): the model runs at the exit (windows run it only to steer) and, with three team
# sizes, fits the region's history (numpy and scipy) up to CORECAST_TARGET=4 (up to the
# sizes it measured, the history is interpolated, and two sizes are drawn through, both
# without numpy).  The exit report runs as main
# returns, before exit handlers: the program looks at itself in one.
PROGRAM = r"""
#include <dirent.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double sum;

static void look(void) {
    usleep(300000); /* the sampler thread, done with the exit report, ends meanwhile */
    int tasks = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; (e = readdir(d));)
        tasks += e->d_name[0] != '.';
    closedir(d);
    int blas = 0;
    char line[4096];
    FILE *m = fopen("/proc/self/maps", "r");
    while (fgets(line, sizeof line, m))
        blas |= strstr(line, "openblas") != NULL;
    fclose(m);
    const char *v = getenv("OPENBLAS_NUM_THREADS");
    printf("threads=%d openblas_mapped=%d OPENBLAS_NUM_THREADS=%s sum=%g\n", tasks, blas, v ? v : "(unset)", sum > 0 ? 1.0 : 0.0);
}

int main(void) {
    atexit(look);
    double t0 = now();
    for (int k = 0; now() - t0 < 1.0; k++) {
#pragma omp parallel for num_threads(k % 2 ? 1 : now() - t0 < 0.3 ? 2 : 3) reduction(+ : sum)
        for (int i = 0; i < 200000; i++)
            sum += i * 0.5;
    }
    return 0;
}
"""


def _look(out: bytes) -> dict[str, str]:
    m = re.search(r"threads=(\d+) openblas_mapped=(\d) OPENBLAS_NUM_THREADS=(\S+)", out.decode())
    assert m, out
    return {"threads": int(m[1]), "blas": m[2] == "1", "env": m[3]}


@pytest.mark.parametrize("preset", [None, "3"])
def test_model_starts_no_blas_threads_and_leaves_the_environment(build, lib, tmp_path, preset):
    exe = build("blas_threads", PROGRAM, "-fopenmp")
    env = clean_env()
    for var in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(var, None)
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    env["CORECAST_TARGET"] = "4"
    out = tmp_path / "out.jsonl"
    without = run([exe], env=env, preload=lib, quiet=1)  # quiet, no output: no model
    with_model = run([exe], env=env, preload=lib, quiet=1, output=out)
    assert without.returncode == 0, without.stderr
    assert with_model.returncode == 0, with_model.stderr
    a, b = _look(without.stdout), _look(with_model.stdout)
    assert not a["blas"]
    # Only the model's history fit loads numpy here: without it the checks below prove nothing.
    assert b["blas"], "the model did not load numpy"
    if len(os.sched_getaffinity(0)) >= 2:  # with one CPU OpenBLAS starts no pool anyway
        assert b["threads"] == a["threads"]
    assert a["env"] == b["env"] == (preset or "(unset)")
