/* Seccomp shim: the calls by which a program restricts its own system calls, prctl's
 * PR_SET_SECCOMP and the seccomp system call (libseccomp's seccomp_load makes one or the
 * other), stop corecast first (lifecycle.c, cc_before_restrict).  Not the calls the kernel
 * refuses before looking at a filter, by which libseccomp's seccomp_api_get and systemd ask
 * what it supports: no filter (EFAULT), strict mode with flags or arguments, an unknown mode
 * (EINVAL).  A filter installed before the program started, or by a raw system call
 * instruction, is not seen. */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../native/corecast.h"
#include "../native/lifecycle.h"
#include "../native/real.h"

int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    /* Strict mode ignores the rest; a filter needs its program (a null one is a probe). */
    if (__builtin_expect(option == PR_SET_SECCOMP, 0) &&
        (a2 == SECCOMP_MODE_STRICT || (a2 == SECCOMP_MODE_FILTER && a3 != 0)))
        cc_before_restrict();
    return CC_LIBC(prctl)(option, a2, a3, a4, a5);
}

/* As glibc's syscall(): six arguments, whatever the call takes. */
long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    if (__builtin_expect(nr == SYS_seccomp, 0) &&
        ((a1 == SECCOMP_SET_MODE_STRICT && a2 == 0 && a3 == 0) || (a1 == SECCOMP_SET_MODE_FILTER && a3 != 0)))
        cc_before_restrict();
    return CC_LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
}
