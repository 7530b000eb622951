/* Counting that stops once it has served (CORECAST_STEER): a critical section of a few
 * nanoseconds costs as much again through its wrappers, paid on every call for the whole
 * run.  Once steering has settled every region, the counts no longer steer anything; the
 * exit report still wants them.  So at the end of the first window in which every region
 * had settled and ran at its settled count, the sampler snapshots each region's counts,
 * hands the section starts back to the real functions (got.c), and a window later the
 * ends (every timed hold begun before has been released through its wrapper by then).  A
 * region's later calls are credited at its rate per call in that window (its settled
 * team size's), and the report says so.
 * CORECAST_KEEP_COUNTING=1 keeps every wrapper. */
#include <string.h>

#include "got.h"
#include "settle.h"

const int cc_settle_cats[CC_NSETTLE] = {CC_STALL_CRITICAL, CC_STALL_ATOMIC};

enum { COUNTING, STARTS_BACK, ENDS_BACK };
#define SHORT_WINDOW_CALLS 64 /* calls that measure a count well enough to end its window early */
static int stage;
static double stopped_s;

static void snap(struct cc_sync_snap *o, const struct cc_region *r) {
    o->calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    o->team = __atomic_load_n(&r->steer_threads, __ATOMIC_RELAXED); /* for the coming window */
    for (int k = 0; k < CC_NSETTLE; k++) {
        int c = cc_settle_cats[k];
        o->wait[k] = __atomic_load_n(&r->wait[c], __ATOMIC_RELAXED);
        o->hold[k] = __atomic_load_n(&r->hold[c], __ATOMIC_RELAXED);
        o->acq[k] = __atomic_load_n(&r->acq[c], __ATOMIC_RELAXED);
        o->contended[k] = __atomic_load_n(&r->contended[c], __ATOMIC_RELAXED);
    }
}

/* The team a region runs with under steering's cap ``steer`` (0: the program's own). */
static int team_of(int steer, const struct cc_region_sample *g) {
    return steer > 0 && steer < g->requested ? steer : g->requested;
}

static int is_region(const struct cc_region_sample *g) {
    return g->runtime == CC_RUNTIME_OPENMP && strcmp(g->name, "process");
}

/* Every OpenMP region of the window has a settled count (and there is one); ``*measured``:
 * each one's window ran at that count, so the window's calls give its rate per call. */
static int all_settled(const struct cc_sample *s, const struct cc_result *r, struct cc_region *const *refs,
                       int *measured) {
    int any = 0;
    *measured = 1;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!is_region(g))
            continue;
        int chosen = r->regions[i].steer_chosen;
        if (!chosen)
            return 0;
        int ran = team_of(refs[i]->settled_at.team, g);
        *measured &= refs[i]->settled_at.calls < g->calls && ran == chosen;
        any = 1;
    }
    return any;
}

/* 1: the next window should be short (see settle.h). */
int cc_settle_window(const struct cc_sample *s, const struct cc_result *r, struct cc_region *const *refs) {
    if (!s->steer)
        return 0;
    /* The hand-back is libgomp's wrappers' (the OMPT path has none to hand back). */
    int hand_back = !cc_cfg.keep_counting && !cc_ompt_on;
    if (hand_back && stage == STARTS_BACK) {
        cc_gomp_hand_back(1);
        __atomic_store_n(&stage, ENDS_BACK, __ATOMIC_RELEASE);
        return 0;
    }
    int measured, settled = all_settled(s, r, refs, &measured);
    settled &= hand_back && stage == COUNTING; /* waiting to hand back */
    if (settled && measured) {
        /* settled_at holds the window's start, at the settled count: the rate's base */
        for (int i = 0; i < s->nregions; i++)
            if (is_region(&s->regions[i]))
                snap(&refs[i]->stopped_at, refs[i]);
        stopped_s = s->elapsed_s;
        __atomic_store_n(&stage, STARTS_BACK, __ATOMIC_RELEASE); /* the snapshots first */
        cc_gomp_hand_back(0);
        return 1;
    }
    /* A region that steering moves to another count (or that settled at a count the
     * window did not run) is watched: its window may end after a quarter, once it made
     * SHORT_WINDOW_CALLS calls there (a long window at a count that may be much slower
     * is what a step costs). */
    int watch = 0;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!is_region(g))
            continue;
        struct cc_sync_snap *w = &refs[i]->settled_at;
        int next = __atomic_load_n(&refs[i]->steer_threads, __ATOMIC_RELAXED);
        int stepped = team_of(next, g) != team_of(w->team, g);
        snap(w, refs[i]); /* the next window's start */
        w->watch = settled || stepped;
        watch |= w->watch;
    }
    return watch;
}

int cc_settle_window_measured(void) {
    int n;
    const struct cc_region *r = cc_regions(&n);
    for (int i = 0; i < n; i++)
        if (r[i].settled_at.watch && __atomic_load_n(&r[i].fn, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&r[i].calls, __ATOMIC_RELAXED) - r[i].settled_at.calls < SHORT_WINDOW_CALLS)
            return 0;
    return 1;
}

double cc_settle_stopped_s(void) {
    return __atomic_load_n(&stage, __ATOMIC_ACQUIRE) >= STARTS_BACK ? stopped_s : 0.0;
}

void cc_settle_extend(struct cc_region_sample *o, const struct cc_region *r, struct cc_settle_extra *extra) {
    if (__atomic_load_n(&stage, __ATOMIC_ACQUIRE) < STARTS_BACK)
        return;
    static const struct cc_sync_snap none;
    const struct cc_sync_snap *a = &r->settled_at, *b = &r->stopped_at;
    if (!b->calls || o->calls <= b->calls) /* a region first run later, or a forked child's */
        return;
    if (b->calls <= a->calls) /* no calls in that window: the rate of all before */
        a = &none;
    double after = (double)(o->calls - b->calls) / (double)(b->calls - a->calls);
    for (int k = 0; k < CC_NSETTLE; k++) {
        int c = cc_settle_cats[k];
        double acq = after * (double)(b->acq[k] - a->acq[k]);
        double contended = after * (double)(b->contended[k] - a->contended[k]);
        double wait = after * cc_ticks_to_s(b->wait[k] - a->wait[k]);
        double hold = after * cc_ticks_to_s(b->hold[k] - a->hold[k]);
        o->acquisitions[c] += (unsigned long long)(acq + 0.5);
        o->contended[c] += (unsigned long long)(contended + 0.5);
        o->stall_s[c] += wait;
        o->hold_s[c] += hold;
        o->serial_s += hold;
        extra->acq[k] += acq;
        extra->contended[k] += contended;
        extra->wait_s[k] += wait;
        extra->hold_s[k] += hold;
    }
}

void cc_settle_extend_process(struct cc_region_sample *o, const struct cc_settle_extra *extra) {
    for (int k = 0; k < CC_NSETTLE; k++) {
        int c = cc_settle_cats[k];
        o->acquisitions[c] += (unsigned long long)(extra->acq[k] + 0.5);
        o->contended[c] += (unsigned long long)(extra->contended[k] + 0.5);
        o->stall_s[c] += extra->wait_s[k];
        o->hold_s[c] += extra->hold_s[k];
        o->serial_s += extra->hold_s[k];
    }
}
