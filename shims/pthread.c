/* pthreads shim: mutexes, condition variables, barriers, rwlocks, semaphores and thread
 * creation.
 *
 * Locks try first and take timestamps only when the try fails (contended), so an
 * uncontended lock/unlock pair costs one extra try and a thread-local test.  Waits that
 * are waits by nature (condition, barrier) are always timed. */
#define _GNU_SOURCE
#include <errno.h>

#include "../native/corecast.h"
#include "../native/lifecycle.h"
#include "../native/real.h"

/* The calling thread's slot, or NULL when it must pass straight through.  Also makes
 * sure the real-function table is filled (its last entry is published last). */
static inline struct cc_thread *active_self(void) {
    if (__builtin_expect(!__atomic_load_n(&cc_libc.pthread_mutex_lock, __ATOMIC_ACQUIRE), 0))
        cc_libc_init();
    /* Before the first thread there is nothing to contend, and glibc's single-threaded
     * lock fast path should stay as cheap as it is. */
    if (!cc_active)
        return NULL;
    struct cc_thread *t = cc_self();
    return t->guard ? NULL : t;
}

static inline void count_uncontended(struct cc_thread *t, int cat) { cc_note(t, cat, 0, 0); }

/* The wait counts whatever the outcome; an acquisition only when it succeeded (a timed
 * lock may give up). */
static inline uint64_t contended_wait(struct cc_thread *t, int cat, uint64_t t0, int acquired) {
    uint64_t t1 = cc_now();
    if (acquired)
        cc_note(t, cat, t1 - t0 ? t1 - t0 : 1, 1);
    else
        CC_ADD(cc_counts(t)->wait[cat], t1 - t0);
    return t1;
}

static inline void timed_wait(struct cc_thread *t, int cat, uint64_t t0) {
    uint64_t w = cc_now() - t0;
    cc_note(t, cat, w ? w : 1, 0);
}

/* ---- threads ---------------------------------------------------------------------- *
 * Each program thread starts through thread_start, which counts it alive until it returns,
 * calls pthread_exit or is cancelled (a cleanup handler): threads that never call a wrapped
 * function (workers made and joined per phase) still count in the process's team.  The
 * start routine and its argument travel in a record of a fixed pool (no malloc here); when
 * every record is taken, the thread starts as it would without corecast, uncounted. */
#define START_RECORDS 256

static struct start_record {
    void *(*start)(void *);
    void *arg;
    int taken;
} start_records[START_RECORDS];

static void thread_ended(void *unused) {
    (void)unused;
    cc_thread_ended();
}

static void *thread_start(void *p) {
    struct start_record *r = p;
    void *(*start)(void *) = r->start;
    void *arg = r->arg;
    __atomic_store_n(&r->taken, 0, __ATOMIC_RELEASE);
    cc_thread_started();
    void *ret;
    pthread_cleanup_push(thread_ended, NULL);
    ret = start(arg);
    pthread_cleanup_pop(1);
    return ret;
}

/* The real call, tried again where it found no task left (EAGAIN) and corecast gave one
 * back: RLIMIT_NPROC at exactly the program's threads, the sampler's the last (then the
 * keeper's: each is given back once). */
static int create(pthread_t *th, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    int r = CC_LIBC(pthread_create)(th, attr, start, arg);
    while (r == EAGAIN && cc_give_back_thread("the program ran out of tasks (pthread_create: EAGAIN)"))
        r = CC_LIBC(pthread_create)(th, attr, start, arg);
    return r;
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*start)(void *), void *arg) {
    struct cc_thread *t = cc_self();
    if (t->internal) /* corecast's own threads (the model's too) are not the program's */
        return CC_LIBC(pthread_create)(th, attr, start, arg);
    if (t->guard) /* a program thread inside a call counted elsewhere (MPI_Init), or past the table */
        return create(th, attr, start, arg);
    cc_activity();
    if (cc_cfg.disabled)
        return create(th, attr, start, arg);
    for (int i = 0; i < START_RECORDS; i++) {
        int free_ = 0;
        if (__atomic_load_n(&start_records[i].taken, __ATOMIC_RELAXED) ||
            !__atomic_compare_exchange_n(&start_records[i].taken, &free_, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        start_records[i].start = start;
        start_records[i].arg = arg;
        int r = create(th, attr, thread_start, &start_records[i]);
        if (r != 0)
            __atomic_store_n(&start_records[i].taken, 0, __ATOMIC_RELEASE);
        return r;
    }
    return create(th, attr, start, arg);
}

/* ---- mutexes ---------------------------------------------------------------------- */
#define MUTEX_ACQUIRED(r) ((r) == 0 || (r) == EOWNERDEAD)

/* Try first: EBUSY means contended; anything else is the answer the lock itself would
 * give (0, EOWNERDEAD, EINVAL, ...). */
static inline int mutex_try(struct cc_thread *t, pthread_mutex_t *m) {
    int r = cc_libc.pthread_mutex_trylock(m);
    if (MUTEX_ACQUIRED(r))
        count_uncontended(t, CC_STALL_MUTEX);
    return r;
}

/* After a contended wait: count it and sample the hold time (closed by the unlock). */
static inline int mutex_waited(struct cc_thread *t, pthread_mutex_t *m, uint64_t t0, int r) {
    uint64_t t1 = contended_wait(t, CC_STALL_MUTEX, t0, MUTEX_ACQUIRED(r));
    if (MUTEX_ACQUIRED(r)) {
        t->sample_lock = m;
        t->sample_t0 = t1;
    }
    return r;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_mutex_lock)(m);
    int r = mutex_try(t, m);
    if (r != EBUSY)
        return r;
    uint64_t t0 = cc_now();
    return mutex_waited(t, m, t0, cc_libc.pthread_mutex_lock(m));
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_mutex_timedlock)(m, abstime);
    int r = mutex_try(t, m);
    if (r != EBUSY)
        return r;
    uint64_t t0 = cc_now();
    return mutex_waited(t, m, t0, cc_libc.pthread_mutex_timedlock(m, abstime));
}

int pthread_mutex_trylock(pthread_mutex_t *m) {
    int r = CC_LIBC(pthread_mutex_trylock)(m);
    struct cc_thread *t = cc_self_tls;
    if (r == 0 && t && !t->guard)
        count_uncontended(t, CC_STALL_MUTEX);
    return r;
}

int pthread_mutex_unlock(pthread_mutex_t *m) {
    struct cc_thread *t = cc_self_tls;
    if (t && t->sample_lock == m) {
        CC_ADD(t->hold_sampled, cc_now() - t->sample_t0);
        CC_ADD(t->hold_samples, 1);
        t->sample_lock = 0;
    }
    return CC_LIBC(pthread_mutex_unlock)(m);
}

/* ---- condition variables (GLIBC_2.3.2, the default version) ------------------------ */
int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_cond_wait)(c, m);
    if (t->sample_lock == m)
        t->sample_lock = 0; /* the wait releases the mutex: that hold sample is void */
    uint64_t t0 = cc_now();
    int r = cc_libc.pthread_cond_wait(c, m);
    timed_wait(t, CC_STALL_COND, t0);
    return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_cond_timedwait)(c, m, abstime);
    if (t->sample_lock == m)
        t->sample_lock = 0;
    uint64_t t0 = cc_now();
    int r = cc_libc.pthread_cond_timedwait(c, m, abstime);
    timed_wait(t, CC_STALL_COND, t0);
    return r;
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                           const struct timespec *abstime) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_cond_clockwait)(c, m, clock, abstime);
    if (t->sample_lock == m)
        t->sample_lock = 0;
    uint64_t t0 = cc_now();
    int r = cc_libc.pthread_cond_clockwait(c, m, clock, abstime);
    timed_wait(t, CC_STALL_COND, t0);
    return r;
}

/* ---- barriers --------------------------------------------------------------------- */
int pthread_barrier_wait(pthread_barrier_t *b) {
    struct cc_thread *t = active_self();
    if (!t)
        return CC_LIBC(pthread_barrier_wait)(b);
    uint64_t t0 = cc_now();
    int r = cc_libc.pthread_barrier_wait(b);
    timed_wait(t, CC_STALL_PBARRIER, t0);
    return r;
}

/* ---- rwlocks ---------------------------------------------------------------------- */
#define RWLOCK_WRAPPER(name, try, params, args)                                             \
    int name(pthread_rwlock_t *l params) {                                                  \
        struct cc_thread *t = active_self();                                                 \
        if (!t)                                                                              \
            return CC_LIBC(name)(l args);                                                    \
        int r = cc_libc.try(l);                                                              \
        if (r != EBUSY) {                                                                    \
            if (r == 0)                                                                      \
                count_uncontended(t, CC_STALL_RWLOCK);                                       \
            return r;                                                                        \
        }                                                                                    \
        uint64_t t0 = cc_now();                                                              \
        r = cc_libc.name(l args);                                                            \
        contended_wait(t, CC_STALL_RWLOCK, t0, r == 0);                                      \
        return r;                                                                            \
    }
#define NOTHING
#define TS_PARAM , const struct timespec *abstime
#define TS_ARG , abstime
#define CLOCK_PARAM , clockid_t clock, const struct timespec *abstime
#define CLOCK_ARG , clock, abstime
RWLOCK_WRAPPER(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, NOTHING, NOTHING)
RWLOCK_WRAPPER(pthread_rwlock_wrlock, pthread_rwlock_trywrlock, NOTHING, NOTHING)
RWLOCK_WRAPPER(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock, TS_PARAM, TS_ARG)
RWLOCK_WRAPPER(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock, TS_PARAM, TS_ARG)
/* ---- semaphores (CPython's threading.Lock waits in sem_clockwait) ------------------- */
#define SEM_WRAPPER(name, params, args)                                                      \
    int name(sem_t *s params) {                                                              \
        struct cc_thread *t = active_self();                                                 \
        if (!t)                                                                              \
            return CC_LIBC(name)(s args);                                                    \
        int saved = errno;                                                                   \
        if (cc_libc.sem_trywait(s) == 0) {                                                   \
            count_uncontended(t, CC_STALL_SEM);                                              \
            return 0;                                                                        \
        }                                                                                    \
        errno = saved; /* the failed try must not leak EAGAIN */                             \
        uint64_t t0 = cc_now();                                                              \
        int r = cc_libc.name(s args);                                                        \
        int e = errno;                                                                       \
        contended_wait(t, CC_STALL_SEM, t0, r == 0);                                         \
        errno = e;                                                                           \
        return r;                                                                            \
    }
SEM_WRAPPER(sem_wait, NOTHING, NOTHING)
SEM_WRAPPER(sem_timedwait, TS_PARAM, TS_ARG)
SEM_WRAPPER(sem_clockwait, CLOCK_PARAM, CLOCK_ARG)
