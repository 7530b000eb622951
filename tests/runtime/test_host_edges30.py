"""Edges of the promise (docs/promise.md) that hostsafe30's hunt found, in environments not
tried before: an object with OpenMP regions that the program unloads before it exits.  Each
case runs the same program without and with corecast and compares."""
from __future__ import annotations

import subprocess

from .helpers import TIMEOUT, clean_env, events, read_lines

PLUGIN_C = r"""
double plug_work(int reps) {
    double s = 0;
    for (int r = 0; r < reps; r++) {
#pragma omp parallel for reduction(+:s)
        for (int i = 0; i < 1000; i++) s += i * 0.25;
    }
    return s;
}
"""

# Another object, loaded after the plugin is gone: it may take the plugin's addresses.
OTHER_C = "int other_pad[100000];\nint other_fn(int x) { return x + other_pad[x]; }\n"

DLCLOSE_MAIN_C = r"""
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
int main(int argc, char **argv) {
    printf("threads %d\n", omp_get_max_threads()); /* the program's own libgomp */
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 2; }
    double (*work)(int) = (double (*)(int))dlsym(h, "plug_work");
    printf("plug %.1f\n", work(3));
    dlclose(h);
    void *other = dlopen(argv[2], RTLD_NOW);
    printf("other %d\n", other != NULL);
    return 3;
}
"""


UNLOAD_RUNTIME_MAIN_C = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 2; }
    double (*work)(int) = (double (*)(int))dlsym(h, "plug_work");
    printf("plug %.1f\n", work(50));
    fflush(stdout);
    dlclose(h); /* the last object that needs libgomp: it goes too */
    return 3;
}
"""


def test_unloading_the_last_object_that_needs_libgomp_keeps_the_program_alive(build, lib):
    """A program that does not link libgomp itself dlcloses the plugin whose regions it ran,
    and libgomp with it, while libgomp's pool threads are still in its code.  Without
    corecast they had gone to sleep by then in all but 1 of 40 runs; with it, 19 of 20 runs
    died with SIGSEGV.  corecast keeps the runtime its views point into loaded."""
    plugin = build("libplug30.so", PLUGIN_C, "-shared", "-fPIC", "-fopenmp")
    prog = build("unload30", UNLOAD_RUNTIME_MAIN_C, "-ldl")
    env = clean_env(OMP_NUM_THREADS="2", LD_PRELOAD=str(lib))
    for _ in range(5):
        got = subprocess.run([prog, plugin], env=env, capture_output=True, timeout=TIMEOUT)
        assert (got.returncode, got.stdout) == (3, b"plug 6243750.0\n"), got.stderr.decode()


def test_regions_of_an_unloaded_object_keep_its_name(build, lib, tmp_path):
    """The program (which links libgomp itself, so that the runtime stays) runs a plugin's
    regions, dlcloses it and loads another object; no window comes before the exit.  The
    exit named the region from its address after the plugin was gone: the program's file
    and a bare address (``fn@0x7f... (dlm)``), or whatever took its place."""
    plugin = build("libplug30.so", PLUGIN_C, "-shared", "-fPIC", "-fopenmp")
    other = build("libother30.so", OTHER_C, "-shared", "-fPIC")
    prog = build("dlclose30", DLCLOSE_MAIN_C, "-fopenmp", "-ldl")
    env = clean_env(OMP_NUM_THREADS="2")
    plain = subprocess.run([prog, plugin, other], env=env, capture_output=True, timeout=TIMEOUT)
    out = tmp_path / "dl.jsonl"
    env.update(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out), CORECAST_WINDOW_MS="60000")
    got = subprocess.run([prog, plugin, other], env=env, capture_output=True, timeout=TIMEOUT)
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout) == (3, b"threads 2\nplug 374625.0\nother 1\n")
    regions = [(d["name"], d["object"]) for d in events(read_lines(out), "region") if d["name"] != "process"]
    assert regions == [("plug_work._omp_fn.0", "libplug30.so")], got.stderr.decode()
