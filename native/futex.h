/* Waiting on a word: the sampler's commands and answers, the report channel's mailbox and
 * keeper, the schedstat table's lock.  Async-signal-safe (one system call). */
#ifndef CC_FUTEX_H
#define CC_FUTEX_H
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A futex operation on a private word; ``timeout_s`` < 0: none (a wait sleeps until woken). */
static inline long cc_futex(int *word, int op, int val, double timeout_s) {
    struct timespec ts = {(time_t)timeout_s, (long)((timeout_s - (time_t)timeout_s) * 1e9)};
    return syscall(SYS_futex, word, op, val, timeout_s >= 0 ? &ts : NULL, NULL, 0);
}
#endif
