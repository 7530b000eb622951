/* OpenMP example for per-region sweeps: two regions that scale differently.
 * "compute" splits independent work evenly (it scales); "update" does part of its work
 * inside a critical section (it stops scaling, the critical section is its bottleneck).
 * The checksum is an integer sum, the same at any team size.
 *
 *   gcc -O2 -fopenmp examples/omp_two_regions.c -o omp_two_regions
 *   corecast sweep --threads 1,2 --plot regions.png -- ./omp_two_regions [reps] [work]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define ITEMS 256

static unsigned long hash(unsigned long x, long steps) {
    for (long k = 0; k < steps; k++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x >> 17;
}

static unsigned long compute(long work) {
    unsigned long sum = 0;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (int i = 0; i < ITEMS; i++)
        sum += hash(i, work);
    return sum;
}

static unsigned long update(long work) {
    unsigned long shared = 0;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < ITEMS; i++) {
        unsigned long h = hash(i + 7, work / 4);
#pragma omp critical
        shared += hash(h, work / 2);
    }
    return shared;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    long work = argc > 2 ? atol(argv[2]) : 20000;
    unsigned long sum = 0;
    for (int r = 0; r < reps; r++)
        sum += compute(work) + update(work);
    printf("checksum %lx\n", sum);
    return 0;
}
