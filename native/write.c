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
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "corecast.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Whether ``n`` more bytes on ``fd``, at ``at`` (-1: where it writes), would cross the
 * file-size limit (the kernel would write part and raise SIGXFSZ); only regular files have one. */
static int past_file_limit(int fd, size_t n, off_t at) {
    struct rlimit rl;
    struct stat st;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    int fl = fcntl(fd, F_GETFL);
    if (at < 0)
        at = fl >= 0 && (fl & O_APPEND) ? st.st_size : lseek(fd, 0, SEEK_CUR);
    return at >= 0 && (unsigned long long)at + n > (unsigned long long)rl.rlim_cur;
}

/* One write that never blocks on a pipe or socket, whatever the descriptor's own mode: a
 * program whose parent reads its stderr only after it ended (a pipe left nearly full) hung
 * for ever in the report's blocking write, where bare it had ended.  Not O_NONBLOCK on the
 * descriptor: that flag belongs to the open file, which the program and its parent share.
 * ``at`` >= 0: a regular file's offset to write at, the descriptor's own left where it is. */
static ssize_t write_nowait(int fd, int kind, const char *p, size_t n, off_t at) {
    if (kind == S_IFSOCK)
        return send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (kind != S_IFIFO)
        return at >= 0 ? pwrite(fd, p, n, at) : write(fd, p, n);
#ifndef CC_TEST_NO_RWF_NOWAIT /* tests: an older kernel's path on this one */
    struct iovec v = {(void *)p, n};
    ssize_t w = pwritev2(fd, &v, 1, -1, RWF_NOWAIT);
    if (w >= 0 || errno != EOPNOTSUPP)
        return w;
#endif
    /* An older kernel's pipes refuse RWF_NOWAIT.  A pipe that polls writable has a free page,
     * which takes PIPE_BUF bytes at once: no more per write. */
    struct pollfd pf = {fd, POLLOUT, 0};
    if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLOUT)) {
        errno = EAGAIN;
        return -1;
    }
    return write(fd, p, n < PIPE_BUF ? n : PIPE_BUF);
}

int cc_write_all(int fd, const char *p, size_t n, double patience_s) {
    int saved = errno, err = 0;
    struct stat st;
    int kind = fstat(fd, &st) == 0 ? (int)(st.st_mode & S_IFMT) : 0, fl = fcntl(fd, F_GETFL);
    /* A file that holds more than our position: another descriptor wrote there (`>f 2>f`
     * opens it twice, the program's stdout at the start).  Ours go after it, not over it,
     * and the descriptor's offset stays the program's. */
    off_t at = -1;
    if (kind == S_IFREG && fl >= 0 && !(fl & O_APPEND) && lseek(fd, 0, SEEK_CUR) < st.st_size)
        at = st.st_size;
    if (past_file_limit(fd, n, at)) {
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
        ssize_t w = write_nowait(fd, kind, p, n, at);
        if (w > 0) {
            at = at >= 0 ? at + w : at;
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
