/* Regions called many times, the case CORECAST_PROBE is for: one with the default team
 * (OMP_NUM_THREADS), one with a num_threads(T) clause, and optionally a nested pair (an
 * outer team of 2 whose threads each start an inner team of 2).  It prints the largest
 * team each region saw (the inner one's smallest too) and an integer checksum that does
 * not depend on team sizes, so the output is the same whatever teams a run gets.
 *
 *   gcc -O2 -fopenmp examples/omp_repeat.c -o omp_repeat
 *   corecast run --probe -- ./omp_repeat [calls] [work per call] [T] [nested calls]
 */
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define ITEMS 64

/* An integer hash chain: wrapping sums are exact in any order, unlike floating point. */
static unsigned long work(unsigned long x, long steps) {
    for (long k = 0; k < steps; k++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x >> 17;
}

static unsigned long sum;
static int max_default, max_clause, max_inner, min_inner = INT_MAX, max_level;

static void note_level(void) {
    int level = omp_get_level();
#pragma omp critical
    if (level > max_level)
        max_level = level;
}

/* Called by every member of a team: the master records the team size and level. */
static void note_team(int *max) {
    if (omp_get_thread_num() == 0) {
        if (omp_get_num_threads() > *max)
            *max = omp_get_num_threads();
        note_level();
    }
}

/* Two regions (two outlined functions): one with libgomp's default team, one with a
 * num_threads clause. */
static void region_default(long steps, int k) {
    unsigned long s = 0;
#pragma omp parallel reduction(+ : s)
    {
        note_team(&max_default);
#pragma omp for schedule(static)
        for (int i = 0; i < ITEMS; i++)
            s += work((unsigned long)(k * ITEMS + i), steps);
    }
    sum += s;
}

static void region_clause(long steps, int k, int team) {
    unsigned long s = 0;
#pragma omp parallel num_threads(team) reduction(+ : s)
    {
        note_team(&max_clause);
#pragma omp for schedule(static)
        for (int i = 0; i < ITEMS; i++)
            s += work((unsigned long)(k * ITEMS + i) ^ 0x5bd1e995UL, steps);
    }
    sum += s;
}

static void region_inner(long steps, int k) {
    unsigned long s = 0;
#pragma omp parallel num_threads(2) reduction(+ : s)
    {
        if (omp_get_thread_num() == 0) {
#pragma omp critical
            {
                int n = omp_get_num_threads();
                max_inner = n > max_inner ? n : max_inner;
                min_inner = n < min_inner ? n : min_inner;
            }
            note_level();
        }
#pragma omp for schedule(static)
        for (int i = 0; i < ITEMS / 4; i++)
            s += work((unsigned long)(k * ITEMS + i) ^ 0x9e3779b9UL, steps);
    }
#pragma omp atomic
    sum += s;
}

static void region_outer(long steps, int k) {
#pragma omp parallel num_threads(2)
    region_inner(steps, k * 2 + omp_get_thread_num());
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 400;
    long steps = argc > 2 ? atol(argv[2]) : 4000;
    int team = argc > 3 ? atoi(argv[3]) : 2;
    int nested = argc > 4 ? atoi(argv[4]) : 0;
    if (calls < 0 || steps < 1 || team < 1 || nested < 0) {
        fprintf(stderr, "usage: %s [calls] [work per call >= 1] [T >= 1] [nested calls]\n", argv[0]);
        return 2;
    }
    omp_set_max_active_levels(2); /* the inner teams are real teams */
    for (int k = 0; k < calls; k++) {
        region_default(steps, k);
        region_clause(steps, k, team);
    }
    for (int k = 0; k < nested; k++)
        region_outer(steps, k);
    printf("max team: default %d, num_threads(%d) %d", max_default, team, max_clause);
    if (nested)
        printf(", inner %d..%d", min_inner, max_inner);
    printf("; max level %d; checksum %016lx\n", max_level, sum);
    return 0;
}
