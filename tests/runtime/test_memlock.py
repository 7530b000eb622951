"""A program that locks its memory (mlockall) under RLIMIT_MEMLOCK: corecast's static
tables (13 MB of thread slots, regions and the model's records) counted toward the limit
as the program's own, so mlockall(MCL_CURRENT) under the default 8 MiB failed with ENOMEM
for an unprivileged user under corecast alone.  The tables are now mapped as they are
first used (native/lazy.c); what a locked program leaves no room for is not recorded."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from .helpers import TIMEOUT, clean_env, run

# What both programs share: VmLck and friends from /proc, and two threads' work.
PRELUDE_C = r"""
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
static long status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key));
    if (f) fclose(f);
    return v;
}
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *work(void *arg) {
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&m); counter++; pthread_mutex_unlock(&m); }
    return arg;
}
/* Two threads on 64 KiB stacks, run and joined; 1 if one could not start. */
static int two_threads(void) {
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 64 * 1024);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], &at, work, NULL)) { printf("pthread_create failed\n"); return 1; }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    return 0;
}
"""

LOCK_C = PRELUDE_C + r"""
/* argv[1]: "lock" (report VmLck), or kB to leave free under the limit before 2 threads run. */
int main(int argc, char **argv) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE)) { printf("mlockall: %s\n", strerror(errno)); return 3; }
    if (!strcmp(argv[1], "lock")) { printf("VmLck %ld\n", status_kb("VmLck:")); return 0; }
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    long take = (long)(rl.rlim_cur / 1024) - status_kb("VmLck:") - atol(argv[1]);
    if (take > 0 && mmap(NULL, take * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED) {
        printf("fill: %s\n", strerror(errno));
        return 4;
    }
    if (two_threads()) return 5;
    printf("counter %ld\n", counter);
    return 0;
}
"""


@pytest.fixture(scope="module")
def locker(build):
    return build("locker", LOCK_C, "-pthread")


def test_mlockall_locks_little_beyond_the_programs_own(locker, lib):
    """What mlockall(MCL_CURRENT) locks under corecast, beyond a plain run's: 13.1 MB before
    the tables were mapped on need (VmLck 15552 kB against 2444 kB), 612 kB now (3056 kB: the
    library's code and small tables).  Measured as any user: the count needs no limit."""
    plain = run([locker, "lock"])
    measured = run([locker, "lock"], preload=lib)
    assert plain.returncode == measured.returncode == 0, measured.stdout + measured.stderr

    def locked(proc: subprocess.CompletedProcess) -> int:  # kB
        return int(proc.stdout.split()[1])

    assert locked(measured) - locked(plain) < 2048, (locked(plain), locked(measured))


LIMIT_KB = 8192  # the usual default RLIMIT_MEMLOCK


@pytest.fixture(scope="module")
def unprivileged(locker, lib):
    """``run(args, preload)``: the program under `ulimit -l 8192`, as a user the limit binds
    (root's CAP_IPC_LOCK ignores it: as root, through setpriv to nobody), from a folder that
    user can read; skips where that cannot be arranged."""
    yield from _unprivileged(locker, lib)


def _unprivileged(locker, lib):
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv is not installed: no unprivileged user to run as")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        prefix = []
    folder = Path(tempfile.mkdtemp(prefix="corecast-memlock-"))
    folder.chmod(0o755)
    exe, so = folder / "locker", folder / lib.name
    shutil.copy2(locker, exe)
    shutil.copy2(lib, so)  # the model beside it is not needed: none starts under the limit
    exe.chmod(0o755)
    so.chmod(0o755)

    def _run(args: list[str], preload: bool) -> subprocess.CompletedProcess:
        env = clean_env(CORECAST_WINDOW_MS="20")
        pre = f"LD_PRELOAD={so} " if preload else ""
        script = f"ulimit -l {LIMIT_KB} || exit 97; {pre}exec {exe} {' '.join(args)}"
        return subprocess.run([*prefix, "/bin/sh", "-c", script], env=env, cwd=folder, capture_output=True,
                              timeout=TIMEOUT)

    probe = _run(["lock"], False)
    if probe.returncode == 97 or probe.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"no plain mlockall under `ulimit -l {LIMIT_KB}` here: {probe.stdout!r} {probe.stderr!r}")
    yield _run
    shutil.rmtree(folder, ignore_errors=True)


def test_mlockall_under_the_default_limit_succeeds_as_without_corecast(unprivileged):
    """The program's mlockall(MCL_CURRENT | MCL_FUTURE) under 8 MiB: it failed with ENOMEM
    under corecast (the kernel checks the whole address space against the limit: 15.6 MB
    with the static tables) and succeeded without it."""
    plain = unprivileged(["lock"], False)
    measured = unprivileged(["lock"], True)
    assert measured.returncode == plain.returncode == 0, (measured.stdout, measured.stderr)
    assert measured.stdout.startswith(b"VmLck ")


@pytest.mark.parametrize("room_kb", [64, 256, 1200, 1536, 3072, 6144])
def test_a_locked_program_with_no_room_left_runs_as_without_corecast(unprivileged, room_kb):
    """After mlockall(MCL_FUTURE) every mapping is locked, and one past the limit is refused:
    the program leaves ``room_kb`` free, then runs two threads (64 kB of room is too little
    for their stacks, with corecast or without).  Whatever of corecast's mappings are
    refused (a thread slot, the sampler's stack, its records, the exit's records), the
    program's output and status are its own, and corecast says at most that it has no
    predictions."""
    plain = unprivileged([str(room_kb)], False)
    assert plain.stdout in (b"counter 200000\n", b"pthread_create failed\n"), plain
    measured = unprivileged([str(room_kb)], True)
    assert measured.returncode == plain.returncode, (measured.stdout, measured.stderr)
    assert measured.stdout == plain.stdout
    err = measured.stderr.decode(errors="replace")
    assert "Traceback" not in err and "fatal" not in err, err
    if "corecast: pid " not in err:  # no report: a line says why
        assert "no predictions: corecast's exit records" in err, err


# The program's own budget after mlockall(MCL_CURRENT | MCL_FUTURE): two threads run and are
# joined, then it maps what the limit leaves it (its locked kB before the threads, less
# argv[1] kB for their stacks; "lock": mlockall alone).  VmLck on stderr.
ROOM_C = PRELUDE_C + r"""
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (mlockall(MCL_CURRENT | MCL_FUTURE)) { printf("mlockall: %s\n", strerror(errno)); return 3; }
    if (!strcmp(argv[1], "lock")) return 0; /* the fixture's probe */
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    long before = status_kb("VmLck:");
    if (two_threads()) return 5;
    long want = (long)(rl.rlim_cur / 1024) - before - atol(argv[1]);
    void *p = mmap(NULL, want * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("counter %ld, buffer %s\n", counter, p == MAP_FAILED ? strerror(errno) : "mapped");
    fprintf(stderr, "VmLck before %ld after %ld\n", before, status_kb("VmLck:"));
    return p == MAP_FAILED;
}
"""


@pytest.fixture(scope="module")
def unprivileged_room(build, lib):
    yield from _unprivileged(build("lock_room", ROOM_C, "-pthread"), lib)


def test_corecasts_own_memory_takes_nothing_of_a_locked_programs_budget(unprivileged_room):
    """After mlockall(MCL_FUTURE) every new mapping is locked and counted against the
    program's RLIMIT_MEMLOCK: corecast's (the sampler's 1 MB stack, the thread slots, its
    records) took 1.2 MB of it for good, and the program's later buffer, which fits without
    corecast, was refused (EAGAIN).  Corecast's mappings now come unlocked (lazy.c's cc_map,
    the sampler's stack mapped by it)."""
    plain = unprivileged_room(["400"], False)
    assert plain.returncode == 0 and plain.stdout == b"counter 200000, buffer mapped\n", plain
    measured = unprivileged_room(["400"], True)
    assert measured.stdout == plain.stdout, (measured.stdout, measured.stderr)
    assert measured.returncode == 0


def test_a_locked_program_is_told_why_the_model_did_not_start(build, lib):
    """Under RLIMIT_MEMLOCK, after the program's mlockall(MCL_FUTURE), the model's libraries
    (tens of MB, each mapping locked) do not fit and dlopen says "failed to map segment from
    shared object": the exit said that alone, which reads as a broken install.  As root
    without CAP_IPC_LOCK (the limit binds it, and the model's Python under /root stays
    readable), the program's output and status are a plain run's and the line says why."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv (to drop CAP_IPC_LOCK)")
    exe = build("lock_room", ROOM_C, "-pthread")
    prefix = [setpriv, "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock"]

    def go(preload: bool) -> subprocess.CompletedProcess:
        pre = f"LD_PRELOAD={lib} " if preload else ""
        script = f"ulimit -l {LIMIT_KB} || exit 97; {pre}exec {exe} 400"
        return subprocess.run([*prefix, "/bin/sh", "-c", script], env=clean_env(CORECAST_WINDOW_MS="20"),
                              capture_output=True, timeout=TIMEOUT)

    plain = go(False)
    if plain.returncode != 0:
        pytest.skip(f"no plain mlockall under `ulimit -l {LIMIT_KB}` without CAP_IPC_LOCK: {plain!r}")
    measured = go(True)
    assert (measured.returncode, measured.stdout) == (0, plain.stdout), measured
    err = measured.stderr.decode()
    if "no predictions: the model could not start" not in err:
        pytest.skip(f"the model started under the limit here: {err[-300:]}")
    assert "the program locks its memory (mlockall) and RLIMIT_MEMLOCK has no room for it" in err, err
