/* The sampler (over 400 lines: the thread's commands, waits and ends share its state): a
 * thread that closes a window every CORECAST_WINDOW_MS, builds the sample from the counters
 * (counters.c, sample.c) and hands it to the model; at exit it makes the final prediction.
 * It runs with its guard raised, so its own locks (and Python's, while it calls the model)
 * never reach the counters. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corecast.h"
#include "lazy.h"
#include "futex.h"
#include "real.h"
#include "sample.h"
#include "settle.h"
#include "steer_start.h"

static pthread_t sampler;
static volatile int sampler_running;
static volatile int sampler_tid;
static struct cc_sampler_stats stats = {0, 0, 0, -1, 0}; /* the sampler's own, for the summary */

struct cc_sampler_stats cc_sampler_stats(void) {
    struct cc_sampler_stats o = stats; /* the counts again, atomically: */
    o.windows = __atomic_load_n(&stats.windows, __ATOMIC_RELAXED);
    o.model_runs = __atomic_load_n(&stats.model_runs, __ATOMIC_RELAXED);
    o.settled_windows = __atomic_load_n(&stats.settled_windows, __ATOMIC_RELAXED);
    return o;
}

/* ---- the thread ----------------------------------------------------------------- */
/* The sampler is the only thread that enters the model in a non-Python host, the exit
 * prediction included: the exiting thread hands it the final sample and waits a bounded
 * time (CORECAST_EXIT_TIMEOUT_MS), so a slow or stuck model costs the predictions, never
 * the program's exit, and the model is quiescent before the C library's destructors run. */
enum { CMD_NONE, CMD_FINAL, CMD_STOP };
static int sampler_cmd;    /* futex word: what the exiting thread asks */
static int final_state;    /* futex word: an enum cc_final_outcome */
static int parked;         /* futex word: the sampler's windows are over */
static int for_good;       /* parked for good (cc_sampler_park): no report will come */
static struct cc_sample *final_sample; /* its PMU and NUMA counts added here */
static struct cc_result *final_result;
static int ending;         /* it ends for good, its task the program's (cc_sampler_give_back) */
static int ended;          /* futex word: it has, but for the C library's end of a thread */
static volatile int in_model; /* in a model run (the Python host's interpreter, perhaps) */

/* Sleeps until ``*word`` != ``seen`` or ``ms`` have passed; returns the word's value. */
static int wait_change(int *word, int seen, long ms) {
    double deadline = cc_mono_s() + ms / 1000.0;
    for (;;) {
        int now = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        double left = deadline - cc_mono_s();
        if (now != seen || left <= 0)
            return now;
        cc_futex(word, FUTEX_WAIT_PRIVATE, seen, left);
    }
}

/* ---- the sampler's own descriptor table ------------------------------------------ */
/* Every window the sampler opens /proc files, and a non-Python host's model opens its
 * imports: in the program's table they would take its lowest free numbers (a program that
 * closes fd 1 and opens a file is promised 1 back) and a program closing descriptors would
 * close the model's.  So the sampler gets a table of its own (channel.c), once the
 * counters it reads are open, with the counters and a copy of the report channel. */
static int counters_open; /* futex word: cc_sampler_start opened the counters */
enum { TABLE_PENDING, TABLE_OWN, TABLE_SHARED };
static int table_ready;   /* futex word: the sampler's table (and the channel's copy), or none */

static void own_descriptor_table(void) {
    wait_change(&counters_open, 0, 1000);
    if (cc_cfg.slow_table) /* tests: a sampler starved until the program let its stderr go */
        for (int i = 0; i < 10000 && !cc_channel_origin_released(); i++)
            usleep(1000);
    int keep[64], n = cc_counters_fds(keep, 63);
    int own = cc_own_descriptor_table(keep, n);
    __atomic_store_n(&table_ready, own ? TABLE_OWN : TABLE_SHARED, __ATOMIC_RELEASE);
    cc_futex(&table_ready, FUTEX_WAKE_PRIVATE, 1, -1);
}

/* The sampler blocks every signal, so that none sent to the process lands on it: a program
 * that blocks them all (to take them with sigwait, or to leave them pending) was ended by a
 * `kill -ABRT` or `kill -SEGV` that found the sampler the only thread to take it.  In the model
 * a fault must reach the exit guard (guard.c; a blocked one is forced to its default action),
 * not one pending, the program's (a steered run took a pending SIGBUS); abort() unblocks SIGABRT. */
static void faults_deliverable(int yes) {
    sigset_t faults, pending;
    sigemptyset(&faults);
    if (!yes || sigpending(&pending) != 0)
        sigemptyset(&pending);
    for (int i = 0; i < CC_NFATAL; i++)
        if (cc_fatal_signals[i] != SIGABRT && !sigismember(&pending, cc_fatal_signals[i]))
            sigaddset(&faults, cc_fatal_signals[i]);
    pthread_sigmask(yes ? SIG_UNBLOCK : SIG_BLOCK, &faults, NULL);
}

/* The program ran out of tasks (cc_sampler_give_back), or (``scratch`` NULL) a Python host
 * ended it in the model (ended_in_model): this thread ends, and what its table holds with it.
 * Its counts as of now stay for the exit (counters.c's last ones); the report finds the stderr
 * as if no sampler had started.  Its windows are over: the exit predicts apart. */
static void end_for_good(struct cc_sample *scratch) {
    if (scratch)
        cc_counters_read_held(scratch);
    cc_channel_window_check(1);
    __atomic_store_n(&sampler_running, 0, __ATOMIC_RELEASE);
    cc_own_thread_ending();
    __atomic_store_n(&ended, 1, __ATOMIC_RELEASE);
    cc_futex(&ended, FUTEX_WAKE_PRIVATE, 1 << 30, -1);
    __atomic_store_n(&parked, 1, __ATOMIC_RELEASE); /* a seccomp park waits no longer */
    cc_futex(&parked, FUTEX_WAKE_PRIVATE, 1, -1);
}

/* A Python host that finalizes ends each other thread that waits for its GIL (pthread_exit),
 * the sampler in a model run or start too (one not awaited: a seccomp filter installed holding
 * the GIL, a quiet exit).  Off glibc's count of threads, its end took the count to 0 and glibc
 * ran exit(0) on it while the program's thread finalized: sys.exit(3) ended 0, or the two
 * exits at once faulted (test_host_edges.py).  Counted again here, it just ends. */
static void ended_in_model(void *unused) {
    in_model = 0;
    end_for_good(NULL);
}

static int model_run(const struct cc_sample *s, struct cc_result *r) { /* NULL: the start alone */
    in_model = 1;
    faults_deliverable(1);
    int rc;
    pthread_cleanup_push(ended_in_model, NULL);
    rc = s ? cc_model_predict(s, r) : (cc_model_warmup(), 0);
    pthread_cleanup_pop(0);
    faults_deliverable(0);
    in_model = 0;
    return rc;
}

static void *sampler_main(void *arg) {
    struct cc_thread *t = cc_self_internal();
    t->guard = 1;
    uselocale(cc_c_locale()); /* its numbers in JSON and /proc reads: "0.5" in any locale */
    own_descriptor_table();
    sampler_tid = (int)syscall(SYS_gettid);
    cc_counters_sampler_is(sampler_tid);
    struct cc_sample *sample = NULL; /* sized to the regions (cc_sampler_records) */
    struct cc_result *result = NULL;
    /* With steering the first window is a short one: a convoy shows in it, and every
     * window at the program's count is the convoy's expensive one.  The model starts at the
     * first window whose answer steering can act on (steering_may_act).  Without steering
     * the short first look finds sections whose counting costs (settle.c, cc_settle_counting_costs). */
    long wait_ms = cc_cfg.steer || (!cc_cfg.probe && !cc_cfg.keep_counting) ? CC_FIRST_LOOK_MS : cc_cfg.window_ms;
    long short_ms = cc_short_window_ms();
    int shorts_left = 0; /* a window that may end early: its short windows still to wait */
    int model_started = 0; /* steering's model runs: from then on, every window */
    double scheduled_s = 0; /* the waits asked for: a clock no load stretches (settle.h) */
    int answered = 0; /* the exit's prediction: the report may come through this thread */
    if (cc_cfg.sampler_first || cc_cfg.quiet_exit_awaits) /* tests: it starts the model first */
        model_run(NULL, NULL);
    for (;;) {
        int cmd = wait_change(&sampler_cmd, CMD_NONE, wait_ms);
        scheduled_s += wait_ms / 1000.0;
        if (cmd == CMD_NONE && shorts_left > 0 && !cc_settle_window_measured()) {
            shorts_left--;
            continue; /* wait_ms is still a short window */
        }
        shorts_left = 0;
        wait_ms = cc_cfg.window_ms;
        if (cmd == CMD_FINAL) {
            /* The exit report read this thread's schedstat before: the last model run's
             * CPU time is added as corecast's own here. */
            double t0 = cc_thread_cpu_s();
            /* The counters this table holds (the exiting thread's read them not). */
            cc_counters_read_held(final_sample);
            model_run(final_sample, final_result);
            cc_own_cpu_add(cc_thread_cpu_s() - t0);
            cc_channel_serving(); /* the report that follows may come by mail */
            __atomic_store_n(&final_state, CC_FINAL_ANSWERED, __ATOMIC_RELEASE);
            cc_futex(&final_state, FUTEX_WAKE_PRIVATE, 1, -1);
            answered = 1;
            break;
        }
        if (cmd == CMD_STOP)
            break;
        /* At whole windows only: a short one (settle.c) or the exit's command is no grace
         * for a program that closed its stderr just before it exits (xz). */
        cc_channel_window_check(0);
        static struct cc_region *refs[CC_MAX_REGIONS];
        int room = cc_sampler_records(&sample, &result);
        if (!room)
            continue; /* refused (the program's locked-memory limit): no window this time */
        cc_build_sample(sample, room, 0, refs);
        int first_call = cc_settle_look(sample->elapsed_s);
        __atomic_store_n(&stats.windows, stats.windows + 1, __ATOMIC_RELAXED);
        if (!sample->steer && !cc_cfg.steer && (cc_settle_stopped_s() > 0 || cc_settle_counting_costs(sample)) &&
            cc_settle_own_counts(sample, refs, scheduled_s)) {
            wait_ms = short_ms;
            shorts_left = CC_SHORT_PER_WINDOW - 1;
        }
        /* A window's prediction is read by steering alone, and the NUMA model credits
         * memory-traffic counters window by window; otherwise the exit's sample holds all
         * the model uses (as replay shows).  An interpreter started, or a model run, while
         * the program's threads hold every core slows them (benchmarks/device16: a --probe
         * recording of NPB cg.A at 16 threads on 16 cores ran 2.1x as long as cg.A alone;
         * steering's start cost NPB bt.W 17% there). */
        int steer = sample->steer && (model_started || cc_steering_may_act(sample));
        if (steer && !model_started && !cc_steering_may_pay(sample)) {
            if (sample->elapsed_s * 1000 >= cc_cfg.window_ms && cc_settle_own_counts(sample, refs, scheduled_s)) {
                wait_ms = short_ms;
                shorts_left = CC_SHORT_PER_WINDOW - 1;
            }
            steer = 0;
        }
        if (!sample->numa.measured && !steer) {
            /* A team without 2 calls yet (a loaded machine), or a first call still running
             * (its end may give a hand-back's rate): look again after a short window (a whole
             * one at its own count slowed half of the steered omp_slowdown runs by 0.2 s). */
            long lock_look = sample->steer && !model_started && sample->elapsed_s * 1000 < cc_cfg.window_ms
                                 ? cc_next_lock_look_ms(sample) : 0;
            if (sample->elapsed_s * 1000 < cc_cfg.window_ms &&
                (sample->steer ? !model_started && !cc_team_has_run(sample) : first_call))
                wait_ms = CC_FIRST_LOOK_MS;
            else if (lock_look)
                wait_ms = lock_look;
            continue;
        }
        double look_s = sample->elapsed_s; /* when the model starts: before its interpreter's start */
        if (steer && !model_started && cc_convoy_first_steps(sample, refs, scheduled_s)) {
            /* The interpreter starts first (tens of ms, the program at the new count
             * meanwhile); the model's first answer then reads that time too: its window at
             * the new count decides at once (steering.py), no second run needed. */
            model_run(NULL, NULL);
            cc_build_sample(sample, room, 0, refs);
        }
        if (steer && !model_started)
            stats.model_started_s = look_s;
        model_started |= steer;
        /* Every region settled: the model's answer is known (each settled count, for ever),
         * and a run per window took a core for nothing (a steered lock convoy at 10 ms
         * windows: 202 runs, 0.31 s of CPU in 2.35 s).  A window with NUMA traffic counts
         * still goes to the model, which credits them window by window (model/runtime/numa). */
        if (steer && !sample->numa.measured && cc_steering_settled(sample, refs, result)) {
            __atomic_store_n(&stats.settled_windows, stats.settled_windows + 1, __ATOMIC_RELAXED);
            if (cc_settle_window(sample, result, refs, scheduled_s)) {
                wait_ms = short_ms;
                shorts_left = CC_SHORT_PER_WINDOW - 1;
            }
            continue;
        }
        cc_result_clear(result, sample->nregions);
        __atomic_store_n(&stats.model_runs, stats.model_runs + 1, __ATOMIC_RELAXED);
        if (model_run(sample, result) == 0 && steer) { /* a NUMA-only window steers nothing */
            /* Each window is one steering interval: its decision holds for the next. */
            for (int i = 0; i < sample->nregions; i++)
                if (cc_is_omp_region(&sample->regions[i])) {
                    if (result->regions[i].next_threads > 0)
                        __atomic_store_n(&refs[i]->steer_threads, result->regions[i].next_threads,
                                         __ATOMIC_RELAXED);
                    refs[i]->steer_settled = result->regions[i].steer_chosen;
                }
            if (cc_settle_window(sample, result, refs, scheduled_s)) {
                wait_ms = short_ms;
                shorts_left = CC_SHORT_PER_WINDOW - 1;
            }
        }
    }
    if (__atomic_load_n(&ending, __ATOMIC_ACQUIRE) && !answered) {
        end_for_good(sample);
        return NULL; /* the C library ends the thread: its task and stack go */
    }
    /* The exit report, written after this answer, may reach the original stderr only
     * through this thread's copy: the table must live until the process ends.  Parked for
     * good, it lets the copy go before the program's filter is in: a program that lets its
     * stderr go later must not find a pipe's reader kept from its end of file. */
    if (__atomic_load_n(&for_good, __ATOMIC_ACQUIRE))
        cc_channel_window_check(1);
    __atomic_store_n(&parked, 1, __ATOMIC_RELEASE);
    cc_futex(&parked, FUTEX_WAKE_PRIVATE, 1, -1);
    cc_channel_serve();
    for (;;) /* the process is ending: see cc_own_thread_create */
        pause();
    return NULL;
}

#define SAMPLER_STACK ((size_t)1 << 20)

/* The sampler's stack, mapped here (lazy.c's cc_map) rather than by the C library: after the
 * program's mlockall(MCL_FUTURE) a stack the C library maps comes locked, and its 1 MB stayed
 * counted against the program's RLIMIT_MEMLOCK: a buffer the program mapped later, which fit
 * without corecast, was refused (test_memlock.py).  cc_map's come unlocked.  Kept for good:
 * a forked child's sampler runs on its copy (the parent's sampler is not in the child); one
 * that gave its task back leaves it mapped (its 1 MB of address space, not locked).  Whether
 * ``attr`` now names it (its size as the C library's would be, with a guard page below). */
static int sampler_stack(pthread_attr_t *attr) {
    static char *block;
    static size_t bytes;
    static pid_t owner;
    size_t size = 0, page = 4096;
    int saved = errno, ok = 0;
    if (pthread_attr_getstacksize(attr, &size) != 0 || size < ((size_t)64 << 10))
        return 0;
    size = (size + page - 1) & ~(page - 1);
    char here; /* a child of the sampler's own fork runs on it: never reused there */
    int on_it = block && &here >= block && &here < block + bytes;
    if (block && (owner == getpid() || bytes != size + page || on_it)) /* this process's sampler had it */
        block = NULL;
    if (!block && (block = cc_map(size + page))) {
        bytes = size + page;
        mprotect(block, page, PROT_NONE);
    }
    if (block) {
        owner = getpid();
        ok = pthread_attr_setstack(attr, block + page, size) == 0;
    }
    errno = saved;
    return ok;
}

void cc_sampler_start(void) {
    if (sampler_running)
        return;
    sampler_cmd = CMD_NONE;
    final_state = CC_FINAL_PENDING;
    counters_open = 0;
    table_ready = 0;
    sigset_t all, old;
    sigfillset(&all); /* the sampler never takes one of the program's signals (model_run) */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* A stack of 1 MB at most (the model's interpreter runs in it, also in 64 kB): the
     * default, `ulimit -s` (8 MB), is address space a program under `ulimit -v` lost. */
    pthread_attr_t attr;
    size_t stack = 0;
    pthread_attr_init(&attr);
    if (pthread_attr_getstacksize(&attr, &stack) == 0 && stack > SAMPLER_STACK)
        pthread_attr_setstacksize(&attr, SAMPLER_STACK);
    int own_stack = !cc_cfg.no_sampler && sampler_stack(&attr);
    struct cc_thread *t = cc_self();
    t->guard++;
    int r = cc_cfg.no_sampler ? EAGAIN : cc_own_thread_create(&sampler, &attr, sampler_main, NULL);
    if (r != 0 && own_stack) { /* ours not taken (a static TLS larger than it): the C library's */
        pthread_attr_destroy(&attr);
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, stack > SAMPLER_STACK ? SAMPLER_STACK : stack);
        r = cc_own_thread_create(&sampler, &attr, sampler_main, NULL);
    }
    t->guard--;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r == 0) {
        pthread_detach(sampler);
        sampler_running = 1;
    }
    /* After the sampler started: inherited counters do not count it.  Without it nothing
     * would move them out of the program's table. */
    if (r == 0)
        cc_counters_open();
    __atomic_store_n(&counters_open, 1, __ATOMIC_RELEASE);
    cc_futex(&counters_open, FUTEX_WAKE_PRIVATE, 1, -1);
    /* The sampler's start (its own table, a copy of the report channel) runs best before
     * the program's team takes the cores, but the program waits for it 1 ms at most: on a
     * busy machine the new thread's first run came 3-10 ms later (a 2-core VM), all of it
     * the program's time.  A program that lets its stderr go meanwhile does so through a
     * wrapper (close, dup2, fclose, freopen: shims/process.c) that has a keeper take the
     * copy.  Where counters were opened (a PMU, the NUMA plan) it waits up to 100 ms: their
     * descriptors leave the program's table once the sampler's holds them. */
    int fds[64];
    if (r == 0 && wait_change(&table_ready, TABLE_PENDING, cc_counters_fds(fds, 64) ? 100 : 1) == TABLE_OWN)
        cc_counters_moved();
}

int cc_sampler_is(int tid) { return sampler_running && tid == sampler_tid; }

/* From the exit guard's signal handler, on the sampler thread: the exit prediction will not
 * come (async-signal-safe: a store and a wake). */
void cc_sampler_failed(void) {
    __atomic_store_n(&final_state, CC_FINAL_FAULTED, __ATOMIC_RELEASE);
    cc_futex(&final_state, FUTEX_WAKE_PRIVATE, 1, -1);
}

enum cc_final_outcome cc_sampler_final(struct cc_sample *s, struct cc_result *r, int timeout_ms) {
    if (!sampler_running && !__atomic_load_n(&ending, __ATOMIC_ACQUIRE))
        return CC_FINAL_NO_SAMPLER;
    final_sample = s;
    final_result = r;
    int cmd = CMD_NONE; /* a give-back's stop came first: it ends (one model run at a time) */
    if (!__atomic_compare_exchange_n(&sampler_cmd, &cmd, CMD_FINAL, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return wait_change(&ended, 0, timeout_ms) ? CC_FINAL_NO_SAMPLER : CC_FINAL_TIMEOUT;
    cc_futex(&sampler_cmd, FUTEX_WAKE_PRIVATE, 1, -1);
    double t0 = cc_mono_s();
    enum cc_final_outcome o = wait_change(&final_state, CC_FINAL_PENDING, timeout_ms);
    stats.exit_wait_s = cc_mono_s() - t0;
    return o == CC_FINAL_PENDING ? CC_FINAL_TIMEOUT : o;
}

void cc_sampler_stop(void) {
    __atomic_store_n(&sampler_cmd, CMD_STOP, __ATOMIC_SEQ_CST);
    cc_futex(&sampler_cmd, FUTEX_WAKE_PRIVATE, 1, -1);
}

/* Waits up to ``timeout_ms`` for the stopped sampler to be done with its window, in short
 * steps (as cc_sampler_give_back's); while ``leave_model``, not for a model run.  Whether it is. */
static int await_parked(int timeout_ms, int leave_model) {
    for (double end = cc_mono_s() + timeout_ms / 1000.0; !wait_change(&parked, 0, 1);)
        if ((leave_model && in_model) || cc_mono_s() > end)
            return 0;
    return 1;
}

/* For good; not awaited in a model run needing the caller's GIL (a seccomp filter's waited it out). */
void cc_sampler_park(int timeout_ms) {
    if (!sampler_running)
        return;
    __atomic_store_n(&for_good, 1, __ATOMIC_RELEASE);
    cc_sampler_stop();
    await_parked(timeout_ms, cc_holds_python());
}

/* A quiet exit's (lifecycle.c): not for any model run unless ``model_too`` (steering's take
 * a core the team needed, and nobody reads them now).  Whether nothing of the sampler's runs. */
int cc_sampler_quiesce(int timeout_ms, int model_too) {
    cc_sampler_stop();
    return !__atomic_load_n(&sampler_running, __ATOMIC_ACQUIRE) || await_parked(timeout_ms, !model_too);
}

/* The program's pthread_create found no task left (EAGAIN: RLIMIT_NPROC, a cgroup's
 * pids.max; lifecycle.c): the sampler ends for good, so that its task is the program's.
 * Waits up to ``timeout_ms`` for a window or a model run to end (none for a model run that
 * needs the Python interpreter the caller holds: it ends after it), until ``deadline``.
 * Returns whether the sampler has ended, its thread's id in ``*tid`` (the caller waits for
 * its task to go, then tries again). */
int cc_sampler_give_back(double deadline, int *tid) {
    if (!__atomic_load_n(&sampler_running, __ATOMIC_ACQUIRE) && !__atomic_load_n(&ending, __ATOMIC_ACQUIRE))
        return 0;
    if (!__atomic_load_n(&ended, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&ending, 1, __ATOMIC_SEQ_CST);
        int cmd = CMD_NONE; /* the exit's command, if first, is answered: the sampler stays */
        if (!__atomic_compare_exchange_n(&sampler_cmd, &cmd, CMD_STOP, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) &&
            cmd == CMD_FINAL)
            return 0;
        cc_futex(&sampler_cmd, FUTEX_WAKE_PRIVATE, 1, -1);
        int gil = cc_holds_python();
        while (!wait_change(&ended, 0, 1)) /* a short step: its model run may need our GIL */
            if ((gil && in_model) || cc_mono_s() > deadline)
                return 0;
    }
    *tid = sampler_tid;
    return 1;
}

void cc_sampler_after_fork(void) {
    sampler_running = 0;
    ending = ended = in_model = 0;
    sampler_cmd = CMD_NONE;
    final_state = CC_FINAL_PENDING;
    counters_open = 0;
    parked = for_good = 0;
    sampler_tid = 0;
    stats.windows = stats.model_runs = stats.settled_windows = 0;
    stats.model_started_s = -1;
    stats.exit_wait_s = 0;
    cc_counters_after_fork();
}
