/* One call of an OpenMP region: see omp_call.h. */
#include "omp_call.h"
#include "boundary.h"
#include "real.h"

/* Adds what changed in ``now`` since ``before`` to the thread's shard of the region
 * (atomics: threads CC_FOLD_SHARDS slots apart share one).  The first change in a category
 * settle.c counts marks the region (``sections``): the boundary copy at a call's end, taken
 * at every end of a region of few calls a window, sums the shards only then. */
static void fold(struct cc_region *reg, int shard, const struct cc_counts *now, const struct cc_counts *before) {
    struct cc_counts *r = &reg->shards[shard].n;
    unsigned changed = 0; /* categories with a change */
#define FOLD_AT(f)                                       \
    if (now->f[c] != before->f[c]) {                     \
        CC_AADD(r->f[c], now->f[c] - before->f[c]);      \
        changed |= 1u << c;                              \
    }
    for (int c = 0; c < CC_NSTALL; c++) {
        FOLD_AT(wait)
        FOLD_AT(acq)
        FOLD_AT(contended)
        FOLD_AT(hold)
    }
#undef FOLD_AT
    unsigned settled = 0;
    for (int k = 0; k < CC_NSETTLE; k++)
        settled |= 1u << cc_settle_cats[k];
    if ((changed & settled) && !__atomic_load_n(&reg->sections, __ATOMIC_RELAXED))
        __atomic_store_n(&reg->sections, 1, __ATOMIC_RELAXED);
#define FOLD(f)                   \
    if (now->f != before->f)      \
        CC_AADD(r->f, now->f - before->f);
    CC_COUNT_SCALARS(FOLD)
#undef FOLD
}

void cc_call_begin(struct cc_call *c, void *key, struct cc_thread *t) {
    cc_activity();
    c->team = 1;
    c->probe_own = 0;
    c->region = cc_region_or_other(key, t->depth > 0);
    if (c->region && t->depth > 0)
        c->region->nested = 1;
    if (c->region) /* before any member runs: see boundary.c */
        __atomic_add_fetch(&c->region->begun, 1, __ATOMIC_SEQ_CST);
}

/* Opens the member; its counters fold from here. */
static void open_member(struct cc_member *m, struct cc_thread *t) {
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
    /* Nested, a single block open here is the region around's (this team started inside
     * it): it goes on past this member, which neither closes it nor makes its tasks. */
    m->single_t0 = m->nested ? t->single_t0 : 0;
    m->single_task0 = t->single_task0;
    if (m->nested)
        t->single_t0 = 0;
    open_member(m, t);
    m->t0 = cc_now();
}

/* Where the member's share ends: its single block closed, its end noted for the join, its
 * counts folded.  It stays at its depth: see cc_member_pause. */
static void member_stop(struct cc_member *m, struct cc_thread *t, uint64_t t1) {
    struct cc_call *c = m->call;
    m->open = 0;
    cc_close_single(t, t1);
    if (m->id >= 0 && m->id < c->cap) {
        struct cc_member_end *e = &c->ends[m->id];
        e->end = t1;
        e->busy = t1 - m->t0;
        e->slot = t->slot;
        e->task0 = t->n.task_ticks;
        e->tasks0 = (uint32_t)t->n.tasks;
    }
    if (m->nested) { /* a snapshot still pending is the region around's, left for its leave */
        if (c->region)
            fold(c->region, t->shard, &t->n, &m->before);
        return;
    }
    if (c->region && !t->snap_pending)
        fold(c->region, t->shard, &t->n, &t->snap);
    t->snap_pending = 0;
}

/* The member's task is over: the thread a level out, the single block it set aside open again. */
static void member_done(struct cc_member *m, struct cc_thread *t) {
    t->depth--;
    if (m->single_t0) {
        t->single_t0 = m->single_t0;
        t->single_task0 = m->single_task0;
    }
}

void cc_member_pause(struct cc_member *m, struct cc_thread *t, uint64_t now) {
    member_stop(m, t, now);
    /* The counts from here on: what a resume folds (a join never resumes, and its late
     * tasks are cc_call_finish's, from the end just noted).  Still inside the team: a task
     * run in this barrier that starts a team starts a nested one. */
    if (m->nested)
        m->before = t->n;
    else
        t->snap_pending = 1;
}

void cc_member_resume(struct cc_member *m) {
    m->open = 1; /* its snapshot still the pause's: the barrier's tasks fold at the next leave */
}

int cc_tasks_seen;

void cc_member_leave(struct cc_member *m, struct cc_thread *t, uint64_t t1) {
    member_stop(m, t, t1);
    member_done(m, t);
}

void cc_member_end(struct cc_member *m, struct cc_thread *t) {
    if (m->open) /* a team of one: no barrier paused it */
        cc_member_leave(m, t, cc_now());
    else
        member_done(m, t);
}

/* A member corecast does not measure (OMPT: past MAX_DEPTH implicit tasks on its thread):
 * no end, no busy time, no slot, so that the join reads nothing of another call's. */
void cc_member_unmeasured(struct cc_call *c, int id) {
    if (id >= 0 && id < c->cap)
        c->ends[id] = (struct cc_member_end){.end = UINT64_MAX, .slot = -1};
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
    int team = c->team < c->cap ? c->team : c->cap;
    if (c->team > c->cap)
        CC_AADD(cc_overflow, c->team - c->cap);
    uint64_t idle = 0, busy = 0, late_tasks = 0, late_ticks = 0;
    int tasks = __atomic_load_n(&cc_tasks_seen, __ATOMIC_RELAXED);
    for (int i = 0; i < team; i++) {
        const struct cc_member_end *e = &c->ends[i];
        uint64_t gap = e->end < t2 ? t2 - e->end : 0;
        const struct cc_thread *m = tasks && e->slot >= 0 ? cc_thread_slot(e->slot) : NULL;
        if (m) { /* the join orders the member's task counts before this read */
            const struct cc_counts *n = &m->n;
            uint64_t later = __atomic_load_n(&n->task_ticks, __ATOMIC_RELAXED) - e->task0;
            late_ticks += later;
            late_tasks += (uint32_t)((uint32_t)__atomic_load_n(&n->tasks, __ATOMIC_RELAXED) - e->tasks0);
            later = later < gap ? later : gap;
            gap -= later;
            busy += later;
        }
        idle += gap;
        busy += e->busy;
    }
    if (late_tasks) { /* run in the closing barrier, after the members folded their counts */
        CC_AADD(r->tasks, late_tasks);
        CC_AADD(r->task_ticks, late_ticks);
    }
    CC_AADD(r->busy, busy);
    /* Ordered (as the relaxed add it replaces: one locked add on x86): a call ending on
     * another thread sees this one's folds (boundary.c). */
    uint64_t ended = __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
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
    if (__builtin_expect(__atomic_load_n(&r->edge_want, __ATOMIC_RELAXED), 0) &&
        __atomic_load_n(&r->begun, __ATOMIC_SEQ_CST) == ended) /* none in flight */
        cc_boundary_take(r);
}

/* Probing (CORECAST_PROBE): a repeated region runs a few calls at requested/2, /4, ... 1,
 * so one run gives it a multi-size history.  1 is included: T(1) makes speedups measured
 * rather than extrapolated, and the cost cap decides whether a region can afford it. */
#define PROBE_WARMUP 4   /* calls at the program's own size first: its time per call */
#define PROBE_CALLS 2    /* calls per probed size (history.py's MIN_CALLS: "measured") */
#define PROBE_EVERY 4    /* at most every 4th call a probe: interleaved with normal calls */
#define PROBE_COST_PCT 3 /* estimated extra time within 3% of the region's own time */

/* The smaller team this call should probe, or 0.  Only at the largest team the program
 * asks for (one schedule per region), after the warm-up, one probe at a time, and only
 * while the probes' cost so far plus this call's expected extra stays within
 * PROBE_COST_PCT of the region's time without probes.  The expected extra assumes linear
 * scaling (an upper bound for regions that scale no better); the cost so far is the
 * larger of the expected extras reserved and the measured extra, so a probe that came
 * out dearer than expected holds the next ones back.  The region's own time rather than
 * the process's: each region pays for its own probes, so the total stays within the
 * share of the run the regions take. */
static int probe_size(struct cc_region *r, const struct cc_gomp *g, int own) {
    uint64_t calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    if (calls < PROBE_WARMUP || calls % PROBE_EVERY || own != __atomic_load_n(&r->requested, __ATOMIC_RELAXED))
        return 0;
    int level = __atomic_load_n(&r->probe_level, __ATOMIC_RELAXED), size;
    uint64_t c, w;
    for (;;) { /* sizes the region already ran often enough need no probe */
        size = own >> (level + 1);
        if (size < 1)
            return 0;
        cc_hist_at(r, size, &c, &w);
        if (c < PROBE_CALLS)
            break;
        if (__atomic_compare_exchange_n(&r->probe_level, &level, level + 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            level++;
    }
    if (g->omp_get_level && g->omp_get_level() > 0)
        return 0;
    /* Claimed before the budget check, so no other thread's probe lands between the two. */
    int idle = 0;
    if (!__atomic_compare_exchange_n(&r->probe_busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    cc_hist_at(r, own, &c, &w);
    int64_t cost = c >= PROBE_WARMUP ? (int64_t)(w / c) * (own - size) / size : -1;
    int64_t extra = __atomic_load_n(&r->probe_extra, __ATOMIC_RELAXED);
    int64_t reserved = (int64_t)__atomic_load_n(&r->probe_reserved, __ATOMIC_RELAXED);
    int64_t base = (int64_t)__atomic_load_n(&r->wall, __ATOMIC_RELAXED) - extra;
    if (cost < 0 || (extra > reserved ? extra : reserved) + cost > base / 100 * PROBE_COST_PCT) {
        __atomic_store_n(&r->probe_busy, 0, __ATOMIC_RELEASE);
        return 0;
    }
    CC_AADD(r->probe_reserved, (uint64_t)cost);
    return size;
}

/* Probing or steering: both only ever shrink a team, and never inside another team (a
 * region nested in code corecast did not see start); the callers have already left out
 * regions nested in ones they saw. */
int cc_exact_teams;

int cc_team_cap(struct cc_region *r, int own, const struct cc_gomp *g, int *probe_own) {
    int seen = __atomic_load_n(&r->requested, __ATOMIC_RELAXED);
    if (own > seen)
        __atomic_store_n(&r->requested, own, __ATOMIC_RELAXED);
    /* A smaller team than asked is OpenMP's to give only under dyn-var true: a program that
     * set it false may count on its team (block decompositions by thread number gave wrong
     * sums, a thread waiting for another hung). */
    if (own < 2 || __atomic_load_n(&cc_exact_teams, __ATOMIC_RELAXED))
        return 0;
    if (cc_cfg.probe) { /* never with steering (read_config) */
        int size = probe_size(r, g, own);
        if (size)
            *probe_own = own;
        return size;
    }
    int cap = __atomic_load_n(&r->steer_threads, __ATOMIC_RELAXED);
    if (cc_cfg.steer && cap > 0 && cap < own && !(g->omp_get_level && g->omp_get_level() > 0))
        return cap;
    return 0;
}
