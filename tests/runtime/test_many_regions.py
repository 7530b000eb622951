"""A program with more parallel regions than the library's region table holds
(CC_MAX_REGIONS, less the process's and the two aggregates' sample slots): the regions past
the table are counted together, outermost and nested apart, as "(other regions)" and
"(other nested regions)" (native/core.c cc_region_or_other), so no call goes unrecorded and
their time is not read as serial time between regions.  Counts only: nothing here depends
on timing."""
from __future__ import annotations

import re

from .helpers import NATIVE_SOURCE, clean_env, events, read_lines, run

MAX_REGIONS = int(re.search(r"#define CC_MAX_REGIONS (\d+)", (NATIVE_SOURCE / "model_abi.h").read_text())[1])
NAMED = MAX_REGIONS - 3  # regions the table names; the rest are counted together
FUNCS = NAMED + 75
ROUNDS = 2
NESTED_CALLS = 3  # calls of the holder, whose two threads each start a nested team


def many_regions_c() -> str:
    funcs = "\n".join(
        f"static void f{i}(void) {{ double t = 0;\n#pragma omp parallel for reduction(+ : t)\n"
        f"    for (int k = 0; k < 100; k++) t += k * {i + 1}e-9;\n    sum += t; }}"
        for i in range(FUNCS))
    calls = "\n".join(f"        f{i}();" for i in range(FUNCS))
    return f"""
#include <omp.h>
#include <stdio.h>
static double sum;
static int inner;
{funcs}
static void holder(void) {{
#pragma omp parallel num_threads(2)
    {{
#pragma omp parallel num_threads(2)
        {{
#pragma omp atomic
            inner++;
        }}
    }}
}}
int main(void) {{
    omp_set_max_active_levels(2);
    for (int r = 0; r < {ROUNDS}; r++) {{
{calls}
    }}
    for (int r = 0; r < {NESTED_CALLS}; r++)
        holder();
    printf("%.6f %d\\n", sum, inner);
    return 0;
}}
"""


def test_regions_past_the_table_are_counted_together(build, lib, tmp_path):
    prog = build("many_regions", many_regions_c(), "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive")
    plain = run([prog], env=env)
    assert plain.returncode == 0
    out = tmp_path / "cc.jsonl"
    proc = run([prog], env=env, preload=lib, output=out)
    assert proc.returncode == 0 and proc.stdout == plain.stdout
    assert b"not recorded" not in proc.stderr, proc.stderr.decode()
    lines = read_lines(out)
    regions = events(lines, "region")
    by_name = {r["name"]: r for r in regions}
    other, nested = by_name["(other regions)"], by_name["(other nested regions)"]
    # f0.. fill the table in call order; every later function's calls, and the holder's,
    # are the outermost rest; the holder's inner teams are the nested rest.
    assert other["calls"] == (FUNCS - NAMED) * ROUNDS + NESTED_CALLS and not other["nested"]
    assert nested["calls"] == NESTED_CALLS * 2 and nested["nested"]
    assert sum(r["calls"] for r in regions) == FUNCS * ROUNDS + NESTED_CALLS * 3
    assert len(regions) == NAMED + 2
    assert other["object"] == nested["object"] == "many_regions"
    (summary,) = events(lines, "summary")
    assert summary["overflow"] == 0
    # The text report names them too.
    assert b"(other regions)" in proc.stderr


def test_the_rest_is_never_steered(build, lib):
    """Steering works per region: the rest, many regions in one, keeps the program's teams
    and the report says why."""
    prog = build("many_regions", many_regions_c(), "-fopenmp")
    env = clean_env(OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive")
    plain = run([prog], env=env)
    proc = run([prog], env=env, preload=lib, steer="1")
    assert proc.returncode == 0 and proc.stdout == plain.stdout
    assert b"steering (other regions): not explored, 2 threads kept: many regions: not steered" in proc.stderr, \
        proc.stderr.decode()


# One region, then a plain object loaded and unloaded: dlclose makes the library scan the
# region table (shims/process.c: the object's regions are named first), on this thread.
SCAN_FAULTS_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <sys/resource.h>
static long minflt(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}
int main(int argc, char **argv) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 1000; i++) s += i;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 2; }
    long before = minflt();
    dlclose(h);
    printf("%.0f %ld\n", s, minflt() - before);
    return 0;
}
"""


def test_a_table_scan_reads_only_the_slots_in_use(build, lib):
    """The region table has 256 slots of 9 kB, each on pages of its own: a scan that read every
    slot's key faulted ~255 pages in (62% of a quiet run's extra minor faults, at its first
    sample).  Scans walk the slots in use alone.  Counted, not timed: the faults of one
    dlclose with and without the library (no sampler: nothing else scans the table first)."""
    prog = build("scan_faults", SCAN_FAULTS_C, "-fopenmp", "-ldl")
    other = build("libscan_other.so", "int other_fn(int x) { return x + 1; }\n", "-shared", "-fPIC")
    env = clean_env(OMP_NUM_THREADS="2", OMP_WAIT_POLICY="passive")
    plain = run([prog, other], env=env)
    proc = run([prog, other], env=env, preload=lib, quiet="1", test_fault="no_sampler")
    assert plain.returncode == proc.returncode == 0, proc.stderr.decode()
    (sum_plain, faults_plain), (sum_lib, faults_lib) = (p.stdout.split() for p in (plain, proc))
    assert sum_plain == sum_lib
    assert int(faults_lib) - int(faults_plain) < 64, (faults_plain, faults_lib)
