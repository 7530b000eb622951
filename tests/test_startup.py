"""Start-up: the commands that start or wrap programs import no numpy, scipy or matplotlib,
and the runtime model imports them only for a fit, with one BLAS thread in its own
interpreter.  Each check runs in a fresh interpreter (this one has them all loaded)."""
from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("numpy", "scipy", "matplotlib")
TIMEOUT = 300  # a guard against hangs, not a speed check

# Prints the heavy modules loaded so far as a JSON list (last line of stdout).
REPORT = f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))"


def python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = "import json, os, sys\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", full], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


def heavy_after(code: str) -> tuple[list[str], subprocess.CompletedProcess]:
    r = python(textwrap.dedent(code) + "\n" + REPORT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1]), r


@pytest.mark.parametrize("argv", [["lib"], ["--version"], ["--help"], ["run", "--help"]])
def test_light_commands_import_nothing_heavy(argv):
    loaded, r = heavy_after(f"""
        from corecast.cli import main
        status = main({argv!r})
        assert status == 0, status
    """)
    assert loaded == [], f"corecast {' '.join(argv)} imported {loaded}"
    assert r.stdout.strip()  # it printed what it is for


def test_run_imports_nothing_heavy_up_to_the_exec(tmp_path):
    # The launcher replaces the process with os.execve: stop there and look.
    loaded, r = heavy_after(f"""
        def stop(path, argv, env):
            print("exec", argv, env["LD_PRELOAD"].endswith("libcorecast_preload.so"))
            {REPORT}
            os._exit(0)
        os.execve = stop
        from corecast.cli import main
        main(["run", "--json-out", {str(tmp_path / "out.jsonl")!r}, "--", "true", "x"])
        print("not reached")
    """)
    assert "exec ['true', 'x'] True" in r.stdout
    assert "not reached" not in r.stdout
    assert loaded == []


# What `corecast run` must not import before the exec (issue #40: every module there is
# paid before the program starts): the model, which only the library's own interpreter
# runs, and the standard modules that cost the launch milliseconds and it has no use for
# (json: nothing to parse without a machine file; pathlib; shutil, which argparse
# imports for the terminal's width).
LAUNCH_UNUSED = ("corecast.runtime.bridge", "corecast.model.runtime", "corecast.model.numa",
                 "corecast.model.curve", "pathlib", "shutil")


@pytest.mark.parametrize("options, unused", [
    ([], LAUNCH_UNUSED + ("json",)),
    (["--target-machine", "opteron6380"], LAUNCH_UNUSED),  # the machine file is JSON, checked here
])
def test_run_imports_no_model_up_to_the_exec(options, unused):
    code = textwrap.dedent(f"""
        import os, sys
        def stop(path, argv, env):
            print(sorted(m for m in sys.modules if m.startswith({unused!r})))
            os._exit(0)
        os.execve = stop
        from corecast.cli import main
        main(["run", *{options!r}, "--", "true"])
        print("not reached")
    """)  # not python(): its json import would be counted
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    loaded = ast.literal_eval(r.stdout.splitlines()[-1])
    assert loaded == [], f"corecast run {' '.join(options)} imported {loaded} before the exec"


def test_version_is_the_package_version():
    r = subprocess.run([sys.executable, "-m", "corecast", "--version"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"corecast {importlib.metadata.version('corecast')}"


def test_help_still_lists_methods_and_metrics():
    # predict's arguments are declared when predict is asked for: its help has them all.
    r = subprocess.run([sys.executable, "-m", "corecast", "predict", "--help"], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert "--method" in r.stdout and "auto" in r.stdout and "--metric" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "corecast", "predict", "x.csv", "--method", "nope"],
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert bad.returncode == 2
    assert bad.stderr.startswith("corecast: error: argument --method: invalid choice: 'nope'")
    assert len(bad.stderr.splitlines()) == 1


def test_runtime_model_imports_nothing_heavy():
    loaded, _ = heavy_after("import corecast.runtime.bridge")
    assert loaded == []


def test_fits_import_scipy_only_when_fitting():
    loaded, _ = heavy_after("import corecast.model.curve.prediction, corecast.model.tuning.tuners")
    assert "scipy" not in {m.split(".")[0] for m in loaded}
    assert "numpy" in loaded


def _threads_and_env(one_thread: bool, env: dict[str, str]) -> dict:
    r = python(f"""
        import ctypes
        from corecast.runtime import blas
        blas.one_thread = {one_thread}
        before = os.environ.get("OPENBLAS_NUM_THREADS")
        blas.load_numeric()
        import scipy.optimize  # as a fit that needs it does, later
        libc = ctypes.CDLL(None)
        libc.getenv.restype = ctypes.c_char_p
        c_value = libc.getenv(b"OPENBLAS_NUM_THREADS")
        print(json.dumps({{"threads": len(os.listdir("/proc/self/task")),
                          "numeric": all(m in sys.modules for m in blas.MODULES),
                          "c_env": c_value.decode() if c_value is not None else None,
                          "os_environ": os.environ.get("OPENBLAS_NUM_THREADS"),
                          "before": before}}))
    """, env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("preset", [None, "3"])
def test_one_blas_thread_and_the_environment_put_back(preset):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                                              "OMP_NUM_THREADS")}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    got = _threads_and_env(True, env)
    assert got["numeric"]
    assert got["threads"] == 1  # numpy's and scipy's OpenBLAS started no pool
    assert got["c_env"] == preset and got["os_environ"] == preset == got["before"]
    if len(os.sched_getaffinity(0)) >= 2 and preset is None:
        # Without the limit OpenBLAS starts threads here: the check above can fail.
        assert _threads_and_env(False, env)["threads"] > 1


def test_target_machine_exit_imports_no_heavy_standard_modules():
    # The exit's node model runs inside the profiled program after its last region:
    # typing, pathlib, tempfile, dataclasses (inspect, ast) cost it 20-30 ms there.
    r = python("""
        import corecast.runtime.bridge
        from corecast.model.runtime.numa import NumaState, predict_region_nodes
        state = NumaState("opteron6380")
        assert state.machine is not None, state.error
        slow = ("typing", "pathlib", "tempfile", "dataclasses", "inspect", "ast", "numpy")
        print(json.dumps(sorted(m for m in slow if m in sys.modules)))
    """)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == []


def test_target_machine_exit_imports_neither_json_nor_re():
    # What the model's own interpreter (no site, as native/model/model_glue.c starts it)
    # does at a --target-machine exit: the bridge, the machine file read, the memory-rate
    # fit and a node answer's JSON.  The json package, with re and enum, cost that exit
    # 35M instructions (issue #40).
    import corecast

    root = os.path.dirname(os.path.dirname(corecast.__file__))
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {root!r})
        from corecast.runtime.bridge import predict_sample
        from corecast.model.machine.numa import path_of
        from corecast.model.runtime.numa import NumaState, fitted_rates, members
        state = NumaState(path_of("opteron6380"))
        assert state.machine is not None, state.error
        rates, _ = fitted_rates([(1, 0.01), (2, 0.006)], state.machine)
        print(members(state.machine, [1.0, 1.5], 2, "basis", [], ["llc"], rates, [], {{"teams": [1, 2]}}, None))
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("json", "re", "enum")))
    """)
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert '"fastest_nodes":2' in r.stdout
    assert ast.literal_eval(r.stdout.splitlines()[-1]) == []
