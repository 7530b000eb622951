/* The OpenMP region table (open addressing keyed by the outlined function), which the
 * wrappers reach: out of core.c since its entries are mapped as they are claimed (lazy.h). */
#include <string.h>

#include "corecast.h"
#include "lazy.h"

#define REGION_TABLE 256 /* > CC_MAX_REGIONS: keeps probe chains short */
CC_LAZY_DEFINE(regions, struct cc_region, REGION_TABLE, 1); /* 10 kB each, mapped once claimed */
static int nregions;
/* Bit i: entry i holds a key, or is about to.  Scans read this, not each entry's key (10 kB
 * apart: reading unused keys faulted 256 pages in at the first sample). */
static uint64_t in_use[REGION_TABLE / 64];

/* Regions past the table's room (hundreds of parallel loops; unrecorded, their time read as
 * serial) are counted together under keys no function has; a sample slot is the process's. */
static void *const OTHER[2] = {(void *)1, (void *)2}; /* outermost, nested */
#define NAMED_REGIONS (CC_MAX_REGIONS - 3)

static struct cc_region *lookup(void *fn, int limit) {
    size_t h = ((uintptr_t)fn >> 4) * 0x9E3779B97F4A7C15ull;
    for (int probe = 0; probe < REGION_TABLE; probe++) {
        int i = (int)((h + probe) % REGION_TABLE);
        struct cc_region *r = cc_lazy_peek(&regions, i); /* NULL: never claimed, no key */
        void *k = r ? __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE) : NULL;
        if (k == fn && r)
            return r;
        if (k == NULL) {
            if (__atomic_load_n(&nregions, __ATOMIC_RELAXED) >= limit)
                break;
            if (!r && !(r = cc_lazy_get(&regions, i)))
                break; /* refused: counted with the rest (cc_region_or_other) or not at all */
            __atomic_store_n(&r->at, i, __ATOMIC_RELAXED);
            void *expected = NULL;
            /* Marked before its key (the slot holds one whether or not this claim wins):
             * whoever finds the key finds the mark. */
            __atomic_fetch_or(&in_use[i / 64], 1ull << (i % 64), __ATOMIC_RELEASE);
            if (__atomic_compare_exchange_n(&r->fn, &expected, fn, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_fetch_add(&nregions, 1, __ATOMIC_RELAXED);
                return r;
            }
            if (expected == fn)
                return r;
        }
    }
    return NULL;
}

struct cc_region *cc_region_for(void *fn) { return lookup(fn, NAMED_REGIONS); }

struct cc_region *cc_region_or_other(void *fn, int nested) {
    struct cc_region *r = lookup(fn, NAMED_REGIONS);
    r = r ? r : lookup(OTHER[nested != 0], CC_MAX_REGIONS - 1);
    if (!r)
        CC_AADD(cc_overflow, 1);
    return r;
}

int cc_region_other(const struct cc_region *r) {
    void *k = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);
    return k == OTHER[0] ? 1 : k == OTHER[1] ? 2 : 0;
}

void cc_region_totals(const struct cc_region *r, struct cc_counts *out) {
    const uint64_t *own[] = {r->wait, r->acq, r->contended, r->hold};
    for (int c = 0; c < CC_NSTALL; c++) {
        out->wait[c] = __atomic_load_n(&own[0][c], __ATOMIC_RELAXED);
        out->acq[c] = __atomic_load_n(&own[1][c], __ATOMIC_RELAXED);
        out->contended[c] = __atomic_load_n(&own[2][c], __ATOMIC_RELAXED);
        out->hold[c] = __atomic_load_n(&own[3][c], __ATOMIC_RELAXED);
    }
#define TOTAL_OWN(f) out->f = __atomic_load_n(&r->f, __ATOMIC_RELAXED);
    CC_COUNT_SCALARS(TOTAL_OWN)
    for (int k = 0; k < CC_FOLD_SHARDS; k++) {
        const struct cc_counts *q = &r->shards[k].n;
        for (int c = 0; c < CC_NSTALL; c++) {
            out->wait[c] += __atomic_load_n(&q->wait[c], __ATOMIC_RELAXED);
            out->acq[c] += __atomic_load_n(&q->acq[c], __ATOMIC_RELAXED);
            out->contended[c] += __atomic_load_n(&q->contended[c], __ATOMIC_RELAXED);
            out->hold[c] += __atomic_load_n(&q->hold[c], __ATOMIC_RELAXED);
        }
#define TOTAL_SHARD(f) out->f += __atomic_load_n(&q->f, __ATOMIC_RELAXED);
        CC_COUNT_SCALARS(TOTAL_SHARD)
    }
}

struct cc_region *cc_region_next(const struct cc_region *prev) {
    for (int i = prev ? prev->at + 1 : 0; i < REGION_TABLE; i = (i / 64 + 1) * 64) {
        uint64_t w = __atomic_load_n(&in_use[i / 64], __ATOMIC_ACQUIRE) >> (i % 64);
        if (w)
            return cc_lazy_peek(&regions, i + __builtin_ctzll(w)); /* in use: mapped */
    }
    return NULL;
}

/* A forked child starts afresh.  Only the entries in use are cleared (the others are
 * unmapped, or were cleared before); each keeps its place, cc_region_next's step. */
void cc_regions_after_fork(void) {
    for (struct cc_region *r = cc_region_next(NULL); r; r = cc_region_next(r)) {
        int at = r->at;
        memset(r, 0, sizeof *r);
        r->at = at;
    }
    memset(in_use, 0, sizeof in_use);
    nregions = 0;
}
