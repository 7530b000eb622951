/* MPI shim (over 400 lines: one runtime, one file, as shims/ has one per runtime, one
 * short wrapper per MPI call; what it remembers of requests is native/mpi_requests.c): the
 * profiling interface (PMPI).  The library defines MPI_Recv, MPI_Allreduce, ...; a program
 * that links an MPI library calls these first, and they forward to the library's PMPI_*
 * entry points (found at run time: corecast never links MPI).  A program without MPI never
 * calls them, so it pays nothing.
 *
 * Blocking point-to-point calls and the completion of requests are timed as mpi_p2p,
 * collectives and the completion of non-blocking and persistent collectives as
 * mpi_collective; a post (a non-blocking call, each start of a persistent request) counts
 * as a call of its category.
 * All with the payload bytes their arguments describe (sent plus received; a receive
 * counts the buffer it posted, since MPI_Status layouts differ between libraries).
 *
 * Handles (MPI_Comm, MPI_Datatype, MPI_Op) are pointers in Open MPI and ints in MPICH and
 * its derivatives: they are taken and forwarded as register-width values, which the
 * LP64 calling conventions pass the same way.  Arrays of MPI_Request are read with the
 * library's element width (8 bytes in Open MPI, 4 elsewhere).  The C bindings only:
 * Open MPI's Fortran bindings call the C library internally, past these wrappers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "../native/corecast.h"
#include "../native/mpi_requests.h"

typedef void *mpi_h;

/* The real entry point for ``name`` ("PMPI_Recv"), in the caller's MPI library.  MPI
 * guarantees PMPI_* names: one missing is not an MPI library this shim can serve. */
static void *pmpi(const char *name, const void *caller) {
    void *p = cc_resolve(name, caller);
    if (!p) {
        cc_warn("%s not found in the program's MPI library; run it without corecast", name);
        abort();
    }
    return p;
}

/* ``real`` declared as a pointer to the wrapper's own type, resolved on first use (racing
 * threads store the same value). */
#define REAL(name)                                                                            \
    static __typeof__(name) *real;                                                           \
    __typeof__(name) *fn = __atomic_load_n(&real, __ATOMIC_RELAXED);                          \
    if (__builtin_expect(!fn, 0)) {                                                          \
        fn = (__typeof__(name) *)pmpi("P" #name, __builtin_return_address(0));               \
        __atomic_store_n(&real, fn, __ATOMIC_RELAXED);                                       \
    }

/* Helpers the byte counts need, resolved at MPI_Init (before it, no MPI call is legal). */
static int (*type_size)(mpi_h, int *);
static int (*comm_size)(mpi_h, int *);
static int (*comm_rank)(mpi_h, int *);

static void resolve_helpers(const void *caller) {
    type_size = pmpi("PMPI_Type_size", caller);
    comm_size = pmpi("PMPI_Comm_size", caller);
    comm_rank = pmpi("PMPI_Comm_rank", caller);
    cc_mpi_wide_requests = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world") != NULL;
}

static uint64_t type_bytes(long count, mpi_h type) {
    int size = 0;
    if (count <= 0 || !type_size || type_size(type, &size) != 0 || size <= 0)
        return 0;
    return (uint64_t)count * (uint64_t)size;
}

static int size_of(mpi_h comm) {
    int n = 0;
    return comm_size && comm_size(comm, &n) == 0 && n > 0 ? n : 1;
}

static int is_root(int root, mpi_h comm) {
    int me = -1;
    return comm_rank && comm_rank(comm, &me) == 0 && me == root;
}

static long sum_counts(const int *counts, int n) {
    long s = 0;
    for (int i = 0; counts && i < n; i++)
        s += counts[i] > 0 ? counts[i] : 0;
    return s;
}

/* This rank's entry of ``counts`` (a reduce-scatter's block: what it receives). */
static long own_count(const int *counts, mpi_h comm) {
    int me = -1;
    return counts && comm_rank && comm_rank(comm, &me) == 0 && me >= 0 && me < size_of(comm) ? counts[me] : 0;
}

/* The calling thread, or NULL when the call must pass straight through: corecast is off
 * or inside itself, or the wrapper was reached from inside the MPI library. */
static inline struct cc_thread *mpi_self(void) {
    if (!cc_active)
        return NULL;
    struct cc_thread *t = cc_self();
    return t->guard ? NULL : t;
}

static inline void account(struct cc_thread *t, int cat, uint64_t waited, uint64_t bytes) {
    cc_note(t, cat, waited, 0);
    if (bytes)
        CC_ADD(t->mpi_bytes[cat], bytes);
}

/* The MPI library's own synchronisation (a progress thread's mutex, a condition wait) is
 * part of the MPI wait, not a pthread stall: the guard hides it from shims/pthread.c. */
#define TIMED(cat, call, bytes)                                                               \
    struct cc_thread *t = mpi_self();                                                        \
    if (!t)                                                                                  \
        return call;                                                                         \
    t->guard++;                                                                              \
    uint64_t t0 = cc_now();                                                                  \
    int r = call;                                                                            \
    uint64_t w = cc_now() - t0;                                                              \
    t->guard--;                                                                              \
    account(t, cat, w ? w : 1, r == 0 ? (bytes) : 0);                                        \
    return r

/* The MPI library's own call, untimed, under the guard (as TIMED's): ``t`` and its
 * status ``r`` for what the wrapper counts after it; a thread with no slot just calls. */
#define GUARDED(call)                                                                        \
    struct cc_thread *t = mpi_self();                                                        \
    if (!t)                                                                                  \
        return call;                                                                         \
    t->guard++;                                                                              \
    int r = call;                                                                            \
    t->guard--

/* A request is posted: counted with its bytes; its wait is timed where it completes. */
#define POSTED(cat, call, bytes, req)                                                        \
    GUARDED(call);                                                                           \
    if (r == 0) {                                                                            \
        account(t, cat, 0, bytes);                                                           \
        if (cat == CC_STALL_MPI_COLLECTIVE)                                                  \
            cc_mpi_collective_posted(req);                                                   \
    }                                                                                        \
    return r

/* Completing requests: a wait is timed (collective if any of them is one, non-blocking or
 * persistent), a test is not
 * (a loop of tests is the program's own polling); either way a collective it completed
 * is forgotten, since its handle may come back for a point-to-point request. */
#define COMPLETING(reqs, n, call, timed)                                                     \
    struct cc_thread *t = mpi_self();                                                        \
    if (!t)                                                                                  \
        return call;                                                                         \
    uint64_t mask = cc_mpi_collectives_in(reqs, n);                                          \
    int coll = (timed) && !mask && cc_mpi_persistent_collective_in(reqs, n);                 \
    t->guard++;                                                                              \
    uint64_t t0 = (timed) ? cc_now() : 0;                                                    \
    int r = call;                                                                            \
    uint64_t w = (timed) ? cc_now() - t0 : 0;                                                \
    t->guard--;                                                                              \
    if (mask)                                                                                \
        cc_mpi_collectives_done(mask, reqs, n);                                              \
    if (timed)                                                                               \
        account(t, mask || coll ? CC_STALL_MPI_COLLECTIVE : CC_STALL_MPI_P2P, w ? w : 1, 0); \
    return r
#define WAIT_ON(reqs, n, call) COMPLETING(reqs, n, call, 1)
#define TESTED(reqs, n, call) COMPLETING(reqs, n, call, 0)

/* ---- start-up and shut-down ---------------------------------------------------------- */
struct cc_mpi_life cc_mpi;

/* Each rank is parallel activity of its own: the sampler starts once MPI is up (not
 * before: MPI_Init may fork helpers, and its own threads are not the program's). */
#define INIT(call)                                                                               struct cc_thread *t = cc_self();                                                             double t0 = cc_mono_s();                                                                     t->guard++;                                                                                  int r = call;                                                                                t->guard--;                                                                                  cc_mpi.init_s += cc_mono_s() - t0;                                                           resolve_helpers(__builtin_return_address(0));                                                cc_mpi.initialized = 1;                                                                      cc_activity();                                                                               return r

int MPI_Init(int *argc, char ***argv) {
    REAL(MPI_Init);
    INIT(fn(argc, argv));
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    REAL(MPI_Init_thread);
    INIT(fn(argc, argv, required, provided));
}

/* Its waits are the library's shut-down, not a pthread stall of the program. */
int MPI_Finalize(void) {
    REAL(MPI_Finalize);
    struct cc_thread *t = cc_self();
    double t0 = cc_mono_s();
    t->guard++;
    int r = fn();
    t->guard--;
    cc_mpi.finalize_s += cc_mono_s() - t0;
    return r;
}

/* ---- point to point ------------------------------------------------------------------ */
int MPI_Send(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm) {
    REAL(MPI_Send);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, tag, comm), type_bytes(count, type));
}

int MPI_Ssend(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm) {
    REAL(MPI_Ssend);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, tag, comm), type_bytes(count, type));
}

int MPI_Recv(void *buf, int count, mpi_h type, int source, int tag, mpi_h comm, void *status) {
    REAL(MPI_Recv);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, source, tag, comm, status), type_bytes(count, type));
}

int MPI_Sendrecv(const void *sbuf, int scount, mpi_h stype, int dest, int stag, void *rbuf, int rcount,
                 mpi_h rtype, int source, int rtag, mpi_h comm, void *status) {
    REAL(MPI_Sendrecv);
    TIMED(CC_STALL_MPI_P2P, fn(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status),
          type_bytes(scount, stype) + type_bytes(rcount, rtype));
}

int MPI_Sendrecv_replace(void *buf, int count, mpi_h type, int dest, int stag, int source, int rtag, mpi_h comm,
                         void *status) {
    REAL(MPI_Sendrecv_replace);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, stag, source, rtag, comm, status), 2 * type_bytes(count, type));
}

int MPI_Bsend(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm) {
    REAL(MPI_Bsend);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, tag, comm), type_bytes(count, type));
}

int MPI_Rsend(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm) {
    REAL(MPI_Rsend);
    TIMED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, tag, comm), type_bytes(count, type));
}

int MPI_Probe(int source, int tag, mpi_h comm, void *status) {
    REAL(MPI_Probe);
    TIMED(CC_STALL_MPI_P2P, fn(source, tag, comm, status), 0);
}

int MPI_Isend(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm, void *req) {
    REAL(MPI_Isend);
    POSTED(CC_STALL_MPI_P2P, fn(buf, count, type, dest, tag, comm, req), type_bytes(count, type), req);
}

int MPI_Irecv(void *buf, int count, mpi_h type, int source, int tag, mpi_h comm, void *req) {
    REAL(MPI_Irecv);
    POSTED(CC_STALL_MPI_P2P, fn(buf, count, type, source, tag, comm, req), type_bytes(count, type), req);
}

/* ---- persistent requests: made once, posted at each MPI_Start* ------------------------ */
/* Making one moves nothing: its bytes (and whether it is a collective) are remembered for
 * each start. */
#define MADE(call, bytes, req, collective)                                                   \
    GUARDED(call);                                                                           \
    if (r == 0)                                                                              \
        cc_mpi_persistent_made(req, bytes, collective);                                      \
    return r

/* The four sends' persistent forms share one signature. */
#define SEND_INIT(name)                                                                       \
    int name(const void *buf, int count, mpi_h type, int dest, int tag, mpi_h comm, void *req) { \
        REAL(name);                                                                          \
        MADE(fn(buf, count, type, dest, tag, comm, req), type_bytes(count, type), req, 0);   \
    }
SEND_INIT(MPI_Send_init)
SEND_INIT(MPI_Ssend_init)
SEND_INIT(MPI_Bsend_init)
SEND_INIT(MPI_Rsend_init)

int MPI_Recv_init(void *buf, int count, mpi_h type, int source, int tag, mpi_h comm, void *req) {
    REAL(MPI_Recv_init);
    MADE(fn(buf, count, type, source, tag, comm, req), type_bytes(count, type), req, 0);
}

/* Each request started is a post of its category with its bytes (one not made here: a
 * point-to-point post without bytes). */
#define STARTED(reqs, n, call)                                                               \
    GUARDED(call);                                                                           \
    for (int i = 0; r == 0 && i < (n); i++) {                                                \
        uint64_t bytes;                                                                      \
        int cat = cc_mpi_persistent_started(cc_mpi_request_at(reqs, i), &bytes);             \
        account(t, cat, 0, bytes);                                                           \
    }                                                                                        \
    return r

int MPI_Start(void *req) {
    REAL(MPI_Start);
    STARTED(req, 1, fn(req));
}

int MPI_Startall(int n, void *reqs) {
    REAL(MPI_Startall);
    STARTED(reqs, n, fn(n, reqs));
}

/* A freed persistent request (point-to-point or collective) is forgotten: its handle may
 * come back.  (Freeing a non-blocking collective's request is erroneous in MPI.) */
int MPI_Request_free(void *req) {
    REAL(MPI_Request_free);
    struct cc_thread *t = mpi_self();
    if (!t || !req)
        return fn(req);
    uintptr_t h = cc_mpi_request_at(req, 0);
    int slot = cc_mpi_persistent_find(h); /* before: the handle may come back at once */
    t->guard++;
    int r = fn(req);
    t->guard--;
    if (r == 0)
        cc_mpi_persistent_freed(slot, h);
    return r;
}

/* ---- completion ---------------------------------------------------------------------- */
int MPI_Wait(void *req, void *status) {
    REAL(MPI_Wait);
    WAIT_ON(req, 1, fn(req, status));
}

int MPI_Waitall(int n, void *reqs, void *statuses) {
    REAL(MPI_Waitall);
    WAIT_ON(reqs, n, fn(n, reqs, statuses));
}

int MPI_Waitany(int n, void *reqs, int *index, void *status) {
    REAL(MPI_Waitany);
    WAIT_ON(reqs, n, fn(n, reqs, index, status));
}

int MPI_Waitsome(int n, void *reqs, int *outcount, int *indices, void *statuses) {
    REAL(MPI_Waitsome);
    WAIT_ON(reqs, n, fn(n, reqs, outcount, indices, statuses));
}

int MPI_Test(void *req, int *flag, void *status) {
    REAL(MPI_Test);
    TESTED(req, 1, fn(req, flag, status));
}

int MPI_Testall(int n, void *reqs, int *flag, void *statuses) {
    REAL(MPI_Testall);
    TESTED(reqs, n, fn(n, reqs, flag, statuses));
}

int MPI_Testany(int n, void *reqs, int *index, int *flag, void *status) {
    REAL(MPI_Testany);
    TESTED(reqs, n, fn(n, reqs, index, flag, status));
}

int MPI_Testsome(int n, void *reqs, int *outcount, int *indices, void *statuses) {
    REAL(MPI_Testsome);
    TESTED(reqs, n, fn(n, reqs, outcount, indices, statuses));
}

/* ---- collectives --------------------------------------------------------------------- */
int MPI_Barrier(mpi_h comm) {
    REAL(MPI_Barrier);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(comm), 0);
}

int MPI_Bcast(void *buf, int count, mpi_h type, int root, mpi_h comm) {
    REAL(MPI_Bcast);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(buf, count, type, root, comm), type_bytes(count, type));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, int root, mpi_h comm) {
    REAL(MPI_Reduce);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, root, comm),
          type_bytes(count, type) * (is_root(root, comm) ? 2 : 1));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm) {
    REAL(MPI_Allreduce);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, comm), 2 * type_bytes(count, type));
}

int MPI_Alltoall(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, mpi_h comm) {
    REAL(MPI_Alltoall);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, comm),
          (type_bytes(scount, stype) + type_bytes(rcount, rtype)) * (uint64_t)size_of(comm));
}

int MPI_Alltoallv(const void *sbuf, const int *scounts, const int *sdispls, mpi_h stype, void *rbuf,
                  const int *rcounts, const int *rdispls, mpi_h rtype, mpi_h comm) {
    REAL(MPI_Alltoallv);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm),
          type_bytes(sum_counts(scounts, size_of(comm)), stype) + type_bytes(sum_counts(rcounts, size_of(comm)), rtype));
}

int MPI_Allgather(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, mpi_h comm) {
    REAL(MPI_Allgather);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, comm),
          type_bytes(scount, stype) + type_bytes(rcount, rtype) * (uint64_t)size_of(comm));
}

int MPI_Allgatherv(const void *sbuf, int scount, mpi_h stype, void *rbuf, const int *rcounts, const int *displs,
                   mpi_h rtype, mpi_h comm) {
    REAL(MPI_Allgatherv);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm),
          type_bytes(scount, stype) + type_bytes(sum_counts(rcounts, size_of(comm)), rtype));
}

int MPI_Gather(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, int root,
               mpi_h comm) {
    REAL(MPI_Gather);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
          type_bytes(scount, stype) +
              (is_root(root, comm) ? type_bytes(rcount, rtype) * (uint64_t)size_of(comm) : 0));
}

int MPI_Scatter(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, int root,
                mpi_h comm) {
    REAL(MPI_Scatter);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
          type_bytes(rcount, rtype) +
              (is_root(root, comm) ? type_bytes(scount, stype) * (uint64_t)size_of(comm) : 0));
}

int MPI_Gatherv(const void *sbuf, int scount, mpi_h stype, void *rbuf, const int *rcounts, const int *displs,
                mpi_h rtype, int root, mpi_h comm) {
    REAL(MPI_Gatherv);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm),
          type_bytes(scount, stype) +
              (is_root(root, comm) ? type_bytes(sum_counts(rcounts, size_of(comm)), rtype) : 0));
}

int MPI_Scatterv(const void *sbuf, const int *scounts, const int *displs, mpi_h stype, void *rbuf, int rcount,
                 mpi_h rtype, int root, mpi_h comm) {
    REAL(MPI_Scatterv);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
          type_bytes(rcount, rtype) +
              (is_root(root, comm) ? type_bytes(sum_counts(scounts, size_of(comm)), stype) : 0));
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, mpi_h type, mpi_h op, mpi_h comm) {
    REAL(MPI_Reduce_scatter);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, rcounts, type, op, comm),
          type_bytes(sum_counts(rcounts, size_of(comm)), type) + type_bytes(own_count(rcounts, comm), type));
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, mpi_h type, mpi_h op, mpi_h comm) {
    REAL(MPI_Reduce_scatter_block);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, rcount, type, op, comm),
          type_bytes(rcount, type) * ((uint64_t)size_of(comm) + 1));
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm) {
    REAL(MPI_Scan);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, comm), 2 * type_bytes(count, type));
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm) {
    REAL(MPI_Exscan);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, comm), 2 * type_bytes(count, type));
}

/* Communicators made collectively: each waits for every member of ``comm`` (no payload). */
int MPI_Comm_split(mpi_h comm, int color, int key, void *out) {
    REAL(MPI_Comm_split);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(comm, color, key, out), 0);
}

int MPI_Comm_split_type(mpi_h comm, int type, int key, mpi_h info, void *out) {
    REAL(MPI_Comm_split_type);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(comm, type, key, info, out), 0);
}

int MPI_Comm_dup(mpi_h comm, void *out) {
    REAL(MPI_Comm_dup);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(comm, out), 0);
}

int MPI_Comm_create(mpi_h comm, mpi_h group, void *out) {
    REAL(MPI_Comm_create);
    TIMED(CC_STALL_MPI_COLLECTIVE, fn(comm, group, out), 0);
}

/* ---- non-blocking collectives: posted here, waited in MPI_Wait* ---------------------- */
int MPI_Ibarrier(mpi_h comm, void *req) {
    REAL(MPI_Ibarrier);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(comm, req), 0, req);
}

int MPI_Ibcast(void *buf, int count, mpi_h type, int root, mpi_h comm, void *req) {
    REAL(MPI_Ibcast);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(buf, count, type, root, comm, req), type_bytes(count, type), req);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm, void *req) {
    REAL(MPI_Iallreduce);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, comm, req), 2 * type_bytes(count, type), req);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, int root, mpi_h comm, void *req) {
    REAL(MPI_Ireduce);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, rbuf, count, type, op, root, comm, req),
           type_bytes(count, type) * (is_root(root, comm) ? 2 : 1), req);
}

int MPI_Ialltoall(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, mpi_h comm,
                  void *req) {
    REAL(MPI_Ialltoall);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
           (type_bytes(scount, stype) + type_bytes(rcount, rtype)) * (uint64_t)size_of(comm), req);
}

int MPI_Iallgather(const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype, mpi_h comm,
                   void *req) {
    REAL(MPI_Iallgather);
    POSTED(CC_STALL_MPI_COLLECTIVE, fn(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
           type_bytes(scount, stype) + type_bytes(rcount, rtype) * (uint64_t)size_of(comm), req);
}

/* ---- persistent collectives: made here, posted at each MPI_Start*, waited in MPI_Wait* --
 * MPI-4's MPI_Allreduce_init, ... and Open MPI 4.1's MPIX_ forms (its pcollreq extension),
 * each start counted with the bytes its blocking form counts.  A library without one
 * never reaches its wrapper: a program linked to it cannot call it. */
#define PERSISTENT_COLLECTIVE(name, params, args, bytes)                                     \
    int MPI_##name##_init params {                                                           \
        REAL(MPI_##name##_init);                                                             \
        MADE(fn args, bytes, req, 1);                                                        \
    }                                                                                        \
    int MPIX_##name##_init params {                                                          \
        REAL(MPIX_##name##_init);                                                            \
        MADE(fn args, bytes, req, 1);                                                        \
    }

PERSISTENT_COLLECTIVE(Barrier, (mpi_h comm, mpi_h info, void *req), (comm, info, req), 0)
PERSISTENT_COLLECTIVE(Bcast, (void *buf, int count, mpi_h type, int root, mpi_h comm, mpi_h info, void *req),
                      (buf, count, type, root, comm, info, req), type_bytes(count, type))
PERSISTENT_COLLECTIVE(Reduce, (const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, int root, mpi_h comm,
                               mpi_h info, void *req),
                      (sbuf, rbuf, count, type, op, root, comm, info, req),
                      type_bytes(count, type) * (is_root(root, comm) ? 2 : 1))
PERSISTENT_COLLECTIVE(Allreduce, (const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm,
                                  mpi_h info, void *req),
                      (sbuf, rbuf, count, type, op, comm, info, req), 2 * type_bytes(count, type))
PERSISTENT_COLLECTIVE(Alltoall, (const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype,
                                 mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req),
                      (type_bytes(scount, stype) + type_bytes(rcount, rtype)) * (uint64_t)size_of(comm))
PERSISTENT_COLLECTIVE(Alltoallv, (const void *sbuf, const int *scounts, const int *sdispls, mpi_h stype, void *rbuf,
                                  const int *rcounts, const int *rdispls, mpi_h rtype, mpi_h comm, mpi_h info,
                                  void *req),
                      (sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, info, req),
                      type_bytes(sum_counts(scounts, size_of(comm)), stype) +
                          type_bytes(sum_counts(rcounts, size_of(comm)), rtype))
PERSISTENT_COLLECTIVE(Allgather, (const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype,
                                  mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req),
                      type_bytes(scount, stype) + type_bytes(rcount, rtype) * (uint64_t)size_of(comm))
PERSISTENT_COLLECTIVE(Allgatherv, (const void *sbuf, int scount, mpi_h stype, void *rbuf, const int *rcounts,
                                   const int *displs, mpi_h rtype, mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req),
                      type_bytes(scount, stype) + type_bytes(sum_counts(rcounts, size_of(comm)), rtype))
PERSISTENT_COLLECTIVE(Gather, (const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype,
                               int root, mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, info, req),
                      type_bytes(scount, stype) +
                          (is_root(root, comm) ? type_bytes(rcount, rtype) * (uint64_t)size_of(comm) : 0))
PERSISTENT_COLLECTIVE(Scatter, (const void *sbuf, int scount, mpi_h stype, void *rbuf, int rcount, mpi_h rtype,
                                int root, mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcount, rtype, root, comm, info, req),
                      type_bytes(rcount, rtype) +
                          (is_root(root, comm) ? type_bytes(scount, stype) * (uint64_t)size_of(comm) : 0))
PERSISTENT_COLLECTIVE(Gatherv, (const void *sbuf, int scount, mpi_h stype, void *rbuf, const int *rcounts,
                                const int *displs, mpi_h rtype, int root, mpi_h comm, mpi_h info, void *req),
                      (sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, info, req),
                      type_bytes(scount, stype) +
                          (is_root(root, comm) ? type_bytes(sum_counts(rcounts, size_of(comm)), rtype) : 0))
PERSISTENT_COLLECTIVE(Scatterv, (const void *sbuf, const int *scounts, const int *displs, mpi_h stype, void *rbuf,
                                 int rcount, mpi_h rtype, int root, mpi_h comm, mpi_h info, void *req),
                      (sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm, info, req),
                      type_bytes(rcount, rtype) +
                          (is_root(root, comm) ? type_bytes(sum_counts(scounts, size_of(comm)), stype) : 0))
PERSISTENT_COLLECTIVE(Reduce_scatter, (const void *sbuf, void *rbuf, const int *rcounts, mpi_h type, mpi_h op,
                                       mpi_h comm, mpi_h info, void *req),
                      (sbuf, rbuf, rcounts, type, op, comm, info, req),
                      type_bytes(sum_counts(rcounts, size_of(comm)), type) + type_bytes(own_count(rcounts, comm), type))
PERSISTENT_COLLECTIVE(Reduce_scatter_block, (const void *sbuf, void *rbuf, int rcount, mpi_h type, mpi_h op,
                                             mpi_h comm, mpi_h info, void *req),
                      (sbuf, rbuf, rcount, type, op, comm, info, req),
                      type_bytes(rcount, type) * ((uint64_t)size_of(comm) + 1))
PERSISTENT_COLLECTIVE(Scan, (const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm, mpi_h info,
                             void *req),
                      (sbuf, rbuf, count, type, op, comm, info, req), 2 * type_bytes(count, type))
PERSISTENT_COLLECTIVE(Exscan, (const void *sbuf, void *rbuf, int count, mpi_h type, mpi_h op, mpi_h comm, mpi_h info,
                               void *req),
                      (sbuf, rbuf, count, type, op, comm, info, req), 2 * type_bytes(count, type))
