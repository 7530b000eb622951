/* Tables mapped on first need: see lazy.h. */
#define _GNU_SOURCE
#include "lazy.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's own calls where their arguments are plain: a program (or its sanitizer) that
 * defines mmap, and locks in it, would come back into the thread's first wrapped call. */
#if defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
#define MAP(n) (void *)syscall(SYS_mmap, NULL, (n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L)
#define UNMAP(p, n) syscall(SYS_munmap, (p), (n))
#define UNLOCK(p, n) syscall(SYS_munlock, (p), (n))
#else
#define MAP(n) mmap(NULL, (n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
#define UNMAP(p, n) munmap((p), (n))
#define UNLOCK(p, n) munlock((p), (n))
#endif

unsigned long cc_map_refused;

/* Not once the program restricts its system calls (cc_before_restrict says so first): a
 * filter that allows mmap need not allow munlock.  A flag of its own, not cc_cfg's: the
 * tables' mapper sits below core.c, which maps through it. */
static int unlock_off;

void cc_map_keep_locked(void) { __atomic_store_n(&unlock_off, 1, __ATOMIC_RELAXED); }

void cc_unlock(void *p, size_t bytes) {
    if (!__atomic_load_n(&unlock_off, __ATOMIC_RELAXED))
        UNLOCK(p, bytes);
}

void *cc_map(size_t bytes) {
    int saved = errno; /* the program's errno: a wrapper may be mid-call */
    void *p = MAP(bytes);
    if (p == MAP_FAILED) {
        errno = saved;
        __atomic_fetch_add(&cc_map_refused, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    /* After the program's mlockall(MCL_FUTURE) the mapping came locked, counted against its
     * RLIMIT_MEMLOCK for good: a buffer it mapped later, which fit without corecast, was
     * refused (test_memlock.py).  Unlocked at once, ours leave the program's budget as they
     * found it (no-op when nothing is locked). */
    cc_unlock(p, bytes);
    errno = saved;
    return p;
}

void cc_unmap(void *p, size_t bytes) {
    int saved = errno;
    if (p)
        UNMAP(p, bytes);
    errno = saved;
}

void *cc_map_grown(void **slot, size_t *have, size_t need) {
    if (*slot && *have >= need)
        return *slot;
    void *fresh = cc_map(need);
    if (!fresh)
        return NULL;
    void *old = *slot;
    size_t was = *have;
    if (old)
        memcpy(fresh, old, was);
    /* The new one in place before the old goes: a fork in between leaves the child a
     * mapped one (it keeps the records for its own sampler). */
    __atomic_store_n(slot, fresh, __ATOMIC_RELEASE); /* release: ``have`` never before ``slot``, */
    __atomic_store_n(have, need, __ATOMIC_RELEASE);  /* whatever the compiler's order (a child
                                                       * that saw ``need`` over the old one wrote past it) */
    cc_unmap(old, was);
    return fresh;
}

void *cc_lazy_get(const struct cc_lazy *t, int i) {
    void *item = cc_lazy_peek(t, i);
    if (item)
        return item;
    size_t bytes = t->item * (size_t)t->per;
    void *fresh = cc_map(bytes);
    if (!fresh)
        return NULL;
    void *expected = NULL;
    /* Two threads may map the same chunk at once: one wins, the other's goes back. */
    if (!__atomic_compare_exchange_n(&t->chunk[i / t->per], &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        cc_unmap(fresh, bytes);
    return cc_lazy_peek(t, i);
}

void cc_lazy_clear(const struct cc_lazy *t) {
    for (int c = 0; c * t->per < t->n; c++)
        if (t->chunk[c])
            memset(t->chunk[c], 0, t->item * (size_t)t->per);
}
