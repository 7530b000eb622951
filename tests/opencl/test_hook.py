"""The instrumentation's plumbing, without OpenCL: the import hook, the autoload
sitecustomize, ``python -m corecast.opencl`` as a runner, the error lines, the shim."""
from __future__ import annotations

import os
import sys

import pytest

from corecast._native import PRELOAD
from corecast.opencl import autoload_dir, autoload_env
from corecast.runtime import launcher

from .helpers import clean_env, measured, plain, run, text

STATE = ("import sys; from corecast.opencl import hook; "
         "print('pyopencl' in sys.modules, any(isinstance(f, hook._Finder) for f in sys.meta_path))")


def with_autoload(**extra: str) -> dict[str, str]:
    env = clean_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (autoload_dir(), env.get("PYTHONPATH")) if p)
    return env


def test_instrument_waits_for_the_program_to_import_pyopencl():
    r = run([sys.executable, "-c", "import corecast.opencl as c; c.instrument(); " + STATE])
    assert r.returncode == 0, text(r.stderr)
    assert r.stdout == b"False True\n"


def test_autoload_acts_only_when_asked():
    on = run([sys.executable, "-c", STATE], env=with_autoload(CORECAST_OPENCL="1"))
    off = run([sys.executable, "-c", STATE], env=with_autoload())
    assert (on.returncode, off.returncode) == (0, 0), text(on.stderr) + text(off.stderr)
    assert on.stdout == b"False True\n"
    assert off.stdout == b"False False\n"
    assert on.stderr == off.stderr == b""


def test_disable_wins():
    r = run([sys.executable, "-c", STATE], env=with_autoload(CORECAST_OPENCL="1", CORECAST_DISABLE="1"))
    assert r.stdout == b"False False\n"


def test_the_preload_library_asks_for_it_unless_told_not_to():
    env = with_autoload(LD_PRELOAD=str(PRELOAD), CORECAST_QUIET="1")
    assert run([sys.executable, "-c", STATE], env=env).stdout == b"False True\n"
    env["CORECAST_OPENCL"] = "0"
    assert run([sys.executable, "-c", STATE], env=env).stdout == b"False False\n"


def test_a_bad_flag_is_one_warning_and_the_default():
    """CORECAST_OPENCL=maybe under the library turned the instrumentation off without a
    word; as every flag, it is one warning and the default (instrumented under the library)."""
    env = with_autoload(LD_PRELOAD=str(PRELOAD), CORECAST_QUIET="1", CORECAST_OPENCL="maybe")
    r = run([sys.executable, "-c", STATE], env=env)
    assert r.returncode == 0 and r.stdout == b"False True\n", text(r.stderr)
    assert text(r.stderr) == ("corecast: warning: CORECAST_OPENCL=maybe is not 0 or 1 (or true or false, "
                              "yes or no, on or off); using the default\n")
    off = run([sys.executable, "-c", STATE], env=with_autoload(CORECAST_OPENCL="2"))
    assert off.stdout == b"False False\n" and text(off.stderr).count("\n") == 1


def test_the_flag_s_words_turn_it_on_and_off_as_every_flag_s():
    """CORECAST_OPENCL reads a flag's words as the library and io.settings do (FLAG_WORDS,
    any case): "yes" turns the instrumentation on without a warning, "OFF" leaves it off."""
    from corecast.io.settings import FLAG_WORDS

    for i, (word, value) in enumerate(sorted(FLAG_WORDS.items())):
        shown = word.upper() if i % 2 else word
        r = run([sys.executable, "-c", STATE], env=with_autoload(CORECAST_OPENCL=shown))
        assert r.returncode == 0 and r.stderr == b"", (shown, text(r.stderr))
        assert r.stdout == (b"False True\n" if value else b"False False\n"), shown


def test_autoload_runs_the_sitecustomize_it_shadows(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("print('chained', __name__)\n")
    env = with_autoload(CORECAST_OPENCL="1")
    env["PYTHONPATH"] += os.pathsep + str(other)
    r = run([sys.executable, "-c", "print('program')"], env=env)
    assert r.returncode == 0, text(r.stderr)
    assert r.stdout == b"chained sitecustomize\nprogram\n"


def test_a_failing_shadowed_sitecustomize_is_reported_as_site_would(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    env = with_autoload(CORECAST_OPENCL="1")
    env["PYTHONPATH"] += os.pathsep + str(other)
    r = run([sys.executable, "-c", "print('program')"], env=env)
    assert r.returncode == 0
    assert r.stdout == b"program\n"
    assert "RuntimeError: broken site" in text(r.stderr)


def test_launcher_puts_the_autoload_first(tmp_path):
    env = launcher.preload_env({"PYTHONPATH": "/opt/mine"})
    assert env["PYTHONPATH"].split(os.pathsep) == [autoload_dir(), "/opt/mine"]
    again = autoload_env(dict(env))  # an inner corecast run does not stack it
    assert again["PYTHONPATH"] == env["PYTHONPATH"]
    assert launcher.preload_env({})["PYTHONPATH"] == autoload_dir()


def test_missing_pyopencl_keeps_the_traceback_and_adds_one_line(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text("import sys\nsys.modules['pyopencl'] = None\nimport pyopencl\n")
    base = plain([prog])
    assert base.returncode == 1 and text(base.stderr).startswith("Traceback")
    r = measured([prog])
    assert (r.returncode, r.stdout) == (1, base.stdout)
    assert r.stderr.startswith(base.stderr), text(r.stderr)
    lines = text(r.stderr[len(base.stderr):]).splitlines()
    assert len(lines) == 1 and lines[0].startswith("corecast: warning: opencl: pyopencl is not installed")


PROG = """
import os, sys
print(sys.argv, __name__, sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
def inner():
    raise KeyError("k")
if sys.argv[1:] == ["raise"]:
    inner()
sys.exit(int(sys.argv[1]) if sys.argv[1:] else 0)
"""


def test_runner_behaves_like_python(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROG)
    for args in ([], ["3"], ["raise"]):
        base = plain([prog, *args], cwd=tmp_path)
        r = measured([prog, *args], cwd=tmp_path)
        assert (r.returncode, r.stdout, r.stderr) == (base.returncode, base.stdout, base.stderr), args


def test_runner_usage_errors(tmp_path):
    r = measured([])
    assert r.returncode == 2 and text(r.stderr).startswith("usage:")
    r = measured([str(tmp_path / "missing.py")])
    assert r.returncode == 2
    assert text(r.stderr).splitlines() == [f"corecast: error: {tmp_path / 'missing.py'}: no such file"]
    r = measured(["--help"])
    assert r.returncode == 0 and text(r.stdout).startswith("usage:")


def test_runner_module_mode(tmp_path):
    (tmp_path / "mymod.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    r = measured(["-m", "mymod", "a", "b"], cwd=tmp_path)
    assert r.returncode == 0, text(r.stderr)
    assert r.stdout == b"__main__ ['a', 'b']\n"


SHIM = ("from corecast.opencl.shim import Shim; s = Shim(); "
        "print(s.available, 'mutex' in s.names, 'condvar' in s.names, s.read({0}) is not None)")


def test_shim_is_read_through_the_preloaded_library():
    r = run([sys.executable, "-c", SHIM], env=clean_env(LD_PRELOAD=str(PRELOAD)))
    assert r.returncode == 0, text(r.stderr)
    assert r.stdout == b"True True True True\n"
    r = run([sys.executable, "-c", SHIM])
    assert r.stdout == b"False False False False\n"


def test_shim_sees_thread_waits_and_marks_its_own_thread():
    code = """
import threading, time
from corecast.opencl.shim import Shim
s = Shim()
lock = threading.Lock()
lock.acquire()
def waiter():
    with lock:
        pass
t = threading.Thread(target=waiter); t.start(); time.sleep(0.05); lock.release(); t.join()
waits, acq, con = s.read({t.native_id})
print(waits[s.names.index('semaphore')] > 0)
"""
    r = run([sys.executable, "-c", code], env=clean_env(LD_PRELOAD=str(PRELOAD), CORECAST_QUIET="1"))
    assert r.returncode == 0, text(r.stderr)
    assert r.stdout == b"True\n"


# sys.path, the modules loaded, and the instrumentation's finder (whoever's module it is).
SHOWS_ITS_PATHS = ("import json, sys; json.dump({'path': sys.path, 'modules': sorted(sys.modules), "
                   "'finders': [type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_Finder']}, "
                   "sys.stdout)")
CORECAST_MISSING = "import importlib.util, sys; sys.exit(importlib.util.find_spec('corecast') is not None)"


def foreign_python() -> str | None:
    """A Python that is not corecast's and cannot import corecast (this venv's base, the
    system's), else None."""
    for candidate in (getattr(sys, "_base_executable", None), "/usr/bin/python3"):
        if not candidate or not os.path.isfile(candidate) or os.path.samefile(candidate, sys.executable):
            continue
        if run([candidate, "-c", CORECAST_MISSING]).returncode == 0:
            return candidate
    return None


def test_a_foreign_python_keeps_its_own_path_and_modules():
    """Under corecast run, another Python than corecast's (its children too) got corecast's
    site-packages appended to sys.path, and corecast in sys.modules: numpy, cffi, corecast
    importable there as they are not without corecast."""
    python = foreign_python()
    if python is None:
        pytest.skip("no Python here besides corecast's that lacks corecast")
    import json

    bare = run([python, "-c", SHOWS_ITS_PATHS])
    ours = run([sys.executable, "-m", "corecast", "run", "--quiet", "--", python, "-c", SHOWS_ITS_PATHS])
    assert bare.returncode == ours.returncode == 0, text(ours.stderr)
    assert ours.stderr == b"", text(ours.stderr)
    bare, ours = json.loads(bare.stdout), json.loads(ours.stdout)
    assert ours["path"] == bare["path"]
    assert ours["finders"] == ["_Finder"] and bare["finders"] == []  # still instrumented
    added = set(ours["modules"]) - set(bare["modules"])
    # The hook's own modules, under a name nobody imports, and standard library ones.
    assert all(m.split(".")[0] in sys.stdlib_module_names or m.startswith("_corecast_private")
               for m in added), sorted(added)
    again = run([sys.executable, "-m", "corecast", "run", "--quiet", "--", python, "-c", CORECAST_MISSING])
    assert again.returncode == 0, "corecast is importable in the foreign Python"
