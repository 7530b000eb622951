/* OMPT shim (over 400 lines: one runtime, one file, as shims/ has one per runtime):
 * OpenMP programs on LLVM's libomp or Intel's libiomp5 (clang, icx, ifx, flang,
 * AOCC).  Those runtimes call ompt_start_tool at start-up; the callbacks registered here
 * feed the same region table, stall categories and per-member times as shims/gomp.c.
 *
 * A region is keyed by its outlined function, caught on its way into __kmpc_fork_call
 * (a loop the compiler unrolled forks one region from several call sites), else by the
 * fork's call site (codeptr_ra, e.g. gcc code calling libomp's GOMP_parallel), and named
 * after the function holding its first call site (native/sample.c), so a clang and a gcc
 * build name their regions alike.  A member's share of the work ends where it arrives at
 * the join barrier: libomp reports that barrier's end and the implicit task's end only at
 * the next fork, so the barrier's start is the member's end.  Old runtimes (LLVM 14)
 * give the join barrier and a loop's barrier one kind: a member stops at every implicit
 * barrier and resumes when the wait ends inside the team (a join's wait ends with no
 * parallel data), the tasks it ran in that barrier still the region's and inside it, a team
 * they start nested (cc_member_pause); it leaves at its implicit task's end.
 *
 * Callbacks run on the program's threads: no malloc, stdio or locks; per-thread state in
 * a table indexed like the thread slots, one call record per running team from a pool. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../native/corecast.h"
#include "../native/lazy.h"
#include "../native/omp_call.h"
#include "../native/real.h"
#include "ompt_abi.h"

/* ---- state ---------------------------------------------------------------------- */
#define MAX_DEPTH 4   /* implicit tasks tracked per thread (nested regions) */
#define CALL_POOL 128 /* teams running at once */

struct ompt_thread {
    void *fork_fn;        /* the outlined function of the fork under way (__kmpc_fork_call) */
    const void *fork_loc; /* and its source location (an ident_t) */
    int pushed;           /* the num_threads the program pushed for it (0: none) */
    int probe_own;        /* > 0: it is a probe call (cc_team_cap) */
    int depth;            /* implicit tasks open on this thread */
    uint64_t barrier_t0;  /* the barrier wait under way began here */
    uint64_t barrier_k0;  /* and the thread's task ticks then */
    uint64_t task_t0;     /* the explicit task running on this thread began (or resumed) here */
    uint64_t acquire_t0;  /* the timed mutex acquisition under way began here (0: untimed) */
    uint32_t acquire_scale; /* and how many acquisitions it stands for */
    struct cc_member task[MAX_DEPTH];
};
/* Mapped as used (lazy.h): per thread slot, 16 to a mapping; per call, 8 kB each. */
CC_LAZY_DEFINE(threads, struct ompt_thread, CC_MAX_THREADS, 16);
static struct cc_call calls[CALL_POOL];
CC_LAZY_DEFINE(call_ends, struct cc_member_end[CC_MAX_TEAM], CALL_POOL, 1);
static int call_used[CALL_POOL];

/* The calling thread's OMPT state, found once per thread (slot order; a slot's next
 * thread clears it). */
static __thread struct ompt_thread *mine __attribute__((tls_model("initial-exec")));

/* The calling thread and its OMPT state, or NULL when corecast is not to measure it. */
static struct cc_thread *self(struct ompt_thread **o) {
    struct cc_thread *t = cc_self();
    if (t->guard || cc_cfg.disabled) /* the overflow slot is guarded: never indexed below */
        return NULL;
    if (__builtin_expect(!mine, 0)) {
        if (t->slot < 0 || !(mine = cc_lazy_get(&threads, t->slot)))
            return NULL; /* refused: this thread goes unmeasured (cc_map_refused) */
        /* The slot may be one an exited thread handed on (core.c): its OMPT state
         * (forks, implicit tasks, barrier and lock timing) was that thread's. */
        memset(mine, 0, sizeof *mine);
    }
    *o = mine;
    return t;
}

static struct cc_call *call_claim(struct cc_thread *t) {
    for (int k = 0; k < CALL_POOL; k++) {
        int i = (t->tid + k) % CALL_POOL; /* threads start apart: short scans */
        int idle = 0;
        if (!__atomic_load_n(&call_used[i], __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&call_used[i], &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            calls[i].cap = CC_MAX_TEAM;
            if ((calls[i].ends = cc_lazy_get(&call_ends, i)))
                return &calls[i];
            __atomic_store_n(&call_used[i], 0, __ATOMIC_RELEASE); /* refused: unmeasured */
            break;
        }
    }
    CC_AADD(cc_overflow, 1);
    return NULL;
}

static void call_release(struct cc_call *c) { __atomic_store_n(&call_used[c - calls], 0, __ATOMIC_RELEASE); }

/* A forked child keeps only the forking thread, outside any team of its own. */
void cc_ompt_after_fork(void) {
    cc_lazy_clear(&threads); /* the mappings made: the slots the parent had taken */
    mine = NULL; /* the forking thread takes a new slot */
    memset(call_used, 0, sizeof call_used);
}

/* ---- teams ------------------------------------------------------------------------ */
static void on_parallel_begin(ompt_data_t *task, const void *frame, ompt_data_t *parallel, unsigned requested,
                              int flags, const void *codeptr_ra) {
    struct ompt_thread *o = NULL;
    struct cc_thread *t = self(&o);
    parallel->ptr = NULL;
    /* A call site in corecast: libomp's GOMP_parallel, the runtime's first call, started
     * the tool while the GOMP wrapper was already timing the call. */
    if (!t || (flags & ompt_parallel_league) || !codeptr_ra || cc_is_ours(codeptr_ra)) {
        if (o)
            o->fork_fn = NULL, o->fork_loc = NULL, o->probe_own = 0, o->pushed = 0;
        return;
    }
    void *fn = o->fork_fn;
    const void *loc = o->fork_loc;
    o->fork_fn = NULL;
    o->fork_loc = NULL;
    o->pushed = 0; /* a push that reached a fork other than __kmpc_fork_call is spent too */
    int probe_own = o->probe_own;
    o->probe_own = 0;
    struct cc_call *c = call_claim(t);
    if (!c) {
        struct cc_region *r = probe_own ? cc_region_for(fn) : NULL;
        if (r) /* the probe runs untimed: let the next one start */
            __atomic_store_n(&r->probe_busy, 0, __ATOMIC_RELEASE);
        return;
    }
    cc_call_begin(c, fn ? fn : (void *)codeptr_ra, t);
    struct cc_region *r = c->region;
    if (r && !cc_region_other(r)) { /* the rest's name is its own, and it is never steered */
        void *none = NULL;
        if (!__atomic_load_n(&r->site, __ATOMIC_RELAXED))
            if (__atomic_compare_exchange_n(&r->site, &none, (void *)codeptr_ra, 0, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED))
                r->loc = loc;
        int seen = __atomic_load_n(&r->requested, __ATOMIC_RELAXED);
        if ((int)requested > seen)
            __atomic_store_n(&r->requested, (int)requested, __ATOMIC_RELAXED);
    }
    c->probe_own = probe_own;
    parallel->ptr = c;
    c->t0 = cc_now();
}

static void on_parallel_end(ompt_data_t *parallel, ompt_data_t *task, int flags, const void *codeptr_ra) {
    struct cc_call *c = parallel ? parallel->ptr : NULL;
    if (!c)
        return;
    cc_call_finish(c);
    call_release(c);
}

static void on_implicit_task(int endpoint, ompt_data_t *parallel, ompt_data_t *task, unsigned team,
                             unsigned index, int flags) {
    if (flags & ompt_task_initial)
        return;
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (endpoint == ompt_scope_begin) {
        task->ptr = NULL;
        struct cc_call *c = parallel ? parallel->ptr : NULL;
        if (!c)
            return;
        if (index == 0)
            c->team = (int)team;
        if (!t || o->depth >= MAX_DEPTH) { /* the pool's call: its slot holds an earlier end */
            cc_member_unmeasured(c, (int)index);
            return;
        }
        struct cc_member *m = &o->task[o->depth++];
        cc_member_enter(m, c, (int)index, t);
        task->ptr = m;
        return;
    }
    struct cc_member *m = task ? task->ptr : NULL;
    if (!t || !m)
        return;
    cc_member_end(m, t);
    task->ptr = NULL;
    if (o->depth > 0)
        o->depth--;
}

/* A fork on its way into the runtime: its outlined function and source location key the
 * region parallel_begin opens; probing or steering may shrink its team (as on the GOMP
 * path; ``requested``: the program's num_threads, 0 for the runtime's default).  Returns
 * the team to ask for, ``requested`` when unchanged. */
unsigned cc_ompt_fork(const void *loc, void *fn, unsigned requested, const struct cc_gomp *g) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t)
        return requested;
    o->fork_fn = fn;
    o->fork_loc = loc;
    o->probe_own = 0;
    if ((!cc_cfg.steer && !cc_cfg.probe) || t->depth > 0)
        return requested;
    struct cc_region *r = cc_region_for(fn);
    if (!r)
        return requested;
    int own = requested ? (int)requested : (g->omp_get_max_threads ? g->omp_get_max_threads() : 0);
    int cap = cc_team_cap(r, own, g, &o->probe_own);
    return cap ? (unsigned)cap : requested;
}

/* __kmpc_fork_call(loc, argc, microtask, ...) is variadic with any number of arguments, so
 * its wrapper is a tail jump that keeps every argument register and the stack: the
 * runtime sees the program's own call (codeptr_ra included).  x86-64 only; elsewhere
 * regions are keyed by call site. */
#if defined(__x86_64__)
void *cc_ompt_fork_note(const void *loc, void *microtask, const void *caller) __attribute__((visibility("hidden")));
void *cc_ompt_fork_note(const void *loc, void *microtask, const void *caller) {
    const struct cc_gomp *g = cc_gomp_for(caller);
    struct ompt_thread *o;
    int pushed = 0;
    if (!__atomic_load_n(&cc_ompt_forks_seen, __ATOMIC_RELAXED))
        __atomic_store_n(&cc_ompt_forks_seen, 1, __ATOMIC_RELAXED);
    if (self(&o)) {
        pushed = o->pushed;
        o->pushed = 0;
    }
    unsigned n = cc_ompt_fork(loc, microtask, (unsigned)pushed, g);
    if (n != (unsigned)pushed && g->__kmpc_push_num_threads && g->__kmpc_global_thread_num)
        g->__kmpc_push_num_threads((void *)loc, g->__kmpc_global_thread_num((void *)loc), (int)n);
    if (!g->__kmpc_fork_call) { /* cannot happen: the caller links a runtime that has it */
        cc_warn("no OpenMP runtime defines __kmpc_fork_call");
        abort();
    }
    return (void *)g->__kmpc_fork_call;
}

/* The num_threads clause: pushed just before its fork (kept for cc_ompt_fork_note). */
void __kmpc_push_num_threads(void *loc, int gtid, int num_threads) {
    const struct cc_gomp *g = cc_gomp_for(__builtin_return_address(0));
    struct ompt_thread *o;
    if (self(&o))
        o->pushed = num_threads;
    g->__kmpc_push_num_threads(loc, gtid, num_threads);
}

/* CFI notes each push, so a profiler or debugger can unwind a signal taken inside. */
#define PUSH(reg) "  push %" reg "\n  .cfi_adjust_cfa_offset 8\n"
#define POP(reg) "  pop %" reg "\n  .cfi_adjust_cfa_offset -8\n"
__asm__(".text\n"
        ".globl __kmpc_fork_call\n"
        ".type __kmpc_fork_call, @function\n"
        "__kmpc_fork_call:\n"
        "  .cfi_startproc\n"
        "  endbr64\n" PUSH("rdi") PUSH("rsi") PUSH("rdx") PUSH("rcx") PUSH("r8") PUSH("r9") PUSH("rax")
        "  sub $128, %rsp\n" /* 7 pushes and 128 bytes: aligned to 16 for the call */
        "  .cfi_adjust_cfa_offset 128\n"
        "  movdqu %xmm0, 0(%rsp)\n  movdqu %xmm1, 16(%rsp)\n  movdqu %xmm2, 32(%rsp)\n"
        "  movdqu %xmm3, 48(%rsp)\n  movdqu %xmm4, 64(%rsp)\n  movdqu %xmm5, 80(%rsp)\n"
        "  movdqu %xmm6, 96(%rsp)\n  movdqu %xmm7, 112(%rsp)\n"
        "  mov %rdx, %rsi\n"      /* the outlined function (the source location stays in rdi) */
        "  mov 184(%rsp), %rdx\n" /* the return address: the calling object */
        "  call cc_ompt_fork_note@PLT\n"
        "  mov %rax, %r11\n"
        "  movdqu 0(%rsp), %xmm0\n  movdqu 16(%rsp), %xmm1\n  movdqu 32(%rsp), %xmm2\n"
        "  movdqu 48(%rsp), %xmm3\n  movdqu 64(%rsp), %xmm4\n  movdqu 80(%rsp), %xmm5\n"
        "  movdqu 96(%rsp), %xmm6\n  movdqu 112(%rsp), %xmm7\n"
        "  add $128, %rsp\n"
        "  .cfi_adjust_cfa_offset -128\n" POP("rax") POP("r9") POP("r8") POP("rcx") POP("rdx") POP("rsi") POP("rdi")
        "  jmp *%r11\n"
        "  .cfi_endproc\n"
        ".size __kmpc_fork_call, .-__kmpc_fork_call\n");
#undef PUSH
#undef POP
#endif

/* An explicit task's data carries this mark (on_task_create). */
static const char explicit_mark;

/* ---- barriers ------------------------------------------------------------------------ */
static void on_sync_region_wait(int kind, int endpoint, ompt_data_t *parallel, ompt_data_t *task,
                                const void *codeptr_ra) {
    if (kind == ompt_sync_region_taskwait || kind == ompt_sync_region_taskgroup) {
        /* A phase of the region's tasks, not an explicit task's own wait (as shims/gomp.c). */
        struct ompt_thread *o;
        struct cc_thread *t;
        if (endpoint == ompt_scope_begin && !(task && task->ptr == &explicit_mark) && (t = self(&o)))
            CC_ADD(cc_counts(t)->taskwaits, 1);
        return;
    }
    int join_or_construct = kind == ompt_sync_region_barrier || kind == ompt_sync_region_barrier_implicit ||
                            kind == ompt_sync_region_barrier_implicit_parallel;
    if (!join_or_construct && kind != ompt_sync_region_barrier_explicit &&
        kind != ompt_sync_region_barrier_implementation && kind != ompt_sync_region_barrier_implicit_workshare)
        return; /* taskwait, taskgroup, reductions, teams: not barriers of the team */
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t)
        return;
    struct cc_member *m = task ? task->ptr : NULL;
    uint64_t now = cc_now();
    if (endpoint == ompt_scope_begin) {
        o->barrier_t0 = now;
        o->barrier_k0 = t->n.task_ticks;
        if (join_or_construct && m && m->open)
            cc_member_pause(m, t, now); /* perhaps the join: the member's work ends here */
        else
            cc_close_single(t, now);
        return;
    }
    int join = kind == ompt_sync_region_barrier_implicit_parallel || (join_or_construct && !parallel);
    if (join)
        return; /* its wait is the member's idle time at the join: imbalance */
    if (m && !m->open && join_or_construct)
        cc_member_resume(m);
    uint64_t w = now - o->barrier_t0, k = t->n.task_ticks - o->barrier_k0; /* tasks run while waiting */
    cc_note(t, CC_STALL_OMPBARRIER, w > k ? w - k : 0, 0);
}

/* ---- explicit tasks ------------------------------------------------------------------- *
 * The runtime runs queued tasks inside barriers: their time is work, not a wait
 * (shims/gomp.c says why).  An explicit task's data carries a mark; the scheduling
 * callbacks time each stretch an explicit task runs on a thread, so a task that waits for
 * its children (their stretches counted apart) is counted once. */
static void on_task_create(ompt_data_t *encountering, const ompt_frame_t *frame, ompt_data_t *created, int flags,
                           int has_dependences, const void *codeptr_ra) {
    if (!created || !(flags & ompt_task_explicit))
        return;
    created->ptr = (void *)&explicit_mark;
    if (!cc_tasks_seen)
        __atomic_store_n(&cc_tasks_seen, 1, __ATOMIC_RELAXED);
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t)
        return;
    if (has_dependences)
        CC_ADD(cc_counts(t)->task_depend, 1);
    /* Made by a single block's own code (as shims/gomp.c): the block open (on_work) and the
     * encountering task not an explicit one. */
    if (t->single_t0 && !(encountering && encountering->ptr == &explicit_mark))
        CC_ADD(cc_counts(t)->single_tasks, 1);
}

static void on_task_schedule(ompt_data_t *prior, int prior_status, ompt_data_t *next) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t)
        return;
    uint64_t now = cc_now();
    if (prior && prior->ptr == &explicit_mark && o->task_t0) {
        struct cc_counts *n = cc_counts(t);
        CC_ADD(n->task_ticks, now - o->task_t0);
        if (prior_status == ompt_task_complete)
            CC_ADD(n->tasks, 1);
        o->task_t0 = 0;
    }
    if (next && next->ptr == &explicit_mark)
        o->task_t0 = now;
}

/* ---- critical, atomic, ordered, locks ------------------------------------------------ */
static int mutex_category(int kind) {
    switch (kind) {
    case ompt_mutex_lock:
    case ompt_mutex_test_lock:
    case ompt_mutex_nest_lock:
    case ompt_mutex_test_nest_lock:
        return CC_STALL_OMPLOCK;
    case ompt_mutex_atomic:
        return CC_STALL_ATOMIC;
    default: /* critical; an ordered block waits for its turn, then runs alone */
        return CC_STALL_CRITICAL;
    }
}

/* Sampled like the GOMP path's critical sections (omp_call.h cc_sample_due): some
 * acquisitions are timed (wait and hold, scaled up), every one counted.  Timestamps are
 * what costs here (tens of ns each in a VM); the callbacks cost the runtime next to nothing. */
static void on_mutex_acquire(int kind, unsigned hint, unsigned impl, uint64_t wait_id, const void *codeptr_ra) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (t) {
        o->acquire_scale = cc_sample_due(t);
        o->acquire_t0 = o->acquire_scale ? cc_now() : 0;
    }
}

static void on_mutex_acquired(int kind, uint64_t wait_id, const void *codeptr_ra) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t)
        return;
    int cat = mutex_category(kind);
    if (o->acquire_t0) {
        cc_sampled_acquire(t, cat, o->acquire_t0, (const void *)(uintptr_t)wait_id, o->acquire_scale);
        o->acquire_t0 = 0; /* an acquisition whose acquire ran handed back is untimed */
    } else
        CC_ADD(cc_counts(t)->acq[cat], 1);
}

static void on_mutex_released(int kind, uint64_t wait_id, const void *codeptr_ra) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (t && t->nheld)
        cc_held_pop(t, (const void *)(uintptr_t)wait_id, cc_now());
}

/* A nest lock its owner sets again: an acquisition without a wait. */
static void on_nest_lock(int endpoint, uint64_t wait_id, const void *codeptr_ra) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (t && endpoint == ompt_scope_begin)
        cc_note(t, CC_STALL_OMPLOCK, 0, 0);
}

/* ---- the hand-back (native/settle.c) --------------------------------------------------- *
 * Once counting the sections no longer serves (or costs the program more than its share),
 * settle.c hands them back.  On this path they reach corecast as the mutex callbacks, and
 * libomp costs as much again to make them (the lock convoy at 1 thread: +50% CPU).
 * Unregistering (ompt_set_callback(event, NULL)) is not safe while the program runs:
 * LLVM's libomp clears the callback's pointer before its enabled flag, in plain stores,
 * and a thread that passed the flag's check then calls NULL.  So each callback is swapped
 * for one that returns at once, in one aligned store: a thread reaches either, both work. */
static ompt_set_callback_t set_callback; /* kept from initialize */
static void quiet_acquire(int kind, unsigned hint, unsigned impl, uint64_t wait_id, const void *codeptr_ra) {}
static void quiet_mutex(int kind, uint64_t wait_id, const void *codeptr_ra) {} /* acquired, released, nest_lock */

int cc_ompt_hand_back(int ends, int back) {
    if (!set_callback)
        return 0;
    if (ends) /* a release through on_mutex_released closes a timed hold: after the starts */
        return set_callback(ompt_callback_mutex_released,
                            back ? (ompt_callback_t)quiet_mutex : (ompt_callback_t)on_mutex_released) > ompt_set_never;
    if (!back) /* an acquire handed back before its acquired: no stale start to time from */
        for (int i = 0; i < CC_MAX_THREADS; i++) {
            struct ompt_thread *o = cc_lazy_peek(&threads, i);
            if (o)
                __atomic_store_n(&o->acquire_t0, 0, __ATOMIC_RELAXED);
        }
    /* The acquire before the acquired, both ways: an acquired of ours follows an acquire
     * of ours, or finds no start (cleared above, or by the last acquired). */
    int n = set_callback(ompt_callback_mutex_acquire,
                         back ? (ompt_callback_t)quiet_acquire : (ompt_callback_t)on_mutex_acquire) > ompt_set_never;
    n += set_callback(ompt_callback_mutex_acquired,
                      back ? (ompt_callback_t)quiet_mutex : (ompt_callback_t)on_mutex_acquired) > ompt_set_never;
    n += set_callback(ompt_callback_nest_lock,
                      back ? (ompt_callback_t)quiet_mutex : (ompt_callback_t)on_nest_lock) > ompt_set_never;
    return n;
}

/* ---- single --------------------------------------------------------------------------- */
static void on_work(int kind, int endpoint, ompt_data_t *parallel, ompt_data_t *task, uint64_t count,
                    const void *codeptr_ra) {
    struct ompt_thread *o;
    struct cc_thread *t = self(&o);
    if (!t || kind != ompt_work_single_executor)
        return;
    if (endpoint == ompt_scope_begin)
        cc_open_single(t);
    else
        cc_close_single(t, cc_now());
}

/* ---- start-up ------------------------------------------------------------------------- */
static int initialize(ompt_function_lookup_t lookup, int initial_device_num, ompt_data_t *tool_data) {
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    if (!set)
        return 0;
    static const struct {
        int event;
        ompt_callback_t fn;
        int needed; /* without it no region can be timed */
    } table[] = {
        {ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin, 1},
        {ompt_callback_parallel_end, (ompt_callback_t)on_parallel_end, 1},
        {ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task, 1},
        {ompt_callback_sync_region_wait, (ompt_callback_t)on_sync_region_wait, 0},
        {ompt_callback_mutex_acquire, (ompt_callback_t)on_mutex_acquire, 0},
        {ompt_callback_mutex_acquired, (ompt_callback_t)on_mutex_acquired, 0},
        {ompt_callback_mutex_released, (ompt_callback_t)on_mutex_released, 0},
        {ompt_callback_nest_lock, (ompt_callback_t)on_nest_lock, 0},
        {ompt_callback_work, (ompt_callback_t)on_work, 0},
        {ompt_callback_task_create, (ompt_callback_t)on_task_create, 0},
        {ompt_callback_task_schedule, (ompt_callback_t)on_task_schedule, 0},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (set(table[i].event, table[i].fn) <= ompt_set_never && table[i].needed)
            return 0;
    set_callback = set;
    Dl_info info;
    const char *file = dladdr((void *)set, &info) && info.dli_fname ? info.dli_fname : "the OpenMP runtime";
    const char *base = strrchr(file, '/');
    /* From here the GOMP_* entry points that libomp also exports are counted here only. */
    cc_ompt_started(base ? base + 1 : file);
    return 1;
}

static void finalize(ompt_data_t *tool_data) {}

/* The user's own tools (OMP_TOOL_LIBRARIES: Archer, a profiler), tried as the runtime tries
 * them after the process's (ours, preloaded): the first that starts is the runtime's one
 * tool, as without corecast, and ours steps aside (the report says for which).  Where none
 * starts (a library missing, a tool that declines, as Archer does outside a TSan build), ours
 * does: stepping aside for the list alone left no tool at all. */
ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version);

static ompt_start_tool_result_t *users_tool(unsigned omp_version, const char *runtime_version) {
    const char *list = getenv("OMP_TOOL_LIBRARIES"), *mode = getenv("OMP_TOOL");
    if (!list || !list[0] || (mode && !strcasecmp(mode, "disabled")))
        return NULL;
    char names[4096];
    snprintf(names, sizeof names, "%s", list);
    for (char *name = names, *next; name; name = next) {
        if ((next = strchr(name, ':')))
            *next++ = 0;
        void *lib = name[0] ? dlopen(name, RTLD_LAZY) : NULL; /* kept: a tool that declined may have left work */
        ompt_start_tool_result_t *(*start)(unsigned, const char *) =
            lib ? (ompt_start_tool_result_t * (*)(unsigned, const char *)) dlsym(lib, "ompt_start_tool") : NULL;
        if (start == ompt_start_tool)
            return NULL; /* ours first in the list: it starts, as the runtime would start it */
        ompt_start_tool_result_t *started = start ? start(omp_version, runtime_version) : NULL;
        if (started) {
            cc_ompt_step_aside(name);
            return started;
        }
    }
    return NULL;
}

ompt_start_tool_result_t *ompt_start_tool(unsigned omp_version, const char *runtime_version) {
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    /* The runtime may start tools before corecast's constructor has read its settings. */
    if (cc_env_flag(CC_ENV_DISABLE))
        return NULL;
    ompt_start_tool_result_t *theirs = users_tool(omp_version, runtime_version);
    return theirs ? theirs : &result;
}
