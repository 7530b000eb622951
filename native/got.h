/* Rewriting callers' GOT slots (got.c): how corecast hands a hot wrapper back to the real
 * function once it no longer needs what the wrapper counts (settle.c). */
#ifndef CORECAST_GOT_H
#define CORECAST_GOT_H

struct cc_got_entry {
    const char *name; /* the symbol the callers bind */
    void *wrapper;    /* corecast's definition: only slots holding it are rewritten */
};

/* ``to_real`` 1: in every loaded object but corecast's own, each jump or data slot bound
 * to one of the ``n`` wrappers now points at the real function that object would reach
 * without corecast (cc_resolve from that object).  Slots not yet bound (lazy binding) are
 * left alone: they bind to the wrapper on their first call, which still works.  0: the
 * slots that hold that real function point at the wrapper again.  Returns the slots
 * rewritten.  The sampler's thread only: it reads /proc/self/maps and may mprotect. */
int cc_got_rewrite(const struct cc_got_entry *list, int n, int to_real);

#endif
