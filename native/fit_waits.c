/* The final record's fit of the sections' credited waits and holds into the threads' time
 * (cc_sample_fit_waits, sample.h); a file of its own, needing only the sample's struct, so
 * that tests/runtime/test_fit_waits.py runs it on samples it builds.
 *
 * The waits and holds of the sections settle.c stops counting (critical, atomic, OpenMP
 * locks), scaled up from timed samples and credited after the hand-back at a window's
 * rate per call, can add up to more than the threads had: a lock convoy whose sections
 * ran slower while counted recorded 0.52 thread-s of omp_lock waits in 0.44 s of its
 * threads' time.  They are shrunk to fit ``span`` (a region's busy time; a process's
 * threads x wall) beside the waits measured exactly, the holds first (someone's work),
 * then the waits beside them, as the model's wait_scale shrinks them, so the final record
 * and the table say no more than the threads had.  Only what is written: the model reads
 * the cumulative counts as they are and takes their differences (history.py). */
#include "sample.h"

int cc_sampled_category(int c) { return c == CC_STALL_CRITICAL || c == CC_STALL_ATOMIC || c == CC_STALL_OMPLOCK; }

static void shrink_settled(double *v, double total, double room) {
    for (int c = 0; c < CC_NSTALL; c++)
        if (cc_sampled_category(c))
            v[c] *= room > 0 ? room / total : 0.0;
}

static void fit_settled_waits(struct cc_region_sample *o, double span) {
    double waits = 0, holds = 0, exact = 0;
    for (int c = 0; c < CC_NSTALL; c++) {
        if (cc_sampled_category(c))
            waits += o->stall_s[c], holds += o->hold_s[c];
        else if (c != CC_STALL_IMBALANCE && c != CC_STALL_RUNQUEUE) /* those lie outside the spans */
            exact += o->stall_s[c] + o->hold_s[c];
    }
    if (holds > 0 && holds > span - exact) {
        o->serial_s -= holds;
        shrink_settled(o->hold_s, holds, span - exact);
        holds = span > exact ? span - exact : 0.0;
        o->serial_s += holds;
    }
    if (waits > 0 && waits > span - exact - holds)
        shrink_settled(o->stall_s, waits, span - exact - holds);
}

void cc_sample_fit_waits(struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++) { /* the process last */
        struct cc_region_sample *g = &s->regions[i];
        fit_settled_waits(g, i == s->nregions - 1 ? g->threads * g->wall_s : g->busy_s);
    }
}
