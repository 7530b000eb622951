/* The settings: CORECAST_* variables read once at start (a bad value warns and keeps
 * the default), the MPI rank from the launcher's environment, CORECAST_OUTPUT's path. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corecast.h"

/* A bad value is warned about once per process, not once per image: `sh -c 'exec prog'`
 * or `env prog` run two images in one pid, each reading the same variables.  An image that
 * warned marks the environment of its exec (cc_exec_env) and the next one, finding its own
 * pid there, keeps quiet and removes the mark, so the program sees the environment it was
 * given. */
#define WARNED "CORECAST_WARNED_PID"
static int warned, hush;

static int env_int(const char *name, int lo, int hi, int dflt) {
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        if (!hush)
            cc_warn("%s=%s is not a whole number in [%d, %d]; using %d", name, v, lo, hi, dflt);
        warned = 1;
        return dflt;
    }
    return (int)x;
}

char *const *cc_exec_env(char *const envp[], char **out, size_t cap) {
    static char mark[48];
    if (!warned || !envp)
        return envp;
    size_t n = 0;
    while (envp[n])
        n++;
    if (n + 2 > cap)
        return envp;
    snprintf(mark, sizeof mark, WARNED "=%d", (int)getpid());
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], WARNED "=", sizeof WARNED))
            out[k++] = envp[i];
    out[k++] = mark;
    out[k] = NULL;
    return out;
}

/* The first of the launchers' variables that is set: Open MPI, PMI (MPICH, Intel MPI),
 * Slurm.  -1 when none is, or it does not parse (with one warning). */
static int env_first(const char *const *names, int lo) {
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return env_int(*names, lo, INT_MAX - 1, -1);
    }
    return -1;
}

static void read_rank(void) {
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL};
    cc_cfg.rank = env_first(rank_vars, 0);
    cc_cfg.ranks = cc_cfg.rank < 0 ? 0 : env_first(size_vars, 1);
    if (cc_cfg.ranks < 0 || cc_cfg.ranks <= cc_cfg.rank)
        cc_cfg.ranks = 0; /* unknown (or inconsistent): the rank alone is still reported */
}

int cc_output_path(char *dst, size_t n) {
    size_t k = 0;
    for (const char *p = cc_cfg.output; *p; p++) {
        char num[24];
        const char *put = NULL;
        if (!strncmp(p, "{rank}", 6)) {
            snprintf(num, sizeof num, "%d", cc_cfg.rank < 0 ? 0 : cc_cfg.rank);
            put = num;
            p += 5;
        } else if (!strncmp(p, "{pid}", 5)) {
            snprintf(num, sizeof num, "%d", (int)getpid());
            put = num;
            p += 4;
        }
        size_t len = put ? strlen(put) : 1;
        if (k + len >= n)
            return 0;
        memcpy(dst + k, put ? put : p, len);
        k += len;
    }
    dst[k] = 0;
    return 1;
}

void cc_config_read(void) {
    int saved = errno;
    const char *mark = getenv(WARNED);
    if (mark) {
        hush = atoi(mark) == (int)getpid();
        unsetenv(WARNED); /* at start-up, before the program's threads */
    }
    cc_cfg.disabled = env_int("CORECAST_DISABLE", 0, 1, 0);
    cc_cfg.quiet = env_int("CORECAST_QUIET", 0, 1, 0);
    cc_cfg.display_env = env_int("CORECAST_DISPLAY_ENV", 0, 1, 0);
    cc_cfg.steer = env_int("CORECAST_STEER", 0, 1, 0);
    cc_cfg.probe = env_int("CORECAST_PROBE", 0, 1, 0);
    if (cc_cfg.probe && cc_cfg.steer) { /* steering already runs the region at other sizes */
        cc_warn("CORECAST_PROBE=1 is ignored with CORECAST_STEER=1 (steering already tries smaller teams)");
        cc_cfg.probe = 0;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cc_cfg.target = env_int("CORECAST_TARGET", 1, CC_MAX_THREADS, cores > 0 ? (int)cores : 1);
    cc_cfg.window_ms = env_int("CORECAST_WINDOW_MS", 10, 60000, 200);
    cc_cfg.exit_timeout_ms = env_int("CORECAST_EXIT_TIMEOUT_MS", 0, 600000, 10000);
    cc_cfg.launch_pid = env_int("CORECAST_LAUNCH_PID", 0, INT_MAX, 0);
    cc_cfg.keep_counting = env_int("CORECAST_KEEP_COUNTING", 0, 1, 0);
    const char *fault = getenv("CORECAST_TEST_FAULT"); /* the model's faults are the bridge's */
    cc_cfg.slow_rewrite = fault && !strcmp(fault, "slow_rewrite");
    read_rank();
    const char *out = getenv("CORECAST_OUTPUT");
    cc_cfg.output[0] = 0;
    if (out && strlen(out) < sizeof cc_cfg.output)
        strcpy(cc_cfg.output, out);
    else if (out && !hush)
        cc_warn("CORECAST_OUTPUT is too long; no JSON Lines written");
    if (cc_cfg.display_env) {
        char buf[1600], shown[sizeof cc_cfg.output];
        cc_printable(shown, sizeof shown, cc_cfg.output);
        int n = snprintf(buf, sizeof buf,
                         "CORECAST DISPLAY ENVIRONMENT BEGIN\n  CORECAST_DISABLE = '%d'\n"
                         "  CORECAST_TARGET = '%d'\n  CORECAST_WINDOW_MS = '%d'\n"
                         "  CORECAST_OUTPUT = '%s'\n  CORECAST_QUIET = '%d'\n"
                         "  CORECAST_STEER = '%d'\n  CORECAST_PROBE = '%d'\n"
                         "  CORECAST_EXIT_TIMEOUT_MS = '%d'\n  CORECAST_KEEP_COUNTING = '%d'\n"
                         "CORECAST DISPLAY ENVIRONMENT END\n",
                         cc_cfg.disabled, cc_cfg.target, cc_cfg.window_ms, shown,
                         cc_cfg.quiet, cc_cfg.steer, cc_cfg.probe, cc_cfg.exit_timeout_ms,
                         cc_cfg.keep_counting);
        cc_report_write(buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
    }
    errno = saved;
}
