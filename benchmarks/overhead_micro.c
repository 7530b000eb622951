/* Micro benchmarks for benchmarks/overhead.py; each prints "name ns_per_op" lines.
 *
 *   gcc -O2 -fopenmp benchmarks/overhead_micro.c -o overhead_micro
 *   ./overhead_micro mutex 20000000   # lock/unlock pairs, before and after a thread exists
 *   ./overhead_micro omp 200000       # empty parallel regions (OMP_NUM_THREADS decides the team)
 *   ./overhead_micro thread 1         # creates and joins N no-op threads: start/exit cost
 *   ./overhead_micro critical 2000000 # empty critical sections in a team of one (uncontended)
 *
 * Built with gcc it measures the GOMP path, with clang (libomp) the OMPT path.
 *
 * corecast only activates on parallel activity (pthread_create, a parallel region), so the
 * mutex run measures once before creating a no-op thread and once after joining it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static double mutex_pairs(long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&mutex);
        pthread_mutex_unlock(&mutex);
    }
    return (now_ns() - t0) / n;
}

static void *noop(void *arg) { return arg; }

static double omp_regions(long n) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
#pragma omp parallel
        __asm__ __volatile__("" ::: "memory"); /* empty, but GCC would drop a bare {} */
    }
    return (now_ns() - t0) / n;
}

static double critical_sections(long n) {
    double ns = 0;
#pragma omp parallel num_threads(1)
    {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
#pragma omp critical
            __asm__ __volatile__("" ::: "memory");
        }
        ns = (now_ns() - t0) / n;
    }
    return ns;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s mutex|omp|thread|critical N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    if (!strcmp(argv[1], "mutex")) {
        mutex_pairs(n / 20); /* warm-up: first-call resolution, page faults */
        printf("mutex_before %.3f\n", mutex_pairs(n));
        pthread_t th;
        pthread_create(&th, NULL, noop, NULL);
        pthread_join(th, NULL);
        mutex_pairs(n / 20);
        printf("mutex_after %.3f\n", mutex_pairs(n));
    } else if (!strcmp(argv[1], "thread")) {
        for (long i = 0; i < n; i++) {
            pthread_t th;
            pthread_create(&th, NULL, noop, NULL);
            pthread_join(th, NULL);
        }
    } else if (!strcmp(argv[1], "omp")) {
        omp_regions(n / 20 + 1); /* warm-up: the team's threads start */
        printf("omp %.3f\n", omp_regions(n));
    } else if (!strcmp(argv[1], "critical")) {
        critical_sections(n / 20 + 1);
        printf("critical %.3f\n", critical_sections(n));
    } else {
        fprintf(stderr, "unknown benchmark %s\n", argv[1]);
        return 2;
    }
    return 0;
}
