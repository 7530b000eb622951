/* corecast preload library: internal declarations shared by native/ and shims/.
 *
 * Rules for anything reachable from a wrapper (shims/): no malloc, no stdio, no locks,
 * no Python; per-thread counters are written only by their own thread; shared region
 * counters use relaxed atomics. */
#ifndef CORECAST_H
#define CORECAST_H

#include <locale.h>
#include <stdint.h>
#include <sys/types.h>

#include "model_abi.h"
#include "settings.h" /* generated from the settings table: names, ranges, defaults */

/* Internal functions added since the exported set was fixed: not for the program's eyes. */
#define CC_HIDDEN __attribute__((visibility("hidden")))

#define CC_MAX_THREADS 1024
#define CC_MAX_HELD 4 /* nested critical sections / locks timed per thread */

extern const char *const CC_STALL_NAMES[CC_NSTALL];
extern const char *const CC_COUNTER_NAMES[CC_NCTR];

/* ---- time ---------------------------------------------------------------------- */
static inline uint64_t cc_now(void) {
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    extern uint64_t cc_now_fallback(void);
    return cc_now_fallback();
#endif
}
double cc_ticks_to_s(uint64_t ticks); /* calibrated against CLOCK_MONOTONIC */
double cc_mono_s(void);
void cc_clock_start(void) CC_HIDDEN; /* the image's (or forked child's) lifetime starts */
double cc_started(void);             /* cc_mono_s() then */

/* ---- per-thread state ------------------------------------------------------------ */
struct cc_region;

/* What a thread's synchronisation adds up to; regions fold in the deltas. */
struct cc_counts {
    uint64_t wait[CC_NSTALL];
    uint64_t acq[CC_NSTALL];
    uint64_t contended[CC_NSTALL];
    uint64_t hold[CC_NSTALL]; /* timed hold of critical/atomic/ordered/omp locks */
    uint64_t single;          /* single blocks (until the next barrier) */
    uint64_t loop_calls;
    /* Explicit tasks (shims/gomp.c): tasks run; ticks in them (outermost task only:
     * barriers, region ends and single blocks take these out of their time, as libgomp
     * runs queued tasks in barriers); ticks creating them (GOMP_task, less any task it ran
     * at once: the runtime's share); tasks created with dependences (hashed, not only queued);
     * taskwaits and taskgroup ends outside any task (the phases tasks are made and waited in);
     * of the tasks created and their creating ticks, those a single block made outside any
     * task (the producer of a parallel + single + task region). */
    uint64_t tasks, task_ticks, spawn_ticks, task_depend, taskwaits, single_tasks, single_spawn_ticks;
};
/* The single counters of struct cc_counts (after the per-category tables), for code that
 * treats each alike: a region's fold and its totals. */
#define CC_COUNT_SCALARS(X) X(single) X(loop_calls) X(tasks) X(task_ticks) X(spawn_ticks) X(task_depend) X(taskwaits) \
    X(single_tasks) X(single_spawn_ticks)

struct cc_thread {
    int tid;
    int shard, slot; /* the region fold shard it adds to (CC_FOLD_SHARDS); its slot (-1: the overflow one) */
    int guard;    /* > 0: inside corecast itself, wrappers pass straight through */
    int internal; /* corecast's own thread (the sampler): not part of the program */
    /* A region started and nothing changed yet: the first update snapshots ``n`` into
     * ``snap`` (regions without synchronisation never pay for a copy). */
    int snap_pending;
    struct cc_counts n, snap;
    uint64_t hold_sampled, hold_samples;
    /* OpenMP context */
    int depth;
    uint64_t single_t0;
    /* Explicit tasks (the rest is in ``n``): ticks waiting in taskwait/taskgroup ends
     * outside tasks, which a single block leaves out too. */
    uint64_t taskwait_ticks, single_task0;
    uint64_t child_ticks; /* tasks run at the current task level (shims/gomp.c) */
    int task_depth;
    int ordered_turn; /* libgomp's ordered turn held since this thread's first block of the chunk */
    int nheld;
    uint64_t held_t0[CC_MAX_HELD];
    const void *held_obj[CC_MAX_HELD];
    uint32_t held_scale[CC_MAX_HELD];
    int held_cat[CC_MAX_HELD];
    /* Sampled acquisitions (omp_call.h): untimed ones left before the next timed one, how many
     * it will stand for, the running means (ticks) of timed waits and holds (they set the gap)
     * and of releases; free waits' and releases' mean and fastest, plus one (0: none yet). */
    uint32_t sample_left, sample_span, sample_wait, sample_hold, sample_release, free_wait[2], free_release[2];
    /* contended pthread lock awaiting its hold-time sample */
    const void *sample_lock;
    uint64_t sample_t0;
    /* MPI (shims/mpi.c): payload bytes per category (its requests: mpi_requests.h) */
    uint64_t mpi_bytes[CC_NSTALL];
    /* Slot reuse (core.c): a slot whose thread exited goes to the next new thread, which
     * carries on its counts.  ``inherited``: it held earlier threads; ``gone_cpu_ns``:
     * their CPU time (the slot's CPU is theirs plus its thread's, cc_slot_cpu_s). */
    int inherited;
    uint64_t gone_cpu_ns;
} __attribute__((aligned(64)));

struct cc_thread *cc_self_slow(void) CC_HIDDEN;
/* The calling thread is corecast's own: its slot is left out of the program's figures and
 * never handed to another thread (corecast's threads call this instead of cc_self()). */
struct cc_thread *cc_self_internal(void) CC_HIDDEN;
/* Slot reuse: the exit hook's key, made at start-up (no key: slots are never reused). */
void cc_slots_init(void) CC_HIDDEN;
int cc_slot_vacant(const struct cc_thread *t) CC_HIDDEN; /* its thread exited, no new one yet */
int cc_slots_reused(void) CC_HIDDEN; /* exited threads' slots are handed on (the key works) */
extern __thread struct cc_thread *cc_self_tls __attribute__((tls_model("initial-exec")));
/* How deep this thread is in dl_iterate_phdr (shims/process.c), whose callbacks run with the
 * loader's write lock held: an exit from one must not ask the loader (lifecycle.c's). */
extern __thread int cc_loader_depth __attribute__((tls_model("initial-exec")));

static inline struct cc_thread *cc_self(void) {
    struct cc_thread *t = cc_self_tls;
    return t ? t : cc_self_slow();
}

/* Relaxed store of a thread-owned counter (readers are the sampler and the report). */
#define CC_ADD(field, v) __atomic_store_n(&(field), (field) + (v), __ATOMIC_RELAXED)
#define CC_AADD(field, v) __atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/* The thread's counters, ready for an update (takes a pending region snapshot first). */
static inline struct cc_counts *cc_counts(struct cc_thread *t) {
    if (__builtin_expect(t->snap_pending, 0)) {
        t->snap = t->n;
        t->snap_pending = 0;
    }
    return &t->n;
}

/* One acquisition or wait of category ``cat``: ``ticks`` waited (0: uncontended). */
static inline void cc_note(struct cc_thread *t, int cat, uint64_t ticks, int contended) {
    struct cc_counts *n = cc_counts(t);
    if (ticks)
        CC_ADD(n->wait[cat], ticks);
    CC_ADD(n->acq[cat], 1);
    if (contended)
        CC_ADD(n->contended[cat], 1);
}

/* ---- global state --------------------------------------------------------------- */
struct cc_config {
    int disabled;
    int quiet, display_env;
    int steer;
    int probe; /* CORECAST_PROBE: some calls of repeated regions run at smaller teams */
    int target;
    int window_ms;
    int exit_timeout_ms; /* how long the exit waits for the model */
    int launch_pid;      /* CORECAST_LAUNCH_PID: the process `corecast run` started (0: none) */
    int keep_counting;   /* CORECAST_KEEP_COUNTING: no hand-back once steering settled (settle.c) */
    int slow_rewrite, slow_table, report_segv, no_sampler, naming_at_fork, view_at_fork, loading_at_fork, sampler_first,
        view_in_loader, naming_in_loader, quiet_exit_awaits; /* tests only: CORECAST_TEST_FAULT of that name */
    char output[1024];   /* CORECAST_OUTPUT as given: may hold {rank} and {pid} */
    int rank, ranks;     /* from the MPI launcher's environment; -1, 0: not launched so */
    char start_dir[4096]; /* the working directory at the start ("": unknown): relative settings are its */
};
extern struct cc_config cc_cfg;
void cc_test_gate(int fault, int *once) CC_HIDDEN; /* resolve.c: a test fault's wait for its program */
extern volatile int cc_ready;     /* constructor ran, not yet finalised */
extern volatile int cc_active;    /* parallel activity seen */
extern uint64_t cc_overflow;      /* events dropped: slot or region tables full */
/* Program threads alive at once, the main one included: started through the
 * pthread_create wrapper (shims/pthread.c), whether or not they ever call a wrapped
 * function and so get a slot.  A process's team counts the ones it never saw. */
void cc_thread_started(void) CC_HIDDEN;
void cc_thread_ended(void) CC_HIDDEN;
int cc_peak_threads(void) CC_HIDDEN;
int cc_live_threads(void) CC_HIDDEN; /* alive now */

/* 1 once an OMPT runtime (libomp, libiomp5) started shims/ompt.c: the GOMP_* entry points
 * such a runtime also exports then pass straight through (one path per runtime). */
extern int cc_ompt_on; /* omp_runtime.c holds the runtime's state, shims/ompt.c sets it */
extern int cc_ompt_forks_seen CC_HIDDEN; /* a program called __kmpc_fork_call */
void cc_ompt_started(const char *runtime) CC_HIDDEN; /* the tool started: that runtime's file name */
const char *cc_ompt_runtime(void), *cc_omp_runtime_soname(void); /* its file name ("": none); its soname */
struct cc_gomp;
unsigned cc_ompt_fork(const void *loc, void *fn, unsigned requested, const struct cc_gomp *g);
int cc_ompt_team_control(void); /* 1: probing and steering work on the OMPT path */
void cc_ompt_after_fork(void); /* clears the OMPT state of the slots taken */
/* An OpenMP runtime loaded that neither goes through the GOMP wrappers nor started the OMPT tool
 * (OMP_TOOL=disabled, ...): its file name, else NULL; the user's tools ours stepped aside for, else "". */
const char *cc_unmeasured_omp_runtime(void), *cc_ompt_aside_for(void); void cc_ompt_step_aside(const char *tools);
void cc_activity(void) CC_HIDDEN; /* first parallel activity: runs the hook below once */
void cc_on_activity(void (*hook)(void)) CC_HIDDEN; /* what activity starts (lifecycle.c) */
double cc_active_since(void);
void cc_core_after_fork(void) CC_HIDDEN; /* slots, activity, clock start afresh (regions: regions.c) */
void cc_config_read(void) CC_HIDDEN;     /* config.c: the CORECAST_* settings into cc_cfg */
/* A 0/1 setting by the same rule, without a warning (before cc_config_read, which warns). */
int cc_env_flag(const char *name) CC_HIDDEN;
/* An exec's ``envp``, marked after a warning where it preloads us (``out``: cc_exec_env_room's count). */
size_t cc_exec_env_room(char *const envp[]) CC_HIDDEN; int cc_preloaded_in(char *const envp[]) CC_HIDDEN;
char *const *cc_exec_env(char *const envp[], char **out, size_t cap) CC_HIDDEN;
/* MPI (shims/mpi.c): how long MPI_Init and MPI_Finalize took, for the summary record
 * (start-up and shut-down are neither compute nor the program's communication). */
struct cc_mpi_life {
    int initialized;
    double init_s, finalize_s;
};
extern struct cc_mpi_life cc_mpi;
/* CORECAST_OUTPUT with {rank} and {pid} filled in; 0 when it does not fit. */
int cc_output_path(char *dst, size_t n);
int cc_thread_count(void); struct cc_thread *cc_thread_slot(int i); /* i < the count; NULL: refused memory */

/* ---- OpenMP regions --------------------------------------------------------------- */
struct cc_hist {
    int threads; /* 0 = free entry */
    uint64_t calls, wall;
    uint64_t probes; /* of ``calls``: probe calls (CORECAST_PROBE) */
};

#define CC_NSETTLE 3 /* categories settle.c stops counting: critical (with ordered), atomic, OpenMP locks */
/* Here, not in settle.c: omp_call.c's boundary snapshots read them too. */
static const int cc_settle_cats[CC_NSETTLE] = {CC_STALL_CRITICAL, CC_STALL_ATOMIC, CC_STALL_OMPLOCK};

/* What a region's members fold in at the end of each call goes into one of
 * CC_FOLD_SHARDS copies of the counters, picked by the thread's slot, each in cache lines
 * of its own: with one copy, every member of a 16-thread team made its atomic adds to the
 * same lines at the same moment (the team's end), and each add waited for the line to
 * come from the core before it.  The sampler and the report sum the shards
 * (cc_region_totals). */
#define CC_FOLD_SHARDS 16
struct cc_fold_shard {
    struct cc_counts n;
} __attribute__((aligned(64)));

struct cc_region {
    void *fn;   /* key: the outlined function (or, OMPT without it, the fork's call site); NULL = free */
    void *site; /* OMPT: a call site of the fork, for the name (the function holding it) */
    const void *loc; /* OMPT: the fork's ident_t (its psource names the function with -g) */
    int nested, at; /* at: its place in core.c's table */
    int max_threads;
    int requested;     /* largest team the program asked for */
    int steer_threads, steer_settled; /* > 0: steering caps the team at this size; settled on it (steer_start.c) */
    /* Probing (shims/gomp.c): the next size is requested >> (probe_level + 1); one probe
     * call at a time (probe_busy); in ticks, the expected extra time reserved at each
     * probe's start and the measured extra, signed (a smaller team may be faster). */
    int probe_level, probe_busy;
    uint64_t probe_reserved;
    int64_t probe_extra;
    uint64_t probe_calls;
    struct cc_hist hist[CC_MAX_HIST];
    /* Written by the thread that forks the region (and by settle.c's credit): calls and
     * time, the imbalance measured at the join, and credited sections.  The members'
     * synchronisation counts are in ``shards``; cc_region_totals adds both up. */
    uint64_t calls, wall, busy, single, loop_calls;
    /* tasks run late (omp_call.c); the rest 0 */
    uint64_t tasks, task_ticks, spawn_ticks, task_depend, taskwaits, single_tasks, single_spawn_ticks;
    uint64_t hold[CC_NSTALL];
    uint64_t wait[CC_NSTALL], acq[CC_NSTALL], contended[CC_NSTALL];
    struct cc_fold_shard shards[CC_FOLD_SHARDS];
    /* The sampler's snapshots (settle.c): at the start of the latest window (with the team
     * steering set for it, 0: the program's own), at the start of the window whose rate
     * is credited, when it stopped counting the sections it hands back, and when it took
     * them back. */
    struct cc_sync_snap {
        int team;
        int watch; /* > 0: its window may end early once it made this many calls (settle.c) */
        int c_step; /* the window began at sampler.c's convoy step, which no answer has settled */
        unsigned gen; /* a boundary's: the edge_gen it was taken in */
        int boundary; /* taken at a call's end with no call of the region in flight (omp_call.c) */
        uint64_t calls;
        uint64_t wait[CC_NSETTLE], hold[CC_NSETTLE], acq[CC_NSETTLE], contended[CC_NSETTLE];
    } window_at, rate_at, stopped_at, taken_at;
    uint64_t gap_calls; /* calls run uncounted before the wrappers were taken back, to credit */
    /* Calls were in flight when the wrappers were taken back: their credit runs from stopped_at
     * to the region's next boundary (settle.c), where they have ended. */
    int owed;
    /* Boundaries (boundary.c): calls begun (less ``calls``: those in flight); whether
     * settle.c asks for them; their generation; odd while one is written; the first and
     * the latest; 1 once a member folded sections in (until then every shard holds none). */
    uint64_t begun;
    int edge_want, sections;
    unsigned edge_gen, edge_seq;
    struct cc_sync_snap edge_first, edge_last;
    uint64_t look_calls; /* settle.c: calls at its last look */
    char name[CC_NAME_LEN], object[CC_NAME_LEN]; /* filled at report time */
    char parent[CC_NAME_LEN];                    /* call sites: the function holding it */
};
struct cc_region *cc_region_for(void *fn); void cc_regions_after_fork(void) CC_HIDDEN; /* NULL: full; a child's afresh */
/* A call's region: its own, or once the table is full the one that counts the rest. */
struct cc_region *cc_region_or_other(void *fn, int nested) CC_HIDDEN;
int cc_region_other(const struct cc_region *r) CC_HIDDEN; /* 1, 2: the rest (outermost, nested); 0: own */
/* A region's synchronisation counts: its own plus every fold shard's (readers only: the
 * sampler, settle.c, the report). */
void cc_region_totals(const struct cc_region *r, struct cc_counts *out) CC_HIDDEN;
struct cc_region *cc_region_next(const struct cc_region *prev) CC_HIDDEN; /* slots in use, in order; NULL: first, end */

/* ---- sampler, model, report ---------------------------------------------------- */
void cc_sampler_start(void), cc_sampler_stop(void), cc_sampler_after_fork(void), cc_sampler_mark_start(void);
void cc_sampler_park(int timeout_ms); /* stops it, awaits the end of its window */
int cc_sampler_quiesce(int timeout_ms, int model_too); /* a quiet exit's stop: whether it is done */
int cc_sampler_give_back(double deadline, int *tid); /* it ends, its task the program's (lifecycle.c) */
/* The exit prediction, made by the sampler thread.  Unless ANSWERED, ``r`` stays the
 * sampler's (it may still write there). */
enum cc_final_outcome { CC_FINAL_PENDING, CC_FINAL_ANSWERED, CC_FINAL_FAULTED, CC_FINAL_TIMEOUT, CC_FINAL_NO_SAMPLER,
                        CC_FINAL_HELD /* the exiting thread holds the Python host's interpreter */,
                        CC_FINAL_IN_LOADER /* it holds the loader's lock (cc_loader_depth) */ };
enum cc_final_outcome cc_sampler_final(struct cc_sample *s, struct cc_result *r, int timeout_ms);
/* The fatal signals of corecast's exit guard (lifecycle.c); the sampler leaves them unblocked. */
#define CC_NFATAL 5
extern const int cc_fatal_signals[CC_NFATAL];
void cc_sampler_failed(void); /* async-signal-safe */
/* For the summary: windows closed, window samples handed to the model (not the exit's), windows every
 * region had settled in (none handed), when steering started it, the exit's wait for its prediction. */
struct cc_sampler_stats {
    unsigned long windows, model_runs, settled_windows;
    double model_started_s, exit_wait_s;
};
struct cc_sampler_stats cc_sampler_stats(void) CC_HIDDEN;
int cc_sampler_is(int tid); /* ``tid`` is the sampler thread */
/* What the sampler reads (counters.c): PMU counters, schedstat, the run-queue split. */
void cc_counters_open(void) CC_HIDDEN;       /* at the first activity */
void cc_counters_after_fork(void) CC_HIDDEN; /* a child counts afresh */
void cc_counters_sampler_is(int tid) CC_HIDDEN; /* its CPU time is corecast's */
int cc_counters_fds(int *out, int max) CC_HIDDEN; /* the open counter descriptors (PMU, NUMA) */
void cc_counters_moved(void) CC_HIDDEN; /* the sampler's table holds them: out of the program's */
void cc_counters_read_held(struct cc_sample *s) CC_HIDDEN; /* PMU, NUMA: where this table holds them */
void cc_sampler_read_counters(struct cc_sample *s); /* fills counters + runqueue */
double cc_cpu_before_start(void) CC_HIDDEN; /* CPU s before this image: `corecast run`'s launcher */
double cc_children_cpu_s(void) CC_HIDDEN; /* waited-for children's CPU s (getrusage) */
/* NUMA topology and memory-traffic counters (numa.c, the plan in CORECAST_NUMA_EVENTS):
 * opened with the sampler's counters, read with them (cumulative), closed in a forked child. */
extern const char *const CC_NUMA_ROLE_NAMES[CC_NUMA_NROLES]; /* bit order of CC_NUMA_* */
void cc_numa_open(void), cc_numa_after_fork(void), cc_numa_topology(void); /* topology: sysfs, once */
void cc_numa_read(struct cc_numa_counts *n);
int cc_numa_events(int *opened) CC_HIDDEN; /* the plan's events; *opened: how many were opened */
int cc_numa_fds(int *out, int max); /* the open NUMA event descriptors */
void cc_numa_moved(void); /* closed in the program's table (counters.c's cc_counters_moved) */
/* CORECAST_NUMA_EVENTS's value into *p (numa_plan.c); NULL if it is a plan this library
 * reads, else what is wrong with it (*p is then not to be used). */
const char *cc_numa_plan_decode(const char *text, struct cc_numa_plan *p) CC_HIDDEN;
int cc_model_predict(const struct cc_sample *s, struct cc_result *r);
void cc_model_after_fork(void), cc_model_warmup(void), cc_model_test_hooks(void), cc_model_test_wait_start(void),
    cc_model_finalize_first(void); /* the exit report's end, the model done: bridge.c */
const char *cc_model_warning(void);
double cc_model_start_cpu_s(void), cc_model_cpu_s(void); /* its CPU s: its start; all of it */
/* Python hosts: what the model's atexit hook runs (the exit report), set at start-up. */
void cc_model_set_exit_report(void (*report)(void)) CC_HIDDEN;
/* The report channel (channel.c): the program's original stderr, found at each write. */
void cc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cc_channel_init(void);
int cc_report_channel_open(void); /* whether a write would reach it now */
void cc_report_write(const char *p, size_t n);
/* ``n`` bytes on ``fd`` whatever its signals and limits (waits ``patience_s`` for a slow
 * reader of a non-blocking one); 0, or -1 with errno. */
int cc_write_all(int fd, const char *p, size_t n, double patience_s);
/* The program's pending stdio output, flushed before a report on the way out of exit() or
 * main writes anything (write.c). */
void cc_flush_program_streams(void) CC_HIDDEN;
locale_t cc_c_locale(void);
int cc_own_descriptor_table(const int *keep, int n);
void cc_channel_before_release(int lo, int hi);
int cc_channel_origin_released(void); /* no low descriptor of the program is the original stderr */
void cc_channel_window_check(int let_go); /* let_go: drop the copy now */
int cc_channel_held_here(void);
int cc_own_table_here(void);
void cc_channel_serving(void), cc_channel_serve(void);
int cc_channel_give_back(double deadline, int *tid, const char *why); /* the keeper ends, its task the program's */
void cc_channel_after_fork(void);
/* Names made safe and a report's text: text.h (text.c). */
void cc_symbol_name(const void *addr, char *name, size_t nsize, char *object, size_t osize);
/* From an exit inside the loader on: names by address alone, the loader never asked. */
void cc_names_without_loader(void) CC_HIDDEN;
int cc_naming_without_loader(void) CC_HIDDEN;
/* The program's CPU time (corecast's own left out) and run-queue wait, the latter split
 * into its own (more runnable threads than CPUs) and other load's (runq_other_s). */
void cc_process_times(double *cpu_s, double *runq_s, double *runq_other_s);
void cc_sampler_baseline(void); /* first activity: where the run-queue split starts */
struct cc_load {
    double runnable_s; /* program threads' CPU time plus run-queue wait */
    double runq_s;     /* all their run-queue wait */
    double other_s;    /* the part of it other load caused */
    int allowed;       /* CPUs the process may run on */
};
struct cc_load cc_load_split(void);
/* corecast's own CPU time: its threads plus cc_own_cpu_add()ed time on program threads. */
double cc_own_cpu_s(void);
void cc_own_cpu_add(double s);
double cc_thread_cpu_s(void); /* the calling thread's CPU clock */
double cc_task_cpu_s(int tid);
/* A slot's CPU time: its earlier occupants' and its thread's (-1: none known). */
double cc_slot_cpu_s(const struct cc_thread *t) CC_HIDDEN;
int cc_host_is_python(void);
int cc_holds_python(void); /* the calling thread holds the Python host's interpreter */
const char *cc_library_file(void) CC_HIDDEN; /* this library's path as loaded; NULL: unknown */
/* Resolving real functions: in the caller's own library first (wheels load private
 * libgomp copies RTLD_LOCAL), then RTLD_NEXT. */
void *cc_resolve(const char *name, const void *caller);
void *cc_resolve_next(const char *name, const char *version);
int cc_is_ours(const void *p); /* ``p`` lies in the preload library */

#endif
