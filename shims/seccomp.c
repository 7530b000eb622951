/* Seccomp shim: the calls by which a program restricts its own system calls, prctl's
 * PR_SET_SECCOMP and the seccomp system call (libseccomp's seccomp_load makes one or the
 * other), stop corecast first (lifecycle.c, cc_before_restrict).  A filter installed
 * before the program started, or by a raw system call instruction, is not seen. */
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
    if (__builtin_expect(option == PR_SET_SECCOMP, 0))
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
    if (__builtin_expect(nr == SYS_seccomp, 0) && (a1 == SECCOMP_SET_MODE_STRICT || a1 == SECCOMP_SET_MODE_FILTER))
        cc_before_restrict();
    return CC_LIBC(syscall)(nr, a1, a2, a3, a4, a5, a6);
}
