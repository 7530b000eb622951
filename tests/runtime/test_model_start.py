"""A model that cannot start says why (table and JSON), and an editable install's model
finds its environment's packages (issue 37, item 7)."""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from .helpers import EXAMPLES, TIMEOUT, events, read_lines, run

REPO = Path(__file__).resolve().parents[2]
START_FAILED = "the model could not start: "


@pytest.fixture(scope="module")
def omp_critical(build) -> Path:
    return build("omp_critical", EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")


def fake_install(root: Path, lib: Path, *, model: bool = True, sitepaths: bool = True) -> Path:
    """A copy of the libraries under ``root/corecast/_native`` with a package root that
    holds only what the test puts there; the copy's preload library."""
    native = root / "corecast" / "_native"
    native.mkdir(parents=True)
    shutil.copy(lib, native / lib.name)
    if model:
        shutil.copy(lib.parent / "libcorecast_model.so", native / "libcorecast_model.so")
    if sitepaths:  # the module path is set: the start gets as far as cffi
        from corecast.runtime import sitepaths as real

        (root / "corecast" / "__init__.py").write_text("")
        (root / "corecast" / "runtime").mkdir()
        (root / "corecast" / "runtime" / "__init__.py").write_text("")
        shutil.copy(real.__file__, root / "corecast" / "runtime" / "sitepaths.py")
    return native / lib.name


def start_failure(program: Path, preload: Path, out: Path) -> tuple[str, str]:
    """The run's 'no predictions' line and its JSON "model", checking that the program's
    own output and status are a plain run's."""
    plain = run([program, "20"])
    r = run([program, "20"], preload=preload, output=out)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout)
    lines = [ln for ln in r.stderr.decode().splitlines() if ln.startswith("no predictions: ")]
    assert len(lines) == 1, r.stderr.decode()
    (summary,) = events(read_lines(out), "summary")
    return lines[0].removeprefix("no predictions: "), summary["model"]


def test_a_missing_model_library_is_named(lib, omp_critical, tmp_path):
    preload = fake_install(tmp_path / "root", lib, model=False)
    line, model = start_failure(omp_critical, preload, tmp_path / "j.jsonl")
    assert line.startswith(START_FAILED + "cannot load the model library: ")
    assert model == line


def test_a_broken_cffi_backend_is_named(lib, omp_critical, tmp_path):
    # The package root comes first on the model's path: this one shadows the real module.
    preload = fake_install(tmp_path / "root", lib)
    (tmp_path / "root" / "_cffi_backend.py").write_text("raise ImportError('broken for the test')\n")
    line, model = start_failure(omp_critical, preload, tmp_path / "j.jsonl")
    assert line == START_FAILED + "cannot import cffi's _cffi_backend: ImportError: broken for the test"
    assert model == line


def test_an_exception_in_the_init_code_is_named(lib, omp_critical, tmp_path):
    # cffi starts (its backend is there) and the init code cannot import the model: cffi
    # alone would print on a stderr the sampler does not have and answer zeroes.
    import _cffi_backend

    preload = fake_install(tmp_path / "root", lib)
    os.symlink(_cffi_backend.__file__, tmp_path / "root" / Path(_cffi_backend.__file__).name)
    line, model = start_failure(omp_critical, preload, tmp_path / "j.jsonl")
    assert line == (START_FAILED + "cannot import corecast: ModuleNotFoundError: "
                    "No module named 'corecast.runtime.bridge'")
    assert model == line


# A program that drops root before its parallel work (a daemon, a setuid tool).
DROPS_ROOT_C = r"""
#include <omp.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    if (setgid(65534) || setuid(65534))
        return 9;
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 100000; i++)
        s += i * 0.5;
    printf("%.1f\n", s);
    return 0;
}
"""


def test_a_python_the_program_may_not_read_is_named_so(lib, build):
    """It said the Python the model was built with "is gone" where it was there but out of
    the reach of the user the program had become."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to become nobody")
    home = Path(sys.base_prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "encodings"
    readable = subprocess.run(["test", "-r", str(home / "__init__.py")], preexec_fn=lambda: os.setuid(65534))
    if readable.returncode == 0:
        pytest.skip(f"nobody may read {home}: the model starts")
    exe = build("drops_root", DROPS_ROOT_C, "-fopenmp")
    exe.parent.chmod(0o755)  # nothing of the program's own needs reading as nobody
    plain = run([exe])
    r = run([exe], preload=lib)
    assert (r.returncode, r.stdout) == (plain.returncode, plain.stdout) == (0, b"2499975000.0\n")
    err = r.stderr.decode()
    assert "is gone" not in err, err
    assert START_FAILED + "this process may not read the Python the model was built with (" in err, err


def test_a_missing_package_root_is_named(lib, omp_critical, tmp_path):
    preload = fake_install(tmp_path / "root", lib, sitepaths=False)
    line, model = start_failure(omp_critical, preload, tmp_path / "j.jsonl")
    assert line.startswith(START_FAILED + "cannot set the model's module path: ModuleNotFoundError")
    assert model == line


def _source_tree(dest: Path) -> bool:
    """A copy of the source tree (what `pip install -e` needs), or False without one."""
    needed = ["setup.py", "pyproject.toml", "README.md", "src", "native", "shims"]
    if not all((REPO / n).exists() for n in needed):
        return False
    dest.mkdir()
    for name in needed + ["MANIFEST.in"]:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, dest / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.so", "*.egg-info", "_openmp_probe*"))
        elif path.exists():
            shutil.copy(path, dest / name)
    return True


def test_an_editable_install_predicts(omp_critical, tmp_path):
    """`pip install -e` into a venv that reaches this environment's packages (numpy, cffi,
    setuptools) only through a .pth file: the libraries then sit in the source tree,
    which names no environment, and the model must still find them all."""
    src = tmp_path / "src-tree"
    if not _source_tree(src):
        pytest.skip("no source tree beside the tests (an installed corecast)")
    venv = tmp_path / "ve"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT)
    python = venv / "bin" / "python"
    ve_site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True, timeout=TIMEOUT).stdout.strip())
    ours = [p for p in dict.fromkeys([sysconfig.get_paths()["purelib"], *site.getsitepackages()])
            if os.path.isdir(p)]
    (ve_site / "zz_test_parent.pth").write_text("".join(f"{p}\n" for p in ours))
    t0 = time.monotonic()
    # Build isolation as a developer has it (pyproject's setuptools may be newer than ours);
    # its build requirements come from pip's index or cache, the venv's from the .pth.
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                        "-e", str(src)],
                       capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode != 0:
        pytest.skip(f"pip install -e failed here: {r.stderr[-500:]}")
    print(f"editable install: {time.monotonic() - t0:.1f} s")
    assert (src / "src" / "corecast" / "_native" / "libcorecast_model.so").is_file()
    out = tmp_path / "j.jsonl"
    r = run([python, "-m", "corecast", "run", "--json-out", out, "--", omp_critical, "20"])
    assert r.returncode == 0, r.stderr.decode()
    text = r.stderr.decode()
    assert "no predictions" not in text, text
    (summary,) = events(read_lines(out), "summary")
    assert summary["model"] == "ok"
    region = [d for d in events(read_lines(out), "region") if d.get("name", "").startswith("main._omp_fn")]
    assert region and region[-1]["predicted"], region


THREADS_PY = r"""
import threading
def work(k):
    return sum(i * k for i in range(20000))
threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
[t.start() for t in threads]
[t.join() for t in threads]
print("done")
"""


def test_a_python_thread_holding_the_gil_never_waits_for_the_samplers_model_start(lib, tmp_path):
    # Python starts a thread holding the GIL, and the library's first activity (that
    # pthread_create) starts the model on that thread.  Once, under load, the sampler began
    # the start first: it waited in PyGILState_Ensure for the GIL while the program's
    # thread spun on the start's flag, for ever (1 run in 75 of test_numa_native's os._exit
    # host).  The program's thread now starts the model before the sampler exists, and one
    # holding the GIL gives up rather than wait for another thread's start.
    # CORECAST_TEST_FAULT=sampler_first makes the old order certain: the sampler's start
    # first, the program's thread waiting until it has begun.  (The report may then be
    # lost: a start still waiting for the GIL when Python finalizes ends the sampler.)
    script = tmp_path / "threads.py"
    script.write_text(THREADS_PY)
    out = tmp_path / "cc.jsonl"
    for _ in range(3):
        r = run([sys.executable, script], preload=lib, output=out, test_fault="sampler_first", timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout == b"done\n"
        assert b"Traceback" not in r.stderr
        read_lines(out)  # whatever was written is whole lines
