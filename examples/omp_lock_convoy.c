/* OpenMP example of a lock convoy: every iteration takes one omp_lock_t.  With a second
 * thread each release wakes the other one (a futex call of microseconds around a section
 * of nanoseconds), so 2 threads run hundreds of times slower than 1.  `corecast run
 * --steer` should settle on one thread.
 *
 *   gcc -O2 -fopenmp examples/omp_lock_convoy.c -o omp_lock_convoy
 *   corecast run --steer -- ./omp_lock_convoy [calls]
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 50000;
    omp_lock_t lock;
    omp_init_lock(&lock);
    long shared = 0;
    for (int c = 0; c < calls; c++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < 1000; i++) {
            omp_set_lock(&lock);
            shared += i & 7;
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
    printf("sum %ld\n", shared);
    return 0;
}
