/* What the MPI shim (shims/mpi.c) remembers of requests, process-wide: a request may be
 * completed on another thread than the one that posted it (MPI_THREAD_SERIALIZED or
 * MULTIPLE), so a table per thread missed it.  No locks: slots are claimed by CAS. */
#ifndef CC_MPI_REQUESTS_H
#define CC_MPI_REQUESTS_H

#include <stdint.h>

#include "corecast.h"

extern int cc_mpi_wide_requests CC_HIDDEN; /* MPI_Request is a pointer (Open MPI), else an int */

static inline uintptr_t cc_mpi_request_at(const void *reqs, int i) {
    return cc_mpi_wide_requests ? ((const uintptr_t *)reqs)[i] : ((const unsigned *)reqs)[i];
}

/* Non-blocking collectives posted and not yet seen complete: a wait on one of them is a
 * collective wait.  ``cc_mpi_collectives_in``: the table's slots holding one of ``reqs``
 * (bit s: slot s; 0 at once while none is pending); ``cc_mpi_collectives_done``: after the
 * call, those of them no longer in ``reqs`` (set to MPI_REQUEST_NULL: completed) are
 * forgotten, since their handles may come back for point-to-point requests. */
void cc_mpi_collective_posted(const void *req) CC_HIDDEN;
uint64_t cc_mpi_collectives_in(const void *reqs, int n) CC_HIDDEN;
void cc_mpi_collectives_done(uint64_t mask, const void *reqs, int n) CC_HIDDEN;

/* Persistent requests (MPI_Send_init, ...; MPI-4's MPI_Allreduce_init, ...) and what one
 * start posts: made (``collective``: a persistent collective's, whose waits are then
 * collective waits), started (``cc_mpi_persistent_started``: the start's category and its
 * bytes; a request not made here, point-to-point and 0), freed (MPI_Request_free).
 * ``cc_mpi_persistent_collective_in``: whether ``reqs`` holds a persistent collective (0
 * at once while none is made). */
void cc_mpi_persistent_made(const void *req, uint64_t bytes, int collective) CC_HIDDEN;
int cc_mpi_persistent_started(uintptr_t h, uint64_t *bytes) CC_HIDDEN;
int cc_mpi_persistent_collective_in(const void *reqs, int n) CC_HIDDEN;
/* Freeing: the entry is found before the library's call (``cc_mpi_persistent_find``, -1:
 * none), while the handle is still the request's, and forgotten after it: found after, it
 * could be a new request another thread was given the freed handle for meanwhile. */
int cc_mpi_persistent_find(uintptr_t h) CC_HIDDEN;
void cc_mpi_persistent_freed(int slot, uintptr_t h) CC_HIDDEN;

#endif
