/* The sampler: a thread that closes a window every CORECAST_WINDOW_MS, builds the sample
 * from the counters (counters.c, sample.c) and hands it to the model; at exit it makes
 * the final prediction.  It runs with its guard raised, so its own locks (and Python's,
 * while it calls the model) never reach the counters. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "corecast.h"
#include "real.h"
#include "sample.h"
#include "settle.h"

static pthread_t sampler;
static volatile int sampler_running;
static volatile int sampler_tid;

/* ---- the thread ----------------------------------------------------------------- */
/* The sampler is the only thread that enters the model in a non-Python host, the exit
 * prediction included: the exiting thread hands it the final sample and waits a bounded
 * time (CORECAST_EXIT_TIMEOUT_MS), so a slow or stuck model costs the predictions, never
 * the program's exit, and the model is quiescent before the C library's destructors run. */
enum { CMD_NONE, CMD_FINAL, CMD_STOP };
static int sampler_cmd;    /* futex word: what the exiting thread asks */
static int final_state;    /* futex word: an enum cc_final_outcome */
static const struct cc_sample *final_sample;
static struct cc_result *final_result;

static long futex(int *word, int op, int val, const struct timespec *timeout) {
    return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

/* Sleeps until ``*word`` != ``seen`` or ``ms`` have passed; returns the word's value. */
static int wait_change(int *word, int seen, long ms) {
    double deadline = cc_mono_s() + ms / 1000.0;
    for (;;) {
        int now = __atomic_load_n(word, __ATOMIC_ACQUIRE);
        double left = deadline - cc_mono_s();
        if (now != seen || left <= 0)
            return now;
        struct timespec ts = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
        futex(word, FUTEX_WAIT_PRIVATE, seen, &ts);
    }
}

static void *sampler_main(void *arg) {
    (void)arg;
    struct cc_thread *t = cc_self();
    t->guard = 1;
    t->internal = 1;
    sampler_tid = (int)syscall(SYS_gettid);
    cc_counters_sampler_is(sampler_tid);
    static struct cc_sample sample;
    static struct cc_result result;
    /* Steering cannot try another count before its first decision, and that waits for
     * the first window and for the model to start (an interpreter, 20-25 ms of CPU here,
     * and it shares the cores with the program): the program runs at a count that may be
     * its worst until then.  So with steering the model starts now (Python hosts started
     * it already), inside a first window that is a short one (settle.h; runtime/steering's
     * guard still wants enough calls in it, and charges a step that can lose). */
    long wait_ms = cc_cfg.window_ms;
    long short_ms = cc_short_window_ms();
    if (cc_cfg.steer) {
        double start_s = cc_mono_s();
        if (!cc_host_is_python()) {
            static struct cc_sample empty;
            empty.abi = CC_ABI_VERSION;
            cc_model_predict(&empty, &result);
        }
        long spent = (long)(1000 * (cc_mono_s() - start_s));
        wait_ms = short_ms > spent ? short_ms - spent : 1;
    }
    int shorts_left = 0; /* a window that may end early: its short windows still to wait */
    for (;;) {
        int cmd = wait_change(&sampler_cmd, CMD_NONE, wait_ms);
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
            cc_model_predict(final_sample, final_result);
            cc_own_cpu_add(cc_thread_cpu_s() - t0);
            __atomic_store_n(&final_state, CC_FINAL_ANSWERED, __ATOMIC_RELEASE);
            futex(&final_state, FUTEX_WAKE_PRIVATE, 1, NULL);
            break;
        }
        if (cmd == CMD_STOP)
            break;
        static struct cc_region *refs[CC_MAX_REGIONS];
        cc_build_sample(&sample, 0, refs);
        memset(&result, 0, sizeof result);
        if (cc_model_predict(&sample, &result) == 0 && cc_cfg.steer) {
            /* Each window is one steering interval: its decision holds for the next. */
            for (int i = 0; i < sample.nregions; i++)
                if (cc_is_omp_region(&sample.regions[i]) && result.regions[i].next_threads > 0)
                    __atomic_store_n(&refs[i]->steer_threads, result.regions[i].next_threads,
                                     __ATOMIC_RELAXED);
            if (cc_settle_window(&sample, &result, refs)) {
                wait_ms = short_ms;
                shorts_left = CC_SHORT_PER_WINDOW - 1;
            }
        }
    }
    return NULL;
}

void cc_sampler_start(void) {
    if (sampler_running)
        return;
    sampler_cmd = CMD_NONE;
    final_state = CC_FINAL_PENDING;
    sigset_t all, old;
    sigfillset(&all);
    /* The sampler must never take one of the program's signals; the synchronous ones stay
     * deliverable so that a fault in the model reaches corecast's exit guard (lifecycle.c)
     * instead of being forced to its default action. */
    for (int i = 0; i < CC_NFATAL; i++)
        sigdelset(&all, cc_fatal_signals[i]);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    struct cc_thread *t = cc_self();
    t->guard++;
    int r = CC_LIBC(pthread_create)(&sampler, NULL, sampler_main, NULL);
    t->guard--;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r == 0) {
        pthread_detach(sampler);
        sampler_running = 1;
    }
    cc_counters_open();
}

int cc_sampler_is(int tid) { return sampler_running && tid == sampler_tid; }

/* From the exit guard's signal handler, on the sampler thread: the exit prediction will not
 * come (async-signal-safe: a store and a wake). */
void cc_sampler_failed(void) {
    __atomic_store_n(&final_state, CC_FINAL_FAULTED, __ATOMIC_RELEASE);
    futex(&final_state, FUTEX_WAKE_PRIVATE, 1, NULL);
}

enum cc_final_outcome cc_sampler_final(const struct cc_sample *s, struct cc_result *r, int timeout_ms) {
    if (!sampler_running)
        return CC_FINAL_NO_SAMPLER;
    final_sample = s;
    final_result = r;
    __atomic_store_n(&sampler_cmd, CMD_FINAL, __ATOMIC_SEQ_CST);
    futex(&sampler_cmd, FUTEX_WAKE_PRIVATE, 1, NULL);
    enum cc_final_outcome o = wait_change(&final_state, CC_FINAL_PENDING, timeout_ms);
    return o == CC_FINAL_PENDING ? CC_FINAL_TIMEOUT : o;
}

void cc_sampler_stop(void) {
    __atomic_store_n(&sampler_cmd, CMD_STOP, __ATOMIC_SEQ_CST);
    futex(&sampler_cmd, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void cc_sampler_after_fork(void) {
    sampler_running = 0;
    sampler_cmd = CMD_NONE;
    final_state = CC_FINAL_PENDING;
    sampler_tid = 0;
    cc_counters_after_fork();
}
