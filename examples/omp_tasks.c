/* Explicit OpenMP tasks: a binary tree of tasks under one single block (the BOTS shape),
 * with argument blocks of several shapes (plain firstprivate, an array, an over-aligned
 * value, an undeferred task, dependences; C++ copy constructors are in the tests).  Its
 * output is the same at any thread count, with gcc or clang.
 *   omp_tasks [depth [work]]   e.g. OMP_NUM_THREADS=4 ./omp_tasks 10 200000 */
#include <stdio.h>
#include <stdlib.h>

static double work(long n, double seed) {
    double s = seed;
    for (long i = 0; i < n; i++)
        s = s * 0.999999 + 1e-9 * (double)(i & 1023);
    return s;
}

static double tree(int depth, long n) {
    if (depth == 0)
        return work(n, 1.0);
    double a = 0, b = 0;
#pragma omp task shared(a) firstprivate(depth, n)
    a = tree(depth - 1, n);
#pragma omp task shared(b) firstprivate(depth, n)
    b = tree(depth - 1, n);
#pragma omp taskwait
    return a + b;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 8;
    long n = argc > 2 ? atol(argv[2]) : 100000;
    if (depth < 0 || depth > 20 || n < 0) {
        fprintf(stderr, "usage: omp_tasks [depth 0..20 [work]]\n");
        return 2;
    }
    double total = 0, array_sum = 0, aligned_out = 0, dep = 0;
    enum { M = 37 };
    double array[M];
    for (int i = 0; i < M; i++)
        array[i] = i;
    _Alignas(64) double aligned = 3.0;
#pragma omp task shared(dep) /* outside any parallel region: runs at once */
    dep = 0.5;
#pragma omp parallel
#pragma omp single
    {
        total = tree(depth, n);
#pragma omp task firstprivate(array) shared(array_sum) /* a block of 37 doubles, copied */
        for (int i = 0; i < M; i++)
            array_sum += array[i];
#pragma omp task firstprivate(aligned) shared(aligned_out)
        aligned_out = aligned * ((unsigned long)&aligned % 64 == 0 ? 2 : 0);
#pragma omp task if (0) shared(dep) /* undeferred: runs at once on this thread */
        dep += 1;
#pragma omp task depend(out : dep) shared(dep)
        dep *= 10;
#pragma omp task depend(in : dep) shared(dep, total)
        total += dep;
#pragma omp taskwait
    }
    printf("tasks %.6f array %.1f aligned %.1f dep %.1f\n", total, array_sum, aligned_out, dep);
    return 0;
}
