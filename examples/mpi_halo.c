/* MPI halo exchange: a 1-D Jacobi smoother split across ranks.  Each step swaps one ghost
 * cell with each neighbour (MPI_Irecv/MPI_Isend/MPI_Waitall, then MPI_Sendrecv for a
 * second field) and sums the residual with MPI_Allreduce; every 10 steps a non-blocking
 * MPI_Iallreduce is completed with MPI_Wait.  Rank 0 prints a checksum that does not
 * depend on the number of ranks (up to rounding in the last printed digit's neighbours).
 *
 *   mpicc -O2 examples/mpi_halo.c -o mpi_halo
 *   mpirun -np 2 corecast run --json-out 'halo-{rank}.jsonl' -- ./mpi_halo [cells] [steps]
 *   corecast merge halo-*.jsonl
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long cells = argc > 1 ? atol(argv[1]) : 2000000;
    int steps = argc > 2 ? atoi(argv[2]) : 200;
    if (cells < size || steps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: %s [cells >= ranks] [steps >= 1]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    long lo = cells * rank / size, hi = cells * (rank + 1) / size, n = hi - lo;
    double *u = calloc(n + 2, sizeof *u), *v = calloc(n + 2, sizeof *v), *w = calloc(n + 2, sizeof *w);
    if (!u || !v || !w) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 1; i <= n; i++)
        u[i] = w[i] = (double)((lo + i - 1) % 97) / 97.0;
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double residual = 0, total = 0;
    for (int s = 0; s < steps; s++) {
        MPI_Request req[4];
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        MPI_Sendrecv(&w[n], 1, MPI_DOUBLE, right, 2, &w[0], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        double local = 0;
        for (long i = 1; i <= n; i++) {
            v[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]) + 0.001 * w[i - 1];
            local += (v[i] - u[i]) * (v[i] - u[i]);
        }
        double *t = u;
        u = v;
        v = t;
        MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (s % 10 == 9) {
            double mine = 0, sum = 0;
            for (long i = 1; i <= n; i++)
                mine += u[i];
            MPI_Request r;
            MPI_Iallreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            total = sum;
        }
    }
    if (rank == 0)
        printf("cells %ld steps %d residual %.6e sum %.6f\n", cells, steps, residual, total);
    free(u);
    free(v);
    free(w);
    MPI_Finalize();
    return 0;
}
