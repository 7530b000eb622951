/* Boundaries: where a region's calls are too few for a window's rate (settle.c: RATE_CALLS
 * calls keep the error of a call in flight at either snapshot under 1%), its rate per call
 * is taken between two of its calls' ends instead.  The sampler's snapshots fall inside
 * calls, and a member folds its counts in at its leave, before the call is counted; at a
 * call's end that leaves no call of the region in flight (``begun`` == ``calls``, omp_call.c) the
 * counts are those of the ended calls exactly.  While settle.c asks (``edge_want``), that
 * end copies them (a few hundred loads, once a call: the sections' own path is unchanged):
 * the first since ``edge_gen`` last moved and the latest, under ``edge_seq`` (odd while
 * written; the sampler's reads retry). */
#include "boundary.h"

/* A call that began meanwhile (``begun``) or ended (``calls``) voids the copy; a second
 * writer skips.  The caller's increment of ``calls`` to ``begun``, the last, orders every
 * ended call's folds before these reads.  The shards are summed here, not through
 * cc_region_totals: core.c calls into this file, and the native layers allow no loop. */
void cc_boundary_take(struct cc_region *r) {
    unsigned seq = __atomic_load_n(&r->edge_seq, __ATOMIC_RELAXED);
    if ((seq & 1) || !__atomic_compare_exchange_n(&r->edge_seq, &seq, seq + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return;
    uint64_t calls = __atomic_load_n(&r->calls, __ATOMIC_RELAXED);
    struct cc_sync_snap s = {.calls = calls, .boundary = 1};
    s.gen = __atomic_load_n(&r->edge_gen, __ATOMIC_ACQUIRE);
    /* No member folded sections in yet: every shard's are 0 (the folds of the calls ended
     * so far are ordered before this read as theirs are; a call begun since voids the copy). */
    int sections = __atomic_load_n(&r->sections, __ATOMIC_RELAXED);
    for (int k = 0; k < CC_NSETTLE; k++) {
        int cat = cc_settle_cats[k];
        s.acq[k] = __atomic_load_n(&r->acq[cat], __ATOMIC_RELAXED);
        s.contended[k] = __atomic_load_n(&r->contended[cat], __ATOMIC_RELAXED);
        s.wait[k] = __atomic_load_n(&r->wait[cat], __ATOMIC_RELAXED);
        s.hold[k] = __atomic_load_n(&r->hold[cat], __ATOMIC_RELAXED);
        for (int i = 0; sections && i < CC_FOLD_SHARDS; i++) {
            const struct cc_counts *q = &r->shards[i].n;
            s.acq[k] += __atomic_load_n(&q->acq[cat], __ATOMIC_RELAXED);
            s.contended[k] += __atomic_load_n(&q->contended[cat], __ATOMIC_RELAXED);
            s.wait[k] += __atomic_load_n(&q->wait[cat], __ATOMIC_RELAXED);
            s.hold[k] += __atomic_load_n(&q->hold[cat], __ATOMIC_RELAXED);
        }
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&r->begun, __ATOMIC_RELAXED) == calls && __atomic_load_n(&r->calls, __ATOMIC_RELAXED) == calls) {
        int first = !r->edge_first.calls || r->edge_first.gen != s.gen;
        *(first ? &r->edge_first : &r->edge_last) = s;
    }
    __atomic_store_n(&r->edge_seq, seq + 2, __ATOMIC_RELEASE);
}

void cc_boundary_restart(struct cc_region *q, int want) {
    __atomic_add_fetch(&q->edge_gen, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&q->edge_want, want, __ATOMIC_RELEASE);
}

/* A writer holds them a few hundred ns: waited for a little, else none this time. */
int cc_boundaries_of(const struct cc_region *q, struct cc_sync_snap *a, struct cc_sync_snap *b) {
    for (int tries = 0; tries < 1000; tries++) {
        unsigned seq = __atomic_load_n(&q->edge_seq, __ATOMIC_ACQUIRE);
        if (seq & 1)
            continue;
        *a = q->edge_first;
        *b = q->edge_last;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&q->edge_seq, __ATOMIC_RELAXED) != seq)
            continue;
        unsigned gen = __atomic_load_n(&q->edge_gen, __ATOMIC_ACQUIRE);
        if (!a->calls || a->gen != gen)
            return 0;
        return b->gen == gen && b->calls > a->calls ? 2 : 1;
    }
    return 0;
}

/* Regions of many calls never pay for the copies (a window's rate serves them). */
int cc_boundaries_ask(int may, double elapsed_s, double few) {
    static double last_s;
    int first = 0;
    for (struct cc_region *q = cc_region_next(NULL); q; q = cc_region_next(q)) {
        if (!__atomic_load_n(&q->fn, __ATOMIC_ACQUIRE))
            continue;
        uint64_t calls = __atomic_load_n(&q->calls, __ATOMIC_RELAXED);
        double dt = elapsed_s - last_s, per_window = dt > 0 ? (double)(calls - q->look_calls) / dt * cc_cfg.window_ms / 1e3 : 0;
        q->look_calls = calls;
        int want = may && per_window < few;
        if (want != __atomic_load_n(&q->edge_want, __ATOMIC_RELAXED))
            cc_boundary_restart(q, want);
        first |= want && !calls && __atomic_load_n(&q->begun, __ATOMIC_RELAXED) > 0;
    }
    last_s = elapsed_s;
    return first;
}
