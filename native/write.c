/* corecast's own writes (the report, warnings, JSON Lines): none may change how the program
 * ends.  SIGPIPE (a reader that left) and SIGXFSZ (`ulimit -f`) are blocked around the
 * write and taken back if it raised them, where their default action would have killed the
 * program with another status; a write that would cross RLIMIT_FSIZE is not made at all
 * (the kernel would write part of a line).  Async-signal-safe: the exit guard's handler
 * writes through here.  And before the exit report's first write, the program's pending
 * output (cc_flush_program_streams). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corecast.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether ``n`` more bytes on ``fd`` would cross the file-size limit (the kernel would
 * write part and raise SIGXFSZ); only regular files have one. */
static int past_file_limit(int fd, size_t n) {
    struct rlimit rl;
    struct stat st;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    int fl = fcntl(fd, F_GETFL);
    off_t at = fl >= 0 && (fl & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
    return at >= 0 && (unsigned long long)at + n > (unsigned long long)rl.rlim_cur;
}

int cc_write_all(int fd, const char *p, size_t n, double patience_s) {
    int saved = errno, err = 0;
    if (past_file_limit(fd, n)) {
        errno = EFBIG;
        return -1;
    }
    sigset_t quiet, old, before;
    sigemptyset(&quiet);
    sigaddset(&quiet, SIGPIPE);
    sigaddset(&quiet, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &quiet, &old);
    sigpending(&before);
    double deadline = now_s() + patience_s;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            double left = deadline - now_s();
            if (left > 0) {
                struct pollfd pf = {fd, POLLOUT, 0};
                poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
                continue;
            }
        }
        err = w < 0 ? errno : EIO;
        break;
    }
    /* Our write raised it: take it back, so the program never sees it. */
    static const int raised[] = {SIGPIPE, SIGXFSZ};
    for (int i = 0; i < 2; i++) {
        sigset_t one, now;
        sigemptyset(&one);
        sigaddset(&one, raised[i]);
        if (sigpending(&now) == 0 && sigismember(&now, raised[i]) && !sigismember(&before, raised[i])) {
            struct timespec zero = {0, 0};
            sigtimedwait(&one, NULL, &zero);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err ? err : saved;
    return err ? -1 : 0;
}

/* ---- the program's data first ------------------------------------------------------ */
/* At exit the C library flushes the program's streams after every exit handler, ours
 * included: our lines would be written first, and a write of ours that fills the disk or
 * meets the file-size limit would cost the program its output.  So a report made on the
 * way out of exit() or main flushes them first, as exit() would (streams with pending
 * output only).  A stream another thread holds locked (one blocked reading stdin) is left
 * to the C library's own flush, which takes no lock: fflush(NULL) would wait for it. */
static FILE **io_list_all; /* glibc's open streams, found at the start: an exit inside the
                           * loader (a dl_iterate_phdr callback) cannot ask it (lifecycle.c) */

__attribute__((constructor)) static void find_streams(void) {
    io_list_all = (FILE **)dlsym(RTLD_DEFAULT, "_IO_list_all");
}

void cc_flush_program_streams(void) {
    FILE **list = io_list_all;
    FILE *f = list ? *list : NULL;
    if (!list) { /* another C library: the standard streams at least */
        FILE *std[2] = {stdout, stderr};
        for (int i = 0; i < 2; i++)
            if (ftrylockfile(std[i]) == 0) {
                fflush_unlocked(std[i]);
                funlockfile(std[i]);
            }
        return;
    }
    for (int n = 0; f && n < 100000; f = f->_chain, n++)
        if (f->_mode <= 0 && f->_IO_write_ptr > f->_IO_write_base && ftrylockfile(f) == 0) {
            fflush_unlocked(f);
            funlockfile(f);
        }
}
