"""The exit: a program's output and exit status never change under the library, however
the model ends (issue 11).  The team-size-changing triad used to die with SIGSEGV at exit:
the report ran inside the dynamic linker's destructor pass, after numpy's libraries were
finalised, while the sampler could still be in the model."""
from __future__ import annotations

import sys

import pytest

from .helpers import (EXAMPLES, FAKE_MODEL_PRELUDE_C, NATIVE_SOURCE, beside_model, clean_env, events, read_lines,
                      run)

RUNS = 30


@pytest.fixture(scope="module")
def teams(build):
    return build("omp_teams", EXAMPLES / "omp_teams.c", "-fopenmp")


@pytest.mark.parametrize("blas_threads", ["16", "1"])
def test_team_size_changes_never_crash_at_exit(teams, lib, tmp_path, blas_threads):
    # Windows of 10 ms keep the sampler in the model most of the time, exit included: the
    # old exit report crashed in 4 of 10 such runs here.
    args = [teams, "100", "4", "4"]
    bare = run(args)
    assert bare.returncode == 0
    env = clean_env(OPENBLAS_NUM_THREADS=blas_threads)
    bad = []
    for i in range(RUNS):
        out = tmp_path / f"x{i}.jsonl"
        r = run(args, env=env, preload=lib, quiet=1, output=out, window_ms=10)
        lines = read_lines(out)
        if r.returncode != 0 or r.stdout != bare.stdout or not events(lines, "summary"):
            bad.append((i, r.returncode, r.stderr[-300:]))
    assert not bad, f"{len(bad)} of {RUNS} runs changed: {bad[:3]}"


EXIT3 = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int k = 0; k < 40; k++) {
#pragma omp parallel for reduction(+:s)
        for (long i = 0; i < 2000000; i++) s += (double)i * k;
    }
    printf("sum %.6e\n", s); /* buffered: must reach the pipe even when the model faults */
    return 3;
}
"""


@pytest.mark.parametrize("fault", ["segv", "abort"])
def test_a_fault_in_the_exit_model_keeps_output_and_exit_status(build, lib, tmp_path, fault):
    """CORECAST_TEST_FAULT makes the exit prediction crash as a broken model would."""
    prog = build("exit3", EXIT3, "-fopenmp")
    bare = run([prog])
    assert bare.returncode == 3
    out = tmp_path / "x.jsonl"
    r = run([prog], env=clean_env(CORECAST_TEST_FAULT=fault), preload=lib, output=out)
    assert r.returncode == 3
    assert r.stdout == bare.stdout
    assert b"fatal signal in corecast's exit report" in r.stderr
    assert b"no predictions: the model failed with a fatal signal" in r.stderr
    assert events(read_lines(out), "summary")


def test_a_fault_in_the_c_report_keeps_output_and_exit_status(build, lib, tmp_path):
    """The guard's other half: a fault in the C report itself (the exiting thread's work,
    run apart), after the model answered, ends the process with the status the program
    gave exit or main, not with the signal's and not with 0.  CORECAST_TEST_FAULT=report_segv
    raises it there."""
    prog = build("exit3", EXIT3, "-fopenmp")
    bare = run([prog])
    r = run([prog], env=clean_env(CORECAST_TEST_FAULT="report_segv"), preload=lib, output=tmp_path / "x.jsonl")
    assert (r.returncode, r.stdout) == (3, bare.stdout), r.stderr
    assert b"fatal signal in corecast's exit report" in r.stderr


def test_a_model_that_does_not_answer_costs_only_the_predictions(teams, lib, tmp_path):
    """The model hangs for an hour (CORECAST_TEST_FAULT=hang); the exit waits 300 ms for it.
    An exit that waited on would meet this run's 60 s limit, not the suite's 300 s."""
    args = [teams, "12", "1", "2"]
    bare = run(args)
    out = tmp_path / "x.jsonl"
    r = run(args, env=clean_env(CORECAST_TEST_FAULT="hang"), preload=lib, output=out,
            exit_timeout_ms=300, timeout=60)
    assert r.returncode == 0 and r.stdout == bare.stdout
    assert b"no predictions: the model did not answer within 300 ms" in r.stderr
    summary = events(read_lines(out), "summary")
    assert summary and "did not answer" in summary[0]["model"]


# The program's own fatal signal while the exit report runs: a watchdog thread sends it
# with kill() once the exit guard's handler is in (the disposition no longer the default).
# Every thread but main blocks it, so that it can land on the exiting thread alone.
SENT_AT_EXIT = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int sig;
static void *watchdog(void *arg) {
    struct sigaction now;
    for (;;) {
        sigaction(sig, NULL, &now);
        if (now.sa_handler != SIG_DFL)
            break;
        usleep(1000);
    }
    kill(getpid(), sig);
    return arg;
}
int main(int argc, char **argv) {
    sig = atoi(argv[1]);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_BLOCK, &one, NULL);
    double sum = 0;
    for (int r = 0; r < 20; r++) {
#pragma omp parallel for reduction(+:sum)
        for (int i = 0; i < 100000; i++) sum += i * 0.5;
    }
    pthread_t t;
    pthread_create(&t, NULL, watchdog, NULL);
    printf("done %.0f\n", sum);
    fflush(stdout);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    exit(0);
}
"""


@pytest.mark.parametrize("sig", [6, 11])
def test_a_fatal_signal_sent_during_the_exit_report_is_the_programs(build, lib, sig):
    """A SIGABRT or SIGSEGV sent to the program (a watchdog, `timeout -s ABRT`) while its exit
    report ran was taken for a fault of corecast's: the program exited 0 instead of dying of
    it.  A sent signal (kill, sigqueue) now gets the program's own disposition back.  The
    model hangs (CORECAST_TEST_FAULT=hang) so that the report is still running when it lands."""
    prog = build("sent_at_exit", SENT_AT_EXIT, "-fopenmp", "-pthread")
    r = run([prog, str(sig)], env=clean_env(CORECAST_TEST_FAULT="hang"), preload=lib, exit_timeout_ms=30000,
            timeout=120)
    assert r.returncode == -sig, (r.returncode, r.stderr[-400:])
    assert r.stdout.startswith(b"done ")
    assert b"fatal signal in corecast's exit report" not in r.stderr


HANDLER_AFTER = r"""
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void late(void) { const char m[] = "program handler\n"; write(2, m, strlen(m)); }
int main(int argc, char **argv) {
    double s = 0;
    for (int k = 0; k < 20; k++) {
#pragma omp parallel for reduction(+:s)
        for (long i = 0; i < 1000000; i++) s += (double)i * k;
    }
    atexit(late); /* newer than anything corecast registered, as the model's libraries' are */
    if (argc > 1) exit(atoi(argv[1]));
    return s > 0 ? 4 : 1;
}
"""


@pytest.mark.parametrize("how", ["return", "exit"])
def test_the_report_runs_before_exit_handlers_registered_later(build, lib, how):
    """Exit handlers newer than corecast's (OpenSSL's cleanup, loaded by the model, was one)
    used to run first and tear down what the sampler was still using."""
    prog = build("handler_after", HANDLER_AFTER, "-fopenmp")
    args = [prog] if how == "return" else [prog, "5"]
    r = run(args, preload=lib)
    assert r.returncode == (4 if how == "return" else 5)
    err = r.stderr.decode()
    assert "program handler" in err and "corecast: pid" in err
    assert err.index("corecast: pid") < err.index("program handler")


OS_EXIT_PY = r"""
import os, sys, threading
lock = threading.Lock()
def work():
    for _ in range(20000):
        with lock:
            pass
threads = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
def leave():
    print("leaving", flush=True)
    os._exit(5)
if sys.argv[1] == "thread":
    t = threading.Thread(target=leave)
    t.start()
    t.join()
leave()
"""


@pytest.mark.parametrize("where", ["main", "thread"])
def test_os_exit_in_a_python_host_does_not_wait_for_the_model(lib, tmp_path, where):
    """os._exit keeps the interpreter held: the model, which needs it, cannot run, and the
    report used to wait the whole exit timeout for it.  With a timeout beyond the test's
    own, waiting would fail the test."""
    script = tmp_path / "leave.py"
    script.write_text(OS_EXIT_PY)
    plain = run([sys.executable, script, where])
    out = tmp_path / "cc.jsonl"
    r = run([sys.executable, script, where], preload=lib, output=out, exit_timeout_ms=10 * 60 * 1000)
    assert r.returncode == plain.returncode == 5 and r.stdout == plain.stdout == b"leaving\n"
    assert b"no predictions: the program left Python without its atexit (os._exit" in r.stderr
    assert events(read_lines(out), "summary")


# A model that never answers a window's run (steering's): it marks that it was entered
# (the file named by CC_TEST_MARK), then blocks.  The exit's prediction is never asked for
# (quiet, no output).
BLOCKING_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    (void)s;
    r->status = 0;
    const char *mark = getenv("CC_TEST_MARK");
    if (mark)
        close(open(mark, O_CREAT | O_WRONLY, 0600));
    for (;;)
        pause();
}
"""

# A convoy (a critical section every iteration) that steering starts the model for, run
# until the model has been entered (or 60 s), then a buffered line and exit status 5.
CONVOY_UNTIL_MARK_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    long shared = 0;
    const char *mark = getenv("CC_TEST_MARK");
    for (int round = 0; round < 60000 && access(mark, F_OK) != 0; round++) {
#pragma omp parallel for
        for (int i = 0; i < 4000; i++) {
#pragma omp critical
            shared += i & 7;
        }
    }
    printf("entered=%d\n", access(mark, F_OK) == 0);
    return 5;
}
"""


def test_a_quiet_exit_does_not_wait_for_a_model_nobody_reads(build, lib, tmp_path):
    """With CORECAST_QUIET and no output nothing reads the exit's prediction, so the exit
    does not wait for a sampler still in a window's model run (steering's interpreter start
    near a program's end cost NPB bt.W 10% at 16 threads): here the model never answers and
    the exit timeout is 10 minutes, past the test's own; the output and status are kept."""
    model = build("blocking_model.so", BLOCKING_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    beside = beside_model(lib, model, tmp_path / "lib")
    prog = build("convoy_until_mark", CONVOY_UNTIL_MARK_C, "-fopenmp")
    mark = tmp_path / "entered"
    env = clean_env(OMP_NUM_THREADS="2", CC_TEST_MARK=str(mark))
    r = run([prog], env=env, preload=beside, quiet="1", steer="1", window_ms="20", exit_timeout_ms="600000")
    if not mark.exists():
        pytest.skip("the model was not entered within the program's 60000 rounds")
    assert r.returncode == 5 and r.stdout == b"entered=1\n", r.stderr


# A model whose window run is entered (the file CC_TEST_MARK), waits for the program's
# last exit handler to start (the file CC_TEST_GO), then faults.
FAULT_AFTER_GO_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    (void)s;
    r->status = 0;
    close(open(getenv("CC_TEST_MARK"), O_CREAT | O_WRONLY, 0600));
    for (int i = 0; i < 600 && access(getenv("CC_TEST_GO"), F_OK) != 0; i++) {
        struct timespec step = {0, 100000000L};
        nanosleep(&step, 0);
    }
    *(volatile int *)0 = 1;
    return 0;
}
"""

# The convoy above, with an exit handler registered before any parallel activity (so it
# runs after corecast's report): it lets the model fault, waits past the guard's 10 s bound
# for a faulted sampler, then writes a buffered line.
CONVOY_LATE_HANDLER_C = CONVOY_UNTIL_MARK_C.replace("int main(void) {", r"""
#include <fcntl.h>
#include <time.h>
static void late(void) {
    close(open(getenv("CC_TEST_GO"), O_CREAT | O_WRONLY, 0600));
    struct timespec step = {LATE_S, 0};
    nanosleep(&step, 0);
    printf("late\n");
}
int main(void) {
    atexit(late);""")


def test_a_model_left_by_a_quiet_exit_that_faults_later_keeps_output_and_status(build, lib, tmp_path):
    """The quiet exit leaves the sampler in a window's model run under the guard: a fault
    there while the program's own exit handlers still run must not end the program, cut
    its output or change its status.  The faulted sampler ended the process with the
    program's status 10 s on (the bound for a fault that left a lock held), before a
    handler that sleeps longer wrote its line; now only an exiting thread blocked on a
    futex for those 10 s is ended so."""
    model = build("fault_after_go_model.so", FAULT_AFTER_GO_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    beside = beside_model(lib, model, tmp_path / "lib")
    prog = build("convoy_late_handler", CONVOY_LATE_HANDLER_C, "-fopenmp", "-DLATE_S=12")
    mark = tmp_path / "entered"
    env = clean_env(OMP_NUM_THREADS="2", CC_TEST_MARK=str(mark), CC_TEST_GO=str(tmp_path / "go"))
    r = run([prog], env=env, preload=beside, quiet="1", steer="1", window_ms="20", exit_timeout_ms="600000")
    if not mark.exists():
        pytest.skip("the model was not entered within the program's 60000 rounds")
    assert r.returncode == 5 and r.stdout == b"entered=1\nlate\n", r.stderr


# Two threads of work, joined, then exit status 3.  An exit handler registered before any
# thread (so it runs after corecast's report) watches every other task, corecast's being
# all that are left: each may end a window it was in, then stays still.  "still" once
# 200 ms pass without a context switch among them, "busy" if that never happens in 20 s.
STILL_AFTER_REPORT_C = r"""
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static void *spin(void *a) {
    volatile long x = 0;
    for (long i = 0; i < 20000000; i++) x += i;
    return a;
}
static long switches(void) {
    long sum = 0;
    int self = (int)syscall(SYS_gettid);
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
        FILE *f = fopen(path, "r");
        long v;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
                sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1)
                sum += v;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return sum;
}
static void late(void) {
    long before = switches();
    for (int i = 0; i < 100; i++) {
        struct timespec step = {0, 200000000L};
        nanosleep(&step, NULL);
        long now = switches();
        if (now == before) {
            printf("still\n");
            return;
        }
        before = now;
    }
    printf("busy\n");
}
int main(void) {
    atexit(late);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, spin, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("joined\n");
    return 3;
}
"""


@pytest.mark.parametrize("mode", ["quiet", "report"])
def test_nothing_of_corecasts_runs_on_after_the_exit_report(build, lib, tmp_path, mode):
    """Whatever of ours runs at exit is quiescent once the report is made: the sampler's
    windows stop, whether the exit awaited its answer (a report) or only told it to stop
    (CORECAST_QUIET with no output, which awaits nothing).  Windows of 10 ms would switch
    it dozens of times in the program's own exit handler's 200 ms."""
    prog = build("still_after_report", STILL_AFTER_REPORT_C, "-pthread")
    settings = {"quiet": "1"} if mode == "quiet" else {"output": tmp_path / "cc.jsonl"}
    r = run([prog], preload=lib, window_ms="10", **settings)
    assert r.returncode == 3 and r.stdout == b"joined\nstill\n", r.stderr


# A stand-in model whose exit prediction faults while it holds stdout's lock, and a program
# whose exit handler, registered before any thread (so after corecast's report), writes to
# stdout: it waits on that lock for ever.
LOCK_THEN_FAULT_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    r->status = 0;
    if (s->final) {
        flockfile(stdout);
        *(volatile int *)0 = 1;
    }
    return 0;
}
"""

WAITS_FOR_STDOUT_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static void *noop(void *a) { return a; }
static void late(void) { printf("late\n"); }
int main(void) {
    atexit(late);
    pthread_t t;
    pthread_create(&t, NULL, noop, NULL);
    pthread_join(t, NULL);
    return 5;
}
"""


def test_a_model_fault_that_left_a_lock_held_ends_the_program_with_its_status(build, lib, tmp_path):
    """The exit guard's bound: the sampler faulted in the model holding a lock, and the
    exiting thread then blocks on that lock; after 10 s of that the process ends with the
    program's status (without the bound it never ended).  Run with a timeout well below
    the suite's, so that a hang fails here."""
    model = build("lock_then_fault_model.so", LOCK_THEN_FAULT_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    beside = beside_model(lib, model, tmp_path / "lib")
    prog = build("waits_for_stdout", WAITS_FOR_STDOUT_C, "-pthread")
    r = run([prog], preload=beside, output=tmp_path / "cc.jsonl", timeout=120)
    assert r.returncode == 5, r.stderr
    assert b"no predictions: the model failed with a fatal signal" in r.stderr


EXIT_IN_REGION = r"""
#include <omp.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    volatile double x = 0;
#pragma omp parallel
    {
        for (long i = 0; i < 2000000; i++) x += 1e-9;
        if (omp_get_thread_num() == 1) exit(9);
        usleep(200000);
    }
    return 0;
}
"""


def test_a_program_that_exits_inside_its_first_region_is_an_openmp_one(build, lib, tmp_path):
    # exit(9) from a team member before any call of the region ended: the process line
    # said "process (pthreads)" (runuser37).  Its status stays the program's.
    prog = build("exit_in_region", EXIT_IN_REGION, "-fopenmp")
    out = tmp_path / "oe.jsonl"
    proc = run([prog], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out)
    assert proc.returncode == 9
    (process,) = events(read_lines(out), "process")
    assert process["runtime"] == "openmp"
    assert b"process (openmp)" in proc.stderr
