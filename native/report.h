/* The exit report: the table on the original stderr (report.c) and the JSON Lines of
 * CORECAST_OUTPUT (jsonl.c), both rendered from a sample and the model's result. */
#ifndef CORECAST_REPORT_H
#define CORECAST_REPORT_H

#include "corecast.h"

void cc_report(const struct cc_sample *s, const struct cc_result *r);
void cc_report_serial(void); /* exit without parallel activity */
void cc_report_unread(void); /* a quiet exit with no output: its warnings alone */
/* config.c: a warning per CORECAST_* variable at start that is not a setting (a typo),
 * said with the report's warnings rather than at start-up among the program's lines. */
void cc_config_notes(void) CC_HIDDEN;

/* ---- shared by report.c and jsonl.c ------------------------------------------------ */
/* A sample entry worth a line: the region ran. */
static inline int cc_region_active(const struct cc_region_sample *g) { return g->calls > 0 && g->wall_s > 0; }

/* The program's own team size for a region, as steering's line and record say it: the
 * largest it asked for, or where none was tracked (a nested region's) the team it ran. */
static inline int cc_region_own(const struct cc_region_sample *g) {
    return g->requested > 0 ? g->requested : g->threads;
}

/* More than this share of the program's runnable time spent waiting for CPUs other load
 * held: the measurements (and predictions) are those of a busy machine. */
#define CC_BUSY_SHARE 0.10

static inline int cc_machine_busy(const struct cc_load *l) {
    return l->runnable_s > 0 && l->other_s > CC_BUSY_SHARE * l->runnable_s;
}

/* CORECAST_OUTPUT's lines: one per active region and the summary; for a serial run the
 * summary alone, saying so. */
void cc_write_json(const struct cc_sample *s, const struct cc_result *r) CC_HIDDEN;
void cc_write_json_serial(double elapsed_s, double children_cpu_s) CC_HIDDEN;

#endif
