/* The sampler's /proc figures parsed by hand, with the conversions sscanf makes (strtol,
 * strtoull: their whitespace, signs, and saturation on overflow): sscanf and snprintf were
 * 64k of a sample build's 107k instructions at 16 threads.  tests/runtime/test_procparse.py
 * fails where one answers otherwise than sscanf. */
#ifndef CC_PROCPARSE_H
#define CC_PROCPARSE_H
#include <stdlib.h>
#include <string.h>

/* sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu", cpu, &v[0], ..., &v[6]) == 8:
 * /proc/stat's CPU line.  The total line ("cpu  user nice ...") reads its first figure as
 * the CPU's number, as sscanf did. */
static inline int cc_parse_cpu_line(const char *line, int *cpu, unsigned long long v[7]) {
    if (strncmp(line, "cpu", 3))
        return 0;
    char *at = (char *)line + 3, *end;
    *cpu = (int)strtol(at, &end, 10);
    for (int k = 0; k < 7 && end != at; k++)
        v[k] = strtoull(at = end, &end, 10);
    return end != at;
}

/* sscanf(text, "%llu %llu", exec, runq) == 2: a task's schedstat (its CPU time and its
 * run-queue wait, in ns). */
static inline int cc_parse_schedstat(const char *text, unsigned long long *exec, unsigned long long *runq) {
    char *end;
    *exec = strtoull(text, &end, 10);
    if (end == text)
        return 0;
    *runq = strtoull(text = end, &end, 10);
    return end != text;
}
#endif
