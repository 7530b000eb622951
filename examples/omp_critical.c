/* OpenMP example: uneven iterations (imbalance) and a critical section (serialised work).
 *
 *   gcc -O2 -fopenmp examples/omp_critical.c -o omp_critical -lm
 *   corecast run -- ./omp_critical [iterations]
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double work(int units) {
    double x = 0;
    for (int k = 0; k < units * 2000; k++)
        x += sin(k * 1e-3) * cos(k * 1e-3);
    return x;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 400;
    double total = 0, shared = 0;
    for (int rep = 0; rep < 10; rep++) {
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (int i = 0; i < n; i++) {
            /* Later iterations cost more: static chunks leave the last thread behind. */
            total += work(1 + i / 8);
#pragma omp critical
            shared += work(2);
        }
    }
    /* Fixed-precision output: identical with or without corecast. */
    printf("total %.6e shared %.6e\n", total, shared);
    return 0;
}
