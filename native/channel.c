/* The report channel (over 400 lines: its three steps share the original's identity and
 * the holder's copy): where corecast's table and warnings go, the stderr the program
 * started with, without a descriptor of corecast's in the program's table.
 *
 * A descriptor of ours there is the program's business: `ls /proc/self/fd` lists it, a
 * shell's `exec 1000>file` collides with it, and a daemon inherits it through fork, so a
 * caller reading our stderr pipe (`$(corecast run ...)`, CI log capture) waits for the
 * daemon to exit.  So the original stderr is known by its identity (device and inode,
 * taken at start-up or from `corecast run`'s CORECAST_STDERR) and found at each write:
 *   1. the program's fd 2, or another of its low descriptors, while it is still that file;
 *   2. else a copy kept by a thread of ours in a descriptor table of its own (the sampler,
 *      or a keeper started when the program lets its last stderr go): written by that
 *      thread when it is free to (the holder's mailbox), so that the write moves the
 *      description's offset as the program's own lines did; else reopened through
 *      /proc/self/task/TID/fd/N for the time of one write (a description of its own:
 *      appended, but a shell's later line into a `2>log` opened without O_APPEND goes at
 *      the old offset, over it);
 *   3. else the terminal or file the stderr was, reopened by its path.
 * A program that put a data file on fd 2 (xz, sort --parallel) never gets our lines in
 * it, and a copy in another table is not inherited by fork.
 *
 * Every write here is async-signal-safe (the exit guard's handler writes), keeps errno,
 * and cannot change how the program ends (write.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corecast.h"
#include "futex.h"
#include "real.h"
#include "text.h"

static int known;          /* the original stderr's identity is known */
static dev_t origin_dev;
static ino_t origin_ino;
static char origin_path[256]; /* a terminal's or regular file's path, for step 3 */
static pid_t channel_pid;  /* the image whose start-up this was: not a fork or vfork child */
static volatile int holder_tid, holder_fd = -1; /* step 2's copy: its thread and number there */
/* One copy at most: the sampler, which no longer holds the program up until it has one, and
 * a keeper started meanwhile both find the original on their fd 2.  The first to claim
 * keeps it (a second copy would hold a pipe's reader off its end of file unwatched). */
static int holder_claimed;
static int keeper_started;
/* The holder's mailbox (step 2): one write at a time, copied in, so that a writer that
 * stops waiting leaves nothing of its own behind.  ``serving``: the holder waits for mail
 * (the keeper always; the sampler once its windows are over). */
enum { MAIL_IDLE, MAIL_FILLING, MAIL_POSTED, MAIL_WRITING }; /* the low 2 bits; above: the writer's tid */
/* futex word; flags (stalled: a writer left its mail in a write that blocks) */
static int mail_state, serving, mail_stalled;
static char mail[16384];
static size_t mail_n;
static locale_t c_locale;
static __thread int own_table __attribute__((tls_model("initial-exec"))); /* this thread's table is ours */

#define LOW_FDS 10 /* the program's descriptors looked at in step 1 */
#define PATIENCE_S 5.0 /* a reopened pipe whose reader stalls gets this long */

static int is_origin(const struct stat *st) { return known && st->st_dev == origin_dev && st->st_ino == origin_ino; }

/* ``fd`` is the original stderr, open for writing. */
static int writes_origin(int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !is_origin(&st))
        return 0;
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
}

/* One of the program's low descriptors outside [lo, hi] is the original stderr. */
static int origin_held_outside(int lo, int hi) {
    for (int fd = 0; fd < LOW_FDS; fd++)
        if ((fd < lo || fd > hi) && writes_origin(fd))
            return 1;
    return 0;
}

void cc_channel_init(void) {
    int saved = errno;
    channel_pid = getpid();
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    struct stat st;
    int fd2 = fstat(2, &st) == 0;
    /* Under `corecast run`, the stderr it was started with (CORECAST_STDERR): a program
     * that reused fd 2 for a data file and then exec'd another passes that file on as fd 2. */
    const char *origin = getenv("CORECAST_STDERR");
    unsigned long long dev, ino;
    if (origin && sscanf(origin, "%llu:%llu", &dev, &ino) == 2) {
        known = 1;
        origin_dev = (dev_t)dev;
        origin_ino = (ino_t)ino;
    } else if (!(origin && strcmp(origin, "closed") == 0) && fd2) {
        known = 1;
        origin_dev = st.st_dev;
        origin_ino = st.st_ino;
    }
    if (known && fd2 && is_origin(&st) && (S_ISCHR(st.st_mode) || S_ISREG(st.st_mode))) {
        ssize_t n = readlink("/proc/self/fd/2", origin_path, sizeof origin_path - 1);
        origin_path[n > 0 && origin_path[0] == '/' ? n : 0] = 0;
    }
    errno = saved;
}

/* A descriptor of the calling thread's table that writes to the original stderr; *temp
 * says the caller must close it.  ``reopen`` 0: steps 1 and the holder's own copy only. */
static int channel_open(int *temp, int reopen) {
    *temp = 0;
    if (!known)
        return -1;
    int self = (int)syscall(SYS_gettid);
    int hfd = holder_fd, htid = holder_tid;
    if (htid == self && writes_origin(hfd))
        return hfd;
    if (writes_origin(2))
        return 2;
    for (int fd = 0; fd < LOW_FDS; fd++)
        if (fd != 2 && writes_origin(fd))
            return fd;
    if (!reopen)
        return -1;
    char path[64], *p = path;
    const char *paths[2] = {NULL, origin_path[0] ? origin_path : NULL};
    if (htid > 0 && hfd >= 0) {
        memcpy(p, "/proc/self/task/", 16);
        p += 16;
        cc_put_decimal(&p, htid);
        memcpy(p, "/fd/", 4);
        p += 4;
        cc_put_decimal(&p, hfd);
        *p = 0;
        paths[0] = path;
    }
    for (int i = 0; i < 2; i++) {
        if (!paths[i])
            continue;
        /* Non-blocking: a pipe without a reader fails at once (ENXIO) instead of waiting
         * for one.  Appending: a file's earlier lines stay. */
        int fd = open(paths[i], O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            continue;
        if (writes_origin(fd)) {
            *temp = 1;
            return fd;
        }
        close(fd);
    }
    return -1;
}

/* A holder that is not the calling thread, in this process: a child forked by the system
 * call (no atfork handler cleared the holder) inherits the mailbox, not the thread that
 * serves it, and waited the writer's whole patience for it. */
static int holder_here(void) {
    return holder_fd >= 0 && holder_tid != (int)syscall(SYS_gettid) && getpid() == channel_pid;
}

int cc_report_channel_open(void) {
    int temp, fd = channel_open(&temp, 0);
    if (fd >= 0)
        return 1;
    /* The holder writes it (a socket, which cannot be reopened, included); no reopening
     * to ask, which would put a copy in the program's table (cc_report_write). */
    if (holder_here() && __atomic_load_n(&serving, __ATOMIC_ACQUIRE))
        return 1;
    fd = channel_open(&temp, 1);
    if (temp)
        close(fd);
    return fd >= 0;
}

/* Step 2 through the holder: returns how many of the ``n`` bytes it wrote (0: the holder
 * is not serving or is stuck in an earlier write, a signal handler's write interrupted this
 * thread's own, or the mail was not taken within PATIENCE_S; the caller reopens for the
 * rest).  Another writer's mail goes first: one that went around it through a reopened
 * description appended where the holder's next write at the shared offset covered it (or,
 * on a socket, was not written at all).  The state word names its writer, so a writer
 * whose mail was written while it slept never mistakes the next writer's for its own. */
static size_t mail_write(const char *p, size_t n) {
    int self = (int)syscall(SYS_gettid);
    size_t done = 0;
    double deadline = cc_mono_s() + PATIENCE_S;
    while (done < n) {
        int st;
        for (;;) { /* our turn */
            if (!__atomic_load_n(&serving, __ATOMIC_ACQUIRE))
                return done;
            st = MAIL_IDLE;
            if (__atomic_compare_exchange_n(&mail_state, &st, self << 2 | MAIL_FILLING, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                break;
            double left = deadline - cc_mono_s();
            if (st >> 2 == self || __atomic_load_n(&mail_stalled, __ATOMIC_ACQUIRE) || left <= 0)
                return done;
            cc_futex(&mail_state, FUTEX_WAIT_PRIVATE, st, left);
        }
        size_t k = n - done < sizeof mail ? n - done : sizeof mail;
        memcpy(mail, p + done, k);
        mail_n = k;
        int mine = self << 2 | MAIL_POSTED;
        __atomic_store_n(&mail_state, mine, __ATOMIC_RELEASE);
        cc_futex(&mail_state, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
        while ((st = __atomic_load_n(&mail_state, __ATOMIC_ACQUIRE)) >> 2 == self) {
            double left = deadline - cc_mono_s();
            if (left <= 0) {
                int posted = mine; /* not taken: withdrawn, to be written elsewhere */
                if (__atomic_compare_exchange_n(&mail_state, &posted, MAIL_IDLE, 0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE)) {
                    cc_futex(&mail_state, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
                    return done;
                }
                /* Taken, not written yet (a stalled reader): the holder ends it alone, and
                 * later writers do not wait for it. */
                __atomic_store_n(&mail_stalled, 1, __ATOMIC_RELEASE);
                return done + k;
            }
            cc_futex(&mail_state, FUTEX_WAIT_PRIVATE, st, left);
        }
        done += k;
    }
    return done;
}

void cc_report_write(const char *p, size_t n) {
    int saved = errno, temp;
    int fd = channel_open(&temp, 0);
    /* Not the program's descriptor, nor the holder's own (a socket cannot be reopened):
     * the mail first, and a reopened copy only for what it did not write.  Reopened on this
     * thread, the copy takes a number in the program's table, where another thread writing
     * at once took it for the program's own fd 2 and wrote to it after it was closed (or
     * to the program's next file there). */
    if (fd < 0 && holder_here()) {
        size_t sent = mail_write(p, n);
        p += sent;
        n -= sent;
    }
    if (fd < 0 && n > 0)
        fd = channel_open(&temp, 1);
    /* A stalled reader gets PATIENCE_S once, on the program's own descriptor too: a pipe
     * or socket, blocking or not, is never waited on for ever (write.c), as a parent that
     * reads only after the program ended would have it hang. */
    static int stalled;
    if (fd >= 0 && n > 0 && cc_write_all(fd, p, n, stalled ? 0 : PATIENCE_S) != 0 && errno == EAGAIN)
        __atomic_store_n(&stalled, 1, __ATOMIC_RELAXED);
    if (fd >= 0 && temp)
        close(fd);
    errno = saved;
}

/* ---- diagnostics ------------------------------------------------------------------ */
void cc_warn(const char *fmt, ...) {
    char buf[512], text[512];
    va_list ap;
    locale_t was = c_locale ? uselocale(c_locale) : (locale_t)0; /* "0.5", whatever the program's locale */
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (was)
        uselocale(was);
    /* Paths and names in warnings come from outside: no control bytes reach the terminal. */
    size_t n = (size_t)snprintf(buf, sizeof buf - 1, "corecast: warning: ");
    n += cc_printable(buf + n, sizeof buf - 1 - n, text);
    buf[n++] = '\n';
    cc_report_write(buf, n);
}

locale_t cc_c_locale(void) { return c_locale; }

/* ---- a descriptor table of our own ----------------------------------------------- */
static int kept(int fd, const int *keep, int n) {
    for (int i = 0; i < n; i++)
        if (keep[i] == fd)
            return 1;
    return 0;
}

static void close_all_but(const int *keep, int n) {
    int lo = 0;
    for (;;) { /* close_range over each gap between kept descriptors */
        int next = -1;
        for (int i = 0; i < n; i++)
            if (keep[i] >= lo && (next < 0 || keep[i] < next))
                next = keep[i];
        unsigned hi = next < 0 ? ~0U : (unsigned)next - 1;
#ifdef SYS_close_range
        if ((next < 0 || next > lo) && syscall(SYS_close_range, (unsigned)lo, hi, 0) != 0)
            break; /* an older kernel: list the table instead */
#else
        break;
#endif
        if (next < 0)
            return;
        lo = next + 1;
    }
    DIR *d = opendir("/proc/thread-self/fd");
    if (!d)
        return;
    int own = dirfd(d), fds[256], nfds;
    do { /* closing while listing can skip entries: list a batch, close it, list again */
        nfds = 0;
        rewinddir(d);
        struct dirent *e;
        while ((e = readdir(d)) && nfds < 256) {
            int fd = atoi(e->d_name);
            if ((fd > 0 || e->d_name[0] == '0') && fd != own && !kept(fd, keep, n))
                fds[nfds++] = fd;
        }
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
    } while (nfds == 256);
    closedir(d);
}

/* The calling thread takes a table of its own (unshare(CLONE_FILES)) holding only
 * ``keep`` and, where none is kept yet and the program's fd 2 is still the original, a
 * copy of the report channel.  Its copies of the program's descriptors are closed at once
 * (a copy of a pipe's write end would keep the reader from its end of file).  Where
 * unshare is refused (seccomp), the table stays shared: returns 0. */
int cc_own_descriptor_table(const int *keep, int n) {
    int all[72], k = 0;
    for (int i = 0; i < n && k < 64; i++)
        all[k++] = keep[i];
    if (unshare(CLONE_FILES) != 0)
        return 0;
    own_table = 1; /* closing here is not the program letting go of anything */
    int unclaimed = 0, copy = -1;
    int take = holder_tid == 0 && getpid() == channel_pid && writes_origin(2) &&
               __atomic_compare_exchange_n(&holder_claimed, &unclaimed, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    if (take)
        all[k++] = 2;
    close_all_but(all, k);
    if (take) {
        /* Above the low numbers where the limit allows; under `ulimit -n 64` 100 was refused
         * and a program that then let its stderr go lost its report. */
        copy = fcntl(2, F_DUPFD_CLOEXEC, 100);
        if (copy < 0)
            copy = fcntl(2, F_DUPFD_CLOEXEC, LOW_FDS);
        if (copy < 0)
            copy = fcntl(2, F_DUPFD_CLOEXEC, 3);
        close(2);
        if (copy < 0)
            __atomic_store_n(&holder_claimed, 0, __ATOMIC_RELEASE);
    }
    if (copy >= 0) {
        holder_fd = copy;
        __atomic_store_n(&holder_tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    }
    return 1;
}

/* ---- the keeper ------------------------------------------------------------------ */
static int keeper_ready; /* futex word */
static int keeper_tid, keeper_ending, keeper_ended; /* futex words: keeper_ending, keeper_ended */

static void *keeper_main(void *arg) {
    (void)arg;
    struct cc_thread *t = cc_self_internal(); /* not one of the program's threads in any figure */
    t->guard = 1;
    keeper_tid = (int)syscall(SYS_gettid);
    cc_own_descriptor_table(NULL, 0);
    /* Serving before the program goes on: a line written before this thread reached its
     * loop went around it, appended where the mail after it was written over it. */
    cc_channel_serving();
    __atomic_store_n(&keeper_ready, 1, __ATOMIC_RELEASE);
    cc_futex(&keeper_ready, FUTEX_WAKE_PRIVATE, 1, -1);
    cc_channel_serve(); /* holds the copy until the process ends, or gives its task back */
    /* Without a copy (the sampler claimed it first) it still holds a task: given back too. */
    while (!__atomic_load_n(&keeper_ending, __ATOMIC_ACQUIRE))
        cc_futex(&keeper_ending, FUTEX_WAIT_PRIVATE, 0, -1);
    cc_own_thread_ending();
    __atomic_store_n(&keeper_ended, 1, __ATOMIC_RELEASE);
    cc_futex(&keeper_ended, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
    return NULL; /* the C library ends the thread: its task and stack go */
}

/* The program's pthread_create found no task left, and the sampler's was not enough, or its
 * unshare or setns needs it alone (lifecycle.c, ``why``): the keeper ends, its copy with it
 * (the report finds the stderr by its path as where no copy was kept).  Waits for it until
 * ``deadline``.  Returns whether it has ended, its thread's id in ``*tid`` (the caller waits
 * for its task to go, then tries again). */
int cc_channel_give_back(double deadline, int *tid, const char *why) {
    *tid = __atomic_load_n(&keeper_tid, __ATOMIC_ACQUIRE);
    if (*tid <= 0 || getpid() != channel_pid || __atomic_exchange_n(&keeper_ending, 1, __ATOMIC_ACQ_REL))
        return 0;
    /* Said first, while its copy still reaches a pipe. */
    cc_warn("%s: corecast's keeper of the original stderr gave its thread back; the report goes to the "
            "stderr's path, where it has one", why);
    cc_futex(&mail_state, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
    cc_futex(&keeper_ending, FUTEX_WAKE_PRIVATE, 1, -1);
    while (!__atomic_load_n(&keeper_ended, __ATOMIC_ACQUIRE) && cc_mono_s() < deadline)
        cc_futex(&keeper_ended, FUTEX_WAIT_PRIVATE, 0, deadline - cc_mono_s());
    return __atomic_load_n(&keeper_ended, __ATOMIC_ACQUIRE);
}

/* The program is about to close or replace descriptors [lo, hi].  If that lets go of its
 * last descriptor on the original stderr and no thread of ours keeps a copy, a keeper
 * takes one first (closefd2-like programs that close fd 2 before any thread).  Only in the
 * image that started: a forked child (a daemon detaching) keeps nothing. */
void cc_channel_before_release(int lo, int hi) {
    /* Disabled: nothing will be reported, so nothing is kept for it. */
    if (!known || cc_cfg.disabled || own_table || holder_tid || __atomic_load_n(&holder_claimed, __ATOMIC_ACQUIRE) ||
        keeper_started || lo > 2 || hi < 2 || getpid() != channel_pid)
        return;
    int saved = errno;
    if (!writes_origin(2)) {
        errno = saved;
        return;
    }
    if (origin_held_outside(lo, hi)) {
        errno = saved;
        return; /* the program still has it */
    }
    keeper_started = 1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the keeper never takes the program's signals */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t th;
    struct cc_thread *t = cc_self();
    t->guard++;
    int r = cc_own_thread_create(&th, &attr, keeper_main, NULL);
    t->guard--;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r == 0) {
        while (!__atomic_load_n(&keeper_ready, __ATOMIC_ACQUIRE))
            cc_futex(&keeper_ready, FUTEX_WAIT_PRIVATE, 0, 1.0);
    }
    errno = saved;
}

/* The sampler, each whole window: a copy it keeps must not outlive the program's own by
 * long.  A program that let go of its stderr (a server closing 0-2) would otherwise keep a
 * pipe's reader from its end of file.  Two windows in a row without it: one is the grace
 * for a program that closes its stderr just before it exits (xz).  ``let_go``: at once
 * (no report will come: the program restricts its system calls, lifecycle.c). */
void cc_channel_window_check(int let_go) {
    static int missing;
    if (holder_tid != (int)syscall(SYS_gettid) || holder_fd < 0)
        return;
    int seen = 0;
    for (int fd = 0; fd < LOW_FDS && !seen && !let_go; fd++) {
        char path[40], *p = path;
        memcpy(p, "/proc/self/fd/", 14);
        p += 14;
        cc_put_decimal(&p, fd);
        *p = 0;
        struct stat st;
        seen = stat(path, &st) == 0 && is_origin(&st);
    }
    missing = seen ? 0 : let_go ? 2 : missing + 1;
    if (missing >= 2) {
        __atomic_store_n(&holder_tid, 0, __ATOMIC_RELEASE);
        close(holder_fd);
        holder_fd = -1;
        __atomic_store_n(&holder_claimed, 0, __ATOMIC_RELEASE);
    }
}

int cc_channel_origin_released(void) {
    int saved = errno, held = origin_held_outside(-1, -1);
    errno = saved;
    return !held;
}

/* Whether the calling thread has a descriptor table of its own (what it opens is not in
 * the program's). */
int cc_own_table_here(void) { return own_table; }

/* Whether the calling thread keeps the channel's copy: it must then outlive the report. */
int cc_channel_held_here(void) { return holder_tid == (int)syscall(SYS_gettid) && holder_fd >= 0; }

void cc_channel_serving(void) {
    if (cc_channel_held_here())
        __atomic_store_n(&serving, 1, __ATOMIC_RELEASE);
}

/* The keeper giving its task back, at mailbox state ``st``: no new mail (serving off), and
 * the copy let go once no writer is filling or has posted (posted mail is written first).
 * The mailbox stays shut (the writing state, no writer's): a writer that saw it serving
 * before serving went off finds it taken, not idle to post in and wait PATIENCE_S. */
static int keeper_let_go(int st) {
    __atomic_store_n(&serving, 0, __ATOMIC_RELEASE);
    if (st != MAIL_IDLE || !__atomic_compare_exchange_n(&mail_state, &st, MAIL_WRITING, 0, __ATOMIC_ACQ_REL,
                                                        __ATOMIC_ACQUIRE)) {
        if ((st & 3) == MAIL_FILLING) /* its writer posts next */
            cc_futex(&mail_state, FUTEX_WAIT_PRIVATE, st, 0.001);
        return 0;
    }
    __atomic_store_n(&holder_tid, 0, __ATOMIC_RELEASE);
    close(holder_fd);
    holder_fd = -1;
    cc_futex(&mail_state, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
    return 1;
}

/* The holder, with nothing else to do: writes the mail it is sent, for as long as the
 * process lives (returns at once in a thread that holds no copy).  A write that blocks (a
 * stalled pipe reader) blocks here, as the program's own would, while the writer stops
 * waiting after PATIENCE_S. */
void cc_channel_serve(void) {
    if (!cc_channel_held_here())
        return;
    cc_channel_serving();
    int keeper = keeper_tid == (int)syscall(SYS_gettid);
    for (;;) {
        int st = __atomic_load_n(&mail_state, __ATOMIC_ACQUIRE);
        if (keeper && __atomic_load_n(&keeper_ending, __ATOMIC_ACQUIRE) && keeper_let_go(st))
            return;
        if ((st & 3) != MAIL_POSTED) {
            cc_futex(&mail_state, FUTEX_WAIT_PRIVATE, st, -1);
            continue;
        }
        if (!__atomic_compare_exchange_n(&mail_state, &st, (st & ~3) | MAIL_WRITING, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            continue; /* withdrawn meanwhile */
        cc_write_all(holder_fd, mail, mail_n, 1e9);
        __atomic_store_n(&mail_stalled, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&mail_state, MAIL_IDLE, __ATOMIC_RELEASE);
        cc_futex(&mail_state, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
    }
}

void cc_channel_after_fork(void) {
    /* The child has no thread of ours and reports to its own fd 2 while that is the
     * original; it starts no keeper (a daemon detaching must not hold the caller's pipe). */
    holder_tid = 0;
    holder_fd = -1;
    holder_claimed = 0;
    keeper_started = 1;
    keeper_ready = keeper_tid = keeper_ending = keeper_ended = 0;
    serving = 0;
    mail_state = MAIL_IDLE;
    mail_stalled = 0;
}
