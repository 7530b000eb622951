"""A library's constructor runs while the dynamic loader holds its lock, and one that runs
OpenMP makes its object's libgomp view (resolve.c) there.  Making a view asks the loader
(dladdr, dlopen, dlsym): a maker on another thread that held the view flag while it asked
waited for the constructor's thread, which spun on that flag, for ever.  Views are now
made outside the flag, which guards only their publication.
CORECAST_TEST_FAULT=view_in_loader makes that order certain: the first maker, about to ask
the loader, waits until the constructor has begun (corecast_test_gate)."""
from __future__ import annotations

from .helpers import clean_env, run_bounded

HUNG_S = 60  # a hang fails well below the suite's TIMEOUT; the run itself takes well under 1 s

CTOR_LIB_C = r"""
#include <omp.h>
#include <stdio.h>
extern int corecast_test_gate;
int ctor_threads;
__attribute__((constructor)) static void ctor(void) {
    __atomic_store_n(&corecast_test_gate, 2, __ATOMIC_RELEASE); /* the loader's lock held */
    #pragma omp parallel num_threads(2)
    {
        #pragma omp atomic
        ctor_threads++;
    }
}
"""

MAIN_C = r"""
#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int corecast_test_gate; /* 1: the view's maker waits (the library's hook); 2: the constructor runs */
static int sum;
static void *worker(void *arg) {
    (void)arg;
    #pragma omp parallel num_threads(2)
    {
        #pragma omp atomic
        sum++;
    }
    return NULL;
}
int main(int argc, char **argv) {
    pthread_t th;
    pthread_create(&th, NULL, worker, NULL);
    if (getenv("CORECAST_TEST_FAULT")) /* the hook's maker is waiting: the constructor next */
        while (__atomic_load_n(&corecast_test_gate, __ATOMIC_ACQUIRE) != 1) {
            struct timespec step = {0, 1000000};
            nanosleep(&step, NULL);
        }
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    pthread_join(th, NULL);
    printf("ctor %d worker %d\n", *(int *)dlsym(h, "ctor_threads"), sum);
    return 0;
}
"""


def test_a_view_made_in_a_constructor_never_waits_for_a_maker_waiting_for_the_loader(build, lib):
    so = build("libctor_omp.so", CTOR_LIB_C, "-shared", "-fPIC", "-fopenmp")
    exe = build("view_in_loader", MAIN_C, "-fopenmp", "-rdynamic", "-pthread", "-ldl")
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run_bounded([exe, so], env, HUNG_S)
    assert (plain.returncode, plain.stdout) == (0, b"ctor 2 worker 2\n"), plain.stderr
    for _ in range(3):
        got = run_bounded([exe, so], {**env, "LD_PRELOAD": str(lib), "CORECAST_TEST_FAULT": "view_in_loader"}, HUNG_S)
        assert (got.returncode, got.stdout) == (0, plain.stdout), got.stderr
