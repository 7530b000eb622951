/* The exit's file work apart from the program's descriptor table (apart.c). */
#ifndef CC_APART_H
#define CC_APART_H

/* apart.c: ``fn(arg)`` run by a task that is the calling thread but for its descriptor
 * table (a copy of the program's), so that what it opens takes none of the program's
 * numbers; returns that task's CPU time (0: it ran on the calling thread, whose clock has
 * it).  cc_apart_tid: the task's tid while it runs (0: none). */
double cc_run_apart(void (*fn)(void *), void *arg);
/* The same where the task can start (1, its CPU time in *cpu_s); 0: ``fn`` was not run. */
int cc_try_apart(void (*fn)(void *), void *arg, double *cpu_s);
int cc_apart_tid(void);
/* Waits, until ``deadline`` (cc_mono_s), for an ended thread or task of corecast's to be
 * counted off the user's tasks (RLIMIT_NPROC); returns 1. */
int cc_counted_off(int tid, double deadline);

#endif
