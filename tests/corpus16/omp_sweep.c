/* A tiny OpenMP program for the corpus kit's test (tests/test_corpus16_kit.py): a repeated
 * parallel loop, so corecast sees a region called several times.  usage: omp_sweep ITERS */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    enum { N = 1 << 16 };
    static double a[N];
    double total = 0.0;
    for (int it = 0; it < iters; it++) {
        double s = 0.0;
#pragma omp parallel for reduction(+ : s)
        for (int i = 0; i < N; i++) {
            a[i] = a[i] * 0.5 + (double)(i % 7) * it;
            s += a[i];
        }
        total += s;
    }
    printf("%g\n", total);
    return 0;
}
