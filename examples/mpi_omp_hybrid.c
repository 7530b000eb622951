/* Hybrid MPI + OpenMP: each rank integrates its share of 4/(1+x^2) over [0, 1] with an
 * OpenMP loop (OMP_NUM_THREADS threads per rank), the ranks sum with MPI_Reduce and
 * MPI_Bcast the result, and a barrier closes every round.  Rank 0 prints pi.
 *
 *   mpicc -O2 -fopenmp examples/mpi_omp_hybrid.c -o mpi_omp_hybrid
 *   OMP_NUM_THREADS=2 mpirun -np 2 corecast run --json-out 'hy-{rank}.jsonl' -- ./mpi_omp_hybrid [steps] [rounds]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long steps = argc > 1 ? atol(argv[1]) : 20000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    if (steps < size || rounds < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: %s [steps >= ranks] [rounds >= 1]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long lo = steps * rank / size, hi = steps * (rank + 1) / size;
    double h = 1.0 / (double)steps, pi = 0;
    for (int r = 0; r < rounds; r++) {
        double local = 0, sum = 0;
#pragma omp parallel for reduction(+ : local) schedule(static)
        for (long i = lo; i < hi; i++) {
            double x = h * ((double)i + 0.5);
            local += 4.0 / (1.0 + x * x);
        }
        MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            pi = sum * h;
        MPI_Bcast(&pi, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("pi %.10f after %d rounds of %ld steps\n", pi, rounds, steps);
    MPI_Finalize();
    return 0;
}
