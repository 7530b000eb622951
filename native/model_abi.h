/* The interface between the preload library (C) and the embedded model library
 * (cffi, Python).  This file is read by the C compiler and, with its '#' lines other
 * than integer #defines dropped, by cffi's cdef: keep it to plain structs and integer
 * constants. */
#ifndef CORECAST_MODEL_ABI_H
#define CORECAST_MODEL_ABI_H

#include <stdint.h>

#define CC_ABI_VERSION 10
/* Version of the JSON Lines records (CORECAST_OUTPUT, docs/recording.md) that `corecast
 * replay` reads; 1: the records written before they carried "schema".  Same number:
 * corecast.recording.record.SCHEMA. */
#define CC_SAMPLE_SCHEMA 5
#define CC_MAX_REGIONS 128
#define CC_MAX_PRED 64
#define CC_NAME_LEN 96
#define CC_MAX_HIST 16            /* team sizes remembered per region */
#define CC_MAX_NODES 16           /* NUMA nodes counted / predicted */
#define CC_NUMA_JSON 4096

/* Stall categories; their names are in CC_STALL_NAMES (corecast.h) and
 * corecast.recording.abi.STALLS, in this order. */
#define CC_STALL_MUTEX 0
#define CC_STALL_COND 1
#define CC_STALL_PBARRIER 2
#define CC_STALL_RWLOCK 3
#define CC_STALL_SEM 4
#define CC_STALL_CRITICAL 5
#define CC_STALL_ATOMIC 6
#define CC_STALL_OMPLOCK 7
#define CC_STALL_OMPBARRIER 8
#define CC_STALL_IMBALANCE 9
#define CC_STALL_RUNQUEUE 10
#define CC_STALL_MPI_P2P 11        /* MPI point-to-point waits (shims/mpi.c) */
#define CC_STALL_MPI_COLLECTIVE 12 /* MPI collectives and their completions */
#define CC_NSTALL 13

/* Process-wide counters read by the sampler; a value is valid only where its bit is set
 * in cc_sample.counters_measured. */
#define CC_CTR_TASK_CLOCK 0
#define CC_CTR_CTX_SWITCHES 1
#define CC_CTR_MIGRATIONS 2
#define CC_CTR_PAGE_FAULTS 3
#define CC_CTR_CYCLES 4
#define CC_CTR_INSTRUCTIONS 5
#define CC_CTR_LLC_MISSES 6
#define CC_CTR_BACKEND_STALLS 7
#define CC_NCTR 8

/* Memory-traffic counters for the NUMA model (Cho, Oh and Egger, "Online Scalability
 * Characterization of Data-Parallel Programs on Many Cores", PACT 2016); bit i of
 * cc_numa_counts.measured says role i was counted. */
#define CC_NUMA_CYCLES 0          /* core cycles of the program's threads */
#define CC_NUMA_LLC 1             /* LLC misses (all memory nodes together) */
#define CC_NUMA_BUS 2             /* DRAM requests from the program's CPUs, per memory node */
#define CC_NUMA_MCT 3             /* memory-controller requests, per memory node */
#define CC_NUMA_NROLES 4

/* The NUMA event plan: `corecast run` (corecast.runtime.numa_events) chooses the events
 * and the preload library (numa.c) opens them; the plan crosses the program's exec as
 * this struct's bytes, the header and the n events used, in CORECAST_NUMA_EVENTS as
 * "v2:" and their hex (native byte order: both ends run on this machine).  Fixed-width
 * fields, no padding; corecast.recording.abi.NumaPlan is its Python copy. */
#define CC_NUMA_PLAN_VERSION 2
#define CC_NUMA_MAX_EVENTS 256
struct cc_numa_event {
    uint64_t config;          /* perf_event_attr.config */
    uint64_t config1;         /* perf_event_attr.config1 */
    uint32_t type;            /* perf_event_attr.type: the PMU's sysfs type */
    uint32_t role;            /* CC_NUMA_* */
    int32_t node;             /* memory node the count belongs to; -1: none */
    int32_t cpu;              /* -1: the program's threads; >= 0: the CPU an uncore unit is read on */
};

struct cc_numa_plan {
    uint32_t version;         /* CC_NUMA_PLAN_VERSION */
    uint32_t n;               /* events used, at most CC_NUMA_MAX_EVENTS */
    char source[64];          /* the event table, NUL-terminated, e.g. "amd-fam15h" */
    struct cc_numa_event ev[256];
};

#define CC_RUNTIME_OPENMP 0
#define CC_RUNTIME_PTHREADS 1

/* A region's totals at one team size (cumulative since start); stalls per team size
 * are attributed by the model from window to window. */
struct cc_team_stats {
    int threads;
    unsigned long long calls;
    double wall_s;
};

struct cc_region_sample {
    char name[96];            /* outlined function, or "process" */
    char object[96];          /* object file that holds it */
    int runtime;              /* CC_RUNTIME_* */
    int threads;              /* largest team / thread count seen */
    int nested;               /* 1 if it ran inside another region */
    unsigned long long calls;
    double wall_s;            /* summed wall time of all calls */
    double busy_s;            /* summed per-thread busy time */
    double serial_s;          /* critical/atomic/lock hold time and single work */
    double hold_s[13];        /* hold time per category (serial_s = sum + single_s) */
    double single_s;          /* single blocks */
    double cpu_s;             /* pthreads: summed CPU time of the threads */
    double stall_s[13];       /* per category, summed over threads */
    unsigned long long acquisitions[13];
    unsigned long long contended[13];
    unsigned long long loop_calls; /* GOMP_loop_*_start/next calls */
    double hold_sampled_s;    /* lock hold time sampled on contended acquisitions */
    unsigned long long hold_samples;
    int requested;            /* largest team the program asked for (its own count) */
    int steered_to;           /* team size steering imposes now (0: none) */
    int nhist;
    struct cc_team_stats hist[16];
    double runq_other_s;      /* process: run-queue wait other load caused (not in stall_s) */
    int team_threads;         /* process: threads that did its work (sample.c team_of); 0: unknown */
    /* CORECAST_PROBE: calls run at a smaller team than the program's, their measured
     * extra time (probe wall minus the mean call at the program's size), the expected
     * extra reserved at their start (the cost cap's side), and per hist[] entry how many
     * of its calls were probes. */
    unsigned long long probe_calls;
    double probe_extra_s;
    double probe_reserved_s;
    unsigned long long hist_probes[16];
    /* Payload bytes the calls of each category moved (MPI: sent plus received, as the
     * arguments describe them); 0 for categories that move none. */
    unsigned long long bytes[13];
    /* ABI 8: explicit OpenMP tasks run in it, the thread time in them (outermost task per
     * thread: nested tasks and the task's own waits inside it), and the thread time spent
     * creating them (GOMP_task, less tasks it ran at once; 0 on the OMPT path). */
    unsigned long long tasks;
    double task_s;
    double task_spawn_s;
    /* ABI 9: of the tasks created, those with dependences, and the taskwaits and taskgroup
     * ends outside any task (libgomp's entry points, or OMPT's task creation and waits). */
    unsigned long long task_depend;
    unsigned long long taskwaits;
    /* ABI 10: of the tasks created and the time creating them, those a single block made
     * outside any task (GOMP_single_start's block until the next barrier, or OMPT's
     * single_executor; OMPT: the time is 0, as task_spawn_s). */
    unsigned long long single_tasks;
    double single_task_spawn_s;
};

/* Cumulative since the sampler opened the events (CORECAST_NUMA_EVENTS); uncore counts are
 * machine-wide.  Counts of events the PMU multiplexed are already scaled by
 * time_enabled / time_running.  The topology fields are filled even without a PMU. */
struct cc_numa_counts {
    int nodes;                /* NUMA nodes of this machine (sysfs), at most CC_MAX_NODES */
    int node_cpus[16];        /* online CPUs per node */
    unsigned int measured;    /* bit CC_NUMA_*: that role was counted */
    int multiplexed;          /* 1: some event was counted only part of the time */
    double cycles;
    double llc_misses;
    double bus[16];           /* per memory node */
    double mct[16];           /* per memory node */
    char source[64];          /* the event table used, e.g. "amd-fam15h"; "" if none */
};

/* A sample and its result hold ``nregions`` regions: the preload library maps them with
 * room for those (and a few more), not for CC_MAX_REGIONS (1 MB, counted toward a program's
 * locked-memory limit), so the model reads and writes no region at or past nregions. */
struct cc_sample {
    int abi;                  /* CC_ABI_VERSION */
    int pid;
    int cores;                /* online CPUs of this machine */
    int cpus_allowed;         /* CPUs the process may run on (sched_getaffinity) */
    int target;               /* predict up to this count */
    int final;                /* 1 at exit, 0 at a window end */
    int steer;                /* 1: the model may choose each region's team size */
    int nregions;
    double elapsed_s;         /* since the process (image) started */
    double active_s;          /* since the first parallel activity */
    double window_s;
    unsigned int counters_measured; /* bit i: counters[i] was measured */
    double counters[8];
    unsigned long long overflow; /* events not recorded (tables full) */
    struct cc_numa_counts numa;
    struct cc_region_sample regions[128];
};

struct cc_region_prediction {
    int npred;
    int threads[64];
    double speedup[64];
    double low[64];
    double high[64];
    int fastest;              /* fewest threads within 1% of the best speedup; 0: none (no evidence) */
    char basis[96];           /* how it was predicted, e.g. "bound: Amdahl/work-span" */
    char fitted[96];          /* comma-separated inputs the model fitted, not measured */
    char bottleneck[32];      /* stall category expected to dominate at the target */
    int next_threads;         /* steering: team size for the next calls (0: unchanged) */
    int steer_chosen;         /* steering: converged count (0: none yet) */
    double steer_gain;        /* steering: measured perf(chosen) / perf(own count) - 1 */
    /* Node counts on the target machine (CORECAST_TARGET_MACHINE); nnodes 0: none. */
    int nnodes;
    int node_cores[16];       /* cores at 1..nnodes nodes */
    double node_speedup[16];  /* relative to the region alone on one node */
    int fastest_nodes;
    char numa_basis[96];      /* e.g. "two-level queue, fitted: bus,llc,mct" */
    /* JSON object members for the region's event, written by the model, e.g.
     * "predicted_nodes":[...],"fastest_nodes":4,"numa":{...}; "" if none. */
    char numa_json[4096];
    /* Steering (ABI 5): windows run at a count other than the program's own while
     * exploring, and why a steered region was never explored ("" once it was). */
    int steer_steps;
    char steer_reason[48];
};

struct cc_result {
    int status;               /* 0 ok, nonzero: model failed, see note */
    char note[160];
    int predicted_cores;      /* cores of the machine the predictions are for */
    char predicted_for[64];   /* "target", or "target machine NAME" */
    /* ABI 7: the machine calibration the predictions used (corecast calibrate), as the JSON
     * object its file holds, for the summary record; "" if none. */
    char machine_json[512];
    struct cc_region_prediction regions[128];
};

#endif
