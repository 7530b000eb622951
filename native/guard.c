/* The exit guard, which the exit report (lifecycle.c) puts in place and takes away. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "guard.h"
#include "text.h"

/* While the exit report runs (and for the rest of the exit if the model was left behind),
 * a fatal signal raised on corecast's own threads must not decide how the program ends.
 * The sampler, faulting inside the model, parks (the exiting thread goes on, flushes the
 * program's streams and exits with its own status), with a bounded wait in case the fault
 * left a lock held; the exiting thread, faulting in the C report, ends the process with
 * the program's status.  Faults on the program's threads get their own handling back. */
static struct sigaction guard_old[CC_NFATAL];
static volatile int guard_status, guard_tid, guard_on;
static volatile int reported_tid; /* the thread that made the report, once it is over */

/* Whether thread ``tid`` is blocked in a futex wait (a lock, perhaps one the faulted
 * sampler holds), or that cannot be told (1).  From the guard's handler: async-signal-safe,
 * and only in a table of our own (the file opened is not one of the program's numbers). */
static int blocked_on_futex(int tid) {
    if (!cc_own_table_here())
        return 1;
    char path[48] = "/proc/self/task/", *p = path + 16;
    cc_put_decimal(&p, tid);
    memcpy(p, "/syscall", 9);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    char buf[24];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 1;
    long nr = 0;
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        nr = nr * 10 + (buf[i] - '0');
    return buf[0] >= '0' && buf[0] <= '9' && nr == SYS_futex; /* "running": it goes on */
}

void cc_guard_restore(void) {
    if (!__atomic_exchange_n(&guard_on, 0, __ATOMIC_ACQ_REL))
        return;
    for (int i = 0; i < CC_NFATAL; i++)
        sigaction(cc_fatal_signals[i], &guard_old[i], NULL);
}

static void guard_handler(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    int tid = (int)syscall(SYS_gettid);
    int apart = tid == cc_apart_tid(); /* the exiting thread's file work (apart.c) */
    /* Sent (kill, sigqueue, another process's tgkill: a watchdog's SIGABRT), not a fault of
     * corecast's: the program's to take, as bare (it exited 0 instead of dying of it).  An
     * abort() of ours is a tgkill from this process. */
    int sent = si->si_code <= 0 && !(si->si_code == SI_TKILL && si->si_pid == getpid());
    /* The sampler takes one sent only in the model, which must let faults through (a blocked
     * fault is forced to its default action): that one stays ours, and the program exits with
     * its status, as where it blocks the signal everywhere and it would have stayed pending. */
    if (cc_sampler_is(tid) || (!sent && (tid == guard_tid || apart))) {
        static const char msg[] = "corecast: warning: fatal signal in corecast's exit report; "
                                  "the program's exit status is kept\n";
        cc_report_write(msg, sizeof msg - 1); /* async-signal-safe */
        if (tid != guard_tid && !apart) {
            cc_sampler_failed();
            /* The exiting thread normally ends us first.  Ended here, with the program's
             * status, after 10 s in which it has not: in case the fault left a lock held
             * that it waits for.  Once the report is over (a quiet exit left the sampler in
             * a window's model run), the program's own exit handlers may run longer than
             * that: only 10 s of it waiting on a futex end it, not a handler that sleeps or
             * writes (its output and the handlers after it would be cut). */
            for (int waited = 0; waited < 100;) {
                struct timespec step = {0, 100000000L};
                nanosleep(&step, NULL);
                int after = reported_tid;
                waited = after && !blocked_on_futex(after) ? 0 : waited + 1;
            }
        }
        syscall(SYS_exit_group, guard_status);
    }
    cc_guard_restore();
    /* A fault re-executes under the program's own disposition; a sent signal is sent again. */
    if (si->si_code <= 0)
        syscall(SYS_tgkill, getpid(), tid, sig);
}

void cc_guard_install(int status) {
    guard_status = status & 0xff;
    guard_tid = (int)syscall(SYS_gettid);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < CC_NFATAL; i++)
        sigaction(cc_fatal_signals[i], &sa, &guard_old[i]);
    guard_on = 1;
}

void cc_guard_report_over(void) {
    reported_tid = guard_tid;
    guard_tid = 0;
}
