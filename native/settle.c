/* Counting that stops once it has served: a critical section of a few nanoseconds costs as
 * much again through its wrappers, paid on every call for the whole run.  Once steering
 * has settled the regions that run (CORECAST_STEER), or without steering once counting
 * them costs the program more than a share of its time (cc_settle_counting_costs), the
 * counts no longer steer anything; the exit report still wants them.  So at the end of
 * the first window in which every region that ran had settled and ran at its settled
 * count, the sampler snapshots each region's counts, hands the section starts back to the
 * real functions (got.c), and a window later the ends (every timed hold begun before has
 * been released through its wrapper by then).  A region's later calls are credited at its
 * rate per call in that window (its settled team size's), and the report says so.  When
 * a region that has not settled runs (a new one, or one that did not run then), the
 * wrappers are taken back, the credit so far is kept, and counting goes on: steering
 * reads its stalls, and its rate is measured.  CORECAST_KEEP_COUNTING=1 keeps every
 * wrapper. */
#include <string.h>
#include <time.h>

#include "boundary.h"
#include "credit.h"
#include "got.h"
#include "lazy.h"
#include "sample.h"
#include "settle.h"

enum { COUNTING, STARTS_BACK, ENDS_BACK };
#define SHORT_WINDOW_CALLS 64 /* calls that measure a count well enough to end its window early */
/* Calls a rate per call rests on: counts move during a call, so a call in flight at either
 * snapshot (up to one call's sections) stays under 1% of it. */
#define RATE_CALLS 256
/* Whole calls a rate between two boundaries rests on (boundary.c: exact at any call length;
 * long calls never made RATE_CALLS in a window, and stayed counted for the whole run). */
#define EDGE_CALLS 1
static double uncounted_s;          /* earlier spans without counting */
static struct cc_settle_extra kept; /* their credit, for the process (regions hold theirs) */
static double step_scheduled_s = -1; /* the sampler's scheduled time at the last step */
static double stop_scheduled_s = -1; /* from it to the last hand-back */

/* The team a region runs with under steering's cap ``steer`` (0: the program's own). */
static int team_of(int steer, const struct cc_region_sample *g) {
    return steer > 0 && steer < g->requested ? steer : g->requested;
}

static int stage;
static double stopped_s; /* when counting stopped last */
/* 1: an exact span for ``q``'s rate per call now in ``*a``, ``*b``: two boundaries, or the
 * start (zero counts) where nothing was handed back yet and every call ran at one team. */
static int edge_span(const struct cc_region *q, struct cc_sync_snap *a, struct cc_sync_snap *b) {
    int n = cc_boundaries_of(q, a, b), steer = __atomic_load_n(&q->steer_threads, __ATOMIC_RELAXED);
    if (n == 1)
        *b = *a;
    if (n && !stopped_s && stage == COUNTING && (steer <= 0 || steer >= q->requested) &&
        !__atomic_load_n(&q->hist[1].threads, __ATOMIC_ACQUIRE)) /* one team so far */
        *a = (struct cc_sync_snap){.boundary = 1};
    return n && b->calls - a->calls >= EDGE_CALLS;
}


/* What ``r``'s ``calls`` beyond its stopped_at snapshot stand for and were not counted, to
 * ``now``: at its rate per call in the window before it, less what was counted since.  0:
 * nothing to credit. */
static int credit_to(const struct cc_region *r, uint64_t calls, const struct cc_sync_snap *now, struct credit *out) {
    static const struct cc_sync_snap none;
    const struct cc_sync_snap *a = &r->rate_at, *b = &r->stopped_at;
    if (!b->calls || calls <= b->calls) /* a region first run later, or a forked child's */
        return 0;
    if (b->calls <= a->calls) /* no calls in that window: the rate of all before */
        a = &none;
    credit_at_rate(out, (double)(calls - b->calls), a, b);
    less_counted(out, b, now); /* calls in flight at the rewrite, or made while it ran */
    return 1;
}

static int credit_of(const struct cc_region *r, uint64_t calls, struct credit *out) {
    struct cc_sync_snap now;
    snap(&now, r);
    return credit_to(r, calls, &now, out);
}

/* 1: every region that ran in the window has a settled count; -1: one that ran has not;
 * 0: none ran.  ``*measured``: each ran at its settled count (the window gives its rate). */
static int all_settled(const struct cc_sample *s, const struct cc_result *r, struct cc_region *const *refs,
                       int *measured) {
    int any = 0;
    *measured = 1;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!cc_is_omp_region(g) || refs[i]->window_at.calls >= g->calls) /* did not run */
            continue;
        int chosen = r->regions[i].steer_chosen;
        if (!chosen)
            return -1;
        struct cc_sync_snap a, b;
        *measured &= team_of(refs[i]->window_at.team, g) == chosen &&
                     (g->calls - refs[i]->window_at.calls >= RATE_CALLS || edge_span(refs[i], &a, &b));
        any = 1;
    }
    return any;
}

static void hand_back(const struct cc_sample *s, struct cc_region *const *refs) {
    /* The snapshots precede the rewrite, so the rate's window (from window_at, the window's
     * start at the settled count, kept in rate_at) was all counted.  The rewrite takes
     * milliseconds, and the sampler may lose its core in it: the calls made meanwhile are
     * counted in part, and credit_of credits what they and later calls were not.  A region
     * of fewer calls takes its rate between boundaries (the latest, before the rewrite, is
     * where its credit starts). */
    for (int i = 0; i < s->nregions; i++) {
        struct cc_region *q = refs[i];
        struct cc_sync_snap a, b;
        if (!cc_is_omp_region(&s->regions[i]))
            continue;
        if (q->owed) { /* calls in flight at the take-back: credit_of runs on from stopped_at */
            q->owed = 0;
            continue;
        }
        if (s->regions[i].calls - q->window_at.calls < RATE_CALLS && edge_span(q, &a, &b)) {
            q->rate_at = a;
            q->stopped_at = b;
        } else {
            q->rate_at = q->window_at;
            snap(&q->stopped_at, q);
        }
    }
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        if (__atomic_load_n(&q->edge_want, __ATOMIC_RELAXED))
            cc_boundary_restart(q, 0);
    cc_gomp_hand_back(0, 1);
    if (cc_cfg.slow_rewrite) /* tests: the sampler loses its core as the rewrite ends */
        nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    stopped_s = s->elapsed_s;
    __atomic_store_n(&stage, STARTS_BACK, __ATOMIC_RELEASE); /* the snapshots first */
}

/* A region that first ran while nothing was counted: its calls then, credited once at its
 * rate per call since the wrappers were taken back (RATE_CALLS calls, or as many as were
 * counted before the next hand-back, or whole calls between boundaries).  ``fin``: the
 * exit's snapshot (a boundary where no call was in flight).  0: no rate yet. */
static int gap_credit(const struct cc_region *q, int counting, const struct cc_sync_snap *fin, struct credit *c) {
    struct cc_sync_snap now, ea, eb;
    const struct cc_sync_snap *a = &q->taken_at, *b = &now;
    if (fin)
        now = *fin;
    else if (counting)
        snap(&now, q);
    else if ((now = q->stopped_at).boundary) /* handed back at boundaries: their rate */
        a = &q->rate_at;
    if (counting && b->calls - a->calls < RATE_CALLS) {
        int n = cc_boundaries_of(q, &ea, &eb); /* at the exit, the first to the last call's end */
        if (n && fin && fin->boundary && fin->calls - ea.calls >= EDGE_CALLS)
            a = &ea;
        else if (edge_span(q, &ea, &eb))
            a = &ea, b = &eb;
    }
    uint64_t span = b->calls > a->calls ? b->calls - a->calls : 0;
    if (!span || (counting && span < RATE_CALLS && !a->boundary))
        return 0;
    static const struct cc_sync_snap none; /* a boundary's calls, less what was counted */
    credit_at_rate(c, (double)(a->boundary ? a->calls : q->gap_calls), a, b);
    if (a->boundary)
        less_counted(c, &none, a);
    return 1;
}

static void credit_gaps(void) {
    int counting = __atomic_load_n(&stage, __ATOMIC_ACQUIRE) == COUNTING;
    struct credit c;
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        if (q->gap_calls && gap_credit(q, counting, NULL, &c)) {
            keep(q, &c, &kept);
            q->gap_calls = 0;
        }
}

/* take_back's calls in flight: credited from stopped_at to the region's first boundary
 * since, where they have all ended (their counts from the take-back on are in it). */
static void credit_owed(void) {
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q)) {
        struct cc_sync_snap e, last;
        struct credit c;
        if (!q->owed || !cc_boundaries_of(q, &e, &last))
            continue;
        if (credit_to(q, e.calls, &e, &c))
            keep(q, &c, &kept);
        q->owed = 0;
        q->stopped_at.calls = 0;
    }
}

/* Counting again: the wrappers back in the slots (ends first: a timed start must meet its
 * end's wrapper), and each region's credit so far added to its counters for good. */
static void take_back(const struct cc_sample *s) {
    /* The slots are written at the end of the rewrite (which takes milliseconds): the credit
     * runs to the calls after it (credit_of leaves out what they counted). */
    if (stage == ENDS_BACK)
        cc_gomp_hand_back(1, 0);
    cc_gomp_hand_back(0, 0);
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q)) {
        struct credit c;
        if (!__atomic_load_n(&q->fn, __ATOMIC_ACQUIRE))
            continue;
        /* A call in flight ran uncounted until now, and ``calls`` leaves it out: of long
         * calls (a boundary's rate), up to a whole call was lost (8.4 of 9 calls credited
         * in 3 of 30 steered runs, handed back at the own count and taken back as the model
         * started).  Their credit waits for the region's next boundary (credit_owed), or
         * runs on from stopped_at (credit_of) if the next hand-back comes first. */
        uint64_t calls = __atomic_load_n(&q->calls, __ATOMIC_SEQ_CST); /* then begun: none ends unseen */
        int inflight = __atomic_load_n(&q->begun, __ATOMIC_SEQ_CST) > calls;
        int owed = q->stopped_at.boundary && q->stopped_at.calls && inflight;
        if (owed)
            cc_boundary_restart(q, 1);
        else if (credit_of(q, calls, &c))
            keep(q, &c, &kept);
        else if (!q->stopped_at.calls && (calls || inflight)) { /* first ran (or runs) after the stop */
            q->gap_calls = calls + inflight; /* credit_gaps: exact from a boundary */
            /* Long calls take boundaries from now: the look asks a window later, and a program
             * that ended before two were taken left its first calls uncredited. */
            double dt = s->elapsed_s - stopped_s, per_window = dt > 0 ? q->gap_calls / dt * cc_cfg.window_ms / 1e3 : 0;
            cc_boundary_restart(q, per_window < RATE_CALLS);
        }
        snap(&q->taken_at, q);
        q->stopped_at.calls = owed ? q->stopped_at.calls : 0;
        q->owed = owed;
    }
    if (s->elapsed_s > stopped_s) /* a forked child's clock starts afresh */
        uncounted_s += s->elapsed_s - stopped_s;
    __atomic_store_n(&stage, COUNTING, __ATOMIC_RELEASE);
}

/* 1: the next window should be short (see settle.h). */
int cc_settle_window(const struct cc_sample *s, const struct cc_result *r, struct cc_region *const *refs,
                     double scheduled_s) {
    int may = !cc_cfg.keep_counting; /* libgomp's wrappers, or libomp's mutex callbacks */
    credit_gaps();
    credit_owed();
    int measured, settled = all_settled(s, r, refs, &measured);
    if (stage != COUNTING && settled < 0)
        take_back(s);
    else if (stage == STARTS_BACK) {
        cc_gomp_hand_back(1, 1);
        __atomic_store_n(&stage, ENDS_BACK, __ATOMIC_RELEASE);
    } else if (may && stage == COUNTING && settled > 0 && measured) {
        hand_back(s, refs);
        stop_scheduled_s = step_scheduled_s >= 0 ? scheduled_s - step_scheduled_s : -1;
    }
    settled = settled > 0 && may && stage == COUNTING; /* at a count the window did not run */
    /* A region that steering moves to another count is watched: its window may end after a
     * short window, once it made SHORT_WINDOW_CALLS calls there (a long window at a count that
     * may be much slower is what a step costs); one that settled, until RATE_CALLS calls
     * at its count give its rate.  After the hand-back the ends follow a short window later.
     * A convoy stepped in C whose sections the model's first answer did not hand back was
     * moved too, and its window at the new count goes on as a step's: that answer may not
     * have measured the step (the model takes a window's team as the one that made most of
     * its calls, and its first window holds every call since the start; on a loaded 2-core
     * VM the interpreter's start left the new count fewer calls than the own count's first
     * window), or no call at the new count had ended yet.  Unwatched, the hand-back came a
     * whole window after the step (3 of 40 runs with two busy loops beside). */
    int watch = stage == STARTS_BACK;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!cc_is_omp_region(g))
            continue;
        struct cc_sync_snap *w = &refs[i]->window_at;
        int next = __atomic_load_n(&refs[i]->steer_threads, __ATOMIC_RELAXED);
        int moved = team_of(next, g) != team_of(w->team, g), stepped = moved || (w->c_step && stage == COUNTING);
        if (moved) /* boundaries at the old count are no rate for the new one */
            cc_boundary_restart(refs[i], __atomic_load_n(&refs[i]->edge_want, __ATOMIC_RELAXED));
        snap(w, refs[i]); /* the next window's start */
        w->c_step = 0;
        w->watch = settled ? RATE_CALLS : stepped ? SHORT_WINDOW_CALLS : 0;
        if (stepped)
            step_scheduled_s = scheduled_s;
        watch |= w->watch > 0;
    }
    return watch;
}

int cc_settle_window_measured(void) {
    struct cc_sync_snap a, b;
    for (const struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        if (q->window_at.watch && __atomic_load_n(&q->fn, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&q->calls, __ATOMIC_RELAXED) - q->window_at.calls < (uint64_t)q->window_at.watch &&
            (q->window_at.watch != RATE_CALLS || !edge_span(q, &a, &b)))
            return 0;
    return 1;
}

int cc_settle_look(double elapsed_s) {
    return cc_boundaries_ask(!cc_cfg.keep_counting && !cc_cfg.probe && stage == COUNTING, elapsed_s,
                             RATE_CALLS);
}

double cc_settle_stopped_s(void) {
    return __atomic_load_n(&stage, __ATOMIC_ACQUIRE) >= STARTS_BACK ? stopped_s : 0.0;
}

/* The exit's sample is built before the exit waits for a window still in the model (the
 * steered convoy's interpreter start), whose answer may hand the wrappers back after it: for
 * that sample counting had not stopped.  It read -0.01 to -0.04 s uncounted, and counting
 * stopped after the run's end, in 6 of 6 runs of a convoy that ended just after its step. */
double cc_settle_stopped_by_s(double elapsed_s) {
    double t = cc_settle_stopped_s();
    return t > 0 && t <= elapsed_s ? t : 0.0;
}

double cc_settle_uncounted_s(double elapsed_s) {
    double t = cc_settle_stopped_by_s(elapsed_s);
    return uncounted_s + (t > 0 ? elapsed_s - t : 0.0);
}

unsigned long long cc_settle_extend(struct cc_region_sample *o, const struct cc_region *r, struct cc_settle_extra *extra,
                                    int final) {
    struct credit c;
    unsigned long long unrated = 0;
    int st = __atomic_load_n(&stage, __ATOMIC_ACQUIRE);
    if (final && r->gap_calls) { /* the exit came before credit_gaps had a rate: up to now */
        struct cc_sync_snap fin;
        snap_end(&fin, r);
        if (gap_credit(r, st == COUNTING, st == COUNTING ? &fin : NULL, &c))
            add_credit(o, &c, extra);
        else
            unrated = r->gap_calls;
    } else if (final && st >= STARTS_BACK && !r->stopped_at.calls && !r->owed)
        unrated = o->calls; /* it first ran after the hand-back: none of it counted */
    if ((st >= STARTS_BACK || r->owed) && credit_of(r, o->calls, &c))
        add_credit(o, &c, extra);
    return unrated;
}

void cc_settle_extend_process(struct cc_region_sample *o, const struct cc_settle_extra *extra) {
    for (int k = 0; k < CC_NSETTLE; k++) {
        int cat = cc_settle_cats[k];
        o->acquisitions[cat] += (unsigned long long)(extra->acq[k] + kept.acq[k] + 0.5);
        o->contended[cat] += (unsigned long long)(extra->contended[k] + kept.contended[k] + 0.5);
        o->stall_s[cat] += extra->wait_s[k] + kept.wait_s[k];
        o->hold_s[cat] += extra->hold_s[k] + kept.hold_s[k];
        o->serial_s += extra->hold_s[k] + kept.hold_s[k];
    }
}

double cc_settle_stop_scheduled_s(void) { return stop_scheduled_s; }

void cc_settle_stepped(struct cc_region *r, double scheduled_s) {
    /* So that the model's first answer, if it settles there, finds a whole window at the
     * settled count and the hand-back need not wait for another one. */
    snap(&r->window_at, r);
    r->window_at.c_step = 1;
    cc_boundary_restart(r, __atomic_load_n(&r->edge_want, __ATOMIC_RELAXED)); /* a new count */
    step_scheduled_s = scheduled_s;
}

/* No region can pay, or nothing steers: each counts as settled at its own count
 * (settle.c's input), except a region that first ran after the sections were handed back
 * (none of its sections was counted, and it has no rate to credit them at): settle.c then
 * takes the wrappers back until it has one. */
int cc_settle_own_counts(const struct cc_sample *s, struct cc_region *const *refs, double scheduled_s) {
    static struct cc_result *none; /* only the regions' steer_chosen is read */
    static size_t have;
    if (!cc_map_grown((void **)&none, &have, CC_RECORD_BYTES(struct cc_result, s->nregions)))
        return 0; /* refused (lazy.h): no region settles at its own count, the wrappers keep counting */
    int stopped = cc_settle_stopped_s() > 0;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i]; /* the process has no ref */
        int omp = cc_is_omp_region(g);
        int unrated = omp && stopped && !refs[i]->stopped_at.calls && g->calls > refs[i]->window_at.calls;
        none->regions[i].steer_chosen = omp && !unrated ? g->requested : 0;
    }
    return cc_settle_window(s, none, refs, scheduled_s);
}

/* Counting that costs more than it tells, without steering: every critical section,
 * atomic and OpenMP lock goes through two wrappers, a few ns each way, which for a section
 * of a few ns is as much again (omp_slowdown at 1 thread, 16M sections: +25% CPU time on
 * the 16-core machine, +80% on the 2-core VM).  Where the sections counted so far cost
 * more than CC_COUNT_SHARE_PCT % of the program's CPU time at COUNT_COST_S each, the regions count
 * as settled at their own count and settle.c hands the wrappers back once a window gave
 * each region's rate per call; later calls are credited at that rate (the report says for
 * how long).  Not with probing (its calls run at other team sizes) or
 * CORECAST_KEEP_COUNTING.  On libomp the OMPT mutex callbacks go back alike (shims/ompt.c). */
#define COUNT_COST_S 5e-9 /* per section, start and end: 4.4 ns on the 2-core VM, 6 ns at 16 cores */
int cc_settle_counting_costs(const struct cc_sample *s) {
    if (cc_cfg.probe || cc_cfg.keep_counting || s->nregions < 2)
        return 0;
    const struct cc_region_sample *p = &s->regions[s->nregions - 1]; /* the process */
    double taken = 0, cpu = p->cpu_s > 0 ? p->cpu_s : s->elapsed_s;
    for (int k = 0; k < CC_NSETTLE; k++)
        taken += (double)p->acquisitions[cc_settle_cats[k]];
    return taken * COUNT_COST_S > CC_COUNT_SHARE_PCT / 100.0 * cpu;
}
