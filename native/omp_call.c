/* One call of an OpenMP region: see omp_call.h. */
#include "omp_call.h"

/* Adds what changed in ``now`` since ``before`` to the region (shared: atomics). */
static void fold(struct cc_region *r, const struct cc_counts *now, const struct cc_counts *before) {
    for (int c = 0; c < CC_NSTALL; c++) {
        if (now->wait[c] != before->wait[c])
            CC_AADD(r->wait[c], now->wait[c] - before->wait[c]);
        if (now->acq[c] != before->acq[c])
            CC_AADD(r->acq[c], now->acq[c] - before->acq[c]);
        if (now->contended[c] != before->contended[c])
            CC_AADD(r->contended[c], now->contended[c] - before->contended[c]);
    }
    for (int c = 0; c < CC_NSTALL; c++)
        if (now->hold[c] != before->hold[c])
            CC_AADD(r->hold[c], now->hold[c] - before->hold[c]);
    if (now->single != before->single)
        CC_AADD(r->single, now->single - before->single);
    if (now->loop_calls != before->loop_calls)
        CC_AADD(r->loop_calls, now->loop_calls - before->loop_calls);
}

void cc_call_begin(struct cc_call *c, void *key, struct cc_thread *t) {
    cc_activity();
    c->team = 1;
    c->probe_own = 0;
    c->region = cc_region_for(key);
    if (c->region && t->depth > 0)
        c->region->nested = 1;
}

void cc_member_resume(struct cc_member *m, struct cc_thread *t) {
    m->open = 1;
    /* Outermost regions snapshot lazily (see cc_counts); a nested one copies now, since
     * the lazy slot belongs to the region around it. */
    if (m->nested)
        m->before = t->n;
    else
        t->snap_pending = 1;
    t->depth++;
}

void cc_member_enter(struct cc_member *m, struct cc_call *c, int id, struct cc_thread *t) {
    m->call = c;
    m->id = id;
    m->nested = t->depth > 0;
    cc_member_resume(m, t);
    m->t0 = cc_now();
}

void cc_member_leave(struct cc_member *m, struct cc_thread *t) {
    uint64_t t1 = cc_now();
    struct cc_call *c = m->call;
    m->open = 0;
    cc_close_single(t, t1);
    t->depth--;
    if (m->id >= 0 && m->id < CC_MAX_TEAM) {
        c->end[m->id] = t1;
        c->busy[m->id] = t1 - m->t0;
    }
    if (!c->region)
        t->snap_pending = 0;
    else if (m->nested)
        fold(c->region, &t->n, &m->before);
    else if (!t->snap_pending)
        fold(c->region, &t->n, &t->snap);
    t->snap_pending = 0;
}

void cc_hist_at(struct cc_region *r, int team, uint64_t *calls, uint64_t *wall) {
    *calls = *wall = 0;
    for (int i = 0; i < CC_MAX_HIST; i++) {
        int k = __atomic_load_n(&r->hist[i].threads, __ATOMIC_ACQUIRE);
        if (k == 0)
            return;
        if (k == team) {
            *calls = __atomic_load_n(&r->hist[i].calls, __ATOMIC_RELAXED);
            *wall = __atomic_load_n(&r->hist[i].wall, __ATOMIC_RELAXED);
            return;
        }
    }
}

/* Calls and wall time per team size (the history steering and extrapolation use). */
static void add_hist(struct cc_region *r, int team, uint64_t wall, int probe) {
    for (int i = 0; i < CC_MAX_HIST; i++) {
        struct cc_hist *h = &r->hist[i];
        int k = __atomic_load_n(&h->threads, __ATOMIC_ACQUIRE);
        if (k == 0) {
            int expected = 0;
            if (!__atomic_compare_exchange_n(&h->threads, &expected, team, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE) && expected != team)
                continue;
            k = team;
        }
        if (k == team) {
            CC_AADD(h->calls, 1);
            CC_AADD(h->wall, wall);
            if (probe)
                CC_AADD(h->probes, 1);
            return;
        }
    }
    CC_AADD(cc_overflow, 1);
}

void cc_call_finish(struct cc_call *c) {
    uint64_t t2 = cc_now();
    struct cc_region *r = c->region;
    if (!r)
        return;
    int team = c->team < CC_MAX_TEAM ? c->team : CC_MAX_TEAM;
    if (c->team > CC_MAX_TEAM)
        CC_AADD(cc_overflow, c->team - CC_MAX_TEAM);
    uint64_t idle = 0, busy = 0;
    for (int i = 0; i < team; i++) {
        if (c->end[i] < t2)
            idle += t2 - c->end[i];
        busy += c->busy[i];
    }
    CC_AADD(r->busy, busy);
    CC_AADD(r->calls, 1);
    CC_AADD(r->wall, t2 - c->t0);
    CC_AADD(r->wait[CC_STALL_IMBALANCE], idle);
    add_hist(r, c->team, t2 - c->t0, c->probe_own > 0);
    if (c->probe_own) {
        /* Extra time: this call minus the mean call at the program's own size. */
        uint64_t n, w;
        cc_hist_at(r, c->probe_own, &n, &w);
        CC_AADD(r->probe_extra, (int64_t)(t2 - c->t0) - (int64_t)(n ? w / n : 0));
        CC_AADD(r->probe_calls, 1);
        __atomic_store_n(&r->probe_busy, 0, __ATOMIC_RELEASE);
    }
    int m = __atomic_load_n(&r->max_threads, __ATOMIC_RELAXED);
    while (c->team > m &&
           !__atomic_compare_exchange_n(&r->max_threads, &m, c->team, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
        ;
}
