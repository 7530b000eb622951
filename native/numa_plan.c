/* CORECAST_NUMA_EVENTS: the NUMA event plan, struct cc_numa_plan (model_abi.h), as
 * "v2:" and the hex of its bytes: the header and the n events used.  Hex to bytes, then
 * every field checked; no grammar.  Called once per image by numa.c, before or beside the
 * program's own code: no malloc, no stdio, nothing that sets errno. */
#include <stddef.h>
#include <string.h>

#include "corecast.h"

#define CC_STR_(x) #x
#define CC_STR(x) CC_STR_(x)
#define PREFIX "v" CC_STR(CC_NUMA_PLAN_VERSION) ":"
#define HEADER_BYTES offsetof(struct cc_numa_plan, ev)

static int nibble(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The report and the JSON line print the source: a name, not arbitrary bytes. */
static int source_ok(const char *s, size_t n) {
    const char *end = memchr(s, 0, n);
    if (!end || end == s)
        return 0;
    for (; s < end; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

static const char *event_ok(const struct cc_numa_event *e) {
    if (e->role >= CC_NUMA_NROLES)
        return "an event's role is out of range";
    if (e->node < -1 || e->node >= CC_MAX_NODES)
        return "an event's node is out of range";
    if (e->cpu < -1)
        return "an event's cpu is out of range";
    /* Per-node roles come from uncore units; the program's own cycles have no CPU. */
    if ((e->role == CC_NUMA_BUS || e->role == CC_NUMA_MCT) && (e->node < 0 || e->cpu < 0))
        return "a per-node event without its node or CPU";
    if (e->role == CC_NUMA_CYCLES && e->cpu >= 0)
        return "the program's cycles pinned to a CPU";
    return NULL;
}

const char *cc_numa_plan_decode(const char *text, struct cc_numa_plan *p) {
    size_t plen = sizeof PREFIX - 1;
    if (strncmp(text, PREFIX, plen))
        return "not " PREFIX "HEX (another version of corecast?)";
    text += plen;
    /* Bounded: a hostile value is never read past what the struct could hold. */
    size_t digits = strnlen(text, 2 * sizeof *p + 1);
    if (digits > 2 * sizeof *p)
        return "longer than any plan";
    if (digits % 2)
        return "an odd number of hex digits";
    size_t bytes = digits / 2;
    if (bytes < HEADER_BYTES)
        return "shorter than a plan's header";
    memset(p, 0, sizeof *p);
    unsigned char *out = (unsigned char *)p;
    for (size_t i = 0; i < bytes; i++) {
        int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return "not hex";
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    if (p->version != CC_NUMA_PLAN_VERSION)
        return "another plan version";
    if (p->n > CC_NUMA_MAX_EVENTS)
        return "more events than the library holds";
    if (bytes != HEADER_BYTES + p->n * sizeof p->ev[0])
        return "not the size of its events";
    if (!source_ok(p->source, sizeof p->source))
        return "the source is not a NUL-terminated name";
    for (uint32_t i = 0; i < p->n; i++) {
        const char *why = event_ok(&p->ev[i]);
        if (why)
            return why;
    }
    return NULL;
}
