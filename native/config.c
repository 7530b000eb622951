/* The settings: CORECAST_* variables read once at start (a bad value warns and keeps
 * the default), the MPI rank from the launcher's environment, CORECAST_OUTPUT's path.
 * Names, ranges and defaults come from native/settings.h, generated from the one table
 * (src/corecast/io/settings.py). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "corecast.h"
#include "omp_call.h"
#include "report.h"
#include "text.h"

/* A bad value is warned about once per process, not once per image: `sh -c 'exec prog'`
 * or `env prog` run two images in one pid, each reading the same variables.  An image that
 * warned marks the environment of its exec (cc_exec_env) and the next one, finding its own
 * pid there, keeps quiet and removes the mark, so the program sees the environment it was
 * given. */
#define WARNED CC_ENV_WARNED_PID
static int warned, hush;

/* The one parse rule: a whole number in [lo, hi] (strtol, nothing after it); a flag (0 or
 * 1) also reads OpenMP's words for its values (OMP_DYNAMIC=true): true, yes, on and false,
 * no, off, in any case.  io/settings.py reads the same. */
static int whole(const char *v, int lo, int hi, int *out) {
    static const char *const words[] = {"false", "no", "off", "true", "yes", "on"};
    for (int i = 0; lo == 0 && hi == 1 && i < 6; i++)
        if (!strcasecmp(v, words[i])) {
            *out = i >= 3;
            return 1;
        }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return 0;
    *out = (int)x;
    return 1;
}

static int env_int(const char *name, int lo, int hi, int dflt) {
    const char *v = getenv(name);
    int x;
    if (!v || !*v)
        return dflt;
    if (!whole(v, lo, hi, &x)) {
        /* At most 40 characters of the value, as the launcher quotes it: the line keeps its end. */
        int n = (int)cc_utf8_prefix(v, 40);
        const char *more = v[n] ? "..." : "";
        if (!hush && lo == 0 && hi == 1)
            cc_warn("%s=%.*s%s is not 0 or 1 (or true or false, yes or no, on or off); using %d", name, n, v, more, dflt);
        else if (!hush)
            cc_warn("%s=%.*s%s is not a whole number in [%d, %d]; using %d", name, n, v, more, lo, hi, dflt);
        warned = 1;
        return dflt;
    }
    return x;
}

int cc_env_flag(const char *name) {
    const char *v = getenv(name);
    int x;
    return v && whole(v, 0, 1, &x) ? x : 0;
}

/* This library's file name, read at start-up (cc_config_read): an exec asks the loader
 * nothing then (dladdr takes its lock, which a thread inside dl_iterate_phdr holds: an
 * exec beside one waited for it). */
static char library_name[256];

static void note_library_name(void) {
    const char *file = cc_library_file();
    const char *name = file ? strrchr(file, '/') : NULL;
    name = name ? name + 1 : file;
    size_t n = name ? strlen(name) : 0;
    if (n < sizeof library_name) /* a longer one is never found: no mark */
        memcpy(library_name, name ? name : "", n + 1);
}

/* Whether ``envp`` preloads this library, so that an image it starts is measured too. */
int cc_preloaded_in(char *const envp[]) {
    const char *name = library_name;
    if (!envp || !name[0])
        return 0;
    for (char *const *e = envp; *e; e++)
        if (!strncmp(*e, "LD_PRELOAD=", 11))
            return strstr(*e + 11, name) != NULL;
    return 0;
}

#define ENV_CAP 4096 /* a larger environment goes unmarked: a stack array of at most 32 KiB */

size_t cc_exec_env_room(char *const envp[]) {
    /* Only an image that loads the library reads the mark and removes it: one that does not
     * (`env -i A=1 prog`, a program that drops LD_PRELOAD) gets the environment it was given
     * (it printed CORECAST_WARNED_PID=N among its own variables). */
    if (!warned || !envp || !cc_preloaded_in(envp))
        return 0;
    size_t n = 0;
    while (envp[n] && n < ENV_CAP)
        n++;
    return n + 2 > ENV_CAP ? 0 : n + 2;
}

char *const *cc_exec_env(char *const envp[], char **out, size_t cap) {
    static char mark[48];
    size_t room = cc_exec_env_room(envp);
    if (!room || room > cap)
        return envp;
    size_t n = room - 2;
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
    static const char *const rank_vars[] = {CC_RANK_VARS, NULL};
    static const char *const size_vars[] = {CC_SIZE_VARS, NULL};
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

/* Every whole-number setting, with the cc_cfg field it lands in. */
struct int_setting {
    const char *name;
    int lo, hi, dflt;
    int *field;
};
#define INT_ROW(name, lo, hi, dflt, f) {name, lo, hi, dflt, &cc_cfg.f},
static const struct int_setting ints[] = {CC_SETTINGS_INT(INT_ROW)};
#define NINTS (sizeof ints / sizeof ints[0])

/* CORECAST_DISPLAY_ENV: every setting of the table, in one write, as OMP_DISPLAY_ENV
 * does: the library's with the value in force, the others as given. */
static void display_env(void) {
    static const char *const shown[] = {CC_SETTINGS_SHOWN};
    static const char end[] = "CORECAST DISPLAY ENVIRONMENT END\n";
    static char buf[16384]; /* start-up, one thread: no stack for it */
    char value[sizeof cc_cfg.output];
    size_t k = (size_t)snprintf(buf, sizeof buf, "CORECAST DISPLAY ENVIRONMENT BEGIN\n");
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        const struct int_setting *s = NULL;
        for (size_t j = 0; j < NINTS && !s; j++)
            s = strcmp(ints[j].name, shown[i]) ? NULL : &ints[j];
        const char *given = getenv(shown[i]);
        if (s)
            snprintf(value, sizeof value, "%d", *s->field);
        else
            cc_printable(value, sizeof value, strcmp(shown[i], CC_ENV_OUTPUT) ? (given ? given : "") : cc_cfg.output);
        int n = snprintf(buf + k, sizeof buf - k, "  %s = '%s'\n", shown[i], value);
        if (n < 0 || k + (size_t)n + sizeof end > sizeof buf)
            break; /* the END line always fits: the list is cut instead */
        k += (size_t)n;
    }
    memcpy(buf + k, end, sizeof end);
    cc_report_write(buf, k + sizeof end - 1);
}

/* CORECAST_* variables the table lacks (typos), found at start and said in the exit report,
 * where a line cannot land between the program's own at start-up: the first few, each with
 * the table's name nearest it (io/settings.py's closest, the same rule). */
#define ODD_KEPT 4
static const char *const known[] = {CC_SETTINGS_ALL};
#define NKNOWN (sizeof known / sizeof known[0])
static char odd[ODD_KEPT][CC_NAME_MAX];
static int odd_near[ODD_KEPT], nodd;

static int upper(int c) { return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c; }

/* Optimal-string-alignment distance (a letter added, dropped, changed, two swapped). */
static int edits(const char *a, const char *b) {
    static int d[CC_NAME_MAX + 1][CC_NAME_MAX + 1]; /* start-up, one thread */
    int la = (int)strlen(a), lb = (int)strlen(b);
    for (int i = 0; i <= la; i++)
        for (int j = 0; j <= lb; j++) {
            if (!i || !j) {
                d[i][j] = i + j;
                continue;
            }
            int sub = d[i - 1][j - 1] + (upper(a[i - 1]) != b[j - 1]), best = d[i - 1][j] + 1;
            best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
            best = sub < best ? sub : best;
            if (i > 1 && j > 1 && upper(a[i - 1]) == b[j - 2] && upper(a[i - 2]) == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

static void find_odd(void) {
    extern char **environ;
    for (char **e = environ; e && *e; e++) {
        size_t n = strcspn(*e, "="), k = 0;
        while (k < NKNOWN && (strlen(known[k]) != n || strncmp(*e, known[k], n)))
            k++;
        if (strncmp(*e, "CORECAST_", 9) || k < NKNOWN || nodd++ >= ODD_KEPT)
            continue;
        char *name = odd[nodd - 1];
        int near = -1, best = CC_NAME_NEAR + 1;
        if (n >= CC_NAME_MAX) /* no suggestion for a name this long (as closest): its start, cut */
            snprintf(name, CC_NAME_MAX, "%.*s...", CC_NAME_MAX - 4, *e);
        else
            snprintf(name, CC_NAME_MAX, "%.*s", (int)n, *e);
        for (k = 0; n < CC_NAME_MAX && k < NKNOWN; k++) {
            int d = edits(name, known[k]);
            if (d < best)
                best = d, near = (int)k;
        }
        odd_near[nodd - 1] = near;
    }
}

void cc_config_notes(void) {
    for (int i = 0; i < nodd && i < ODD_KEPT; i++)
        cc_warn("%s is not a corecast setting%s%s%s; ignored (docs/environment.md lists them)", odd[i],
                odd_near[i] >= 0 ? " (did you mean " : "", odd_near[i] >= 0 ? known[odd_near[i]] : "",
                odd_near[i] >= 0 ? "?)" : "");
    if (nodd > ODD_KEPT)
        cc_warn("and %d more CORECAST_* variables that are not corecast settings; ignored", nodd - ODD_KEPT);
}

void cc_config_read(void) {
    int saved = errno;
    note_library_name();
    const char *mark = getenv(WARNED);
    if (mark) {
        hush = atoi(mark) == (int)getpid();
        unsetenv(WARNED); /* at start-up, before the program's threads */
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (size_t i = 0; i < NINTS; i++) {
        int dflt = ints[i].dflt == CC_DEFAULT_CORES ? (cores > 0 ? (int)cores : 1) : ints[i].dflt;
        *ints[i].field = env_int(ints[i].name, ints[i].lo, ints[i].hi, dflt);
    }
    if (cc_cfg.probe && cc_cfg.steer) { /* steering already runs the region at other sizes */
        cc_warn("CORECAST_PROBE=1 is ignored with CORECAST_STEER=1 (steering already tries smaller teams)");
        cc_cfg.probe = 0;
    }
    const char *fault = getenv(CC_ENV_TEST_FAULT); /* the model's faults are the bridge's */
    cc_cfg.slow_rewrite = fault && !strcmp(fault, "slow_rewrite");
    cc_cfg.slow_table = fault && !strcmp(fault, "slow_table");
    cc_cfg.report_segv = fault && !strcmp(fault, "report_segv");
    cc_cfg.no_sampler = fault && !strcmp(fault, "no_sampler");
    cc_cfg.naming_at_fork = fault && !strcmp(fault, "naming_at_fork");
    cc_cfg.view_at_fork = fault && !strcmp(fault, "view_at_fork");
    cc_cfg.loading_at_fork = fault && !strcmp(fault, "loading_at_fork");
    cc_cfg.sampler_first = fault && !strcmp(fault, "sampler_first");
    cc_cfg.view_in_loader = fault && !strcmp(fault, "view_in_loader");
    cc_cfg.naming_in_loader = fault && !strcmp(fault, "naming_in_loader");
    cc_cfg.quiet_exit_awaits = fault && !strcmp(fault, "quiet_exit_awaits");
    if (!cc_cfg.launch_pid) /* under `corecast run` the command named them already */
        find_odd();
    read_rank();
    /* OMP_DYNAMIC=false: exact team sizes asked for (omp_call.c), read as the runtimes read
     * it: spaces around it, any case, libomp's other words for false. */
    const char *dyn = getenv("OMP_DYNAMIC");
    char word[16] = "";
    if (dyn)
        sscanf(dyn, " %15[^ \t\n]", word);
    static const char *const falses[] = {"false", "f", "no", "n", "off", "0", ".false.", "disabled"};
    cc_exact_teams = 0;
    for (size_t i = 0; i < sizeof falses / sizeof falses[0]; i++)
        cc_exact_teams |= !strcasecmp(word, falses[i]);
    const char *out = getenv(CC_ENV_OUTPUT);
    cc_cfg.output[0] = 0;
    /* A relative name is the start's working directory's, as `corecast run --json-out`
     * makes it: the exit found it in whatever directory the program had moved to. */
    if (!getcwd(cc_cfg.start_dir, sizeof cc_cfg.start_dir)) /* the model's machine files too */
        cc_cfg.start_dir[0] = 0;
    const char *cwd = cc_cfg.start_dir;
    int rel = out && out[0] && out[0] != '/' && cwd[0];
    if (rel && strlen(cwd) + 1 + strlen(out) < sizeof cc_cfg.output)
        snprintf(cc_cfg.output, sizeof cc_cfg.output, "%s/%s", strcmp(cwd, "/") ? cwd : "", out);
    else if (out && strlen(out) < sizeof cc_cfg.output && !rel)
        strcpy(cc_cfg.output, out);
    else if (out && !hush)
        cc_warn("CORECAST_OUTPUT is too long; no JSON Lines written");
    if (cc_cfg.display_env)
        display_env();
    errno = saved;
}
