"""Helpers for the OpenCL tests: running Python programs plainly, under
``python -m corecast.opencl`` and under ``corecast run``; reading kernel lines."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runtime.helpers import read_lines  # noqa: F401 - the tests import it from here

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "opencl_two_kernels.py"
TIMEOUT = 300  # a guard against hangs, never a speed check
SMALL = ["16384", "4"]  # elements, launches per kernel: quick, still positive device times
LAUNCHES = 4
REPORT_HEAD = "corecast: opencl, pid "
CONTRACT = ("event", "runtime", "name", "calls", "wall_s", "stalls_s", "predicted", "fastest_threads")


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without corecast settings, preloads or autoload."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    from corecast.opencl import autoload_dir

    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != autoload_dir()]
    if parts:
        env["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        env.pop("PYTHONPATH", None)
    env.update(extra)
    return env


def run(cmd, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], env=clean_env() if env is None else env, cwd=cwd,
                          capture_output=True, timeout=TIMEOUT)


def plain(args, env=None, cwd=None):
    """``python ARGS``."""
    return run([sys.executable, *args], env=env, cwd=cwd)


def measured(args, env=None, cwd=None):
    """``python -m corecast.opencl ARGS``."""
    return run([sys.executable, "-m", "corecast.opencl", *args], env=env, cwd=cwd)


def corecast_run(options, args, env=None, cwd=None):
    """``corecast run OPTIONS -- python ARGS`` (corecast through this Python)."""
    return run([sys.executable, "-m", "corecast", "run", *options, "--", sys.executable, *args],
               env=env, cwd=cwd)


def kernels(lines: list[dict]) -> dict[str, dict]:
    out = {}
    for d in lines:
        if d["event"] == "kernel":
            assert d["name"] not in out, f"two lines for kernel {d['name']}"
            out[d["name"]] = d
    return out


def text(data: bytes) -> str:
    return data.decode(errors="replace")
