/* Boundaries of a region's calls (boundary.c): snapshots of its settle counts taken at a
 * call's end with no call of it in flight, for settle.c's rate per call over a few long
 * calls. */
#ifndef CORECAST_BOUNDARY_H
#define CORECAST_BOUNDARY_H

#include "corecast.h"

/* omp_call.c, at the end of a call of ``r`` that left none in flight, while asked. */
void cc_boundary_take(struct cc_region *r) CC_HIDDEN;
/* ``q``'s boundaries start afresh (its team or counts changed); ``want``: whether its
 * call ends take them from now on. */
void cc_boundary_restart(struct cc_region *q, int want) CC_HIDDEN;
/* ``q``'s boundaries since they last started afresh: 0: none; 1: the first in ``*a``; 2: and
 * the latest in ``*b``. */
int cc_boundaries_of(const struct cc_region *q, struct cc_sync_snap *a, struct cc_sync_snap *b) CC_HIDDEN;
/* Every window (``elapsed_s``: the sample's): where ``may``, asks the call ends of each
 * region that makes fewer than ``few`` calls a CORECAST_WINDOW_MS window for boundaries
 * (else none).  1: such a region's first call has not ended yet. */
int cc_boundaries_ask(int may, double elapsed_s, double few) CC_HIDDEN;

#endif
