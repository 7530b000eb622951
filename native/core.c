/* corecast preload library, the state every part shares: the settings' values, the
 * clock, the per-thread slots and the first parallel activity (the region table:
 * regions.c).  The wrappers (shims/) reach no further than these files, omp_call.c and
 * resolve.c; what starts and ends a measurement is lifecycle.c's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corecast.h"
#include "lazy.h"

/* The arrays model_abi.h declares hold what the code indexes them with. */
#define CC_HOLDS(type, field, n)                                                              \
    _Static_assert(sizeof(((type *)0)->field) / sizeof(((type *)0)->field[0]) == (n),         \
                   "model_abi.h: " #field "[] must hold " #n)
CC_HOLDS(struct cc_sample, regions, CC_MAX_REGIONS);
CC_HOLDS(struct cc_region_sample, stall_s, CC_NSTALL);
CC_HOLDS(struct cc_sample, counters, CC_NCTR);
CC_HOLDS(struct cc_region_prediction, threads, CC_MAX_PRED);
CC_HOLDS(struct cc_numa_counts, node_cpus, CC_MAX_NODES);
CC_HOLDS(struct cc_numa_counts, bus, CC_MAX_NODES);
CC_HOLDS(struct cc_numa_counts, mct, CC_MAX_NODES);
CC_HOLDS(struct cc_region_prediction, node_cores, CC_MAX_NODES);
CC_HOLDS(struct cc_region_prediction, node_speedup, CC_MAX_NODES);
CC_HOLDS(struct cc_region_prediction, numa_json, CC_NUMA_JSON);
#undef CC_HOLDS
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

int cc_live_threads(void) { return __atomic_load_n(&live_threads, __ATOMIC_RELAXED); }

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

/* ---- thread slots ----------------------------------------------------------------- *
 * A thread takes a slot at its first wrapped call and hands it back when it exits (a
 * pthread key's destructor), so that programs and runtimes that make threads all the time
 * (libgomp remakes its pool whenever a team grows after shrinking) do not fill the table:
 * the next new thread takes a vacant slot before a fresh one and carries on its counts, so
 * totals stay as they were and the slots in use read like the most threads alive at once. */
CC_LAZY_DEFINE(slots, struct cc_thread, CC_MAX_THREADS, 16); /* 23 kB a mapping (lazy.h) */
/* Shared sink once the table is full, and where an exiting thread's last wrapped calls go:
 * guarded, so nothing is recorded into it (concurrent writers would garble it). */
static struct cc_thread overflow_slot = {.guard = 1, .slot = -1};
static int nslots;
static uint64_t vacant[CC_MAX_THREADS / 64]; /* bit i: slots[i]'s thread exited */
static pthread_key_t exit_key;
static int exit_key_ok;
__thread struct cc_thread *cc_self_tls __attribute__((tls_model("initial-exec")));

/* A thread exits (the key's destructor, after its cleanup handlers): the slot is handed
 * on.  corecast's own threads keep theirs: their counts must stay out of the program's. */
static void slot_vacate(void *value) {
    (void)value; /* after a fork it may name the parent's slot: cc_self_tls is the truth */
    struct cc_thread *t = cc_self_tls;
    if (!t || t->slot < 0 || __atomic_load_n(&t->internal, __ATOMIC_RELAXED)) /* < 0: the overflow slot */
        return;
    /* First, so that whatever it calls later in its exit records nothing into a slot
     * another thread may own by then. */
    cc_self_tls = &overflow_slot;
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
        CC_ADD(t->gone_cpu_ns, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
    int i = t->slot;
    __atomic_fetch_or(&vacant[i / 64], 1ull << (i % 64), __ATOMIC_RELEASE); /* its writes first */
}

/* glibc keeps a thread's first 32 keys in the thread itself; pthread_setspecific on a
 * later key allocates (calloc) on a thread's first use, which no wrapper may do. */
#define KEYS_IN_THREAD 32

void cc_slots_init(void) {
    if (exit_key_ok || pthread_key_create(&exit_key, slot_vacate) != 0)
        return;
#ifdef __GLIBC__
    if ((unsigned long)exit_key >= KEYS_IN_THREAD) {
        pthread_key_delete(exit_key); /* today's table: slots are never reused */
        return;
    }
#endif
    __atomic_store_n(&exit_key_ok, 1, __ATOMIC_RELEASE);
}

int cc_slots_reused(void) { return __atomic_load_n(&exit_key_ok, __ATOMIC_ACQUIRE); }

int cc_slot_vacant(const struct cc_thread *t) {
    if (t->slot < 0)
        return 0;
    int i = t->slot;
    return (int)(__atomic_load_n(&vacant[i / 64], __ATOMIC_ACQUIRE) >> (i % 64) & 1);
}

/* The lowest vacant slot, claimed (-1: none). */
static int take_vacant(void) {
    int used = __atomic_load_n(&nslots, __ATOMIC_RELAXED);
    used = used < CC_MAX_THREADS ? used : CC_MAX_THREADS;
    for (int w = 0; w * 64 < used; w++) {
        uint64_t v = __atomic_load_n(&vacant[w], __ATOMIC_ACQUIRE);
        while (v) {
            uint64_t bit = v & -v;
            if (__atomic_compare_exchange_n(&vacant[w], &v, v & ~bit, 0, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
                return w * 64 + __builtin_ctzll(bit);
        }
    }
    return -1;
}

/* A new thread in a vacant slot: what counts (cumulative: the process's and regions'
 * totals, and the region fold's shard) carries on; what described the exited thread's
 * moment starts afresh, as in a fresh slot. */
static void slot_inherit(struct cc_thread *t) {
    /* kept: shard and slot (the slot's), n (the program's counts; regions fold deltas of it),
     * hold_sampled/hold_samples and mpi_bytes (process totals), taskwait_ticks (monotonic:
     * a join reads a member's difference of n's task counts), gone_cpu_ns; internal is 0 (such
     * slots are never vacated); snap only means anything while snap_pending is set. */
    t->guard = 0;        /* the exited thread's last calls ran guarded (slot_vacate) */
    t->snap_pending = 0; /* no region open on the new thread */
    t->depth = 0;
    t->task_depth = 0;
    t->child_ticks = 0;  /* per task level: the new thread runs none yet */
    t->single_t0 = 0;    /* no single block open; single_task0 is read only with it */
    t->single_task0 = 0;
    t->nheld = 0;        /* held-lock stack: locks the exited thread timed (held_* unread past nheld) */
    t->ordered_turn = 0;
    t->sample_left = t->sample_span = 0; /* acquisition sampling: the next one is timed, */
    t->sample_wait = t->sample_hold = t->sample_release = 0; /* means learnt anew, per thread */
    t->sample_lock = 0;  /* a hold sample of the exited thread never closes */
    t->sample_t0 = 0;
    t->inherited = 1;
}

static struct cc_thread *fresh_slot(void) {
    int i = __atomic_fetch_add(&nslots, 1, __ATOMIC_RELAXED);
    if (i >= CC_MAX_THREADS) {
        __atomic_store_n(&nslots, CC_MAX_THREADS, __ATOMIC_RELAXED);
        return NULL;
    }
    /* Refused (the program's mlockall limit): slot i stays empty, the thread goes uncounted. */
    struct cc_thread *t = cc_lazy_get(&slots, i);
    if (t) {
        t->shard = i % CC_FOLD_SHARDS;
        t->slot = i;
    }
    return t;
}

struct cc_thread *cc_self_slow(void) {
    int i = take_vacant();
    struct cc_thread *t = i >= 0 ? cc_lazy_peek(&slots, i) : fresh_slot(); /* vacant: mapped */
    if (!t) {
        CC_AADD(cc_overflow, 1);
        t = &overflow_slot;
    } else {
        if (i >= 0)
            slot_inherit(t);
        t->tid = (int)syscall(SYS_gettid);
        /* No allocation: the key is one of the thread's first (cc_slots_init). */
        if (__atomic_load_n(&exit_key_ok, __ATOMIC_ACQUIRE))
            pthread_setspecific(exit_key, t);
    }
    cc_self_tls = t;
    return t;
}

/* An inherited slot holds program threads' counts: the internal thread moves to a fresh
 * one and hands the inherited slot on (its own counts so far stay the program's). */
struct cc_thread *cc_self_internal(void) {
    struct cc_thread *t = cc_self();
    if (t->inherited && !t->internal && t != &overflow_slot) {
        struct cc_thread *own = fresh_slot();
        if (own) {
            own->tid = t->tid;
            own->guard = t->guard;
            __atomic_store_n(&own->internal, 1, __ATOMIC_RELAXED);
            cc_self_tls = own;
            int i = t->slot;
            __atomic_fetch_or(&vacant[i / 64], 1ull << (i % 64), __ATOMIC_RELEASE);
            return own;
        }
    }
    __atomic_store_n(&t->internal, 1, __ATOMIC_RELAXED);
    return t;
}

int cc_thread_count(void) {
    int k = __atomic_load_n(&nslots, __ATOMIC_RELAXED);
    return k < CC_MAX_THREADS ? k : CC_MAX_THREADS;
}

/* Tid 0: never taken (its index went to a thread whose mapping was refused) or being taken. */
struct cc_thread *cc_thread_slot(int i) {
    struct cc_thread *t = cc_lazy_peek(&slots, i);
    return t && __atomic_load_n(&t->tid, __ATOMIC_RELAXED) ? t : NULL;
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
    cc_lazy_clear(&slots); /* the mappings made: untouched capacity stays unmapped */
    memset(vacant, 0, sizeof vacant); /* the key stays: the child's threads hand slots on too */
    nslots = 0;
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
