/* Tables mapped on first need (lazy.c).  Static tables are address space from the start
 * (13 MB of them counted against the program's `ulimit -v`), and mlockall(MCL_CURRENT)
 * checks the whole address space against RLIMIT_MEMLOCK, then locks every page of it: a
 * program locking its memory under the default 8 MiB limit failed with ENOMEM under
 * corecast alone.  Mapped on need, a table holds what is used.  After the program's
 * mlockall(MCL_FUTURE) each new mapping is locked and may be refused (EAGAIN): callers then
 * record less (the table-full path), never fail.  Mappings are private: a forked child
 * has its own copy, as it had of the static tables. */
#ifndef CORECAST_LAZY_H
#define CORECAST_LAZY_H

#include <stddef.h>

#include "corecast.h"

/* ``bytes`` zeroed, read-write; NULL if refused (errno as it was).  No malloc, no locks:
 * safe on any thread, in signal handlers and at exit. */
void *cc_map(size_t bytes) CC_HIDDEN;
void cc_unmap(void *p, size_t bytes) CC_HIDDEN;
/* *slot (*have bytes of it, 0: none yet) made to hold ``need``: when short, mapped afresh
 * with its bytes so far, the old mapping let go.  NULL if refused (the old one stays as it
 * was).  One caller at a time, and no one else holding the old address. */
void *cc_map_grown(void **slot, size_t *have, size_t need) CC_HIDDEN;
/* ``p``'s pages no longer locked after the program's mlockall(MCL_FUTURE) (they counted
 * against its RLIMIT_MEMLOCK); errno may change.  cc_map's come so already. */
void cc_unlock(void *p, size_t bytes) CC_HIDDEN;
/* From now on cc_unlock does nothing (the program is about to restrict its system calls). */
void cc_map_keep_locked(void) CC_HIDDEN;
/* Mappings refused so far (the report says why records are missing). */
extern unsigned long cc_map_refused CC_HIDDEN;

/* ``n`` items of ``item`` bytes, ``per`` to a mapping, each mapped at its first item's
 * first use: items keep their address for good (pointers to them are held).  Defined const
 * (CC_LAZY_DEFINE), so that the compiler folds the sizes into cc_lazy_peek. */
struct cc_lazy {
    size_t item;
    int per, n;
    void **chunk; /* n / per of them, NULL until mapped */
};
#define CC_LAZY_DEFINE(name, type, count, per_)                                                    \
    static void *name##_chunk[((count) + (per_)-1) / (per_)];                                      \
    static const struct cc_lazy name = {sizeof(type), (per_), (count), name##_chunk}

/* Item ``i`` (0 <= i < n) if its mapping exists, else NULL. */
static inline void *cc_lazy_peek(const struct cc_lazy *t, int i) {
    char *c = (char *)__atomic_load_n(&t->chunk[i / t->per], __ATOMIC_ACQUIRE);
    return c ? c + (size_t)(i % t->per) * t->item : NULL;
}
/* Item ``i``, mapping it on need; NULL if the mapping was refused (a later call tries again). */
void *cc_lazy_get(const struct cc_lazy *t, int i) CC_HIDDEN;
/* Zeroes the items of mappings made (a forked child's fresh start). */
void cc_lazy_clear(const struct cc_lazy *t) CC_HIDDEN;

#endif
