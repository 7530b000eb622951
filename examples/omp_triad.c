/* OpenMP STREAM-style triad, a memory-bound data-parallel loop: the kind of region SPEC
 * section 4's NUMA model is about.  It alternates team sizes 1..T (T = the machine's
 * cores by default) so that corecast sees the loop's work time at several sizes inside
 * one node; on a machine without a PMU that is what the memory model is fitted to.
 *
 *   gcc -O2 -fopenmp examples/omp_triad.c -o omp_triad
 *   corecast run --target-machine opteron6380 -- ./omp_triad [calls] [MiB per array]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static void triad(double *a, const double *b, const double *c, long n, double s, int team) {
#pragma omp parallel for num_threads(team) schedule(static)
    for (long i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 400;
    long mib = argc > 2 ? atol(argv[2]) : 32;
    long n = mib * 1024 * 1024 / (long)sizeof(double);
    if (calls < 1 || n < 1) {
        fprintf(stderr, "usage: %s [calls >= 1] [MiB per array >= 1]\n", argv[0]);
        return 2;
    }
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = (double)(i % 1000);
        c[i] = 0.5;
    }
    int teams = omp_get_num_procs();
    for (int k = 0; k < calls; k++)
        triad(a, b, c, n, 2.0 + k, 1 + k % teams);
    double sum = 0.0;
    for (long i = 0; i < n; i += 4096)
        sum += a[i];
    printf("checksum %.6e\n", sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
