/* OpenMP example whose parallel region gets slower with more threads: every iteration
 * updates one shared counter under a critical section, so a second thread only adds lock
 * hand-offs between cores.  `corecast run --steer` should settle on one thread.
 *
 *   gcc -O2 -fopenmp examples/omp_slowdown.c -o omp_slowdown
 *   corecast run --steer -- ./omp_slowdown [calls] [sections per call, default 4000]
 *
 * With many sections per call (`omp_slowdown 40 1000000`) each call at 2 threads takes
 * longer than a sampler window: a convoy of long calls, such as a solver step per call.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 20000;
    int sections = argc > 2 ? atoi(argv[2]) : 4000;
    long shared = 0;
    for (int c = 0; c < calls; c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < sections; i++) {
#pragma omp critical
            shared += (i ^ c) & 7;
        }
    }
    printf("shared %ld\n", shared);
    return 0;
}
