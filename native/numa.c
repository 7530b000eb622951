/* Memory-traffic counters for the NUMA model (Cho, Oh and Egger, "Online Scalability
 * Characterization of Data-Parallel Programs on Many Cores", PACT 2016) and the
 * machine's NUMA topology.
 *
 * The launcher plans the events (corecast/runtime/numa_events.py: tables by CPU family)
 * and passes them in CORECAST_NUMA_EVENTS as struct cc_numa_plan (model_abi.h), its
 * bytes in hex (numa_plan.c decodes and checks them).  Each event has a role (cycles,
 * llc, bus or mct: CC_NUMA_*), the memory node its count belongs to (-1: none), the
 * perf_event_attr type/config/config1, and a CPU: -1 for an event of the program's
 * threads (inherited by the threads it creates), else the CPU an uncore unit is read on.
 * A value that is not such a plan is ignored with one warning.  An event that cannot be
 * opened or has not run leaves its role unmeasured: values are never made up.  The
 * kernel multiplexes events beyond the PMU's counters (the paper's sub-samples); their
 * counts are scaled by time enabled / time running and ``multiplexed`` is set.
 *
 * cc_numa_open runs where the sampler opens its counters (the first active thread, so
 * inherited events follow the threads it creates), cc_numa_read on the sampler thread (and
 * at exit where there is none): no FILE streams, no malloc, the program's errno kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corecast.h"

const char *const CC_NUMA_ROLE_NAMES[CC_NUMA_NROLES] = {"cycles", "llc", "bus", "mct"};

static struct cc_numa_plan plan; /* plan.n events, plan.source */
/* Per event: -1 not open (failed), -2 not counted here (another node's unit). */
static int fds[CC_NUMA_MAX_EVENTS];
static int parsed;   /* CORECAST_NUMA_EVENTS read: once per image, kept across fork */
static int topo_read;
static int topo_nodes, topo_cpus[CC_MAX_NODES];
static cpu_set_t topo_set[CC_MAX_NODES];
static int ready;    /* events opened (or tried): cc_numa_read may look */
static int opened;   /* how many of them: once per process, inherited by every thread */
static int moved;    /* the sampler's table holds them, the program's no longer (counters.c) */

/* ---- topology ------------------------------------------------------------------------ */
static int read_text(const char *path, char *buf, size_t n) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t k = read(fd, buf, n - 1);
    close(fd);
    if (k < 0)
        return -1;
    buf[k] = 0;
    return (int)k;
}

/* "0-3,8-11\n" -> set; -1 if malformed.  CPUs beyond CPU_SETSIZE are left out. */
static int parse_cpulist(const char *s, cpu_set_t *set) {
    CPU_ZERO(set);
    while (*s && *s != '\n') {
        char *end;
        long lo = strtol(s, &end, 10), hi = lo;
        if (end == s || lo < 0)
            return -1;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            if (end == s + 1 || hi < lo)
                return -1;
            s = end;
        }
        for (long c = lo; c <= hi && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, set);
        if (*s == ',')
            s++;
        else if (*s && *s != '\n')
            return -1;
    }
    return 0;
}

/* Nodes 0..CC_MAX_NODES-1 from sysfs with their online CPUs; a machine that shows no
 * node information is one node holding every online CPU. */
static void read_topology(void) {
    char buf[4096], path[96];
    cpu_set_t online;
    int have_online = read_text("/sys/devices/system/cpu/online", buf, sizeof buf) > 0 &&
                      parse_cpulist(buf, &online) == 0;
    topo_nodes = 0;
    for (int n = 0; n < CC_MAX_NODES; n++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", n);
        topo_cpus[n] = 0;
        CPU_ZERO(&topo_set[n]);
        if (read_text(path, buf, sizeof buf) < 0 || parse_cpulist(buf, &topo_set[n]) != 0)
            continue;
        if (have_online)
            CPU_AND(&topo_set[n], &topo_set[n], &online);
        topo_cpus[n] = CPU_COUNT(&topo_set[n]);
        topo_nodes = n + 1;
    }
    if (topo_nodes == 0) {
        topo_nodes = 1;
        if (have_online) {
            topo_set[0] = online;
            topo_cpus[0] = CPU_COUNT(&online);
        } else {
            long k = sysconf(_SC_NPROCESSORS_ONLN);
            topo_cpus[0] = k > 0 ? (int)k : 1;
            for (int c = 0; c < topo_cpus[0] && c < CPU_SETSIZE; c++)
                CPU_SET(c, &topo_set[0]);
        }
    }
}

static int node_of_cpu(int cpu) {
    for (int n = 0; n < topo_nodes; n++)
        if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &topo_set[n]))
            return n;
    return -1;
}

/* ---- counting ------------------------------------------------------------------------ */
static int open_event(const struct cc_numa_event *e) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = e->type;
    a.config = e->config;
    a.config1 = e->config1;
    a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    int pid = -1;
    if (e->cpu < 0) {
        /* The program's threads, like the sampler's hardware counters. */
        pid = 0;
        a.inherit = 1;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
    } /* else: an uncore unit; those PMUs refuse the exclude_* bits */
    return (int)syscall(SYS_perf_event_open, &a, pid, e->cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* LLC and DRAM-request units of nodes the program cannot run on count other programs:
 * left out.  Memory controllers serve every node: all counted. */
static int counts_here(const struct cc_numa_event *e, const cpu_set_t *allowed) {
    if (e->cpu < 0 || e->role == CC_NUMA_MCT || !allowed)
        return 1;
    int n = node_of_cpu(e->cpu);
    if (n < 0)
        return 1;
    cpu_set_t both;
    CPU_AND(&both, &topo_set[n], allowed);
    return CPU_COUNT(&both) > 0;
}

void cc_numa_topology(void) {
    if (!topo_read) {
        read_topology();
        topo_read = 1;
    }
}

void cc_numa_open(void) {
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    cc_numa_topology();
    if (!parsed) {
        parsed = 1;
        const char *v = getenv(CC_ENV_NUMA_EVENTS);
        const char *bad = v && *v ? cc_numa_plan_decode(v, &plan) : NULL;
        if (bad) {
            cc_warn("CORECAST_NUMA_EVENTS is not a NUMA event plan this library reads (%s); "
                    "no NUMA counters",
                    bad);
            plan.n = 0;
            plan.source[0] = 0;
        }
    }
    cpu_set_t allowed;
    int have_allowed = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    for (uint32_t i = 0; i < plan.n; i++) {
        fds[i] = counts_here(&plan.ev[i], have_allowed ? &allowed : NULL) ? open_event(&plan.ev[i]) : -2;
        opened += fds[i] >= 0;
    }
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    errno = saved;
}

void cc_numa_moved(void) {
    for (uint32_t i = 0; i < plan.n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    moved = 1;
}

int cc_numa_fds(int *out, int max) {
    int n = 0;
    for (uint32_t i = 0; i < plan.n && n < max; i++)
        if (fds[i] >= 0)
            out[n++] = fds[i];
    return n;
}

void cc_numa_read(struct cc_numa_counts *o) {
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return; /* nodes 0: not known yet */
    int here = !moved || cc_own_table_here(); /* else the events are unread (the sampler's) */
    int saved = errno;
    o->nodes = topo_nodes;
    for (int n = 0; n < CC_MAX_NODES; n++)
        o->node_cpus[n] = n < topo_nodes ? topo_cpus[n] : 0;
    memcpy(o->source, plan.source, sizeof o->source);
    double total[CC_NUMA_NROLES] = {0}, per_node[CC_NUMA_NROLES][CC_MAX_NODES];
    memset(per_node, 0, sizeof per_node);
    int planned[CC_NUMA_NROLES] = {0}, failed[CC_NUMA_NROLES] = {0}, scaled[CC_NUMA_NROLES] = {0};
    for (uint32_t i = 0; i < plan.n; i++) {
        const struct cc_numa_event *e = &plan.ev[i];
        if (fds[i] == -2 || !here)
            continue;
        planned[e->role]++;
        uint64_t v[3]; /* value, time enabled, time running */
        if (fds[i] < 0 || read(fds[i], v, sizeof v) != (ssize_t)sizeof v || v[2] == 0) {
            failed[e->role] = 1;
            continue;
        }
        double x = (double)v[0];
        if (v[2] < v[1]) {
            x *= (double)v[1] / (double)v[2];
            scaled[e->role] = 1;
        }
        total[e->role] += x;
        if (e->node >= 0)
            per_node[e->role][e->node] += x;
    }
    o->measured = 0;
    o->multiplexed = 0;
    for (int r = 0; r < CC_NUMA_NROLES; r++)
        if (planned[r] && !failed[r]) {
            o->measured |= 1u << r;
            o->multiplexed |= scaled[r];
        }
    if (o->measured & (1u << CC_NUMA_CYCLES))
        o->cycles = total[CC_NUMA_CYCLES];
    if (o->measured & (1u << CC_NUMA_LLC))
        o->llc_misses = total[CC_NUMA_LLC];
    if (o->measured & (1u << CC_NUMA_BUS))
        memcpy(o->bus, per_node[CC_NUMA_BUS], sizeof o->bus);
    if (o->measured & (1u << CC_NUMA_MCT))
        memcpy(o->mct, per_node[CC_NUMA_MCT], sizeof o->mct);
    errno = saved;
}

int cc_numa_events(int *n) {
    *n = opened;
    return (int)plan.n;
}

/* A forked child: the counters count the parent. */
void cc_numa_after_fork(void) {
    for (uint32_t i = 0; i < plan.n; i++) {
        if (fds[i] >= 0 && !moved) /* moved: the number is the program's again */
            close(fds[i]);
        fds[i] = -1;
    }
    moved = opened = 0;
    __atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
}
