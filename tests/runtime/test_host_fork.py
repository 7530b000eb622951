"""A forked child starts without corecast's threads, and the program's other threads: whatever
they held at the fork is nobody's there.  CORECAST_TEST_FAULT holds a flag across the
program's forks, as another thread holds it in the moment: naming_at_fork the region-naming
lock, which the sampler holds while it names a window's regions (the child's exit report
names its regions under it: it waited on it for ever); view_at_fork the flag a program
thread holds while it makes the OpenMP view for an object's first call (the child's first
call from an object without a view spun for ever); loading_at_fork the flag a thread holds
while it starts the model (the child started it again, on whatever the other had half
made)."""
from __future__ import annotations

import sys

import pytest

from .helpers import clean_env, events, read_lines, run_bounded


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
    plain = run_bounded([exe], clean_env(OMP_NUM_THREADS="2"))
    out = tmp_path / "run-{pid}.jsonl"
    got = run_bounded([exe], clean_env(OMP_NUM_THREADS="2", LD_PRELOAD=str(lib), CORECAST_QUIET=quiet,
                                       CORECAST_OUTPUT=str(out), CORECAST_TEST_FAULT="naming_at_fork"))
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, b"parent 499500\nchild 1999000\nchild status 5\n")
    files = sorted(tmp_path.glob("run-*.jsonl"))
    assert len(files) == 2  # the parent's and the child's recordings, each whole
    named = [events(read_lines(f), "region") for f in files]
    assert all(any(r.get("name", "").startswith("work") for r in regions) for regions in named), named


# The child's only OpenMP region is in an object of its own, which the parent never calls:
# its first call there makes that object's view.  The fork comes before any activity of
# the parent's, so no model is starting or started at it but the fault's.
CHILD_LIB_C = r"""
double child_work(int n) {
    double s = 0;
#pragma omp parallel for reduction(+:s) num_threads(2)
    for (int i = 0; i < n; i++) s += i;
    return s;
}
"""

FORK_FIRST_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
double child_work(int n);
static double work(int n) {
    double s = 0;
#pragma omp parallel for reduction(+:s) num_threads(2)
    for (int i = 0; i < n; i++) s += i;
    return s;
}
int main(void) {
    pid_t pid = fork();
    if (pid == 0) {
        printf("child %.0f\n", child_work(2000));
        exit(5);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    printf("parent %.0f\n", work(1000));
    fprintf(stderr, "pids %d %d\n", (int)getpid(), (int)pid);
    return 3;
}
"""

FORK_FIRST_PY = r"""
import os, sys, threading
def work():
    lock = threading.Lock()
    def inc():
        for _ in range(20000):
            with lock:
                pass
    threads = [threading.Thread(target=inc) for _ in range(2)]
    [t.start() for t in threads]
    [t.join() for t in threads]
pid = os.fork()
if pid == 0:
    work()
    print("child done", flush=True)
    sys.exit(5)
_, st = os.waitpid(pid, 0)
print("child status", os.waitstatus_to_exitcode(st))
work()
print("parent done")
print("pids", os.getpid(), pid, file=sys.stderr)
sys.exit(3)
"""

CHILD_EXPECTED = {"c": b"child 1999000\nchild status 5\nparent 499500\n",
                  "python": b"child done\nchild status 5\nparent done\n"}


def fork_first(build, tmp_path, host: str) -> list:
    if host == "python":
        script = tmp_path / "fork_first.py"
        script.write_text(FORK_FIRST_PY)
        return [sys.executable, script]
    so = build("libforkchild.so", CHILD_LIB_C, "-shared", "-fPIC", "-fopenmp")
    return [build("fork_first", FORK_FIRST_C, "-fopenmp", str(so), f"-Wl,-rpath,{so.parent}")]


def run_with_fault(build, lib, tmp_path, host: str, fault: str):
    """The fork-first program, plain and under the library with ``fault``: (its recording's
    lines by pid, parent pid, child pid)."""
    cmd = fork_first(build, tmp_path, host)
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run_bounded(cmd, env)
    out = tmp_path / "run-{pid}.jsonl"
    got = run_bounded(cmd, {**env, "LD_PRELOAD": str(lib), "CORECAST_OUTPUT": str(out),
                            "CORECAST_TEST_FAULT": fault})
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, CHILD_EXPECTED[host])
    pids = [ln for ln in got.stderr.decode().splitlines() if ln.startswith("pids ")]
    parent, child = (int(x) for x in pids[0].split()[1:])
    lines = {pid: read_lines(tmp_path / f"run-{pid}.jsonl") for pid in (parent, child)}
    return lines, parent, child


def test_a_child_forked_while_a_view_is_made_makes_its_own(build, lib, tmp_path):
    lines, parent, child = run_with_fault(build, lib, tmp_path, "c", "view_at_fork")
    (region,) = events(lines[child], "region")
    assert region["name"].startswith("child_work") and region["calls"] == 1, region
    assert [r["name"] for r in events(lines[parent], "region")] == ["work._omp_fn.0"]


@pytest.mark.parametrize("host", ["c", "python"])
def test_a_child_forked_while_the_model_starts_says_why_it_has_none(build, lib, tmp_path, host):
    lines, parent, child = run_with_fault(build, lib, tmp_path, host, "loading_at_fork")
    (summary,) = events(lines[child], "summary")
    assert summary["model"] == "model not available in a child forked while the model was starting"
    (summary,) = events(lines[parent], "summary")
    assert summary["model"] == "ok", summary["model"]
