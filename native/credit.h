/* settle.c's snapshots of a region's settle counts and its credit's arithmetic: calls at a
 * rate per call between two snapshots, less what was counted meanwhile (here to keep
 * settle.c under 400 lines). */
#ifndef CORECAST_CREDIT_H
#define CORECAST_CREDIT_H

#include "boundary.h"
#include "corecast.h"
#include "settle.h"

static inline void snap(struct cc_sync_snap *o, const struct cc_region *r) {
    *o = (struct cc_sync_snap){0};
    o->calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    o->team = __atomic_load_n(&r->steer_threads, __ATOMIC_RELAXED); /* for the coming window */
    struct cc_counts n;
    cc_region_totals(r, &n);
    for (int k = 0; k < CC_NSETTLE; k++) {
        int c = cc_settle_cats[k];
        o->wait[k] = n.wait[c];
        o->hold[k] = n.hold[c];
        o->acq[k] = n.acq[c];
        o->contended[k] = n.contended[c];
    }
}

/* snap, marked a boundary where no call of ``r`` was in flight (boundary.c's test). */
static inline void snap_end(struct cc_sync_snap *o, const struct cc_region *r) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    snap(o, r);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    o->boundary = __atomic_load_n(&r->begun, __ATOMIC_SEQ_CST) == o->calls &&
                  __atomic_load_n(&r->calls, __ATOMIC_RELAXED) == o->calls;
}

/* Counts per settle category (wait and hold in ticks). */
struct credit {
    double acq[CC_NSETTLE], contended[CC_NSETTLE], wait[CC_NSETTLE], hold[CC_NSETTLE];
};

/* ``calls`` calls at the rate per call between snapshots ``a`` and ``b`` (b->calls > a->calls). */
static inline void credit_at_rate(struct credit *out, double calls, const struct cc_sync_snap *a,
                                  const struct cc_sync_snap *b) {
    double per = calls / (double)(b->calls - a->calls);
    for (int k = 0; k < CC_NSETTLE; k++) {
        out->acq[k] = per * (double)(b->acq[k] - a->acq[k]);
        out->contended[k] = per * (double)(b->contended[k] - a->contended[k]);
        out->wait[k] = per * (double)(b->wait[k] - a->wait[k]);
        out->hold[k] = per * (double)(b->hold[k] - a->hold[k]);
    }
}

static inline double at_least_0(double x) { return x > 0 ? x : 0; }
/* ``c`` less what was counted from ``a`` to ``b`` (never below 0). */
static inline void less_counted(struct credit *c, const struct cc_sync_snap *a, const struct cc_sync_snap *b) {
    for (int k = 0; k < CC_NSETTLE; k++) {
        c->acq[k] = at_least_0(c->acq[k] - (double)(b->acq[k] - a->acq[k]));
        c->contended[k] = at_least_0(c->contended[k] - (double)(b->contended[k] - a->contended[k]));
        c->wait[k] = at_least_0(c->wait[k] - (double)(b->wait[k] - a->wait[k]));
        c->hold[k] = at_least_0(c->hold[k] - (double)(b->hold[k] - a->hold[k]));
    }
}

/* Adds ``c`` to a region's counters for good, and to what the process keeps (``kept``); the
 * window's base moves with them, so that the window's own rate leaves the credit out. */
static inline void keep(struct cc_region *q, const struct credit *c, struct cc_settle_extra *kept) {
    struct cc_sync_snap *w = &q->window_at;
    cc_boundary_restart(q, __atomic_load_n(&q->edge_want, __ATOMIC_RELAXED));
    for (int k = 0; k < CC_NSETTLE; k++) {
        int cat = cc_settle_cats[k];
        uint64_t acq = (uint64_t)(c->acq[k] + 0.5), contended = (uint64_t)(c->contended[k] + 0.5);
        uint64_t wait = (uint64_t)(c->wait[k] + 0.5), hold = (uint64_t)(c->hold[k] + 0.5);
        CC_AADD(q->acq[cat], acq);
        CC_AADD(q->contended[cat], contended);
        CC_AADD(q->wait[cat], wait);
        CC_AADD(q->hold[cat], hold);
        w->acq[k] += acq;
        w->contended[k] += contended;
        w->wait[k] += wait;
        w->hold[k] += hold;
        kept->acq[k] += c->acq[k];
        kept->contended[k] += c->contended[k];
        kept->wait_s[k] += cc_ticks_to_s((uint64_t)(c->wait[k] + 0.5));
        kept->hold_s[k] += cc_ticks_to_s((uint64_t)(c->hold[k] + 0.5));
    }
}

/* Adds ``c`` to a region's sample ``o``, and to ``extra`` for the process's. */
static inline void add_credit(struct cc_region_sample *o, const struct credit *c, struct cc_settle_extra *extra) {
    for (int k = 0; k < CC_NSETTLE; k++) {
        int cat = cc_settle_cats[k];
        double wait = cc_ticks_to_s((uint64_t)(c->wait[k] + 0.5)), hold = cc_ticks_to_s((uint64_t)(c->hold[k] + 0.5));
        o->acquisitions[cat] += (unsigned long long)(c->acq[k] + 0.5);
        o->contended[cat] += (unsigned long long)(c->contended[k] + 0.5);
        o->stall_s[cat] += wait;
        o->hold_s[cat] += hold;
        o->serial_s += hold;
        extra->acq[k] += c->acq[k];
        extra->contended[k] += c->contended[k];
        extra->wait_s[k] += wait;
        extra->hold_s[k] += hold;
    }
}

#endif
