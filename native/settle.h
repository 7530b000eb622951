/* Once steering has settled the regions that run, or counting them costs the program too
 * much (sampler.c), corecast stops counting the sections that cost a program most to count
 * (settle.c): their wrappers are handed back (got.c) and their later counts are credited
 * from each region's calls. */
#ifndef CORECAST_SETTLE_H
#define CORECAST_SETTLE_H

#include "corecast.h"

/* The sampler, after each window's model run with steering (or, with every region at its
 * own count, when no model runs): ``refs[i]`` is the region
 * behind ``s->regions[i]``.  1: the next window may end early (see the next function):
 * steering moved a region, or every region settled and the hand-back waits for a window
 * at the settled counts. */
int cc_settle_window(const struct cc_sample *s, const struct cc_result *r, struct cc_region *const *refs,
                     double scheduled_s);
/* The sampler stepped region ``r`` before the model's first answer (a convoy's first step):
 * its window at the new count starts now, at sampler time ``scheduled_s``. */
void cc_settle_stepped(struct cc_region *r, double scheduled_s);
/* Sampler time (the sum of the waits it asked for, ``scheduled_s`` above: no load stretches
 * it) from the last window in which steering moved a region to the hand-back; -1: none. */
double cc_settle_stop_scheduled_s(void);
/* shims/gomp.c: hands its section starts (``ends`` 0) or ends (1) back to libgomp
 * (``back`` 1) or takes them again (0); the slots rewritten. */
int cc_gomp_hand_back(int ends, int back);
/* shims/ompt.c: the same for libomp's mutex callbacks (swapped for ones that return at
 * once); cc_gomp_hand_back calls it.  Returns the callbacks swapped (0: no OMPT tool). */
int cc_ompt_hand_back(int ends, int back);
/* Whether every watched region made calls enough in this window to end it now. */
int cc_settle_window_measured(void);
/* Every window (``elapsed_s``: the sample's): while a hand-back may come, asks the ends of
 * calls of each region making fewer than RATE_CALLS calls a window for boundaries (a rate
 * from a few calls).  1: such a region's first call has not ended yet (look again soon: its
 * end may give the rate). */
int cc_settle_look(double elapsed_s);
/* Without steering, section counting stops where it costs more than this share (percent)
 * of the program's CPU time (cc_settle_counting_costs; the report names it). */
#define CC_COUNT_SHARE_PCT 1
#define CC_COUNT_SHARE_TEXT "1%" /* the same, for the report */
/* A short window: an eighth of CORECAST_WINDOW_MS, at least 10 ms. */
#define CC_SHORT_PER_WINDOW 8
static inline long cc_short_window_ms(void) {
    return cc_cfg.window_ms / CC_SHORT_PER_WINDOW > 10 ? cc_cfg.window_ms / CC_SHORT_PER_WINDOW : 10;
}
/* No region can pay for steering's model, or nothing steers: cc_settle_window with every
 * region settled at its own count, but one first run after the hand-back. */
int cc_settle_own_counts(const struct cc_sample *s, struct cc_region *const *refs, double scheduled_s);
/* Without steering: counting the sections so far cost more than CC_COUNT_SHARE_PCT % of
 * the program's CPU time (then cc_settle_own_counts every window). */
int cc_settle_counting_costs(const struct cc_sample *s);
/* Elapsed seconds at which counting stopped; 0: it is counting. */
double cc_settle_stopped_s(void);
/* cc_settle_stopped_s where counting stopped by ``elapsed_s`` (a sample's); else 0. */
double cc_settle_stopped_by_s(double elapsed_s);
/* Seconds of the run so far (``elapsed_s``) in which sections were not counted. */
double cc_settle_uncounted_s(double elapsed_s);
/* Adds to a region's sample the counts of its calls since counting stopped, at the rate
 * per call between settling and stopping, less what was still counted of them (calls in
 * flight at the rewrite); ``extra`` (per settle category: acquisitions,
 * contended, wait and hold seconds) receives what was added, for the process's sample. */
struct cc_settle_extra {
    double acq[CC_NSETTLE], contended[CC_NSETTLE], wait_s[CC_NSETTLE], hold_s[CC_NSETTLE];
};
/* At the ``final`` sample a region's calls are credited as far as a rate allows: the calls
 * that first ran uncounted with no rate to credit them at (none of the region's calls ended
 * while counted, or too few for the rate's accuracy) are returned, else 0. */
unsigned long long cc_settle_extend(struct cc_region_sample *o, const struct cc_region *r,
                                    struct cc_settle_extra *extra, int final);
/* The same sums, added to the process's sample. */
void cc_settle_extend_process(struct cc_region_sample *o, const struct cc_settle_extra *extra);

#endif
