"""A forked child starts without corecast's threads: whatever they held at the fork is
nobody's there.  CORECAST_TEST_FAULT=naming_at_fork holds the region-naming lock across the
program's forks, as the sampler holds it while it names a window's regions; the child's own
exit report names its regions under that lock (it waited on it for ever)."""
from __future__ import annotations

import pytest

from .helpers import clean_env, events, read_lines, run

FORK_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static double work(int n) {
    double s = 0;
#pragma omp parallel for reduction(+:s) num_threads(2)
    for (int i = 0; i < n; i++) s += i;
    return s;
}
/* libgomp's pool stays the parent's: the child's region runs on a thread of its own */
static void *child_work(void *p) { *(double *)p = work(2000); return NULL; }
int main(void) {
    printf("parent %.0f\n", work(1000));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        double s;
        pthread_t th;
        pthread_create(&th, NULL, child_work, &s);
        pthread_join(th, NULL);
        printf("child %.0f\n", s);
        exit(5); /* the exit report: the child's region named */
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 3;
}
"""


@pytest.mark.parametrize("quiet", ["0", "1"])
def test_a_child_forked_while_the_naming_lock_is_held_reports_and_exits(build, lib, tmp_path, quiet):
    exe = build("fork_naming", FORK_C, "-fopenmp", "-pthread")
    plain = run([exe], env=clean_env(OMP_NUM_THREADS="2"))
    out = tmp_path / "run-{pid}.jsonl"
    got = run([exe], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, quiet=quiet, output=out,
              test_fault="naming_at_fork")
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, b"parent 499500\nchild 1999000\nchild status 5\n")
    files = sorted(tmp_path.glob("run-*.jsonl"))
    assert len(files) == 2  # the parent's and the child's recordings, each whole
    named = [events(read_lines(f), "region") for f in files]
    assert all(any(r.get("name", "").startswith("work") for r in regions) for regions in named), named
