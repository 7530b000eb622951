/* corecast calibrate's two kernels (libcorecast_calibrate.so, loaded by
 * corecast.tools.calibrate through ctypes; not part of the preload library).
 *
 * The kernels are those of likwid-bench (Treibig, Hager and Wellein, "LIKWID: A
 * lightweight performance-oriented tool suite for x86 multicore environments", PSTI 2010):
 * - compute (likwid-bench peakflops): independent multiply-add chains held in registers,
 *   enough of them that the loop is bound by the adders' throughput, not their latency;
 *   no memory traffic.
 * - bandwidth (likwid-bench stream triad, McCalpin's STREAM): a[i] = b[i] + s * c[i] over
 *   arrays far beyond the last-level cache, each thread on the slice it touched first.
 *
 * The team is libgomp's, in this process: its threads are placed as an OpenMP program's
 * would be under the same environment (unbound unless OMP_PROC_BIND / OMP_PLACES /
 * GOMP_CPU_AFFINITY say otherwise), and they start together at a barrier. Each function
 * returns the team's wall time from that barrier until its last thread is done (what a
 * parallel region with equal shares waits for), or a negative code:
 * -1 memory could not be mapped, -2 the runtime gave a smaller team than asked for.
 * cc_cal_waited() then gives the largest share of a team thread's time in that call that
 * it spent runnable but waiting for a CPU (its schedstat run delay): other load on the
 * machine, which the best of a few repeats does not always leave out; 0 where the kernel
 * cannot tell (no schedstat).
 * Plain C with OpenMP; never links libpython.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef double v2d __attribute__((vector_size(16)));

/* Keeps each thread's result alive so the chains are not optimised away. */
static volatile double sink[1024];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The calling thread's run delay so far, in seconds (schedstat's second field: time spent
 * runnable on a run queue); -1 where it cannot be read. */
static double run_delay(void)
{
    char buf[128];
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *end;
    strtoull(buf, &end, 10);
    if (end == buf)
        return -1;
    unsigned long long delay = strtoull(end, &end, 10);
    return 1e-9 * (double)delay;
}

/* Each team thread's share of its time in the parallel region that it waited for a CPU,
 * from its start there (``w0``, run delay ``d0``); the largest of the last call's. */
#define MAX_TEAM 4096
static double share[MAX_TEAM];
static double waited;

static void note_wait(int me, double w0, double d0)
{
    double w = now() - w0, d = run_delay() - d0;
    if (me < MAX_TEAM)
        share[me] = d0 >= 0 && w > 0 && d > 0 ? (d < w ? d / w : 1.0) : 0.0;
}

static double largest_wait(int threads)
{
    double most = 0;
    for (int i = 0; i < threads && i < MAX_TEAM; i++)
        most = share[i] > most ? share[i] : most;
    return most;
}

double cc_cal_waited(void) { return waited; }

/* 12 chains of 2 doubles: with separate multiply and add (no -mfma) each step has a
 * latency of about 8 cycles, and 12 independent ones keep two ports busy; 12 + 2
 * constants fit x86-64's 16 vector registers, so nothing spills to memory. */
#define CHAINS 12
#define FLOPS_PER_ITERATION (CHAINS * 2 * 2)

static double chains(long iterations, double seed)
{
    const v2d a = {0.9999999, 0.9999998}, b = {1e-7, 2e-7};
    v2d x0 = {seed, seed + 0.01}, x1 = x0 + 0.02, x2 = x0 + 0.03, x3 = x0 + 0.04, x4 = x0 + 0.05,
        x5 = x0 + 0.06, x6 = x0 + 0.07, x7 = x0 + 0.08, x8 = x0 + 0.09, x9 = x0 + 0.10,
        x10 = x0 + 0.11, x11 = x0 + 0.12;
    for (long i = 0; i < iterations; i++) {
        x0 = x0 * a + b; x1 = x1 * a + b; x2 = x2 * a + b; x3 = x3 * a + b;
        x4 = x4 * a + b; x5 = x5 * a + b; x6 = x6 * a + b; x7 = x7 * a + b;
        x8 = x8 * a + b; x9 = x9 * a + b; x10 = x10 * a + b; x11 = x11 * a + b;
    }
    v2d s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;
    return s[0] + s[1];
}

int cc_cal_flops_per_iteration(void) { return FLOPS_PER_ITERATION; }

/* "unbound", or the binding libgomp applies to the team (OMP_PROC_BIND), and how many
 * places it has (0: none given). */
int cc_cal_placement(char *out, int len)
{
    const char *name;
    switch (omp_get_proc_bind()) {
    case omp_proc_bind_false: name = "unbound"; break;
    case omp_proc_bind_true: name = "bound"; break;
    case omp_proc_bind_master: name = "primary"; break;
    case omp_proc_bind_close: name = "close"; break;
    case omp_proc_bind_spread: name = "spread"; break;
    default: name = "unknown"; break;
    }
    if (len > 0) {
        strncpy(out, name, (size_t)len - 1);
        out[len - 1] = '\0';
    }
    return omp_get_num_places();
}

double cc_cal_compute(int threads, long iterations)
{
    double t0 = 0, t1 = 0;
    int got = 0;
    omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
    {
        int me = omp_get_thread_num();
        double w0 = now(), d0 = run_delay();
#pragma omp single
        got = omp_get_num_threads();
        /* the implicit barrier of single: everyone starts together */
#pragma omp master
        t0 = now();
        double r = chains(iterations, 1.0 + 1e-3 * me);
        sink[me & 1023] = r;
#pragma omp barrier
#pragma omp master
        t1 = now();
        note_wait(me, w0, d0);
    }
    waited = largest_wait(got);
    return got == threads ? t1 - t0 : -2.0;
}

static double *map_doubles(long n)
{
    size_t bytes = (size_t)n * sizeof(double);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* fewer page faults at first touch; advice only */
#endif
    return p;
}

/* The best of ``passes`` triads over ``elements`` doubles per array; the arrays are
 * mapped here and first touched by the team, each thread its own static slice (the
 * slice it then streams: on a NUMA machine, memory on its node as a program's would be). */
double cc_cal_triad(int threads, long elements, int passes)
{
    double *a = map_doubles(elements), *b = map_doubles(elements), *c = map_doubles(elements);
    double best = -1.0;
    int got = 0;
    const double s = 3.0;
    waited = 0;
    if (!a || !b || !c)
        goto out;
    omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
    {
        int me = omp_get_thread_num();
        double w0 = now(), d0 = run_delay();
#pragma omp single
        got = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long i = 0; i < elements; i++) {
            a[i] = 0.0;
            b[i] = 1.0;
            c[i] = 2.0;
        }
        for (int p = 0; p < passes; p++) {
            double t0 = 0;
#pragma omp barrier
#pragma omp master
            t0 = now();
#pragma omp for schedule(static)
            for (long i = 0; i < elements; i++)
                a[i] = b[i] + s * c[i];
            /* the loop's implicit barrier: the last thread is done */
#pragma omp master
            {
                double t = now() - t0;
                if (best < 0 || t < best)
                    best = t;
            }
        }
        note_wait(me, w0, d0); /* over every pass and the first touch */
    }
    waited = largest_wait(got);
    if (got != threads)
        best = -2.0;
    else
        sink[0] = a[elements / 2];
out:
    if (a)
        munmap(a, (size_t)elements * sizeof(double));
    if (b)
        munmap(b, (size_t)elements * sizeof(double));
    if (c)
        munmap(c, (size_t)elements * sizeof(double));
    return (a && b && c) ? best : -1.0;
}
