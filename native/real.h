/* The real functions corecast wraps, in one place (after Coz's libcoz/real.h).
 *
 * libc functions are resolved once with RTLD_NEXT (dlvsym where the default version is
 * not the one dlsym returns).  libgomp functions are resolved per calling object: a
 * Python wheel may carry its own libgomp loaded RTLD_LOCAL, invisible to RTLD_NEXT. */
#ifndef CORECAST_REAL_H
#define CORECAST_REAL_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

struct dl_phdr_info; /* <link.h>, with _GNU_SOURCE */

struct cc_real_libc {
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    int (*pthread_mutex_lock)(pthread_mutex_t *);
    int (*pthread_mutex_trylock)(pthread_mutex_t *);
    int (*pthread_mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
    int (*pthread_mutex_unlock)(pthread_mutex_t *);
    int (*pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
    int (*pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
    int (*pthread_cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    int (*pthread_barrier_wait)(pthread_barrier_t *);
    int (*pthread_rwlock_rdlock)(pthread_rwlock_t *);
    int (*pthread_rwlock_tryrdlock)(pthread_rwlock_t *);
    int (*pthread_rwlock_wrlock)(pthread_rwlock_t *);
    int (*pthread_rwlock_trywrlock)(pthread_rwlock_t *);
    int (*pthread_rwlock_timedrdlock)(pthread_rwlock_t *, const struct timespec *);
    int (*pthread_rwlock_timedwrlock)(pthread_rwlock_t *, const struct timespec *);
    int (*sem_wait)(sem_t *);
    int (*sem_trywait)(sem_t *);
    int (*sem_timedwait)(sem_t *, const struct timespec *);
    int (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *);
    void (*exit)(int) __attribute__((noreturn));
    int (*__libc_start_main)(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void),
                             void (*)(void), void *);
    void (*_exit)(int) __attribute__((noreturn));
    void (*_Exit)(int) __attribute__((noreturn));
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*close)(int);
    int (*dup2)(int, int);
    int (*dup3)(int, int, int);
    int (*close_range)(unsigned, unsigned, int);
    void (*closefrom)(int);
    int (*unshare)(int);
    int (*setns)(int, int);
    int (*fclose)(FILE *);
    FILE *(*freopen)(const char *, const char *, FILE *);
    FILE *(*freopen64)(const char *, const char *, FILE *);
    int (*prctl)(int, ...);
    long (*syscall)(long, ...);
    int (*dlclose)(void *);
    int (*dl_iterate_phdr)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
};
extern struct cc_real_libc cc_libc;
void cc_libc_init(void);
#define CC_LIBC(name) (__builtin_expect(cc_libc.name != 0, 1) ? cc_libc.name : (cc_libc_init(), cc_libc.name))
/* A thread of corecast's (the sampler, the keeper): it never keeps the process alive, and
 * never returns, but for the sampler giving its task back to the program, which calls
 * cc_own_thread_ending before it returns. */
int cc_own_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
void cc_own_thread_ending(void);
/* The loaded object holding ``addr``: [lo, hi) spans its segments (0: none). */
int cc_object_range(const void *addr, const char **lo, const char **hi);

typedef void (*cc_outlined_fn)(void *);

/* One OpenMP runtime as seen from one calling object ([lo, hi) is that object's text). */
struct cc_gomp {
    const char *lo, *hi;
    void (*GOMP_parallel)(cc_outlined_fn, void *, unsigned, unsigned);
    void (*GOMP_parallel_loop_static)(cc_outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*GOMP_parallel_loop_dynamic)(cc_outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*GOMP_parallel_loop_guided)(cc_outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*GOMP_parallel_loop_nonmonotonic_dynamic)(cc_outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*GOMP_parallel_loop_nonmonotonic_guided)(cc_outlined_fn, void *, unsigned, long, long, long, long, unsigned);
    void (*GOMP_parallel_loop_runtime)(cc_outlined_fn, void *, unsigned, long, long, long, unsigned);
    void (*GOMP_parallel_loop_nonmonotonic_runtime)(cc_outlined_fn, void *, unsigned, long, long, long, unsigned);
    void (*GOMP_parallel_loop_maybe_nonmonotonic_runtime)(cc_outlined_fn, void *, unsigned, long, long, long, unsigned);
    void (*GOMP_parallel_sections)(cc_outlined_fn, void *, unsigned, unsigned, unsigned);
    unsigned (*GOMP_parallel_reductions)(cc_outlined_fn, void *, unsigned, unsigned);
    void (*GOMP_barrier)(void);
    void (*GOMP_loop_end)(void);
    void (*GOMP_sections_end)(void);
    void (*GOMP_ordered_start)(void);
    void (*GOMP_ordered_end)(void);
    void (*GOMP_critical_start)(void);
    void (*GOMP_critical_end)(void);
    void (*GOMP_critical_name_start)(void **);
    void (*GOMP_critical_name_end)(void **);
    void (*GOMP_atomic_start)(void);
    void (*GOMP_atomic_end)(void);
    bool (*GOMP_single_start)(void);
    void (*GOMP_task)(cc_outlined_fn, void *, void (*)(void *, void *), long, long, bool, unsigned, void **, int,
                      void *);
    void (*GOMP_taskwait)(void);
    void (*GOMP_taskgroup_end)(void);
    bool (*GOMP_loop_static_start)(long, long, long, long, long *, long *);
    bool (*GOMP_loop_dynamic_start)(long, long, long, long, long *, long *);
    bool (*GOMP_loop_guided_start)(long, long, long, long, long *, long *);
    bool (*GOMP_loop_nonmonotonic_dynamic_start)(long, long, long, long, long *, long *);
    bool (*GOMP_loop_nonmonotonic_guided_start)(long, long, long, long, long *, long *);
    bool (*GOMP_loop_runtime_start)(long, long, long, long *, long *);
    bool (*GOMP_loop_static_next)(long *, long *);
    bool (*GOMP_loop_dynamic_next)(long *, long *);
    bool (*GOMP_loop_guided_next)(long *, long *);
    bool (*GOMP_loop_nonmonotonic_dynamic_next)(long *, long *);
    bool (*GOMP_loop_nonmonotonic_guided_next)(long *, long *);
    bool (*GOMP_loop_runtime_next)(long *, long *);
    bool (*GOMP_loop_ordered_static_next)(long *, long *);
    bool (*GOMP_loop_ordered_dynamic_next)(long *, long *);
    bool (*GOMP_loop_ordered_guided_next)(long *, long *);
    bool (*GOMP_loop_ordered_runtime_next)(long *, long *);
    bool (*GOMP_loop_ull_ordered_static_next)(unsigned long long *, unsigned long long *);
    bool (*GOMP_loop_ull_ordered_dynamic_next)(unsigned long long *, unsigned long long *);
    bool (*GOMP_loop_ull_ordered_guided_next)(unsigned long long *, unsigned long long *);
    bool (*GOMP_loop_ull_ordered_runtime_next)(unsigned long long *, unsigned long long *);
    void (*omp_set_lock)(void *);
    void (*omp_unset_lock)(void *);
    int (*omp_test_lock)(void *);
    void (*omp_set_nest_lock)(void *);
    void (*omp_unset_nest_lock)(void *);
    int (*omp_test_nest_lock)(void *);
    int (*omp_get_thread_num)(void);
    int (*omp_get_num_threads)(void);
    int (*omp_get_max_threads)(void);
    int (*omp_get_level)(void);
    void (*omp_set_dynamic)(int);
    /* LLVM/Intel runtimes (shims/ompt.c) */
    void (*__kmpc_fork_call)(void *, int, void *, ...);
    void (*__kmpc_push_num_threads)(void *, int, int);
    int (*__kmpc_global_thread_num)(void *);
};

/* The libgomp view for a caller (a return address); never NULL, but a member may be
 * NULL when no libgomp defines it (the wrapper then has nothing to call).  Every OpenMP
 * wrapper starts with it, so the lookup among the views already made is inline and its
 * data hidden (no PLT or GOT on the way); resolve.c makes a caller's view once. */
#define CC_MAX_VIEWS 8
extern struct cc_gomp cc_views[CC_MAX_VIEWS] __attribute__((visibility("hidden")));
extern int cc_nviews __attribute__((visibility("hidden"))); /* published with release stores */
const struct cc_gomp *cc_gomp_new_view(const void *caller) __attribute__((visibility("hidden")));
void cc_views_after_fork(void) __attribute__((visibility("hidden")));  /* no maker in a forked child */
void cc_views_test_hooks(void) __attribute__((visibility("hidden")));  /* CORECAST_TEST_FAULT=view_at_fork's */

static inline const struct cc_gomp *cc_gomp_for(const void *caller) {
    int n = __atomic_load_n(&cc_nviews, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if ((const char *)caller >= cc_views[i].lo && (const char *)caller < cc_views[i].hi)
            return &cc_views[i];
    return cc_gomp_new_view(caller);
}

#endif
