/* The exit guard (guard.c), for the exit report (lifecycle.c). */
#ifndef CORECAST_GUARD_H
#define CORECAST_GUARD_H

#include "corecast.h"

/* On the exiting thread, with the program's status: until restored, a fatal signal raised
 * on corecast's threads (this one, its task apart, the sampler) ends the process with it. */
void cc_guard_install(int status) CC_HIDDEN;
void cc_guard_restore(void) CC_HIDDEN; /* the program's own handling back */
/* The report is over but the sampler is still in the model: it alone stays guarded. */
void cc_guard_report_over(void) CC_HIDDEN;

#endif
