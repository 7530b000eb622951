/* Process-lifecycle shim (as Coz keeps them apart): the calls that end a process image —
 * main's return, exit, _exit, _Exit and the exec family — report first (lifecycle.c).
 * Their real functions are in native/real.h; fork needs no wrapper (pthread_atfork). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h> /* AT_FDCWD, AT_EACCESS */
#include <limits.h>
#include <link.h>
#include <sched.h> /* CLONE_* */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h> /* environ */

#include "../native/corecast.h"

#include "../native/lifecycle.h"
#include "../native/real.h"
#include "../native/sample.h"

/* ---- the start of an exit ------------------------------------------------------------ */
/* The report must run before any exit handler: libraries the model loaded register their
 * own (OpenSSL's cleanup, C++ static destructors of extension modules), and those, newer
 * than ours, ran first and tore down what the sampler was still using.  The program's
 * main is wrapped so that returning from it reports first; calls to exit() from the
 * program and its libraries come here.  (libc's own call to exit after main is internal
 * and cannot be interposed: hence the wrapper.)  on_exit stays as the fallback. */
static int (*program_main)(int, char **, char **);

static int main_then_report(int argc, char **argv, char **envp) {
    int status = program_main(argc, argv, envp);
    cc_exit_report(status, 1);
    return status;
}

int __libc_start_main(int (*main)(int, char **, char **), int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
    program_main = main;
    return CC_LIBC(__libc_start_main)(main_then_report, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int status) {
    cc_exit_report(status, 1);
    CC_LIBC(exit)(status);
}

/* ---- exits and execs that skip atexit ---------------------------------------------- */
void _exit(int status) {
    cc_exit_report(status, 0);
    CC_LIBC(_exit)(status);
}

void _Exit(int status) {
    cc_exit_report(status, 0);
    CC_LIBC(_Exit)(status);
}

/* The image is replaced: report what this one measured (same pid, its own lines).  The
 * next image gets the environment marked when this one warned about a setting (config.c):
 * the marked copy is a variable-length array of just the pointers it needs, and one
 * pointer otherwise.  (A fixed 4096-pointer array, 32 KiB on every exec's stack, crashed a
 * thread made with a 32 KiB stack that forks and execs, where glibc's exec needs a few
 * hundred bytes.) */
#define ENV_ROOM(envp) (cc_exec_env_room(envp) + 1)

/* An exec that fails goes on with this image, whose report belongs at its real exit, with
 * what runs after: so one that cannot succeed (no such file, not a regular file, not
 * executable) reports nothing.  Asked only where a report would follow (no probe under a
 * seccomp filter: cc_before_restrict), by path (no descriptor of the program's), its errno
 * kept; where unsure (a name too long for the buffer), it may run. */
static int may_run(const char *path) {
    if (!cc_ready || cc_cfg.disabled)
        return 1; /* nothing to report: no probe either */
    int saved = errno;
    struct stat st; /* exec runs a regular file only, with the effective ids' execute permission */
    int ok = path && stat(path, &st) == 0 && S_ISREG(st.st_mode) && faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
    errno = saved;
    return ok;
}

/* execvp's search: a name with '/' as it is, else each PATH entry (glibc's default where
 * unset; an empty entry is the working directory). */
static int may_run_found(const char *file) {
    if (!file || !file[0] || strchr(file, '/') || !cc_ready || cc_cfg.disabled)
        return may_run(file && file[0] ? file : NULL);
    const char *dirs = getenv("PATH");
    dirs = dirs ? dirs : "/bin:/usr/bin";
    size_t n = strlen(file);
    char buf[PATH_MAX];
    for (const char *d = dirs;; d++) {
        const char *end = strchrnul(d, ':');
        size_t k = (size_t)(end - d);
        if (k + 1 + n + 1 > sizeof buf)
            return 1;
        memcpy(buf, d, k);
        buf[k] = '/';
        memcpy(buf + k + 1, file, n + 1);
        if (may_run(k ? buf : buf + 1))
            return 1;
        if (!*end)
            return 0;
        d = end;
    }
}

int execve(const char *path, char *const argv[], char *const envp[]) {
    if (may_run(path))
        cc_exec_report(envp);
    char *buf[ENV_ROOM(envp)];
    return CC_LIBC(execve)(path, argv, cc_exec_env(envp, buf, sizeof buf / sizeof *buf));
}

int execv(const char *path, char *const argv[]) {
    if (may_run(path))
        cc_exec_report(environ);
    char *buf[ENV_ROOM(environ)];
    char *const *env = cc_exec_env(environ, buf, sizeof buf / sizeof *buf);
    return env == environ ? CC_LIBC(execv)(path, argv) : CC_LIBC(execve)(path, argv, env);
}

int execvp(const char *file, char *const argv[]) {
    if (may_run_found(file))
        cc_exec_report(environ);
    char *buf[ENV_ROOM(environ)];
    char *const *env = cc_exec_env(environ, buf, sizeof buf / sizeof *buf);
    return env == environ ? CC_LIBC(execvp)(file, argv) : CC_LIBC(execvpe)(file, argv, env);
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    if (may_run_found(file))
        cc_exec_report(envp);
    char *buf[ENV_ROOM(envp)];
    return CC_LIBC(execvpe)(file, argv, cc_exec_env(envp, buf, sizeof buf / sizeof *buf));
}

/* glibc's execl family calls its internal execve, past the wrappers above: rebuild the
 * argument vector (on the stack, as glibc does) and go through them. */
#define COLLECT_ARGS(first, ap, argv, extra)                                            \
    size_t argc = 1;                                                                    \
    va_start(ap, first);                                                                \
    while (va_arg(ap, const char *))                                                    \
        argc++;                                                                         \
    va_end(ap);                                                                         \
    char *argv[argc + 1];                                                               \
    argv[0] = (char *)first;                                                            \
    va_start(ap, first);                                                                \
    for (size_t i = 1; i <= argc; i++)                                                  \
        argv[i] = va_arg(ap, char *);                                                   \
    extra;                                                                              \
    va_end(ap)

int execl(const char *path, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    COLLECT_ARGS(arg, ap, argv, (void)0);
    return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...) {
    va_list ap;
    char *const *envp;
    COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}

/* ---- the program letting go of its stderr -------------------------------------------- */
/* The report channel keeps no descriptor in the program's table (native/channel.c): before
 * the program closes or replaces the last descriptor of the stderr it started with, a
 * thread of ours takes a copy in a table of its own. */
int close(int fd) {
    if (__builtin_expect(fd == 2, 0))
        cc_channel_before_release(2, 2);
    return CC_LIBC(close)(fd);
}

int dup2(int oldfd, int newfd) {
    if (__builtin_expect(newfd == 2 && oldfd != 2, 0))
        cc_channel_before_release(2, 2);
    return CC_LIBC(dup2)(oldfd, newfd);
}

int dup3(int oldfd, int newfd, int flags) {
    if (__builtin_expect(newfd == 2, 0))
        cc_channel_before_release(2, 2);
    return CC_LIBC(dup3)(oldfd, newfd, flags);
}

#define CC_CLOSE_RANGE_CLOEXEC (1U << 2) /* linux/close_range.h: marks, closes nothing */

int close_range(unsigned lo, unsigned hi, int flags) {
    if (lo <= 2 && hi >= 2 && !(flags & CC_CLOSE_RANGE_CLOEXEC))
        cc_channel_before_release((int)lo, hi > 9 ? 9 : (int)hi);
    int (*real)(unsigned, unsigned, int) = CC_LIBC(close_range);
    if (!real) { /* a C library without it: as its absence would answer */
        errno = ENOSYS;
        return -1;
    }
    return real(lo, hi, flags);
}

/* The C library's own closes are not calls through the wrappers above: fclose(stderr) and
 * freopen of it close fd 2 inside libc (xz closes its stderr so before it exits). */
static void before_stream_release(FILE *f) {
    if (f && fileno_unlocked(f) == 2)
        cc_channel_before_release(2, 2);
}

int fclose(FILE *f) {
    before_stream_release(f);
    return CC_LIBC(fclose)(f);
}

FILE *freopen(const char *path, const char *mode, FILE *f) {
    before_stream_release(f);
    return CC_LIBC(freopen)(path, mode, f);
}

FILE *freopen64(const char *path, const char *mode, FILE *f) {
    before_stream_release(f);
    return CC_LIBC(freopen64)(path, mode, f);
}

void closefrom(int lo) {
    if (lo <= 2)
        cc_channel_before_release(lo < 0 ? 0 : lo, 9);
    void (*real)(int) = CC_LIBC(closefrom);
    if (real)
        real(lo);
}

/* ---- calls that need the program to be its only thread ------------------------------- */
/* The kernel refuses (EINVAL) an unshare of a user namespace (CLONE_NEWUSER; or CLONE_THREAD,
 * CLONE_SIGHAND, CLONE_VM) in a process of more than one thread, and a setns into a user
 * namespace so, or into a mount namespace while another thread shares its working directory
 * (CLONE_FS): the sampler and the keeper made a program that is its only thread fail there
 * (a sandbox that let its stderr go to a log, a pthreads program after joining its workers).
 * Such a refusal, while no thread of the program's own is alive, has them give their threads
 * back, as for a pthread_create short of tasks, and the call is tried again. */
#define SOLO_UNSHARE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)

static int solo_refused(int r) {
    if (r != -1 || errno != EINVAL || cc_live_threads() > 1)
        return 0;
    int more = cc_give_back_thread("the program must be its only thread (unshare, setns: EINVAL)");
    errno = EINVAL; /* the answer, where no thread of ours was left to give back */
    return more;
}

int unshare(int flags) {
    int r = CC_LIBC(unshare)(flags);
    while ((flags & SOLO_UNSHARE) && solo_refused(r))
        r = CC_LIBC(unshare)(flags);
    return r;
}

int setns(int fd, int nstype) {
    int r = CC_LIBC(setns)(fd, nstype);
    while ((nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS))) && solo_refused(r))
        r = CC_LIBC(setns)(fd, nstype);
    return r;
}

/* ---- an object unloaded ---------------------------------------------------------------- */
/* A region is named from its code's object; once dlclose unmaps it, that object is gone:
 * its regions are named first (sample.c). */
int dlclose(void *handle) {
    struct link_map *map = NULL;
    const char *lo, *hi;
    if (cc_ready && !cc_cfg.disabled && handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_ld &&
        cc_object_range(map->l_ld, &lo, &hi))
        cc_name_regions_in(lo, hi);
    return CC_LIBC(dlclose)(handle);
}

/* ---- the loader's callbacks ------------------------------------------------------------ */
/* dl_iterate_phdr calls back with the loader's write lock held: an exit from a callback
 * must not ask the loader (lifecycle.c), which would wait for that lock for ever. */
int dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data) {
    cc_loader_depth++;
    int r = CC_LIBC(dl_iterate_phdr)(callback, data);
    cc_loader_depth--;
    return r;
}
