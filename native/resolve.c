/* Finding the real functions behind the wrappers (see real.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "corecast.h"
#include "real.h"

struct cc_real_libc cc_libc;

void *cc_resolve_next(const char *name, const char *version) {
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    return p ? p : dlsym(RTLD_NEXT, name);
}

void cc_libc_init(void) {
    /* Racing threads store the same values: no lock needed. */
#define R(name) cc_libc.name = cc_resolve_next(#name, NULL)
#define RV(name, ver) cc_libc.name = cc_resolve_next(#name, ver)
    R(pthread_mutex_trylock);
    R(pthread_mutex_timedlock);
    R(pthread_mutex_unlock);
    /* dlsym alone returns the GLIBC_2.2.5 condition variables (the old ABI). */
    RV(pthread_cond_wait, "GLIBC_2.3.2");
    RV(pthread_cond_timedwait, "GLIBC_2.3.2");
    R(pthread_cond_clockwait);
    R(pthread_barrier_wait);
    R(pthread_rwlock_rdlock);
    R(pthread_rwlock_tryrdlock);
    R(pthread_rwlock_wrlock);
    R(pthread_rwlock_trywrlock);
    R(pthread_rwlock_timedrdlock);
    R(pthread_rwlock_timedwrlock);
    R(sem_wait);
    R(sem_trywait);
    R(sem_timedwait);
    R(sem_clockwait);
    R(exit);
    R(__libc_start_main);
    R(_exit);
    R(_Exit);
    R(execve);
    R(execv);
    R(execvp);
    R(execvpe);
    R(close);
    R(dup2);
    R(dup3);
    R(close_range);
    R(closefrom);
    R(unshare);
    R(setns);
    R(fclose);
    R(freopen);
    R(freopen64);
    R(pthread_create);
    R(prctl);
    R(syscall);
    R(dlclose);
    R(dl_iterate_phdr);
    /* Last: CC_LIBC() tests this one to know the table is complete. */
    __atomic_store_n(&cc_libc.pthread_mutex_lock, cc_resolve_next("pthread_mutex_lock", NULL),
                     __ATOMIC_RELEASE);
#undef R
#undef RV
}

/* ---- corecast's own threads ------------------------------------------------------- */
/* When main leaves by pthread_exit, glibc ends the process with exit(0) as the last thread
 * ends, by its count of the threads pthread_create made (__nptl_nthreads, private to glibc
 * as the _IO_list_all lifecycle.c reads is).  The sampler and the keeper never end: counted,
 * they kept such a program from ever exiting, and, blocking every signal, from a SIGTERM
 * too.  So they are taken off that count; another C library: as before. */
static unsigned *thread_count(void) {
    static unsigned *count;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&count, (unsigned *)dlsym(RTLD_DEFAULT, "__nptl_nthreads"), __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&count, __ATOMIC_RELAXED);
}

/* Called by a program thread, which stays counted meanwhile: the count cannot reach 0.
 * Ours never return: ending, glibc would count one off again and, at 0, run the program's
 * exit on it (in its own descriptor table) while the program's last thread exits. */
int cc_own_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    unsigned *count = thread_count();
    int r = CC_LIBC(pthread_create)(th, attr, fn, arg);
    if (r == 0 && count)
        __atomic_sub_fetch(count, 1, __ATOMIC_ACQ_REL);
    return r;
}

/* One of ours about to return: counted again, so that the C library's count off at its
 * end is its own.  Asked by a program thread that waits for it (sampler.c): the count
 * cannot reach 0 meanwhile. */
void cc_own_thread_ending(void) {
    unsigned *count = thread_count();
    if (count)
        __atomic_add_fetch(count, 1, __ATOMIC_ACQ_REL);
}

/* ---- object ranges ----------------------------------------------------------------- */
struct range_query {
    const char *addr;
    const char *lo, *hi;
};

static int find_range(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct range_query *q = arg;
    const char *lo = NULL, *hi = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        const char *s = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *e = s + ph->p_memsz;
        if (!lo || s < lo)
            lo = s;
        if (!hi || e > hi)
            hi = e;
    }
    if (lo && q->addr >= lo && q->addr < hi) {
        q->lo = lo;
        q->hi = hi;
        return 1;
    }
    return 0;
}

int cc_object_range(const void *addr, const char **lo, const char **hi) {
    struct range_query q = {addr, NULL, NULL};
    if (!dl_iterate_phdr(find_range, &q))
        return 0;
    *lo = q.lo;
    *hi = q.hi;
    return 1;
}

static const char *self_lo, *self_hi;

int cc_is_ours(const void *p) {
    if (!self_lo)
        cc_object_range((const void *)&cc_is_ours, &self_lo, &self_hi);
    return (const char *)p >= self_lo && (const char *)p < self_hi;
}

/* The caller's object, opened again (RTLD_NOLOAD), for its own dependency tree: finds a
 * wheel's private libgomp.  None for the main program (dladdr names it by argv[0], and
 * the loader would open and read that file only to find nothing: once per symbol). */
static void *caller_object(const void *caller) {
    Dl_info info;
    struct link_map *map = NULL;
    if (!caller || !dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || !info.dli_fname ||
        !info.dli_fname[0] || !map || !map->l_name || !map->l_name[0])
        return NULL;
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

static void *resolve_in(void *object, const char *name) {
    void *p = object ? dlsym(object, name) : NULL;
    if (!p || cc_is_ours(p))
        p = dlsym(RTLD_NEXT, name);
    return (p && !cc_is_ours(p)) ? p : NULL;
}

void *cc_resolve(const char *name, const void *caller) {
    void *object = caller_object(caller);
    void *p = resolve_in(object, name);
    if (object)
        CC_LIBC(dlclose)(object);
    return p;
}

/* ---- libgomp views ---------------------------------------------------------------- */
#define CC_GOMP_FUNCS(X)                                                                    \
    X(GOMP_parallel) X(GOMP_parallel_loop_static) X(GOMP_parallel_loop_dynamic)             \
    X(GOMP_parallel_loop_guided) X(GOMP_parallel_loop_nonmonotonic_dynamic)                 \
    X(GOMP_parallel_loop_nonmonotonic_guided) X(GOMP_parallel_loop_runtime)                 \
    X(GOMP_parallel_loop_nonmonotonic_runtime) X(GOMP_parallel_loop_maybe_nonmonotonic_runtime) \
    X(GOMP_parallel_sections) X(GOMP_parallel_reductions) X(GOMP_barrier)                   \
    X(GOMP_loop_end) X(GOMP_sections_end) X(GOMP_ordered_start) X(GOMP_ordered_end)         \
    X(GOMP_critical_start) X(GOMP_critical_end) X(GOMP_critical_name_start)                 \
    X(GOMP_critical_name_end) X(GOMP_atomic_start) X(GOMP_atomic_end) X(GOMP_single_start)  \
    X(GOMP_task) X(GOMP_taskwait) X(GOMP_taskgroup_end)                                     \
    X(GOMP_loop_static_start) X(GOMP_loop_dynamic_start) X(GOMP_loop_guided_start)          \
    X(GOMP_loop_nonmonotonic_dynamic_start) X(GOMP_loop_nonmonotonic_guided_start)          \
    X(GOMP_loop_runtime_start) X(GOMP_loop_static_next) X(GOMP_loop_dynamic_next)           \
    X(GOMP_loop_guided_next) X(GOMP_loop_nonmonotonic_dynamic_next)                         \
    X(GOMP_loop_nonmonotonic_guided_next) X(GOMP_loop_runtime_next) X(omp_set_lock)         \
    X(GOMP_loop_ordered_static_next) X(GOMP_loop_ordered_dynamic_next)                      \
    X(GOMP_loop_ordered_guided_next) X(GOMP_loop_ordered_runtime_next)                      \
    X(GOMP_loop_ull_ordered_static_next) X(GOMP_loop_ull_ordered_dynamic_next)              \
    X(GOMP_loop_ull_ordered_guided_next) X(GOMP_loop_ull_ordered_runtime_next)              \
    X(omp_unset_lock) X(omp_test_lock) X(omp_set_nest_lock) X(omp_unset_nest_lock)          \
    X(omp_test_nest_lock) X(omp_get_thread_num) X(omp_get_num_threads)               \
    X(omp_get_max_threads) X(omp_get_level) X(omp_set_dynamic) X(__kmpc_fork_call) X(__kmpc_push_num_threads)      \
    X(__kmpc_global_thread_num)

static const struct {
    const char *name;
    size_t offset;
} gomp_table[] = {
#define ENTRY(n) {#n, offsetof(struct cc_gomp, n)},
    CC_GOMP_FUNCS(ENTRY)
#undef ENTRY
};

struct cc_gomp cc_views[CC_MAX_VIEWS];
int cc_nviews;
static struct cc_gomp fallback_view;
static int fallback_ready;
/* A spin flag, not a mutex, around publishing a view (stores only, no call): our own mutex
 * wrappers must stay out. */
static int view_busy;

/* The runtime a view points into stays loaded (RTLD_NODELETE): a program that dlcloses
 * the last object needing libgomp unmapped it under its pool's threads, still in it (a
 * crash in 19 of 20 runs with corecast, 1 of 40 without), and the view would call into
 * whatever took its place. */
static void keep_loaded(const void *fn) {
    Dl_info info;
    struct link_map *map = NULL;
    if (fn && dladdr1(fn, &info, (void **)&map, RTLD_DL_LINKMAP) && map && map->l_name && map->l_name[0])
        dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE); /* held for good: never closed */
}

static void fill_view(struct cc_gomp *v, const void *caller) {
    void *object = caller_object(caller); /* once for the table, not once per function */
    for (size_t i = 0; i < sizeof gomp_table / sizeof gomp_table[0]; i++) {
        void *p = resolve_in(object, gomp_table[i].name);
        memcpy((char *)v + gomp_table[i].offset, &p, sizeof p);
    }
    keep_loaded((const void *)v->GOMP_parallel);
    if (object)
        CC_LIBC(dlclose)(object);
}

/* Tests (CORECAST_TEST_FAULT=view_in_loader, naming_in_loader): the first time (``once``) the
 * fault's code is about to ask the loader, it says so in the program's corecast_test_gate (1)
 * and waits until the program, holding the loader's lock, set it to 2 (bounded: a program
 * without one goes on). */
void cc_test_gate(int fault, int *once) {
    if (!fault || __atomic_exchange_n(once, 1, __ATOMIC_ACQ_REL))
        return;
    int *gate = (int *)dlsym(RTLD_DEFAULT, "corecast_test_gate");
    if (!gate)
        return;
    __atomic_store_n(gate, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 20000 && __atomic_load_n(gate, __ATOMIC_ACQUIRE) != 2; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

/* The view for callers in no object (or past the table): made once, published once. */
static const struct cc_gomp *fallback(void) {
    if (!__atomic_load_n(&fallback_ready, __ATOMIC_ACQUIRE)) {
        struct cc_gomp made;
        fill_view(&made, NULL);
        while (__atomic_exchange_n(&view_busy, 1, __ATOMIC_ACQUIRE))
            ;
        if (!fallback_ready) {
            fallback_view = made;
            __atomic_store_n(&fallback_ready, 1, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&view_busy, 0, __ATOMIC_RELEASE);
    }
    return &fallback_view;
}

/* cc_gomp_for's slow path, once per calling object (and for callers in no object).  The
 * view is made outside the flag, which guards only its publication: making one asks the
 * loader (dl_iterate_phdr, dladdr, dlopen, dlsym), and a library's constructor runs OpenMP
 * with the loader's lock held: it spun on the flag of a maker waiting for that lock, for
 * ever.  Two threads may make the same view; the second's is dropped. */
const struct cc_gomp *cc_gomp_new_view(const void *caller) {
    static int gated;
    cc_test_gate(cc_cfg.view_in_loader, &gated); /* tests: the program takes the loader's lock first */
    const char *lo, *hi;
    if (__atomic_load_n(&cc_nviews, __ATOMIC_ACQUIRE) >= CC_MAX_VIEWS || !cc_object_range(caller, &lo, &hi))
        return fallback();
    struct cc_gomp made;
    fill_view(&made, caller);
    made.lo = lo;
    made.hi = hi;
    while (__atomic_exchange_n(&view_busy, 1, __ATOMIC_ACQUIRE))
        ;
    const struct cc_gomp *out = NULL;
    int n = cc_nviews;
    for (int i = 0; i < n && !out; i++) /* made by another thread meanwhile */
        if ((const char *)caller >= cc_views[i].lo && (const char *)caller < cc_views[i].hi)
            out = &cc_views[i];
    if (!out && n < CC_MAX_VIEWS) {
        cc_views[n] = made;
        __atomic_store_n(&cc_nviews, n + 1, __ATOMIC_RELEASE);
        out = &cc_views[n];
    }
    __atomic_store_n(&view_busy, 0, __ATOMIC_RELEASE);
    return out ? out : fallback();
}

/* A forked child keeps only the forking thread: a flag another thread held at the fork is
 * nobody's there (the child's first call from an object without a view spun for ever).
 * What it guards is whole wherever that thread was: a view counts (cc_nviews) and the
 * fallback is ready only once filled (release stores), so a half-made one is made again. */
void cc_views_after_fork(void) { __atomic_store_n(&view_busy, 0, __ATOMIC_RELAXED); }

/* Tests (CORECAST_TEST_FAULT=view_at_fork): the flag held across the program's forks, as a
 * program thread holds it while it publishes a view. */
static void hold_views(void) {
    while (__atomic_exchange_n(&view_busy, 1, __ATOMIC_ACQUIRE))
        ;
}
static void drop_views(void) { __atomic_store_n(&view_busy, 0, __ATOMIC_RELEASE); }
void cc_views_test_hooks(void) {
    if (cc_cfg.view_at_fork)
        pthread_atfork(hold_views, drop_views, NULL);
}
