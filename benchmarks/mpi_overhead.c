/* MPI calls timed from inside (MPI_Wtime): ns per MPI_Barrier and per zero-byte
 * MPI_Sendrecv with the neighbour (itself at one rank), after a warm-up.  Rank 0 prints
 * "barrier NS sendrecv NS".  Used by benchmarks/mpi_overhead.py. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long calls = argc > 1 ? atol(argv[1]) : 100000;
    int peer = rank ^ 1;
    if (peer >= size)
        peer = rank;
    char c = 0;
    for (long i = 0; i < calls / 10; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < calls; i++)
        MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    for (long i = 0; i < calls; i++)
        MPI_Sendrecv(&c, 0, MPI_CHAR, peer, 0, &c, 0, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double t2 = MPI_Wtime();
    if (rank == 0)
        printf("barrier %.1f sendrecv %.1f\n", (t1 - t0) / calls * 1e9, (t2 - t1) / calls * 1e9);
    MPI_Finalize();
    return 0;
}
