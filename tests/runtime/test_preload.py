"""The preload library in real processes: the examples under ``corecast run`` (output,
exit status, JSON Lines, report), and the process lifecycle (no threads, fork, exec,
_exit/_Exit/quick_exit, abort), settings and a missing model library.

Nothing here depends on how fast the machine is: waits are asserted > 0 only where the
program forces them (a holder that sleeps until the others have asked), and the OpenMP
team size is fixed with OMP_NUM_THREADS.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.recording.abi import STALLS
from corecast.recording.record import region_from_json

ROOT = Path(__file__).resolve().parents[2]

from .helpers import (EXAMPLES, FAKE_MODEL_PRELUDE_C, MODEL_MAPPED_FN_C, NATIVE_SOURCE, TIMEOUT, beside_model, clean_env,
                      REPORT_HEAD, corecast_run, events, read_lines, report_blocks, run)

OMP_THREADS = 4
OMP_ENV = {"OMP_NUM_THREADS": str(OMP_THREADS)}
OMP_ITERATIONS = "64"  # omp_critical's iterations: 10 calls of its region
PTHREAD_ITERATIONS = "200"

# Integer work in an OpenMP loop: its result does not depend on the team or the order.
WORK_H = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static long omp_work(int n) {
    long s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static)
    for (int i = 0; i < n; i++) {
        unsigned long x = (unsigned long)i + 1;
        for (int k = 0; k < 20000 * (1 + i % 4); k++)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
        s += (long)(x >> 40);
    }
    return s;
}
"""

NO_THREADS_C = r"""
#include <stdio.h>
int main(void) { printf("hello, no threads\n"); return 0; }
"""

FORK_C = WORK_H + r"""
#include <sys/wait.h>
int main(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("child %ld\n", omp_work(32));
        return 0;
    }
    int status;
    waitpid(child, &status, 0);
    printf("parent %ld child status %d\n", omp_work(16), WEXITSTATUS(status));
    fprintf(stderr, "pids %d %d\n", (int)getpid(), (int)child);
    return 0;
}
"""

# A parent that was already active when it forked: the child must still report.
FORK_AFTER_ACTIVITY_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static void *noop(void *a) { return a; }
static void spawn(void) { pthread_t t; pthread_create(&t, 0, noop, 0); pthread_join(t, 0); }
int main(void) {
    spawn();
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        spawn();
        printf("child done\n");
        return 0;
    }
    waitpid(child, 0, 0);
    printf("parent done\n");
    fprintf(stderr, "pids %d %d\n", (int)getpid(), (int)child);
    return 0;
}
"""

# The implicit barrier that ends a dynamic worksharing loop is GOMP_loop_end (a static
# one ends in GOMP_barrier): three threads wait there for the one that naps 50 ms.
LOOP_END_C = r"""
#include <stdio.h>
#include <time.h>
static void nap_ms(int ms) { struct timespec t = {0, ms * 1000000L}; nanosleep(&t, NULL); }
int main(void) {
#pragma omp parallel num_threads(4)
    {
#pragma omp for schedule(SCHEDULE)
        for (int i = 0; i < 4; i++)
            nap_ms(i == 3 ? 50 : 1);
        nap_ms(1); /* work after the loop: its barrier is not merged into the region's */
    }
    printf("ok\n");
    return 0;
}
"""

EXEC_CALLS = {
    "execv": 'char *a[] = {"/bin/echo", "after exec", NULL}; execv("/bin/echo", a);',
    "execve": 'extern char **environ; char *a[] = {"/bin/echo", "after exec", NULL};'
              ' execve("/bin/echo", a, environ);',
    "execvp": 'char *a[] = {"echo", "after exec", NULL}; execvp("echo", a);',
    "execl": 'execl("/bin/echo", "/bin/echo", "after exec", (char *)NULL);',
    "execlp": 'execlp("echo", "echo", "after exec", (char *)NULL);',
    "execle": 'extern char **environ; execle("/bin/echo", "/bin/echo", "after exec", (char *)NULL,'
              ' environ);',
}
EXEC_C = WORK_H + r"""
int main(void) {
    printf("work %ld\n", omp_work(32));
    fflush(stdout);
    fprintf(stderr, "pid %d\n", (int)getpid());
    CALL
    perror("exec");
    return 127;
}
"""

EXIT_CALLS = {"_exit": "_exit(3);", "_Exit": "_Exit(3);", "quick_exit": "quick_exit(3);",
              "exit": "exit(3);"}
EXIT_C = WORK_H + r"""
int main(void) {
    printf("work %ld\n", omp_work(32));
    fflush(stdout);  /* _exit and quick_exit do not flush stdio */
    CALL
    return 0;
}
"""

ABORT_C = WORK_H + r"""
int main(void) {
    printf("work %ld\n", omp_work(32));
    fflush(stdout);
    abort();
}
"""


# ---- fixtures ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def omp_critical(build):
    return build("omp_critical", EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")


@pytest.fixture(scope="module")
def pthreads_sync(build):
    return build("pthreads_sync", EXAMPLES / "pthreads_sync.c", "-pthread")


@pytest.fixture(scope="module")
def omp_baseline(omp_critical):
    return run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV))


@pytest.fixture(scope="module")
def omp_run(omp_critical, lib, tmp_path_factory):
    """omp_critical under ``corecast run`` with the default target."""
    out = tmp_path_factory.mktemp("omp") / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV))
    return proc, read_lines(out)


@pytest.fixture(scope="module")
def pthreads_baseline(pthreads_sync):
    return run([pthreads_sync, PTHREAD_ITERATIONS])


@pytest.fixture(scope="module")
def pthreads_run(pthreads_sync, lib, tmp_path_factory):
    out = tmp_path_factory.mktemp("pthreads") / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [pthreads_sync, PTHREAD_ITERATIONS])
    return proc, read_lines(out)


def check_predictions(line: dict, target: int) -> None:
    pred = line["predicted"]
    counts = [p["threads"] for p in pred]
    if target <= 64:
        assert counts == list(range(1, target + 1))
    else:  # a geometric subset from 1 to the target
        assert counts[0] == 1 and counts[-1] == target and counts == sorted(set(counts))
    assert pred[0]["speedup"] == pytest.approx(1.0)
    for p in pred:
        assert p["low"] <= p["speedup"] * (1 + 1e-3) and p["speedup"] <= p["high"] * (1 + 1e-3)
        assert p["speedup"] > 0
    # The fewest threads within 1% of the best speedup, under predict's JSON name for the
    # best count: predict's preferred_threads is another count (each added thread pays).
    # (The JSON rounds speedups to 4 digits.)
    best, n = max(p["speedup"] for p in pred), line["fastest_threads"]
    assert all(p["speedup"] >= 0.99 * best * (1 - 1e-3) for p in pred if p["threads"] == n)
    assert all(p["speedup"] < 0.99 * best * (1 + 1e-3) for p in pred if p["threads"] < n)
    assert "preferred_threads" not in line
    assert line["basis"]
    assert "wall" in line["inputs"]["measured"]
    assert isinstance(line["inputs"]["fitted"], list)


def assert_no_report_in_stdout(proc) -> None:
    assert b"corecast" not in proc.stdout


# ---- the OpenMP example ------------------------------------------------------------------
def test_omp_output_and_status_unchanged(omp_baseline, omp_run):
    proc, _ = omp_run
    assert omp_baseline.returncode == 0
    assert proc.returncode == omp_baseline.returncode
    assert proc.stdout == omp_baseline.stdout
    assert omp_baseline.stdout.startswith(b"total ")
    assert_no_report_in_stdout(proc)


def test_omp_region_line(omp_run):
    proc, lines = omp_run
    (region,) = events(lines, "region", name="main._omp_fn.0")
    assert region["runtime"] == "openmp"
    assert region["object"] == "omp_critical"
    assert region["calls"] == 10
    assert region["threads"] == OMP_THREADS
    assert region["wall_s"] > 0
    assert region["stalls_s"]["critical"] > 0
    assert region["stalls_s"]["imbalance"] > 0
    assert set(region["stalls_s"]) == set(STALLS)
    assert region["stalls_s"]["mpi_p2p"] == region["stalls_s"]["mpi_collective"] == 0  # no MPI here
    assert region["counters"]["acquisitions"]["critical"] == 10 * int(OMP_ITERATIONS)
    assert region["counters"]["serial_s"] > 0


def test_omp_process_and_summary_lines(omp_run):
    _, lines = omp_run
    (region,) = events(lines, "region")
    (process,) = events(lines, "process")
    (summary,) = events(lines, "summary")
    assert region["pid"] == process["pid"] == summary["pid"]
    assert process["runtime"] == "openmp" and process["name"] == "process"
    assert process["object"] == "omp_critical"
    assert process["threads"] == OMP_THREADS
    assert process["wall_s"] >= region["wall_s"]
    assert summary["regions"] == 1
    assert summary["model"] == "ok"
    assert summary["target"] == summary["cores"] >= 1
    assert lines[-1] is summary


def test_omp_predictions_up_to_default_target(omp_run):
    _, lines = omp_run
    (summary,) = events(lines, "summary")
    for line in events(lines, "region") + events(lines, "process"):
        check_predictions(line, summary["target"])


def test_omp_report_on_stderr(omp_run):
    proc, _ = omp_run
    err = proc.stderr.decode()
    assert report_blocks(proc.stderr) == 1
    assert "main._omp_fn.0 (omp_critical)" in err
    assert "process (openmp)" in err
    assert "corecast: warning" not in err


def test_target_8_gives_8_predictions(omp_critical, omp_baseline, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--target", "8", "--json-out", str(out)], [omp_critical, OMP_ITERATIONS],
                        env=clean_env(**OMP_ENV))
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    lines = read_lines(out)
    assert events(lines, "summary")[0]["target"] == 8
    measured = events(lines, "region") + events(lines, "process")
    assert len(measured) == 2
    for line in measured:
        assert len(line["predicted"]) == 8
        check_predictions(line, 8)
    assert "up to 8 threads" in proc.stderr.decode()


def exit_table(stderr: bytes, bottlenecks: dict[str, str]) -> tuple[list[int], dict[str, list[str]]]:
    """The exit table's S@ counts and, for each row label in ``bottlenecks`` (label ->
    its bottleneck, which ends the row), the row's cells after the stalls: the S@ values,
    the band and the fastest count."""
    lines = stderr.decode().splitlines()
    head = next(line for line in lines if "band@" in line)
    counts = [int(cell[2:]) for cell in head.split() if cell.startswith("S@")]
    rows = {}
    for label, bottleneck in bottlenecks.items():
        (line,) = [line for line in lines if line.startswith(label + " ")]
        assert line.rstrip().endswith(" " + bottleneck), line
        rows[label] = line.rstrip()[:-len(bottleneck)].split()[-(len(counts) + 2):]
    return counts, rows


def test_the_exit_table_shows_the_json_lines_numbers(omp_critical, lib, tmp_path):
    """The table (report.c) and the JSON Lines (jsonl.c) print one result: each S@ cell,
    the band at the target and the fastest count are the JSON's, to the digits shown
    (the table's 2 decimals, the JSON's 4 significant digits)."""
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--target", "16", "--json-out", str(out)], [omp_critical, OMP_ITERATIONS],
                        env=clean_env(**OMP_ENV))
    assert proc.returncode == 0, proc.stderr
    lines = events(read_lines(out), "region") + events(read_lines(out), "process")
    labels = {("process (openmp)" if d["name"] == "process" else f"{d['name']} ({d['object']})"): d for d in lines}
    counts, rows = exit_table(proc.stderr, {label: d["future_bottleneck"] for label, d in labels.items()})
    assert counts == [2, 4, 8, 16] and len(rows) == 2
    shown = lambda x: pytest.approx(x, abs=0.0051 + 5e-4 * abs(x))  # noqa: E731
    for label, d in labels.items():
        *speedups, band, fastest = rows[label]
        at = {p["threads"]: p for p in d["predicted"]}
        assert [float(c) for c in speedups] == [shown(at[n]["speedup"]) for n in counts], label
        low, high = (float(c) for c in band.split("-"))
        assert (low, high) == (shown(at[16]["low"]), shown(at[16]["high"])) and low < high, label
        assert int(fastest) == d["fastest_threads"], label


def test_quiet_writes_json_but_no_report(omp_critical, omp_baseline, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--quiet", "--json-out", str(out)], [omp_critical, OMP_ITERATIONS],
                        env=clean_env(**OMP_ENV))
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    assert proc.stderr == b""
    assert events(read_lines(out), "region", name="main._omp_fn.0")


def test_plain_preload_reports_without_json(omp_critical, omp_baseline, lib):
    """LD_PRELOAD by hand, no CORECAST_OUTPUT: the report only, on stderr."""
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=lib)
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    assert report_blocks(proc.stderr) == 1


# ---- the pthreads example ----------------------------------------------------------------
def test_pthreads_output_and_status_unchanged(pthreads_baseline, pthreads_run):
    proc, _ = pthreads_run
    assert pthreads_baseline.returncode == 0
    assert proc.returncode == 0
    assert proc.stdout == pthreads_baseline.stdout
    assert pthreads_baseline.stdout.startswith(b"threads 4 iterations " + PTHREAD_ITERATIONS.encode())
    assert_no_report_in_stdout(proc)
    assert report_blocks(proc.stderr) == 1
    assert "process (pthreads)" in proc.stderr.decode()


def test_pthreads_process_line(pthreads_run):
    _, lines = pthreads_run
    assert not events(lines, "region")
    (process,) = events(lines, "process")
    (summary,) = events(lines, "summary")
    assert process["runtime"] == "pthreads"
    assert process["object"] == "pthreads_sync"
    assert process["threads"] == 5  # main and 4 workers; the sampler is not counted
    stalls = process["stalls_s"]
    # Each is forced by the program: a holder sleeps until the others have asked.
    for kind in ("mutex", "condvar", "pthread_barrier", "rwlock", "semaphore"):
        assert stalls[kind] > 0, kind
    contended = process["counters"]["contended"]
    for kind in ("mutex", "rwlock", "semaphore"):
        assert contended[kind] > 0, kind
    for kind in ("critical", "atomic", "omp_lock", "omp_barrier", "imbalance"):
        assert stalls[kind] == 0, kind
    assert process["counters"]["cpu_s"] > 0
    check_predictions(process, summary["target"])
    # Per thread: the five program threads, whose waits add up to the process's.
    per_thread = process["per_thread"]
    assert len(per_thread) == 5 and len({t["tid"] for t in per_thread}) == 5
    for kind in ("mutex", "condvar", "pthread_barrier", "rwlock", "semaphore"):
        total = sum(t["waits_s"].get(kind, 0.0) for t in per_thread)
        assert total == pytest.approx(stalls[kind], rel=1e-3, abs=1e-6), kind


# ---- the threaded Python example ---------------------------------------------------------
def test_python_threads(lib, tmp_path):
    script = EXAMPLES / "threaded.py"
    plain = run([sys.executable, script, "150"])
    assert plain.returncode == 0 and plain.stdout.startswith(b"locked ")
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [sys.executable, script, "150"])
    assert proc.returncode == 0
    assert proc.stdout == plain.stdout
    assert_no_report_in_stdout(proc)
    lines = read_lines(out)
    (process,) = events(lines, "process")
    assert process["runtime"] == "pthreads"
    assert process["threads"] >= 7  # main, 4 workers, 2 consumers
    assert process["stalls_s"]["semaphore"] > 0 or process["stalls_s"]["condvar"] > 0
    assert report_blocks(proc.stderr) == 1


# ---- lifecycle ----------------------------------------------------------------------------
def test_no_threads_is_a_serial_run(build, lib, tmp_path):
    prog = build("no_threads", NO_THREADS_C)
    plain = run([prog])
    out = tmp_path / "cc.jsonl"
    # under a bare LD_PRELOAD: silent, as the children of a script would be
    bare = run([prog], preload=lib, output=out)
    assert bare.stdout == plain.stdout == b"hello, no threads\n"
    assert bare.returncode == 0 and bare.stderr == b"" and not out.exists()
    # the program corecast run started (its pid in CORECAST_LAUNCH_PID) says it
    proc = run(["sh", "-c", f"CORECAST_LAUNCH_PID=$$ exec '{prog}'"], preload=lib, output=out)
    assert proc.stdout == plain.stdout and proc.returncode == 0
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "serial run: no parallel activity" in err
    (summary,) = read_lines(out)
    assert summary["event"] == "summary" and summary["serial_run"] is True and summary["regions"] == 0
    quiet = run(["sh", "-c", f"CORECAST_LAUNCH_PID=$$ exec '{prog}'"], preload=lib, quiet=1)
    assert quiet.stderr == b""
    # Through the launcher: the same line and one summary record in a fresh file.
    out2 = tmp_path / "cc2.jsonl"
    proc = corecast_run(["--json-out", str(out2)], [prog])
    assert proc.stdout == plain.stdout and b"serial run" in proc.stderr
    assert [d["event"] for d in read_lines(out2)] == ["summary"]


def test_a_wrapper_script_that_execs_its_program_adds_no_serial_run(build, tmp_path):
    # Seen with a pigz wrapper on the 16-core machine: the shell's "serial run" line and
    # record came first, then pigz's own report for the same pid.
    prog = build("pthreads_sync", EXAMPLES / "pthreads_sync.c", "-pthread", "-lm")
    wrapper = tmp_path / "wrapper.sh"
    wrapper.write_text('#!/bin/sh\nexec "$@"\n')
    wrapper.chmod(0o755)
    out = tmp_path / "cc.jsonl"
    proc = corecast_run(["--json-out", str(out)], [wrapper, prog, "200", "2"])
    assert proc.returncode == 0, proc.stderr
    assert b"serial run" not in proc.stderr and report_blocks(proc.stderr) == 1
    assert [e["event"] for e in read_lines(out) if e["event"] == "summary"] == ["summary"]
    assert not any(e.get("serial_run") for e in read_lines(out))
    # An exec that drops the preload leaves the wrapper's line as all there is to say.
    out2 = tmp_path / "cc2.jsonl"
    proc = corecast_run(["--json-out", str(out2)], ["env", "-u", "LD_PRELOAD", prog, "200", "2"])
    assert proc.returncode == 0 and proc.stderr.count(b"\n") == 1 and b"serial run" in proc.stderr


def test_serial_children_of_the_launched_program_stay_silent(build, lib):
    prog = build("no_threads", NO_THREADS_C)
    proc = run(["sh", "-c", f"'{prog}'; '{prog}'"], preload=lib, launch_pid=999999)
    assert proc.returncode == 0 and proc.stderr == b""


def test_fork_child_reports_with_its_own_pid(build, lib, tmp_path):
    prog = build("fork_omp", FORK_C, "-fopenmp")
    env = clean_env(**OMP_ENV)
    plain = run([prog], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 0
    assert proc.stdout == plain.stdout
    assert b"child status 0" in proc.stdout
    pids_line = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("pids ")][0]
    parent, child = (int(x) for x in pids_line.split()[1:])
    lines = read_lines(out)
    for pid in (parent, child):
        (region,) = events(lines, "region", pid=pid)
        assert region["name"] == "omp_work._omp_fn.0"
        assert region["calls"] == 1 and region["threads"] == OMP_THREADS
        assert events(lines, "process", pid=pid)
        assert events(lines, "summary", pid=pid)
    assert report_blocks(proc.stderr) == 2


def _forked_run(prog, preload, tmp_path, stdout: bytes) -> tuple[list[dict], int, int]:
    """``prog`` (which forks and prints "pids PARENT CHILD" on stderr) run with and without
    ``preload``: the same status 0 and ``stdout`` both ways; the recording's lines and the
    two pids."""
    plain = run([prog])
    out = tmp_path / "cc.jsonl"
    proc = run([prog], preload=preload, output=out)
    assert plain.returncode == proc.returncode == 0
    assert proc.stdout == plain.stdout == stdout
    pids_line = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("pids ")][0]
    parent, child = (int(x) for x in pids_line.split()[1:])
    return read_lines(out), parent, child

def test_fork_after_activity_child_reports(build, lib, tmp_path):
    prog = build("fork_after_activity", FORK_AFTER_ACTIVITY_C, "-pthread")
    lines, parent, child = _forked_run(prog, lib, tmp_path, b"child done\nparent done\n")
    assert events(lines, "process", pid=parent)
    assert events(lines, "process", pid=child)


def test_a_child_forked_after_activity_gets_its_own_sampler_and_prediction(build, lib, tmp_path):
    """The parent's sampler stays behind in a fork: the child, active in its own right, starts
    its own and its exit's model answers, instead of the exit waiting out
    CORECAST_EXIT_TIMEOUT_MS for a thread the child does not have."""
    prog = build("fork_after_activity", FORK_AFTER_ACTIVITY_C, "-pthread")
    out = tmp_path / "cc.jsonl"
    proc = run([prog], preload=lib, output=out, exit_timeout_ms="120000")  # no load cuts it short
    assert proc.returncode == 0 and proc.stdout == b"child done\nparent done\n"
    pids_line = [ln for ln in proc.stderr.decode().splitlines() if ln.startswith("pids ")][0]
    parent, child = (int(x) for x in pids_line.split()[1:])
    lines = read_lines(out)
    for pid in (parent, child):
        (summary,) = events(lines, "summary", pid=pid)
        assert summary["model"] == "ok", summary["model"]

# vfork: the child runs in the parent's memory until it execs or _exits, both of which
# corecast wraps.  Its exit (or its exec's report) must leave the parent's state alone.
VFORK_C = WORK_H + r"""
#include <sys/wait.h>
int main(int argc, char **argv) {
    printf("work %ld\n", omp_work(32));
    fflush(stdout);
    pid_t child = vfork();
    if (child == 0) {
        if (argc > 1)
            execl("/bin/true", "true", (char *)NULL);
        _exit(7);
    }
    int status;
    waitpid(child, &status, 0);
    printf("child %d work %ld\n", WEXITSTATUS(status), omp_work(16));
    fprintf(stderr, "pid %d\n", (int)getpid());
    return 0;
}
"""


@pytest.mark.parametrize("how", ["_exit", "exec"])
def test_a_vfork_child_leaves_the_parents_report_alone(build, lib, tmp_path, how):
    """A vfork child shares the parent's memory: had it made the exit report (its _exit, or
    the report before its exec), the parent's was marked done and never came, and a report
    for the child's pid held the parent's first region call only."""
    if how == "exec" and not os.path.exists("/bin/true"):
        pytest.skip("no /bin/true")
    prog = build("vfork_omp", VFORK_C, "-fopenmp")
    args = [prog] + (["exec"] if how == "exec" else [])
    env = clean_env(**OMP_ENV)
    plain = run(args, env=env)
    out = tmp_path / "cc.jsonl"
    proc = run(args, env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 0
    assert proc.stdout == plain.stdout
    parent = int([ln for ln in proc.stderr.decode().splitlines() if ln.startswith("pid ")][0].split()[1])
    lines = read_lines(out)
    assert {d["pid"] for d in lines} == {parent}, lines
    (region,) = events(lines, "region")
    assert region["calls"] == 2
    assert len(events(lines, "summary")) == 1 and report_blocks(proc.stderr) == 1


# Forks from an exit handler registered before any thread, so after corecast's report, whose
# exit prediction loaded the model: the child, active in its own right, reports too.
FORK_AFTER_MODEL_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static void *noop(void *a) { return a; }
static void spawn(void) { pthread_t t; pthread_create(&t, 0, noop, 0); pthread_join(t, 0); }
static void late(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        spawn();
        write(1, "child done\n", 11);
        _exit(0);
    }
    waitpid(child, 0, 0);
    fprintf(stderr, "pids %d %d\n", (int)getpid(), (int)child);
}
int main(void) {
    atexit(late);
    spawn();
    printf("parent done\n");
    return 0;
}
"""

# A stand-in model that answers every region.
ANSWERING_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    r->status = 0;
    for (int i = 0; i < s->nregions; i++)
        one_count(&r->regions[i], "answering model");
    return 0;
}
"""


def test_a_child_forked_after_the_model_loaded_does_not_enter_it(build, lib, tmp_path):
    """A non-Python child must not enter the model its parent loaded: its interpreter's
    other threads, and any lock they held at the fork, stayed behind (a fork during a
    window's model run left the child's exit waiting on that lock).  A stand-in model shows
    whether the child called it: its report says the model is not available instead."""
    model = build("answering_model.so", ANSWERING_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    beside = beside_model(lib, model, tmp_path / "lib")
    prog = build("fork_after_model", FORK_AFTER_MODEL_C, "-pthread")
    lines, parent, child = _forked_run(prog, beside, tmp_path, b"parent done\nchild done\n")
    (summary,) = events(lines, "summary", pid=parent)
    assert summary["model"] == "ok", summary["model"]
    (summary,) = events(lines, "summary", pid=child)
    assert "model not available in a child forked after the model was loaded" in summary["model"]


@pytest.mark.parametrize("call", [
    "execv", "execve", "execvp", "execl", "execlp", "execle",
])
def test_exec_reports_the_replaced_image(build, lib, tmp_path, call):
    if not shutil.which("echo") or not os.path.exists("/bin/echo"):
        pytest.skip("no /bin/echo")
    prog = build(f"exec_{call}", EXEC_C.replace("CALL", EXEC_CALLS[call]), "-fopenmp")
    env = clean_env(**OMP_ENV)
    plain = run([prog], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 0
    assert proc.stdout == plain.stdout
    assert proc.stdout.endswith(b"after exec\n")
    pid = int([ln for ln in proc.stderr.decode().splitlines() if ln.startswith("pid ")][0].split()[1])
    lines = read_lines(out)
    (region,) = events(lines, "region")
    assert region["pid"] == pid and region["name"] == "omp_work._omp_fn.0"
    assert region["object"] == f"exec_{call}"
    assert events(lines, "process", pid=pid)
    assert report_blocks(proc.stderr) == 1  # echo, a program without threads, stays silent


# Execs that fail for want of the file or its execute bit, then more regions.
FAILED_EXEC_CALLS = {
    "execl": 'execl("/nonexistent/prog", "prog", (char *)NULL);',
    "execv": 'char *a[] = {"prog", NULL}; execv(argv[1], a);',  # a file without execute bits
    "execvp": 'char *a[] = {"corecast-no-such-program", NULL}; execvp(a[0], a);',
}
FAILED_EXEC_C = WORK_H + r"""
#include <errno.h>
#include <string.h>
int main(int argc, char **argv) {
    long s = 0;
    for (int r = 0; r < 3; r++)
        s += omp_work(8);
    printf("before %ld\n", s);
    errno = 0;
    CALL
    printf("exec: %s\n", strerror(errno));
    for (int r = 0; r < 3; r++)
        s += omp_work(8);
    printf("after %ld\n", s);
    fflush(stdout);
    fputs("after\n", stderr);
    return 2;
}
"""


@pytest.mark.parametrize("call", sorted(FAILED_EXEC_CALLS))
def test_a_failed_exec_goes_on_measured(build, lib, tmp_path, call):
    """An exec that cannot succeed reported the whole image mid-run, and nothing after it
    was measured: now the one report comes at the real exit, with every call."""
    prog = build(f"failed_exec_{call}", FAILED_EXEC_C.replace("CALL", FAILED_EXEC_CALLS[call]), "-fopenmp")
    plain_file = tmp_path / "data"
    plain_file.write_text("not a program\n")
    plain_file.chmod(0o644)
    env = clean_env(**OMP_ENV, PATH=f"{tmp_path}/bin:/nonexistent")
    plain = run([prog, plain_file], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([prog, plain_file], env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 2
    assert proc.stdout == plain.stdout and b"exec: " in proc.stdout  # the exec's errno too
    assert b"exec: Success" not in proc.stdout
    assert report_blocks(proc.stderr) == 1
    assert proc.stderr.index(b"after\n") < proc.stderr.index(REPORT_HEAD.encode())
    (region,) = events(read_lines(out), "region")
    assert region["calls"] == 6
    assert len(events(read_lines(out), "summary")) == 1


@pytest.mark.parametrize("call", sorted(EXIT_CALLS))
def test_exit_paths_report(build, lib, tmp_path, call):
    prog = build(f"exit_{call}", EXIT_C.replace("CALL", EXIT_CALLS[call]), "-fopenmp")
    env = clean_env(**OMP_ENV)
    plain = run([prog], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 3
    assert proc.stdout == plain.stdout
    assert report_blocks(proc.stderr) == 1
    assert events(read_lines(out), "region", name="omp_work._omp_fn.0")


def test_abort_keeps_its_signal(build, lib, tmp_path):
    prog = build("abort_omp", ABORT_C, "-fopenmp")
    env = clean_env(**OMP_ENV)
    plain = run([prog], env=env)
    proc = run([prog], env=env, preload=lib, output=tmp_path / "cc.jsonl")
    assert plain.returncode == -6
    assert proc.returncode == -6
    assert proc.stdout == plain.stdout
    launched = corecast_run([], [prog], env=env)
    assert launched.returncode == -6
    assert launched.stdout == plain.stdout


@pytest.mark.parametrize("schedule", [
    "static",
    "dynamic, 1",
])
def test_worksharing_loop_end_barrier_is_timed(build, lib, tmp_path, schedule):
    name = "loop_end_" + schedule.split(",")[0]
    prog = build(name, LOOP_END_C.replace("SCHEDULE", schedule), "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=clean_env(OMP_NUM_THREADS="4"), preload=lib, output=out)
    assert proc.returncode == 0 and proc.stdout == b"ok\n"
    (region,) = events(read_lines(out), "region", name="main._omp_fn.0")
    assert region["threads"] == 4
    assert region["stalls_s"]["omp_barrier"] > 0


# ---- settings ---------------------------------------------------------------------------
def test_disable(omp_critical, omp_baseline, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=lib,
               output=out, disable=1)
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    assert proc.stderr == b""
    assert not out.exists()


def warnings_in(stderr: bytes) -> list[str]:
    return [ln for ln in stderr.decode().splitlines() if ln.startswith("corecast: warning:")]


def test_bad_window_ms_warns_and_uses_default(omp_critical, omp_baseline, lib):
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=lib,
               window_ms="fast", display_env=1)
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    (warning,) = warnings_in(proc.stderr)
    assert "CORECAST_WINDOW_MS" in warning and "fast" in warning
    assert "CORECAST_WINDOW_MS = '200'" in proc.stderr.decode()
    assert report_blocks(proc.stderr) == 1


def test_bad_target_warns_and_uses_default(omp_critical, omp_baseline, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=lib,
               output=out, target="lots")
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    (warning,) = warnings_in(proc.stderr)
    assert "CORECAST_TARGET" in warning and "lots" in warning
    (summary,) = events(read_lines(out), "summary")
    assert summary["target"] == summary["cores"]
    assert report_blocks(proc.stderr) == 1


def test_display_env(omp_critical, omp_baseline, lib, tmp_path):
    out = tmp_path / "cc.jsonl"
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=lib,
               display_env=1, target=3, window_ms=50, output=out)
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    err = proc.stderr.decode()
    assert "CORECAST DISPLAY ENVIRONMENT BEGIN" in err and "CORECAST DISPLAY ENVIRONMENT END" in err
    for setting in ("CORECAST_TARGET = '3'", "CORECAST_WINDOW_MS = '50'", f"CORECAST_OUTPUT = '{out}'",
                    "CORECAST_DISABLE = '0'", "CORECAST_QUIET = '0'"):
        assert setting in err
    assert not warnings_in(proc.stderr)
    (summary,) = events(read_lines(out), "summary")
    assert summary["target"] == 3


def test_missing_model_library_gives_c_only_report(omp_critical, omp_baseline, lib, tmp_path):
    alone = tmp_path / "alone"
    alone.mkdir()
    copy = alone / lib.name
    shutil.copy2(lib, copy)
    out = tmp_path / "cc.jsonl"
    proc = run([omp_critical, OMP_ITERATIONS], env=clean_env(**OMP_ENV), preload=copy, output=out)
    assert proc.stdout == omp_baseline.stdout and proc.returncode == 0
    err = proc.stderr.decode()
    assert report_blocks(proc.stderr) == 1
    assert "main._omp_fn.0" in err
    reasons = [ln for ln in err.splitlines() if ln.startswith("no predictions: ")]
    assert len(reasons) == 1 and "model" in reasons[0]
    lines = read_lines(out)
    (region,) = events(lines, "region", name="main._omp_fn.0")
    assert region["calls"] == 10 and region["threads"] == OMP_THREADS
    assert region["stalls_s"]["critical"] > 0 and region["stalls_s"]["imbalance"] > 0
    assert region["predicted"] == [] and region["fastest_threads"] is None
    (summary,) = events(lines, "summary")
    assert summary["model"] != "ok" and "model" in summary["model"]



PRIVATE_WORK_C = r"""
double work(int n) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += i * 0.5;
    return s;
}
"""
PRIVATE_DRIVER_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    double (*work)(int) = (double (*)(int))dlsym(h, "work");
    printf("%.1f\n", work(100000));
    return 0;
}
"""


def test_private_libgomp_loaded_rtld_local(gcc, build, lib, tmp_path):
    """As in a Python wheel: a library with its own libgomp copy, dlopen'ed RTLD_LOCAL by a
    program that does not link libgomp, so RTLD_NEXT cannot find the real functions."""
    system = subprocess.run([gcc, "-print-file-name=libgomp.so.1"], capture_output=True, text=True)
    libgomp = Path(system.stdout.strip())
    if not libgomp.is_file():
        pytest.skip("no libgomp.so.1 to copy")
    private = tmp_path / "private"
    private.mkdir()
    shutil.copy(libgomp, private / "libgomp.so.1")
    (tmp_path / "work.c").write_text(PRIVATE_WORK_C)
    work = tmp_path / "libwork.so"
    subprocess.run([gcc, "-O2", "-fPIC", "-fopenmp", "-shared", str(tmp_path / "work.c"), "-o", str(work),
                    "-nostartfiles", "-Wl,-rpath,$ORIGIN/private", f"-L{private}", "-l:libgomp.so.1"],
                   check=True, capture_output=True)
    driver = build("private_driver", PRIVATE_DRIVER_C, "-ldl")
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run([driver, work], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([driver, work], env=env, preload=lib, output=out)
    assert plain.returncode == proc.returncode == 0
    assert proc.stdout == plain.stdout == b"2499975000.0\n"
    (region,) = events(read_lines(out), "region")
    assert region["name"] == "work._omp_fn.0" and region["object"] == "libwork.so"
    assert region["threads"] == 2


LOCALE_C = r"""
#include <locale.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    double s = 0;
#pragma omp parallel reduction(+ : s)
    s += omp_get_thread_num();
    usleep(200000); /* several sampler windows: the model starts meanwhile (steering) */
    printf("%g %s\n", s, setlocale(LC_ALL, NULL));
    return 0;
}
"""


def test_model_start_keeps_the_programs_locale(build, lib, tmp_path):
    """The embedded interpreter sets LC_CTYPE from the environment when it starts; the
    program's own locale (still "C" here: it never called setlocale) must not change.
    Steering starts the interpreter during the run (without it, at the exit)."""
    prog = build("locale_keep", LOCALE_C, "-fopenmp")
    env = clean_env(LANG="C.UTF-8", LC_ALL="C.UTF-8", OMP_NUM_THREADS="2")
    plain = run([prog], env=env)
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=env, preload=lib, output=out, window_ms="20", steer="1")
    assert proc.stdout == plain.stdout
    (summary,) = events(read_lines(out), "summary")
    assert summary["model"] == "ok"


# Whether the program sees the model library mapped (prepended to the programs below).
MAPPED_FN_C = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
""" + MODEL_MAPPED_FN_C

MODEL_MAPPED_C = MAPPED_FN_C + r"""
int main(int argc, char **argv) {
    double s = 0;
#pragma omp parallel reduction(+ : s)
    s += omp_get_thread_num();
    int mapped = 0;
    for (int waited = 0; !mapped && waited <= atoi(argv[1]); waited += 10) {
        mapped = model_mapped();
        usleep(10000);
    }
    printf("%g mapped=%d\n", s, mapped);
    return 0;
}
"""


@pytest.mark.parametrize("steer", [0, 1])
def test_model_waits_for_the_exit_unless_steering_can_pay(build, lib, tmp_path, steer):
    """A window's prediction is read by steering alone, so without it the model (an
    interpreter, then a model run per window) stays out of the run: 300 ms of 10-ms windows
    pass without it, and the exit still predicts.  With steering it stays out as well
    while no region can pay (native/steer_start.c, region_may_pay): here one call of one
    region, too few per window.  That steering starts it when it can act is
    test_steering_starts_the_model_when_it_can_act's."""
    prog = build("model_mapped", MODEL_MAPPED_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, "300"], env=env, preload=lib, output=out, window_ms="10", steer=str(steer))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"1 mapped=0\n"
    (summary,) = events(read_lines(out), "summary")
    assert summary["model"] == "ok"
    assert [e for e in read_lines(out) if e["event"] == "process"][0]["predicted"]


STEER_START_C = MAPPED_FN_C + r"""
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
    int convoy = atoi(argv[1]);
    double t0 = now(), until = atof(argv[2]) / 1000;
    long shared = 0;
    double x = 0;
    while (now() - t0 < until) {
#pragma omp parallel for schedule(static) reduction(+ : x)
        for (int i = 0; i < 4000; i++) {
            if (convoy) {
#pragma omp critical
                shared += i & 7;
            } else {
                x += i * 0.5;
            }
        }
    }
    printf("mapped=%d\n", model_mapped());
    return shared < 0 || x < 0;
}
"""


@pytest.mark.parametrize("convoy", [0, 1])
def test_steering_starts_the_model_when_it_can_act(build, lib, tmp_path, convoy):
    """The model (an interpreter, then a run per window) takes a core from the program, so
    steering starts it only once its answer can change a team: after a whole window, or
    after the first (short) window when a region's threads mostly wait for a lock (a
    convoy; the rule itself: test_the_first_look_starts_the_model_for_a_convoy_only).  With
    2-s windows, a program whose region takes no lock does not see the model mapped after
    1 s, whatever the load; both exits still predict.  Whether the convoy shows by the
    first look (10 ms after the team's first fork) depends on its threads having run by
    then, which a loaded machine does not promise: the live run checks only what holds."""
    prog = build("steer_start", STEER_START_C, "-fopenmp")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, str(convoy), "1000"], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out,
               window_ms="2000", steer="1")
    assert proc.returncode == 0, proc.stderr
    (summary,) = events(read_lines(out), "summary")
    assert summary["model"] == "ok"
    assert [e for e in read_lines(out) if e["event"] == "process"][0]["predicted"]
    if not convoy:
        assert proc.stdout == b"mapped=0\n"


# Samples for steering's first look: (elapsed s, calls, threads asked, team, wall s,
# lock-wait s, barrier-wait s, lock acquisitions) -> whether the model starts.
FIRST_LOOK_CASES = [
    ((0.01, 2, 2, 2, 0.01, 0.015, 0.0, 0), 1),    # a convoy: 75% of thread time on a lock
    ((0.01, 2, 2, 2, 0.01, 0.0, 0.015, 0), 0),    # the same wait at a barrier, no lock: no convoy
    ((0.01, 2, 2, 2, 0.01, 0.010, 0.0, 0), 0),    # half of it: not more than half
    ((0.01, 2, 2, 2, 0.01, 0.004, 0.008, 400), 1),  # a lock every call, 60% stalled in all
    ((0.01, 2, 2, 2, 0.01, 0.004, 0.004, 400), 0),  # a lock every call, 40% stalled: no
    ((0.01, 1, 2, 2, 0.01, 0.015, 0.0, 0), 0),    # one call is no history yet
    ((0.01, 2, 1, 1, 0.01, 0.008, 0.0, 0), 0),    # a team of one asked for: nothing to step down
    ((0.25, 2, 2, 2, 0.01, 0.0, 0.0, 0), 1),      # a whole window has passed: any region
    # libgomp's critical section on a loaded 2-core VM: 4000 sections a call, no wait the
    # wrappers see, 29% of thread time idle at the barrier.  50 ms in, the run has lasted
    # the model's cost: the model starts (before, it waited for the whole window, 0.23 s)
    ((0.051, 4, 2, 2, 0.044, 0.0004, 0.025, 16000), 1),
    ((0.023, 2, 2, 2, 0.020, 0.0002, 0.010, 8000), 0),   # 23 ms in: less than the model costs
    ((0.051, 4, 2, 2, 0.044, 0.0004, 0.004, 16000), 0),  # 95% not stalled: steering leaves it
    ((0.100, 4, 2, 2, 0.040, 0.0004, 0.025, 16000), 0),  # 40% of the run: not the run's
    ((0.051, 4, 2, 2, 0.044, 0.0, 0.025, 4), 0),         # a lock a call: no hand-off can cost
]

# The same samples -> milliseconds to the next look before the first whole window (a
# lock-bound region's start waits for the model's cost; 0: no region waits for a look).
NEXT_LOOK_CASES = [
    ((0.023, 2, 2, 2, 0.020, 0.0002, 0.010, 8000), 28),
    ((0.045, 4, 2, 2, 0.040, 0.0004, 0.020, 16000), 10),  # never sooner than the first look's
    ((0.023, 2, 2, 2, 0.020, 0.0002, 0.001, 8000), 0),    # 97% not stalled
    ((0.023, 2, 2, 2, 0.020, 0.0, 0.010, 0), 0),          # no lock
]


def sampler_rule(gcc: str, tmp_path: Path, defines: tuple[str, ...], functions: tuple[str, ...],
                 fill: str, call: str) -> Path:
    """native/steer_start.c's ``functions`` (with its ``lock_waits`` and ``defines``) compiled
    alone into a program that fills one OpenMP region of a sample from its arguments
    (``fill``: C statements on ``s`` and ``g``) and prints ``call``'s value."""
    source = (ROOT / "native" / "steer_start.c").read_text() + (ROOT / "native" / "steer_start.h").read_text()
    waits = re.search(r"^static const int lock_waits\[\].*?;\n", source, re.S | re.M).group(0)
    macros = "\n".join(re.search(rf"^#define {name} .*$", source, re.M).group(0) for name in defines)
    funcs = "".join(re.search(rf"^(?:static )?[\w ]+? {name}\(.*?^}}\n", source, re.S | re.M).group(0)
                    for name in functions)
    harness = tmp_path / "rule.c"
    harness.write_text(f"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model_abi.h"
static struct {{ int window_ms; }} cc_cfg = {{200}};
static int cc_is_omp_region(const struct cc_region_sample *g) {{
    return g->runtime == CC_RUNTIME_OPENMP && strcmp(g->name, "process") != 0;
}}
{waits}
{macros}
{funcs}
static struct cc_sample s;
int main(int argc, char **argv) {{
    (void)argc;
    (void)cc_cfg;
    s.nregions = 1;
    struct cc_region_sample *g = &s.regions[0];
    g->runtime = CC_RUNTIME_OPENMP;
    strcpy(g->name, "main._omp_fn.0");
    {fill}
    printf("%d\\n", {call});
    return 0;
}}
""")
    exe = tmp_path / "rule"
    r = subprocess.run([gcc, "-O2", f"-I{ROOT / 'native'}", "-o", str(exe), str(harness)], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    return exe


def answers(exe: Path, case: tuple) -> int:
    return int(subprocess.run([str(exe), *map(repr, case)], capture_output=True, text=True, check=True).stdout)


FIRST_LOOK_FILL = """
    s.elapsed_s = atof(argv[1]);
    g->calls = atoi(argv[2]);
    g->requested = atoi(argv[3]);
    g->threads = atoi(argv[4]);
    g->wall_s = atof(argv[5]);
    g->stall_s[CC_STALL_CRITICAL] = atof(argv[6]);
    g->stall_s[CC_STALL_OMPBARRIER] = atof(argv[7]);
    g->acquisitions[CC_STALL_CRITICAL] = strtoull(argv[8], NULL, 10);"""
FIRST_LOOK_RULES = ("not_stalled", "is_convoy", "lock_taken", "hands_off", "lock_bound")
FIRST_LOOK_DEFINES = ("CONVOY_SHARE", "LOCK_SHARE", "HANDOFF_S", "MODEL_COST_S", "RUN_SHARE", "STEER_EFFICIENCY",
                      "CC_FIRST_LOOK_MS")


def test_the_first_look_starts_the_model_for_a_convoy_only(gcc, tmp_path):
    """native/steer_start.c's cc_steering_may_act, compiled alone on synthetic samples."""
    exe = sampler_rule(gcc, tmp_path, FIRST_LOOK_DEFINES, FIRST_LOOK_RULES + ("cc_steering_may_act",),
                       FIRST_LOOK_FILL, "cc_steering_may_act(&s)")
    for case, starts in FIRST_LOOK_CASES:
        assert answers(exe, case) == starts, case


def test_a_lock_bound_region_is_looked_at_again_once_the_model_could_pay(gcc, tmp_path):
    """native/steer_start.c's cc_next_lock_look_ms: before the first whole window, a region
    that may start the model once the run has lasted its cost is looked at then, not a
    whole window later."""
    exe = sampler_rule(gcc, tmp_path, FIRST_LOOK_DEFINES, FIRST_LOOK_RULES + ("cc_next_lock_look_ms",),
                       FIRST_LOOK_FILL, "(int)cc_next_lock_look_ms(&s)")
    for case, ms in NEXT_LOOK_CASES:
        assert answers(exe, case) == ms, case


# ---- descriptors: the sampler keeps its own table ----------------------------------------
LOWEST_FD_C = r"""
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long s;
static void *w(void *a) {
    for (int i = 0; i < 300000; i++) { pthread_mutex_lock(&m); s++; pthread_mutex_unlock(&m); }
    return a;
}
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, w, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    /* One thread from here: POSIX promises the lowest free number to every open. */
    int keep = dup(1), bad = 0;
    for (long n = 0; n < 300000; n++) {
        close(1);
        int fd = open("/dev/null", O_WRONLY);
        if (fd != 1) { bad++; if (fd >= 0) close(fd); dup2(keep, 1); }
    }
    dup2(keep, 1);
    printf("lowest-fd violations: %d\n", bad);
    return bad ? 1 : 0;
}
"""

PIPE_EOF_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile double sink;
static void *work(void *a) { double s = 0; for (long i = 0; i < 20000000; i++) s += i; sink = s; return a; }
int main(void) {
    int p[2];
    if (pipe(p)) return 2;
    pid_t c = fork();
    if (c == 0) { close(p[1]); char b; while (read(p[0], &b, 1) > 0) ; _exit(0); }
    close(p[0]);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    usleep(300000); /* windows close meanwhile */
    close(p[1]);    /* the reader's end of file, unless someone holds a copy */
    int st;
    waitpid(c, &st, 0);
    puts("reader done");
    return 0;
}
"""


def _own_tables_allowed() -> bool:
    """Whether a thread may take a descriptor table of its own here (a seccomp filter,
    as in some containers, refuses unshare: the sampler then shares the program's)."""
    probe = "import ctypes, os; os._exit(ctypes.CDLL(None, use_errno=True).unshare(0x400) != 0)"
    return subprocess.run([sys.executable, "-c", probe], timeout=TIMEOUT).returncode == 0


needs_own_table = pytest.mark.skipif(not _own_tables_allowed(), reason="unshare(CLONE_FILES) is refused here")


@needs_own_table
def test_the_sampler_takes_no_low_descriptor_from_the_program(build, lib):
    """The sampler opens /proc files every window (and a C program's model its imports):
    in the program's table they took the number a program closing fd 1 and opening a
    file is promised back."""
    prog = build("lowest_fd", LOWEST_FD_C, "-pthread")
    r = run([prog], preload=lib, window_ms=10)
    assert r.stdout == b"lowest-fd violations: 0\n" and r.returncode == 0
    assert b"no predictions" not in r.stderr  # the model loaded in the sampler's own table


def test_the_sampler_holds_no_copy_of_the_programs_descriptors(build, lib):
    """The sampler's table starts as a copy of the program's: a copy of a pipe's write end
    would keep the reader waiting for its end of file (the test would then time out)."""
    prog = build("pipe_eof", PIPE_EOF_C, "-pthread")
    r = run([prog], preload=lib, window_ms=10)
    assert r.returncode == 0 and r.stdout == b"reader done\n"


DAEMON_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
static void *work(void *a) { return a; }
int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    pthread_join(t, 0);
    usleep(300000);                  /* the sampler has its table by now */
    puts("detaching");
    fflush(stdout);
    syscall(SYS_close_range, 0u, ~0u, 0); /* as a daemon does: every descriptor */
    for (int i = 0; i < 300; i++) {  /* until the reader saw its end of file (30 s at most) */
        if (access(argv[1], F_OK) == 0)
            return 0;
        usleep(100000);
    }
    return 1;
}
"""


def test_a_program_that_closes_every_descriptor_lets_its_reader_finish(build, lib, tmp_path):
    """The sampler keeps a copy of the report channel (the original stderr) in its own
    table; once the program closes its own, the copy goes within a window, or a daemon
    would keep the pipe behind `corecast run ... 2>&1 | cat` open."""
    prog = build("daemon_like", DAEMON_C, "-pthread")
    seen = tmp_path / "reader-saw-eof"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_WINDOW_MS="50")
    proc = subprocess.Popen([str(prog), str(seen)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()  # returns at end of file: every write end closed
    seen.touch()
    assert proc.wait(timeout=TIMEOUT) == 0, out
    assert out.startswith(b"detaching\n")


# ---- explicit tasks ---------------------------------------------------------------------
def test_task_work_is_not_barrier_wait(build, lib, tmp_path):
    """libgomp runs queued tasks inside the barrier that ends a single block (and at the
    region's end): that time is the program's work.  Before tasks were timed, a
    task-parallel region read as 100% barrier wait and predicted S < 0.1."""
    prog = build("omp_tasks", EXAMPLES / "omp_tasks.c", "-fopenmp")
    args = [prog, "8", "1000000"]  # about 0.5 s of work
    for threads in (1, 2):
        env = clean_env(OMP_NUM_THREADS=str(threads))
        plain = run(args, env=env)
        out = tmp_path / f"cc{threads}.jsonl"
        proc = run(args, env=env, preload=lib, output=out, quiet="1")
        assert proc.returncode == 0 and proc.stdout == plain.stdout
        assert b"array 666.0 aligned 6.0 dep 15.0" in proc.stdout  # every argument block arrived intact
        (region,) = events(read_lines(out), "region")  # the parallel region (tasks are not regions)
        (process,) = events(read_lines(out), "process")
        busy = region["counters"]["busy_s"]
        waits = region["stalls_s"]["omp_barrier"] + region["stalls_s"]["imbalance"]
        assert busy > 0 and region["counters"]["task_s"] > 0.5 * busy, region["counters"]
        if threads == 1:
            # One thread runs every task in its taskwaits: nothing to wait for, whatever the
            # load (a task preempted is the task's time).  Before tasks were timed, all of it.
            assert waits < 0.05 * busy, (busy, region["stalls_s"])
        else:
            # 256 leaf tasks of equal work: a thread waits only once the queue is empty, for
            # the last tasks (was about 0.5 of busy with 2 threads), and for as long as the
            # other thread waited for a CPU: the run-queue wait, which a loaded machine adds
            # (4 busy loops beside: 0.24 of busy, 1 run in 10 over the 0.2 alone).
            runq = process["stalls_s"]["runqueue"] + process["counters"]["runqueue_other_load_s"]
            assert waits < 0.2 * busy + runq, (busy, runq, region["stalls_s"])
        assert region["counters"]["serial_s"] < 0.2 * busy  # the single block made tasks, it was not serial work



LATE_TASKS_C = r"""
#include <stdio.h>
static double spin(int i) {
    double s = i;
    for (int k = 0; k < 2000; k++)
        s = s * 0.999 + 1e-3;
    return s;
}
int main(void) {
    double out[100] = {0};
#pragma omp parallel
#pragma omp single nowait /* no barrier after it: the tasks run in the region's closing one */
    for (int i = 0; i < 100; i++) {
#pragma omp task firstprivate(i) shared(out)
        out[i] = spin(i);
    }
    double s = 0;
    for (int i = 0; i < 100; i++)
        s += out[i];
    printf("%.3f\n", s);
    return 0;
}
"""


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_tasks_are_counted_exactly(build, lib, tmp_path, threads):
    """Every explicit task is counted once, in its region and in the process, whichever
    thread runs it and wherever: in a taskwait, in the barrier after a single block, in the
    region's closing barrier (after the members folded their counts: the join adds them),
    at once (if(0), or outside any region: the process's only).  omp_tasks at depth 4: a
    tree of 2^5 - 2 tasks and 5 more in the single block; and 1 before the region."""
    tree = build("omp_tasks", EXAMPLES / "omp_tasks.c", "-fopenmp")
    late = build("omp_late_tasks", LATE_TASKS_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS=threads)
    for prog, args, in_region, outside in ((tree, ["4", "1000"], 2 ** 5 - 2 + 5, 1), (late, [], 100, 0)):
        out = tmp_path / f"{prog.name}.jsonl"
        proc = run([prog, *args], env=env, preload=lib, output=out, quiet="1")
        assert proc.returncode == 0 and proc.stdout == run([prog, *args], env=env).stdout
        (region,) = events(read_lines(out), "region")
        (process,) = events(read_lines(out), "process")
        assert region["counters"]["tasks"] == in_region, prog.name
        assert process["counters"]["tasks"] == in_region + outside, prog.name
        assert region["counters"]["task_s"] > 0 and region["counters"]["task_spawn_s"] > 0
        assert process["counters"]["task_s"] >= region["counters"]["task_s"]
        # omp_tasks: 2 tasks with dependences, and 2 taskwaits outside any task (the tree's
        # root, called in the single block, and the block's last); the tree's own are in tasks
        counted = (2, 2) if prog == tree else (0, 0)
        # made by the single block's own code: the tree's 2 top tasks and the 5 after them;
        # all 100 of the nowait block's (no barrier closed it)
        single = 7 if prog == tree else 100
        for rec in (region, process):
            assert (rec["counters"]["task_depend"], rec["counters"]["taskwaits"]) == counted, prog.name
            assert rec["counters"]["single_tasks"] == single, prog.name


DEPEND_TASKS_C = r"""
#include <stdio.h>
int main(void) {
    double a[30] = {0}, b[20] = {0};
#pragma omp parallel
#pragma omp single
    {
        for (int i = 0; i < 30; i++) { /* a chain: each task depends on the one before */
#pragma omp task firstprivate(i) shared(a) depend(inout: a[0])
            a[0] += i;
        }
        for (int i = 0; i < 20; i++) {
#pragma omp task firstprivate(i) shared(b)
            b[i] = 2.0 * i;
        }
    }
    double s = a[0];
    for (int i = 0; i < 20; i++)
        s += b[i];
    printf("%.1f\n", s);
    return 0;
}
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_tasks_with_dependences_are_counted(build, lib, tmp_path, threads):
    """Tasks created with a depend clause are counted apart (``task_depend``): their
    creating time is the dependences' hashing, which the task queue model keeps as
    service.  30 dependent tasks and 20 without, in one region."""
    prog = build("omp_depend_tasks", DEPEND_TASKS_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS=threads)
    out = tmp_path / "depend.jsonl"
    proc = run([prog], env=env, preload=lib, output=out, quiet="1")
    assert proc.returncode == 0 and proc.stdout == run([prog], env=env).stdout == b"815.0\n"
    (region,) = events(read_lines(out), "region")
    (process,) = events(read_lines(out), "process")
    for rec in (region, process):
        assert (rec["counters"]["tasks"], rec["counters"]["task_depend"], rec["counters"]["taskwaits"]) == (50, 30, 0)
    assert region_from_json(region)["task_depend"] == 30


# ---- threads that never call a wrapped function -------------------------------------------
PHASES_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#define WORKERS 3
static int started;
static volatile double sink;
static void *worker(void *arg) {
    long phase = (long)arg;
    /* no wrapped call in here: all of a phase's workers are alive at once, then work */
    __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < WORKERS * (phase + 1))
        ;
    double s = 0;
    for (long i = 0; i < 20000000; i++)
        s += (double)(i & 7);
    sink = s;
    if (phase == 0)
        pthread_exit(NULL); /* still counted as ended */
    return NULL;
}
static void *sleeper(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec ts = {1, 0};
        nanosleep(&ts, NULL); /* a cancellation point */
    }
    return NULL;
}
int main(void) {
    pthread_t t[WORKERS], s;
    for (long phase = 0; phase < 3; phase++) {
        if (phase == 1) { /* a cancelled thread ends too */
            pthread_create(&s, NULL, sleeper, NULL);
            pthread_cancel(s);
            pthread_join(s, NULL);
        }
        for (int i = 0; i < WORKERS; i++)
            pthread_create(&t[i], NULL, worker, (void *)phase);
        for (int i = 0; i < WORKERS; i++)
            pthread_join(t[i], NULL);
    }
    printf("ok\n");
    return 0;
}
"""


def test_threads_without_wrapped_calls_count_in_the_team(build, lib, tmp_path):
    """Workers made and joined per phase that call nothing corecast wraps (Phoenix's
    map-reduce) get no slot, but they are the process's team: 3 at once beside an idle
    main thread, however many phases, and threads that end by pthread_exit or
    cancellation leave the count."""
    prog = build("phases", PHASES_C, "-pthread")
    out = tmp_path / "cc.jsonl"
    proc = run([prog], preload=lib, output=out, quiet="1")
    assert proc.returncode == 0 and proc.stdout == b"ok\n"
    (process,) = events(read_lines(out), "process")
    assert process["threads"] == 4  # the most alive at once: 3 workers and the main thread
    assert process["counters"]["team_threads"] == 3  # the main thread only waited


def test_every_kind_of_task_keeps_its_output(tmp_path, lib):
    """C++ tasks whose firstprivate objects have copy constructors (libgomp's copy function
    builds the block), an over-aligned member, a taskloop (libgomp writes its bounds at the
    block's start: passed through), task reductions and a detached task (passed through)."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    prog = tmp_path / "kinds"
    r = subprocess.run([gxx, "-O2", "-fopenmp", str(ROOT / "tests" / "data" / "omp_tasks_kinds.cpp"), "-o", str(prog)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"this g++ cannot build OpenMP 5 tasks: {r.stderr.strip().splitlines()[-1:]}")
    for n in ("1", "4"):
        env = clean_env(OMP_NUM_THREADS=n)
        plain = run([prog], env=env)
        assert plain.returncode == 0 and plain.stdout.startswith(b"total 8865 looped 4950 reduced 45 copies>=64 1")
        for _ in range(3):
            proc = run([prog], env=env, preload=lib, quiet="1")
            assert proc.returncode == 0 and proc.stdout == plain.stdout


# Samples for steering's "can it pay" rule (native/steer_start.c, region_may_pay): (elapsed s,
# calls, threads asked, wall s, barrier-wait s, critical acquisitions) -> whether the
# model may start.  16 threads, 200-ms windows.
MAY_PAY_CASES = [
    ((1.0, 400, 16, 1.0, 3.2, 0), 1),     # 20% stalled: 17% room over 1 s of region time pays
    ((0.2, 80, 16, 0.2, 0.64, 0), 0),     # the same room over 0.2 s: less than the model costs
    ((1.0, 400, 16, 1.0, 0.16, 0), 0),    # 1% stalled: no room beyond a window's noise
    ((1.0, 400, 16, 0.1, 0.32, 0), 0),    # 17% room over 0.1 s of the region's own time
    # bt.W-like at 16 threads (31% stalled: 36% room) 0.3 s in, 0.2 s of it the region's:
    # its first window leaves a third of that to gain in (the rule over the whole 0.2 s let
    # the model start, and steered bt.W ended 7.2% later)
    ((0.3, 150, 16, 0.2, 0.99, 0), 0),
    ((1.2, 600, 16, 0.8, 3.97, 0), 1),    # the same 4 times longer: the room pays
    ((0.2, 80, 16, 0.2, 0.0, 20000), 1),  # takes locks: left to the model, however short
    # 2 calls so far: the time to come (as long again) holds no step's measurement (4 calls)
    ((1.0, 2, 16, 1.0, 3.2, 0), 0),
    # calls of 125 ms, 1.6 a window: a step is measured over 3 windows, and 1.8 s to come
    # hold it (before, refused as too few calls per window)
    ((2.0, 16, 16, 2.0, 6.4, 0), 1),
    ((1.0, 8, 2, 1.0, 0.0, 4000), 1),     # the same as a 2-thread lock convoy
    # a lock-taking region of 0.2 ms calls between 20 ms sleeps, 1% of the run: all its time
    # to come saved would not pay for the model (before: started)
    ((0.6, 30, 2, 0.006, 0.0, 30000), 0),
    ((10.0, 1000, 2, 1.0, 0.0, 10**6), 1),  # 10% of the run, 1 s of it: it can pay
]


def test_steering_starts_only_where_the_room_pays_for_the_model(gcc, tmp_path):
    """native/steer_start.c's region_may_pay, compiled alone on synthetic samples: the stall
    bound's room must beat a window's noise and pay for the model over the region's time."""
    exe = sampler_rule(gcc, tmp_path, ("CALLS_PER_WINDOW", "STEER_NOISE", "LOCK_SHARE", "HANDOFF_S", "MODEL_COST_S",
                                       "RUN_SHARE"),
                       ("not_stalled", "measure_windows", "lock_taken", "hands_off", "region_may_pay"), """
    s.elapsed_s = atof(argv[1]);
    s.window_s = 0.2;
    g->calls = atoi(argv[2]);
    g->requested = g->threads = atoi(argv[3]);
    g->wall_s = atof(argv[4]);
    g->stall_s[CC_STALL_OMPBARRIER] = atof(argv[5]);
    g->acquisitions[CC_STALL_CRITICAL] = strtoull(argv[6], NULL, 10);""", "region_may_pay(&s, g)")
    for case, pays in MAY_PAY_CASES:
        assert answers(exe, case) == pays, case
