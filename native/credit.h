/* settle.c's snapshots of a region's settle counts and its credit's arithmetic: calls at a
 * rate per call between two snapshots, less what was counted meanwhile (here to keep
 * settle.c under 400 lines). */
#ifndef CORECAST_CREDIT_H
#define CORECAST_CREDIT_H

#include "corecast.h"

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

#endif
