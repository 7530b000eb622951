"""Calls the kernel allows only a process of one thread (docs/promise.md, "Its end"):
unshare(CLONE_NEWUSER) and setns into a user or mount namespace fail with EINVAL while
another thread shares the process (or its working directory).  corecast's sampler and
keeper are such threads: a program that is its only thread (it let its stderr go to a log
before any thread, or joined its workers) was refused under corecast and not without it
(session hs45: exit 3 in 3 of 3 runs each, 0 bare).  Now such a refusal has them give their
threads back, as a pthread_create short of tasks does, and the call is tried again."""
from __future__ import annotations

import subprocess

import pytest

from .helpers import TIMEOUT, clean_env

# MODE 0: lets its stderr go (a keeper starts), no thread.  MODE 1: two workers made and
# joined (the sampler runs).  MODE 2: a worker still alive: refused, with corecast or not.
# A joined thread's task goes a little after pthread_join returns (the kernel refuses until
# it has gone, bare too), so a refusal is tried again for up to 2 s before it counts.
SOLO_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static volatile int stop, spinning;
static void *spin(void *a) { volatile long x = 0; spinning = 1; while (!stop) x++; return a; }
static void *work(void *a) { volatile long x = 0; for (long i = 0; i < 2000000; i++) x += i; return a; }
static int again(int r) {
    static int tries;
    return r == -1 && errno == EINVAL && tries++ < 200 && usleep(10000) == 0;
}
int main(int argc, char **argv) {
    int mode = atoi(argv[1]), call = atoi(argv[2]);
    pthread_t t[2];
    if (mode == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2);
        close(null);
    } else if (mode == 1) {
        for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    } else {
        pthread_create(&t[0], NULL, spin, NULL);
        while (!spinning) usleep(1000); /* alive: counted as the program's */
    }
    int r, ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    do
        r = call == 0 ? unshare(CLONE_NEWUSER) : setns(ns, CLONE_NEWNS);
    while (mode != 2 && again(r));
    int e = errno;
    printf("%s: %s\n", call == 0 ? "unshare" : "setns", r == 0 ? "ok" : strerror(e));
    if (mode == 2) { stop = 1; pthread_join(t[0], NULL); }
    return r == 0 ? 0 : 3;
}
"""

CALLS = {"unshare": "0", "setns": "1"}


@pytest.fixture(scope="module")
def solo(build):
    return build("solo_calls", SOLO_C, "-pthread")


def _bare_or_skip(exe, mode: str, call: str) -> subprocess.CompletedProcess:
    plain = subprocess.run([str(exe), mode, CALLS[call]], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    if plain.returncode != 0:
        pytest.skip(f"{call} is refused here without corecast too: {plain.stdout.decode().strip()}")
    return plain


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("mode, holder", [("0", "keeper"), ("1", "sampler")])
def test_a_program_alone_may_enter_a_namespace(solo, lib, call, mode, holder):
    """The program is its only thread but for corecast's: the call succeeds as without
    corecast, in every run; the thread given back says so in one line."""
    plain = _bare_or_skip(solo, mode, call)
    for _ in range(10):
        got = subprocess.run([str(solo), mode, CALLS[call]], env=clean_env(LD_PRELOAD=str(lib)),
                             capture_output=True, timeout=TIMEOUT)
        assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout), got.stderr
        err = got.stderr.decode()  # the keeper says so through its copy, before it ends
        assert f"corecast's {holder}" in err and "gave its thread back" in err and "only thread" in err, err
        if mode == "1":  # the keeper's report has no path to reopen: a pipe's is lost
            assert err.count("corecast: pid ") == 1, err


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_program_with_threads_of_its_own_is_refused_and_keeps_the_sampler(solo, lib, call):
    """A worker of the program's is alive: refused (EINVAL) with corecast or not, and the
    sampler, which could not make the call succeed, stays."""
    _bare_or_skip(solo, "1", call)  # the call itself is allowed here
    plain = subprocess.run([str(solo), "2", CALLS[call]], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    got = subprocess.run([str(solo), "2", CALLS[call]], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True,
                         timeout=TIMEOUT)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, f"{call}: Invalid argument\n".encode())
    err = got.stderr.decode()
    assert "gave its thread back" not in err and err.count("corecast: pid ") == 1, err
