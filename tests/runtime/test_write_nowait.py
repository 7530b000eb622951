"""corecast's writes never block on a pipe (native/write.c), on an older kernel too.

Pipes take RWF_NOWAIT on recent kernels; where they refuse it (EOPNOTSUPP) write.c writes
at most PIPE_BUF bytes, and only once the pipe polls writable.  A pipe is full by pages, not
bytes: one whose reader took 100 bytes of its first page holds 100 bytes less than its size
and has no free page, and a write sized by the bytes missing blocked for ever there.  This
test builds write.c with CC_TEST_NO_RWF_NOWAIT, which takes that path on any kernel."""
from __future__ import annotations

import subprocess

from .helpers import NATIVE_SOURCE, TIMEOUT

MAIN_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int cc_write_all(int fd, const char *p, size_t n, double patience_s);
int main(void) {
    int p[2];
    if (pipe(p)) return 2;
    int size = fcntl(p[1], F_GETPIPE_SZ);
    static char page[4096], got[100];
    memset(page, 'x', sizeof page);
    for (int i = 0; i < size / 4096; i++)
        if (write(p[1], page, sizeof page) != sizeof page) return 3;
    if (read(p[0], got, sizeof got) != sizeof got) return 4; /* 100 bytes of room, no free page */
    int rc = cc_write_all(p[1], "the report's first line", 23, 0.2);
    printf("full: %d %s\n", rc, rc ? strerror(errno) : "written");
    static char drain[1 << 16];
    while (read(p[0], drain, sizeof drain) == (ssize_t)sizeof drain) {}
    rc = cc_write_all(p[1], "the report's first line", 23, 0.2);
    printf("drained: %d %s\n", rc, rc ? strerror(errno) : "written");
    return 0;
}
"""


def test_a_pipe_full_by_pages_is_not_waited_on_for_ever(tmp_path):
    main = tmp_path / "main.c"
    main.write_text(MAIN_C)
    exe = tmp_path / "write_nowait"
    r = subprocess.run(["gcc", "-O2", "-pthread", "-DCC_TEST_NO_RWF_NOWAIT", f"-I{NATIVE_SOURCE}",
                        str(NATIVE_SOURCE / "write.c"), str(main), "-o", str(exe), "-ldl"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    try:
        out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60).stdout
    except subprocess.TimeoutExpired:
        raise AssertionError("the write blocked on the pipe with no free page") from None
    assert out == "full: -1 Resource temporarily unavailable\ndrained: 0 written\n"
