/* The sample (sample.c): the counters as the model and the report read them. */
#ifndef CORECAST_SAMPLE_H
#define CORECAST_SAMPLE_H

#include <string.h>

#include "corecast.h"

/* Fills ``s`` from the live counters (``final``: the exit's sample); ``refs`` (may be
 * NULL) receives the region behind each sample entry. */
void cc_build_sample(struct cc_sample *s, int final, struct cc_region **refs);

/* An OpenMP region's entry of a sample (not the process's, which comes last). */
static inline int cc_is_omp_region(const struct cc_region_sample *g) {
    return g->runtime == CC_RUNTIME_OPENMP && strcmp(g->name, "process") != 0;
}

#endif
