/* The JSON Lines of CORECAST_OUTPUT: one line per active region and the process, then a
 * summary, rendered from the sample and the model's result (fields: docs/recording.md,
 * recording/record.py, CC_SAMPLE_SCHEMA); written without blocking the program on a
 * slow reader. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corecast.h"
#include "report.h"
#include "sample.h"
#include "settle.h"
#include "text.h"

/* The MPI rank and world size when an MPI launcher started the process (every line). */
static void put_rank(struct cc_buf *b) {
    if (cc_cfg.rank < 0)
        return;
    cc_put(b, ",\"rank\":%d,\"ranks\":", cc_cfg.rank);
    if (cc_cfg.ranks > 0)
        cc_put(b, "%d", cc_cfg.ranks);
    else
        cc_put(b, "null");
}

static void measured_inputs(struct cc_buf *b, const struct cc_sample *s, const struct cc_region_sample *g) {
    cc_put(b, "[\"wall\"");
    if (cc_is_omp_region(g))
        cc_put(b, ",\"thread_busy\",\"imbalance\",\"serial_hold\",\"sync_waits\"");
    else
        cc_put(b, ",\"cpu_time\",\"runqueue\",\"sync_waits\",\"lock_hold_sampled\"");
    for (int i = 0; i < CC_NCTR; i++)
        if (s->counters_measured & (1u << i))
            cc_put(b, ",\"%s\"", CC_COUNTER_NAMES[i]);
    cc_put(b, "]");
}

#define MAX_THREAD_LINES 256 /* keeps one JSON line bounded */

/* Per program thread slot (core.c hands an exited thread's on): its latest thread's tid,
 * its threads' CPU time, and the waits they had (non-zero categories), those scaled up from
 * timed samples shrunk as fit_waits.c shrank the process's (``g``): one thread "waited"
 * 0.52 s in a 0.31 s run whose process record said 0.12. */
static void per_thread(struct cc_buf *b, const struct cc_region_sample *g) {
    int k = cc_thread_count(), shown = 0;
    double shrink[CC_NSTALL] = {0}; /* the threads' raw waits first */
    for (int i = 0; i < k; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        for (int c = 0; t && !t->internal && c < CC_NSTALL; c++)
            shrink[c] += cc_ticks_to_s(t->n.wait[c]);
    }
    for (int c = 0; c < CC_NSTALL; c++)
        shrink[c] = cc_sampled_category(c) && shrink[c] > g->stall_s[c] ? g->stall_s[c] / shrink[c] : 1;
    cc_put(b, ",\"per_thread\":[");
    for (int i = 0; i < k && shown < MAX_THREAD_LINES; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        if (!t || t->internal)
            continue;
        uint64_t acq = 0, contended = 0;
        for (int c = 0; c < CC_NSTALL; c++) {
            acq += t->n.acq[c];
            contended += t->n.contended[c];
        }
        double cpu = cc_slot_cpu_s(t);
        cc_put(b, "%s{\"tid\":%d,\"cpu_s\":", shown++ ? "," : "", t->tid);
        if (cpu >= 0)
            cc_put(b, "%.6g", cpu);
        else
            cc_put(b, "null"); /* the thread ended before the sampler saw it */
        cc_put(b, ",\"acquisitions\":%llu,\"contended\":%llu,\"hold_sampled_s\":%.6g,\"waits_s\":{",
            (unsigned long long)acq, (unsigned long long)contended, cc_ticks_to_s(t->hold_sampled));
        int first = 1;
        for (int c = 0; c < CC_NSTALL; c++)
            if (t->n.wait[c]) {
                double w = cc_ticks_to_s(t->n.wait[c]) * shrink[c];
                cc_put(b, "%s\"%s\":%.6g", first ? "" : ",", CC_STALL_NAMES[c], w);
                first = 0;
            }
        cc_put(b, "}}");
    }
    cc_put(b, "]");
}

static void json_region(struct cc_buf *b, const struct cc_sample *s, const struct cc_region_sample *g,
                        const struct cc_region_prediction *p, int model_ok) {
    int process = !strcmp(g->name, "process");
    cc_put(b, "{\"event\":\"%s\",\"schema\":%d,\"pid\":%d,\"runtime\":\"%s\",\"name\":",
        process ? "process" : "region", CC_SAMPLE_SCHEMA, s->pid, g->runtime == CC_RUNTIME_OPENMP ? "openmp" : "pthreads");
    cc_put_str(b, g->name);
    put_rank(b);
    cc_put(b, ",\"object\":");
    cc_put_str(b, g->object);
    cc_put(b, ",\"calls\":%llu,\"threads\":%d,", g->calls, g->threads);
    if (!process)
        cc_put(b, "\"nested\":%s,\"requested\":%d,", g->nested ? "true" : "false", g->requested);
    if (!process && cc_sample_uncredited_calls(s, g)) /* the counts leave these calls' sections out */
        cc_put(b, "\"sync_uncredited_calls\":%llu,", cc_sample_uncredited_calls(s, g));
    cc_put(b, "\"wall_s\":%.6g,\"stalls_s\":{", g->wall_s);
    int first = 1;
    for (int c = 0; c < CC_NSTALL; c++) {
        cc_put(b, "%s\"%s\":%.6g", first ? "" : ",", CC_STALL_NAMES[c], g->stall_s[c]);
        first = 0;
    }
    cc_put(b, "},\"counters\":{\"busy_s\":%.6g,\"serial_s\":%.6g,\"cpu_s\":%.6g,\"loop_calls\":%llu,"
           "\"hold_sampled_s\":%.6g,\"hold_samples\":%llu,\"acquisitions\":{",
        g->busy_s, g->serial_s, g->cpu_s, g->loop_calls, g->hold_sampled_s, g->hold_samples);
    for (int c = 0, k = 0; c < CC_NSTALL; c++) /* the run queue is waited in, never acquired */
        if (c != CC_STALL_RUNQUEUE)
            cc_put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->acquisitions[c]);
    cc_put(b, "},\"contended\":{");
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (c != CC_STALL_RUNQUEUE)
            cc_put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->contended[c]);
    cc_put(b, "},\"bytes\":{");
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (g->bytes[c])
            cc_put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->bytes[c]);
    /* serial_s split into single blocks and holds per category: replay needs the split */
    cc_put(b, "},\"single_s\":%.6g,\"hold_s\":{", g->single_s);
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (g->hold_s[c] > 0)
            cc_put(b, "%s\"%s\":%.6g", k++ ? "," : "", CC_STALL_NAMES[c], g->hold_s[c]);
    /* explicit tasks (schema 4; task_depend, taskwaits, then single_tasks, single_task_spawn_s
     * 5: added keys, older lines lack them) */
    cc_put(b, "},\"tasks\":%llu,\"task_s\":%.6g,\"task_spawn_s\":%.6g,\"task_depend\":%llu,\"taskwaits\":%llu", g->tasks,
           g->task_s, g->task_spawn_s, g->task_depend, g->taskwaits);
    cc_put(b, ",\"single_tasks\":%llu,\"single_task_spawn_s\":%.6g", g->single_tasks, g->single_task_spawn_s);
    if (process) /* other load's run-queue wait: not in stalls_s */
        cc_put(b, ",\"runqueue_other_load_s\":%.6g,\"team_threads\":%d", g->runq_other_s, g->team_threads);
    if (process)
        for (int i = 0; i < CC_NCTR; i++)
            if (s->counters_measured & (1u << i))
                cc_put(b, ",\"%s\":%.6g", CC_COUNTER_NAMES[i], s->counters[i]);
    cc_put(b, "}");
    if (process)
        per_thread(b, g);
    cc_put(b, ",\"predicted\":[");
    int np = model_ok ? p->npred : 0;
    for (int i = 0; i < np && i < CC_MAX_PRED; i++)
        cc_put(b, "%s{\"threads\":%d,\"speedup\":%.4g,\"low\":%.4g,\"high\":%.4g}", i ? "," : "",
            p->threads[i], p->speedup[i], p->low[i], p->high[i]);
    cc_put(b, "],\"fastest_threads\":");
    if (np && p->fastest > 0) /* 0: the model named none (no evidence of how the work divides) */
        cc_put(b, "%d,\"basis\":", p->fastest);
    else
        cc_put(b, "null,\"basis\":");
    cc_put_str(b, np ? p->basis : "");
    cc_put(b, ",\"future_bottleneck\":");
    if (np && p->bottleneck[0])
        cc_put_str(b, p->bottleneck);
    else
        cc_put(b, "null");
    if (!process) {
        cc_put(b, ",\"by_team\":[");
        for (int i = 0; i < g->nhist; i++) {
            cc_put(b, "%s{\"threads\":%d,\"calls\":%llu,\"wall_s\":%.6g", i ? "," : "",
                g->hist[i].threads, g->hist[i].calls, g->hist[i].wall_s);
            if (cc_cfg.probe)
                cc_put(b, ",\"probe_calls\":%llu", g->hist_probes[i]);
            cc_put(b, "}");
        }
        cc_put(b, "]");
        if (cc_cfg.probe) /* measured and expected time the probes added (CORECAST_PROBE) */
            cc_put(b, ",\"probe_calls\":%llu,\"probe_extra_s\":%.6g,\"probe_reserved_s\":%.6g",
                g->probe_calls, g->probe_extra_s, g->probe_reserved_s);
    }
    if (s->steer && !process) {
        cc_put(b, ",\"steering\":{\"own\":%d,\"now\":%d,\"chosen\":", cc_region_own(g), g->steered_to);
        if (np && p->steer_chosen)
            cc_put(b, "%d,\"gain\":%.4g", p->steer_chosen, p->steer_gain);
        else
            cc_put(b, "null,\"gain\":null");
        cc_put(b, ",\"steps\":%d,\"not_explored\":", np ? p->steer_steps : 0);
        if (np && p->steer_reason[0]) { /* why exploring could not pay (the model's short text) */
            char why[sizeof p->steer_reason + 1];
            snprintf(why, sizeof why, "%.*s", (int)strnlen(p->steer_reason, sizeof p->steer_reason), p->steer_reason);
            cc_put_str(b, why);
        } else
            cc_put(b, "null");
        /* critical, atomic and OpenMP-lock counts credited, not counted (settle.c): for how long, and
         * since when if they still were at the end */
        if (cc_settle_uncounted_s(s->elapsed_s) > 0)
            cc_put(b, ",\"sync_uncounted_s\":%.4g", cc_settle_uncounted_s(s->elapsed_s));
        double stopped = cc_settle_stopped_by_s(s->elapsed_s);
        if (stopped > 0)
            cc_put(b, ",\"sync_counted_until_s\":%.4g", stopped);
        if (stopped > 0 && cc_settle_stop_scheduled_s() >= 0) /* sampler time, step to stop */
            cc_put(b, ",\"sync_stop_scheduled_s\":%.4g", cc_settle_stop_scheduled_s());
        cc_put(b, "}");
    }
    if (model_ok && p->numa_json[0]) /* object members written by the model */
        cc_put(b, ",%.*s", (int)strnlen(p->numa_json, sizeof p->numa_json), p->numa_json);
    cc_put(b, ",\"inputs\":{\"measured\":");
    measured_inputs(b, s, g);
    cc_put(b, ",\"fitted\":[");
    if (np && p->fitted[0]) {
        /* comma-separated names -> JSON strings */
        char tmp[sizeof p->fitted];
        memcpy(tmp, p->fitted, sizeof tmp);
        char *save = NULL, *tok = strtok_r(tmp, ",", &save);
        for (int k = 0; tok; k++, tok = strtok_r(NULL, ",", &save)) {
            cc_put(b, k ? "," : "");
            cc_put_str(b, tok);
        }
    }
    cc_put(b, "]}}\n");
}

/* The machine's nodes and the process's memory-traffic counters (only the measured ones). */
static void json_numa(struct cc_buf *b, const struct cc_numa_counts *n) {
    int nodes = n->nodes < CC_MAX_NODES ? n->nodes : CC_MAX_NODES;
    cc_put(b, ",\"numa\":{\"nodes\":%d,\"node_cpus\":[", n->nodes);
    for (int i = 0; i < nodes; i++)
        cc_put(b, "%s%d", i ? "," : "", n->node_cpus[i]);
    cc_put(b, "],\"source\":");
    char src[sizeof n->source + 1];
    snprintf(src, sizeof src, "%.*s", (int)sizeof n->source, n->source);
    cc_put_str(b, src);
    cc_put(b, ",\"measured\":[");
    for (int r = 0, k = 0; r < CC_NUMA_NROLES; r++)
        if (n->measured & (1u << r))
            cc_put(b, "%s\"%s\"", k++ ? "," : "", CC_NUMA_ROLE_NAMES[r]);
    int open, planned = cc_numa_events(&open); /* the plan's events, and how many opened */
    cc_put(b, "],\"multiplexed\":%s,\"events\":%d,\"events_open\":%d", n->multiplexed ? "true" : "false", planned,
           open);
    if (n->measured & (1u << CC_NUMA_CYCLES))
        cc_put(b, ",\"cycles\":%.10g", n->cycles);
    if (n->measured & (1u << CC_NUMA_LLC))
        cc_put(b, ",\"llc_misses\":%.10g", n->llc_misses);
    for (int r = CC_NUMA_BUS; r <= CC_NUMA_MCT; r++) {
        if (!(n->measured & (1u << r)))
            continue;
        const double *v = r == CC_NUMA_BUS ? n->bus : n->mct;
        cc_put(b, ",\"%s\":[", CC_NUMA_ROLE_NAMES[r]);
        for (int i = 0; i < nodes; i++)
            cc_put(b, "%s%.10g", i ? "," : "", v[i]);
        cc_put(b, "]");
    }
    cc_put(b, "}");
}

static void json_summary(struct cc_buf *b, const struct cc_sample *s, const struct cc_result *r) {
    cc_put(b, "{\"event\":\"summary\",\"schema\":%d,\"pid\":%d,\"elapsed_s\":%.6g,\"cores\":%d,\"cpus_allowed\":%d,"
           "\"target\":%d,\"regions\":%d,\"overflow\":%llu,\"model\":",
        CC_SAMPLE_SCHEMA, s->pid, s->elapsed_s, s->cores, s->cpus_allowed, s->target, s->nregions - 1,
        s->overflow);
    cc_put_str(b, r->status == 0 ? "ok" : r->note);
    put_rank(b);
    cc_put(b, ",\"predicted_for\":");
    if (r->status == 0 && r->predicted_cores > 0) {
        cc_put(b, "{\"cores\":%d,\"source\":", r->predicted_cores);
        cc_put_str(b, r->predicted_for);
        cc_put(b, "}");
    } else {
        cc_put(b, "null");
    }
    if (r->status == 0 && r->machine_json[0]) /* JSON the model wrote (ASCII, a whole object) */
        cc_put(b, ",\"machine_calibration\":%.*s", (int)strnlen(r->machine_json, sizeof r->machine_json),
               r->machine_json);
    cc_put(b, ",\"corecast_cpu_s\":%.6g,\"launcher_cpu_s\":%.6g,\"children_cpu_s\":%.6g", cc_own_cpu_s(), cc_cpu_before_start(), cc_children_cpu_s());
    /* What the sampler did (its windows, the model's window runs, the steered windows that
     * needed none, and when steering started it), and how long the sections went uncounted
     * (settle.c), steered or not. */
    struct cc_sampler_stats st = cc_sampler_stats();
    cc_put(b, ",\"sampler\":{\"windows\":%lu,\"model_runs\":%lu,\"settled_windows\":%lu,\"model_started_s\":",
           st.windows, st.model_runs, st.settled_windows);
    if (st.model_started_s >= 0)
        cc_put(b, "%.4g", st.model_started_s);
    else
        cc_put(b, "null");
    cc_put(b, ",\"sync_uncounted_s\":%.4g,\"model_start_cpu_s\":%.6g,\"model_cpu_s\":%.6g,\"exit_wait_s\":%.6g}",
           cc_settle_uncounted_s(s->elapsed_s), cc_model_start_cpu_s(), cc_model_cpu_s(), st.exit_wait_s);
    if (cc_mpi.initialized)
        cc_put(b, ",\"mpi\":{\"init_s\":%.6g,\"finalize_s\":%.6g}", cc_mpi.init_s, cc_mpi.finalize_s);
    struct cc_load l = cc_load_split();
    cc_put(b, ",\"runqueue\":{\"runnable_s\":%.6g,\"wait_s\":%.6g,\"other_load_s\":%.6g,"
           "\"share\":%.4g,\"other_load_share\":%.4g},\"machine_busy\":%s",
        l.runnable_s, l.runq_s, l.other_s, l.runnable_s > 0 ? l.runq_s / l.runnable_s : 0.0,
        l.runnable_s > 0 ? l.other_s / l.runnable_s : 0.0, cc_machine_busy(&l) ? "true" : "false");
    cc_put(b, ",\"counters_refused\":[");
    int k = 0;
    for (int i = 0; i < CC_NCTR; i++)
        if (!(s->counters_measured & (1u << i)))
            cc_put(b, "%s\"%s\"", k++ ? "," : "", CC_COUNTER_NAMES[i]);
    cc_put(b, "]");
    json_numa(b, &s->numa);
    const char *unmeasured = cc_unmeasured_omp_runtime();
    if (unmeasured) {
        cc_put(b, ",\"openmp_unmeasured\":");
        cc_put_str(b, unmeasured);
    }
    if ((cc_cfg.steer || cc_cfg.probe) && cc_ompt_on && !cc_ompt_team_control()) {
        cc_put(b, ",\"team_control_unavailable\":");
        cc_put_str(b, cc_ompt_runtime());
    }
    cc_put(b, "}\n");
}

/* ---- CORECAST_OUTPUT -------------------------------------------------------------- */
/* The fs.protected_symlinks rule, for systems that do not enforce it: a symlink in a
 * world-writable sticky directory (/tmp) is followed only when its owner is the
 * directory's or ours (someone else's link there may point at any of our files). */
static int hostile_symlink(const char *path) {
    struct stat link, dir;
    if (lstat(path, &link) != 0 || !S_ISLNK(link.st_mode))
        return 0;
    char parent[sizeof cc_cfg.output + 64];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == parent)
        parent[1] = 0;
    else
        *slash = 0;
    if (stat(parent, &dir) != 0)
        return 0;
    return (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH) && link.st_uid != dir.st_uid &&
           link.st_uid != geteuid();
}

/* Non-blocking, so a FIFO nobody reads (ENXIO) or a full one cannot hold the program. */
static int open_output(void) {
    static char path[sizeof cc_cfg.output + 64];
    const char *shown = path; /* cc_warn makes it printable */
    if (!cc_output_path(path, sizeof path)) {
        cc_warn("CORECAST_OUTPUT is too long with {rank} and {pid} filled in; no JSON Lines");
        return -1;
    }
    if (hostile_symlink(path)) {
        cc_warn("CORECAST_OUTPUT %s is a symlink in a shared sticky directory owned by someone else; "
                "not followed, no JSON Lines", shown);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
    if (fd < 0 && errno == ENXIO)
        cc_warn("CORECAST_OUTPUT %s is a FIFO nobody reads; no JSON Lines", shown);
    else if (fd < 0)
        cc_warn("cannot write %s (%s); no JSON Lines", shown, strerror(errno));
    return fd;
}

#define OUTPUT_PATIENCE_S 5.0 /* a slow reader gets this long for all the lines */

void cc_write_json(const struct cc_sample *s, const struct cc_result *r) {
    if (!cc_cfg.output[0])
        return;
    int fd = open_output();
    if (fd < 0)
        return;
    double deadline = cc_mono_s() + OUTPUT_PATIENCE_S;
    int ok = 1;
    struct cc_buf *b = cc_exit_buf();
    for (int i = 0; ok && i < s->nregions; i++) {
        if (!cc_region_active(&s->regions[i]))
            continue;
        b->len = 0;
        json_region(b, s, &s->regions[i], &r->regions[i], r->status == 0);
        /* one write per line: O_APPEND keeps lines whole */
        ok = cc_write_all(fd, b->data, b->len, deadline - cc_mono_s()) == 0;
    }
    if (ok) {
        b->len = 0;
        json_summary(b, s, r);
        ok = cc_write_all(fd, b->data, b->len, deadline - cc_mono_s()) == 0;
    }
    if (!ok)
        cc_warn("could not write all JSON Lines to %s (%s)", cc_cfg.output,
                errno == EAGAIN ? "its reader stopped reading" : strerror(errno));
    close(fd);
}

/* A program that started no thread and ran no parallel region: a summary record saying
 * so (replay shows it as a serial run). */
void cc_write_json_serial(double elapsed, double children_cpu_s) {
    if (!cc_cfg.output[0])
        return;
    int fd = open_output();
    if (fd < 0)
        return;
    struct cc_buf *b = cc_exit_buf();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    b->len = 0;
    cc_put(b, "{\"event\":\"summary\",\"schema\":%d,\"pid\":%d,\"elapsed_s\":%.6g,\"cores\":%d,"
            "\"target\":%d,\"regions\":0,\"serial_run\":true,\"children_cpu_s\":%.6g,\"model\":\"not run: serial run\"}\n",
        CC_SAMPLE_SCHEMA, (int)getpid(), elapsed, cores > 0 ? (int)cores : 1, cc_cfg.target, children_cpu_s);
    if (cc_cfg.rank >= 0) { /* before the closing brace and newline */
        b->len -= 2;
        put_rank(b);
        cc_put(b, "}\n");
    }
    if (cc_write_all(fd, b->data, b->len, OUTPUT_PATIENCE_S) != 0)
        cc_warn("could not write the JSON Lines summary to %s", cc_cfg.output);
    close(fd);
}
