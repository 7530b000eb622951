/* Memory-traffic counters for the NUMA model (Cho, Oh and Egger, "Online Scalability
 * Characterization of Data-Parallel Programs on Many Cores", PACT 2016) and the
 * machine's NUMA topology.
 *
 * The launcher plans the events (corecast/runtime/numa_events.py: tables by CPU family)
 * and passes them in CORECAST_NUMA_EVENTS:
 *
 *     v1;SOURCE;ROLE:NODE:TYPE:CONFIG:CONFIG1:CPU;...
 *
 * ROLE is cycles, llc, bus or mct (CC_NUMA_*), NODE the memory node the count belongs to
 * (-1: none), TYPE/CONFIG/CONFIG1 the perf_event_attr fields, CPU -1 for an event of the
 * program's threads (inherited by the threads it creates) or the CPU an uncore unit is
 * read on.  Text that does not parse is ignored with one warning.  An event that cannot
 * be opened or has not run leaves its role unmeasured: values are never made up.  The
 * kernel multiplexes events beyond the PMU's counters (the paper's sub-samples); their
 * counts are scaled by time enabled / time running and ``multiplexed`` is set.
 *
 * cc_numa_open runs where the sampler opens its counters (the first active thread, so
 * inherited events follow the threads it creates), cc_numa_read on the sampler thread and
 * at exit: no FILE streams, no malloc, the program's errno kept. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "corecast.h"

#define CC_NUMA_MAX_EVENTS 256 /* corecast.recording.abi.NUMA_MAX_EVENTS */

const char *const CC_NUMA_ROLE_NAMES[CC_NUMA_NROLES] = {"cycles", "llc", "bus", "mct"};

struct numa_event {
    int role, node, type, cpu;
    uint64_t config, config1;
    int fd; /* -1: not open (failed), -2: not counted here (another node's unit) */
};

static struct numa_event events[CC_NUMA_MAX_EVENTS];
static int nevents;
static char source[64];
static int parsed;   /* CORECAST_NUMA_EVENTS read: once per image, kept across fork */
static int topo_read;
static int topo_nodes, topo_cpus[CC_MAX_NODES];
static cpu_set_t topo_set[CC_MAX_NODES];
static int ready;    /* events opened (or tried): cc_numa_read may look */

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

/* ---- CORECAST_NUMA_EVENTS ------------------------------------------------------------ */
static int parse_int(const char **p, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno || v < lo || v > hi)
        return -1;
    *p = end;
    *out = (int)v;
    return 0;
}

static int parse_u64(const char **p, uint64_t *out) {
    char *end;
    if (**p == '-' || **p == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(*p, &end, 0);
    if (end == *p || errno)
        return -1;
    *p = end;
    *out = v;
    return 0;
}

static int expect(const char **p, char c) {
    if (**p != c)
        return -1;
    (*p)++;
    return 0;
}

/* Fills events[] and source; returns NULL, or where the text stopped making sense. */
static const char *parse_plan(const char *s) {
    if (strncmp(s, "v1;", 3))
        return s;
    s += 3;
    size_t n = strcspn(s, ";");
    if (n == 0 || n >= sizeof source)
        return s;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.'))
            return s + i;
    }
    memcpy(source, s, n);
    source[n] = 0;
    s += n;
    while (*s == ';' && s[1]) {
        s++;
        if (nevents == CC_NUMA_MAX_EVENTS)
            return s;
        struct numa_event *e = &events[nevents];
        e->role = -1;
        for (int r = 0; r < CC_NUMA_NROLES; r++) {
            size_t len = strlen(CC_NUMA_ROLE_NAMES[r]);
            if (!strncmp(s, CC_NUMA_ROLE_NAMES[r], len) && s[len] == ':') {
                e->role = r;
                s += len;
                break;
            }
        }
        const char *at = s;
        if (e->role < 0 || expect(&s, ':') || parse_int(&s, -1, CC_MAX_NODES - 1, &e->node) ||
            expect(&s, ':') || parse_int(&s, 0, INT_MAX, &e->type) || expect(&s, ':') ||
            parse_u64(&s, &e->config) || expect(&s, ':') || parse_u64(&s, &e->config1) ||
            expect(&s, ':') || parse_int(&s, -1, CPU_SETSIZE - 1, &e->cpu) || (*s && *s != ';'))
            return at;
        /* Per-node roles come from uncore units; the program's own events have no node. */
        if ((e->role == CC_NUMA_BUS || e->role == CC_NUMA_MCT) && (e->node < 0 || e->cpu < 0))
            return at;
        if (e->role == CC_NUMA_CYCLES && e->cpu >= 0)
            return at;
        e->fd = -1;
        nevents++;
    }
    if (*s == ';')
        s++;
    return *s ? s : NULL;
}

/* ---- counting ------------------------------------------------------------------------ */
static int open_event(const struct numa_event *e) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = (uint32_t)e->type;
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
static int counts_here(const struct numa_event *e, const cpu_set_t *allowed) {
    if (e->cpu < 0 || e->role == CC_NUMA_MCT || !allowed)
        return 1;
    int n = node_of_cpu(e->cpu);
    if (n < 0)
        return 1;
    cpu_set_t both;
    CPU_AND(&both, &topo_set[n], allowed);
    return CPU_COUNT(&both) > 0;
}

void cc_numa_open(void) {
    if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return;
    int saved = errno;
    if (!topo_read) {
        read_topology();
        topo_read = 1;
    }
    if (!parsed) {
        parsed = 1;
        const char *v = getenv(CC_ENV_NUMA_EVENTS);
        const char *bad = v && *v ? parse_plan(v) : NULL;
        if (bad) {
            cc_warn("CORECAST_NUMA_EVENTS is not an event list this library reads (at \"%.24s\"); "
                    "no NUMA counters",
                    bad);
            nevents = 0;
            source[0] = 0;
        }
    }
    cpu_set_t allowed;
    int have_allowed = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    for (int i = 0; i < nevents; i++)
        events[i].fd = counts_here(&events[i], have_allowed ? &allowed : NULL) ? open_event(&events[i]) : -2;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    errno = saved;
}

int cc_numa_fds(int *out, int max) {
    int n = 0;
    for (int i = 0; i < nevents && n < max; i++)
        if (events[i].fd >= 0)
            out[n++] = events[i].fd;
    return n;
}

void cc_numa_read(struct cc_numa_counts *o) {
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE))
        return; /* nodes 0: not known yet */
    int saved = errno;
    o->nodes = topo_nodes;
    for (int n = 0; n < CC_MAX_NODES; n++)
        o->node_cpus[n] = n < topo_nodes ? topo_cpus[n] : 0;
    memcpy(o->source, source, sizeof o->source);
    double total[CC_NUMA_NROLES] = {0}, per_node[CC_NUMA_NROLES][CC_MAX_NODES];
    memset(per_node, 0, sizeof per_node);
    int planned[CC_NUMA_NROLES] = {0}, failed[CC_NUMA_NROLES] = {0}, scaled[CC_NUMA_NROLES] = {0};
    for (int i = 0; i < nevents; i++) {
        const struct numa_event *e = &events[i];
        if (e->fd == -2)
            continue;
        planned[e->role]++;
        uint64_t v[3]; /* value, time enabled, time running */
        if (e->fd < 0 || read(e->fd, v, sizeof v) != (ssize_t)sizeof v || v[2] == 0) {
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

/* A forked child: the counters count the parent. */
void cc_numa_after_fork(void) {
    for (int i = 0; i < nevents; i++) {
        if (events[i].fd >= 0)
            close(events[i].fd);
        events[i].fd = -1;
    }
    __atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
}
