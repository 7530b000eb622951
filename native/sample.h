/* The sample (sample.c): the counters as the model and the report read them. */
#ifndef CORECAST_SAMPLE_H
#define CORECAST_SAMPLE_H

#include <stddef.h>
#include <string.h>

#include "corecast.h"

/* Records are mapped to the size of their regions (lazy.h, model_abi.h): a sample's and a
 * result's bytes with room for ``n`` regions, whole cache lines. */
#define CC_RECORD_BYTES(type, n) ((offsetof(type, regions) + (size_t)(n) * sizeof(((type *)0)->regions[0]) + 63) & ~(size_t)63)
/* The room a sample built now needs: the regions in the table, the process, and a few
 * claimed before it is built (a region past the room waits for the next sample). */
int cc_sample_room(void) CC_HIDDEN;
/* Fills ``s`` (``room`` regions' bytes) from the live counters (``final``: the exit's
 * sample); ``refs`` (may be NULL) receives the region behind each sample entry. */
void cc_build_sample(struct cc_sample *s, int room, int final, struct cc_region **refs);
/* The sampler's records with that room, kept from window to window (a forked child's
 * sampler's too); the room, 0 if their memory was refused (lazy.h). */
int cc_sampler_records(struct cc_sample **s, struct cc_result **r) CC_HIDDEN;
/* The sections' credited waits and holds fitted into the threads' time (fit_waits.c), on
 * the final sample as it is written, after the model read it. */
void cc_sample_fit_waits(struct cc_sample *s) CC_HIDDEN;
/* Whether category ``c``'s waits are scaled up from timed samples (critical, atomic, OpenMP locks). */
int cc_sampled_category(int c) CC_HIDDEN;
/* Of the exit's sample (else 0): region ``g``'s calls whose sections were not counted (or
 * in part) and are not credited: it first ran uncounted and had no rate when the program
 * ended (settle.c); its counts leave them out. */
unsigned long long cc_sample_uncredited_calls(const struct cc_sample *s, const struct cc_region_sample *g);
/* Names the regions whose code lies in [lo, hi), an object dlclose may unmap. */
void cc_name_regions_in(const char *lo, const char *hi);
void cc_sample_after_fork(void);  /* the naming lock: no namer in a forked child */
void cc_sample_test_hooks(void);  /* CORECAST_TEST_FAULT=naming_at_fork's */

/* An OpenMP region's entry of a sample (not the process's, which comes last). */
static inline int cc_is_omp_region(const struct cc_region_sample *g) {
    return g->runtime == CC_RUNTIME_OPENMP && strcmp(g->name, "process") != 0;
}

/* Clears (copies) a result's header and its first ``nregions`` regions, all that the
 * model writes and the report reads: the whole struct is 0.8 MB, and clearing it twice
 * and copying it once at exit was 2.7 million instructions and some 600 first-touch page
 * faults on every run, quiet ones included (benchmarks/hotpath.py --callgrind). */
static inline void cc_result_clear(struct cc_result *r, int nregions) {
    memset(r, 0, offsetof(struct cc_result, regions) + (size_t)nregions * sizeof r->regions[0]);
}

static inline void cc_result_copy(struct cc_result *dst, const struct cc_result *src, int nregions) {
    memcpy(dst, src, offsetof(struct cc_result, regions) + (size_t)nregions * sizeof src->regions[0]);
}

#endif
