"""Threads made with small stacks (pthread_attr_setstacksize) and deep recursion: what
corecast's wrappers put on the program's stack must not overflow one that holds the
program's own calls without corecast (session hs43's host-safety pass)."""
from __future__ import annotations

import pytest

from .helpers import clean_env, run_bounded

HANG = 120  # the programs end at once; a hang is what this catches (never a speed check)

SMALL_STACK_EXEC_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static char *self;
static int direct;
/* A worker made with a 32 KiB stack forks and execs (a thread pool's spawn), or execs
 * itself: glibc's exec needs a few hundred bytes of it. */
static void *worker(void *arg) {
    char *argv[] = {self, "child", NULL};
    if (direct) {
        execv(self, argv);
        return NULL;
    }
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        execv(self, argv);
        _exit(99);
    }
    int st;
    waitpid(p, &st, 0);
    printf("child: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return arg;
}
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "child")) {
        printf("exec'd image ran\n");
        return 7;
    }
    self = argv[0];
    direct = argc > 1 && !strcmp(argv[1], "direct");
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 32768);
    pthread_t t;
    if (pthread_create(&t, &at, worker, NULL))
        return 3;
    pthread_join(t, NULL);
    return 0;
}
"""


@pytest.mark.parametrize("how", ["fork", "direct"])
def test_exec_from_a_thread_with_a_small_stack(build, lib, how):
    """The exec wrappers held a 4096-pointer array (32 KiB) on the caller's stack for the
    environment they mark after a warning: a 32 KiB thread's exec died of SIGSEGV (the
    forked child: `child: signal 11`), where glibc's exec needs a few hundred bytes."""
    exe = build("small_stack_exec", SMALL_STACK_EXEC_C, "-pthread")
    args = [exe] + (["direct"] if how == "direct" else [])
    bare = run_bounded(args, clean_env(), HANG)
    held = run_bounded(args, clean_env(LD_PRELOAD=str(lib)), HANG)
    assert bare.stdout == (b"exec'd image ran\nchild: exit 7\n" if how == "fork" else b"exec'd image ran\n")
    assert (held.returncode, held.stdout) == (bare.returncode, bare.stdout), held.stderr.decode(errors="replace")[-2000:]
