/* Turning the counters into a sample for the model (struct cc_sample, model_abi.h): the
 * regions and the whole process as the model and the report see them.  Called by the
 * sampler every window and once at exit; never on a wrapper's path but dlclose's, which
 * names the regions of the object it unloads (cc_name_regions_in). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "lazy.h"
#include "sample.h"
#include "settle.h"

static void basename_into(char *dst, size_t n, const char *path) {
    const char *b = strrchr(path, '/');
    snprintf(dst, n, "%s", b ? b + 1 : path);
}

/* The function an LLVM/Intel source location names: its psource is ";file;function;line;
 * col;;" (";unknown;unknown;0;0;;" without -g).  It survives inlining, as gcc's names do. */
static int loc_function(const void *loc, char *dst, size_t n) {
    const char *src = loc ? *(const char *const *)((const char *)loc + 16) : NULL; /* ident_t.psource */
    const char *f = src && src[0] == ';' ? strchr(src + 1, ';') : NULL;
    const char *e = f ? strchr(f + 1, ';') : NULL;
    if (!e || e == f + 1 || (e - f - 1 == 7 && !strncmp(f + 1, "unknown", 7)))
        return 0;
    snprintf(dst, n, "%.*s", (int)(e - f - 1), f + 1);
    return 1;
}

/* An OMPT region's function: the source location's, else the one holding its first call
 * site (the call's return address less one byte is still inside it); and its object. */
static void callsite_parent(struct cc_region *r) {
    if (!r->parent[0]) {
        char obj[1024], site[CC_NAME_LEN];
        cc_symbol_name((const char *)r->site - 1, site, sizeof site, obj, sizeof obj);
        basename_into(r->object, sizeof r->object, obj);
        if (!loc_function(r->loc, r->parent, sizeof r->parent))
            memcpy(r->parent, site, sizeof r->parent);
    }
}

/* OMPT regions are named like gcc's outlined functions, which number each function's
 * regions from 0 in source order (main._omp_fn.0, main._omp_fn.1): the holding function
 * and the region's place among that function's regions seen so far, by their first call
 * site's address (source order in code without reordered blocks). */
static void name_callsite(struct cc_region *r) {
    callsite_parent(r);
    int k = 0;
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q)) {
        void *site = __atomic_load_n(&q->site, __ATOMIC_ACQUIRE);
        if (!site || q == r || (char *)site > (char *)r->site)
            continue;
        callsite_parent(q);
        k += !strcmp(q->parent, r->parent) && !strcmp(q->object, r->object);
    }
    snprintf(r->name, sizeof r->name, "%.*s._omp_fn.%d", (int)sizeof r->name - 16, r->parent, k);
}

/* The final sample's calls of each region neither counted nor credited (settle.c). */
static unsigned long long uncredited[CC_MAX_REGIONS];

unsigned long long cc_sample_uncredited_calls(const struct cc_sample *s, const struct cc_region_sample *g) {
    long i = g - s->regions;
    return s->final && i >= 0 && i < CC_MAX_REGIONS ? uncredited[i] : 0;
}

/* A region's name and object, written by one namer at a time: the sampler, the exit, or
 * dlclose naming an object's regions before it is unmapped.  ``tries`` > 0: give up after
 * that many (a namer that waits on the loader's lock the caller may hold); ``until`` > 0:
 * at that time (cc_mono_s). */
static int naming;
static double exit_names_until; /* the exit's wait for a namer ends (fill_region) */

static int naming_lock(int tries, double until) {
    for (int i = 0; __atomic_exchange_n(&naming, 1, __ATOMIC_ACQUIRE); i++) {
        if ((tries > 0 && i >= tries) || (until > 0 && cc_mono_s() > until))
            return 0;
        sched_yield();
    }
    return 1;
}

/* A forked child keeps only the forking thread, never a namer: a lock the sampler held at
 * the fork is nobody's there (the child's exit report waited on it for ever). */
void cc_sample_after_fork(void) {
    __atomic_store_n(&naming, 0, __ATOMIC_RELAXED);
    exit_names_until = 0;
}

/* Tests (CORECAST_TEST_FAULT=naming_at_fork): the lock held across the program's forks, as
 * the sampler holds it at a fork that comes while it names a window's regions. */
static void hold_naming(void) { naming_lock(0, 0); }
static void drop_naming(void) { __atomic_store_n(&naming, 0, __ATOMIC_RELEASE); }
void cc_sample_test_hooks(void) {
    if (cc_cfg.naming_at_fork)
        pthread_atfork(hold_naming, drop_naming, NULL);
}

static void name_region(struct cc_region *r) { /* the naming lock held */
    int other = cc_region_other(r);
    if (other) {
        if (!r->name[0]) { /* the rest of the program's regions (core.c): named by the program */
            char exe[1024];
            ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[n > 0 ? n : 0] = 0;
            snprintf(r->name, sizeof r->name, other == 1 ? "(other regions)" : "(other nested regions)");
            basename_into(r->object, sizeof r->object, exe);
        }
    } else if (__atomic_load_n(&r->site, __ATOMIC_ACQUIRE)) {
        name_callsite(r); /* again each time: a call site seen later may come first */
    } else if (!r->name[0]) {
        char obj[1024];
        cc_symbol_name(r->fn, r->name, sizeof r->name, obj, sizeof obj);
        basename_into(r->object, sizeof r->object, obj);
    }
}

static unsigned long long fill_region(struct cc_region_sample *o, struct cc_region *r, struct cc_settle_extra *credited,
                                      int final) {
    /* The exit waits for a namer (the sampler) CORECAST_EXIT_TIMEOUT_MS in all: it may wait
     * for the loader's lock the exiting thread holds (an exit from a constructor inside
     * dlopen), and inside a dl_iterate_phdr callback it does: no wait there.  A region that
     * namer had not named goes by its address. */
    int no_loader = cc_naming_without_loader();
    if (final && !exit_names_until)
        exit_names_until = cc_mono_s() + (no_loader ? 0 : cc_cfg.exit_timeout_ms / 1000.0);
    if (naming_lock(final && no_loader ? 10000 : 0, final ? exit_names_until : 0)) {
        name_region(r);
        __atomic_store_n(&naming, 0, __ATOMIC_RELEASE);
    }
    memcpy(o->name, r->name, sizeof o->name);
    memcpy(o->object, r->object, sizeof o->object);
    o->name[sizeof o->name - 1] = o->object[sizeof o->object - 1] = 0;
    if (!o->name[0])
        cc_symbol_name(r->fn ? r->fn : r->site, o->name, sizeof o->name, o->object, sizeof o->object);
    o->runtime = CC_RUNTIME_OPENMP;
    o->threads = __atomic_load_n(&r->max_threads, __ATOMIC_RELAXED);
    o->nested = r->nested;
    o->calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    o->wall_s = cc_ticks_to_s(__atomic_load_n(&r->wall, __ATOMIC_RELAXED));
    o->busy_s = cc_ticks_to_s(__atomic_load_n(&r->busy, __ATOMIC_RELAXED));
    struct cc_counts n;
    cc_region_totals(r, &n);
    o->single_s = cc_ticks_to_s(n.single);
    o->serial_s = o->single_s;
    for (int c = 0; c < CC_NSTALL; c++) {
        o->hold_s[c] = cc_ticks_to_s(n.hold[c]);
        o->serial_s += o->hold_s[c];
    }
    o->loop_calls = n.loop_calls;
    o->tasks = n.tasks;
    o->task_s = cc_ticks_to_s(n.task_ticks);
    o->task_spawn_s = cc_ticks_to_s(n.spawn_ticks);
    o->task_depend = n.task_depend;
    o->taskwaits = n.taskwaits;
    o->single_tasks = n.single_tasks;
    o->single_task_spawn_s = cc_ticks_to_s(n.single_spawn_ticks);
    o->requested = __atomic_load_n(&r->requested, __ATOMIC_RELAXED);
    o->steered_to = cc_cfg.steer ? __atomic_load_n(&r->steer_threads, __ATOMIC_RELAXED) : 0;
    o->nhist = 0;
    for (int i = 0; i < CC_MAX_HIST; i++) {
        const struct cc_hist *h = &r->hist[i];
        int k = __atomic_load_n(&h->threads, __ATOMIC_ACQUIRE);
        if (!k)
            break;
        struct cc_team_stats *o_h = &o->hist[o->nhist++];
        o_h->threads = k;
        o_h->calls = __atomic_load_n(&h->calls, __ATOMIC_RELAXED);
        o_h->wall_s = cc_ticks_to_s(__atomic_load_n(&h->wall, __ATOMIC_RELAXED));
        o->hist_probes[o->nhist - 1] = __atomic_load_n(&h->probes, __ATOMIC_RELAXED);
    }
    o->probe_calls = __atomic_load_n(&r->probe_calls, __ATOMIC_RELAXED);
    int64_t extra = __atomic_load_n(&r->probe_extra, __ATOMIC_RELAXED);
    o->probe_extra_s = extra < 0 ? -cc_ticks_to_s((uint64_t)-extra) : cc_ticks_to_s((uint64_t)extra);
    o->probe_reserved_s = cc_ticks_to_s(__atomic_load_n(&r->probe_reserved, __ATOMIC_RELAXED));
    for (int c = 0; c < CC_NSTALL; c++) {
        o->stall_s[c] = cc_ticks_to_s(n.wait[c]);
        o->acquisitions[c] = n.acq[c];
        o->contended[c] = n.contended[c];
    }
    return cc_settle_extend(o, r, credited, final);
}

/* A plain-threads process's team: the threads that did its work.  Pool threads that
 * mostly wait (pigz's reader and writer, idle workers) are not: a thread counts when its
 * CPU time is at least TEAM_SHARE of the second busiest thread's (not the busiest: a
 * leader that also runs the serial part would push its workers out).  Threads that ended
 * before the sampler saw them count.  0 when fewer than two CPU times are known.  1 when
 * the second busiest did under ONE_THREAD_SHARE of the busiest's and none ended unseen:
 * helpers that only wait (an MPI library's progress thread: 0.2%; a pool never fed:
 * microseconds) are no team, and the model says it has no evidence of one (issue #38). */
#define TEAM_SHARE 0.25
#define ONE_THREAD_SHARE 0.01

/* ``unseen`` threads ran without a slot (they never called a wrapped function): they
 * share what the process's CPU time ``cpu_s`` holds beyond the listed threads'. */
static int team_of(int k, int unseen, double cpu_s) {
    double cpu[CC_MAX_THREADS], first = -1, second = -1, listed = 0;
    int n = 0, known = 0;
    for (int i = 0; i < k + unseen && n < CC_MAX_THREADS; i++) {
        double c;
        if (i < k) {
            const struct cc_thread *t = cc_thread_slot(i);
            if (!t || t->internal)
                continue;
            c = cpu[n++] = cc_slot_cpu_s(t); /* one lookup per thread */
            if (c > 0)
                listed += c;
        } else {
            c = cpu[n++] = cpu_s > listed ? (cpu_s - listed) / unseen : 0;
        }
        if (c < 0)
            continue;
        known++;
        if (c > first) {
            second = first;
            first = c;
        } else if (c > second) {
            second = c;
        }
    }
    if (known < 2 || first <= 0)
        return 0;
    if (second < ONE_THREAD_SHARE * first && known == n)
        return 1;
    if (second <= 0)
        return 0;
    int team = 0;
    for (int i = 0; i < n; i++)
        team += cpu[i] < 0 || cpu[i] >= TEAM_SHARE * second;
    return team;
}

/* The whole process: every program thread's waits, its CPU time and run-queue wait. */
static void fill_process(struct cc_region_sample *o, const struct cc_sample *s, int has_omp,
                         const struct cc_settle_extra *credited) {
    snprintf(o->name, sizeof o->name, "process");
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    basename_into(o->object, sizeof o->object, exe);
    o->runtime = has_omp ? CC_RUNTIME_OPENMP : CC_RUNTIME_PTHREADS;
    o->calls = 1;
    o->wall_s = s->elapsed_s;
    int k = cc_thread_count();
    uint64_t wait[CC_NSTALL] = {0}, held[CC_NSTALL] = {0}, hold = 0, holds = 0, single = 0, loops = 0;
    uint64_t tasks = 0, task = 0, spawn = 0, depend = 0, waits = 0, single_tasks = 0, single_spawn = 0;
    for (int i = 0; i < k; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        if (!t || t->internal)
            continue;
        o->threads++;
        for (int c = 0; c < CC_NSTALL; c++) {
            wait[c] += t->n.wait[c];
            o->acquisitions[c] += t->n.acq[c];
            o->contended[c] += t->n.contended[c];
        }
        hold += t->hold_sampled;
        holds += t->hold_samples;
        for (int c = 0; c < CC_NSTALL; c++)
            held[c] += t->n.hold[c];
        single += t->n.single;
        loops += t->n.loop_calls;
        tasks += t->n.tasks;
        task += t->n.task_ticks;
        spawn += t->n.spawn_ticks;
        depend += t->n.task_depend;
        waits += t->n.taskwaits;
        single_tasks += t->n.single_tasks;
        single_spawn += t->n.single_spawn_ticks;
        for (int c = 0; c < CC_NSTALL; c++)
            o->bytes[c] += t->mpi_bytes[c];
    }
    for (int c = 0; c < CC_NSTALL; c++)
        o->stall_s[c] = cc_ticks_to_s(wait[c]);
    /* Implicit-barrier imbalance is recorded per region only. */
    for (const struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        if (q->fn) {
            struct cc_counts n;
            cc_region_totals(q, &n);
            o->stall_s[CC_STALL_IMBALANCE] += cc_ticks_to_s(n.wait[CC_STALL_IMBALANCE]);
        }
    o->hold_sampled_s = cc_ticks_to_s(hold);
    o->hold_samples = holds;
    o->single_s = cc_ticks_to_s(single);
    o->serial_s = o->single_s;
    for (int c = 0; c < CC_NSTALL; c++) {
        o->hold_s[c] = cc_ticks_to_s(held[c]);
        o->serial_s += o->hold_s[c];
    }
    o->loop_calls = loops;
    o->tasks = tasks;
    o->task_s = cc_ticks_to_s(task);
    o->task_spawn_s = cc_ticks_to_s(spawn);
    o->task_depend = depend;
    o->taskwaits = waits;
    o->single_tasks = single_tasks;
    o->single_task_spawn_s = cc_ticks_to_s(single_spawn);
    double runq;
    cc_process_times(&o->cpu_s, &runq, &o->runq_other_s);
    o->stall_s[CC_STALL_RUNQUEUE] = runq; /* the program's own: other load's is apart */
    o->busy_s = o->cpu_s;
    int peak = cc_peak_threads(), unseen = peak > o->threads ? peak - o->threads : 0;
    o->team_threads = team_of(k, unseen, o->cpu_s);
    o->threads += unseen; /* the most that ran at once, when more than it listed */
    cc_settle_extend_process(o, credited);
}

int cc_sample_room(void) {
    int n = 1 + 8; /* the process, and 8 regions claimed before the sample is built */
    for (const struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        n++;
    return n < CC_MAX_REGIONS ? n : CC_MAX_REGIONS;
}

int cc_sampler_records(struct cc_sample **s, struct cc_result **r) {
    static struct cc_sample *sample;
    static struct cc_result *result;
    static size_t sb, rb;
    int room = cc_sample_room();
    if (!cc_map_grown((void **)&sample, &sb, CC_RECORD_BYTES(struct cc_sample, room)) ||
        !cc_map_grown((void **)&result, &rb, CC_RECORD_BYTES(struct cc_result, room)))
        return 0;
    *s = sample;
    *r = result;
    return room;
}

void cc_build_sample(struct cc_sample *s, int room, int final, struct cc_region **refs) {
    /* The header, and each region entry as it is filled: the whole struct is 170 kB. */
    memset(s, 0, offsetof(struct cc_sample, regions));
    s->abi = CC_ABI_VERSION;
    s->pid = getpid();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->cores = cores > 0 ? (int)cores : 1;
    s->target = cc_cfg.target;
    s->final = final;
    s->steer = cc_cfg.steer && (!cc_ompt_on || cc_ompt_team_control());
    double now = cc_mono_s();
    s->elapsed_s = now - cc_started();
    s->active_s = cc_active ? now - cc_active_since() : 0;
    s->window_s = cc_cfg.window_ms / 1000.0;
    cc_sampler_read_counters(s);
    int has_omp = 0;
    struct cc_settle_extra credited = {0}; /* settle.c: counts after the hand-back */
    room = room < CC_MAX_REGIONS ? room : CC_MAX_REGIONS;
    for (struct cc_region *q = cc_region_next(NULL); q && s->nregions < room - 1; q = cc_region_next(q)) {
        if (!__atomic_load_n(&q->fn, __ATOMIC_ACQUIRE))
            continue;
        has_omp = 1; /* entered, whether or not a call ended (exit from inside the first region) */
        if (!q->calls)
            continue;
        if (refs)
            refs[s->nregions] = q;
        memset(&s->regions[s->nregions], 0, sizeof s->regions[0]);
        unsigned long long u = fill_region(&s->regions[s->nregions], q, &credited, final);
        if (final)
            uncredited[s->nregions] = u;
        s->nregions++;
    }
    memset(&s->regions[s->nregions], 0, sizeof s->regions[0]);
    fill_process(&s->regions[s->nregions++], s, has_omp, &credited);
    s->overflow = __atomic_load_n(&cc_overflow, __ATOMIC_RELAXED);
}

/* Before dlclose may unmap an object: its regions named while their code, symbols and
 * source strings are still there (named later, a region took the program's name and a bare
 * address, or another object's that took its place, or read freed memory).  The object's
 * .symtab is read apart (apart.c): no descriptor of ours in the program's table. */
struct name_range {
    const char *lo, *hi;
};

static int in_range(const void *p, const struct name_range *g) {
    return (const char *)p >= g->lo && (const char *)p < g->hi;
}

static void name_range_apart(void *p) {
    const struct name_range *g = p;
    if (!naming_lock(10000, 0))
        return;
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q))
        if (!cc_region_other(q) && (in_range(q->fn, g) || in_range(q->site, g)))
            name_region(q);
    __atomic_store_n(&naming, 0, __ATOMIC_RELEASE);
}

void cc_name_regions_in(const char *lo, const char *hi) {
    struct name_range g = {lo, hi};
    int any = 0;
    for (const struct cc_region *q = cc_region_next(NULL); q && !any; q = cc_region_next(q))
        any = !cc_region_other(q) && (in_range(q->fn, &g) || in_range(q->site, &g));
    if (any)
        cc_own_cpu_add(cc_run_apart(name_range_apart, &g));
}
