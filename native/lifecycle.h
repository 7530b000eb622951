/* The exit report (lifecycle.c), for the wrappers of the calls that end an image, and a
 * task given back to a program that ran out of them (pthread_create). */
#ifndef CORECAST_LIFECYCLE_H
#define CORECAST_LIFECYCLE_H

/* ``status`` >= 0: the program's exit status, kept whatever corecast's report does; < 0:
 * unknown (a Python host's atexit, exec, quick_exit).  ``flush``: on the way out of exit()
 * or main, whose streams the C library would flush: they are flushed before our first
 * line (not for _exit, which discards them).  Runs once per process image. */
void cc_exit_report(int status, int flush) __attribute__((visibility("hidden")));
void cc_final(void); /* cc_exit_report(-1, 0) */
/* The program is about to close or replace its descriptors [lo, hi] (channel.c). */
/* An exec of this image with ``envp``: its report, unless nothing ran in parallel and the
 * next image, the same pid, is preloaded too (then that one speaks for the pid). */
void cc_exec_report(char *const envp[]) __attribute__((visibility("hidden")));
/* The program is about to restrict its system calls (seccomp): corecast stops for good. */
void cc_before_restrict(void) __attribute__((visibility("hidden")));
/* The program's pthread_create failed with EAGAIN, or a call that needs it to be its only
 * thread with EINVAL: whether corecast gave a thread back (the sampler's, then the keeper's),
 * so that a second try may succeed.  ``why`` starts the warning that says so. */
int cc_give_back_thread(const char *why) __attribute__((visibility("hidden")));

#endif
