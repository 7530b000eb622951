"""The installed ``corecast`` command (native/launcher/corecast.c) under limits that keep
CPython from starting: one line and a non-zero exit, never a crash."""
from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "corecast"  # the installed console script, as users run it


def test_a_stack_limit_python_cannot_start_in_is_one_line():
    """Under `ulimit -s 64` CPython died of SIGSEGV before any line of corecast's ran."""
    if not SCRIPT.is_file() or SCRIPT.read_bytes()[:4] != b"\x7fELF":
        pytest.skip(f"the native corecast command is not installed beside {sys.executable}")
    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard != resource.RLIM_INFINITY and hard < 64 * 1024:
        pytest.skip("the hard stack limit is already below 64 KiB")

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (64 * 1024, hard))

    proc = subprocess.run([str(SCRIPT), "run", "--", "true"], capture_output=True, text=True, timeout=120,
                          preexec_fn=small_stack)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "stack limit (ulimit -s 64)" in proc.stderr and "128 KiB" in proc.stderr
