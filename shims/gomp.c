/* libgomp shim (over 400 lines: one runtime, one file, as shims/ has one per runtime):
 * parallel regions, barriers, critical/atomic sections, single, loop scheduling calls and
 * OpenMP locks.
 *
 * Each GOMP_parallel* call runs the outlined function through a trampoline that times
 * every team member's busy span; the master's end time minus each member's end time is
 * that member's wait at the implicit barrier (imbalance).  Counters are per thread;
 * the trampoline folds the deltas into the region with relaxed atomics once per call.
 * Under an OMPT runtime (libomp also exports GOMP_*) every wrapper passes straight
 * through: shims/ompt.c counts that runtime's regions, once. */
#define _GNU_SOURCE
#include <string.h>

#include "../native/corecast.h"
#include "../native/omp_call.h"
#include "../native/got.h"
#include "../native/real.h"
#include "../native/settle.h"

struct tramp {
    cc_outlined_fn fn;
    void *data;
    const struct cc_gomp *g;
    struct cc_call call;
};

static void trampoline(void *arg) {
    struct tramp *tr = arg;
    struct cc_thread *t = cc_self();
    int id = tr->g->omp_get_thread_num ? tr->g->omp_get_thread_num() : 0;
    if (id == 0 && tr->g->omp_get_num_threads)
        tr->call.team = tr->g->omp_get_num_threads();
    struct cc_member m;
    cc_member_enter(&m, &tr->call, id, t);
    tr->fn(tr->data);
    cc_member_leave(&m, t, cc_now());
}

/* The team size this call gets: the program's own (num_threads, or libgomp's default
 * for 0) unless probing or steering shrinks it (cc_team_cap). */
static unsigned team_size(struct tramp *tr, unsigned requested) {
    const struct cc_gomp *g = tr->g;
    if (!tr->call.region || cc_region_other(tr->call.region)) /* many regions: never steered */
        return requested;
    int own = requested ? (int)requested : (g->omp_get_max_threads ? g->omp_get_max_threads() : 0);
    int cap = cc_team_cap(tr->call.region, own, g, &tr->call.probe_own);
    return cap ? (unsigned)cap : requested;
}

/* The most members a call of ``n`` threads (0: libgomp's nthreads-var, which
 * omp_get_max_threads answers on the forking thread) can have: its ``ends`` are that many,
 * on the forking thread's stack.  256 for every call (8 KiB a frame) overflowed stacks
 * that hold the program without corecast: recursion through nested, inactive regions (a
 * region a level, 2000 levels on an 8 MiB stack) and a region forked from a thread made
 * with a 16 KiB stack, both SIGSEGV. */
static int team_bound(const struct cc_gomp *g, unsigned n) {
    int bound = n ? (int)(n < CC_MAX_TEAM ? n : CC_MAX_TEAM)
                  : g->omp_get_max_threads ? g->omp_get_max_threads() : CC_MAX_TEAM;
    return bound < 1 ? 1 : bound < CC_MAX_TEAM ? bound : CC_MAX_TEAM;
}

#define END_BYTES sizeof(struct cc_member_end)

/* One wrapper shape per GOMP_parallel* signature; ARGS are the trailing parameters.  The
 * timed call is a function of its own: its ``ends`` (alloca) would keep the passing-through
 * calls from being tail calls, and libomp's OMPT then found our return address, not the
 * program's (cc_is_ours: a gcc build on libomp counted no region). */
#define PARALLEL_WRAPPER(ret, name, params, args)                                           \
    static __attribute__((noinline)) ret name##_timed(const struct cc_gomp *g, struct cc_thread *t, \
                                                      cc_outlined_fn fn, void *data,         \
                                                      unsigned num_threads params) {        \
        struct tramp tr; /* no initialiser: the call's per-member arrays need no clearing */ \
        tr.fn = fn;                                                                          \
        tr.data = data;                                                                      \
        tr.g = g;                                                                            \
        cc_call_begin(&tr.call, (void *)fn, t);                                              \
        unsigned n = t->depth > 0 ? num_threads : team_size(&tr, num_threads);              \
        tr.call.cap = team_bound(g, n);                                                      \
        tr.call.ends = __builtin_alloca_with_align((size_t)tr.call.cap * END_BYTES, 8 * END_BYTES); \
        tr.call.t0 = cc_now();                                                               \
        PARALLEL_CALL_##ret(g->name(trampoline, &tr, n args));                               \
    }                                                                                        \
    ret name(cc_outlined_fn fn, void *data, unsigned num_threads params) {                  \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (cc_ompt_on) /* the runtime's OMPT callbacks time it, keyed by ``fn`` */        \
            return g->name(fn, data, cc_ompt_fork(NULL, (void *)fn, num_threads, g) args);  \
        if (t->guard || cc_cfg.disabled || !g->omp_get_thread_num)                          \
            return g->name(fn, data, num_threads args);                                     \
        return name##_timed(g, t, fn, data, num_threads args);                               \
    }
#define PARALLEL_CALL_void(expr) \
    expr;                        \
    cc_call_finish(&tr.call)
#define PARALLEL_CALL_unsigned(expr) \
    unsigned out = expr;             \
    cc_call_finish(&tr.call);        \
    return out
#define COMMA ,
#define LOOP_PARAMS , long start, long end, long incr, long chunk, unsigned flags
#define LOOP_ARGS , start, end, incr, chunk, flags
#define RUNTIME_PARAMS , long start, long end, long incr, unsigned flags
#define RUNTIME_ARGS , start, end, incr, flags

PARALLEL_WRAPPER(void, GOMP_parallel, COMMA unsigned flags, COMMA flags)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_static, LOOP_PARAMS, LOOP_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_dynamic, LOOP_PARAMS, LOOP_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_guided, LOOP_PARAMS, LOOP_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_nonmonotonic_dynamic, LOOP_PARAMS, LOOP_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_nonmonotonic_guided, LOOP_PARAMS, LOOP_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_runtime, RUNTIME_PARAMS, RUNTIME_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_nonmonotonic_runtime, RUNTIME_PARAMS, RUNTIME_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_loop_maybe_nonmonotonic_runtime, RUNTIME_PARAMS, RUNTIME_ARGS)
PARALLEL_WRAPPER(void, GOMP_parallel_sections, COMMA unsigned count COMMA unsigned flags,
                 COMMA count COMMA flags)
PARALLEL_WRAPPER(unsigned, GOMP_parallel_reductions, COMMA unsigned flags, COMMA flags)

/* ---- synchronisation inside regions --------------------------------------------- */
static const char critical_anon, atomic_lock, ordered_turn;

/* Explicit barriers and the barriers that end worksharing loops and sections. */
#define BARRIER_WRAPPER(name)                                                                \
    void name(void) {                                                                        \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (t->guard || cc_ompt_on)                                                          \
            return g->name();                                                                \
        uint64_t t0 = cc_now();                                                              \
        cc_close_single(t, t0);                                                              \
        uint64_t k0 = t->n.task_ticks;                                                       \
        g->name();                                                                           \
        uint64_t w = cc_now() - t0, k = t->n.task_ticks - k0; /* tasks run while waiting */  \
        cc_note(t, CC_STALL_OMPBARRIER, w > k ? w - k : 0, 0);                               \
    }

BARRIER_WRAPPER(GOMP_barrier)
BARRIER_WRAPPER(GOMP_loop_end)
BARRIER_WRAPPER(GOMP_sections_end)

/* Most acquisitions are only counted: that path ends in a tail call of the real function
 * with no stack frame; a timed one (and the release of a timed one) goes through the cold
 * helpers.  ``xparams``/``xargs``: the wrapper's parameters again, after a comma. */
#define CRITICAL_PAIR(start, end, cat, obj_expr, params, args, xparams, xargs)              \
    static __attribute__((noinline, cold)) void start##_timed(                              \
        const struct cc_gomp *g, struct cc_thread *t, uint32_t scale xparams) {             \
        uint64_t t0 = cc_now();                                                              \
        g->start(args);                                                                      \
        cc_sampled_acquire(t, cat, t0, obj_expr, scale);                                     \
    }                                                                                        \
    void start(params) {                                                                    \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (t->guard || cc_ompt_on)                                                          \
            return g->start(args);                                                           \
        uint32_t scale = cc_sample_due(t);                                                   \
        if (__builtin_expect(scale, 0))                                                      \
            return start##_timed(g, t, scale xargs);                                         \
        CC_ADD(cc_counts(t)->acq[cat], 1);                                                   \
        return g->start(args);                                                               \
    }                                                                                        \
    static __attribute__((noinline, cold)) void end##_timed(                                \
        const struct cc_gomp *g, struct cc_thread *t xparams) {                             \
        uint64_t t1 = cc_now();                                                              \
        uint32_t scale = cc_held_pop(t, obj_expr, t1);                                       \
        g->end(args);                                                                        \
        if (scale)                                                                           \
            cc_released(t, cat, t1, scale);                                                  \
    }                                                                                        \
    void end(params) {                                                                      \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (__builtin_expect(t->nheld, 0) && !t->guard && !cc_ompt_on)                       \
            return end##_timed(g, t xargs);                                                  \
        return g->end(args);                                                                 \
    }

CRITICAL_PAIR(GOMP_critical_start, GOMP_critical_end, CC_STALL_CRITICAL, &critical_anon, void, , , )
CRITICAL_PAIR(GOMP_critical_name_start, GOMP_critical_name_end, CC_STALL_CRITICAL, pptr,
              void **pptr, pptr, COMMA void **pptr, COMMA pptr)
CRITICAL_PAIR(GOMP_atomic_start, GOMP_atomic_end, CC_STALL_ATOMIC, &atomic_lock, void, , , )
/* An ordered block waits for its turn and then runs alone: a critical section whose holder
 * is libgomp's turn.  libgomp hands the turn on in the loop's next call, not at the block's
 * end (its GOMP_ordered_end is empty: ordered.c), so a thread holds it from its first block
 * of a chunk to its next chunk: that is one acquisition (the chunk's later blocks neither
 * wait nor count), its hold ends there, and that call, which wakes the thread whose turn is
 * next, is a hand-off, lost to the turn.  Ended at GOMP_ordered_end, the hand-offs read as
 * work: an ordered loop of one-iteration chunks, 50x slower at 2 threads than at 1 (1.1 s
 * against 0.02 s), was predicted S@2 0.68-0.84 from its own run. */
static __attribute__((noinline, cold)) void GOMP_ordered_start_timed(const struct cc_gomp *g, struct cc_thread *t,
                                                                     uint32_t scale) {
    uint64_t t0 = cc_now();
    g->GOMP_ordered_start();
    cc_sampled_acquire(t, CC_STALL_CRITICAL, t0, &ordered_turn, scale);
}
void GOMP_ordered_start(void) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    struct cc_thread *t = cc_self();
    if (t->ordered_turn || t->guard || cc_ompt_on) /* inside its turn, or not ours to count */
        return g->GOMP_ordered_start();
    t->ordered_turn = 1;
    uint32_t scale = cc_sample_due(t);
    if (__builtin_expect(scale, 0))
        return GOMP_ordered_start_timed(g, t, scale);
    CC_ADD(cc_counts(t)->acq[CC_STALL_CRITICAL], 1);
    return g->GOMP_ordered_start();
}
/* Timed after a timed block (the turn's hold open on top), the empty end is what a free
 * release costs, the timestamps and a call: in an ordered convoy every wait is long, and
 * that cost bounds what of them reads as free (cc_uncontended_part). */
static __attribute__((noinline, cold)) void GOMP_ordered_end_timed(const struct cc_gomp *g, struct cc_thread *t) {
    uint64_t t1 = cc_now();
    g->GOMP_ordered_end();
    cc_uncontended_part(t->free_release, cc_now() - t1, NULL);
}
void GOMP_ordered_end(void) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    struct cc_thread *t = cc_self();
    if (__builtin_expect(t->nheld, 0) && t->held_obj[t->nheld - 1] == &ordered_turn && !t->guard && !cc_ompt_on)
        return GOMP_ordered_end_timed(g, t);
    return g->GOMP_ordered_end();
}
#define ORDERED_NEXT(name, type)                                                             \
    static __attribute__((noinline, cold)) bool name##_handed(const struct cc_gomp *g, struct cc_thread *t, \
                                                              type *istart, type *iend) {   \
        uint64_t t1 = cc_now();                                                              \
        uint32_t scale = cc_held_pop(t, &ordered_turn, t1);                                  \
        bool more = g->name(istart, iend);                                                   \
        if (scale)                                                                           \
            cc_handed_off(t, CC_STALL_CRITICAL, t1, scale);                                  \
        return more;                                                                         \
    }                                                                                        \
    bool name(type *istart, type *iend) {                                                   \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        t->ordered_turn = 0;                                                                 \
        if (__builtin_expect(t->nheld, 0) && t->held_obj[t->nheld - 1] == &ordered_turn &&   \
            !t->guard && !cc_ompt_on)                                                        \
            return name##_handed(g, t, istart, iend);                                        \
        return g->name(istart, iend);                                                        \
    }
ORDERED_NEXT(GOMP_loop_ordered_static_next, long)
ORDERED_NEXT(GOMP_loop_ordered_dynamic_next, long)
ORDERED_NEXT(GOMP_loop_ordered_guided_next, long)
ORDERED_NEXT(GOMP_loop_ordered_runtime_next, long)
ORDERED_NEXT(GOMP_loop_ull_ordered_static_next, unsigned long long)
ORDERED_NEXT(GOMP_loop_ull_ordered_dynamic_next, unsigned long long)
ORDERED_NEXT(GOMP_loop_ull_ordered_guided_next, unsigned long long)
ORDERED_NEXT(GOMP_loop_ull_ordered_runtime_next, unsigned long long)

bool GOMP_single_start(void) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    bool mine = g->GOMP_single_start();
    struct cc_thread *t = cc_self();
    /* The single block runs until the barrier that follows it (or the region's end). */
    if (mine && !t->guard && !cc_ompt_on)
        cc_open_single(t);
    return mine;
}

/* ---- explicit tasks ----------------------------------------------------------------- *
 * Each task runs through task_trampoline, which counts it and times it (outermost task per
 * thread): libgomp runs queued tasks inside barriers and at a region's end, and the
 * wrappers take those ticks out of the wait.  GOMP_task's own time (creating one) is
 * counted apart: with tasks of a microsecond or less it is where the runtime's time goes.
 * The task's argument block gets a header in front holding the real function; the
 * program's own block follows, aligned as it asked, and is built by its own copy function
 * (or copied) exactly as libgomp would.  Flags whose blocks
 * libgomp reads or writes itself (detach, in_reduction) and taskloops (whose bounds
 * libgomp writes at the block's start) pass straight through. */
#define TASK_FLAGS_WRAPPED (1u << 0 | 1u << 1 | 1u << 2 | 1u << 3 | 1u << 4 | 1u << 10)
#define TASK_FLAG_DEPEND (1u << 3) /* libgomp's GOMP_TASK_FLAG_DEPEND: depend holds the clauses */

struct task_head {
    cc_outlined_fn fn;
    long pad; /* offset of the program's block */
};

struct task_src {
    cc_outlined_fn fn;
    void (*cpyfn)(void *, void *);
    void *data;
    long pad, size;
};

static void task_copy(void *dst, void *srcv) {
    const struct task_src *s = srcv;
    struct task_head *h = dst;
    h->fn = s->fn;
    h->pad = s->pad;
    if (s->cpyfn)
        s->cpyfn((char *)dst + s->pad, s->data);
    else if (s->size > 0)
        memcpy((char *)dst + s->pad, s->data, (size_t)s->size);
}

static void task_trampoline(void *arg) {
    const struct task_head *h = arg;
    struct cc_thread *t = cc_self();
    /* child_ticks: time in tasks run at this level (a taskwait's tasks, or a barrier's),
     * each counted once, with the tasks nested inside it. */
    uint64_t outer = t->child_ticks, t0 = cc_now();
    t->task_depth++;
    h->fn((char *)arg + h->pad);
    t->task_depth--;
    uint64_t el = cc_now() - t0;
    t->child_ticks = outer + el;
    struct cc_counts *n = cc_counts(t);
    CC_ADD(n->tasks, 1);
    if (t->task_depth == 0)
        CC_ADD(n->task_ticks, el);
}

void GOMP_task(cc_outlined_fn fn, void *data, void (*cpyfn)(void *, void *), long arg_size, long arg_align,
               bool if_clause, unsigned flags, void **depend, int priority, void *detach) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    struct cc_thread *t = cc_self();
    if (t->guard || cc_ompt_on || cc_cfg.disabled || (flags & ~TASK_FLAGS_WRAPPED) || arg_size < 0 ||
        arg_align < 0 || arg_align > 4096 || (arg_align & (arg_align - 1)))
        return g->GOMP_task(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
    if (!cc_tasks_seen)
        __atomic_store_n(&cc_tasks_seen, 1, __ATOMIC_RELAXED);
    long align = arg_align > (long)_Alignof(struct task_head) ? arg_align : (long)_Alignof(struct task_head);
    long pad = ((long)sizeof(struct task_head) + align - 1) / align * align;
    struct task_src src = {fn, cpyfn, data, pad, arg_size};
    /* Creating it (allocation, the copy, the team's task queue and its lock) is the
     * runtime's time, not the program's; a task the runtime ran at once (if(0), a full
     * queue) is the task's. */
    uint64_t t0 = cc_now(), k0 = t->child_ticks;
    g->GOMP_task(task_trampoline, &src, task_copy, pad + arg_size, align, if_clause, flags, depend, priority,
                 detach);
    uint64_t el = cc_now() - t0, k = t->child_ticks - k0, spawn = el > k ? el - k : 0;
    struct cc_counts *n = cc_counts(t);
    CC_ADD(n->spawn_ticks, spawn);
    /* Made by a single block's own code (open, and no task of it running here: a task's
     * children are the task's, even where the block's thread runs it in a taskwait). */
    if (t->single_t0 && t->task_depth == 0) {
        CC_ADD(n->single_tasks, 1);
        CC_ADD(n->single_spawn_ticks, spawn);
    }
    /* Dependences make creating a task hashing and linking them (libgomp's
     * gomp_task_handle_depend), work of its own, not only the queue's lock. */
    if (flags & TASK_FLAG_DEPEND)
        CC_ADD(n->task_depend, 1);
}

/* Waiting for child tasks: the tasks run meanwhile are work; the rest is a wait (for other
 * threads' tasks), and neither counts as a single block's serial time.  A task's own time
 * includes its waits: the region's busy time holds them once, as a stall. */
#define TASKWAIT_WRAPPER(name)                                                               \
    void name(void) {                                                                        \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (t->guard || cc_ompt_on || !cc_tasks_seen)                                        \
            return g->name();                                                                \
        uint64_t t0 = cc_now(), k0 = t->child_ticks;                                         \
        g->name();                                                                           \
        uint64_t w = cc_now() - t0, k = t->child_ticks - k0;                                 \
        if (t->task_depth == 0) /* a phase of the region's tasks, not a task's own wait */   \
            CC_ADD(cc_counts(t)->taskwaits, 1);                                              \
        if (w > k) {                                                                         \
            if (t->task_depth == 0) /* inside a task, the task's time holds it */           \
                CC_ADD(t->taskwait_ticks, w - k);                                            \
            cc_note(t, CC_STALL_OMPBARRIER, w - k, 0);                                       \
        }                                                                                    \
    }

TASKWAIT_WRAPPER(GOMP_taskwait)
TASKWAIT_WRAPPER(GOMP_taskgroup_end)

/* Loop scheduling: counted only (dynamic/guided overhead is calls x cost per call).
 * Static schedules claim no shared iteration counter: their calls are not counted. */
#define LOOP_START(name)                                                                      \
    bool name(long start, long end, long incr, long chunk, long *istart, long *iend) {        \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                   \
        if (!cc_ompt_on && !strstr(#name, "static"))                                          \
            CC_ADD(cc_counts(cc_self())->loop_calls, 1);                                      \
        return g->name(start, end, incr, chunk, istart, iend);                                \
    }
#define LOOP_NEXT(name)                                                                       \
    bool name(long *istart, long *iend) {                                                     \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                   \
        if (!cc_ompt_on && !strstr(#name, "static"))                                          \
            CC_ADD(cc_counts(cc_self())->loop_calls, 1);                                      \
        return g->name(istart, iend);                                                         \
    }

LOOP_START(GOMP_loop_static_start)
LOOP_START(GOMP_loop_dynamic_start)
LOOP_START(GOMP_loop_guided_start)
LOOP_START(GOMP_loop_nonmonotonic_dynamic_start)
LOOP_START(GOMP_loop_nonmonotonic_guided_start)
LOOP_NEXT(GOMP_loop_static_next)
LOOP_NEXT(GOMP_loop_dynamic_next)
LOOP_NEXT(GOMP_loop_guided_next)
LOOP_NEXT(GOMP_loop_nonmonotonic_dynamic_next)
LOOP_NEXT(GOMP_loop_nonmonotonic_guided_next)
LOOP_NEXT(GOMP_loop_runtime_next)

bool GOMP_loop_runtime_start(long start, long end, long incr, long *istart, long *iend) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    if (!cc_ompt_on)
        CC_ADD(cc_counts(cc_self())->loop_calls, 1);
    return g->GOMP_loop_runtime_start(start, end, incr, istart, iend);
}

/* ---- OpenMP locks: test first, time only when contended ----------------------------- */
#define OMP_LOCK_PAIR(set, unset, test)                                                     \
    void set(void *lock) {                                                                  \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (t->guard || cc_ompt_on || !g->test)                                              \
            return g->set(lock);                                                             \
        if (g->test(lock)) {                                                                 \
            cc_note(t, CC_STALL_OMPLOCK, 0, 0);                                              \
            uint32_t scale = cc_sample_due(t); /* hold times: sampled */                     \
            if (scale) { /* no wait: the hold alone sets the next gap */                    \
                cc_sample_next(t); /* before the hold starts: an untimed one has no such */  \
                cc_held_push(t, lock, CC_STALL_OMPLOCK, cc_now(), scale);                    \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        uint64_t t0 = cc_now();                                                              \
        g->set(lock);                                                                        \
        cc_timed_acquire(t, CC_STALL_OMPLOCK, t0, lock, 1, 1);                                  \
    }                                                                                        \
    void unset(void *lock) {                                                                \
        const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));                 \
        struct cc_thread *t = cc_self();                                                     \
        if (t->guard || cc_ompt_on || !t->nheld)                                             \
            return g->unset(lock);                                                           \
        uint64_t t1 = cc_now();                                                              \
        uint32_t scale = cc_held_pop(t, lock, t1);                                           \
        g->unset(lock);                                                                      \
        if (scale)                                                                           \
            cc_released(t, CC_STALL_OMPLOCK, t1, scale);                                     \
    }

OMP_LOCK_PAIR(omp_set_lock, omp_unset_lock, omp_test_lock)
OMP_LOCK_PAIR(omp_set_nest_lock, omp_unset_nest_lock, omp_test_nest_lock)

/* omp_set_dynamic(0) asks for teams of exactly the size asked (OpenMP's dyn-var false):
 * steering and probing then leave every team as the program asks (omp_call.c). */
static void set_dynamic(const void *caller, int dynamic) {
    const struct cc_gomp *g = cc_gomp_for(caller);
    __atomic_store_n(&cc_exact_teams, dynamic ? 0 : 1, __ATOMIC_RELAXED);
    if (g->omp_set_dynamic)
        g->omp_set_dynamic(dynamic);
}
void omp_set_dynamic(int dynamic) { set_dynamic(__builtin_return_address(0), dynamic); }
/* Fortran's (gfortran: by reference, default and 8-byte logicals), which libgomp forwards
 * to its own internal alias, not through the C name. */
void omp_set_dynamic_(const int *dynamic) { set_dynamic(__builtin_return_address(0), *dynamic != 0); }
void omp_set_dynamic_8_(const long long *dynamic) { set_dynamic(__builtin_return_address(0), *dynamic != 0); }

/* What native/settle.c hands back once steering has settled (``back`` 1), and takes again
 * when a region it has not settled runs (0): the section starts or (``ends``) the ends.  A
 * release through the wrapper closes a timed hold: the ends go back after the starts and
 * return before them. */
int cc_gomp_hand_back(int ends, int back) {
    static const struct cc_got_entry starts[] = {
        {"GOMP_critical_start", (void *)GOMP_critical_start},
        {"GOMP_critical_name_start", (void *)GOMP_critical_name_start},
        {"GOMP_atomic_start", (void *)GOMP_atomic_start},
        {"GOMP_ordered_start", (void *)GOMP_ordered_start},
        {"omp_set_lock", (void *)omp_set_lock},
        {"omp_set_nest_lock", (void *)omp_set_nest_lock},
    };
    static const struct cc_got_entry stops[] = {
        {"GOMP_critical_end", (void *)GOMP_critical_end},
        {"GOMP_critical_name_end", (void *)GOMP_critical_name_end},
        {"GOMP_atomic_end", (void *)GOMP_atomic_end},
        {"GOMP_ordered_end", (void *)GOMP_ordered_end},
        {"omp_unset_lock", (void *)omp_unset_lock},
        {"omp_unset_nest_lock", (void *)omp_unset_nest_lock},
    };
    _Static_assert(sizeof starts == sizeof stops, "every start has its end");
    /* On libomp the wrappers of the OpenMP locks only pass the call on (the mutex callbacks
     * count it): both go back. */
    int n = cc_ompt_on ? cc_ompt_hand_back(ends, back) : 0;
    return n + cc_got_rewrite(ends ? stops : starts, (int)(sizeof starts / sizeof starts[0]), back);
}
