/* One call of an OpenMP region and the synchronisation timed inside it: the bookkeeping
 * both OpenMP paths share (shims/gomp.c wraps libgomp's entry points, shims/ompt.c
 * receives LLVM/Intel libomp's OMPT callbacks).  Fast-path code: no malloc, stdio, locks. */
#ifndef CORECAST_OMP_CALL_H
#define CORECAST_OMP_CALL_H

#include "corecast.h"

#define CC_MAX_TEAM 256
#define CC_CONTENDED_TICKS 2000 /* a critical wait longer than this counts as contended */
/* Critical, atomic and ordered sections have no try operation, so finding out whether
 * one waited means timing it.  Every one is counted; some are timed (wait, hold and
 * release, scaled up by the acquisitions they stand for).  A timed one costs four
 * timestamps (~20 ns each in a VM, more than an uncontended section), so the gap to the
 * next timed one follows the thread's running means of wait and hold: CC_SAMPLE_MIN
 * apart where they add up to CC_SAMPLE_TICKS / CC_SAMPLE_MIN ticks or more, up to
 * CC_SAMPLE_MAX for empty sections, which keeps the timing near 1% of the time it
 * measures (the mean gap: each is drawn around it, cc_sample_next).  The gap is decided
 * before the acquisition it lands on, so the scaled sums stay unbiased; only a sample over
 * CC_SAMPLE_OUTLIER times its running mean and over CC_SAMPLE_CAP_MIN (a preemption) counts
 * once beyond that bound instead of ``scale`` times.  (The OMPT path samples its locks the
 * same way.) */
#define CC_SAMPLE_MIN 16
#define CC_SAMPLE_MAX 1024
#define CC_SAMPLE_TICKS 8192
#define CC_SAMPLE_OUTLIER 256
#define CC_SAMPLE_CAP_MIN 65536 /* ticks (~20 us): shorter samples always count in full */

/* What one member leaves for the join: where its share ended and how long it ran.  Tasks
 * a member runs after its share ends (in the runtime's closing barrier) are work, not idle
 * time: its thread's slot (-1: none), and its task ticks and task count at the end (the
 * count's low 32 bits: a difference is all the join needs), read at the join.  Half a
 * cache line each: in arrays per field, eight members' stores met in each line at every
 * region's end (and members 0 and 1 stored into the line every member reads at its
 * start).  Not a whole line each: libgomp's calls keep them on the forking thread's stack. */
struct cc_member_end {
    uint64_t end, busy, task0;
    int32_t slot;
    uint32_t tasks0;
} __attribute__((aligned(32)));
_Static_assert(sizeof(struct cc_member_end) == 32, "half a cache line per member");

/* Shared by the team: the master fills region/team/t0, each member its own slot of
 * ``ends`` (written before the implicit barrier, read by the master after it: no
 * clearing; a member not measured marks its slot, cc_member_unmeasured). */
struct cc_call {
    struct cc_region *region;
    int team;
    int probe_own; /* > 0: a probe call; the program asked for this many threads */
    uint64_t t0;
    int cap; /* members ``ends`` holds: those past it are not measured (cc_overflow) */
    struct cc_member_end *ends;
};

/* Set once a wrapped GOMP_task ran: only then does a call's join look at task ticks. */
extern int cc_tasks_seen CC_HIDDEN;

/* One member's part in a call: where it started and, nested, its counters then. */
struct cc_member {
    struct cc_call *call;
    int id;
    int nested;
    int open; /* entered, not yet left */
    uint64_t t0;
    uint64_t single_t0, single_task0; /* nested: the single block open at the enter, set aside */
    struct cc_counts before;
};

/* The master, before the team starts: the region keyed by ``key``, activity noted. */
void cc_call_begin(struct cc_call *c, void *key, struct cc_thread *t) CC_HIDDEN;
/* The master, after the implicit barrier: wall, busy, imbalance and history of the call. */
void cc_call_finish(struct cc_call *c) CC_HIDDEN;
/* Every member, around its share of the work (``id``: its thread number in the team). */
void cc_member_enter(struct cc_member *m, struct cc_call *c, int id, struct cc_thread *t) CC_HIDDEN;
void cc_member_leave(struct cc_member *m, struct cc_thread *t, uint64_t now) CC_HIDDEN;
/* OMPT: a member stops at a barrier that may be the join (its end noted and its counts
 * folded as cc_member_leave's, its counts from then on kept apart) and, where it was not,
 * goes on: what its thread did inside the barrier (the tasks it ran there) folds with the
 * rest at its next leave, and its busy span still runs from its enter.  Paused, it is still
 * in the team (a team a task starts in that barrier is nested) until cc_member_end, at its
 * implicit task's end, leaves it (or, never paused, leaves at once). */
void cc_member_pause(struct cc_member *m, struct cc_thread *t, uint64_t now) CC_HIDDEN;
void cc_member_resume(struct cc_member *m) CC_HIDDEN;
void cc_member_end(struct cc_member *m, struct cc_thread *t) CC_HIDDEN;
/* OMPT: member ``id`` of ``c`` is not measured (cc_call_finish reads no end of it). */
void cc_member_unmeasured(struct cc_call *c, int id) CC_HIDDEN;
/* The smaller team a call of ``r`` gets (a probe's or steering's), or 0 for the program's
 * own ``own`` threads (its num_threads, or the runtime's default); a probe sets
 * ``*probe_own``.  Notes ``own`` as the team the program asked for. */
struct cc_gomp;
int cc_team_cap(struct cc_region *r, int own, const struct cc_gomp *g, int *probe_own) CC_HIDDEN;
/* The program asked for exact team sizes (OMP_DYNAMIC=false, omp_set_dynamic(0)): no team is
 * capped, and the exit says steering or probing stood aside (report.c). */
extern int cc_exact_teams CC_HIDDEN;
/* Calls and wall time at one team size (0, 0 if it never ran at that size). */
void cc_hist_at(struct cc_region *r, int team, uint64_t *calls, uint64_t *wall);

/* 0: count this acquisition only; otherwise time it, standing for the returned number. */
static inline uint32_t cc_sample_due(struct cc_thread *t) {
    if (t->sample_left) {
        t->sample_left--;
        return 0;
    }
    return t->sample_span ? t->sample_span : 1;
}

/* A timed duration standing for ``scale`` acquisitions, and its running mean ``*mean``
 * (1/8 weight) updated.  Exact samples (scale 1) neither scale nor move the mean. */
static inline uint64_t cc_scaled(uint64_t ticks, uint32_t scale, uint32_t *mean) {
    if (scale <= 1)
        return ticks;
    uint64_t cap = (uint64_t)*mean * CC_SAMPLE_OUTLIER; /* no mean yet (a thread's first scaled
                                                       * sample, at the widest gap): the floor */
    if (cap < CC_SAMPLE_CAP_MIN)
        cap = CC_SAMPLE_CAP_MIN;
    uint64_t kept = ticks < cap ? ticks : cap;
    if (kept > UINT32_MAX)
        kept = UINT32_MAX;
    /* the mean follows the kept part: a lasting rise moves the bound up within a few samples */
    *mean = *mean ? (uint32_t)((int64_t)*mean + ((int64_t)kept - (int64_t)*mean) / 8) : (uint32_t)kept;
    return kept * scale + (ticks - kept);
}

/* What of a sampled wait (or release) of ``w`` ticks an uncontended one costs: the timestamps
 * and the real call.  ``free``: the running mean (1/8 weight) of the thread's samples that
 * look free, and the fastest, each stored plus one (0: none yet); a sample looks free under
 * 1.5 times the fastest and CC_CONTENDED_TICKS.  ``also``: the same of another kind (a
 * release's for a wait), whose mean bounds the cost.  Scaled up, that cost read as waiting:
 * an empty critical section taken by one thread alone recorded 33-47% of its thread's time
 * as critical waits, and a steered run's process line said critical 65-70% with its one
 * region at 1 thread.  Only the cost comes off: what a contended one took beyond it, were it
 * only the lock's line moving between cores, is lost to contention (counting nothing under
 * twice the fastest left a 2-thread convoy critical 3-5% where 1 thread was 1.4-2x as fast,
 * and steering kept 2 threads).  The mean, not the fastest: an extreme, that left the free
 * ones' spread (~25 ticks each on the 2-core VM).  A thread whose every acquisition waits
 * has waits that look free: a free release's mean bounds it (waits of 800-1600 ticks read
 * as free).  Not passed here: exact samples (a thread's first, a failed test's).  The
 * running means of the gap keep the whole ``w``: it weighs the timing against the section. */
static inline uint64_t cc_uncontended_part(uint32_t free[2], uint64_t w, const uint32_t also[2]) {
    uint64_t fastest = free[1] ? (uint64_t)free[1] - 1 : UINT64_MAX;
    if (w <= CC_CONTENDED_TICKS) {
        if (w < fastest) {
            fastest = w;
            free[1] = (uint32_t)w + 1; /* at most CC_CONTENDED_TICKS: fits */
        }
        if (2 * w < 3 * fastest || w == fastest) {
            int64_t mean = free[0] ? (int64_t)free[0] - 1 : (int64_t)w;
            free[0] = (uint32_t)(mean + ((int64_t)w - mean) / 8) + 1;
        }
    }
    uint64_t cost = free[0] ? (uint64_t)free[0] - 1 : UINT64_MAX;
    uint64_t bound = also && also[0] ? (uint64_t)also[0] - 1 : UINT64_MAX;
    cost = bound < cost ? bound : cost;
    if (cost == UINT64_MAX)
        return 0;
    return w > cost ? cost : w;
}

/* ``scaled`` (cc_scaled's, of a sample standing for ``scale``) less ``part`` per acquisition. */
static inline uint64_t cc_less_per_acquisition(uint64_t scaled, uint64_t part, uint32_t scale) {
    uint64_t less = part * (scale > 1 ? scale : 1);
    return scaled > less ? scaled - less : 0;
}

/* After a timed acquisition: the gap to the next one, from the running means. */
static inline void cc_sample_next(struct cc_thread *t) {
    uint64_t typical = (uint64_t)t->sample_wait + t->sample_hold;
    uint64_t g = CC_SAMPLE_TICKS / (typical ? typical : 1);
    g = g < CC_SAMPLE_MIN ? CC_SAMPLE_MIN : g > CC_SAMPLE_MAX ? CC_SAMPLE_MAX : g;
    /* A random gap of mean g, and the scale the one drawn: a fixed gap fell in step with a
     * loop that takes several sections (a cheap and a costly one in turn: 5 samples on one,
     * 24924 on the other, holds +65%).  The clock's low bits, mixed, are random enough. */
    uint64_t r = (cc_now() * 0x9E3779B97F4A7C15ull) >> 40;
    g = g / 2 + r % g;
    t->sample_left = (uint32_t)g - 1;
    t->sample_span = (uint32_t)g;
}

/* A single block runs until the barrier that follows it (or the region's end). */
static inline void cc_close_single(struct cc_thread *t, uint64_t now) {
    if (t->single_t0) {
        /* Tasks the single thread ran, or waited for in taskwait, were parallel work. */
        uint64_t span = now - t->single_t0, other = t->n.task_ticks + t->taskwait_ticks - t->single_task0;
        CC_ADD(cc_counts(t)->single, span > other ? span - other : 0);
        t->single_t0 = 0;
    }
}

/* Where a single block starts: its time, and the task time it must not count. */
static inline void cc_open_single(struct cc_thread *t) {
    t->single_task0 = t->n.task_ticks + t->taskwait_ticks;
    t->single_t0 = cc_now();
}

/* Timed holds: pushed when a timed acquisition returns, popped by the matching release
 * (an untimed acquisition pushes nothing, so its release finds another object on top). */
static inline void cc_held_push(struct cc_thread *t, const void *obj, int cat, uint64_t now, uint32_t scale) {
    if (t->nheld < CC_MAX_HELD) {
        t->held_obj[t->nheld] = obj;
        t->held_cat[t->nheld] = cat;
        t->held_t0[t->nheld] = now;
        t->held_scale[t->nheld] = scale;
        t->nheld++;
    }
}

/* Returns the popped hold's scale (0: none popped), for cc_released. */
static inline uint32_t cc_held_pop(struct cc_thread *t, const void *obj, uint64_t now) {
    int top = t->nheld - 1;
    while (top >= 0 && t->held_obj[top] != obj) /* OpenMP locks may be released in any order */
        top--;
    if (top >= 0) {
        uint64_t *hold = &cc_counts(t)->hold[t->held_cat[top]];
        uint64_t h = now - t->held_t0[top];
        uint32_t scale = t->held_scale[top];
        /* Its timing stays in (a timestamp and the wrappers' bookkeeping, ~30-80 ticks): taken
         * off, a 2-thread convoy's holds fell 4x, and with them the one thread's work the model
         * rebuilds (busy time less waits), S(2) at its own count 2.7-3.7x under. */
        CC_ADD(*hold, cc_scaled(h, scale, &t->sample_hold));
        for (int i = top + 1; i < t->nheld; i++) { /* the holds above it move down */
            t->held_obj[i - 1] = t->held_obj[i];
            t->held_cat[i - 1] = t->held_cat[i];
            t->held_t0[i - 1] = t->held_t0[i];
            t->held_scale[i - 1] = t->held_scale[i];
        }
        t->nheld--;
        return scale;
    }
    return 0;
}

/* The release of a timed hold, begun at ``t1`` (the hold's end), returned now.  A release
 * that hands the lock to a sleeping waiter makes a futex call (microseconds, where the
 * section may take nanoseconds): in a convoy that is where the time goes, and it is lost
 * to the section like a wait, so it counts as one (scaled up as the hold was). */
static inline void cc_released(struct cc_thread *t, int cat, uint64_t t1, uint32_t scale) {
    uint64_t w = cc_now() - t1;
    /* a sampled hold's release: an exact one's (a failed test's) is the contended path */
    uint64_t part = scale > 1 ? cc_uncontended_part(t->free_release, w, NULL) : 0;
    uint64_t scaled = cc_scaled(w, scale, &t->sample_release);
    CC_ADD(cc_counts(t)->wait[cat], cc_less_per_acquisition(scaled, part, scale));
}

/* An ordered turn handed on in the loop's next call (shims/gomp.c), begun at ``t1``: a
 * thread alone never hands it on (libgomp gives it one chunk), so none of it is the free
 * cost of a release that cc_released takes off; all of it is lost to the turn, as a wait. */
static inline void cc_handed_off(struct cc_thread *t, int cat, uint64_t t1, uint32_t scale) {
    CC_ADD(cc_counts(t)->wait[cat], cc_scaled(cc_now() - t1, scale, &t->sample_release));
}

/* An acquisition that began at ``t0`` and returned now, standing for ``scale``
 * acquisitions (sampling): its wait and hold are scaled up.  ``contended``: known from a
 * failed test, else judged by the wait. */
static inline void cc_timed_acquire(struct cc_thread *t, int cat, uint64_t t0, const void *obj,
                                    int contended, uint32_t scale) {
    uint64_t t1 = cc_now();
    uint64_t w = t1 - t0;
    struct cc_counts *n = cc_counts(t);
    uint64_t scaled = cc_scaled(w, scale, &t->sample_wait);
    uint64_t part = contended || scale <= 1 ? 0
                                            : cc_uncontended_part(t->free_wait, w, t->free_release);
    CC_ADD(n->wait[cat], cc_less_per_acquisition(scaled, part, scale));
    CC_ADD(n->acq[cat], 1);
    if (contended || w > CC_CONTENDED_TICKS)
        CC_ADD(n->contended[cat], scaled == w * scale ? scale : 1);
    cc_held_push(t, obj, cat, t1, scale);
}

/* A sampled acquisition (``scale`` from cc_sample_due) that began at ``t0`` returned now. */
static inline void cc_sampled_acquire(struct cc_thread *t, int cat, uint64_t t0, const void *obj,
                                      uint32_t scale) {
    cc_timed_acquire(t, cat, t0, obj, 0, scale);
    cc_sample_next(t);
    /* the hold starts after the bookkeeping (the gap's division): an untimed one has none */
    if (t->nheld && t->held_obj[t->nheld - 1] == obj)
        t->held_t0[t->nheld - 1] = cc_now();
}

#endif
