/* Steering's start in C, from what the sampler already counts (issue #40: steering that
 * cannot pay costs nothing): the model (an embedded interpreter) starts only at a window
 * whose answer steering can act on and only where a region can pay for it, and a convoy
 * takes its first step here, at the short first look, before the interpreter has started.
 * The model's own rules (model/runtime/steering.py, history.py) mirror the constants. */
#define _GNU_SOURCE
#include <stddef.h>

#include "corecast.h"
#include "sample.h"
#include "settle.h"
#include "steer_start.h"

/* Serialising waits: a region whose threads spend most of their time in them is a convoy. */
static const int lock_waits[] = {CC_STALL_MUTEX, CC_STALL_RWLOCK, CC_STALL_CRITICAL, CC_STALL_ATOMIC,
                                 CC_STALL_OMPLOCK};
#define CONVOY_SHARE 0.5 /* of a region's thread time waiting for locks */

static double not_stalled(const struct cc_region_sample *g) {
    double stalls = 0, thread_s = g->threads * g->wall_s;
    for (int k = 0; k < CC_NSTALL; k++)
        stalls += g->stall_s[k];
    return thread_s > 0 ? 1.0 - stalls / thread_s : 1.0;
}

/* A convoy: the region's threads spend more than CONVOY_SHARE of their time waiting for
 * locks, or it takes a lock every call and more than that share is stalled at all (its
 * lock's hand-offs also show as imbalance: on a loaded 2-core VM omp_slowdown's first
 * look showed 65% of its thread time stalled, less than half of it in lock waits). */
static int is_convoy(const struct cc_region_sample *g) {
    if (!cc_is_omp_region(g) || g->nested || g->requested < 2 || g->calls < 2 || g->wall_s <= 0)
        return 0; /* 2 calls: what steering's history takes as measured (history.MIN_CALLS) */
    double waited = 0;
    unsigned long long taken = 0;
    for (size_t k = 0; k < sizeof lock_waits / sizeof lock_waits[0]; k++) {
        waited += g->stall_s[lock_waits[k]];
        taken += g->acquisitions[lock_waits[k]];
    }
    return waited > CONVOY_SHARE * g->threads * g->wall_s || (taken >= g->calls && not_stalled(g) < CONVOY_SHARE);
}

/* Steering's rule in C (what the sampler counts): a region can pay for steering only if
 * it is an outermost OpenMP region asked for 2 threads or more and the stall bound leaves
 * room: own - 1 threads with no stalls against the own count at its measured share E of
 * thread time not stalled, (own - 1) / (own E) - 1, beats the noise of a window, or the
 * region takes locks.  These are the model's own "one thread", "nested" and "no room to
 * gain" tests (model/runtime/steering.py guard), the last with the stall bound alone: the
 * window model's preferred count comes from the same stalls; and the room must pay for the
 * model's own cost over the region's time so far (MODEL_COST_S), whose windows after the
 * model's first must hold one step's measurement (measure_windows; steering.py's "too
 * early" in spans: refused here before, calls too slow for one window went unsteered).
 * The bound does not hold where a lock's hand-offs between cores make the work itself
 * slower with more threads (omp_slowdown at 2 threads: 48% of its thread time not stalled,
 * so the bound leaves 4% room, and 1 thread runs it 100x faster), so a region whose lock
 * acquisitions could cost more than LOCK_SHARE of its thread time at HANDOFF_S each is
 * left to the model (counted, not timed: waits and holds are timed on a sample of the
 * acquisitions; a loaded VM once showed that convoy 74% not stalled for 1.4 s).  While no
 * region can pay, the model does not start (it would take a core the program's threads may
 * hold, for nothing) and the regions count as settled at their own count (settle.c hands
 * the section wrappers back); checked every window, a region that later can pay starts it. */
#define CALLS_PER_WINDOW 4 /* steering.CALLS_PER_WINDOW: calls a step's span is charged for */
#define STEER_NOISE 0.03   /* steering.NOISE */
#define STEER_EFFICIENCY 0.8 /* steering.EFFICIENCY: thread time not stalled of a region left alone */
#define LOCK_SHARE 0.02    /* history.LOCK_SHARE: a region that takes locks */
#define HANDOFF_S 20e-6    /* a lock's hand-off between cores at its dearest: a futex wake-up */
/* What the model costs the program once started (the interpreter, 15-25 ms of CPU, and a
 * run per window, on a core the program's threads may hold): the room the stall bound
 * leaves must be worth that much over the region's time so far, which stands for the time
 * still to come (a run that has lasted t is as likely as not to last about t more).  A
 * steered NPB bt.W at its best count (16 cores) ended 6.9% later than unsteered, the model
 * started 0.2 s into its 0.38 s (benchmarks/steer16), and with the rule over the region's
 * whole time still 7.2% (#40): no step acts before the model's first window has passed, so
 * that window's share of the time to come is left out (region_may_pay). */
#define MODEL_COST_S 0.05
/* A lock-taking region that held this share of the run is left to the model however short
 * the run (a convoy); one that held less must pay for it with all its time to come saved. */
#define RUN_SHARE 0.5

/* Windows a step's measurement is charged for (steering.measure_windows): 1, or as many
 * whole windows as CALLS_PER_WINDOW calls take at the region's rate so far. */
static double measure_windows(double per_window) {
    double w = per_window >= CALLS_PER_WINDOW ? 1 : CALLS_PER_WINDOW / per_window;
    return (double)(long)w < w ? (double)(long)w + 1 : w;
}

/* A region's lock acquisitions, every category that takes a lock. */
static unsigned long long lock_taken(const struct cc_region_sample *g) {
    unsigned long long taken = 0;
    for (size_t k = 0; k < sizeof lock_waits / sizeof lock_waits[0]; k++)
        taken += g->acquisitions[lock_waits[k]];
    return taken;
}

/* Whether a region's lock acquisitions, at a hand-off's dearest, could cost more than
 * LOCK_SHARE of its thread time. */
static int hands_off(const struct cc_region_sample *g) {
    return (double)lock_taken(g) * HANDOFF_S > LOCK_SHARE * g->threads * g->wall_s;
}

static int region_may_pay(const struct cc_sample *s, const struct cc_region_sample *g) {
    if (!cc_is_omp_region(g) || g->nested || g->requested < 2 || g->wall_s <= 0 || s->elapsed_s <= 0 || !g->calls)
        return 0;
    /* The region's time to come, as its time so far, less the first window after the start
     * (steering's first step is that window's answer): the gain comes after. */
    double ahead = g->wall_s * (s->elapsed_s - s->window_s) / s->elapsed_s;
    if (hands_off(g))
        return g->wall_s >= RUN_SHARE * s->elapsed_s || ahead >= MODEL_COST_S;
    double e = not_stalled(g);
    double room = e > 0 ? (g->requested - 1.0) / (g->requested * e) - 1.0 : 1e9; /* all stalled */
    double span_s = measure_windows((double)g->calls / s->elapsed_s * s->window_s) * s->window_s;
    return room > STEER_NOISE && room * ahead >= MODEL_COST_S && s->elapsed_s - s->window_s >= span_s;
}

/* A region that takes a lock every call, whose lock hand-offs could cost its threads'
 * time (hands_off), and that loses more of it to stalls than a region steering leaves
 * alone (STEER_EFFICIENCY).  Once it held most of the run, and the run has lasted the
 * model's cost (so, as likely as not, that much is to come), it starts the model before
 * the first whole window, as a convoy does (cc_steering_may_act): it would start it at that
 * window anyway (region_may_pay), and a convoy whose waits the lock wrappers do not see
 * lost the window at the own count (libgomp's critical section on a loaded 2-core VM:
 * no contended acquisition, 70-75% of thread time not stalled, 0.23 s at 2 threads of a
 * program 1 thread runs in 0.43 s). */
static int lock_bound(const struct cc_region_sample *g) {
    if (!cc_is_omp_region(g) || g->nested || g->requested < 2 || g->calls < 2)
        return 0;
    return lock_taken(g) >= g->calls && hands_off(g) && not_stalled(g) < STEER_EFFICIENCY;
}

/* Whether steering can act on a model run at this window end.  The model (an interpreter,
 * 15-25 ms of CPU, then a run per window) takes a core from a program whose threads may
 * hold every one, so it starts only when its answer can change a team: steering takes no
 * step that can lose before the run has lasted a window (model/runtime/steering.py,
 * guard's "too early"), and takes one at once only where no smaller team can lose, a
 * convoy (is_convoy, or a lock-bound region once the run has lasted the model's cost).
 * Started with the sampler, it cost sub-second programs at their best count 10-22% (NPB
 * cg.W, is.W, mg.W, bt.S at 2 threads on 2 cores, none explored; docs/steering.md) and bt.W
 * 17% at 16 threads (benchmarks/device16). */
int cc_steering_may_act(const struct cc_sample *s) {
    if (s->elapsed_s * 1000 >= cc_cfg.window_ms)
        return 1;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (is_convoy(g) || (lock_bound(g) && g->wall_s >= RUN_SHARE * s->elapsed_s && s->elapsed_s >= MODEL_COST_S))
            return 1;
    }
    return 0;
}

/* Before the first whole window: milliseconds to the next look where a convoy or a
 * lock-taking region may yet start the model (the program's start-up, before its first
 * region, can keep its share of the run under RUN_SHARE at the first look); 0: none. */
long cc_next_lock_look_ms(const struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++)
        if (is_convoy(&s->regions[i]) || lock_bound(&s->regions[i])) {
            long ms = (long)((MODEL_COST_S - s->elapsed_s) * 1000) + 1;
            return ms < CC_FIRST_LOOK_MS ? CC_FIRST_LOOK_MS : ms;
        }
    return 0;
}

int cc_steering_may_pay(const struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++)
        if (region_may_pay(s, &s->regions[i]))
            return 1;
    return 0;
}

/* Whether a team of 2 or more has run the 2 calls a convoy's look needs. */
int cc_team_has_run(const struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (cc_is_omp_region(g) && !g->nested && g->requested >= 2 && g->calls >= 2)
            return 1;
    }
    return 0;
}

/* A convoy's first step, taken here at the short first look instead of after the model's
 * start (an interpreter: on a loaded 2-core VM the convoy ran 30-odd calls at 2 threads,
 * 0.37 s, before its first answer): the count whose threads, without stalls, do the work
 * the own count's did, floor(threads x E), at least 1.  The model's first answer replaces
 * it (its preferred count, or the own count where its guard says no). */
int cc_convoy_first_steps(struct cc_sample *s, struct cc_region *const *refs, double scheduled_s) {
    int stepped = 0;
    for (int i = 0; i < s->nregions; i++) {
        struct cc_region_sample *g = &s->regions[i];
        if (!is_convoy(g) || __atomic_load_n(&refs[i]->steer_threads, __ATOMIC_RELAXED) > 0)
            continue;
        int n = (int)(g->threads * not_stalled(g));
        n = n < 1 ? 1 : n;
        if (n < g->requested) { /* the model sees it taken (steering.guard) */
            __atomic_store_n(&refs[i]->steer_threads, n, __ATOMIC_RELAXED);
            g->steered_to = n;
            cc_settle_stepped(refs[i], scheduled_s);
            stepped = 1;
        }
    }
    return stepped;
}


/* Steering's end: whether the model's answer at this window is known without running it.
 * Once a region has settled, its RegionSteer answers that count for ever
 * (model/runtime/steering.py); a region that is nested, asked for one thread or counted with
 * the regions past the table is never steered (runtime/bridge.py, _steer); and a region of
 * fewer than MEASURED_CALLS calls is answered "not measured yet", its own count, until it
 * runs again (a region run once at start-up, as NPB's initialisations: cg.W's 7 such
 * regions kept the model running every window after its loops had settled).  Where every
 * OpenMP region of the sample is one of these, the window's model run would change no team
 * and only take a core the program's threads may hold; ``kept`` then holds the answer
 * settle.c reads, each region's steer_chosen (its settled count, 0 where none, as the model
 * gives).  Any other region sends the window to the model, whether it ran in it or not: an
 * idle region's guard still reads the run's elapsed time.  The exit's prediction reads the
 * same cumulative counts either way. */
#define MEASURED_CALLS 2 /* history.MIN_CALLS: calls at a count before steering measures it */
int cc_steering_settled(const struct cc_sample *s, struct cc_region *const *refs, struct cc_result *kept) {
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (cc_is_omp_region(g) && !g->nested && g->requested >= 2 && !cc_region_other(refs[i]) &&
            g->calls >= MEASURED_CALLS && refs[i]->steer_settled <= 0)
            return 0;
    }
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        kept->regions[i].steer_chosen = cc_is_omp_region(g) ? refs[i]->steer_settled : 0;
    }
    return 1;
}
