/* Naming code addresses: OpenMP outlined functions (main._omp_fn.0) are local symbols,
 * absent from the dynamic symbol table dladdr uses, so the object's own .symtab is read
 * from disk (report time only, never in a wrapper). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corecast.h"

/* Looks `offset` (relative to the object's load bias) up in the file's .symtab. */
static int symtab_lookup(const char *file, uintptr_t offset, char *name, size_t size) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(ElfW(Ehdr))) {
        const unsigned char *m = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            const ElfW(Ehdr) *eh = (const void *)m;
            size_t shend = eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr));
            if (!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_shentsize == sizeof(ElfW(Shdr)) &&
                shend <= (size_t)st.st_size) {
                const ElfW(Shdr) *sh = (const void *)(m + eh->e_shoff);
                for (int i = 0; i < eh->e_shnum && !found; i++) {
                    if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
                        continue;
                    const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
                    if (sh[i].sh_offset + sh[i].sh_size > (size_t)st.st_size ||
                        strs->sh_offset + strs->sh_size > (size_t)st.st_size)
                        continue;
                    const ElfW(Sym) *sym = (const void *)(m + sh[i].sh_offset);
                    size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
                    for (size_t k = 0; k < n; k++) {
                        if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC)
                            continue;
                        uintptr_t lo = sym[k].st_value, hi = lo + (sym[k].st_size ? sym[k].st_size : 1);
                        if (offset >= lo && offset < hi && sym[k].st_name < strs->sh_size) {
                            snprintf(name, size, "%s", (const char *)m + strs->sh_offset + sym[k].st_name);
                            found = 1;
                            break;
                        }
                    }
                }
            }
            munmap((void *)m, st.st_size);
        }
    }
    close(fd);
    return found;
}

struct bias_query {
    const void *addr;
    uintptr_t bias;
    int found;
};

static int find_bias(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct bias_query *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)q->addr >= s && (uintptr_t)q->addr < s + ph->p_memsz) {
            q->bias = info->dlpi_addr;
            q->found = 1;
            return 1;
        }
    }
    return 0;
}

/* Set by an exit inside the loader (lifecycle.c): dladdr and dl_iterate_phdr would wait
 * for the lock the exiting thread holds for good, or for a thread that waits for it. */
static int no_loader;

void cc_names_without_loader(void) { __atomic_store_n(&no_loader, 1, __ATOMIC_RELEASE); }
int cc_naming_without_loader(void) { return __atomic_load_n(&no_loader, __ATOMIC_ACQUIRE); }

void cc_symbol_name(const void *addr, char *name, size_t nsize, char *object, size_t osize) {
    if (cc_naming_without_loader()) {
        snprintf(object, osize, "?");
        snprintf(name, nsize, "fn@%#lx", (unsigned long)(uintptr_t)addr);
        return;
    }
    static int gated;
    cc_test_gate(cc_cfg.naming_in_loader, &gated); /* tests: the program takes the loader's lock first */
    Dl_info info;
    memset(&info, 0, sizeof info);
    int ok = dladdr(addr, &info);
    const char *file = ok && info.dli_fname && info.dli_fname[0] ? info.dli_fname : NULL;
    char exe[4096];
    if (!file) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            file = exe;
        }
    }
    snprintf(object, osize, "%s", file ? file : "?");
    if (ok && info.dli_sname && info.dli_saddr == addr) {
        snprintf(name, nsize, "%s", info.dli_sname);
        return;
    }
    struct bias_query q = {addr, 0, 0};
    dl_iterate_phdr(find_bias, &q);
    if (file && q.found && symtab_lookup(file, (uintptr_t)addr - q.bias, name, nsize))
        return;
    snprintf(name, nsize, "fn@%#lx", (unsigned long)((uintptr_t)addr - q.bias));
}
