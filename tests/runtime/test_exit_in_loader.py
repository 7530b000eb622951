"""A program that ends (exit, _exit) inside a dl_iterate_phdr callback holds the loader's
write lock for good.  The exit report asked the loader there: the sampler's model start
(dlopen of the model library) took the loader's other lock and waited for the write lock,
the exit waited CORECAST_EXIT_TIMEOUT_MS for its answer, and then the report's own dlsym
(flush_program_streams) waited for the sampler's lock: for ever after exit(), 10 s after
_exit().  A sampler naming a region (dl_iterate_phdr) at that moment held the naming lock
the exit report then waited for, for ever.  The exit report now asks the loader nothing
there: no model, no naming that needs it (one line says so), the program's output and
status its own.  CORECAST_TEST_FAULT=naming_in_loader makes the naming order certain: the
sampler's first naming, about to ask the loader, waits until the program's callback has
begun (corecast_test_gate).  An exit from a library's constructor inside dlopen (the
loader's other lock, the exiting thread's, which the sampler's dladdr waits for) is not seen
as inside the loader: it waits for the namer and the model at most the exit timeout each."""
from __future__ import annotations

import pytest

from .helpers import clean_env, report_blocks, run_bounded

HUNG_S = 60  # a hang fails well below the suite's TIMEOUT; the runs take well under 1 s
IN_LOADER = "no predictions: the program ended inside the loader"

PROGRAM_C = r"""
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int corecast_test_gate; /* 1: the sampler is about to ask the loader; 2: the callback runs */
static int quick;
static int callback(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info; (void)size; (void)data;
    __atomic_store_n(&corecast_test_gate, 2, __ATOMIC_RELEASE); /* the loader's lock held */
    printf("in the callback\n");
    if (quick) {
        fflush(stdout);
        _exit(4);
    }
    exit(3);
}
int main(int argc, char **argv) {
    quick = argc > 1 && !strcmp(argv[1], "_exit");
    double s = 0;
#ifdef _OPENMP
    #pragma omp parallel for reduction(+:s)
    for (int i = 0; i < 1000000; i++)
        s += i;
#endif
    printf("%g\n", s);
    if (getenv("CORECAST_TEST_FAULT")) /* bounded: a run without the hook goes on */
        for (int i = 0; i < 20000 && __atomic_load_n(&corecast_test_gate, __ATOMIC_ACQUIRE) != 1; i++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    dl_iterate_phdr(callback, NULL);
    return 0;
}
"""


@pytest.fixture(scope="module")
def programs(build):
    return {"openmp": build("exit_in_loader_omp", PROGRAM_C, "-fopenmp", "-rdynamic"),
            "serial": build("exit_in_loader", PROGRAM_C, "-rdynamic")}


@pytest.mark.parametrize("how", ["exit", "_exit"])
# The naming fault needs a region to name: the serial host has none.
@pytest.mark.parametrize("host, fault", [("openmp", ""), ("openmp", "naming_in_loader"), ("serial", "")])
def test_an_exit_inside_a_dl_iterate_phdr_callback_ends_as_the_program_does(lib, programs, how, host, fault):
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run_bounded([programs[host], how], env, HUNG_S)
    assert (plain.returncode, plain.stdout.splitlines()[-1]) == ({"exit": 3, "_exit": 4}[how], b"in the callback")
    hooked = {**env, "LD_PRELOAD": str(lib)} | ({"CORECAST_TEST_FAULT": fault} if fault else {})
    got = run_bounded([programs[host], how], hooked, HUNG_S)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout), got.stderr
    err = got.stderr.decode()
    if host == "openmp":  # reported, without asking the loader
        assert report_blocks(got.stderr) == 1 and IN_LOADER in err, err
    else:  # nothing ran in parallel: nothing to say under a bare LD_PRELOAD
        assert err == "", err


CTOR_LIB_C = r"""
#include <stdio.h>
#include <stdlib.h>
extern int corecast_test_gate;
__attribute__((constructor)) static void ctor(void) {
    __atomic_store_n(&corecast_test_gate, 2, __ATOMIC_RELEASE); /* the loader's lock held */
    printf("in the constructor\n");
    exit(5);
}
"""

CTOR_MAIN_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int corecast_test_gate;
int main(int argc, char **argv) {
    (void)argc;
    double s = 0;
    #pragma omp parallel for reduction(+:s)
    for (int i = 0; i < 1000000; i++)
        s += i;
    printf("%g\n", s);
    if (getenv("CORECAST_TEST_FAULT"))
        for (int i = 0; i < 20000 && __atomic_load_n(&corecast_test_gate, __ATOMIC_ACQUIRE) != 1; i++)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    dlopen(argv[1], RTLD_NOW);
    return 0;
}
"""


@pytest.mark.parametrize("fault", ["", "naming_in_loader"])
def test_an_exit_from_a_constructor_inside_dlopen_ends_as_the_program_does(lib, build, fault):
    so = build("libexit_in_ctor.so", CTOR_LIB_C, "-shared", "-fPIC")
    exe = build("exit_in_ctor", CTOR_MAIN_C, "-fopenmp", "-rdynamic", "-ldl")
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run_bounded([exe, so], env, HUNG_S)
    assert (plain.returncode, plain.stdout.splitlines()[-1]) == (5, b"in the constructor")
    hooked = {**env, "LD_PRELOAD": str(lib), "CORECAST_EXIT_TIMEOUT_MS": "1000"}
    got = run_bounded([exe, so], hooked | ({"CORECAST_TEST_FAULT": fault} if fault else {}), HUNG_S)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout), got.stderr
    assert report_blocks(got.stderr) == 1, got.stderr.decode()
