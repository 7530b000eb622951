/* Turning counters into a sample for the model, and the report at exit: a short table on
 * stderr (never stdout) and, when asked, JSON Lines. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corecast.h"

/* ---- the sample ------------------------------------------------------------------ */
static void basename_into(char *dst, size_t n, const char *path) {
    const char *b = strrchr(path, '/');
    snprintf(dst, n, "%s", b ? b + 1 : path);
}

/* The function an LLVM/Intel source location names: its psource is ";file;function;line;
 * col;;" (";unknown;unknown;0;0;;" without -g).  It survives inlining, as gcc's names do. */
static int loc_function(const void *loc, char *dst, size_t n) {
    const char *src = loc ? *(const char *const *)((const char *)loc + 16) : NULL; /* ident_t.psource */
    const char *f = src && src[0] == ';' ? strchr(src + 1, ';') : NULL;
    const char *e = f ? strchr(f + 1, ';') : NULL;
    if (!e || e == f + 1 || (e - f - 1 == 7 && !strncmp(f + 1, "unknown", 7)))
        return 0;
    snprintf(dst, n, "%.*s", (int)(e - f - 1), f + 1);
    return 1;
}

/* An OMPT region's function: the source location's, else the one holding its first call
 * site (the call's return address less one byte is still inside it); and its object. */
static void callsite_parent(struct cc_region *r) {
    if (!r->parent[0]) {
        char obj[1024], site[CC_NAME_LEN];
        cc_symbol_name((const char *)r->site - 1, site, sizeof site, obj, sizeof obj);
        basename_into(r->object, sizeof r->object, obj);
        if (!loc_function(r->loc, r->parent, sizeof r->parent))
            memcpy(r->parent, site, sizeof r->parent);
    }
}

/* OMPT regions are named like gcc's outlined functions, which number each function's
 * regions from 0 in source order (main._omp_fn.0, main._omp_fn.1): the holding function
 * and the region's place among that function's regions seen so far, by their first call
 * site's address (source order in code without reordered blocks). */
static void name_callsite(struct cc_region *r) {
    callsite_parent(r);
    int n, k = 0;
    struct cc_region *all = cc_regions(&n);
    for (int i = 0; i < n; i++) {
        struct cc_region *q = &all[i];
        void *site = __atomic_load_n(&q->site, __ATOMIC_ACQUIRE);
        if (!site || q == r || (char *)site > (char *)r->site)
            continue;
        callsite_parent(q);
        k += !strcmp(q->parent, r->parent) && !strcmp(q->object, r->object);
    }
    snprintf(r->name, sizeof r->name, "%.*s._omp_fn.%d", (int)sizeof r->name - 16, r->parent, k);
}

static void fill_region(struct cc_region_sample *o, struct cc_region *r) {
    if (__atomic_load_n(&r->site, __ATOMIC_ACQUIRE)) {
        name_callsite(r); /* again each time: a call site seen later may come first */
    } else if (!r->name[0]) {
        char obj[1024];
        cc_symbol_name(r->fn, r->name, sizeof r->name, obj, sizeof obj);
        basename_into(r->object, sizeof r->object, obj);
    }
    memcpy(o->name, r->name, sizeof o->name);
    memcpy(o->object, r->object, sizeof o->object);
    o->runtime = CC_RUNTIME_OPENMP;
    o->threads = __atomic_load_n(&r->max_threads, __ATOMIC_RELAXED);
    o->nested = r->nested;
    o->calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    o->wall_s = cc_ticks_to_s(__atomic_load_n(&r->wall, __ATOMIC_RELAXED));
    o->busy_s = cc_ticks_to_s(__atomic_load_n(&r->busy, __ATOMIC_RELAXED));
    o->single_s = cc_ticks_to_s(__atomic_load_n(&r->single, __ATOMIC_RELAXED));
    o->serial_s = o->single_s;
    for (int c = 0; c < CC_NSTALL; c++) {
        o->hold_s[c] = cc_ticks_to_s(__atomic_load_n(&r->hold[c], __ATOMIC_RELAXED));
        o->serial_s += o->hold_s[c];
    }
    o->loop_calls = __atomic_load_n(&r->loop_calls, __ATOMIC_RELAXED);
    o->requested = __atomic_load_n(&r->requested, __ATOMIC_RELAXED);
    o->steered_to = cc_cfg.steer ? __atomic_load_n(&r->steer_threads, __ATOMIC_RELAXED) : 0;
    o->nhist = 0;
    for (int i = 0; i < CC_MAX_HIST; i++) {
        const struct cc_hist *h = &r->hist[i];
        int k = __atomic_load_n(&h->threads, __ATOMIC_ACQUIRE);
        if (!k)
            break;
        struct cc_team_stats *o_h = &o->hist[o->nhist++];
        o_h->threads = k;
        o_h->calls = __atomic_load_n(&h->calls, __ATOMIC_RELAXED);
        o_h->wall_s = cc_ticks_to_s(__atomic_load_n(&h->wall, __ATOMIC_RELAXED));
        o->hist_probes[o->nhist - 1] = __atomic_load_n(&h->probes, __ATOMIC_RELAXED);
    }
    o->probe_calls = __atomic_load_n(&r->probe_calls, __ATOMIC_RELAXED);
    int64_t extra = __atomic_load_n(&r->probe_extra, __ATOMIC_RELAXED);
    o->probe_extra_s = extra < 0 ? -cc_ticks_to_s((uint64_t)-extra) : cc_ticks_to_s((uint64_t)extra);
    o->probe_reserved_s = cc_ticks_to_s(__atomic_load_n(&r->probe_reserved, __ATOMIC_RELAXED));
    for (int c = 0; c < CC_NSTALL; c++) {
        o->stall_s[c] = cc_ticks_to_s(__atomic_load_n(&r->wait[c], __ATOMIC_RELAXED));
        o->acquisitions[c] = __atomic_load_n(&r->acq[c], __ATOMIC_RELAXED);
        o->contended[c] = __atomic_load_n(&r->contended[c], __ATOMIC_RELAXED);
    }
}

/* A plain-threads process's team: the threads that did its work.  Pool threads that
 * mostly wait (pigz's reader and writer, idle workers) are not: a thread counts when its
 * CPU time is at least TEAM_SHARE of the second busiest thread's (not the busiest: a
 * leader that also runs the serial part would push its workers out).  Threads that ended
 * before the sampler saw them count.  0 when fewer than two CPU times are known. */
#define TEAM_SHARE 0.25

static int team_of(const struct cc_thread *t, int k) {
    double cpu[CC_MAX_THREADS], first = -1, second = -1;
    int n = 0, known = 0;
    for (int i = 0; i < k && n < CC_MAX_THREADS; i++) {
        if (t[i].internal)
            continue;
        double c = cpu[n++] = cc_task_cpu_s(t[i].tid); /* one lookup per thread */
        if (c < 0)
            continue;
        known++;
        if (c > first) {
            second = first;
            first = c;
        } else if (c > second) {
            second = c;
        }
    }
    if (known < 2 || second <= 0)
        return 0;
    int team = 0;
    for (int i = 0; i < n; i++)
        team += cpu[i] < 0 || cpu[i] >= TEAM_SHARE * second;
    return team;
}

/* The whole process: every program thread's waits, its CPU time and run-queue wait. */
static void fill_process(struct cc_region_sample *o, const struct cc_sample *s, int has_omp) {
    snprintf(o->name, sizeof o->name, "process");
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    basename_into(o->object, sizeof o->object, exe);
    o->runtime = has_omp ? CC_RUNTIME_OPENMP : CC_RUNTIME_PTHREADS;
    o->calls = 1;
    o->wall_s = s->elapsed_s;
    int k;
    const struct cc_thread *t = cc_thread_slots(&k);
    uint64_t wait[CC_NSTALL] = {0}, held[CC_NSTALL] = {0}, hold = 0, holds = 0, single = 0, loops = 0;
    for (int i = 0; i < k; i++) {
        if (t[i].internal)
            continue;
        o->threads++;
        for (int c = 0; c < CC_NSTALL; c++) {
            wait[c] += t[i].n.wait[c];
            o->acquisitions[c] += t[i].n.acq[c];
            o->contended[c] += t[i].n.contended[c];
        }
        hold += t[i].hold_sampled;
        holds += t[i].hold_samples;
        for (int c = 0; c < CC_NSTALL; c++)
            held[c] += t[i].n.hold[c];
        single += t[i].n.single;
        loops += t[i].n.loop_calls;
        for (int c = 0; c < CC_NSTALL; c++)
            o->bytes[c] += t[i].mpi_bytes[c];
    }
    for (int c = 0; c < CC_NSTALL; c++)
        o->stall_s[c] = cc_ticks_to_s(wait[c]);
    /* Implicit-barrier imbalance is recorded per region only. */
    int nr;
    const struct cc_region *r = cc_regions(&nr);
    for (int i = 0; i < nr; i++)
        if (r[i].fn)
            o->stall_s[CC_STALL_IMBALANCE] += cc_ticks_to_s(r[i].wait[CC_STALL_IMBALANCE]);
    o->hold_sampled_s = cc_ticks_to_s(hold);
    o->hold_samples = holds;
    o->single_s = cc_ticks_to_s(single);
    o->serial_s = o->single_s;
    for (int c = 0; c < CC_NSTALL; c++) {
        o->hold_s[c] = cc_ticks_to_s(held[c]);
        o->serial_s += o->hold_s[c];
    }
    o->loop_calls = loops;
    double runq;
    cc_process_times(&o->cpu_s, &runq, &o->runq_other_s);
    o->stall_s[CC_STALL_RUNQUEUE] = runq; /* the program's own: other load's is apart */
    o->busy_s = o->cpu_s;
    o->team_threads = team_of(t, k);
}

void cc_build_sample(struct cc_sample *s, int final, struct cc_region **refs) {
    memset(s, 0, sizeof *s);
    s->abi = CC_ABI_VERSION;
    s->pid = getpid();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->cores = cores > 0 ? (int)cores : 1;
    s->target = cc_cfg.target;
    s->final = final;
    s->steer = cc_cfg.steer && (!cc_ompt_on || cc_ompt_team_control());
    double now = cc_mono_s();
    s->elapsed_s = now - cc_started();
    s->active_s = cc_active ? now - cc_active_since() : 0;
    s->window_s = cc_cfg.window_ms / 1000.0;
    cc_sampler_read_counters(s);
    int nr, has_omp = 0;
    struct cc_region *r = cc_regions(&nr);
    for (int i = 0; i < nr && s->nregions < CC_MAX_REGIONS - 1; i++) {
        if (!__atomic_load_n(&r[i].fn, __ATOMIC_ACQUIRE) || !r[i].calls)
            continue;
        if (refs)
            refs[s->nregions] = &r[i];
        fill_region(&s->regions[s->nregions++], &r[i]);
        has_omp = 1;
    }
    fill_process(&s->regions[s->nregions++], s, has_omp);
    s->overflow = __atomic_load_n(&cc_overflow, __ATOMIC_RELAXED);
}

/* ---- output ----------------------------------------------------------------------- */
struct buf {
    char data[1 << 17];
    size_t len;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct buf *b, const char *fmt, ...) {
    if (b->len >= sizeof b->data - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->data + b->len, sizeof b->data - b->len, fmt, ap);
    va_end(ap);
    b->len += n > 0 ? (size_t)n : 0;
    if (b->len >= sizeof b->data)
        b->len = sizeof b->data - 1;
}

/* A JSON string of a name from outside (valid UTF-8 whatever its bytes). */
static void put_str(struct buf *b, const char *s) {
    char tmp[6 * 1024 + 3];
    cc_json_string(tmp, sizeof tmp, s);
    put(b, "%s", tmp);
}

/* ``s`` printable in a column of ``width`` characters (-1: its own length). */
static void put_cell(struct buf *b, const char *s, int width) {
    char tmp[4 * 1024 + 1];
    cc_printable_cell(tmp, sizeof tmp, s, width);
    put(b, "%s", tmp);
}

/* The MPI rank and world size when an MPI launcher started the process (every line). */
static void put_rank(struct buf *b) {
    if (cc_cfg.rank < 0)
        return;
    put(b, ",\"rank\":%d,\"ranks\":", cc_cfg.rank);
    if (cc_cfg.ranks > 0)
        put(b, "%d", cc_cfg.ranks);
    else
        put(b, "null");
}

static int region_active(const struct cc_region_sample *g) { return g->calls > 0 && g->wall_s > 0; }

static void measured_inputs(struct buf *b, const struct cc_sample *s, const struct cc_region_sample *g) {
    put(b, "[\"wall\"");
    if (g->runtime == CC_RUNTIME_OPENMP && strcmp(g->name, "process"))
        put(b, ",\"thread_busy\",\"imbalance\",\"serial_hold\",\"sync_waits\"");
    else
        put(b, ",\"cpu_time\",\"runqueue\",\"sync_waits\",\"lock_hold_sampled\"");
    for (int i = 0; i < CC_NCTR; i++)
        if (s->counters_measured & (1u << i))
            put(b, ",\"%s\"", CC_COUNTER_NAMES[i]);
    put(b, "]");
}

#define MAX_THREAD_LINES 256 /* keeps one JSON line bounded */

/* Per program thread: its tid, CPU time, and the waits it had (non-zero categories). */
static void per_thread(struct buf *b) {
    int k, shown = 0;
    const struct cc_thread *t = cc_thread_slots(&k);
    put(b, ",\"per_thread\":[");
    for (int i = 0; i < k && shown < MAX_THREAD_LINES; i++) {
        if (t[i].internal)
            continue;
        uint64_t acq = 0, contended = 0;
        for (int c = 0; c < CC_NSTALL; c++) {
            acq += t[i].n.acq[c];
            contended += t[i].n.contended[c];
        }
        double cpu = cc_task_cpu_s(t[i].tid);
        put(b, "%s{\"tid\":%d,\"cpu_s\":", shown++ ? "," : "", t[i].tid);
        if (cpu >= 0)
            put(b, "%.6g", cpu);
        else
            put(b, "null"); /* the thread ended before the sampler saw it */
        put(b, ",\"acquisitions\":%llu,\"contended\":%llu,\"hold_sampled_s\":%.6g,\"waits_s\":{",
            (unsigned long long)acq, (unsigned long long)contended, cc_ticks_to_s(t[i].hold_sampled));
        int first = 1;
        for (int c = 0; c < CC_NSTALL; c++)
            if (t[i].n.wait[c]) {
                put(b, "%s\"%s\":%.6g", first ? "" : ",", CC_STALL_NAMES[c], cc_ticks_to_s(t[i].n.wait[c]));
                first = 0;
            }
        put(b, "}}");
    }
    put(b, "]");
}

static void json_region(struct buf *b, const struct cc_sample *s, const struct cc_region_sample *g,
                        const struct cc_region_prediction *p, int model_ok) {
    int process = !strcmp(g->name, "process");
    put(b, "{\"event\":\"%s\",\"schema\":%d,\"pid\":%d,\"runtime\":\"%s\",\"name\":",
        process ? "process" : "region", CC_SAMPLE_SCHEMA, s->pid, g->runtime == CC_RUNTIME_OPENMP ? "openmp" : "pthreads");
    put_str(b, g->name);
    put_rank(b);
    put(b, ",\"object\":");
    put_str(b, g->object);
    put(b, ",\"calls\":%llu,\"threads\":%d,", g->calls, g->threads);
    if (!process)
        put(b, "\"nested\":%s,\"requested\":%d,", g->nested ? "true" : "false", g->requested);
    put(b, "\"wall_s\":%.6g,\"stalls_s\":{", g->wall_s);
    int first = 1;
    for (int c = 0; c < CC_NSTALL; c++) {
        put(b, "%s\"%s\":%.6g", first ? "" : ",", CC_STALL_NAMES[c], g->stall_s[c]);
        first = 0;
    }
    put(b, "},\"counters\":{\"busy_s\":%.6g,\"serial_s\":%.6g,\"cpu_s\":%.6g,\"loop_calls\":%llu,"
           "\"hold_sampled_s\":%.6g,\"hold_samples\":%llu,\"acquisitions\":{",
        g->busy_s, g->serial_s, g->cpu_s, g->loop_calls, g->hold_sampled_s, g->hold_samples);
    for (int c = 0, k = 0; c < CC_NSTALL; c++) /* the run queue is waited in, never acquired */
        if (c != CC_STALL_RUNQUEUE)
            put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->acquisitions[c]);
    put(b, "},\"contended\":{");
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (c != CC_STALL_RUNQUEUE)
            put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->contended[c]);
    put(b, "},\"bytes\":{");
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (g->bytes[c])
            put(b, "%s\"%s\":%llu", k++ ? "," : "", CC_STALL_NAMES[c], g->bytes[c]);
    /* serial_s split into single blocks and holds per category: replay needs the split */
    put(b, "},\"single_s\":%.6g,\"hold_s\":{", g->single_s);
    for (int c = 0, k = 0; c < CC_NSTALL; c++)
        if (g->hold_s[c] > 0)
            put(b, "%s\"%s\":%.6g", k++ ? "," : "", CC_STALL_NAMES[c], g->hold_s[c]);
    put(b, "}");
    if (process) /* other load's run-queue wait: not in stalls_s */
        put(b, ",\"runqueue_other_load_s\":%.6g,\"team_threads\":%d", g->runq_other_s, g->team_threads);
    if (process)
        for (int i = 0; i < CC_NCTR; i++)
            if (s->counters_measured & (1u << i))
                put(b, ",\"%s\":%.6g", CC_COUNTER_NAMES[i], s->counters[i]);
    put(b, "}");
    if (process)
        per_thread(b);
    put(b, ",\"predicted\":[");
    int np = model_ok ? p->npred : 0;
    for (int i = 0; i < np && i < CC_MAX_PRED; i++)
        put(b, "%s{\"threads\":%d,\"speedup\":%.4g,\"low\":%.4g,\"high\":%.4g}", i ? "," : "",
            p->threads[i], p->speedup[i], p->low[i], p->high[i]);
    put(b, "],\"preferred_threads\":");
    if (np)
        put(b, "%d,\"basis\":", p->preferred);
    else
        put(b, "null,\"basis\":");
    put_str(b, np ? p->basis : "");
    put(b, ",\"future_bottleneck\":");
    if (np && p->bottleneck[0])
        put_str(b, p->bottleneck);
    else
        put(b, "null");
    if (!process) {
        put(b, ",\"by_team\":[");
        for (int i = 0; i < g->nhist; i++) {
            put(b, "%s{\"threads\":%d,\"calls\":%llu,\"wall_s\":%.6g", i ? "," : "",
                g->hist[i].threads, g->hist[i].calls, g->hist[i].wall_s);
            if (cc_cfg.probe)
                put(b, ",\"probe_calls\":%llu", g->hist_probes[i]);
            put(b, "}");
        }
        put(b, "]");
        if (cc_cfg.probe) /* measured and expected time the probes added (CORECAST_PROBE) */
            put(b, ",\"probe_calls\":%llu,\"probe_extra_s\":%.6g,\"probe_reserved_s\":%.6g",
                g->probe_calls, g->probe_extra_s, g->probe_reserved_s);
    }
    if (s->steer && !process) {
        put(b, ",\"steering\":{\"own\":%d,\"now\":%d,\"chosen\":", g->requested, g->steered_to);
        if (np && p->steer_chosen)
            put(b, "%d,\"gain\":%.4g", p->steer_chosen, p->steer_gain);
        else
            put(b, "null,\"gain\":null");
        put(b, ",\"steps\":%d,\"not_explored\":", np ? p->steer_steps : 0);
        if (np && p->steer_reason[0]) { /* why exploring could not pay (the model's short text) */
            char why[sizeof p->steer_reason + 1];
            snprintf(why, sizeof why, "%.*s", (int)strnlen(p->steer_reason, sizeof p->steer_reason), p->steer_reason);
            put_str(b, why);
        } else
            put(b, "null");
        put(b, "}");
    }
    if (model_ok && p->numa_json[0]) /* object members written by the model */
        put(b, ",%.*s", (int)strnlen(p->numa_json, sizeof p->numa_json), p->numa_json);
    put(b, ",\"inputs\":{\"measured\":");
    measured_inputs(b, s, g);
    put(b, ",\"fitted\":[");
    if (np && p->fitted[0]) {
        /* comma-separated names -> JSON strings */
        char tmp[sizeof p->fitted];
        memcpy(tmp, p->fitted, sizeof tmp);
        char *save = NULL, *tok = strtok_r(tmp, ",", &save);
        for (int k = 0; tok; k++, tok = strtok_r(NULL, ",", &save)) {
            put(b, k ? "," : "");
            put_str(b, tok);
        }
    }
    put(b, "]}}\n");
}

/* The machine's nodes and the process's memory-traffic counters (only the measured ones). */
static void json_numa(struct buf *b, const struct cc_numa_counts *n) {
    int nodes = n->nodes < CC_MAX_NODES ? n->nodes : CC_MAX_NODES;
    put(b, ",\"numa\":{\"nodes\":%d,\"node_cpus\":[", n->nodes);
    for (int i = 0; i < nodes; i++)
        put(b, "%s%d", i ? "," : "", n->node_cpus[i]);
    put(b, "],\"source\":");
    char src[sizeof n->source + 1];
    snprintf(src, sizeof src, "%.*s", (int)sizeof n->source, n->source);
    put_str(b, src);
    put(b, ",\"measured\":[");
    for (int r = 0, k = 0; r < CC_NUMA_NROLES; r++)
        if (n->measured & (1u << r))
            put(b, "%s\"%s\"", k++ ? "," : "", CC_NUMA_ROLE_NAMES[r]);
    put(b, "],\"multiplexed\":%s", n->multiplexed ? "true" : "false");
    if (n->measured & (1u << CC_NUMA_CYCLES))
        put(b, ",\"cycles\":%.10g", n->cycles);
    if (n->measured & (1u << CC_NUMA_LLC))
        put(b, ",\"llc_misses\":%.10g", n->llc_misses);
    for (int r = CC_NUMA_BUS; r <= CC_NUMA_MCT; r++) {
        if (!(n->measured & (1u << r)))
            continue;
        const double *v = r == CC_NUMA_BUS ? n->bus : n->mct;
        put(b, ",\"%s\":[", CC_NUMA_ROLE_NAMES[r]);
        for (int i = 0; i < nodes; i++)
            put(b, "%s%.10g", i ? "," : "", v[i]);
        put(b, "]");
    }
    put(b, "}");
}

/* More than this share of the program's runnable time spent waiting for CPUs other load
 * held: the measurements (and predictions) are those of a busy machine. */
#define BUSY_SHARE 0.10

static int machine_busy(const struct cc_load *l) {
    return l->runnable_s > 0 && l->other_s > BUSY_SHARE * l->runnable_s;
}

static void json_summary(struct buf *b, const struct cc_sample *s, const struct cc_result *r) {
    put(b, "{\"event\":\"summary\",\"schema\":%d,\"pid\":%d,\"elapsed_s\":%.6g,\"cores\":%d,\"cpus_allowed\":%d,"
           "\"target\":%d,\"regions\":%d,\"overflow\":%llu,\"model\":",
        CC_SAMPLE_SCHEMA, s->pid, s->elapsed_s, s->cores, s->cpus_allowed, s->target, s->nregions - 1,
        s->overflow);
    put_str(b, r->status == 0 ? "ok" : r->note);
    put_rank(b);
    put(b, ",\"predicted_for\":");
    if (r->status == 0 && r->predicted_cores > 0) {
        put(b, "{\"cores\":%d,\"source\":", r->predicted_cores);
        put_str(b, r->predicted_for);
        put(b, "}");
    } else {
        put(b, "null");
    }
    put(b, ",\"corecast_cpu_s\":%.6g", cc_own_cpu_s());
    if (cc_mpi.initialized)
        put(b, ",\"mpi\":{\"init_s\":%.6g,\"finalize_s\":%.6g}", cc_mpi.init_s, cc_mpi.finalize_s);
    struct cc_load l = cc_load_split();
    put(b, ",\"runqueue\":{\"runnable_s\":%.6g,\"wait_s\":%.6g,\"other_load_s\":%.6g,"
           "\"share\":%.4g,\"other_load_share\":%.4g},\"machine_busy\":%s",
        l.runnable_s, l.runq_s, l.other_s, l.runnable_s > 0 ? l.runq_s / l.runnable_s : 0.0,
        l.runnable_s > 0 ? l.other_s / l.runnable_s : 0.0, machine_busy(&l) ? "true" : "false");
    put(b, ",\"counters_refused\":[");
    int k = 0;
    for (int i = 0; i < CC_NCTR; i++)
        if (!(s->counters_measured & (1u << i)))
            put(b, "%s\"%s\"", k++ ? "," : "", CC_COUNTER_NAMES[i]);
    put(b, "]");
    json_numa(b, &s->numa);
    const char *unmeasured = cc_unmeasured_omp_runtime();
    if (unmeasured) {
        put(b, ",\"openmp_unmeasured\":");
        put_str(b, unmeasured);
    }
    if ((cc_cfg.steer || cc_cfg.probe) && cc_ompt_on && !cc_ompt_team_control()) {
        put(b, ",\"team_control_unavailable\":");
        put_str(b, cc_ompt_runtime());
    }
    put(b, "}\n");
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

/* Writes all of it unless the reader stalls past ``deadline`` (returns 0 then). */
static int write_until(int fd, const char *p, size_t n, double deadline) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN) {
            double left = deadline - cc_mono_s();
            if (left <= 0)
                return 0;
            struct pollfd pf = {fd, POLLOUT, 0};
            poll(&pf, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
            continue;
        }
        return 0; /* EPIPE (the reader left), ENOSPC, ...: nothing more can go */
    }
    return 1;
}

static void write_json(const struct cc_sample *s, const struct cc_result *r) {
    if (!cc_cfg.output[0])
        return;
    int fd = open_output();
    if (fd < 0)
        return;
    double deadline = cc_mono_s() + OUTPUT_PATIENCE_S;
    int ok = 1;
    static struct buf b;
    for (int i = 0; ok && i < s->nregions; i++) {
        if (!region_active(&s->regions[i]))
            continue;
        b.len = 0;
        json_region(&b, s, &s->regions[i], &r->regions[i], r->status == 0);
        ok = write_until(fd, b.data, b.len, deadline); /* one write per line: O_APPEND keeps lines whole */
    }
    if (ok) {
        b.len = 0;
        json_summary(&b, s, r);
        ok = write_until(fd, b.data, b.len, deadline);
    }
    if (!ok)
        cc_warn("could not write all JSON Lines to %s (%s)", cc_cfg.output,
                errno == EAGAIN ? "its reader stopped reading" : strerror(errno));
    close(fd);
}

/* The top stall categories of a region as "imbalance 12%, critical 3%". */
static void top_stalls(char *out, size_t n, const struct cc_region_sample *g) {
    double total = g->threads > 0 ? g->threads * g->wall_s : g->wall_s;
    int used[CC_NSTALL] = {0};
    out[0] = 0;
    size_t len = 0;
    for (int k = 0; k < 3; k++) {
        int best = -1;
        for (int c = 0; c < CC_NSTALL; c++)
            if (!used[c] && g->stall_s[c] > 0 && (best < 0 || g->stall_s[c] > g->stall_s[best]))
                best = c;
        if (best < 0 || total <= 0 || g->stall_s[best] / total < 0.005)
            break;
        used[best] = 1;
        len += snprintf(out + len, len < n ? n - len : 0, "%s%s %.0f%%", k ? ", " : "",
                        CC_STALL_NAMES[best], 100 * g->stall_s[best] / total);
    }
    if (!out[0])
        snprintf(out, n, "-");
}

/* An MPI rank's waits, calls and bytes: what `corecast merge` combines across ranks. */
static void mpi_line(struct buf *b, const struct cc_region_sample *g) {
    put(b, "mpi: ");
    if (cc_cfg.rank >= 0 && cc_cfg.ranks > 0)
        put(b, "rank %d of %d, ", cc_cfg.rank, cc_cfg.ranks);
    else if (cc_cfg.rank >= 0)
        put(b, "rank %d, ", cc_cfg.rank);
    put(b, "MPI_Init %.3gs", cc_mpi.init_s);
    for (int c = CC_STALL_MPI_P2P; c <= CC_STALL_MPI_COLLECTIVE; c++)
        put(b, ", %s %.3fs (%llu calls, %llu bytes)", CC_STALL_NAMES[c], g->stall_s[c], g->acquisitions[c],
            g->bytes[c]);
    put(b, "\n");
}

static void write_table(const struct cc_sample *s, const struct cc_result *r) {
    static struct buf b;
    b.len = 0;
    int ok = r->status == 0;
    /* Columns: a few counts up to the target (powers of two and the target). */
    int cols[6], ncol = 0;
    for (int n = 2; n < s->target && ncol < 4; n *= 2)
        cols[ncol++] = n;
    cols[ncol++] = s->target;
    put(&b, "corecast: pid %d, %d cores, %.3gs; predicted speedup up to %d threads", s->pid, s->cores,
        s->elapsed_s, s->target);
    if (ok && r->predicted_cores > 0) {
        put(&b, " on a %d-core machine (", r->predicted_cores);
        put_cell(&b, r->predicted_for, -1);
        put(&b, ")");
    }
    put(&b, "\n");
    put(&b, "%-34s %7s %4s %9s  %-34s", "region", "calls", "thr", "time", "stalls (share of thread time)");
    for (int i = 0; i < ncol; i++) {
        char h[16];
        snprintf(h, sizeof h, "S@%d", cols[i]);
        put(&b, " %6s", h);
    }
    put(&b, " %5s  %s\n", "best", "bottleneck");
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!region_active(g))
            continue;
        char label[2 * CC_NAME_LEN + 8], stalls[96];
        if (!strcmp(g->name, "process"))
            snprintf(label, sizeof label, "process (%s)", g->runtime == CC_RUNTIME_OPENMP ? "openmp" : "pthreads");
        else
            snprintf(label, sizeof label, "%s (%s)", g->name, g->object);
        top_stalls(stalls, sizeof stalls, g);
        put_cell(&b, label, 34);
        put(&b, " %7llu %4d %8.3fs  %-34.34s", g->calls, g->threads, g->wall_s, stalls);
        const struct cc_region_prediction *p = &r->regions[i];
        for (int c = 0; c < ncol; c++) {
            double v = 0;
            int found = 0;
            for (int k = 0; ok && k < p->npred; k++)
                if (p->threads[k] == cols[c]) {
                    v = p->speedup[k];
                    found = 1;
                }
            if (found)
                put(&b, " %6.2f", v);
            else
                put(&b, " %6s", "-");
        }
        if (ok && p->npred) {
            put(&b, " %5d  ", p->preferred);
            put_cell(&b, p->bottleneck[0] ? p->bottleneck : "-", -1);
            put(&b, "\n");
        }
        else
            put(&b, " %5s\n", "-");
        if (ok && p->nnodes > 0) { /* predicted speedup at 1..nnodes nodes of the target machine */
            put(&b, "    nodes:");
            for (int k = 0; k < p->nnodes && k < CC_MAX_NODES; k++)
                put(&b, "%s%d:%.2f", k ? "  " : " ", k + 1, p->node_speedup[k]);
            put(&b, "  preferred %d", p->preferred_nodes);
            if (p->numa_basis[0]) {
                char basis[sizeof p->numa_basis + 1];
                snprintf(basis, sizeof basis, "%.*s", (int)strnlen(p->numa_basis, sizeof p->numa_basis), p->numa_basis);
                put(&b, " (");
                put_cell(&b, basis, -1);
                put(&b, ")");
            }
            put(&b, "\n");
        }
    }
    for (int i = 0; ok && s->steer && i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        const struct cc_region_prediction *p = &r->regions[i];
        if (!strcmp(g->name, "process") || !region_active(g))
            continue;
        if (p->steer_chosen) {
            put(&b, "steering ");
            put_cell(&b, g->name, -1);
            put(&b, ": %d threads (the program's own: %d) after %d steps, measured %+.0f%%\n", p->steer_chosen,
                g->requested, p->steer_steps, 100 * p->steer_gain);
        } else if (p->steer_reason[0]) {
            char why[sizeof p->steer_reason + 1];
            snprintf(why, sizeof why, "%.*s", (int)strnlen(p->steer_reason, sizeof p->steer_reason), p->steer_reason);
            put(&b, "steering ");
            put_cell(&b, g->name, -1);
            put(&b, ": not explored, %d threads kept: ", g->requested);
            put_cell(&b, why, -1);
            put(&b, "\n");
        }
    }
    for (int i = 0; cc_cfg.probe && i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!g->probe_calls || !region_active(g))
            continue;
        put(&b, "probed ");
        put_cell(&b, g->name, -1);
        put(&b, ": %llu calls at", g->probe_calls);
        int sizes = 0, one = 0;
        for (int k = 0; k < g->nhist; k++)
            if (g->hist_probes[k]) {
                put(&b, "%s%d", sizes++ ? "," : " ", g->hist[k].threads);
                one = g->hist[k].threads == 1;
            }
        put(&b, " thread%s (the program's own: %d), estimated cost %+.2g%% of its time\n",
            sizes == 1 && one ? "" : "s", g->requested,
            100 * g->probe_extra_s / (g->wall_s - g->probe_extra_s));
    }
    if ((cc_cfg.steer || cc_cfg.probe) && cc_ompt_on && !cc_ompt_team_control()) {
        put(&b, "%s is not available for ", cc_cfg.steer ? "steering" : "probing");
        put_cell(&b, cc_ompt_runtime(), -1);
        put(&b, " on this CPU architecture: the regions ran at the program's own team sizes\n");
    }
    if (cc_mpi.initialized && s->nregions) /* the process sample is the last */
        mpi_line(&b, &s->regions[s->nregions - 1]);
    if (ok) {
        const char *basis = s->nregions ? r->regions[0].basis : "";
        put(&b, "speedups: ");
        put_cell(&b, basis[0] ? basis : "predicted", -1);
    } else {
        put(&b, "no predictions: ");
        put_cell(&b, r->note[0] ? r->note : "the model was not available", -1);
    }
    put(&b, "\n");
    put(&b, "measured: wall time, per-thread busy and wait times, schedstat");
    for (int i = 0; i < CC_NCTR; i++)
        if (s->counters_measured & (1u << i))
            put(&b, ", %s", CC_COUNTER_NAMES[i]);
    if (s->numa.measured) {
        char src[sizeof s->numa.source + 1];
        snprintf(src, sizeof src, "%.*s", (int)strnlen(s->numa.source, sizeof s->numa.source), s->numa.source);
        put(&b, ", NUMA counters (");
        put_cell(&b, src, -1);
        put(&b, "%s):", s->numa.multiplexed ? ", multiplexed" : "");
        for (int r = 0; r < CC_NUMA_NROLES; r++)
            if (s->numa.measured & (1u << r))
                put(&b, " %s", CC_NUMA_ROLE_NAMES[r]);
    }
    put(&b, "; not available:");
    int k = 0;
    for (int i = 0; i < CC_NCTR; i++)
        if (!(s->counters_measured & (1u << i)))
            put(&b, "%s %s", k++ ? "," : "", CC_COUNTER_NAMES[i]);
    if (!k)
        put(&b, " none");
    put(&b, "\n");
    if (s->overflow)
        put(&b, "corecast: %llu events not recorded (tables full)\n", s->overflow);
    struct cc_load l = cc_load_split();
    if (machine_busy(&l))
        put(&b, "corecast: machine busy: the program's threads waited %.3g s (%.0f%% of their runnable time) "
                "for CPUs other load held; kept out of its contention, but the figures are a busy machine's\n",
            l.other_s, 100 * l.other_s / l.runnable_s);
    put(&b, "corecast: own CPU %.3f s (sampler and model), not counted as the program's\n", cc_own_cpu_s());
    cc_report_write(b.data, b.len);
}

/* A program that started no thread and ran no parallel region: one line, and a summary
 * record saying so (replay shows it as a serial run), rather than silence. */
void cc_report_serial(void) {
    static struct buf b;
    double elapsed = cc_mono_s() - cc_started();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    b.len = 0;
    put(&b, "corecast: pid %d, %.3gs: serial run: no parallel activity (no thread started, no "
            "OpenMP region); nothing to predict\n", (int)getpid(), elapsed);
    if (!cc_cfg.quiet)
        cc_report_write(b.data, b.len);
    if (!cc_cfg.output[0])
        return;
    int fd = open_output();
    if (fd < 0)
        return;
    b.len = 0;
    put(&b, "{\"event\":\"summary\",\"schema\":%d,\"pid\":%d,\"elapsed_s\":%.6g,\"cores\":%d,"
            "\"target\":%d,\"regions\":0,\"serial_run\":true,\"model\":\"not run: serial run\"}\n",
        CC_SAMPLE_SCHEMA, (int)getpid(), elapsed, cores > 0 ? (int)cores : 1, cc_cfg.target);
    if (cc_cfg.rank >= 0) { /* before the closing brace and newline */
        b.len -= 2;
        put_rank(&b);
        put(&b, "}\n");
    }
    if (!write_until(fd, b.data, b.len, cc_mono_s() + OUTPUT_PATIENCE_S))
        cc_warn("could not write the JSON Lines summary to %s", cc_cfg.output);
    close(fd);
}

void cc_report(const struct cc_sample *s, const struct cc_result *r) {
    const char *unmeasured = cc_unmeasured_omp_runtime();
    if (unmeasured) /* never a silent threads-only report for an OpenMP program */
        cc_warn("the OpenMP runtime %s did not start corecast's OMPT tool (OMP_TOOL=disabled, or a runtime "
                "without OMPT): its regions, team sizes and OpenMP waits are not measured, only its threads",
                unmeasured);
    if (!cc_cfg.quiet)
        write_table(s, r);
    write_json(s, r);
}
