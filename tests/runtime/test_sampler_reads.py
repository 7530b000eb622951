"""What the library reads of /proc (native/counters.c), counted by an interposed ``open``
ahead of it: each task's ``sched`` file (its migrations) is read only where the figure
reaches an output, the JSON Lines.  Counts only: nothing here is timed."""
from __future__ import annotations

from .helpers import clean_env, events, read_lines, run

# Counts the opens of /proc/self/task/TID/sched; the count is written at exit to the file
# OPENS_OUT names.  Preloaded before corecast, so that its calls of open reach this one.
COUNT_OPENS_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static int sched_opens;
static int counted(const char *path) {
    size_t n = strlen(path);
    if (!strncmp(path, "/proc/self/task/", 16) && n > 6 && !strcmp(path + n - 6, "/sched"))
        __atomic_add_fetch(&sched_opens, 1, __ATOMIC_RELAXED);
    return 0;
}
#define OPEN(name)                                                                    \
    int name(const char *path, int flags, ...) {                                      \
        static int (*real)(const char *, int, ...);                                   \
        if (!real) real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);   \
        va_list ap;                                                                   \
        va_start(ap, flags);                                                          \
        int mode = va_arg(ap, int);                                                   \
        va_end(ap);                                                                   \
        counted(path);                                                                \
        return real(path, flags, mode);                                               \
    }
OPEN(open)
OPEN(open64)
__attribute__((destructor)) static void done(void) {
    const char *out = getenv("OPENS_OUT");
    FILE *f = out ? fopen(out, "w") : NULL;
    if (f) {
        fprintf(f, "%d\n", __atomic_load_n(&sched_opens, __ATOMIC_RELAXED));
        fclose(f);
    }
}
"""

PROGRAM_C = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
    for (int r = 0; r < 20; r++) {
#pragma omp parallel for reduction(+ : s)
        for (int i = 0; i < 1000; i++) s += i;
    }
    printf("%.0f\n", s);
    return 0;
}
"""


def test_task_sched_files_are_read_only_for_the_json_lines(build, lib, tmp_path):
    counter = build("libcount_opens.so", COUNT_OPENS_C, "-shared", "-fPIC", "-ldl")
    prog = build("sched_reads", PROGRAM_C, "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="3", OMP_WAIT_POLICY="passive")
    plain = run([prog], env=env)
    opens = {}
    for side in ("report", "json"):
        env_side = dict(env, OPENS_OUT=str(tmp_path / f"{side}.opens"))
        settings = {"output": str(tmp_path / "cc.jsonl")} if side == "json" else {}
        got = run([prog], env=env_side, preload=f"{counter}:{lib}", **settings)
        assert (got.returncode, got.stdout) == (0, plain.stdout), got.stderr.decode()
        opens[side] = int((tmp_path / f"{side}.opens").read_text())
    # The exit's sample read every live task's sched for the JSON Lines; the report alone
    # needs none (it names the migrations figure, never shows it).
    assert opens["json"] >= 1 and opens["report"] == 0, opens
    (proc,) = events(read_lines(tmp_path / "cc.jsonl"), "process")
    assert "migrations" in proc["counters"]
