/* Force-included (gcc -include) into programs that size their thread pool by the number of
 * online CPUs (sysconf(_SC_NPROCESSORS_ONLN), which ignores affinity and OMP_NUM_THREADS):
 * there it answers CORPUS_THREADS, which measure.py sets to the count being measured, so
 * such a program can be timed at 1..16 threads on a 16-core machine.  Other sysconf names
 * reach the real function: a function-like macro is not expanded again inside itself. */
#ifndef CORPUS16_NPROCS_H
#define CORPUS16_NPROCS_H
#include <stdlib.h>
#include <unistd.h>

static inline long corpus16_nprocs(long real) {
    const char *s = getenv("CORPUS_THREADS");
    long n = s ? strtol(s, NULL, 10) : 0;
    return n > 0 ? n : real;
}
#define sysconf(name) ((name) == _SC_NPROCESSORS_ONLN ? corpus16_nprocs(sysconf(name)) : sysconf(name))
#endif
