"""MPI requests under the preload library (shims/mpi.c, native/mpi_requests.c): a
non-blocking collective completed on another thread than the one that posted it,
persistent point-to-point requests and persistent collectives started with MPI_Start /
MPI_Startall, and more non-blocking collectives pending than the shim's table holds.

Needs Open MPI, as test_mpi.py (its fixtures); counts and bytes exactly, nothing on speed.
"""
from __future__ import annotations

import subprocess

import pytest

from .helpers import events, read_lines, run
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


# A stand-in MPI library (int handles, as MPICH's; each call's handle chosen by the
# program through fake_next), so that a handle comes back at a chosen moment: inside the
# program's MPI_Request_free, a thread of its own makes a new persistent request, which the
# library may give the handle just freed (MPI_THREAD_MULTIPLE).
FAKE_MPI_C = r"""
#include <pthread.h>
typedef void *mpi_h;
int fake_next;                 /* the next request's handle */
void (*fake_in_free)(void);    /* run inside PMPI_Request_free, after the handle is free */
int PMPI_Init(int *c, char ***v) { (void)c; (void)v; return 0; }
int MPI_Init(int *c, char ***v) { return PMPI_Init(c, v); }
int PMPI_Finalize(void) { return 0; }
int MPI_Finalize(void) { return 0; }
int PMPI_Type_size(mpi_h t, int *s) { *s = (int)(long)t; return 0; }
int PMPI_Comm_size(mpi_h c, int *n) { (void)c; *n = 1; return 0; }
int PMPI_Comm_rank(mpi_h c, int *r) { (void)c; *r = 0; return 0; }
int PMPI_Send_init(const void *b, int n, mpi_h t, int d, int g, mpi_h c, int *req) {
    (void)b; (void)n; (void)t; (void)d; (void)g; (void)c; *req = fake_next; return 0;
}
int MPI_Send_init(const void *b, int n, mpi_h t, int d, int g, mpi_h c, int *req) { return PMPI_Send_init(b, n, t, d, g, c, req); }
int PMPI_Start(int *req) { (void)req; return 0; }
int MPI_Start(int *req) { return PMPI_Start(req); }
int PMPI_Request_free(int *req) { *req = 0; if (fake_in_free) fake_in_free(); return 0; }
int MPI_Request_free(int *req) { return PMPI_Request_free(req); }
"""

FREE_REUSE_C = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
typedef void *mpi_h;
extern int fake_next;
extern void (*fake_in_free)(void);
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Send_init(const void *, int, mpi_h, int, int, mpi_h, int *);
int MPI_Start(int *);
int MPI_Request_free(int *);
#define INT4 ((mpi_h)4)
static int buf[4], h, fresh;
static unsigned slot_of(uintptr_t x) { return (unsigned)(((uint64_t)x * 0x9E3779B97F4A7C15ull) >> 55) % 512; }
static void *make(void *a) { fake_next = h; MPI_Send_init(buf, 3, INT4, 0, 0, 0, &fresh); return a; }
static void reuse(void) { pthread_t t; fake_in_free = 0; pthread_create(&t, 0, make, 0); pthread_join(t, 0); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int g = 1000, older, req;
    for (h = g + 1; slot_of((unsigned)h) != slot_of((unsigned)g); h++) /* two handles, one chain */
        ;
    fake_next = g; MPI_Send_init(buf, 1, INT4, 0, 0, 0, &older);  /* 4 bytes, the chain's first */
    fake_next = h; MPI_Send_init(buf, 2, INT4, 0, 0, 0, &req);    /* 8 bytes, its second */
    MPI_Request_free(&older);
    fake_in_free = reuse;   /* h made again (12 bytes) while its free returns */
    MPI_Request_free(&req);
    MPI_Start(&fresh);      /* a post of 12 bytes */
    printf("handle %d started\n", fresh);
    MPI_Finalize();
    return 0;
}
"""


def test_a_handle_made_again_while_its_free_returns_keeps_its_new_bytes(build, lib, tmp_path):
    """MPI_Request_free forgot the handle after the library's call returned: a thread that
    made a new persistent request meanwhile, given the freed handle back, had its new entry
    forgotten in place of the old one (the first on the handle's probe chain), and its
    starts counted the old request's bytes.  The entry is now found before the call."""
    fake = build("libfakempi.so", FAKE_MPI_C, "-shared", "-fPIC", "-pthread")
    prog = build("mpi_free_reuse", FREE_REUSE_C, f"-L{fake.parent}", "-lfakempi",
                 f"-Wl,-rpath,{fake.parent}", "-pthread")
    out = tmp_path / "reuse.jsonl"
    r = run([prog], preload=lib, output=out, quiet="1", timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(b"handle "), (r.stdout, r.stderr)
    acq, nbytes, _ = process_counts(out)
    assert acq.get("mpi_p2p") == 1 and nbytes == {"mpi_p2p": 12}, (acq, nbytes)


# Persistent collectives (MPI-4's MPI_Allreduce_init, ...; Open MPI 4.1's MPIX_ forms from
# its pcollreq extension): an Allreduce of 3 doubles and a Barrier made once, started 4
# times together and 2 times one by one, each round waited with one Waitall, then freed;
# then a point-to-point pair, whose wait stays point-to-point.
PERSISTENT_COLL_C = r"""
#include <mpi.h>
#include <stdio.h>
#if MPI_VERSION < 4 && defined(OPEN_MPI)
#include <mpi-ext.h>
#endif
#if MPI_VERSION >= 4
#define INIT(name) MPI_##name##_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define INIT(name) MPIX_##name##_init
#else
#error no persistent collectives
#endif
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, x = 0, y = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double d[3] = {rank, rank, rank}, e[3];
    MPI_Request q[2];
    INIT(Allreduce)(d, e, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]);
    INIT(Barrier)(MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]);
    double sum = 0;
    for (int i = 0; i < 6; i++) {
        if (i < 4) {
            MPI_Startall(2, q);
        } else {
            MPI_Start(&q[0]);
            MPI_Start(&q[1]);
        }
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        sum += e[2];
    }
    MPI_Request_free(&q[0]);
    MPI_Request_free(&q[1]);
    MPI_Sendrecv(&rank, 1, MPI_INT, 1 - rank, 0, &x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(&y, 1, MPI_INT, 1 - rank, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Send(&rank, 1, MPI_INT, 1 - rank, 1, MPI_COMM_WORLD);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    printf("rank %d: %g %d %d\n", rank, sum, x, y);
    MPI_Finalize();
    return 0;
}
"""


def test_persistent_collectives_are_collectives_with_their_bytes(mpi, mpi_build, tmp_path):
    """MPI_Start of a persistent collective was a point-to-point post of 0 bytes, and its
    wait a point-to-point wait: both are collective, with the bytes its blocking form counts."""
    src = tmp_path / "coll.c"
    src.write_text(PERSISTENT_COLL_C)
    probe = subprocess.run([mpi[0], "-E", str(src)], capture_output=True, text=True, timeout=60)
    if "no persistent collectives" in probe.stderr:
        pytest.skip("this MPI has no persistent collectives (MPI-4, or Open MPI's pcollreq extension)")
    prog = mpi_build("mpi_persistent_coll", PERSISTENT_COLL_C)
    plain = mpirun(mpi, 2, [prog])
    assert plain.returncode == 0, plain.stderr.decode()
    out = tmp_path / "c-{rank}.jsonl"
    r = mpirun(mpi, 2, [prog], corecast_args=["--quiet", "--json-out", str(out)])
    assert (r.returncode, sorted(r.stdout.splitlines())) == (0, sorted(plain.stdout.splitlines()))
    for rank in (0, 1):
        acq, nbytes, stalls = process_counts(tmp_path / f"c-{rank}.jsonl")
        # 12 starts and 6 Waitalls; the Sendrecv, the Irecv, the Send and the Wait
        assert (acq["mpi_collective"], acq["mpi_p2p"]) == (12 + 6, 4), (rank, acq)
        assert nbytes == {"mpi_collective": 6 * 2 * 24, "mpi_p2p": 8 + 4 + 4}, rank
        assert stalls["mpi_collective"] > 0


# More non-blocking collectives pending than the shim's table holds (64): the stand-in
# library hands out handles 1, 2, ...; each one forgotten is an event not recorded.
FAKE_COLL_C = r"""
typedef void *mpi_h;
static int next_handle;
int PMPI_Init(int *c, char ***v) { (void)c; (void)v; return 0; }
int MPI_Init(int *c, char ***v) { return PMPI_Init(c, v); }
int PMPI_Finalize(void) { return 0; }
int MPI_Finalize(void) { return 0; }
int PMPI_Type_size(mpi_h t, int *s) { *s = (int)(long)t; return 0; }
int PMPI_Comm_size(mpi_h c, int *n) { (void)c; *n = 1; return 0; }
int PMPI_Comm_rank(mpi_h c, int *r) { (void)c; *r = 0; return 0; }
int PMPI_Ibarrier(mpi_h c, int *req) { (void)c; *req = ++next_handle; return 0; }
int MPI_Ibarrier(mpi_h c, int *req) { return PMPI_Ibarrier(c, req); }
int PMPI_Waitall(int n, int *reqs, void *st) { (void)st; for (int i = 0; i < n; i++) reqs[i] = 0; return 0; }
int MPI_Waitall(int n, int *reqs, void *st) { return PMPI_Waitall(n, reqs, st); }
int PMPI_Send_init(const void *b, int n, mpi_h t, int d, int g, mpi_h c, int *req) {
    (void)b; (void)n; (void)t; (void)d; (void)g; (void)c; *req = 1000 + ++next_handle; return 0;
}
int MPI_Send_init(const void *b, int n, mpi_h t, int d, int g, mpi_h c, int *req) { return PMPI_Send_init(b, n, t, d, g, c, req); }
"""

MANY_PENDING_C = r"""
#include <stdio.h>
typedef void *mpi_h;
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Ibarrier(mpi_h, int *);
int MPI_Waitall(int, int *, void *);
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int reqs[66];
    for (int i = 0; i < 66; i++)
        MPI_Ibarrier(0, &reqs[i]);
    for (int i = 0; i < 66; i++)
        MPI_Waitall(1, &reqs[i], 0);
    printf("waited\n");
    MPI_Finalize();
    return 0;
}
"""


def test_collectives_past_the_pending_table_are_counted_as_not_recorded(build, lib, tmp_path):
    """The 65th and 66th pending collectives each push out one the table held, whose wait
    then reads as point-to-point: that was silent; each is now in the summary's overflow."""
    fake = build("libfakecoll.so", FAKE_COLL_C, "-shared", "-fPIC")
    prog = build("mpi_many_pending", MANY_PENDING_C, f"-L{fake.parent}", "-lfakecoll",
                 f"-Wl,-rpath,{fake.parent}")
    out = tmp_path / "many.jsonl"
    r = run([prog], preload=lib, output=out, quiet="1", timeout=60)
    assert r.returncode == 0 and r.stdout == b"waited\n", (r.stdout, r.stderr)
    acq, _, _ = process_counts(out)
    assert (acq["mpi_collective"], acq.get("mpi_p2p", 0)) == (66 + 64, 2), acq
    assert events(read_lines(out), "summary")[0]["overflow"] == 2


MANY_PERSISTENT_C = r"""
#include <stdio.h>
typedef void *mpi_h;
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Send_init(const void *, int, mpi_h, int, int, mpi_h, int *);
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    static int buf[1], reqs[514];
    for (int i = 0; i < 514; i++)
        MPI_Send_init(buf, 1, (mpi_h)4, 0, 0, 0, &reqs[i]);
    printf("made\n");
    MPI_Finalize();
    return 0;
}
"""


def test_persistent_requests_past_the_table_are_counted_as_not_recorded(build, lib, tmp_path):
    """The 513th and 514th persistent requests find no slot (their starts would count no
    bytes, a collective's waits read as point-to-point): each is in the summary's overflow."""
    fake = build("libfakecoll.so", FAKE_COLL_C, "-shared", "-fPIC")
    prog = build("mpi_many_persistent", MANY_PERSISTENT_C, f"-L{fake.parent}", "-lfakecoll",
                 f"-Wl,-rpath,{fake.parent}")
    out = tmp_path / "persistent.jsonl"
    r = run([prog], preload=lib, output=out, quiet="1", timeout=60)
    assert r.returncode == 0 and r.stdout == b"made\n", (r.stdout, r.stderr)
    assert events(read_lines(out), "summary")[0]["overflow"] == 2
