/* corecast preload library, the state every part shares: the settings' values, the
 * clock, the per-thread slots, the region table and the first
 * parallel activity.  The wrappers (shims/) reach no further than this file, omp_call.c
 * and resolve.c; what starts and ends a measurement is lifecycle.c's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
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

static int live_threads = 1, peak_threads = 1; /* the main thread runs from the start */

void cc_thread_started(void) {
    int n = __atomic_add_fetch(&live_threads, 1, __ATOMIC_RELAXED);
    int p = __atomic_load_n(&peak_threads, __ATOMIC_RELAXED);
    while (n > p && !__atomic_compare_exchange_n(&peak_threads, &p, n, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

void cc_thread_ended(void) { __atomic_sub_fetch(&live_threads, 1, __ATOMIC_RELAXED); }

int cc_peak_threads(void) { return __atomic_load_n(&peak_threads, __ATOMIC_RELAXED); }

/* The fatal signals of the exit guard (lifecycle.c); the sampler leaves them unblocked. */
const int cc_fatal_signals[CC_NFATAL] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

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

void cc_clock_start(void) {
    tsc0 = cc_now();
    mono0 = cc_mono_s();
}

double cc_started(void) { return mono0; }

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
        t->shard = i % CC_FOLD_SHARDS;
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

void cc_region_totals(const struct cc_region *r, struct cc_counts *out) {
    const uint64_t *own[] = {r->wait, r->acq, r->contended, r->hold};
    for (int c = 0; c < CC_NSTALL; c++) {
        out->wait[c] = __atomic_load_n(&own[0][c], __ATOMIC_RELAXED);
        out->acq[c] = __atomic_load_n(&own[1][c], __ATOMIC_RELAXED);
        out->contended[c] = __atomic_load_n(&own[2][c], __ATOMIC_RELAXED);
        out->hold[c] = __atomic_load_n(&own[3][c], __ATOMIC_RELAXED);
    }
    out->single = __atomic_load_n(&r->single, __ATOMIC_RELAXED);
    out->loop_calls = __atomic_load_n(&r->loop_calls, __ATOMIC_RELAXED);
    for (int k = 0; k < CC_FOLD_SHARDS; k++) {
        const struct cc_counts *q = &r->shards[k].n;
        for (int c = 0; c < CC_NSTALL; c++) {
            out->wait[c] += __atomic_load_n(&q->wait[c], __ATOMIC_RELAXED);
            out->acq[c] += __atomic_load_n(&q->acq[c], __ATOMIC_RELAXED);
            out->contended[c] += __atomic_load_n(&q->contended[c], __ATOMIC_RELAXED);
            out->hold[c] += __atomic_load_n(&q->hold[c], __ATOMIC_RELAXED);
        }
        out->single += __atomic_load_n(&q->single, __ATOMIC_RELAXED);
        out->loop_calls += __atomic_load_n(&q->loop_calls, __ATOMIC_RELAXED);
    }
}

struct cc_region *cc_regions(int *n) {
    *n = REGION_TABLE;
    return regions;
}

/* ---- the first parallel activity ------------------------------------------------- */
/* The wrappers note activity here; what it starts (the sampler, the exit report's
 * fallback, the model in Python hosts) is lifecycle.c's hook, handed over at start-up. */
static double active_since;
static int activity_claimed, hook_ran;
static void (*activity_hook)(void);
double cc_active_since(void) { return active_since; }

static void run_activity_hook(void) {
    void (*fn)(void) = __atomic_load_n(&activity_hook, __ATOMIC_SEQ_CST);
    if (fn && !__atomic_exchange_n(&hook_ran, 1, __ATOMIC_ACQ_REL))
        fn();
}

void cc_activity(void) {
    if (__builtin_expect(cc_active, 1) || cc_cfg.disabled)
        return;
    if (__atomic_exchange_n(&activity_claimed, 1, __ATOMIC_ACQ_REL))
        return;
    active_since = cc_mono_s();
    __atomic_store_n(&cc_active, 1, __ATOMIC_SEQ_CST);
    run_activity_hook();
}

/* Activity seen before start-up (threads of another library's constructor) runs the
 * hook now. */
void cc_on_activity(void (*hook)(void)) {
    __atomic_store_n(&activity_hook, hook, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&cc_active, __ATOMIC_SEQ_CST))
        run_activity_hook();
}

/* A forked child keeps only the forking thread: it starts afresh. */
void cc_core_after_fork(void) {
    memset(slots, 0, sizeof slots);
    /* Only the entries in use: the table is 2.3 MB, most of it never touched. */
    for (int i = 0; i < REGION_TABLE; i++)
        if (regions[i].fn)
            memset(&regions[i], 0, sizeof regions[i]);
    nslots = 0;
    nregions = 0;
    cc_overflow = 0;
    live_threads = peak_threads = 1;
    cc_self_tls = NULL;
    cc_active = 0;
    activity_claimed = 0;
    hook_ran = 0;
    cc_clock_start(); /* the child's own lifetime starts here */
}

/* This library's file as the loader opened it (the model library sits beside it; an
 * exec'd image preloads it by that name); NULL if unknown. */
const char *cc_library_file(void) {
    Dl_info info;
    return dladdr((void *)&cc_library_file, &info) && info.dli_fname && info.dli_fname[0] ? info.dli_fname : NULL;
}
