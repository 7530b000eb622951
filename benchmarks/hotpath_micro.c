/* The OpenMP shapes the preload library's hot path sees most (issue #40), for
 * benchmarks/hotpath.py: each case makes N calls of one kind and prints "case N calls".
 *
 *   gcc -O2 -fopenmp benchmarks/hotpath_micro.c -o hotpath_micro
 *   ./hotpath_micro regions 20000   # N empty parallel regions (GOMP_parallel + join)
 *   ./hotpath_micro barriers 20000  # one region, N explicit barriers per thread
 *   ./hotpath_micro dynamic 200000  # one region, a dynamic loop of N one-iteration chunks
 *   ./hotpath_micro teams 4000      # N small regions, team size 1..T in turn (omp_triad's shape)
 *
 * T is OMP_NUM_THREADS (omp_get_max_threads).  "calls" is what a call costs is divided
 * by: regions and teams per region call, barriers per barrier of one thread (N x T in
 * all), dynamic per loop call (N chunks: each thread's start/next calls, N + T in all).
 * The work done between calls is as small as the compiler keeps it, so the program's own
 * time is mostly the runtime's: the library's share is the difference with and without it. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

int main(int argc, char **argv) {
    if (argc != 3 || atol(argv[2]) < 1) {
        fprintf(stderr, "usage: %s regions|barriers|dynamic|teams N>=1\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]);
    int t = omp_get_max_threads();
    long calls = n;
    if (!strcmp(argv[1], "regions")) {
        for (long i = 0; i < n; i++) {
#pragma omp parallel
            __asm__ __volatile__("" ::: "memory");
        }
    } else if (!strcmp(argv[1], "barriers")) {
#pragma omp parallel
        for (long i = 0; i < n; i++) {
#pragma omp barrier
        }
        calls = n * t;
    } else if (!strcmp(argv[1], "dynamic")) {
        long sum = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : sum)
        for (long i = 0; i < n; i++)
            sum += i & 7;
        sink = sum;
        calls = n + t;
    } else if (!strcmp(argv[1], "teams")) {
        static double a[4096];
        for (long i = 0; i < n; i++) {
#pragma omp parallel for num_threads(1 + i % t) schedule(static)
            for (int k = 0; k < 4096; k++)
                a[k] = a[k] * 0.5 + k;
        }
        sink = (long)a[17];
    } else {
        fprintf(stderr, "%s: unknown case %s\n", argv[0], argv[1]);
        return 2;
    }
    printf("%s %ld calls\n", argv[1], calls);
    return 0;
}
