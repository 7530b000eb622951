"""A signal handler that lets the program's stderr go (docs/promise.md, "Where the report
goes"): close and dup2 are async-signal-safe, so a handler may call them wherever the signal
lands.  Before the sampler holds a copy of the original stderr, their wrappers start a
keeper thread (native/channel.c, cc_channel_before_release) with pthread_create, which is
not: glibc allocates the new thread's TLS vector with calloc there.  A handler that ran while
the program was inside malloc re-entered malloc: with glibc's own allocator (single-threaded:
no lock) 3 of 100 runs of a malloc-heavy program whose SIGALRM handler does dup2 died
(SIGABRT, SIGSEGV), 0 of 200 bare (session hs45); with an allocator of the program's that
refuses re-entry, every run.  Not fixed: a keeper made without the C library's thread start
(a raw clone that touches no TLS, its writes by raw system calls) is a rewrite of the keeper.
Strict xfail: it passes once the keeper starts so."""
from __future__ import annotations

import subprocess

import pytest

from .helpers import TIMEOUT, clean_env

# The program's own allocator (as jemalloc's or a pool's: not async-signal-safe) says so and
# ends (86) if a signal handler enters it while busy; its 100th malloc raises the signal.
# -fno-builtin: gcc would make calloc's malloc-and-memset a call to calloc itself.
REENTRY_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
/* The program's own allocator (as jemalloc's or a pool's: not async-signal-safe), which
 * says so and ends if a signal handler enters it while it is busy. */
static char heap[64 << 20];
static size_t used;
static volatile int busy, calls, null_fd = -1;
static void reentered(void) {
    static const char m[] = "malloc entered from a signal handler\n";
    write(1, m, sizeof m - 1);
    _exit(86);
}
void *malloc(size_t n) {
    if (busy) reentered();
    busy = 1;
    if (++calls == 100) raise(SIGUSR1); /* the signal lands while malloc is busy */
    n = (n + 15) & ~(size_t)15;
    void *p = used + n + 16 <= sizeof heap ? heap + used + 16 : NULL;
    if (p) { *(size_t *)((char *)p - 16) = n; used += n + 16; }
    busy = 0;
    return p;
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b) { void *p = malloc(a * b); if (p) memset(p, 0, a * b); return p; }
void *realloc(void *p, size_t n) {
    void *q = malloc(n);
    if (q && p) { size_t old = *(size_t *)((char *)p - 16); memcpy(q, p, old < n ? old : n); }
    return q;
}
/* A handler that lets stderr go: dup2 is async-signal-safe. */
static void let_go(int s) { (void)s; dup2(null_fd, 2); }
int main(void) {
    null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = let_go;
    sigaction(SIGUSR1, &sa, NULL);
    unsigned long sum = 0;
    for (int i = 0; i < 1000; i++) { char *p = malloc(32); p[0] = (char)i; sum += (unsigned char)p[0]; }
    char line[64];
    int n = snprintf(line, sizeof line, "sum %lu\n", sum);
    write(1, line, n);
    return 0;
}
"""


@pytest.mark.xfail(strict=True, reason="the keeper starts with pthread_create, which mallocs, inside the handler")
def test_a_handler_that_lets_stderr_go_does_not_enter_malloc(build, lib):
    exe = build("handler_lets_stderr_go", REENTRY_C, "-fno-builtin")
    plain = subprocess.run([str(exe)], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert plain.returncode == 0 and plain.stdout.startswith(b"sum "), plain
    for _ in range(3):  # stderr a pipe of its own: dup2 lets the original go, a keeper starts
        got = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), capture_output=True, timeout=TIMEOUT)
        assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout), (got.stdout, got.stderr)
