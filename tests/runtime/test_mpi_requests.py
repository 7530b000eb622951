"""MPI requests under the preload library (shims/mpi.c, native/mpi_requests.c): a
non-blocking collective completed on another thread than the one that posted it, and
persistent point-to-point requests started with MPI_Start / MPI_Startall.

Needs Open MPI, as test_mpi.py (its fixtures); counts and bytes exactly, nothing on speed.
"""
from __future__ import annotations

from .helpers import events, read_lines
from .test_mpi import mpi, mpi_build, mpirun  # noqa: F401 - fixtures

# Rank's Iallreduce posted on the main thread, waited for on another (SERIALIZED: one
# thread in MPI at a time, the join orders them).
OTHER_THREAD_C = r"""
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
static MPI_Request r;
static void *waiter(void *arg) { MPI_Wait(&r, MPI_STATUS_IGNORE); return arg; }
int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double d = rank + 1, e = 0;
    MPI_Iallreduce(&d, &e, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    pthread_t t;
    pthread_create(&t, 0, waiter, 0);
    pthread_join(t, 0);
    printf("rank %d: %g (thread level %d)\n", rank, e, provided >= MPI_THREAD_SERIALIZED);
    MPI_Finalize();
    return 0;
}
"""


def process_counts(path):
    proc = events(read_lines(path), "process")[0]
    return proc["counters"]["acquisitions"], proc["counters"].get("bytes", {}), proc["stalls_s"]


def test_collective_waited_on_another_thread_is_a_collective_wait(mpi, mpi_build, tmp_path):
    prog = mpi_build("mpi_other_thread", OTHER_THREAD_C, "-pthread")
    plain = mpirun(mpi, 2, [prog])
    assert plain.returncode == 0, plain.stderr.decode()
    assert b"(thread level 1)" in plain.stdout
    out = tmp_path / "o-{rank}.jsonl"
    r = mpirun(mpi, 2, [prog], corecast_args=["--quiet", "--json-out", str(out)])
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, sorted(plain.stdout.splitlines()))
    for rank in (0, 1):
        acq, nbytes, stalls = process_counts(tmp_path / f"o-{rank}.jsonl")
        # the post and its wait, both collective; nothing point-to-point
        assert (acq["mpi_collective"], acq.get("mpi_p2p", 0)) == (2, 0), (rank, acq)
        assert nbytes == {"mpi_collective": 2 * 8}, rank
        assert stalls["mpi_collective"] > 0 and stalls.get("mpi_p2p", 0) == 0


# Persistent requests: a receive and a send of 4 ints made once, started 5 times together
# (MPI_Startall) and 3 times one by one (MPI_Start), then freed; then a pair of 10 doubles,
# started once (the library may hand the freed handles out again: the new bytes count).
PERSISTENT_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, out[4], in[4] = {0}, sum = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    MPI_Request q[2];
    MPI_Recv_init(in, 4, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(out, 4, MPI_INT, peer, 0, MPI_COMM_WORLD, &q[1]);
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < 4; k++)
            out[k] = rank * 100 + i;
        if (i < 5) {
            MPI_Startall(2, q);
        } else {
            MPI_Start(&q[0]);
            MPI_Start(&q[1]);
        }
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        sum += in[3];
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    double big[10] = {0}, got[10];
    MPI_Recv_init(got, 10, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Send_init(big, 10, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Startall(2, q);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    printf("rank %d: %d\n", rank, sum);
    MPI_Finalize();
    return 0;
}
"""


def test_persistent_requests_started_are_posts_with_their_bytes(mpi, mpi_build, tmp_path):
    prog = mpi_build("mpi_persistent", PERSISTENT_C)
    plain = mpirun(mpi, 2, [prog])
    assert plain.returncode == 0, plain.stderr.decode()
    out = tmp_path / "p-{rank}.jsonl"
    r = mpirun(mpi, 2, [prog], corecast_args=["--quiet", "--json-out", str(out)])
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, sorted(plain.stdout.splitlines()))
    for rank in (0, 1):
        acq, nbytes, stalls = process_counts(tmp_path / f"p-{rank}.jsonl")
        # 16 starts and 8 Waitalls; then 2 starts and their Waitall
        assert (acq["mpi_p2p"], acq.get("mpi_collective", 0)) == (16 + 8 + 3, 0), (rank, acq)
        assert nbytes == {"mpi_p2p": 16 * 16 + 2 * 80}, rank
        assert stalls["mpi_p2p"] > 0
