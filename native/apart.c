/* The exit's file work in a descriptor table of its own.
 *
 * The exit report runs on the program's exiting thread while its other threads still run.
 * What it opens there (every thread's /proc files and the objects' symbol tables for the
 * last sample, the JSON Lines file) takes the program's lowest free numbers: a thread that
 * opened a file meanwhile got another number than without corecast, and one that closed
 * every descriptor above 2 and reopened its data file on the number of ours had our JSON
 * Lines written into that file, or our /proc reads move its offset.
 *
 * So that work runs in a task that shares everything with the exiting thread but its
 * descriptor table (clone without CLONE_FILES: a copy of the program's table, dropped when
 * the task ends).  The exiting thread waits, every signal blocked, so the task can run on
 * its stack's thread state (TLS, errno, the malloc cache) as the thread itself would: one
 * of the two runs at a time.  No pthread_create: its stack cache lock may be held by the
 * thread a signal handler calls _exit on.  Where the task cannot start (RLIMIT_NPROC,
 * ulimit -v) the work runs on the exiting thread, as before. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "futex.h"
#include "lazy.h"

#define APART_STACK ((size_t)512 << 10)

struct apart_job {
    void (*fn)(void *);
    void *arg;
    double cpu_s; /* the task's CPU time */
    sigset_t mask; /* the task's signal mask */
};

static int apart_tid; /* the task while it runs: the exit guard's, not the program's */

int cc_apart_tid(void) { return __atomic_load_n(&apart_tid, __ATOMIC_ACQUIRE); }

static int apart_main(void *p) {
    struct apart_job *job = p;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &job->mask, NULL, _NSIG / 8);
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    job->fn(job->arg);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    job->cpu_s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    return 0;
}

/* Valgrind runs no clone() but a thread library's or fork's: it ends the program, with
 * status 1, where the task would start ("Unsupported clone() flags").  Its core preloads
 * its vgpreload_*.so into every program it runs: seen at start, the work stays on the
 * exiting thread there, as before. */
static int apart_refused;

__attribute__((constructor)) static void apart_look(void) {
    const char *p = getenv("LD_PRELOAD");
    apart_refused = p && strstr(p, "vgpreload_") != NULL;
}

/* The kernel counts an ended thread's task off (release_task) a little after its last
 * user-space step (the CLONE_CHILD_CLEARTID wake included), and before its tid is gone from
 * the thread group: waits for that. */
int cc_counted_off(int tid, double deadline) {
    while (tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) == 0 && cc_mono_s() < deadline) {
        struct timespec step = {0, 20000};
        nanosleep(&step, NULL);
    }
    return 1;
}

int cc_try_apart(void (*fn)(void *), void *arg, double *cpu_s) {
    int saved = errno;
    *cpu_s = 0;
    char *stack = apart_refused ? MAP_FAILED
                                : mmap(NULL, APART_STACK, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        errno = saved;
        return 0;
    }
    cc_unlock(stack, APART_STACK); /* after the program's mlockall(MCL_FUTURE): not its budget (lazy.c) */
    struct apart_job job = {fn, arg, 0, {{0}}};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* The task takes no signal the program handles (those wait for the exiting thread's
     * mask to come back), but the faults the exiting thread lets through reach the exit
     * guard from it (lifecycle.c), as they would from that thread: a blocked fault is
     * forced to its default action.  One the program blocks there stays blocked: a `kill
     * -ABRT` left pending must not be taken. */
    sigfillset(&job.mask);
    for (int i = 0; i < CC_NFATAL; i++)
        if (!sigismember(&old, cc_fatal_signals[i]))
            sigdelset(&job.mask, cc_fatal_signals[i]);
    /* ``done`` is cleared by the kernel, with a futex wake, when the task ends
     * (CLONE_CHILD_CLEARTID); ``apart_tid`` set by it before the task runs.  The caller's
     * own: two threads' tasks (a dlclose's naming beside the exit report) each end alone. */
    int done = 1;
    int tid = clone(apart_main, stack + APART_STACK,
                    CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | CLONE_PARENT_SETTID |
                        CLONE_CHILD_CLEARTID,
                    &job, &apart_tid, NULL, &done);
    if (tid > 0) {
        int v;
        while ((v = __atomic_load_n(&done, __ATOMIC_ACQUIRE)) != 0)
            syscall(SYS_futex, &done, FUTEX_WAIT, v, NULL, NULL, 0); /* shared: the kernel's wake */
        /* Its task is the user's again before the caller goes on: under `ulimit -u` at the
         * program's own threads the first look's task, still counted, took the sampler's
         * start, and then the program's pthread_create found none to give back. */
        cc_counted_off(tid, cc_mono_s() + 1.0);
    }
    int mine = tid; /* not another caller's task, still running */
    __atomic_compare_exchange_n(&apart_tid, &mine, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(stack, APART_STACK);
    errno = saved;
    *cpu_s = job.cpu_s;
    return tid > 0;
}

double cc_run_apart(void (*fn)(void *), void *arg) {
    double cpu_s;
    if (!cc_try_apart(fn, arg, &cpu_s))
        fn(arg);
    return cpu_s;
}
