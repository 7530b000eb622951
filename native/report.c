/* The report at exit: a short table on the program's original stderr (never stdout),
 * rendered from the sample and the model's result, then the JSON Lines (jsonl.c). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "corecast.h"
#include "lazy.h"
#include "omp_call.h"
#include "report.h"
#include "report_columns.h"
#include "sample.h"
#include "settle.h"
#include "text.h"

/* The top stall categories of a region as "imbalance 12%, critical 3%": whole
 * categories only, as many as fit the column; where one is left out, as many as fit
 * before ", ..." (one cell), so that no share is cut off behind its name
 * (views/columns.py's stall_cell). */
static void top_stalls(char *out, size_t n, const struct cc_region_sample *g) {
    /* Shares of the thread time: the team times the wall time, or, where threads beyond
     * the region's team worked or waited too (a process's pool, team sizes that varied),
     * the time they were seen to, so no share passes 100%. */
    double total = g->threads > 0 ? g->threads * g->wall_s : g->wall_s, waited = 0;
    for (int c = 0; c < CC_NSTALL; c++)
        waited += g->stall_s[c];
    if (g->busy_s > total) /* a region's busy time holds its waits; a process's is its CPU time */
        total = g->busy_s;
    if (waited > total)
        total = waited;
    int used[CC_NSTALL] = {0};
    size_t ends[CC_STALLS_SHOWN + 1]; /* the text's length after each part kept */
    int kept = 0;
    out[0] = 0;
    size_t len = 0;
    for (int k = 0; k < CC_STALLS_SHOWN; k++) {
        int best = -1;
        for (int c = 0; c < CC_NSTALL; c++)
            if (!used[c] && g->stall_s[c] > 0 && (best < 0 || g->stall_s[c] > g->stall_s[best]))
                best = c;
        if (best < 0 || total <= 0 || g->stall_s[best] / total < CC_STALL_MIN_SHARE)
            break;
        used[best] = 1;
        char part[64];
        int plen = snprintf(part, sizeof part, "%s%s %.0f%%", kept ? ", " : "", CC_STALL_NAMES[best],
                            100 * g->stall_s[best] / total);
        if (plen >= 0 && len + (size_t)plen <= CC_COL_STALLS && len + (size_t)plen < n) {
            memcpy(out + len, part, (size_t)plen + 1);
            len += (size_t)plen;
            ends[kept++] = len;
            continue;
        }
        while (kept > 0 && ends[kept - 1] + 3 > CC_COL_STALLS) /* ", " and the ellipsis */
            kept--;
        len = kept ? ends[kept - 1] : 0;
        snprintf(out + len, len < n ? n - len : 0, "%s\xe2\x80\xa6", kept ? ", " : "");
        return;
    }
    if (!out[0])
        snprintf(out, n, "-");
}

/* An MPI rank's waits, calls and bytes: what `corecast merge` combines across ranks. */
static void mpi_line(struct cc_buf *b, const struct cc_region_sample *g) {
    cc_put(b, "mpi: ");
    if (cc_cfg.rank >= 0 && cc_cfg.ranks > 0)
        cc_put(b, "rank %d of %d, ", cc_cfg.rank, cc_cfg.ranks);
    else if (cc_cfg.rank >= 0)
        cc_put(b, "rank %d, ", cc_cfg.rank);
    cc_put(b, "MPI_Init %.3gs", cc_mpi.init_s);
    for (int c = CC_STALL_MPI_P2P; c <= CC_STALL_MPI_COLLECTIVE; c++)
        cc_put(b, ", %s %.3fs (%llu calls, %llu bytes)", CC_STALL_NAMES[c], g->stall_s[c], g->acquisitions[c],
            g->bytes[c]);
    cc_put(b, "\n");
}

/* Whether an OpenMP region ran: steering and probing act on nothing else. */
static int openmp_regions(const struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++)
        if (strcmp(s->regions[i].name, "process") && cc_region_active(&s->regions[i]))
            return 1;
    return 0;
}

/* A region's row label: "name (object)", or the process's "process (runtime)". */
static void region_label(char *dst, size_t n, const struct cc_region_sample *g) {
    if (!strcmp(g->name, "process"))
        snprintf(dst, n, "process (%s)", g->runtime == CC_RUNTIME_OPENMP ? "openmp" : "pthreads");
    else
        snprintf(dst, n, "%s (%s)", g->name, g->object);
}

/* The cells ``s`` takes printed: as cc_printable_cell prints it (one a character, a '?'
 * for a byte that starts none), counted. */
static int cells(const char *s) {
    char shown[2 * CC_NAME_LEN + 8];
    int n = 0;
    cc_printable_cell(shown, sizeof shown, s, -1);
    for (const unsigned char *p = (const unsigned char *)shown; *p; p++)
        n += (*p & 0xC0) != 0x80;
    return n;
}

/* Whether any region counted a section of the kinds settle.c stops counting: a program
 * with none read "critical sections, atomics and OpenMP locks not counted for 0.71 s"
 * after steering settled (session user44), which said nothing true about it. */
static int took_sections(const struct cc_sample *s) {
    for (int i = 0; i < s->nregions; i++)
        for (int c = 0; c < CC_NSETTLE; c++)
            if (s->regions[i].acquisitions[cc_settle_cats[c]])
                return 1;
    return 0;
}

static void write_table(const struct cc_sample *s, const struct cc_result *r) {
    struct cc_buf *b = cc_exit_buf();
    b->len = 0;
    int ok = r->status == 0;
    /* Columns: a few counts up to the target (powers of two and the target). */
    int cols[CC_COL_SPEEDUPS + 1], ncol = 0;
    for (int n = 2; n < s->target && ncol < CC_COL_SPEEDUPS; n *= 2)
        cols[ncol++] = n;
    cols[ncol++] = s->target;
    cc_put(b, "corecast: pid %d, %d cores, %.3gs; predicted speedup up to %d thread%s", s->pid, s->cores,
        s->elapsed_s, s->target, s->target == 1 ? "" : "s");
    if (ok && r->predicted_cores > 0) {
        cc_put(b, " on %s %d-core machine (", (r->predicted_cores == 8 || r->predicted_cores == 11 || r->predicted_cores == 18 || (r->predicted_cores >= 80 && r->predicted_cores < 90) || (r->predicted_cores >= 800 && r->predicted_cores < 900) || (r->predicted_cores >= 8000 && r->predicted_cores < 9000) || (r->predicted_cores >= 11000 && r->predicted_cores < 12000) || (r->predicted_cores >= 18000 && r->predicted_cores < 19000)) ? "an" : "a", r->predicted_cores);
        cc_put_cell(b, r->predicted_for, -1);
        cc_put(b, ")");
    }
    cc_put(b, "\n");
    /* The region column widens to the longest label, up to CC_COL_LABEL_MAX (views/columns.py). */
    int width = CC_COL_LABEL;
    for (int i = 0; i < s->nregions; i++) {
        char label[2 * CC_NAME_LEN + 8];
        if (!cc_region_active(&s->regions[i]))
            continue;
        region_label(label, sizeof label, &s->regions[i]);
        int w = cells(label);
        if (w > width)
            width = w < CC_COL_LABEL_MAX ? w : CC_COL_LABEL_MAX;
    }
    cc_put(b, CC_COL_HEADING, width, "region", "calls", "thr", "time", CC_COL_STALLS_HEADING);
    for (int i = 0; i < ncol; i++) {
        char h[16];
        snprintf(h, sizeof h, "S@%d", cols[i]);
        cc_put(b, CC_COL_SPEEDUP_NONE, h);
    }
    char band[24];
    snprintf(band, sizeof band, "band@%d", s->target); /* the target's low-high: what the S@ may be */
    cc_put(b, CC_COL_TAIL_HEADING "\n", band, CC_COL_FASTEST_HEADING, "bottleneck");
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!cc_region_active(g))
            continue;
        char label[2 * CC_NAME_LEN + 8], stalls[96];
        region_label(label, sizeof label, g);
        top_stalls(stalls, sizeof stalls, g);
        cc_put_cell(b, label, width);
        cc_put(b, CC_COL_COUNTS, g->calls, g->threads, g->wall_s);
        cc_put_cell(b, stalls, CC_COL_STALLS);
        const struct cc_region_prediction *p = &r->regions[i];
        for (int c = 0; c < ncol; c++) {
            double v = 0;
            int found = 0;
            for (int k = 0; ok && k < p->npred; k++)
                if (p->threads[k] == cols[c]) {
                    v = p->speedup[k];
                    found = 1;
                }
            if (found && v > 0 && v < CC_COL_SPEEDUP_TINY_BELOW) /* views/columns.py speedup_cell: never 0.00 */
                cc_put(b, CC_COL_SPEEDUP_NONE, CC_COL_SPEEDUP_TINY_CELL);
            else if (found && v > 0 && v < CC_COL_SPEEDUP_SMALL_BELOW)
                cc_put(b, CC_COL_SPEEDUP_SMALL, v);
            else if (found)
                cc_put(b, CC_COL_SPEEDUP, v);
            else
                cc_put(b, CC_COL_SPEEDUP_NONE, "-");
        }
        int at = -1;
        for (int k = 0; ok && k < p->npred; k++)
            if (p->threads[k] == s->target)
                at = k;
        if (at >= 0)
            cc_put(b, CC_COL_BAND, CC_COL_BAND_DECIMALS(p->low[at]), p->low[at], CC_COL_BAND_DECIMALS(p->high[at]),
                   p->high[at]);
        else
            cc_put(b, CC_COL_BAND_NONE, "-");
        if (ok && p->npred) {
            if (p->fastest > 0)
                cc_put(b, CC_COL_FASTEST, p->fastest);
            else /* the model names no count: the sample shows nothing of how the work divides */
                cc_put(b, CC_COL_FASTEST_NONE "  ", CC_NO_EVIDENCE_CELL);
            cc_put_cell(b, p->bottleneck[0] ? p->bottleneck : "-", -1);
            cc_put(b, "\n");
        }
        else
            cc_put(b, CC_COL_FASTEST_NONE "\n", "-");
        if (ok && p->nnodes > 0) { /* predicted speedup at 1..nnodes nodes of the target machine */
            cc_put(b, "    nodes:");
            for (int k = 0; k < p->nnodes && k < CC_MAX_NODES; k++)
                cc_put(b, "%s%d:%.2f", k ? "  " : " ", k + 1, p->node_speedup[k]);
            cc_put(b, "  fastest %d", p->fastest_nodes);
            if (p->numa_basis[0]) {
                char basis[sizeof p->numa_basis + 1];
                snprintf(basis, sizeof basis, "%.*s", (int)strnlen(p->numa_basis, sizeof p->numa_basis), p->numa_basis);
                cc_put(b, " (");
                cc_put_cell(b, basis, -1);
                cc_put(b, ")");
            }
            cc_put(b, "\n");
        }
    }
    for (int i = 0; ok && i < s->nregions; i++) { /* why a row names no fastest count */
        const struct cc_region_sample *g = &s->regions[i];
        if (!cc_region_active(g) || !r->regions[i].npred || r->regions[i].fastest > 0)
            continue;
        char name[4 * CC_NAME_LEN + 16];
        cc_printable_cell(name, sizeof name, strcmp(g->name, "process") ? g->name : "the process", -1);
        cc_put(b, CC_NO_EVIDENCE_LINE, name);
    }
    for (int i = 0; ok && s->steer && i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        const struct cc_region_prediction *p = &r->regions[i];
        if (!strcmp(g->name, "process") || !cc_region_active(g))
            continue;
        char why[sizeof p->steer_reason + 1];
        snprintf(why, sizeof why, "%.*s", (int)strnlen(p->steer_reason, sizeof p->steer_reason), p->steer_reason);
        int own = cc_region_own(g);
        if (!p->steer_chosen && !why[0] && (!g->steered_to || g->steered_to == own))
            continue; /* nothing chosen, refused or in force: nothing to say (as before) */
        cc_put(b, "steering ");
        cc_put_cell(b, g->name, -1);
        cc_put(b, ": ");
        cc_put_steering(b, own, g->steered_to, p->steer_chosen, p->steer_steps, p->steer_gain, why);
        cc_put(b, "\n");
    }
    if (ok && cc_settle_uncounted_s(s->elapsed_s) > 0 && took_sections(s))
        cc_put(b, "corecast: critical sections, atomics and OpenMP locks not counted for %.2f s of the run, once %s; "
                "their counts there are credited at each region's rate per call at its %s count "
                "(CORECAST_KEEP_COUNTING=1 counts them all)\n", cc_settle_uncounted_s(s->elapsed_s),
               s->steer ? "steering had settled" : "counting them cost more than " CC_COUNT_SHARE_TEXT " of the program's CPU time",
               s->steer ? "settled" : "own");
    for (int i = 0; ok && i < s->nregions; i++) /* no rate to credit them at: said, not guessed */
        if (cc_sample_uncredited_calls(s, &s->regions[i])) {
            cc_put(b, "corecast: ");
            cc_put_cell(b, s->regions[i].name, -1);
            cc_put(b, ": the critical sections, atomics and OpenMP locks of %llu of its %llu calls were not counted "
                   "(or in part) and are not in its counts: it ran first uncounted and the program ended before its "
                   "calls gave a rate to credit them at\n", cc_sample_uncredited_calls(s, &s->regions[i]),
                   s->regions[i].calls);
        }
    for (int i = 0; cc_cfg.probe && i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        if (!g->probe_calls || !cc_region_active(g))
            continue;
        cc_put(b, "probed ");
        cc_put_cell(b, g->name, -1);
        cc_put(b, ": %llu calls at", g->probe_calls);
        int sizes = 0, one = 0;
        for (int k = 0; k < g->nhist; k++)
            if (g->hist_probes[k]) {
                cc_put(b, "%s%d", sizes++ ? "," : " ", g->hist[k].threads);
                one = g->hist[k].threads == 1;
            }
        cc_put(b, " thread%s (the program's own: %d), ", sizes == 1 && one ? "" : "s", cc_region_own(g));
        cc_put_cost(b, 100 * g->probe_extra_s / (g->wall_s - g->probe_extra_s));
        cc_put(b, " of its time\n");
    }
    if ((cc_cfg.steer || cc_cfg.probe) && cc_ompt_on && !cc_ompt_team_control()) {
        cc_put(b, "%s is not available for ", cc_cfg.steer ? "steering" : "probing");
        cc_put_cell(b, cc_ompt_runtime(), -1);
        cc_put(b, " on this CPU architecture: the regions ran at the program's own team sizes\n");
    }
    if ((cc_cfg.steer || cc_cfg.probe) && s->nregions && !openmp_regions(s)) { /* it had nothing to act on */
        const struct cc_region_sample *proc = &s->regions[s->nregions - 1];
        cc_put(b, "%s: no OpenMP region to %s%s\n", cc_cfg.steer ? "steering" : "probing",
               cc_cfg.steer ? "steer" : "probe", proc->runtime == CC_RUNTIME_PTHREADS ? " (pthreads only)" : "");
    }
    if (cc_mpi.initialized && s->nregions) /* the process sample is the last */
        mpi_line(b, &s->regions[s->nregions - 1]);
    if (ok) {
        const char *basis = s->nregions ? r->regions[0].basis : "";
        cc_put(b, "speedups: ");
        cc_put_cell(b, basis[0] ? basis : "predicted", -1);
    } else {
        cc_put(b, "no predictions: ");
        cc_put_cell(b, r->note[0] ? r->note : "the model was not available", -1);
    }
    cc_put(b, "\n");
    cc_put(b, "measured: wall time, per-thread busy and wait times, schedstat");
    for (int i = 0; i < CC_NCTR; i++)
        if (s->counters_measured & (1u << i))
            cc_put(b, ", %s", CC_COUNTER_NAMES[i]);
    if (s->numa.measured) {
        char src[sizeof s->numa.source + 1];
        snprintf(src, sizeof src, "%.*s", (int)strnlen(s->numa.source, sizeof s->numa.source), s->numa.source);
        cc_put(b, ", NUMA counters (");
        cc_put_cell(b, src, -1);
        cc_put(b, "%s):", s->numa.multiplexed ? ", multiplexed" : "");
        for (int r = 0; r < CC_NUMA_NROLES; r++)
            if (s->numa.measured & (1u << r))
                cc_put(b, " %s", CC_NUMA_ROLE_NAMES[r]);
    }
    cc_put(b, "; not available:");
    int k = 0;
    for (int i = 0; i < CC_NCTR; i++)
        if (!(s->counters_measured & (1u << i)))
            cc_put(b, "%s %s", k++ ? "," : "", CC_COUNTER_NAMES[i]);
    if (!k)
        cc_put(b, " none");
    cc_put(b, "\n");
    if (s->overflow)
        cc_put(b, "corecast: %llu events not recorded (tables full%s)\n", s->overflow,
               __atomic_load_n(&cc_map_refused, __ATOMIC_RELAXED) ? ", or their memory refused" : "");
    struct cc_load l = cc_load_split();
    if (cc_machine_busy(&l))
        cc_put(b, "corecast: machine busy: the program's threads waited %.3g s (%.0f%% of their runnable time) "
                "for CPUs other load held; kept out of its contention, but the figures are a busy machine's\n",
            l.other_s, 100 * l.other_s / l.runnable_s);
    /* A pool of worker processes beside a few threads (Python's multiprocessing) read as a
     * process with no gain from cores, its workers' CPU nowhere in sight (session user44). */
    double children = cc_children_cpu_s();
    if (children > 0)
        cc_put(b, "corecast: " CC_CHILDREN_LINE "\n", children);
    cc_put(b, "corecast: own CPU %.3f s (sampler and model), not counted as the program's\n", cc_own_cpu_s());
    cc_report_write(b->data, b->len);
}

/* A program that started no thread and ran no parallel region: one line, and a summary
 * record saying so (replay shows it as a serial run), rather than silence.  Its waited-for
 * children's CPU time (getrusage, which survives the launcher's exec) changes the line:
 * `make -j2`, a forking worker pool or `xargs -P` ran side by side in processes, and "no
 * parallel activity" under them read as a measured fact that was false (session user44). */
void cc_report_serial(void) {
    struct cc_buf *b = cc_exit_buf();
    double elapsed = cc_mono_s() - cc_started();
    double children = cc_children_cpu_s();
    b->len = 0;
    cc_put(b, "corecast: pid %d, %.3gs: ", (int)getpid(), elapsed);
    if (children > 0)
        cc_put(b, CC_SERIAL_RUN_CHILDREN "\n", children);
    else
        cc_put(b, CC_SERIAL_RUN "\n");
    if (!cc_cfg.quiet)
        cc_report_write(b->data, b->len);
    cc_write_json_serial(elapsed, children);
}

/* What a quiet exit with no output still says: the warnings, never the table or records. */
void cc_report_unread(void) {
    cc_config_notes();
    if ((cc_cfg.steer || cc_cfg.probe) && __atomic_load_n(&cc_exact_teams, __ATOMIC_RELAXED))
        cc_warn("%s changed no team: the program asks for exact team sizes (OMP_DYNAMIC=false or omp_set_dynamic(0))",
                cc_cfg.steer ? "steering" : "probing");
    const char *unmeasured = cc_unmeasured_omp_runtime();
    const char *aside = cc_ompt_aside_for();
    if (unmeasured && aside[0]) /* the runtime starts one tool: the user's */
        cc_warn("the OpenMP runtime %s did not start corecast's OMPT tool (it stepped aside for the tool in "
                "OMP_TOOL_LIBRARIES=%.160s): its regions, team sizes and OpenMP waits are not measured, only its threads",
                unmeasured, aside);
    else if (unmeasured) /* never a silent threads-only report for an OpenMP program */
        cc_warn("the OpenMP runtime %s did not start corecast's OMPT tool (OMP_TOOL=disabled, or a runtime "
                "without OMPT): its regions, team sizes and OpenMP waits are not measured, only its threads",
                unmeasured);
}

void cc_report(const struct cc_sample *s, const struct cc_result *r) {
    cc_report_unread();
    if (!cc_cfg.quiet)
        write_table(s, r);
    cc_write_json(s, r);
}
