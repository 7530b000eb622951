"""The host-safety issue list (benchmarks/hostsafe.py), each item once against a C OpenMP
host and a Python host running pyopencl kernels, plain and under `corecast run`: the
program's stdout bytes, exit status and files are its own (docs/promise.md).  The script
runs them many times (`--repeat 20`); here each runs once, and a way of running that does
change the program is caught."""
from __future__ import annotations

import subprocess
import sys

import pytest
from benchmark_module import load_benchmark

from .helpers import TIMEOUT

hostsafe = load_benchmark("hostsafe")

PYOPENCL_PROBE = "import pyopencl as cl; cl.create_some_context(interactive=False)"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("hostsafe")


@pytest.fixture(scope="module")
def ways(lib, work):
    """host -> way -> argv, or a skip for a Python host without an OpenCL device."""
    built = hostsafe.hosts(work, ["c"])
    probe = subprocess.run([sys.executable, "-c", PYOPENCL_PROBE], capture_output=True, timeout=TIMEOUT)
    if probe.returncode == 0:
        built.update(hostsafe.hosts(work, ["python"]))
    return built


@pytest.mark.parametrize("host", ["c", "python"])
@pytest.mark.parametrize("item", sorted(hostsafe.ITEMS))
def test_the_item_holds(ways, work, host, item):
    if host not in ways:
        pytest.skip("no usable OpenCL device for the Python host (pyopencl and pocl: pip install '.[opencl]')")
    assert hostsafe.check(item, ways[host]["plain"], ways[host]["run"], work) == []


def test_exec_failures_are_a_shells(lib, work):
    lines = hostsafe.item_exec(work)
    assert len(lines) == 3 and all(line.startswith("held") for line in lines), lines


# A way of running that is not the program's own: it writes to fd 1000 after the program,
# and leaves a line on stderr without its end.
INTRUDER = 'p="$1"; shift; "$p" "$@"; s=$?; { echo intruder >&1000; } 2>/dev/null; printf "cut" >&2; exit $s'


@pytest.mark.parametrize("item,what", [("fd1000", "data"), ("fsize", "cut line")])
def test_a_way_that_changes_the_program_is_caught(ways, work, item, what):
    intruder = ["bash", "-c", INTRUDER, "intruder", *ways["c"]["plain"]]
    differ = hostsafe.check(item, ways["c"]["plain"], intruder, work)
    assert any(f": {what}: " in line for line in differ), differ


def test_an_exec_failure_said_otherwise_is_caught(tmp_path, monkeypatch):
    # A corecast that exits as bash does but does not give bash's reason differs.
    fake, work = tmp_path / "corecast", tmp_path / "work"
    work.mkdir()
    fake.write_text('#!/bin/sh\nbash -c "$3" 2>/dev/null; s=$?; echo "corecast: error: it failed" >&2; exit $s\n')
    fake.chmod(0o755)
    monkeypatch.setattr(hostsafe, "BIN", tmp_path)
    lines = hostsafe.item_exec(work)
    assert len(lines) == 3 and all(line.startswith("DIFFERS") for line in lines), lines
