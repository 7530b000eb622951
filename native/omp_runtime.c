/* Which OpenMP runtime the program runs on and whether corecast measures it: the OMPT
 * tool's state (set by shims/ompt.c) as the sample and the report ask about it. */
#define _GNU_SOURCE
#include <link.h>
#include <string.h>

#include "corecast.h"

int cc_ompt_on;
int cc_ompt_forks_seen;
static char runtime_name[64]; /* the runtime's file name, for the report */

void cc_ompt_started(const char *runtime) {
    strncpy(runtime_name, runtime, sizeof runtime_name - 1);
    __atomic_store_n(&cc_ompt_on, 1, __ATOMIC_RELEASE);
}

const char *cc_ompt_runtime(void) { return cc_ompt_on ? runtime_name : ""; }

#if defined(__x86_64__)
int cc_ompt_team_control(void) { return 1; }
#else
int cc_ompt_team_control(void) { return 0; } /* no __kmpc_fork_call wrapper (shims/ompt.c) */
#endif

/* ---- runtimes that did not start the tool --------------------------------------------- */
struct runtime_query {
    char name[64];
};

static int find_kmp_runtime(struct dl_phdr_info *info, size_t size, void *arg) {
    struct runtime_query *q = arg;
    const char *path = info->dlpi_name, *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (!base || (strncmp(base, "libomp.", 7) && strncmp(base, "libomp-", 7) && strncmp(base, "libiomp", 7)))
        return 0; /* libompd, libomptarget: helpers beside the runtime, not a runtime */
    strncpy(q->name, base, sizeof q->name - 1);
    return 1;
}

const char *cc_unmeasured_omp_runtime(void) {
    static struct runtime_query q;
    /* libomp looks for a tool at its first use, so a runtime loaded but unused never asks:
     * where forks are seen (x86-64) they tell the two apart, elsewhere it is said anyway. */
    int used = cc_ompt_team_control() ? cc_ompt_forks_seen : 1;
    if (cc_ompt_on || !used)
        return NULL;
    memset(&q, 0, sizeof q);
    return dl_iterate_phdr(find_kmp_runtime, &q) ? q.name : NULL;
}
