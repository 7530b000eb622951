/* The `corecast` command: starts the Python CLI with SIGINT held.
 *
 * A shell stops a `for` loop over `corecast run ...` only when the child died of SIGINT,
 * so Ctrl-C must end corecast that way wherever it lands.  CPython installs its own SIGINT
 * handler before it imports `site`: a Ctrl-C in the first tens of milliseconds (site's .pth
 * files, imports) became a KeyboardInterrupt traceback or "Fatal Python error" with status
 * 1.  Blocked here, it stays pending across exec until corecast's first Python line puts
 * the default action back and unblocks it (corecast/__main__.py), and the process dies
 * of it there.  Not part of the preload library.
 *
 * CPython also ignores SIGPIPE and SIGXFSZ at start-up, so what the caller had is lost
 * before corecast's first line; it is recorded here (record_ignored) for `corecast run`
 * to give the program back (runtime/launcher.py).  Likewise LC_CTYPE: CPython's locale
 * coercion (PEP 538) sets LC_CTYPE=C.UTF-8 in its environment under the C locale, which
 * every program it started inherited (record_locale). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../settings.h"

#ifndef CORECAST_PYTHON
#define CORECAST_PYTHON "python3" /* the interpreter the build ran with, as setup.py names it */
#endif

/* sys.argv[0] as the console script would set it: usage lines say "corecast". */
static const char START[] = "import sys; sys.argv[0] = 'corecast'; from corecast.__main__ import console; console()";

/* CPython does not start in a 64 KiB stack (it dies of SIGSEGV before any line of ours);
 * every corecast command ran in 128 KiB. */
#define MIN_STACK_KIB 128

/* CC_ENV_IGNORED_SIGNALS: which of SIGPIPE and SIGXFSZ the caller ignored, as "SIGPIPE,SIGXFSZ"
 * (empty: neither).  Always set: an inherited value would be another process's record. */
static void record_ignored(void) {
    static const struct { int sig; const char *name; } watched[] = {{SIGPIPE, "SIGPIPE"}, {SIGXFSZ, "SIGXFSZ"}};
    char list[32] = "";
    for (size_t i = 0; i < sizeof watched / sizeof watched[0]; i++) {
        struct sigaction now;
        if (sigaction(watched[i].sig, NULL, &now) == 0 && now.sa_handler == SIG_IGN) {
            if (list[0])
                strcat(list, ",");
            strcat(list, watched[i].name);
        }
    }
    setenv(CC_ENV_IGNORED_SIGNALS, list, 1);
}

/* CC_ENV_CALLER_LC_CTYPE: the caller's LC_CTYPE as "=VALUE", empty without one (an empty
 * LC_CTYPE is not no LC_CTYPE).  Always set, as CC_ENV_IGNORED_SIGNALS. */
static void record_locale(void) {
    const char *ctype = getenv("LC_CTYPE");
    char *value = malloc(ctype ? strlen(ctype) + 2 : 1);
    if (!value)
        return; /* no record: corecast leaves LC_CTYPE as Python has it */
    value[0] = 0;
    if (ctype)
        strcat(strcpy(value, "="), ctype);
    setenv(CC_ENV_CALLER_LC_CTYPE, value, 1);
    free(value);
}

int main(int argc, char **argv) {
    struct rlimit stack;
    if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY &&
        stack.rlim_cur < (rlim_t)MIN_STACK_KIB * 1024) {
        fprintf(stderr, "corecast: the stack limit (ulimit -s %lu) is below the %d KiB Python needs to start; "
                        "raise it, or preload the library yourself: LD_PRELOAD=<corecast lib's path> PROGRAM\n",
                (unsigned long)(stack.rlim_cur / 1024), MIN_STACK_KIB);
        return 2;
    }
    sigset_t intr;
    sigemptyset(&intr);
    sigaddset(&intr, SIGINT);
    sigprocmask(SIG_BLOCK, &intr, NULL);
    record_ignored();
    record_locale();
    char *args[argc + 4];
    args[0] = (char *)CORECAST_PYTHON;
    args[1] = (char *)"-c";
    args[2] = (char *)START;
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    args[argc + 2] = NULL;
    /* Python's own argument parsing stops at -c: corecast's arguments follow as sys.argv[1:].
     * The interpreter the build ran with; else the python3 beside this program (a
     * wheel built in one environment, installed in another); else python3 on PATH. */
    execv(args[0], args);
    static char beside[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", beside, sizeof beside - 16);
    char *slash = n > 0 ? memchr(beside, '/', (size_t)n) : NULL;
    if (slash) {
        beside[n] = 0;
        strcpy(strrchr(beside, '/') + 1, "python3");
        args[0] = beside;
        execv(args[0], args);
    }
    args[0] = (char *)"python3";
    execvp(args[0], args);
    int err = errno;
    sigprocmask(SIG_UNBLOCK, &intr, NULL);
    fprintf(stderr, "corecast: cannot start Python (%s): %s\n", args[0], strerror(err));
    return err == ENOENT ? 127 : 126;
}
