"""The sampler thread's life against the program's (docs/promise.md): a user's task limit
(RLIMIT_NPROC, `ulimit -u`) at exactly the threads the program makes, which the sampler's
thread used to exhaust (the program's own pthread_create failed with EAGAIN), and an exit
without a sampler (a forked child's that could not start), which started the model on the
exiting thread, in the program's descriptor table.  Each case runs the same program
without and with corecast and compares."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from corecast._native import PRELOAD

from .helpers import TIMEOUT, clean_env
from .test_host_edges import OPEN_SPY_C

# Every thread lives until the last is made: the program needs its 4 at once.
THREADS4_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static pthread_barrier_t all;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg) {
    pthread_barrier_wait(&all);
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&mu); total += (long)arg; pthread_mutex_unlock(&mu); }
    return NULL;
}
int main(void) {
    pthread_t t[4];
    pthread_barrier_init(&all, NULL, 5);
    for (long i = 0; i < 4; i++) {
        int r = pthread_create(&t[i], NULL, work, (void *)(i + 1));
        if (r) { printf("create %ld: %s\n", i, strerror(r)); return 9; }
    }
    pthread_barrier_wait(&all);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    printf("total %ld\n", total);
    return 3;
}
"""

# libgomp's pool: a thread it cannot make ends the program ("Thread creation failed").
OMP4_C = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int r = 0; r < 20; r++) {
#pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 100000; i++) s += i * 0.5;
    }
    int n = 0;
#pragma omp parallel
    {
#pragma omp atomic
        n++;
    }
    printf("sum %.1f threads %d\n", s, n);
    return 3;
}
"""


def _uid_in_use(uid: int) -> bool:
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Uid:") and str(uid) in line.split()[1:]:
                return True
    return False


@pytest.fixture(scope="module")
def as_user():
    """``as_user(cmd, nproc)``: argv that runs ``cmd`` as a user of its own (a uid no
    process has, so that the task count is the program's alone) under ``ulimit -u nproc``."""
    setpriv, prlimit = shutil.which("setpriv"), shutil.which("prlimit")
    if os.geteuid() != 0 or not setpriv or not prlimit:
        pytest.skip("needs root, setpriv and prlimit to run as an unprivileged user under a task limit")
    uid = 3_000_000 + os.getpid() % 100_000
    while _uid_in_use(uid):
        uid += 1

    def _argv(cmd: list, nproc: int) -> list[str]:
        return [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", prlimit, f"--nproc={nproc}",
                *[str(c) for c in cmd]]

    probe = subprocess.run(_argv(["true"], 100), capture_output=True, timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip(f"cannot run as an unprivileged user here: {probe.stderr.decode().strip()}")
    return _argv


@pytest.fixture(scope="module")
def shared_dir(lib):
    """A folder any user can read, with the preload library and its model library."""
    folder = Path(tempfile.mkdtemp(prefix="corecast-tasklimit-"))
    os.chmod(folder, 0o755)
    for so in Path(PRELOAD).parent.glob("*.so"):
        shutil.copy2(so, folder / so.name)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _readable_copy(path: Path, folder: Path) -> Path:
    dest = folder / path.name
    shutil.copy2(path, dest)
    os.chmod(dest, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return dest


def _least_tasks(as_user, exe: Path, env: dict, good: int) -> int:
    """The smallest task limit under which the plain program exits ``good``."""
    for nproc in range(1, 16):
        r = subprocess.run(as_user([exe], nproc), env=env, capture_output=True, timeout=TIMEOUT)
        if r.returncode == good:
            return nproc
    pytest.fail("the plain program never ran under a task limit of 15")


def _at_its_limit(as_user, exe: Path, env: dict, shared_dir: Path) -> tuple[int, subprocess.CompletedProcess]:
    """The least task limit the plain program (exit 3) runs under, its plain run there, and
    ``env`` given the library to preload (skips where the limit does not bind)."""
    nproc = _least_tasks(as_user, exe, env, 3)
    if nproc <= 2:
        pytest.skip("the task limit does not bind here")
    plain = subprocess.run(as_user([exe], nproc), env=env, capture_output=True, timeout=TIMEOUT)
    env["LD_PRELOAD"] = str(shared_dir / Path(PRELOAD).name)
    return nproc, plain


@pytest.mark.parametrize("kind", ["pthreads", "openmp"])
def test_a_program_at_its_task_limit_makes_all_its_threads(build, as_user, shared_dir, kind):
    """`ulimit -u` at exactly the tasks the program needs.  The sampler's thread took the
    last one, and the program's own pthread_create failed (exit 9 here; libgomp ends the
    program with status 1).  Now the EAGAIN makes the sampler end and give its task back,
    and the call is tried again: the program runs as without corecast, and the exit still
    reports what was sampled (no model: the exit's own task finds no slot either while
    libgomp's pool lives, and says so)."""
    exe = (build("tasks4", THREADS4_C, "-pthread") if kind == "pthreads"
           else build("omp_tasks4", OMP4_C, "-fopenmp"))
    exe = _readable_copy(exe, shared_dir)
    env = clean_env(OMP_NUM_THREADS="4", OMP_WAIT_POLICY="passive")
    nproc, plain = _at_its_limit(as_user, exe, env, shared_dir)
    for _ in range(5):  # the sampler's end races the program's next create: a few tries
        got = subprocess.run(as_user([exe], nproc), env=env, capture_output=True, timeout=TIMEOUT)
        err = got.stderr.decode()
        assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, plain.stdout), err
        assert "corecast: pid " in err and "ran out of tasks" in err, err
        if kind == "openmp":
            assert "the model was not run: corecast had no thread of its own" in err, err


# One worker: the program needs two tasks, its main thread's and this one's.
ONE_WORKER_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static volatile double sink;
static void *work(void *arg) {
    for (long i = 0; i < 1000000; i++) sink += i;
    return arg;
}
int main(void) {
    pthread_t t;
    int r = pthread_create(&t, NULL, work, NULL);
    if (r) { printf("create: %s\n", strerror(r)); return 9; }
    pthread_join(t, NULL);
    printf("joined\n");
    return 3;
}
"""


def test_a_program_that_needs_two_tasks_makes_its_thread(build, as_user, shared_dir):
    """`ulimit -u 2` and a program of one worker.  The first parallel activity's look runs in
    a task apart (apart.c), which the kernel counts off a little after the look ends: the
    sampler's start came first and failed for want of a task, so nothing of corecast's held
    one to give back, and the program's own pthread_create failed (exit 9, 19 of 20 runs).
    A task apart is counted off before its caller goes on."""
    exe = _readable_copy(build("tasks_one_worker", ONE_WORKER_C, "-pthread"), shared_dir)
    env = clean_env()
    plain = subprocess.run(as_user([exe], 2), env=env, capture_output=True, timeout=TIMEOUT)
    alone = subprocess.run(as_user([exe], 1), env=env, capture_output=True, timeout=TIMEOUT)
    if alone.returncode == 3:
        pytest.skip("the task limit does not bind here")
    assert (plain.returncode, plain.stdout) == (3, b"joined\n"), plain
    env["LD_PRELOAD"] = str(shared_dir / Path(PRELOAD).name)
    for _ in range(10):
        got = subprocess.run(as_user([exe], 2), env=env, capture_output=True, timeout=TIMEOUT)
        err = got.stderr.decode()
        assert (got.returncode, got.stdout) == (3, b"joined\n"), err
        assert "corecast: pid " in err, err


FORKED_CHILD_C = r"""
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg) {
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&mu); total += (long)arg; pthread_mutex_unlock(&mu); }
    return NULL;
}
static void list_fds(void) { /* after corecast's exit report: registered before its handler */
    char line[1024] = "fds";
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int own = d ? dirfd(d) : -1;
    while (d && (e = readdir(d)) && strlen(line) < 900)
        if (e->d_name[0] != '.' && atoi(e->d_name) != own) { strcat(line, " "); strcat(line, e->d_name); }
    if (d) closedir(d);
    printf("%s\n", line);
}
int main(void) {
    pid_t pid = fork();
    if (pid == 0) {
        atexit(list_fds);
        pthread_t t[2];
        for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void *)(i + 1));
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
        printf("child total %ld\n", total);
        fflush(stdout);
        void (*exiting)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "spy_exiting");
        if (exiting) exiting();
        exit(4);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child status %d\n", WEXITSTATUS(st));
    return 0;
}
"""


def test_a_child_without_a_sampler_runs_the_model_apart(build, lib, tmp_path):
    """A forked child whose sampler cannot start (CORECAST_TEST_FAULT=no_sampler refuses its
    thread, as RLIMIT_NPROC does) predicts at its exit itself.  The model started there on
    the exiting thread: the interpreter's imports opened files in the program's descriptor
    table.  Now it runs in the exit's task apart (apart.c); an open() spy asks the kernel
    (kcmp) which table each open of the exit is in, and the child's descriptors after the
    report are a plain run's."""
    spy = build("open_spy", OPEN_SPY_C, "-shared", "-fPIC", "-ldl")
    exe = build("forked_child_no_sampler", FORKED_CHILD_C, "-pthread", "-ldl")
    out = tmp_path / "run.jsonl"
    plain = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(spy)), capture_output=True, timeout=TIMEOUT)
    got = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=f"{lib}:{spy}", CORECAST_OUTPUT=str(out),
                                                   CORECAST_TEST_FAULT="no_sampler"),
                         capture_output=True, timeout=TIMEOUT)
    lines = got.stdout.decode().splitlines()
    if any(line.startswith("kcmp-unavailable") for line in lines):
        pytest.skip("the kernel has no kcmp (CONFIG_KCMP)")
    assert got.returncode == plain.returncode == 0, got.stderr
    opened = [line.split(" ", 1) for line in lines if line.split(" ", 1)[0] in ("apart", "program-table")]
    assert [p for where, p in opened if where == "program-table"] == [], lines
    err = got.stderr.decode()
    if "the model could not start" not in err:  # its interpreter's imports were among them
        assert any(p.endswith((".pyc", ".py")) for where, p in opened) and "no predictions" not in err, err
    rest = [line for line in lines if line.split(" ", 1)[0] not in ("apart", "program-table")]
    assert rest == plain.stdout.decode().splitlines(), lines  # output, descriptors, status
    assert err.count("corecast: pid ") == 1, err  # the child's


# THREADS4_C after letting its stderr go before its first thread (closefd2-like): corecast
# keeps the original in a keeper thread of its own, a second task besides the sampler's.
KEEPER_THREADS4_C = THREADS4_C.replace("int main(void) {", """#include <fcntl.h>
#include <unistd.h>
int main(void) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    close(null);""", 1)


def test_a_keeper_gives_its_task_back_too(build, as_user, shared_dir):
    """A program that lets its stderr go before its first thread has corecast start a
    keeper (channel.c), which holds the original; with the sampler that is two tasks of the
    user's.  Under `ulimit -u` at exactly the program's threads the sampler gave its task
    back but the keeper did not, and the program's last pthread_create failed (exit 9).
    Now the keeper ends too, after the sampler: the program makes all its threads, and the
    report, its copy gone, reaches the stderr file by its path."""
    exe = _readable_copy(build("keeper_tasks4", KEEPER_THREADS4_C, "-pthread"), shared_dir)
    env = clean_env()
    nproc, plain = _at_its_limit(as_user, exe, env, shared_dir)
    for i in range(5):  # the threads' ends race the program's next create: a few tries
        log = shared_dir / f"keeper-stderr{i}"  # a path the user can reopen
        with open(log, "wb") as err_file:
            os.chmod(log, 0o666)
            got = subprocess.run(as_user([exe], nproc), env=env, stdout=subprocess.PIPE, stderr=err_file,
                                 timeout=TIMEOUT)
        err = log.read_text()
        assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, plain.stdout), err
        assert "corecast: pid " in err and "ran out of tasks" in err and "keeper" in err, err
