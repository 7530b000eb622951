/* Handing a wrapper back: the dynamic relocations of every loaded object name the slots
 * its calls go through (jump slots; data slots for -fno-plt code and taken addresses).
 * A slot that the dynamic linker bound to corecast's wrapper is rewritten to the real
 * function, with one aligned store: a thread calling through it at that moment reaches
 * either, and both work.  Slots in a read-only (RELRO) page are written through a
 * moment's mprotect, and the page gets its protection back. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "corecast.h"
#include "got.h"

#define REL_TYPE(info) ((info) & 0xffffffffu) /* ELF64_R_TYPE, ELF64_R_SYM */
#define REL_SYM(info) ((info) >> 32)
#if defined(__x86_64__)
#define SLOT_JUMP R_X86_64_JUMP_SLOT
#define SLOT_DATA R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define SLOT_JUMP R_AARCH64_JUMP_SLOT
#define SLOT_DATA R_AARCH64_GLOB_DAT
#endif

/* Slots are found inside dl_iterate_phdr (which holds the loader's write lock), resolved
 * outside it (cc_resolve's dladdr and dlopen take the loader's other lock, and a thread in
 * dlopen takes the two in the other order), and written inside a second walk, only if no
 * object was unloaded since the first (dlpi_subs): dlclose unlinks an object under the
 * write lock before it unmaps it, so a slot found in the first walk is still mapped while
 * the second holds the lock.  Written outside, a dlclose in between could leave the store
 * to unmapped memory. */
#define MAX_SLOTS 256
struct found {
    void **slot;
    int entry;        /* index in the list */
    const void *text; /* the calling object's code: where the real function is resolved */
    void *value;      /* what to write; NULL: nothing */
    void *expect;     /* what the slot must still hold for the write */
    int prot;         /* the slot's page protection */
};
struct job {
    const struct cc_got_entry *list;
    int n;
    int to_real; /* 1: wrapper -> real function; 0: back again */
    int nfound;
    struct found found[MAX_SLOTS];
    int writing;              /* 1: the second walk, which writes */
    unsigned long long subs;  /* objects unloaded before the first walk (dlpi_subs) */
    int subs_known;
    int rewritten;            /* slots written; -1: an object was unloaded between the walks */
};

/* The protection of the mapping that holds ``addr`` (PROT_* bits), or -1. */
static int prot_of(uintptr_t addr) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    char line[512], perms[8];
    unsigned long lo, hi;
    int prot = -1;
    while (prot < 0 && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi)
            prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                   (perms[2] == 'x' ? PROT_EXEC : 0);
    fclose(f);
    return prot;
}

static int write_slot(void **slot, void *value, int prot) {
    if (prot < 0)
        return 0;
    if (prot & PROT_WRITE) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return 1;
    }
    long page = sysconf(_SC_PAGESIZE);
    void *base = (void *)((uintptr_t)slot & ~(uintptr_t)(page - 1));
    if (mprotect(base, (size_t)page, prot | PROT_WRITE))
        return 0;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    mprotect(base, (size_t)page, prot);
    return 1;
}

/* The dynamic section's addresses: ld.so relocates them in place for most objects, not
 * for the vDSO; an address below the object's base is still relative. */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, uintptr_t v) {
    return v < info->dlpi_addr ? v + info->dlpi_addr : v;
}

static void scan(struct job *j, const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t bytes,
                 const ElfW(Sym) *symtab, const char *strtab, const void *text) {
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        unsigned long type = REL_TYPE(rel[i].r_info);
        if (type != SLOT_JUMP && type != SLOT_DATA)
            continue;
        const char *name = strtab + symtab[REL_SYM(rel[i].r_info)].st_name;
        void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
        for (int k = 0; k < j->n && j->nfound < MAX_SLOTS; k++)
            if (!strcmp(name, j->list[k].name) &&
                (__atomic_load_n(slot, __ATOMIC_ACQUIRE) == j->list[k].wrapper) == j->to_real)
                j->found[j->nfound++] = (struct found){.slot = slot, .entry = k, .text = text};
    }
}

static int write_found(struct job *j);

static int each_object(struct dl_phdr_info *info, size_t size, void *arg) {
    struct job *j = arg;
    int known = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
    if (j->writing) { /* the loader's count is the same for every object: one look, then stop */
        if (!j->subs_known || !known || info->dlpi_subs != j->subs)
            j->rewritten = -1;
        else
            j->rewritten = write_found(j);
        return 1;
    }
    if (!j->subs_known && known) {
        j->subs = info->dlpi_subs;
        j->subs_known = 1;
    }
    const ElfW(Dyn) *dyn = NULL;
    const void *text = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && !text)
            text = (const void *)(info->dlpi_addr + ph->p_vaddr);
    }
    if (!dyn || !text || cc_is_ours(text))
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmpsz = 0, relasz = 0;
    long pltrel = DT_RELA;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmpsz = d->d_un.d_val; break;
        case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_RELASZ: relasz = d->d_un.d_val; break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    if (pltrel == DT_RELA) /* x86-64 and AArch64 use RELA only */
        scan(j, info, jmprel, jmpsz, symtab, strtab, text);
    scan(j, info, rela, relasz, symtab, strtab, text);
    return 0;
}

static int write_found(struct job *j) {
    int rewritten = 0;
    for (int i = 0; i < j->nfound; i++)
        if (j->found[i].value && __atomic_load_n(j->found[i].slot, __ATOMIC_ACQUIRE) == j->found[i].expect)
            rewritten += write_slot(j->found[i].slot, j->found[i].value, j->found[i].prot);
    return rewritten;
}

/* One attempt: find, resolve, write; -1 where an object was unloaded in between. */
static int rewrite_once(struct job *j) {
    j->nfound = 0;
    j->writing = 0;
    j->subs_known = 0;
    dl_iterate_phdr(each_object, j);
    /* The slow part first (resolving, /proc/self/maps), then the writes in one quick pass:
     * the callers switch nearly at once, so counts taken just after are consistent. */
    for (int i = 0; i < j->nfound; i++) {
        struct found *f = &j->found[i];
        const struct cc_got_entry *e = &j->list[f->entry];
        void *real = cc_resolve(e->name, f->text);
        f->value = NULL;
        if (!real || real == e->wrapper)
            continue;
        /* Handing back: the slot still holds the wrapper (as the walk found it); taking
         * back: the slot holds the real function (handed back before).  Checked where it
         * is written, under the loader's lock, not here: the slot may be gone by now. */
        f->value = j->to_real ? real : e->wrapper;
        f->expect = j->to_real ? e->wrapper : real;
        f->prot = f->value ? prot_of((uintptr_t)f->slot) : -1;
    }
    j->writing = 1;
    j->rewritten = 0; /* no object at all: nothing to write */
    dl_iterate_phdr(each_object, j);
    return j->rewritten;
}

int cc_got_rewrite(const struct cc_got_entry *list, int n, int to_real) {
#ifdef SLOT_JUMP
    static struct job j; /* the sampler's thread only */
    j.list = list;
    j.n = n;
    j.to_real = to_real;
    cc_is_ours(NULL); /* finds its own range now, not nested in the walks below */
    /* A dlclose between the walks is rare; three tries, then the wrappers stay as they
     * are (counted, the state before the hand-back) rather than a write to a stale slot. */
    for (int tries = 0; tries < 3; tries++) {
        int rewritten = rewrite_once(&j);
        if (rewritten >= 0)
            return rewritten;
    }
    return 0;
#else
    (void)list;
    (void)n;
    (void)to_real;
    return 0;
#endif
}
