/* A small read-only view of the pthread shim's counters for code running inside the
 * instrumented process (corecast.opencl reads it through ctypes: ctypes.CDLL(None) finds
 * preloaded symbols).  Nothing here is on an interposed path; readers copy the
 * thread-owned counters with relaxed loads, as the sampler and the report do.
 *
 * Categories are those of CC_STALL_NAMES, in that order; callers match them by name. */
#define _GNU_SOURCE
#include <string.h>

#include "corecast.h"

/* Name of stall category ``i`` (NULL past the last one). */
const char *corecast_stall_name(int i) { return i >= 0 && i < CC_NSTALL ? CC_STALL_NAMES[i] : NULL; }

/* Per program thread (corecast's own threads left out): its tid, and per category its wait
 * seconds, acquisitions and contended acquisitions, rows of ``ncat`` values each
 * (categories past CC_NSTALL are zero).  Fills at most ``max`` rows; any of the arrays may
 * be NULL.  Returns the number of program threads (more than ``max`` when they did not
 * fit), or -1 when corecast is disabled in this process. */
int corecast_thread_waits(int *tids, double *waits, unsigned long long *acquisitions,
                          unsigned long long *contended, int max, int ncat) {
    if (cc_cfg.disabled || !cc_ready)
        return -1;
    int k = cc_thread_count(), rows = 0;
    for (int i = 0; i < k; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        if (!t || __atomic_load_n(&t->internal, __ATOMIC_RELAXED))
            continue;
        if (rows < max) {
            if (tids)
                tids[rows] = __atomic_load_n(&t->tid, __ATOMIC_RELAXED);
            for (int c = 0; c < ncat; c++) {
                int in = c < CC_NSTALL;
                if (waits)
                    waits[rows * ncat + c] =
                        in ? cc_ticks_to_s(__atomic_load_n(&t->n.wait[c], __ATOMIC_RELAXED)) : 0.0;
                if (acquisitions)
                    acquisitions[rows * ncat + c] = in ? __atomic_load_n(&t->n.acq[c], __ATOMIC_RELAXED) : 0;
                if (contended)
                    contended[rows * ncat + c] =
                        in ? __atomic_load_n(&t->n.contended[c], __ATOMIC_RELAXED) : 0;
            }
        }
        rows++;
    }
    return rows;
}

/* Wait seconds per category summed over the program's threads (``out`` has ``n`` slots).
 * Returns the number of categories filled, or -1 when corecast is disabled. */
int corecast_stall_totals(double *out, int n) {
    if (cc_cfg.disabled || !cc_ready)
        return -1;
    int k = cc_thread_count();
    uint64_t sum[CC_NSTALL] = {0};
    for (int i = 0; i < k; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        if (!t || __atomic_load_n(&t->internal, __ATOMIC_RELAXED))
            continue;
        for (int c = 0; c < CC_NSTALL; c++)
            sum[c] += __atomic_load_n(&t->n.wait[c], __ATOMIC_RELAXED);
    }
    int m = n < CC_NSTALL ? n : CC_NSTALL;
    for (int c = 0; c < m; c++)
        out[c] = cc_ticks_to_s(sum[c]);
    return m;
}

/* The calling thread is corecast's own (a measuring thread in the program's language):
 * its waits stay out of the program's figures. */
void corecast_mark_internal(void) {
    if (cc_cfg.disabled || !cc_ready)
        return;
    cc_self_internal();
}

/* The report channel: corecast's Python reports (the OpenCL table) write here, to the
 * program's original stderr, so a program that reused fd 2 for its data never gets them in
 * it.  Returns 0, or -1 when the channel is gone or corecast is disabled. */
int corecast_report_write(const char *p, size_t n) {
    if (cc_cfg.disabled || !cc_ready || !cc_report_channel_open())
        return -1;
    cc_report_write(p, n);
    return 0;
}
