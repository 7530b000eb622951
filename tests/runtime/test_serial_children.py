"""Processes whose children ran: the report says what was measured (session user44).

`corecast run -- make -j2` and a forking worker pool start no thread themselves, and
their report read "serial run: no parallel activity", a false statement about a program
whose work ran in processes side by side; a pool beside a few threads (Python's
multiprocessing) got a table of its threads with no word of its workers.  The library
now reads the CPU time of the children it waited for (getrusage) and says so; the
summary record keeps it as ``children_cpu_s``, and replay prints the same line.

Nothing here depends on the machine's speed: each child spins until its own CPU clock has
advanced, so its CPU time is above zero however loaded the machine is.
"""
from __future__ import annotations

import json
import subprocess
import sys

from corecast.views import columns

from .helpers import read_lines, run

# Two children, each burning 20 ms of its own CPU, waited for; the parent starts no thread.
FORKING_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(void) {
    for (int k = 0; k < 2; k++)
        if (fork() == 0) {
            volatile unsigned long x = 1;
            double start = cpu();
            while (cpu() - start < 0.02)
                x = x * 6364136223846793005ul + 1;
            _exit(10 + k);
        }
    int status, sum = 0;
    while (wait(&status) > 0)
        sum += WEXITSTATUS(status);
    printf("children %d\n", sum);
    return 0;
}
"""

# The same children beside one thread of the parent's: a full report, not a serial run.
THREAD_AND_FORKS_C = r"""
#include <pthread.h>
static void *idle(void *a) { return a; }
#define main forking_main
""" + FORKING_C + r"""
#undef main
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, idle, 0);
    pthread_join(t, 0);
    return forking_main();
}
"""

NO_CHILDREN_C = r"""
#include <stdio.h>
int main(void) { printf("alone\n"); return 0; }
"""


def _launched(prog, lib, out):
    # the program corecast run started (its pid in CORECAST_LAUNCH_PID) says the line
    return run(["sh", "-c", f"CORECAST_LAUNCH_PID=$$ exec '{prog}'"], preload=lib, output=out)


def test_a_serial_run_whose_children_ran_does_not_claim_no_parallel_activity(build, lib, tmp_path):
    prog = build("forks_two", FORKING_C)
    out = tmp_path / "cc.jsonl"
    plain = run([prog])
    proc = _launched(prog, lib, out)
    assert proc.stdout == plain.stdout == b"children 21\n" and proc.returncode == 0
    err = proc.stderr.decode()
    assert "no parallel activity" not in err, err
    assert err.count("\n") == 1 and "serial run: no thread started and no OpenMP region in this process" in err
    assert "the child processes it waited for used" in err
    (summary,) = [r for r in read_lines(out) if r["event"] == "summary" and r.get("serial_run")]
    assert summary["children_cpu_s"] >= 0.02  # two children of at least 20 ms each, read back
    # Replay prints the library's line for the recorded process.
    rep = subprocess.run([sys.executable, "-m", "corecast", "replay", str(out)], capture_output=True, text=True,
                         timeout=60)
    assert rep.returncode == 0, rep.stderr
    line = columns.SERIAL_RUN_CHILDREN % summary["children_cpu_s"]
    assert line in rep.stdout and line in err
    rep = subprocess.run([sys.executable, "-m", "corecast", "replay", "--json", str(out)], capture_output=True,
                         text=True, timeout=60)
    (entry,) = json.loads(rep.stdout)["processes"]
    assert entry["serial_run"] is True and entry["children_cpu_s"] == summary["children_cpu_s"]


def test_a_serial_run_without_children_keeps_its_line(build, lib, tmp_path):
    prog = build("alone", NO_CHILDREN_C)
    out = tmp_path / "cc.jsonl"
    proc = _launched(prog, lib, out)
    assert proc.stderr.decode().endswith(": " + columns.SERIAL_RUN + "\n")
    (summary,) = read_lines(out)
    assert summary["serial_run"] is True and summary["children_cpu_s"] == 0


def test_a_threaded_process_names_its_childrens_cpu_under_its_table(build, lib, tmp_path):
    prog = build("thread_and_forks", THREAD_AND_FORKS_C, "-pthread")
    out = tmp_path / "cc.jsonl"
    proc = _launched(prog, lib, out)
    assert proc.stdout == b"children 21\n" and proc.returncode == 0
    err = proc.stderr.decode()
    (summary,) = [r for r in read_lines(out) if r["event"] == "summary"]
    assert "serial_run" not in summary and summary["children_cpu_s"] >= 0.02
    line = "corecast: " + columns.CHILDREN_LINE % summary["children_cpu_s"]
    assert line in err.splitlines(), err
    rep = subprocess.run([sys.executable, "-m", "corecast", "replay", str(out)], capture_output=True, text=True,
                         timeout=60)
    assert rep.returncode == 0 and line in rep.stdout.splitlines(), rep.stdout + rep.stderr
