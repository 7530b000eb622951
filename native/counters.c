/* What the sampler reads (over 400 lines: the task table's sums feed all three figures
 * below, which read it under one lock): hardware counters (perf), per-task scheduler
 * statistics, the run-queue wait other load caused, and corecast's own CPU time.  Read by
 * the sampler each window and by the exit report; never on a wrapper's path. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "apart.h"
#include "corecast.h"
#include "futex.h"
#include "procparse.h"
#include "text.h"

static int perf_fd[CC_NCTR] = {-1, -1, -1, -1, -1, -1, -1, -1};
/* The counters are opened in the program's table (by its thread: inherit follows the
 * threads it creates) and, once the sampler has them in its own table, closed there: 3
 * and 4 taken from the program's numbers, and the exit's read of a number the program
 * had since closed and reused would have read its file.  From then on only the sampler
 * reads them. */
static int moved;

/* ---- hardware counters ------------------------------------------------------------ */
/* Software figures (task clock, context switches, migrations, page faults) come from
 * schedstat, /proc and getrusage: perf's software events opened with inherit=1 would
 * add about half a microsecond to every context switch of every thread. */
static const struct {
    int slot;
    uint64_t config;
} hw_events[] = {
    {CC_CTR_CYCLES, PERF_COUNT_HW_CPU_CYCLES},
    {CC_CTR_INSTRUCTIONS, PERF_COUNT_HW_INSTRUCTIONS},
    {CC_CTR_LLC_MISSES, PERF_COUNT_HW_CACHE_MISSES},
    /* ESTIMA's backend stalls; the generic event maps to the family's own event
     * (e.g. RESOURCE_STALLS.ANY, Zen's dispatch stalls) where the kernel knows it. */
    {CC_CTR_BACKEND_STALLS, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
};

static int open_hw(uint64_t config, int inherit) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.inherit = inherit;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opened by the first active thread with inherit=1: every thread it creates from then on
 * is counted (an inherited count reaches the parent when the child exits).  Without a
 * PMU (VMs, containers, perf_event_paranoid) the probe fails and nothing is opened. */
static void open_counters(void) {
    int probe = open_hw(PERF_COUNT_HW_CPU_CYCLES, 0);
    if (probe < 0)
        return;
    close(probe);
    for (size_t i = 0; i < sizeof hw_events / sizeof hw_events[0]; i++)
        perf_fd[hw_events[i].slot] = open_hw(hw_events[i].config, 1);
}

static void close_counters(void) {
    for (int i = 0; i < CC_NCTR; i++) {
        if (perf_fd[i] >= 0 && !moved) /* moved: the number is the program's again */
            close(perf_fd[i]);
        perf_fd[i] = -1;
    }
}

/* ---- scheduler statistics ------------------------------------------------------- */
struct task_stat {
    int tid;
    int internal; /* corecast's own thread: its time is corecast's, not the program's */
    unsigned seen; /* the read that last found it in /proc/self/task */
    uint64_t exec_ns, runq_ns, migrations; /* since the first activity (cc_sampler_baseline) */
    uint64_t exec0, runq0; /* schedstat then: a task keeps its counts across exec */
    uint64_t exec_raw; /* schedstat's exec as last read: less next time, a new task took the tid */
};
/* Live tasks: one that left /proc/self/task has its last counts folded into ``gone`` and
 * its entry freed, so threads made and joined all the time never fill the table. */
static struct task_stat tasks[CC_MAX_THREADS];
static int ntasks;
static unsigned reads;
static struct {
    uint64_t exec_ns, runq_ns, migrations; /* the program's tasks */
    uint64_t internal_exec_ns;             /* corecast's */
} gone;
/* What the readers below add up: the live tasks and ``gone``, summed under tasks_busy by
 * each read (the table moves entries as tasks leave). */
static struct {
    uint64_t exec_ns, runq_ns, migrations, internal_exec_ns;
} sums;
/* The sampler and the exit report both update: 0 free, 1 held, 2 held with a waiter.  The
 * holder reads /proc files, so a waiter sleeps on the futex instead of spinning: under
 * valgrind, and on a loaded machine where the holder lost its CPU, a spinning exit report
 * burnt up to 1.9e9 instructions waiting (Drepper, "Futexes Are Tricky", 2011, mutex 2). */
static int tasks_busy;

static void tasks_lock(void) {
    int c = 0;
    if (__atomic_compare_exchange_n(&tasks_busy, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    if (c != 2)
        c = __atomic_exchange_n(&tasks_busy, 2, __ATOMIC_ACQUIRE);
    while (c != 0) {
        cc_futex(&tasks_busy, FUTEX_WAIT_PRIVATE, 2, -1);
        c = __atomic_exchange_n(&tasks_busy, 2, __ATOMIC_ACQUIRE);
    }
}
static void tasks_unlock(void) {
    if (__atomic_exchange_n(&tasks_busy, 0, __ATOMIC_RELEASE) == 2)
        cc_futex(&tasks_busy, FUTEX_WAKE_PRIVATE, 1, -1);
}

static void fold_gone(const struct task_stat *t) {
    if (t->internal) {
        gone.internal_exec_ns += t->exec_ns;
    } else {
        gone.exec_ns += t->exec_ns;
        gone.runq_ns += t->runq_ns;
        gone.migrations += t->migrations;
    }
}

static void sum_tasks(void) {
    uint64_t exec = gone.exec_ns, runq = gone.runq_ns, migr = gone.migrations, own = gone.internal_exec_ns;
    for (int i = 0; i < ntasks; i++) {
        if (tasks[i].internal) {
            own += tasks[i].exec_ns;
        } else {
            exec += tasks[i].exec_ns;
            runq += tasks[i].runq_ns;
            migr += tasks[i].migrations;
        }
    }
    __atomic_store_n(&sums.exec_ns, exec, __ATOMIC_RELAXED);
    __atomic_store_n(&sums.runq_ns, runq, __ATOMIC_RELAXED);
    __atomic_store_n(&sums.migrations, migr, __ATOMIC_RELAXED);
    __atomic_store_n(&sums.internal_exec_ns, own, __ATOMIC_RELAXED);
}

/* corecast's threads (the sampler, threads marked internal): a handful, listed once per
 * read.  The sampler's tid is told apart: its slot may be the shared overflow slot. */
static volatile int sampler_tid;
void cc_counters_sampler_is(int tid) { sampler_tid = tid; }

#define MAX_INTERNAL 16
static int internal_tids(int *out) {
    int n = 0, k;
    if (sampler_tid)
        out[n++] = sampler_tid;
    k = cc_thread_count();
    for (int i = 0; i < k && n < MAX_INTERNAL; i++) {
        const struct cc_thread *t = cc_thread_slot(i);
        if (t && __atomic_load_n(&t->internal, __ATOMIC_RELAXED) && t->tid != sampler_tid)
            out[n++] = t->tid;
    }
    return n;
}

static double rusage_s(int who) {
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return 0;
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static double rusage_cpu_s(void) { return rusage_s(RUSAGE_SELF); }

/* The CPU time of the child processes this one waited for (getrusage, which survives the
 * launcher's exec): work a thread table cannot show (a multiprocessing pool, make -j2). */
double cc_children_cpu_s(void) { return rusage_s(RUSAGE_CHILDREN); }

static double cpu_at_activity; /* process CPU time at the baseline */

/* ---- other load: the part of the run-queue wait that is not the program's ----------
 * schedstat's run_delay is every wait for a CPU.  The program causes its own when it has
 * more runnable threads than allowed CPUs; other processes cause the rest.  Per window
 * (each read), the wait other load can have caused is at most the CPU time others used
 * on the CPUs this process may run on (/proc/stat busy time of those CPUs less this
 * process's own): other = min(run-queue wait, others' CPU time).  Alone, others' time is
 * ~0 and all waiting is the program's, however oversubscribed; with a free CPU per
 * thread, the waits are all other load's.  /proc/stat counts in ticks: a window's
 * shortfall is carried into the next (bounded) so tick noise does not add up to "busy". */
static struct {
    int primed;
    uint64_t runq_ns;                  /* program's run-queue wait */
    double cpu_s;                      /* process CPU time (getrusage: exited threads too) */
    double busy_s;                     /* /proc/stat busy time of the allowed CPUs */
    double carry_s;                    /* <= 0: others' time a window over-counted */
    double other_s;                    /* run-queue wait other load caused, summed */
    int allowed;
} load;

/* Busy time of the CPUs in ``set`` from /proc/stat (-1: unreadable). */
static double cpus_busy_s(const cpu_set_t *set) {
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    static char text[1 << 16];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof text - 1 && (n = read(fd, text + len, sizeof text - 1 - len)) > 0) {
        len += (size_t)n;
        text[len] = 0;
        if (strstr(text, "\nintr ")) /* the CPU lines are done; the rest can be long */
            break;
    }
    close(fd);
    text[len] = 0;
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long busy = 0;
    for (const char *line = strstr(text, "\ncpu"); line; line = strstr(line + 1, "\ncpu")) {
        int cpu;
        unsigned long long v[7];
        if (!cc_parse_cpu_line(line + 1, &cpu, v)) /* 17 sscanf calls: a third of a window at 16 CPUs */
            continue;
        if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, set))
            busy += v[0] + v[1] + v[2] + v[5] + v[6]; /* user nice system irq softirq */
    }
    return busy / (double)(hz > 0 ? hz : 100);
}

/* Called with tasks_busy held, after the tasks were read. */
static void split_runqueue(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    load.allowed = CPU_COUNT(&set);
    uint64_t runq = sums.runq_ns;
    double busy = cpus_busy_s(&set), cpu = rusage_cpu_s();
    if (busy < 0)
        return;
    if (load.primed) {
        double d_runq = (double)(runq - load.runq_ns) * 1e-9;
        double others = busy - load.busy_s - (cpu - load.cpu_s);
        double avail = others + load.carry_s;
        double take = d_runq < avail ? d_runq : avail;
        if (take > 0)
            load.other_s += take;
        double tick = 1.0 / (double)(sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100);
        double rest = avail - (take > 0 ? take : 0);
        load.carry_s = rest < 0 ? (rest > -2 * tick * load.allowed ? rest : -2 * tick * load.allowed) : 0;
    }
    load.primed = 1;
    load.runq_ns = runq;
    load.cpu_s = cpu;
    load.busy_s = busy;
}

/* "/proc/self/task/TID/LEAF" into ``path`` (64 bytes): snprintf's formatting, in a loop over
 * every task twice a window, was a fifth of the sampler's instructions. */
static void task_path(char *path, int tid, const char *leaf) {
    static const char dir[] = "/proc/self/task/";
    char *p = path + sizeof dir - 1;
    memcpy(path, dir, sizeof dir - 1);
    cc_put_decimal(&p, tid);
    *p++ = '/';
    strcpy(p, leaf);
}

/* Keeps the last values seen per task, so threads that have exited still count (in
 * ``gone`` once they left).  ``baseline``: the counts so far are not the program's (before
 * exec, before activity). */
static void read_schedstat(int baseline) {
    tasks_lock();
    if (baseline)
        memset(&gone, 0, sizeof gone);
    unsigned now_read = ++reads;
    int internal[MAX_INTERNAL], ninternal = internal_tids(internal);
    /* Listed with getdents64 into a buffer of ours: opendir's malloc gave the sampler a
     * malloc arena of its own, 64 MB of address space reserved (128 MB at its peak) that a
     * program under `ulimit -v` could no longer allocate. */
    int dir = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char dents[4096] __attribute__((aligned(8)));
    long got = 0, at = 0;
    /* The directory read to its end: what it lacks has left.  Only where slots are handed
     * on: a slot keeps its exited threads' CPU time then (cc_slot_cpu_s), else the task's
     * entry is where it stays. */
    int listed = dir >= 0 && cc_slots_reused();
    for (;;) {
        if (at >= got) {
            got = dir < 0 ? -1 : syscall(SYS_getdents64, dir, dents, sizeof dents);
            at = 0;
            if (got <= 0) {
                listed = listed && got == 0;
                break;
            }
        }
        const struct dirent64 *e = (const struct dirent64 *)(dents + at);
        at += e->d_reclen;
        int tid = atoi(e->d_name);
        if (tid <= 0 || tid == cc_apart_tid()) /* the exit's reader: its CPU time is added as ours */
            continue;
        int i = 0;
        while (i < ntasks && tasks[i].tid != tid)
            i++;
        if (i < ntasks)
            tasks[i].seen = now_read; /* listed: still here, even if unreadable this time */
        char path[64];
        task_path(path, tid, "schedstat");
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[128];
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        unsigned long long exec_ns, runq_ns;
        if (!cc_parse_schedstat(buf, &exec_ns, &runq_ns))
            continue;
        if (i < ntasks && exec_ns < tasks[i].exec_raw) { /* the tid is a new task's: the old one left */
            fold_gone(&tasks[i]);
            tasks[i] = tasks[--ntasks];
            i = ntasks;
        }
        if (i == ntasks) {
            if (ntasks == CC_MAX_THREADS)
                continue;
            ntasks++;
            memset(&tasks[i], 0, sizeof tasks[i]);
            tasks[i].tid = tid;
            tasks[i].seen = now_read;
        }
        tasks[i].exec_raw = exec_ns;
        if (baseline) {
            tasks[i].exec0 = exec_ns;
            tasks[i].runq0 = runq_ns;
        }
        exec_ns = exec_ns > tasks[i].exec0 ? exec_ns - tasks[i].exec0 : 0;
        runq_ns = runq_ns > tasks[i].runq0 ? runq_ns - tasks[i].runq0 : 0;
        for (int j = 0; j < ninternal && !tasks[i].internal; j++)
            tasks[i].internal = internal[j] == tid;
        tasks[i].exec_ns = exec_ns;
        tasks[i].runq_ns = runq_ns;
        /* Migrations reach the JSON Lines alone (the report only names them; the model reads
         * the hardware counts): without them, no task's `sched` (3 system calls, 4 kB of
         * text) is read.  CORECAST_OUTPUT is fixed from the start: no read is missed. */
        if (tasks[i].internal || !cc_cfg.output[0])
            continue;
        task_path(path, tid, "sched");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            char text[4096];
            n = read(fd, text, sizeof text - 1);
            close(fd);
            text[n > 0 ? n : 0] = 0;
            const char *m = strstr(text, "se.nr_migrations");
            if (m && (m = strchr(m, ':')))
                tasks[i].migrations = strtoull(m + 1, NULL, 10);
        }
    }
    if (dir >= 0)
        close(dir);
    for (int i = 0; listed && i < ntasks;) {
        if (tasks[i].seen == now_read) {
            i++;
            continue;
        }
        fold_gone(&tasks[i]);
        tasks[i] = tasks[--ntasks];
    }
    sum_tasks();
    split_runqueue();
    tasks_unlock();
}

/* The starting point of the run-queue split: the first parallel activity. */
/* The first look opens /proc and /sys files (the threads' clocks, the machine's nodes):
 * apart (apart.c), as the exit's, for a thread the wrappers never saw start (a SIGEV_THREAD
 * timer's) may be opening files already, and got other numbers than without corecast. */
static void first_look(void *arg) {
    cpu_at_activity = rusage_cpu_s();
    read_schedstat(1);
    cc_numa_topology();
}

void cc_sampler_baseline(void) { cc_own_cpu_add(cc_run_apart(first_look, NULL)); }

/* The last CPU time schedstat showed for ``tid`` (-1 if never seen, or it has left). */
double cc_task_cpu_s(int tid) {
    double s = -1;
    tasks_lock();
    for (int i = 0; i < ntasks; i++)
        if (tasks[i].tid == tid) {
            s = tasks[i].exec_ns * 1e-9;
            break;
        }
    tasks_unlock();
    return s;
}

double cc_slot_cpu_s(const struct cc_thread *t) {
    double before = __atomic_load_n(&t->gone_cpu_ns, __ATOMIC_RELAXED) * 1e-9;
    double now = cc_slot_vacant(t) ? -1 : cc_task_cpu_s(__atomic_load_n(&t->tid, __ATOMIC_RELAXED));
    if (now < 0)
        return before > 0 ? before : -1;
    return before + now;
}

/* ---- corecast's own CPU time ------------------------------------------------------ */
/* Its threads' (the sampler, which runs the model every window; threads marked internal)
 * plus what it spent on the program's threads: the model's start in Python hosts and
 * the exit report with the final model run, measured with the thread's CPU clock. */
static double own_on_program_threads;

double cc_thread_cpu_s(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return 0;
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void cc_own_cpu_add(double s) {
    if (s > 0)
        own_on_program_threads += s;
}

static double internal_cpu_s(void) { return __atomic_load_n(&sums.internal_exec_ns, __ATOMIC_RELAXED) * 1e-9; }

double cc_own_cpu_s(void) { return internal_cpu_s() + own_on_program_threads; }

struct cc_load cc_load_split(void) {
    struct cc_load l = {0, 0, 0, 0};
    l.runq_s = __atomic_load_n(&sums.runq_ns, __ATOMIC_RELAXED) * 1e-9;
    /* CPU time from getrusage: threads that ended between two reads count too. */
    double cpu = rusage_cpu_s() - cpu_at_activity - cc_own_cpu_s();
    l.runnable_s = (cpu > 0 ? cpu : 0) + l.runq_s;
    l.other_s = load.other_s < l.runq_s ? load.other_s : l.runq_s;
    l.allowed = load.allowed;
    return l;
}

static struct rusage usage_at_start;

/* The sampler's latest PMU and NUMA counts, for a thread whose table no longer holds the
 * counters: an exit the sampler does not answer (a Python host's os._exit, a model past the
 * timeout) reported none of them at all.  A sequence lock: odd while the sampler writes. */
static struct {
    unsigned seq;
    unsigned measured; /* bits of the PMU counters among counters_measured */
    double counters[CC_NCTR];
    struct cc_numa_counts numa;
} last;

/* The PMU and NUMA counts, where this thread's table holds the counters; else the last
 * ones the sampler read there (as of its last window). */
void cc_counters_read_held(struct cc_sample *s) {
    if (moved && !cc_own_table_here()) {
        cc_numa_read(&s->numa); /* the topology; the events stay unmeasured unless copied */
        for (int tries = 0; tries < 100; tries++) {
            unsigned seq = __atomic_load_n(&last.seq, __ATOMIC_ACQUIRE);
            if (seq == 0 || seq & 1)
                continue; /* never read yet, or being written */
            unsigned measured = last.measured;
            double counters[CC_NCTR];
            struct cc_numa_counts numa = last.numa;
            memcpy(counters, last.counters, sizeof counters);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&last.seq, __ATOMIC_RELAXED) != seq)
                continue;
            for (int i = 0; i < CC_NCTR; i++)
                if (measured & 1u << i)
                    s->counters[i] = counters[i];
            s->counters_measured |= measured;
            s->numa = numa;
            break;
        }
        return;
    }
    unsigned measured = 0;
    for (int i = 0; i < CC_NCTR; i++) {
        uint64_t v;
        if (perf_fd[i] >= 0 && read(perf_fd[i], &v, sizeof v) == (ssize_t)sizeof v) {
            s->counters[i] = (double)v;
            measured |= 1u << i;
        }
    }
    s->counters_measured |= measured;
    cc_numa_read(&s->numa);
    if (moved) { /* this is the sampler's table: what others may report */
        __atomic_store_n(&last.seq, last.seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        last.measured = measured;
        memcpy(last.counters, s->counters, sizeof last.counters);
        last.numa = s->numa;
        __atomic_store_n(&last.seq, last.seq + 1, __ATOMIC_RELEASE);
    }
}

void cc_sampler_read_counters(struct cc_sample *s) {
    read_schedstat(0);
    s->counters_measured = 0;
    cc_counters_read_held(s);
    uint64_t exec_ns = __atomic_load_n(&sums.exec_ns, __ATOMIC_RELAXED);
    uint64_t migrations = __atomic_load_n(&sums.migrations, __ATOMIC_RELAXED);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    s->counters[CC_CTR_TASK_CLOCK] = exec_ns * 1e-9;
    s->counters[CC_CTR_MIGRATIONS] = (double)migrations;
    s->counters[CC_CTR_CTX_SWITCHES] = (double)(ru.ru_nvcsw + ru.ru_nivcsw - usage_at_start.ru_nvcsw -
                                                usage_at_start.ru_nivcsw);
    s->counters[CC_CTR_PAGE_FAULTS] = (double)(ru.ru_minflt + ru.ru_majflt - usage_at_start.ru_minflt -
                                               usage_at_start.ru_majflt);
    s->counters_measured |= 1u << CC_CTR_TASK_CLOCK | 1u << CC_CTR_MIGRATIONS |
                            1u << CC_CTR_CTX_SWITCHES | 1u << CC_CTR_PAGE_FAULTS;
    s->cpus_allowed = load.allowed;
}

/* CPU time before this image started: exec keeps the process's rusage (corecast run
 * itself execs the program). */
static double cpu_at_start;
void cc_sampler_mark_start(void) {
    cpu_at_start = rusage_cpu_s();
    getrusage(RUSAGE_SELF, &usage_at_start);
}

double cc_cpu_before_start(void) { return cpu_at_start; }

/* Process-wide CPU time of the program's threads (corecast's own time excluded) and the
 * run-queue wait summed over its tasks, split into the program's own and other load's. */
void cc_process_times(double *cpu_s, double *runq_s, double *runq_other_s) {
    *cpu_s = rusage_cpu_s() - cpu_at_start - cc_own_cpu_s();
    if (*cpu_s < 0)
        *cpu_s = 0;
    struct cc_load l = cc_load_split();
    *runq_s = l.runq_s - l.other_s;
    *runq_other_s = l.other_s;
}

/* At the first activity: the PMU counters and the NUMA topology (even without a PMU). */
void cc_counters_open(void) {
    open_counters();
    cc_numa_open();
}

void cc_counters_moved(void) {
    int saved = errno;
    for (int i = 0; i < CC_NCTR; i++)
        if (perf_fd[i] >= 0)
            close(perf_fd[i]);
    moved = 1;
    cc_numa_moved();
    errno = saved;
}

int cc_counters_fds(int *out, int max) {
    int n = 0;
    for (int i = 0; i < CC_NCTR && n < max; i++)
        if (perf_fd[i] >= 0)
            out[n++] = perf_fd[i];
    return n + cc_numa_fds(out + n, max - n);
}

void cc_counters_after_fork(void) {
    cpu_at_start = 0; /* a forked child's rusage starts at zero */
    own_on_program_threads = 0;
    cpu_at_activity = 0;
    memset(&load, 0, sizeof load);
    memset(&usage_at_start, 0, sizeof usage_at_start);
    ntasks = 0;
    memset(&gone, 0, sizeof gone);
    memset(&sums, 0, sizeof sums);
    tasks_busy = 0;
    sampler_tid = 0;
    close_counters(); /* they count the parent */
    cc_numa_after_fork();
    moved = 0;
    memset(&last, 0, sizeof last); /* the parent's */
}
