/* corecast preload library: configuration, per-thread slots, region table, process
 * lifecycle (constructor, fork, exec, exit).  The wrappers live in shims/. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <limits.h>
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
#include "real.h"

_Static_assert(sizeof(((struct cc_sample *)0)->regions) / sizeof(struct cc_region_sample) ==
                   CC_MAX_REGIONS, "model_abi.h: regions[] must hold CC_MAX_REGIONS");
_Static_assert(sizeof(((struct cc_region_sample *)0)->stall_s) / sizeof(double) == CC_NSTALL,
               "model_abi.h: stall_s[] must hold CC_NSTALL");
_Static_assert(sizeof(((struct cc_sample *)0)->counters) / sizeof(double) == CC_NCTR,
               "model_abi.h: counters[] must hold CC_NCTR");
_Static_assert(sizeof(((struct cc_region_prediction *)0)->threads) / sizeof(int) == CC_MAX_PRED,
               "model_abi.h: threads[] must hold CC_MAX_PRED");
_Static_assert(sizeof(((struct cc_numa_counts *)0)->node_cpus) / sizeof(int) == CC_MAX_NODES,
               "model_abi.h: node_cpus[] must hold CC_MAX_NODES");
_Static_assert(sizeof(((struct cc_numa_counts *)0)->bus) / sizeof(double) == CC_MAX_NODES,
               "model_abi.h: bus[] must hold CC_MAX_NODES");
_Static_assert(sizeof(((struct cc_numa_counts *)0)->mct) / sizeof(double) == CC_MAX_NODES,
               "model_abi.h: mct[] must hold CC_MAX_NODES");
_Static_assert(sizeof(((struct cc_region_prediction *)0)->node_cores) / sizeof(int) == CC_MAX_NODES,
               "model_abi.h: node_cores[] must hold CC_MAX_NODES");
_Static_assert(sizeof(((struct cc_region_prediction *)0)->node_speedup) / sizeof(double) == CC_MAX_NODES,
               "model_abi.h: node_speedup[] must hold CC_MAX_NODES");
_Static_assert(sizeof(((struct cc_region_prediction *)0)->numa_json) == CC_NUMA_JSON,
               "model_abi.h: numa_json[] must hold CC_NUMA_JSON");
_Static_assert(CC_NUMA_MCT + 1 == CC_NUMA_NROLES, "corecast.h: CC_NUMA_NROLES must cover CC_NUMA_*");

const char *const CC_STALL_NAMES[CC_NSTALL] = {
    "mutex", "condvar", "pthread_barrier", "rwlock", "semaphore", "critical",
    "atomic", "omp_lock", "omp_barrier", "imbalance", "runqueue", "mpi_p2p", "mpi_collective",
};
const char *const CC_COUNTER_NAMES[CC_NCTR] = {
    "task_clock_s", "context_switches", "migrations", "page_faults",
    "cycles", "instructions", "llc_misses", "backend_stall_cycles",
};

struct cc_config cc_cfg = {.target = 0, .window_ms = 200};
volatile int cc_ready;
volatile int cc_active;
uint64_t cc_overflow;
static pid_t cc_pid;
static int cc_final_done;

/* ---- clock ------------------------------------------------------------------------ */
static uint64_t tsc0;
static double mono0;

double cc_mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t cc_now_fallback(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Ticks are calibrated over the process lifetime: no start-up cost, and the longer the
 * run, the better the estimate. */
double cc_ticks_to_s(uint64_t ticks) {
#if defined(__x86_64__) || defined(__i386__)
    double dt = cc_mono_s() - mono0;
    uint64_t dtsc = cc_now() - tsc0;
    if (dt < 1e-4 || dtsc == 0) {
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        dt = cc_mono_s() - mono0;
        dtsc = cc_now() - tsc0;
    }
    return ticks * (dt / (double)dtsc);
#else
    return ticks * 1e-9;
#endif
}

/* ---- the report channel ------------------------------------------------------------ */
/* The table and every warning go to the stderr the program started with, kept as a
 * close-on-exec duplicate at a high number: a program that closes fd 2 and opens a data
 * file there (xz, sort --parallel) must not find corecast's lines in its data.  Before
 * each write the duplicate must still be that file (the program may have closed all its
 * descriptors, or reused the number). */
static int report_fd = -2; /* -2: not set up yet; -1: no channel (fd 2 was closed) */
static dev_t report_dev;
static ino_t report_ino;

static void report_channel_open(void) {
    int saved = errno;
    report_fd = -1;
    struct rlimit rl;
    long high = 1000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur - 24 < high)
        high = (long)rl.rlim_cur - 24;
    if (high < 3)
        high = 3;
    struct stat st;
    if (fstat(2, &st) == 0) {
        int fd = fcntl(2, F_DUPFD_CLOEXEC, (int)high);
        if (fd < 0)
            fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (fd >= 0) {
            report_fd = fd;
            report_dev = st.st_dev;
            report_ino = st.st_ino;
        }
    }
    errno = saved;
}

int cc_report_channel(void) {
    if (report_fd == -2)
        report_channel_open();
    if (report_fd < 0)
        return -1;
    int saved = errno;
    struct stat st;
    int ok = fstat(report_fd, &st) == 0 && st.st_dev == report_dev && st.st_ino == report_ino;
    errno = saved;
    return ok ? report_fd : -1;
}

void cc_report_write(const char *p, size_t n) {
    int fd = cc_report_channel();
    if (fd < 0)
        return;
    int saved = errno;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        n -= (size_t)w;
    }
    errno = saved;
}

/* ---- diagnostics ------------------------------------------------------------------ */
void cc_warn(const char *fmt, ...) {
    char buf[512], text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* Paths and names in warnings come from outside: no control bytes reach the terminal. */
    size_t n = (size_t)snprintf(buf, sizeof buf - 1, "corecast: warning: ");
    n += cc_printable(buf + n, sizeof buf - 1 - n, text);
    buf[n++] = '\n';
    cc_report_write(buf, n);
}

/* ---- configuration ---------------------------------------------------------------- */
static int env_int(const char *name, int lo, int hi, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        cc_warn("%s=%s is not a whole number in [%d, %d]; using %d", name, v, lo, hi, dflt);
        return dflt;
    }
    return (int)x;
}

/* The first of the launchers' variables that is set: Open MPI, PMI (MPICH, Intel MPI),
 * Slurm.  -1 when none is, or it does not parse (with one warning). */
static int env_first(const char *const *names, int lo) {
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return env_int(*names, lo, INT_MAX - 1, -1);
    }
    return -1;
}

static void read_rank(void) {
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
    cc_cfg.rank = env_first(rank_vars, 0);
    cc_cfg.ranks = cc_cfg.rank < 0 ? 0 : env_first(size_vars, 1);
    if (cc_cfg.ranks < 0 || cc_cfg.ranks <= cc_cfg.rank)
        cc_cfg.ranks = 0; /* unknown (or inconsistent): the rank alone is still reported */
}

int cc_output_path(char *dst, size_t n) {
    size_t k = 0;
    for (const char *p = cc_cfg.output; *p; p++) {
        char num[24];
        const char *put = NULL;
        if (!strncmp(p, "{rank}", 6)) {
            snprintf(num, sizeof num, "%d", cc_cfg.rank < 0 ? 0 : cc_cfg.rank);
            put = num;
            p += 5;
        } else if (!strncmp(p, "{pid}", 5)) {
            snprintf(num, sizeof num, "%d", (int)getpid());
            put = num;
            p += 4;
        }
        size_t len = put ? strlen(put) : 1;
        if (k + len >= n)
            return 0;
        memcpy(dst + k, put ? put : p, len);
        k += len;
    }
    dst[k] = 0;
    return 1;
}

static void read_config(void) {
    int saved = errno;
    cc_cfg.disabled = env_int("CORECAST_DISABLE", 0, 1, 0);
    cc_cfg.quiet = env_int("CORECAST_QUIET", 0, 1, 0);
    cc_cfg.display_env = env_int("CORECAST_DISPLAY_ENV", 0, 1, 0);
    cc_cfg.steer = env_int("CORECAST_STEER", 0, 1, 0);
    cc_cfg.probe = env_int("CORECAST_PROBE", 0, 1, 0);
    if (cc_cfg.probe && cc_cfg.steer) { /* steering already runs the region at other sizes */
        cc_warn("CORECAST_PROBE=1 is ignored with CORECAST_STEER=1 (steering already tries smaller teams)");
        cc_cfg.probe = 0;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cc_cfg.target = env_int("CORECAST_TARGET", 1, CC_MAX_THREADS, cores > 0 ? (int)cores : 1);
    cc_cfg.window_ms = env_int("CORECAST_WINDOW_MS", 10, 60000, 200);
    cc_cfg.exit_timeout_ms = env_int("CORECAST_EXIT_TIMEOUT_MS", 0, 600000, 10000);
    cc_cfg.launch_pid = env_int("CORECAST_LAUNCH_PID", 0, INT_MAX, 0);
    read_rank();
    const char *out = getenv("CORECAST_OUTPUT");
    cc_cfg.output[0] = 0;
    if (out && strlen(out) < sizeof cc_cfg.output)
        strcpy(cc_cfg.output, out);
    else if (out)
        cc_warn("CORECAST_OUTPUT is too long; no JSON Lines written");
    if (cc_cfg.display_env) {
        char buf[1600], shown[sizeof cc_cfg.output];
        cc_printable(shown, sizeof shown, cc_cfg.output);
        int n = snprintf(buf, sizeof buf,
                         "CORECAST DISPLAY ENVIRONMENT BEGIN\n  CORECAST_DISABLE = '%d'\n"
                         "  CORECAST_TARGET = '%d'\n  CORECAST_WINDOW_MS = '%d'\n"
                         "  CORECAST_OUTPUT = '%s'\n  CORECAST_QUIET = '%d'\n"
                         "  CORECAST_STEER = '%d'\n  CORECAST_PROBE = '%d'\n"
                         "  CORECAST_EXIT_TIMEOUT_MS = '%d'\n"
                         "CORECAST DISPLAY ENVIRONMENT END\n",
                         cc_cfg.disabled, cc_cfg.target, cc_cfg.window_ms, shown,
                         cc_cfg.quiet, cc_cfg.steer, cc_cfg.probe, cc_cfg.exit_timeout_ms);
        cc_report_write(buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
    }
    errno = saved;
}

/* ---- thread slots ----------------------------------------------------------------- */
static struct cc_thread slots[CC_MAX_THREADS];
static struct cc_thread overflow_slot; /* shared sink once the table is full */
static int nslots;
__thread struct cc_thread *cc_self_tls __attribute__((tls_model("initial-exec")));

struct cc_thread *cc_self_slow(void) {
    int i = __atomic_fetch_add(&nslots, 1, __ATOMIC_RELAXED);
    struct cc_thread *t;
    if (i < CC_MAX_THREADS) {
        t = &slots[i];
        t->tid = (int)syscall(SYS_gettid);
    } else {
        __atomic_store_n(&nslots, CC_MAX_THREADS, __ATOMIC_RELAXED);
        CC_AADD(cc_overflow, 1);
        t = &overflow_slot;
        t->guard = 1; /* data from here would be garbled by concurrent writers */
    }
    cc_self_tls = t;
    return t;
}

struct cc_thread *cc_thread_slots(int *n) {
    int k = __atomic_load_n(&nslots, __ATOMIC_RELAXED);
    *n = k < CC_MAX_THREADS ? k : CC_MAX_THREADS;
    return slots;
}

/* ---- OpenMP regions (open addressing keyed by the outlined function) -------------- */
#define REGION_TABLE 256 /* > CC_MAX_REGIONS: keeps probe chains short */
static struct cc_region regions[REGION_TABLE];
static int nregions;

struct cc_region *cc_region_for(void *fn) {
    size_t h = ((uintptr_t)fn >> 4) * 0x9E3779B97F4A7C15ull;
    for (int probe = 0; probe < REGION_TABLE; probe++) {
        struct cc_region *r = &regions[(h + probe) % REGION_TABLE];
        void *k = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);
        if (k == fn)
            return r;
        if (k == NULL) {
            /* One sample slot is the process's: regions get the others. */
            if (__atomic_load_n(&nregions, __ATOMIC_RELAXED) >= CC_MAX_REGIONS - 1)
                break;
            void *expected = NULL;
            if (__atomic_compare_exchange_n(&r->fn, &expected, fn, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_fetch_add(&nregions, 1, __ATOMIC_RELAXED);
                return r;
            }
            if (expected == fn)
                return r;
        }
    }
    CC_AADD(cc_overflow, 1);
    return NULL;
}

struct cc_region *cc_regions(int *n) {
    *n = REGION_TABLE;
    return regions;
}

static void register_exit(void);

/* ---- lifecycle -------------------------------------------------------------------- */
static double active_since;
static int activity_claimed;
double cc_active_since(void) { return active_since; }
double cc_started(void) { return mono0; }

void cc_activity(void) {
    if (__builtin_expect(cc_active, 1) || cc_cfg.disabled)
        return;
    if (__atomic_exchange_n(&activity_claimed, 1, __ATOMIC_ACQ_REL))
        return;
    active_since = cc_mono_s();
    cc_active = 1;
    register_exit();
    cc_sampler_baseline();
    cc_sampler_start();
    if (cc_host_is_python()) {
        double t0 = cc_thread_cpu_s();
        cc_model_warmup();
        cc_own_cpu_add(cc_thread_cpu_s() - t0); /* on the program's thread, but corecast's */
    }
}

static void reset_after_fork(void) {
    /* The child keeps only the forking thread: it starts afresh and reports alone. */
    int used;
    cc_thread_slots(&used);
    cc_ompt_after_fork(used);
    memset(slots, 0, sizeof slots);
    memset(regions, 0, sizeof regions);
    nslots = 0;
    nregions = 0;
    cc_overflow = 0;
    cc_self_tls = NULL;
    cc_active = 0;
    activity_claimed = 0;
    cc_final_done = 0;
    cc_pid = getpid();
    mono0 = cc_mono_s(); /* the child's own lifetime starts here */
    tsc0 = cc_now();
    cc_sampler_after_fork();
    cc_model_after_fork();
}

/* ---- the exit guard ------------------------------------------------------------- */
/* While the exit report runs (and for the rest of the exit if the model was left behind),
 * a fatal signal raised on corecast's own threads must not decide how the program ends.
 * The sampler, faulting inside the model, parks (the exiting thread goes on, flushes the
 * program's streams and exits with its own status), with a bounded wait in case the fault
 * left a lock held; the exiting thread, faulting in the C report, ends the process with
 * the program's status.  Faults on the program's threads get their own handling back. */
const int cc_fatal_signals[CC_NFATAL] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static struct sigaction guard_old[CC_NFATAL];
static volatile int guard_status, guard_tid, guard_on;

static void guard_restore(void) {
    if (!__atomic_exchange_n(&guard_on, 0, __ATOMIC_ACQ_REL))
        return;
    for (int i = 0; i < CC_NFATAL; i++)
        sigaction(cc_fatal_signals[i], &guard_old[i], NULL);
}

static void guard_handler(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    int tid = (int)syscall(SYS_gettid);
    if (tid == guard_tid || cc_sampler_is(tid)) {
        static const char msg[] = "corecast: warning: fatal signal in corecast's exit report; "
                                  "the program's exit status is kept\n";
        int fd = cc_report_channel(); /* fstat and write: async-signal-safe */
        if (fd >= 0) {
            ssize_t w = write(fd, msg, sizeof msg - 1);
            (void)w;
        }
        if (tid != guard_tid) {
            cc_sampler_failed();
            for (int i = 0; i < 100; i++) { /* 10 s: the exiting thread normally ends us first */
                struct timespec step = {0, 100000000L};
                nanosleep(&step, NULL);
            }
        }
        syscall(SYS_exit_group, guard_status);
    }
    guard_restore();
    /* A fault re-executes under the program's own disposition; a sent signal is sent again. */
    if (si->si_code <= 0)
        syscall(SYS_tgkill, getpid(), tid, sig);
}

static void guard_install(int status) {
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

/* ---- the exit report ------------------------------------------------------------ */
/* ``status`` >= 0: the program's exit status (main's return, exit, _exit, on_exit), which
 * the guard above keeps; < 0: unknown (a Python host's atexit, exec, quick_exit). */
static void final_report(int status) {
    if (!cc_ready || cc_cfg.disabled)
        return;
    /* A vfork child shares our memory: it must neither report nor mark us done. */
    if (getpid() != cc_pid)
        return;
    if (__atomic_exchange_n(&cc_final_done, 1, __ATOMIC_ACQ_REL))
        return;
    struct cc_thread *t = cc_self();
    t->guard++;
    if (!cc_active) {
        cc_sampler_stop();
        /* Said by the program `corecast run` started, not by every serial child of a
         * script or make (nor under a bare LD_PRELOAD, where children are the norm). */
        if (cc_cfg.launch_pid == cc_pid)
            cc_report_serial();
        t->guard--;
        return;
    }
    if (status >= 0)
        guard_install(status);
    double cpu0 = cc_thread_cpu_s(); /* from here to the report, this thread works for corecast */
    static struct cc_sample sample;
    static struct cc_result result, answer;
    cc_build_sample(&sample, 1, NULL);
    memset(&result, 0, sizeof result);
    memset(&answer, 0, sizeof answer);
    enum cc_final_outcome o = cc_sampler_final(&sample, &answer, cc_cfg.exit_timeout_ms);
    if (o == CC_FINAL_NO_SAMPLER) /* a forked child, a failed start: predict here */
        cc_model_predict(&sample, &result);
    else if (o == CC_FINAL_ANSWERED)
        result = answer;
    else {
        result.status = -1;
        if (o == CC_FINAL_FAULTED)
            snprintf(result.note, sizeof result.note, "the model failed with a fatal signal");
        else
            snprintf(result.note, sizeof result.note, "the model did not answer within %d ms (CORECAST_EXIT_TIMEOUT_MS)",
                     cc_cfg.exit_timeout_ms);
    }
    cc_own_cpu_add(cc_thread_cpu_s() - cpu0);
    cc_report(&sample, &result);
    if (o == CC_FINAL_ANSWERED || o == CC_FINAL_NO_SAMPLER)
        guard_restore(); /* the model is done: nothing of ours runs any more */
    else
        guard_tid = 0; /* only the sampler, still in the model, stays guarded */
    t->guard--;
}

void cc_final(void) { final_report(-1); }

static void final_at_exit(void) { cc_final(); }

static void final_on_exit(int status, void *arg) {
    (void)arg;
    final_report(status);
}

/* The fallback for exits that come neither from main's return nor through exit() (see
 * below).  Registered at the first parallel activity, after libc registered the dynamic
 * linker's destructor pass: a constructor-time atexit ran inside that pass, after numpy's
 * libraries were torn down, while the sampler could still be in the model. */
static void register_exit(void) { on_exit(final_on_exit, NULL); }

__attribute__((constructor)) static void cc_init(void) {
    tsc0 = cc_now();
    mono0 = cc_mono_s();
    cc_pid = getpid();
    report_channel_open(); /* before anything can warn */
    read_config();
    if (cc_cfg.disabled)
        return;
    cc_sampler_mark_start();
    at_quick_exit(final_at_exit);
    pthread_atfork(NULL, NULL, reset_after_fork);
    cc_ready = 1;
}

/* ---- the start of an exit ------------------------------------------------------------ */
/* The report must run before any exit handler: libraries the model loaded register their
 * own (OpenSSL's cleanup, C++ static destructors of extension modules), and those, newer
 * than ours, ran first and tore down what the sampler was still using.  The program's
 * main is wrapped so that returning from it reports first; calls to exit() from the
 * program and its libraries come here.  (libc's own call to exit after main is internal
 * and cannot be interposed: hence the wrapper.)  on_exit stays as the fallback. */
static int (*program_main)(int, char **, char **);

static int main_then_report(int argc, char **argv, char **envp) {
    int status = program_main(argc, argv, envp);
    final_report(status);
    return status;
}

int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    program_main = main;
    return CC_LIBC(__libc_start_main)(main_then_report, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status) {
    final_report(status);
    CC_LIBC(exit)(status);
}

/* ---- exits and execs that skip atexit ---------------------------------------------- */
void _exit(int status) {
    final_report(status);
    CC_LIBC(_exit)(status);
}

void _Exit(int status) {
    final_report(status);
    CC_LIBC(_Exit)(status);
}

/* The image is replaced: report what this one measured (same pid, its own lines). */
int execve(const char *path, char *const argv[], char *const envp[]) {
    cc_final();
    return CC_LIBC(execve)(path, argv, envp);
}

int execv(const char *path, char *const argv[]) {
    cc_final();
    return CC_LIBC(execv)(path, argv);
}

int execvp(const char *file, char *const argv[]) {
    cc_final();
    return CC_LIBC(execvp)(file, argv);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    cc_final();
    return CC_LIBC(execvpe)(file, argv, envp);
}

/* glibc's execl family calls its internal execve, past the wrappers above: rebuild the
 * argument vector (on the stack, as glibc does) and go through them. */
#define COLLECT_ARGS(first, ap, argv, extra)                                            \
    size_t argc = 1;                                                                    \
    va_start(ap, first);                                                                \
    while (va_arg(ap, const char *))                                                    \
        argc++;                                                                         \
    va_end(ap);                                                                         \
    char *argv[argc + 1];                                                               \
    argv[0] = (char *)first;                                                            \
    va_start(ap, first);                                                                \
    for (size_t i = 1; i <= argc; i++)                                                  \
        argv[i] = va_arg(ap, char *);                                                   \
    extra;                                                                              \
    va_end(ap)

int execl(const char *path, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...) {
    va_list ap;
    char *const *envp;
    COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}
