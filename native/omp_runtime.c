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

static char aside_for[256]; /* a copy: the program may change its environment afterwards */

void cc_ompt_step_aside(const char *tools) { strncpy(aside_for, tools, sizeof aside_for - 1); }

const char *cc_ompt_aside_for(void) { return aside_for; }

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

/* ---- the name the loader knows it by ------------------------------------------------ */
struct soname_query {
    const char *file;
    char soname[64];
};

static int find_soname(struct dl_phdr_info *info, size_t size, void *arg) {
    struct soname_query *q = arg;
    const char *path = info->dlpi_name, *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (!base || strcmp(base, q->file))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
            continue;
        ElfW(Addr) strtab = 0, soname = 0;
        int named = 0;
        const ElfW(Dyn) *d = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        for (; d->d_tag != DT_NULL; d++)
            if (d->d_tag == DT_STRTAB)
                strtab = d->d_un.d_ptr;
            else if (d->d_tag == DT_SONAME)
                soname = d->d_un.d_val, named = 1;
        if (strtab && strtab < info->dlpi_addr) /* the loader relocates it in place where it may */
            strtab += info->dlpi_addr;
        if (strtab && named)
            strncpy(q->soname, (const char *)strtab + soname, sizeof q->soname - 1);
    }
    return 1;
}

/* The runtime's soname, by which the loader matches a library's need of it whatever the
 * file is called (LLVM's install aliases and conda-forge's put libomp at libgomp.so too); its file
 * name where it has none; NULL without a runtime of LLVM's kind. */
const char *cc_omp_runtime_soname(void) {
    static struct soname_query q;
    const char *file = cc_ompt_runtime(); /* else one that ran regions without the tool */
    if (!file[0] && !(file = cc_unmeasured_omp_runtime()))
        return NULL;
    memset(&q, 0, sizeof q);
    q.file = file;
    dl_iterate_phdr(find_soname, &q);
    return q.soname[0] ? q.soname : file;
}
