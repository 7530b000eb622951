"""The exit finalizes the model's libraries before the program's OpenMP runtime.

LLVM's libomp frees its threads' state in its destructor.  A program that exits from one
thread while others are still in parallel regions races its own exit there, and every
finalizer that glibc runs after libomp's widens the window: loaded after libomp, the
model's libraries (libpython, its extension modules) were finalized after it, and such a
host crashed in about a third of its runs with the report instead of one in twenty without
corecast.  The order is what these tests check (glibc's LD_DEBUG=files names each object
as it is finalized), not a crash rate, which would depend on timing."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import TIMEOUT, clean_env, report_blocks, run
from .test_host_edges30 import PLUGIN_C  # a library whose one function runs OpenMP regions
from .test_ompt import both, clang  # noqa: F401 (fixtures)

# Regions on two threads, then an exit from one of them (status 3) while main waits, or
# main's return (status 0).
PROGRAM = r"""
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static double sum;
static void regions(void) {
    for (int r = 0; r < 50; r++) {
#pragma omp parallel for reduction(+:sum)
        for (int i = 0; i < 20000; i++) sum += i * 0.5;
    }
}
static void *leaver(void *arg) {
    regions();
    printf("leaving %.1f\n", sum);
    exit(3);
}
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, leaver, NULL);
        pthread_join(t, NULL);
    }
    regions();
    printf("done %.1f\n", sum);
    return 0;
}
"""


def finalized(debug_dir: Path) -> list[str]:
    """The objects glibc finalized, in order, from LD_DEBUG_OUTPUT's file(s)."""
    names = []
    for f in sorted(debug_dir.iterdir()):
        for line in f.read_text(errors="replace").splitlines():
            if "calling fini:" in line:
                words = line.split("calling fini:", 1)[1].split()
                names.append(words[0] if words else "")
    return names


def position(names: list[str], part: str) -> int:
    found = [i for i, n in enumerate(names) if part in Path(n).name]
    assert found, f"{part} was not finalized: {names}"
    return found[0]


def run_debugged(prog: Path, arg: str, tmp_path: Path, lib: Path | None, **settings):
    debug = tmp_path / f"ld-{arg}-{'corecast' if lib else 'plain'}"
    debug.mkdir()
    env = clean_env(OMP_NUM_THREADS="2", LD_DEBUG="files", LD_DEBUG_OUTPUT=str(debug / "fini"))
    proc = run([prog, arg], env=env, preload=lib, **settings)
    return proc, finalized(debug)


@pytest.mark.parametrize("how,status", [("thread", 3), ("main", 0)])
def test_the_model_libraries_are_finalized_before_libomp(both, lib, tmp_path, how, status):
    prog = both("teardown", PROGRAM)["clang"]
    plain, _ = run_debugged(prog, how, tmp_path, None)
    proc, names = run_debugged(prog, how, tmp_path, lib, target="4")
    assert plain.returncode == proc.returncode == status
    assert proc.stdout == plain.stdout
    assert report_blocks(proc.stderr) == 1
    omp = position(names, "libomp")
    # The model ran (its library and libpython are in the process) and went first.
    for part in ("libcorecast_model.so", "libpython"):
        assert position(names, part) < omp, names


PY_HOST = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.plug_work.restype = ctypes.c_double
print(lib.plug_work(200))
"""


def test_a_python_hosts_model_goes_before_libomp_too(clang, lib, tmp_path):
    """A Python host's report runs in its atexit hook; libomp came with a library it loaded."""
    import sys

    src, so, script = tmp_path / "work.c", tmp_path / "libwork.so", tmp_path / "host.py"
    src.write_text(PLUGIN_C)
    script.write_text(PY_HOST)
    r = subprocess.run([clang, "-O2", "-fopenmp", "-shared", "-fPIC", "-o", str(so), str(src)], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    debug = tmp_path / "ld"
    debug.mkdir()
    env = clean_env(OMP_NUM_THREADS="2", LD_DEBUG="files", LD_DEBUG_OUTPUT=str(debug / "fini"))
    proc = run([sys.executable, script, so], env=env, preload=lib, target="4")
    assert proc.returncode == 0, proc.stderr
    assert report_blocks(proc.stderr) == 1
    names = finalized(debug)
    assert position(names, "libcorecast_model.so") < position(names, "libomp"), names


def test_a_quiet_run_loads_nothing_at_exit(both, lib, tmp_path):
    """No model, nothing to order: the exit loads no library of ours."""
    prog = both("teardown", PROGRAM)["clang"]
    proc, names = run_debugged(prog, "thread", tmp_path, lib, quiet="1")
    assert proc.returncode == 3
    assert not [n for n in names if "libpython" in n or "teardown_order" in n or "libcorecast_model" in n]


def test_a_quiet_steered_run_orders_them_once_the_sampler_is_done(both, lib, tmp_path):
    """Steering starts the model in a quiet run too.  Its exit writes no report and does not
    await a model run of the sampler's (it would cost the program a core), but a sampler done
    with its window orders the libraries as a report's end does.  The test fault has the
    sampler start the model first and the exit await its run, so that it is done here."""
    prog = both("teardown", PROGRAM)["clang"]
    plain, _ = run_debugged(prog, "thread", tmp_path, None)
    proc, names = run_debugged(prog, "thread", tmp_path, lib, quiet="1", steer="1", test_fault="quiet_exit_awaits")
    assert plain.returncode == proc.returncode == 3
    assert proc.stdout == plain.stdout
    assert report_blocks(proc.stderr) == 0
    omp = position(names, "libomp")
    for part in ("libcorecast_model.so", "libpython"):
        assert position(names, part) < omp, names


def test_a_gcc_program_is_left_in_its_order(build, lib, tmp_path):
    """libgomp frees nothing its threads use at exit: no library is added for it."""
    prog = build("teardown_gcc", PROGRAM, "-fopenmp")
    proc, names = run_debugged(prog, "thread", tmp_path, lib, target="4")
    assert proc.returncode == 3
    assert report_blocks(proc.stderr) == 1
    assert position(names, "libcorecast_model.so") >= 0
    assert not [n for n in names if "teardown_order" in n]


def test_a_runtime_under_another_file_name_is_known_by_its_soname(both, build, lib, tmp_path):
    """LLVM's install aliases and conda-forge's llvm OpenMP put libomp at libgomp.so(.1) too,
    so a gcc-built program runs on it under that name: the anchor's need resolves by the
    runtime's soname."""
    clang_prog = both("teardown", PROGRAM)["clang"]
    ldd = subprocess.run(["ldd", str(clang_prog)], capture_output=True, text=True, timeout=TIMEOUT).stdout
    libomp = next(Path(line.split("=>")[1].split()[0]) for line in ldd.splitlines() if "libomp" in line)
    libs = tmp_path / "lib"
    libs.mkdir()
    shutil.copy(libomp, libs / libomp.name)
    (libs / "libgomp.so.1").symlink_to(libomp.name)
    prog = build("teardown_gcc", PROGRAM, "-fopenmp")
    debug = tmp_path / "ld"
    debug.mkdir()
    env = clean_env(OMP_NUM_THREADS="2", LD_LIBRARY_PATH=str(libs), LD_DEBUG="files",
                    LD_DEBUG_OUTPUT=str(debug / "fini"))
    proc = run([prog, "thread"], env=env, preload=lib, target="4")
    assert proc.returncode == 3
    assert report_blocks(proc.stderr) == 1
    names = finalized(debug)
    runtime = position(names, "libgomp.so.1")
    assert str(libs) in names[runtime], names  # the program ran on the renamed libomp
    for part in ("libcorecast_model.so", "libpython"):
        assert position(names, part) < runtime, names


def test_each_runtime_name_has_its_library():
    """Each anchor needs exactly the runtime it is named for, and nothing else (no libc:
    loading it can bring in nothing new)."""
    from corecast._native import PRELOAD
    from corecast.runtime.build import TEARDOWN_DIR, TEARDOWN_RUNTIMES

    folder = Path(PRELOAD).parent / TEARDOWN_DIR
    for soname in TEARDOWN_RUNTIMES:
        out = subprocess.run(["readelf", "-d", str(folder / f"{soname}.so")], capture_output=True, text=True,
                             timeout=TIMEOUT)
        assert out.returncode == 0, out.stderr
        needed = [line.split("[", 1)[1].rstrip("]") for line in out.stdout.splitlines() if "(NEEDED)" in line]
        assert needed == [soname]


def test_the_exit_race_benchmark_counts_each_way(clang, lib, capsys):
    """benchmarks/exit_race.py: a table row per way of running, its runs all counted (the
    rates are timing; only the counting is checked)."""
    from benchmark_module import load_benchmark

    bench = load_benchmark("exit_race")
    assert bench.main(["--runs", "2", "--lib", str(lib)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "run (" not in line]
    assert [r.split(" | ")[0] for r in rows] == ["| bare", "| corecast (report at exit)", "| corecast, CORECAST_QUIET=1"]
    for row in rows:
        cells = [int(c) for c in row.strip(" |").split(" | ")[1:]]
        assert sum(cells[:-1]) == 2 and 0 <= cells[-1] <= 2


def test_the_exit_race_benchmark_refuses_a_missing_library(tmp_path, capsys):
    from benchmark_module import load_benchmark

    if not shutil.which("clang"):
        pytest.skip("clang is not installed")
    assert load_benchmark("exit_race").main(["--runs", "1", "--lib", str(tmp_path / "none.so")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("exit_race: no preload library at ") and err.count("\n") == 1
