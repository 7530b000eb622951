"""Edges of the promise (docs/promise.md) that hostsafe28's hunt found: a process that the C
library ends when its last thread does, a stderr pipe that is full and non-blocking, a
program that restricts its own system calls.  Each case runs the same program without and
with corecast and compares."""
from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

from .helpers import clean_env, run_bounded

# The programs below end at once; a hang is what these limits catch (never a speed check).
HANG = 60

PTHREAD_EXIT_MAIN_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int alive = 2;
static long total;
static void at_end(void) { printf("atexit ran, total %ld\n", total); }
static void *worker(void *arg) {
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&mu); total += (long)arg; pthread_mutex_unlock(&mu); }
    usleep(100000); /* main has left by now */
    pthread_mutex_lock(&mu);
    if (--alive == 0) printf("last thread ends\n");
    pthread_mutex_unlock(&mu);
    return NULL;
}
int main(void) {
    atexit(at_end);
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    pthread_exit(NULL); /* the process ends, with exit(0), when its last thread does */
}
"""


@pytest.mark.parametrize("quiet", ["0", "1"])
def test_main_leaving_by_pthread_exit_still_ends_the_process(build, lib, quiet):
    """main calls pthread_exit; glibc ends the process as its last thread ends, by counting
    the threads pthread_create made.  The sampler, counted and never ending, kept the
    process alive after the program's last thread (forever, and past a SIGTERM too: it
    blocks every signal)."""
    exe = build("pthread_exit_main", PTHREAD_EXIT_MAIN_C, "-pthread")
    plain = subprocess.run([str(exe)], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib), CORECAST_QUIET=quiet),
                              capture_output=True, timeout=HANG)
    assert plain.returncode == measured.returncode == 0, measured.stderr
    assert measured.stdout == plain.stdout == b"last thread ends\natexit ran, total 300000\n"
    if quiet == "0":
        assert b"corecast: pid " in measured.stderr


STDERR_LINE_C = r"""
#include <pthread.h>
#include <stdio.h>
static void *work(void *arg) { volatile long x = 0; for (long i = 0; i < 2000000; i++) x += i; return arg; }
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    fprintf(stderr, "the program's line\n"); /* EAGAIN: lost, as the pipe is full */
    printf("done\n");
    return 3;
}
"""


def full_nonblocking_pipe() -> tuple[int, int]:
    """A pipe whose write end is O_NONBLOCK (a reader such as node sets it) and full."""
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    return r, w


def test_a_full_nonblocking_stderr_pipe_does_not_hold_up_the_exit(build, lib):
    """The program's own writes into a full O_NONBLOCK stderr fail with EAGAIN and it exits;
    the report waited for room for ever (its patience with the program's descriptor was
    unbounded), so the program never ended.  It gets 5 s now, once."""
    exe = build("stderr_line", STDERR_LINE_C, "-pthread")
    results = []
    for env in (clean_env(), clean_env(LD_PRELOAD=str(lib))):
        r, w = full_nonblocking_pipe()
        try:
            results.append(subprocess.run([str(exe)], env=env, stdout=subprocess.PIPE, stderr=w, timeout=HANG))
        finally:
            os.close(r)
            os.close(w)
    plain, measured = results
    assert plain.returncode == measured.returncode == 3
    assert measured.stdout == plain.stdout == b"done\n"


def test_a_stalled_stderr_gets_its_patience_once(build, lib):
    """Three warnings and the report, into a full O_NONBLOCK pipe nobody reads: the first
    write waits its 5 s (channel.c's PATIENCE_S) and marks the reader stalled; the others
    give up at once.  Patience for each write held the exit 20 s.  The limit, 10 s, is twice
    the one wait and half the four: only a second wait (never a slow machine) fails it."""
    exe = build("stderr_line", STDERR_LINE_C, "-pthread")
    r, w = full_nonblocking_pipe()
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_TARGET="a", CORECAST_WINDOW_MS="b", CORECAST_EXIT_TIMEOUT_MS="c")
    try:
        t0 = time.monotonic()
        measured = subprocess.run([str(exe)], env=env, stdout=subprocess.PIPE, stderr=w, timeout=HANG)
        took = time.monotonic() - t0
    finally:
        os.close(r)
        os.close(w)
    assert measured.returncode == 3 and measured.stdout == b"done\n"
    assert took < 10, f"{took:.1f} s: more than one write waited for the stalled reader"


def output_of(p: subprocess.Popen, what: str) -> bytes:
    """``p``'s stdout once it has ended; a test failure naming ``what`` if it has not in HANG s."""
    try:
        return p.communicate(timeout=HANG)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail(f"the program never ended: its exit blocked on the full stderr {what}")


def nearly_full_blocking_pipe(room: int) -> tuple[int, int]:
    """A blocking pipe with ``room`` bytes left: the program's own line fits, a report not."""
    r, w = os.pipe()
    os.write(w, b"x" * (fcntl.fcntl(w, fcntl.F_GETPIPE_SZ) - room))
    return r, w


def test_a_blocking_stderr_pipe_read_after_the_exit_does_not_hang_it(build, lib):
    """A parent that reads the program's stderr only once it has ended (wait, then read) got
    it back bare, the program's bytes fitting in the pipe, and waited for ever with corecast:
    the report's blocking write could never end.  A pipe or socket gets the same 5 s, once,
    as an O_NONBLOCK one, whatever its mode, and the program's bytes come first."""
    exe = build("stderr_line", STDERR_LINE_C, "-pthread")
    results = []
    for env in (clean_env(), clean_env(LD_PRELOAD=str(lib))):
        r, w = nearly_full_blocking_pipe(room=64)
        try:
            p = subprocess.Popen([str(exe)], env=env, stdout=subprocess.PIPE, stderr=w)
            os.close(w)
            out = output_of(p, "pipe")
            fcntl.fcntl(r, fcntl.F_SETFL, os.O_NONBLOCK)
            err = b""
            try:
                while chunk := os.read(r, 1 << 16):
                    err += chunk
            except BlockingIOError:
                pass
            results.append((p.returncode, out, err))
        finally:
            os.close(r)
    plain, measured = results
    assert plain[0] == measured[0] == 3 and plain[1] == measured[1] == b"done\n"
    assert measured[2].startswith(plain[2]) and plain[2].endswith(b"the program's line\n")


def test_a_full_blocking_stderr_socket_does_not_hang_the_exit(build, lib):
    """The same through a stream socket nobody reads (journald's kind of stderr): a program
    that writes nothing to it ends at once bare; the report may not block its exit."""
    import socket

    exe = build("silent_threads", "#include <pthread.h>\n" + TWO_THREAD_PHASE_C + "int main(void) { phase(); return 4; }\n",
                "-pthread")
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    try:
        while True:
            theirs.send(b"x" * 65536)
    except BlockingIOError:
        pass
    theirs.setblocking(True)  # the program's end is blocking, as a service manager's is
    try:
        p = subprocess.Popen([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), stdout=subprocess.PIPE,
                             stderr=theirs.fileno())
        assert output_of(p, "socket") == b"" and p.returncode == 4
    finally:
        ours.close()
        theirs.close()


# A phase of two threads that work: the parallel activity that starts corecast's sampler.
TWO_THREAD_PHASE_C = r"""
static void *work(void *arg) { volatile long x = 0; for (long i = 0; i < 2000000; i++) x += i; return arg; }
static void phase(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}
"""


SECCOMP_C = r"""
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
""" + TWO_THREAD_PHASE_C + r"""int main(int argc, char **argv) {
    phase();
    /* A sandbox for the rest of the run: openat ends the process, everything else is allowed. */
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {4, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) { perror("no_new_privs"); return 9; }
    int r = !strcmp(argv[1], "all")   /* every thread, through the seccomp system call */
        ? (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog)
        : prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0); /* this thread only */
    if (r) { perror("seccomp"); return 9; }
    phase();
    printf("sandboxed phase done\n");
    return 0;
}
"""


@pytest.mark.parametrize("threads", ["all", "main"])
def test_a_program_that_restricts_its_system_calls_is_not_killed_by_corecasts(build, lib, threads):
    """A program that installs a seccomp filter allowing all it needs (here all but openat)
    was killed with SIGSYS by corecast's calls: the sampler's /proc reads, the exit
    report's.  corecast now stops before the filter is installed, and says so in one line."""
    exe = build("seccomp_sandbox", SECCOMP_C, "-pthread")
    plain = subprocess.run([str(exe), threads], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe), threads], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True,
                              timeout=HANG)
    assert plain.returncode == measured.returncode == 0, (plain.stderr, measured.stderr)
    assert measured.stdout == plain.stdout == b"sandboxed phase done\n"
    assert measured.stderr.count(b"corecast: warning: the program restricts its system calls (seccomp)") == 1


SECCOMP_THEN_LET_GO_C = SECCOMP_C.replace(
    '    phase();\n    printf("sandboxed phase done\\n");\n    return 0;',
    '    phase();\n    close(2); /* a server detaching: its stderr pipe\'s reader may end */\n'
    '    printf("stderr closed\\n");\n    fflush(stdout);\n    char c;\n'
    '    while (read(0, &c, 1) > 0) {}\n    return 0;')


def test_a_restricted_program_that_lets_stderr_go_leaves_no_copy_of_it(build, lib):
    """After the program restricts its system calls, corecast reports nothing, so the copy
    of stderr the sampler kept for the report goes too: a program that then closes its
    stderr and runs on lets the pipe's reader reach its end of file, as without corecast
    (the sampler, parked for good, had kept the copy until the process ended)."""
    assert "close(2)" in SECCOMP_THEN_LET_GO_C  # the premise: the program text was changed
    exe = build("seccomp_let_go", SECCOMP_THEN_LET_GO_C, "-pthread")
    for env in (clean_env(), clean_env(LD_PRELOAD=str(lib))):
        p = subprocess.Popen([str(exe), "main"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            assert p.stdout.readline() == b"stderr closed\n"
            # The program is still running (it waits on stdin): its stderr must be at its end.
            got: list[bytes] = []
            reader = threading.Thread(target=lambda: got.append(p.stderr.read()), daemon=True)
            reader.start()
            reader.join(HANG)
            assert got and p.poll() is None, "stderr still open while the program runs"
            err = got[0]
        finally:
            p.stdin.close()
            p.wait(timeout=HANG)
        assert p.returncode == 0
        assert b"Traceback" not in err


SECCOMP_PROBE_C = r"""
#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
""" + TWO_THREAD_PHASE_C + r"""int main(void) {
    phase();
    /* libseccomp's seccomp_api_get and systemd ask the kernel what it supports by calls that
     * cannot install a filter: no filter (EFAULT), strict mode with flags or arguments
     * (EINVAL), a mode prctl does not know (EINVAL). */
    int probes[] = {
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, NULL) == -1 && errno == EFAULT,
        (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL) == -1 && errno == EINVAL,
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, 0, 0, 0) == -1 && errno == EFAULT,
        prctl(PR_SET_SECCOMP, 7, 0, 0, 0) == -1 && errno == EINVAL,
    };
    for (int i = 0; i < 4; i++) printf("%d", probes[i]);
    printf("\n");
    phase();
    return 0;
}
"""


def test_asking_what_seccomp_supports_is_no_restriction(build, lib):
    """A program that only probes seccomp (libseccomp's seccomp_api_get makes these calls,
    each refused by the kernel, nothing installed) is measured and reported as any other:
    corecast stopped for good at the first probe, said the program restricted its system
    calls, and reported nothing."""
    exe = build("seccomp_probe", SECCOMP_PROBE_C, "-pthread")
    plain = subprocess.run([str(exe)], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True, timeout=HANG)
    assert plain.returncode == measured.returncode == 0
    assert measured.stdout == plain.stdout == b"1111\n"
    assert b"seccomp" not in measured.stderr, measured.stderr
    assert b"corecast: pid " in measured.stderr, measured.stderr


# A Python host that installs a seccomp filter (getpriority refused, all else allowed) while
# holding the GIL (ctypes.PyDLL keeps it across the call), by prctl or the seccomp system call.
SECCOMP_GIL_PY = r"""
import ctypes, errno, os, platform, sys, threading
machine = platform.machine()
t = threading.Thread(target=lambda: None)  # the first parallel activity: corecast starts
t.start()
t.join()
class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
insns = (Insn * 4)(Insn(0x20, 0, 0, 0),  # the call's number
                   Insn(0x15, 0, 1, {"x86_64": 140, "aarch64": 141}[machine]),  # getpriority
                   Insn(0x06, 0, 0, 0x00050000 | errno.EPERM), Insn(0x06, 0, 0, 0x7FFF0000))
prog = Prog(4, insns)
libc = ctypes.PyDLL(None)  # the GIL stays held
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
libc.syscall.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_void_p]
assert libc.prctl(38, 1, None, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
if sys.argv[1] == "prctl":  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
    r = libc.prctl(22, 2, ctypes.addressof(prog), 0, 0)
else:  # seccomp(SECCOMP_SET_MODE_FILTER, 0, prog)
    r = libc.syscall({"x86_64": 317, "aarch64": 277}[machine], 1, 0, ctypes.addressof(prog))
try:
    os.getpriority(os.PRIO_PROCESS, 0)
    print("filter", r, "getpriority allowed")
except OSError as e:
    print("filter", r, "getpriority refused:", errno.errorcode[e.errno])
"""


@pytest.mark.parametrize("how", ["prctl", "seccomp"])
def test_a_filter_installed_holding_the_gil_does_not_wait_for_a_model_run_that_needs_it(lib, tmp_path, how):
    """corecast stops before a filter is in, awaiting a model run on the sampler: one that
    waits for a Python host's GIL the installing thread holds cannot end before it, and the
    program's call waited the whole CORECAST_EXIT_TIMEOUT_MS (10 s by default) for nothing.
    CORECAST_TEST_FAULT=sampler_first puts the model's start on the sampler; a timeout of 10
    minutes makes a wait for it a hang."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the filter's call numbers are x86_64's and aarch64's")
    script = tmp_path / "seccomp_gil.py"
    script.write_text(SECCOMP_GIL_PY)
    plain = run_bounded([sys.executable, script, how], clean_env(), 60)
    assert (plain.returncode, plain.stdout) == (0, b"filter 0 getpriority refused: EPERM\n"), plain.stderr
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_TEST_FAULT="sampler_first", CORECAST_EXIT_TIMEOUT_MS="600000")
    measured = run_bounded([sys.executable, script, how], env, 60)
    assert (measured.returncode, measured.stdout) == (0, plain.stdout), measured.stderr
    assert measured.stderr.count(b"corecast: warning: the program restricts its system calls (seccomp)") == 1


def test_a_model_start_the_hosts_finalization_ends_leaves_the_exit_to_the_program(lib, tmp_path):
    """A model start on the sampler that the seccomp stop does not await (above) is still
    under way when the host's interpreter finalizes, and Python ends every other thread that
    then waits for its GIL (pthread_exit).  The sampler, off glibc's count of threads, took
    it to 0 as it ended, and glibc ran exit(0) on it while the program's thread was still
    finalizing: sys.exit(3) ended 0, what the finalization wrote was lost (every run), and
    the two exits at once faulted (the test above: SIGSEGV, or a second interpreter that
    cffi started there aborting the host's finalization, 1 run in 40 under load).  A slow
    finalization (0.5 s in a __del__) makes the order certain."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the filter's call numbers are x86_64's and aarch64's")
    script = tmp_path / "seccomp_gil_exit.py"
    script.write_text(SECCOMP_GIL_PY + """
import time
class Slow:  # cleared in the finalization, once no other thread may take the GIL
    def __del__(self):
        time.sleep(0.5)
        os.write(1, b"finalized\\n")
slow = Slow()
sys.stdout.flush()
sys.exit(3)
""")
    plain = run_bounded([sys.executable, script, "prctl"], clean_env(), 60)
    assert (plain.returncode, plain.stdout) == (3, b"filter 0 getpriority refused: EPERM\nfinalized\n"), plain.stderr
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_TEST_FAULT="sampler_first", CORECAST_EXIT_TIMEOUT_MS="600000")
    measured = run_bounded([sys.executable, script, "prctl"], env, 60)
    assert (measured.returncode, measured.stdout) == (3, plain.stdout), measured.stderr
    assert measured.stderr.count(b"corecast: warning: the program restricts its system calls (seccomp)") == 1


# A second preload, after corecast's, that sees every open() corecast makes and says, once
# the program has begun to exit, whether the opening task shares the program's descriptor
# table (kcmp): an open there takes one of the program's numbers.
OPEN_SPY_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile int exiting;
void spy_exiting(void) { exiting = 1; }
static void note(const char *path) {
    if (!exiting) return;
    long same = syscall(SYS_kcmp, getpid(), syscall(SYS_gettid), KCMP_FILES, 0, 0);
    char b[600];
    int n = snprintf(b, sizeof b, "%s %s\n", same < 0 ? "kcmp-unavailable" : same == 0 ? "program-table" : "apart", path);
    if (write(1, b, n) < 0) {}
}
#define SPY(name) \
    int name(const char *path, int flags, ...) { \
        static int (*real)(const char *, int, ...); \
        if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name); \
        va_list ap; va_start(ap, flags); int mode = va_arg(ap, int); va_end(ap); \
        note(path); \
        return real(path, flags, mode); \
    }
SPY(open)
SPY(open64)
"""

EXITING_WHILE_A_THREAD_RUNS_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg) {
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&mu); total += (long)arg; pthread_mutex_unlock(&mu); }
    return NULL;
}
static void *idle(void *arg) { for (;;) pause(); return arg; }
int main(void) {
    pthread_t t[2], other;
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)(i + 1));
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_create(&other, NULL, idle, NULL); /* still there as the process exits */
    printf("total %ld\n", total);
    fflush(stdout);
    void (*exiting)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "spy_exiting");
    if (exiting) exiting();
    exit(0);
}
"""


def test_the_exit_report_opens_nothing_in_the_programs_descriptor_table(build, lib, tmp_path):
    """The exit report runs on the exiting thread while the program's other threads run.
    It opened the last sample's /proc files and the JSON Lines file there, in the
    program's table: a thread that closed every descriptor above 2 and reopened its data
    file took our number and got our JSON Lines in its file (hostsafe29's hunt, 1 run in
    20 with a thread closing and reopening in a loop).  Now that work runs in a task with a
    table of its own; an open() spy preloaded after corecast asks the kernel (kcmp) which
    table each open of the exit is in: the answer does not depend on timing."""
    spy = build("open_spy", OPEN_SPY_C, "-shared", "-fPIC", "-ldl")
    exe = build("exiting_while_a_thread_runs", EXITING_WHILE_A_THREAD_RUNS_C, "-pthread", "-ldl")
    out = tmp_path / "run.jsonl"
    r = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=f"{lib}:{spy}", CORECAST_OUTPUT=str(out)),
                       capture_output=True, timeout=HANG)
    lines = r.stdout.decode().splitlines()
    if any(line.startswith("kcmp-unavailable") for line in lines):
        pytest.skip("the kernel has no kcmp (CONFIG_KCMP)")
    assert r.returncode == 0, r.stderr
    assert lines[0] == "total 300000"
    opened = [line.split(" ", 1) for line in lines[1:]]
    assert [p for where, p in opened if where == "program-table"] == []
    apart = [p for where, p in opened if where == "apart"]
    assert str(out) in apart and any(p.startswith("/proc/self/task/") for p in apart), lines
    assert out.read_text().count("\n") >= 2  # the records were written


FIRST_REGION_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void (*watch)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "spy_exiting");
    if (watch) watch(); /* from here every open is told */
    double s = 0;
    for (int r = 0; r < 20; r++) {
#pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 100000; i++) s += i * 0.5;
    }
    printf("sum %.0f\n", s);
    return 0;
}
"""


def test_the_first_look_opens_nothing_in_the_programs_descriptor_table(build, lib, tmp_path):
    """The first parallel activity reads every thread's /proc clocks and the machine's NUMA
    nodes from sysfs.  It did so on the program's thread, in its table: a thread the wrappers
    never saw start (a SIGEV_THREAD timer's) that opened a file meanwhile got another number
    than without corecast (fds 3 4 5 instead of 3, in 16 of 20 runs).  Now that look runs
    apart; the spy asks the kernel (kcmp) which table each open is in."""
    spy = build("open_spy", OPEN_SPY_C, "-shared", "-fPIC", "-ldl")
    exe = build("first_region", FIRST_REGION_C, "-fopenmp", "-ldl")
    r = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=f"{lib}:{spy}", CORECAST_QUIET="1"), capture_output=True,
                       timeout=HANG)
    lines = r.stdout.decode().splitlines()
    if any(line.startswith("kcmp-unavailable") for line in lines):
        pytest.skip("the kernel has no kcmp (CONFIG_KCMP)")
    assert r.returncode == 0, r.stderr
    opened = [line.split(" ", 1) for line in lines if not line.startswith("sum ")]
    assert [p for where, p in opened if where == "program-table"] == [], lines
    assert any(p.startswith("/proc/self/task") for where, p in opened if where == "apart"), lines


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed")
def test_a_program_run_under_valgrind_keeps_its_exit_status(build, lib):
    """Valgrind runs no clone() but a thread library's or fork's, and ends the program with
    status 1 where one starts: the exit's task apart (a clone without CLONE_FILES) did so
    for every OpenMP program run under valgrind with corecast preloaded.  There the exit's
    file work stays on the exiting thread."""
    from .helpers import EXAMPLES

    exe = build("omp_critical", EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")
    env = clean_env(OMP_NUM_THREADS="2")
    plain = subprocess.run(["valgrind", "-q", str(exe), "3"], env=env, capture_output=True, timeout=HANG)
    ours = subprocess.run(["valgrind", "-q", str(exe), "3"], env={**env, "LD_PRELOAD": str(lib)},
                          capture_output=True, timeout=HANG)
    assert b"Unsupported clone" not in ours.stderr, ours.stderr[-2000:]
    assert ours.returncode == plain.returncode == 0, ours.stderr[-2000:]
    assert ours.stdout == plain.stdout
    assert b"process (openmp)" in ours.stderr  # the report was written


# Eight parallel regions (JSON Lines past a small pipe's size), then a thread that watches
# the program's table for the JSON Lines file (argv[1]) while the exit report writes it, and
# once it is there forks and execs this program to ask whether the new image has it.
JSON_LINES_AT_EXEC_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static const char *target;
static int find(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int found = -1;
    char path[64], link[4096];
    while (d && (e = readdir(d)) && found < 0) {
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = 0;
            if (!strcmp(link, target))
                found = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    return found;
}
static void *watch(void *a) {
    for (;;) { /* until the process ends */
        int fd = find();
        if (fd >= 0) {
            char num[16];
            snprintf(num, sizeof num, "%d", fd);
            pid_t c = fork();
            if (c == 0) {
                execl("/proc/self/exe", "check", "check", num, (char *)NULL);
                _exit(127);
            }
            waitpid(c, 0, 0);
            return a;
        }
        struct timespec step = {0, 1000000L};
        nanosleep(&step, NULL);
    }
}
#define R(n) static long r##n(void) { long s = 0; _Pragma("omp parallel reduction(+ : s)") s += n; return s; }
R(0) R(1) R(2) R(3) R(4) R(5) R(6) R(7)
int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "check")) {
        printf("exec'd image: %s\n", fcntl(atoi(argv[2]), F_GETFD) < 0 ? "closed" : "open");
        return 0;
    }
    target = argv[1];
    printf("%ld\n", r0() + r1() + r2() + r3() + r4() + r5() + r6() + r7());
    fflush(stdout);
    pthread_t w;
    pthread_create(&w, NULL, watch, NULL);
    return 0;
}
"""


def test_the_json_lines_file_is_not_passed_to_an_image_another_thread_execs(build, lib, tmp_path):
    """Where the exit's file work cannot run apart (valgrind's preload, named here by a
    stand-in; RLIMIT_NPROC or ulimit -v likewise), the JSON Lines file is open in the
    program's table while the report writes it, and another thread of the program may fork
    and exec meanwhile: the new image must not get it (a FIFO's reader would wait for that
    image to end).  The test reads the FIFO only once the new image has answered, so the
    write waits in the pipe, the file open, until then."""
    stub = tmp_path / "vgpreload_stub.so"
    empty = tmp_path / "empty.c"
    empty.write_text("")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(stub), str(empty)], check=True, timeout=HANG)
    exe = build("json_lines_at_exec", JSON_LINES_AT_EXEC_C, "-fopenmp", "-pthread")
    fifo = tmp_path / "cc.fifo"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(rfd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)  # the records are 8 kB and more
        env = clean_env(LD_PRELOAD=f"{stub}:{lib}", CORECAST_OUTPUT=str(fifo), OMP_NUM_THREADS="2")
        p = subprocess.Popen([str(exe), str(fifo)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = p.stdout.readline()
            while line and not line.startswith(b"exec'd image"):
                line = p.stdout.readline()
            done = threading.Event()

            def drain() -> None:
                while not done.is_set():
                    try:
                        if not os.read(rfd, 65536):
                            time.sleep(0.01)
                    except BlockingIOError:
                        time.sleep(0.01)

            threading.Thread(target=drain, daemon=True).start()
            out, err = p.communicate(timeout=HANG)
            done.set()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    finally:
        os.close(rfd)
    assert p.returncode == 0, err[-2000:]
    assert line == b"exec'd image: closed\n", (line, err[-2000:])


ROBUST_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static pthread_mutex_t mu;
static void *die_holding(void *arg) { pthread_mutex_lock(&mu); return arg; } /* ends with it held */
static const char *name(int r) {
    return r == 0 ? "0" : r == EOWNERDEAD ? "EOWNERDEAD" : r == EDEADLK ? "EDEADLK" : r == EBUSY ? "EBUSY"
         : r == ENOTRECOVERABLE ? "ENOTRECOVERABLE" : strerror(r);
}
int main(int argc, char **argv) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&mu, &a);
    pthread_t t;
    pthread_create(&t, NULL, die_holding, NULL);
    pthread_join(t, NULL);
    int r = argv[1][0] == 't' ? pthread_mutex_timedlock(&mu, &(struct timespec){0, 0}) : pthread_mutex_lock(&mu);
    printf("owner died: %s\n", name(r));
    if (r == EOWNERDEAD)
        printf("consistent: %s\n", name(pthread_mutex_consistent(&mu)));
    printf("again: %s\n", name(pthread_mutex_lock(&mu))); /* error-checking: we hold it */
    printf("unlock: %s\n", name(pthread_mutex_unlock(&mu)));
    printf("last: %s\n", name(pthread_mutex_lock(&mu)));
    return 0;
}
"""


@pytest.mark.parametrize("how", ["lock", "timedlock"])
def test_a_robust_mutex_whose_owner_died_answers_as_without_corecast(build, lib, how):
    """The lock wrapper tries first and waits only on EBUSY: the try's other answers are the
    lock's own.  EOWNERDEAD from a robust mutex is the lock acquired; a wrapper that waited
    on anything but success locked it again (EDEADLK from an error-checking mutex, a hang
    from a plain one) and the program never learnt its owner had died."""
    exe = build("robust_owner_died", ROBUST_C, "-pthread")
    plain = subprocess.run([str(exe), how], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe), how], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True,
                              timeout=HANG)
    assert plain.stdout.splitlines()[:2] == [b"owner died: EOWNERDEAD", b"consistent: 0"]
    assert (measured.returncode, measured.stdout) == (plain.returncode, plain.stdout), measured.stderr
    assert b"corecast: pid " in measured.stderr  # measured: the wrapper ran


SEM_ERRNO_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static sem_t s;
static pid_t waiter;
/* Posts once the waiter sleeps in the kernel (state S: its sem_wait found the count 0). */
static void *post_when_asleep(void *arg) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)waiter);
    for (;;) {
        FILE *f = fopen(path, "r");
        int n = f ? (int)fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n > 0 ? n : 0] = 0;
        char *close = strrchr(buf, ')');
        if (close && close[1] == ' ' && close[2] == 'S') break;
        sched_yield();
    }
    sem_post(&s);
    return arg;
}
int main(int argc, char **argv) {
    waiter = (pid_t)syscall(SYS_gettid);
    int changed = 0;
    for (int i = 0; i < 5; i++) {
        sem_init(&s, 0, 0);
        pthread_t t;
        pthread_create(&t, NULL, post_when_asleep, NULL);
        struct timespec far;
        clock_gettime(CLOCK_REALTIME, &far);
        far.tv_sec += 600;
        errno = 0;
        int r = argv[1][0] == 't' ? sem_timedwait(&s, &far) : sem_wait(&s);
        changed += r == 0 && errno != 0;
        pthread_join(t, NULL);
        sem_destroy(&s);
    }
    printf("errno changed by a successful wait: %d of 5\n", changed);
    return 0;
}
"""


@pytest.mark.parametrize("how", ["wait", "timedwait"])
def test_a_semaphore_wait_that_blocked_leaves_errno_as_it_was(build, lib, how):
    """The semaphore wrappers try first; the failed try's EAGAIN must not reach a program
    that reads errno after a wait that succeeded.  Each wait here blocks: the count is 0
    until the waiter sleeps in the kernel."""
    exe = build("sem_errno", SEM_ERRNO_C, "-pthread")
    plain = subprocess.run([str(exe), how], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe), how], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True,
                              timeout=HANG)
    assert plain.stdout == b"errno changed by a successful wait: 0 of 5\n"
    assert (measured.returncode, measured.stdout) == (plain.returncode, plain.stdout), measured.stderr
    assert b"corecast: pid " in measured.stderr


TIMED_OUT_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>
static void *nothing(void *arg) { return arg; }
static struct timespec in_ms(clockid_t clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    long long ns = (long long)t.tv_nsec + ms * 1000000LL; /* -1 ms below a whole second: borrow */
    t.tv_sec += ns / 1000000000 - (ns < 0);
    t.tv_nsec = ns % 1000000000 + (ns < 0 ? 1000000000 : 0);
    return t;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, nothing, NULL); /* the process is measured from here */
    pthread_join(t, NULL);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    sem_t s;
    sem_init(&s, 0, 0);
    for (long ms = -1; ms <= 20; ms += 21) { /* a deadline gone, and one nobody meets */
        pthread_mutex_lock(&m);
        struct timespec rt = in_ms(CLOCK_REALTIME, ms), mono = in_ms(CLOCK_MONOTONIC, ms);
        int timed = pthread_cond_timedwait(&c, &m, &rt);
        int clocked = pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &mono);
        pthread_mutex_unlock(&m);
        int sem = sem_timedwait(&s, &rt) ? errno : 0;
        int semclock = sem_clockwait(&s, CLOCK_MONOTONIC, &mono) ? errno : 0;
        printf("%ld ms: cond_timedwait %s, cond_clockwait %s, sem_timedwait %s, sem_clockwait %s\n", ms,
               timed == ETIMEDOUT ? "ETIMEDOUT" : "other", clocked == ETIMEDOUT ? "ETIMEDOUT" : "other",
               sem == ETIMEDOUT ? "ETIMEDOUT" : "other", semclock == ETIMEDOUT ? "ETIMEDOUT" : "other");
    }
    return 0;
}
"""


def test_timed_waits_that_time_out_say_so_as_without_corecast(build, lib):
    """A timed wait's answer is the C library's: ETIMEDOUT from a condition variable or a
    semaphore whose deadline passed (a wrapper that answered 0 woke a program with nothing
    to take)."""
    exe = build("timed_out", TIMED_OUT_C, "-pthread")
    plain = subprocess.run([str(exe)], env=clean_env(), capture_output=True, timeout=HANG)
    measured = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True, timeout=HANG)
    assert plain.stdout.count(b"ETIMEDOUT") == 8, plain.stdout
    assert (measured.returncode, measured.stdout) == (plain.returncode, plain.stdout), measured.stderr
    assert b"corecast: pid " in measured.stderr
