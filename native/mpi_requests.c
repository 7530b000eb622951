/* What the MPI shim remembers of requests: see mpi_requests.h. */
#include "mpi_requests.h"

int cc_mpi_wide_requests = 1;

/* ---- pending non-blocking collectives ------------------------------------------------ */
#define COLL_SLOTS 64 /* one bit each in a mask; past that the oldest-posted is overwritten */

static uintptr_t coll[COLL_SLOTS];
static unsigned coll_next;
static int coll_pending; /* slots in use: a program without pending collectives scans none */

static int holds(const void *reqs, int n, uintptr_t v) {
    for (int i = 0; i < n; i++)
        if (cc_mpi_request_at(reqs, i) == v)
            return 1;
    return 0;
}

void cc_mpi_collective_posted(const void *req) {
    uintptr_t h = cc_mpi_request_at(req, 0);
    if (!h)
        return;
    unsigned start = __atomic_fetch_add(&coll_next, 1, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < COLL_SLOTS; i++) {
        uintptr_t free_slot = 0;
        if (__atomic_compare_exchange_n(&coll[(start + i) % COLL_SLOTS], &free_slot, h, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&coll_pending, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    /* full: one pending collective is forgotten, its wait to read as point-to-point: an
     * event not recorded, as a full table's elsewhere (summary's overflow) */
    if (!__atomic_exchange_n(&coll[start % COLL_SLOTS], h, __ATOMIC_RELAXED))
        __atomic_add_fetch(&coll_pending, 1, __ATOMIC_RELAXED); /* freed meanwhile */
    else
        CC_AADD(cc_overflow, 1);
}

uint64_t cc_mpi_collectives_in(const void *reqs, int n) {
    if (n <= 0 || !reqs || !__atomic_load_n(&coll_pending, __ATOMIC_RELAXED))
        return 0;
    uint64_t mask = 0;
    for (int s = 0; s < COLL_SLOTS; s++) {
        uintptr_t v = __atomic_load_n(&coll[s], __ATOMIC_RELAXED);
        if (v && holds(reqs, n, v))
            mask |= (uint64_t)1 << s;
    }
    return mask;
}

void cc_mpi_collectives_done(uint64_t mask, const void *reqs, int n) {
    for (int s = 0; mask && s < COLL_SLOTS; s++) {
        if (!(mask & ((uint64_t)1 << s)))
            continue;
        uintptr_t v = __atomic_load_n(&coll[s], __ATOMIC_RELAXED);
        /* only the request seen before the call: another thread may have reused the slot */
        if (v && !holds(reqs, n, v) && __atomic_compare_exchange_n(&coll[s], &v, 0, 0, __ATOMIC_RELAXED,
                                                                   __ATOMIC_RELAXED))
            __atomic_sub_fetch(&coll_pending, 1, __ATOMIC_RELAXED);
    }
}

/* ---- persistent requests ------------------------------------------------------------ */
/* Open addressing by handle; a freed entry becomes GONE (a later lookup probes past it),
 * an entry being written BUSY.  Neither is a handle: Open MPI's are pointers, MPICH's
 * ints with kind bits set.  Full: a request not entered is an event not recorded (its
 * starts count no bytes, a collective's waits read as point-to-point). */
#define PERSISTENT_SLOTS 512
#define GONE ((uintptr_t)1)
#define BUSY ((uintptr_t)2)

static uintptr_t p_key[PERSISTENT_SLOTS];
static uint64_t p_bytes[PERSISTENT_SLOTS];
static unsigned char p_coll[PERSISTENT_SLOTS]; /* a persistent collective's entry */
static int p_colls; /* persistent collectives made, not freed: a wait looks none up while 0 */

static unsigned slot_of(uintptr_t h) {
    uint64_t x = (uint64_t)h * 0x9E3779B97F4A7C15ull; /* handles share their low bits */
    return (unsigned)(x >> 55) % PERSISTENT_SLOTS;
}

void cc_mpi_persistent_made(const void *req, uint64_t bytes, int collective) {
    uintptr_t h = cc_mpi_request_at(req, 0);
    if (h <= BUSY)
        return;
    for (unsigned i = 0, s = slot_of(h); i < PERSISTENT_SLOTS; i++, s = (s + 1) % PERSISTENT_SLOTS) {
        uintptr_t k = __atomic_load_n(&p_key[s], __ATOMIC_RELAXED);
        if ((k == 0 || k == GONE) &&
            __atomic_compare_exchange_n(&p_key[s], &k, BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            p_bytes[s] = bytes;
            p_coll[s] = collective != 0;
            if (collective)
                __atomic_add_fetch(&p_colls, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&p_key[s], h, __ATOMIC_RELEASE);
            return;
        }
    }
    CC_AADD(cc_overflow, 1);
}

static int find(uintptr_t h) {
    if (h <= BUSY)
        return -1;
    for (unsigned i = 0, s = slot_of(h); i < PERSISTENT_SLOTS; i++, s = (s + 1) % PERSISTENT_SLOTS) {
        uintptr_t k = __atomic_load_n(&p_key[s], __ATOMIC_ACQUIRE);
        if (k == h)
            return (int)s;
        if (k == 0)
            return -1;
    }
    return -1;
}

int cc_mpi_persistent_started(uintptr_t h, uint64_t *bytes) {
    int s = find(h);
    *bytes = s >= 0 ? p_bytes[s] : 0;
    return s >= 0 && p_coll[s] ? CC_STALL_MPI_COLLECTIVE : CC_STALL_MPI_P2P;
}

int cc_mpi_persistent_collective_in(const void *reqs, int n) {
    if (n <= 0 || !reqs || !__atomic_load_n(&p_colls, __ATOMIC_RELAXED))
        return 0;
    for (int i = 0; i < n; i++) {
        int s = find(cc_mpi_request_at(reqs, i));
        if (s >= 0 && p_coll[s])
            return 1;
    }
    return 0;
}

int cc_mpi_persistent_find(uintptr_t h) { return find(h); }

void cc_mpi_persistent_freed(int s, uintptr_t h) {
    if (s < 0 || s >= PERSISTENT_SLOTS)
        return;
    int collective = p_coll[s]; /* read while the entry is h's: once GONE, the slot may be retaken */
    if (__atomic_compare_exchange_n(&p_key[s], &h, GONE, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED) && collective)
        __atomic_sub_fetch(&p_colls, 1, __ATOMIC_RELAXED);
}
