/* Steering's start in C, from what the sampler counts (steer_start.c): whether the model
 * may start at this window end, and a convoy's first step before its first answer. */
#ifndef CORECAST_STEER_START_H
#define CORECAST_STEER_START_H

#include "corecast.h"

#define CC_FIRST_LOOK_MS 10 /* steering's first window: long enough for a convoy's calls */

/* Whether steering can act on a model run at this window end (a whole window has passed,
 * or a convoy shows). */
int cc_steering_may_act(const struct cc_sample *s);
/* Whether any region can pay for the model (the stall bound's room, or its locks). */
int cc_steering_may_pay(const struct cc_sample *s);
/* Whether a team of 2 or more has run the 2 calls a convoy's look needs. */
int cc_team_has_run(const struct cc_sample *s);
/* Before the first whole window: milliseconds to the next look where a convoy or a
 * lock-bound region may yet start the model; 0: none. */
long cc_next_lock_look_ms(const struct cc_sample *s);
/* Steps each convoy of ``s`` (``refs[i]`` the region behind ``s->regions[i]``) to the
 * count its unstalled share of threads would keep busy; 1 if any was stepped. */
int cc_convoy_first_steps(struct cc_sample *s, struct cc_region *const *refs, double scheduled_s);

/* Every steerable OpenMP region of ``s`` has settled (its count in ``refs[i]->steer_settled``,
 * from the model's last answer): ``kept``'s steer_chosen holds the answer settle.c reads,
 * and the window needs no model run.  0: the window goes to the model. */
int cc_steering_settled(const struct cc_sample *s, struct cc_region *const *refs, struct cc_result *kept);
#endif
