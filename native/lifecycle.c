/* The process's life as corecast sees it: start-up (the constructor), the first parallel
 * activity, fork, and the exit report with its guard.  The exits and execs that end an
 * image come here from their wrappers (shims/process.c). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "guard.h"
#include "lazy.h"
#include "lifecycle.h"
#include "real.h"
#include "report.h"
#include "sample.h"
#include "text.h"

/* ---- start and fork ---------------------------------------------------------------- */
static pid_t cc_pid;
static int cc_final_done;

static void register_exit(void);

static void warm_up(void) {
    double t0 = cc_thread_cpu_s();
    cc_model_warmup();
    cc_own_cpu_add(cc_thread_cpu_s() - t0); /* on the program's thread, but corecast's */
}

/* The first parallel activity (core.c's hook): measuring starts.  A Python host's model
 * starts on the program's thread before the sampler exists: Python starts a thread
 * holding the GIL, and a start the sampler had begun would need that GIL (bridge.c's
 * predict then gives up rather than wait; the sampler's later start may miss a short run). */
static void start_measuring(void) {
    register_exit();
    cc_sampler_baseline();
    int python = cc_host_is_python();
    if (python && !cc_cfg.sampler_first)
        warm_up();
    cc_sampler_start();
    if (python && cc_cfg.sampler_first) { /* tests: the sampler's start first */
        cc_model_test_wait_start();
        warm_up();
    }
}

static void reset_after_fork(void) {
    /* The child keeps only the forking thread: it starts afresh and reports alone. */
    cc_ompt_after_fork();
    cc_core_after_fork();
    cc_regions_after_fork();
    cc_channel_after_fork();
    cc_sample_after_fork();
    cc_views_after_fork();
    cc_final_done = 0;
    cc_pid = getpid();
    cc_sampler_after_fork();
    cc_model_after_fork();
}

/* ---- the exit report ------------------------------------------------------------ */
__thread int cc_loader_depth __attribute__((tls_model("initial-exec"))); /* shims/process.c's */

/* What the report opens runs apart (apart.c): its last sample and its records, with the
 * model's answer and the copy written, in one mapping made at the exit and sized to the
 * regions (lazy.h, sample.h). */
struct final_work {
    struct cc_sample *sample, *written;
    struct cc_result *result, *answer;
    int room;
    size_t bytes;
};
static int final_records(struct final_work *w) {
    w->room = cc_sample_room();
    size_t sb = CC_RECORD_BYTES(struct cc_sample, w->room), rb = CC_RECORD_BYTES(struct cc_result, w->room);
    w->bytes = 2 * sb + 2 * rb;
    char *m = cc_map(w->bytes); /* kept: a model that did not answer may still read it */
    if (!m)
        return 0;
    w->sample = (struct cc_sample *)m;
    w->written = (struct cc_sample *)(m + sb);
    w->result = (struct cc_result *)(m + 2 * sb);
    w->answer = (struct cc_result *)(m + 2 * sb + rb);
    return 1;
}
static void build_final(void *p) {
    struct final_work *w = p;
    cc_build_sample(w->sample, w->room, 1, NULL);
}
static void write_report(void *p) {
    struct final_work *w = p;
    /* A copy: a model that did not answer in time may still be reading the sample. */
    memcpy(w->written, w->sample, CC_RECORD_BYTES(struct cc_sample, w->room));
    cc_sample_fit_waits(w->written);
    locale_t was = uselocale(cc_c_locale()); /* "0.5" in the JSON whatever the program's locale */
    if (cc_cfg.report_segv) /* tests: the guard's other half, a fault in the C report itself */
        syscall(SYS_tgkill, getpid(), (int)syscall(SYS_gettid), SIGSEGV);
    cc_report(w->written, w->result);
    uselocale(was);
}
/* Without a sampler (a forked child's that could not start, one that gave its task back)
 * the model starts here: its interpreter's imports open files, apart as the rest. */
static void predict_final(void *p) {
    struct final_work *w = p;
    cc_model_predict(w->sample, w->result);
}
static void write_serial(void *p) {
    (void)p;
    locale_t was = uselocale(cc_c_locale());
    cc_report_serial();
    uselocale(was);
}

/* ``status`` >= 0: the program's exit status (main's return, exit, _exit, on_exit), which
 * the guard above keeps; < 0: unknown (a Python host's atexit, exec, quick_exit). */
void cc_exit_report(int status, int flush) {
    if (!cc_ready || cc_cfg.disabled)
        return;
    /* A vfork child shares our memory: it must neither report nor mark us done. */
    if (getpid() != cc_pid)
        return;
    if (__atomic_exchange_n(&cc_final_done, 1, __ATOMIC_ACQ_REL))
        return;
    struct cc_thread *t = cc_self();
    t->guard++;
    if (!cc_active) {
        cc_sampler_stop();
        /* Said by the program `corecast run` started, not by every serial child of a
         * script or make (nor under a bare LD_PRELOAD, where children are the norm). */
        if (cc_cfg.launch_pid == cc_pid) {
            if (flush)
                cc_flush_program_streams();
            cc_own_cpu_add(cc_run_apart(write_serial, NULL));
        }
        t->guard--;
        return;
    }
    if (status >= 0)
        cc_guard_install(status);
    /* Nobody reads the exit's sample or prediction (quiet, no output: bridge.c runs no model
     * for it), so a sampler still in a window's model run (steering's interpreter start, tens
     * of ms on a core the team needed: NPB bt.W steered at 16 threads ended 10% later when
     * the model started near its end, benchmarks/steer16) is left there under the guard, as
     * a model that does not answer is, instead of awaited; nor is the sample built (every
     * thread's /proc files, the regions' names).  An unknown status has no guard. */
    int quiet = cc_cfg.quiet && !cc_cfg.output[0] && status >= 0 && !cc_holds_python();
    static struct final_work work;
    struct final_work *w = !quiet && final_records(&work) ? &work : NULL;
    if (!w) { /* or its records' memory refused (lazy.h): a line says so, nothing else is written */
        /* Steering's model (the only one a quiet run starts) orders its libraries as the
         * report's end does below, once the sampler is done: a window ends within ms. */
        int awaits = cc_cfg.quiet_exit_awaits; /* tests: its model run too, as a report's exit does */
        int done = cc_cfg.steer ? cc_sampler_quiesce(awaits ? cc_cfg.exit_timeout_ms : 20, awaits)
                                : (cc_sampler_stop(), 0);
        if (flush)
            cc_flush_program_streams();
        if (!quiet)
            cc_warn("no predictions: corecast's exit records (%zu kB) were refused memory "
                    "(the program's locked-memory limit?)", work.bytes >> 10);
        cc_report_unread();
        if (done) {
            if (cc_loader_depth == 0) /* in a dl_iterate_phdr callback: see below */
                cc_model_finalize_first();
            cc_guard_restore();
        } else {
            cc_guard_report_over(); /* only the sampler, perhaps still in the model, stays guarded */
        }
        t->guard--;
        return;
    }
    /* In a dl_iterate_phdr callback the loader's write lock is this thread's for good: the
     * model's start (dlopen) and regions' naming would wait for it, and the exit for them. */
    int in_loader = cc_loader_depth > 0;
    if (in_loader) {
        cc_names_without_loader();
        cc_sampler_stop();
    }
    double cpu0 = cc_thread_cpu_s(); /* from here to the report, this thread works for corecast */
    struct cc_sample *const sample = w->sample;
    struct cc_result *const result = w->result, *const answer = w->answer;
    double apart_s = cc_run_apart(build_final, w);
    cc_result_clear(result, sample->nregions);
    cc_result_clear(answer, sample->nregions);
    enum cc_final_outcome o = in_loader ? CC_FINAL_IN_LOADER
                              : cc_holds_python() ? CC_FINAL_HELD
                                                  : cc_sampler_final(sample, answer, cc_cfg.exit_timeout_ms);
    double model_s = 0;
    if (o == CC_FINAL_NO_SAMPLER) {
        /* No task for it either (RLIMIT_NPROC, ulimit -v): the interpreter's imports would
         * take the program's descriptor numbers while its other threads run. */
        if (!cc_try_apart(predict_final, w, &model_s)) {
            result->status = -1;
            snprintf(result->note, sizeof result->note, "the model was not run: corecast had no thread of its own "
                                                        "for it (the program's task or memory limit)");
        }
    } else if (o == CC_FINAL_ANSWERED)
        cc_result_copy(result, answer, sample->nregions);
    else {
        result->status = -1;
        if (o == CC_FINAL_FAULTED)
            snprintf(result->note, sizeof result->note, "the model failed with a fatal signal");
        else if (o == CC_FINAL_IN_LOADER)
            snprintf(result->note, sizeof result->note, "the program ended inside the loader (a dl_iterate_phdr "
                                                        "callback): the model was not run");
        else if (o == CC_FINAL_HELD)
            snprintf(result->note, sizeof result->note, "the program left Python without its atexit "
                                                        "(os._exit or os.exec*): the model was not run");
        else
            snprintf(result->note, sizeof result->note, "the model did not answer within %d ms (CORECAST_EXIT_TIMEOUT_MS)",
                     cc_cfg.exit_timeout_ms);
    }
    cc_own_cpu_add(cc_thread_cpu_s() - cpu0 + apart_s + model_s);
    if (flush)
        cc_flush_program_streams();
    cc_own_cpu_add(cc_run_apart(write_report, w));
    if (o == CC_FINAL_ANSWERED || o == CC_FINAL_NO_SAMPLER) {
        cc_model_finalize_first(); /* the model is done: its libraries go first (bridge.c) */
        cc_guard_restore(); /* nothing of ours runs any more */
    } else {
        cc_guard_report_over(); /* only the sampler, still in the model, stays guarded */
    }
    t->guard--;
}

void cc_final(void) { cc_exit_report(-1, 0); }

/* A wrapper script that execs its program (`#!/bin/sh` ... `exec prog`) ran nothing in
 * parallel: a "serial run" line and record for its pid, before the program's own report
 * for the same pid, would be noise.  Without a preloaded next image it is all there is. */
void cc_exec_report(char *const envp[]) {
    if (!cc_active && cc_preloaded_in(envp))
        return;
    cc_final();
}

/* A seccomp filter may end the process at any call it forbids, and corecast's are not the
 * program's (its /proc reads, perf_event_open, the descriptor table's unshare, the model's
 * imports): a filter that allowed all the program needed killed it with SIGSYS at the
 * sampler's next window or at the exit report.  So nothing of corecast's runs once the
 * program restricts itself: a line says so, the sampler stops (awaited as the exit awaits
 * its answer: a model run is not cut short) and the exit reports nothing. */
void cc_before_restrict(void) {
    if (!cc_ready || cc_cfg.disabled || getpid() != cc_pid) /* a vfork child shares our memory */
        return;
    cc_warn("the program restricts its system calls (seccomp) from here: corecast stops measuring "
            "and reports nothing for this process");
    cc_sampler_park(cc_cfg.exit_timeout_ms);
    cc_cfg.disabled = 1; /* every wrapper passes straight through, the exit says nothing */
    cc_map_keep_locked(); /* a filter that allows mmap need not allow munlock */
    __atomic_store_n(&cc_active, 0, __ATOMIC_SEQ_CST);
}

/* The program's pthread_create (libgomp's too) failed for want of a task (EAGAIN), perhaps
 * because the sampler holds the last one the user may have (RLIMIT_NPROC at exactly the
 * program's threads), or its unshare or setns failed for a thread of ours (process.c): the
 * sampler ends and the caller tries once more, as without corecast it would have succeeded.
 * ``why`` starts the warning.  The windows are over; the exit reports what was sampled and
 * predicts apart.  Not once the exit report runs: the sampler answers it. */
int cc_give_back_thread(const char *why) {
    if (!cc_ready || cc_cfg.disabled || getpid() != cc_pid || __atomic_load_n(&cc_final_done, __ATOMIC_ACQUIRE))
        return 0;
    static int given; /* the sampler's: a later call goes on to the keeper's */
    double deadline = cc_mono_s() + cc_cfg.exit_timeout_ms / 1000.0;
    int tid = 0;
    if (!__atomic_load_n(&given, __ATOMIC_ACQUIRE) && cc_sampler_give_back(deadline, &tid)) {
        if (!__atomic_exchange_n(&given, 1, __ATOMIC_ACQ_REL))
            cc_warn("%s: corecast's sampler gave its thread back; no windows from here, the exit reports what "
                    "was sampled", why);
        return cc_counted_off(tid, deadline);
    }
    /* The keeper's next (a program that let its stderr go early; it says so itself). */
    return cc_channel_give_back(deadline, &tid, why) && cc_counted_off(tid, deadline);
}

static void final_at_exit(void) { cc_final(); }

static void final_on_exit(int status, void *arg) {
    (void)arg;
    cc_exit_report(status, 1);
}

/* The fallback for exits that come neither from main's return nor through exit() (see
 * below).  Registered at the first parallel activity, after libc registered the dynamic
 * linker's destructor pass: a constructor-time atexit ran inside that pass, after numpy's
 * libraries were torn down, while the sampler could still be in the model. */
static void register_exit(void) { on_exit(final_on_exit, NULL); }

__attribute__((constructor)) static void cc_init(void) {
    cc_clock_start();
    cc_pid = getpid();
    cc_channel_init(); /* before anything can warn */
    cc_config_read();
    if (cc_cfg.disabled)
        return;
    cc_sampler_mark_start();
    cc_slots_init();
    cc_model_set_exit_report(cc_final);
    at_quick_exit(final_at_exit);
    pthread_atfork(NULL, NULL, reset_after_fork);
    cc_sample_test_hooks();
    cc_views_test_hooks();
    cc_model_test_hooks();
    cc_ready = 1;
    cc_on_activity(start_measuring);
}
