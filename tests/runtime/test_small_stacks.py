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


RECURSIVE_REGIONS_C = r"""
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
/* A region a level: the nested ones are inactive (teams of one), as libgomp runs them
 * without nested parallelism, on the forking thread's stack. */
static long levels(int d) {
    if (d == 0)
        return 0;
    long s = 0;
#pragma omp parallel reduction(+ : s)
    if (omp_get_thread_num() == 0)
        s += 1 + levels(d - 1);
    return s;
}
static void *deep(void *arg) {
    printf("levels: %ld\n", levels((int)(long)arg));
    return NULL;
}
static void *small(void *arg) {
    long s = 0;
#pragma omp parallel for reduction(+ : s)
    for (long i = 0; i < 1000; i++)
        s += i;
    printf("small-stack thread: %ld\n", s);
    return arg;
}
int main(int argc, char **argv) {
    /* 8 MiB (the usual main stack, whatever this ulimit -s) for the recursion; for the
     * other, the smallest stack a thread may have, which holds libgomp's fork */
    int recursion = argv[1][0] == 'r';
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, recursion ? 8 << 20 : 16384);
    pthread_t t;
    if (pthread_create(&t, &at, recursion ? deep : small, recursion ? (void *)atol(argv[2]) : NULL))
        return 3;
    pthread_join(t, NULL);
    return 0;
}
"""


@pytest.mark.parametrize("how", ["recursion", "thread"])
def test_a_parallel_region_takes_little_of_the_forking_threads_stack(build, lib, how):
    """The region wrapper kept room for 256 members on the forking thread's stack (8 KiB a
    call): 3000 levels of recursion through a nested, inactive region, or one region forked
    from a thread made with a 16 KiB stack, died of SIGSEGV under corecast, and ran bare
    (a thread's 8 MiB stack holds the first at about 100 bytes a level; with corecast's
    trampoline about 1 KiB).  Now the room is the team's: two members here."""
    exe = build("recursive_regions", RECURSIVE_REGIONS_C, "-fopenmp", "-pthread")
    args = [exe, "recursion", "3000"] if how == "recursion" else [exe, "thread"]
    env = clean_env(OMP_NUM_THREADS="2")
    bare = run_bounded(args, env, HANG)
    held = run_bounded(args, {**env, "LD_PRELOAD": str(lib)}, HANG)
    assert bare.returncode == 0 and bare.stdout == (b"levels: 3000\n" if how == "recursion"
                                                    else b"small-stack thread: 499500\n"), bare
    assert (held.returncode, held.stdout) == (bare.returncode, bare.stdout), held.stderr.decode(errors="replace")[-2000:]
    assert b"corecast: pid " in held.stderr
