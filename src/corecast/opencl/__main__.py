"""``python -m corecast.opencl prog.py ARGS`` (or ``-m module ARGS``): run a pyopencl
program as ``python prog.py ARGS`` would, with its kernels measured and reported at exit.

The program gets ``sys.argv`` = [prog.py, ARGS...] (``prog.py`` as typed, as python keeps
it; ``__file__`` is the absolute path), ``sys.path[0]`` = its folder and
``__name__ == "__main__"``; a folder or zip file holding ``__main__.py`` runs as python
runs one (``sys.path[0]`` the folder or zip file itself); its exit status, output and
tracebacks are its own (the frames of this runner are left out of a traceback).
"""
from __future__ import annotations

import os
import runpy
import signal
import sys
import zipfile

USAGE = "usage: python -m corecast.opencl prog.py [ARGS...]  |  python -m corecast.opencl -m module [ARGS...]"


def _own_frames(tb, first_file: str | None):
    """Skip the traceback entries before the program's own code."""
    start = tb
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if first_file is not None and os.path.abspath(name) == os.path.abspath(first_file):
            return tb
        if first_file is None and tb.tb_frame.f_globals.get("__name__") == "__main__" \
                and not name.startswith("<frozen") and os.path.abspath(name) != os.path.abspath(__file__):
            return tb
        tb = tb.tb_next
    # Not found (the error came before the program ran, e.g. a syntax error): drop the
    # runner's frames, keep the rest.
    tb = start
    here = os.path.dirname(os.path.abspath(__file__))
    while tb is not None and (tb.tb_frame.f_code.co_filename.startswith("<frozen")
                              or os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == here
                              or tb.tb_frame.f_code.co_filename == runpy.__file__):
        tb = tb.tb_next
    return tb


def _run_script(path: str) -> None:
    """``runpy.run_path(path, run_name="__main__")`` of a script file, but for
    ``sys.argv[0]``: run_path sets it to the path it runs, the absolute one here (for
    ``__file__``, as python's own), where ``python prog.py`` keeps it as typed."""
    import io
    import types
    from pkgutil import read_code

    with io.open_code(path) as f:  # a compiled file runs as run_path runs it
        code = read_code(f)
    if code is None:
        with io.open_code(path) as f:
            code = compile(f.read(), path, "exec")
    module = types.ModuleType("__main__")  # run_path's globals: no loader, no spec, package ""
    module.__dict__.update(__file__=path, __cached__=None, __loader__=None, __package__="", __spec__=None)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module  # pickle and multiprocessing find the program's classes
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules["__main__"] = saved


def _run_main_of(path: str) -> None:
    """A folder or zip file holding ``__main__.py``, run as ``python path`` runs it: its
    ``__main__`` found through ``sys.path[0]`` (the caller sets it to the absolute path),
    ``sys.argv[0]`` kept as typed; ``runpy.run_path`` would put the absolute path there.
    The program's globals are a fresh module's, not this runner's."""
    import types
    from importlib.machinery import PathFinder

    if PathFinder.find_spec("__main__", [path]) is None:  # refused as a missing file is, before anything runs
        raise ImportError(f"can't find '__main__' module in {path!r}")
    run = getattr(runpy, "_run_module_as_main", None)  # what python's own start-up calls
    if run is None:
        runpy.run_path(path, run_name="__main__")
        return
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        run("__main__", alter_argv=False)
    finally:
        sys.modules["__main__"] = saved


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    module = None
    if args[0] == "-m":
        if len(args) < 2:
            print("corecast: error: -m needs a module name (" + USAGE + ")", file=sys.stderr)
            return 2
        module, args = args[1], args[1:]
        path = None
    else:
        # __file__ as python makes it: the folder joined to the name as typed, not normalised
        path = os.path.join(os.getcwd(), args[0])
        if not os.path.exists(path):
            print(f"corecast: error: {args[0]}: no such file", file=sys.stderr)
            return 2

    from . import instrument

    instrument()
    sys.argv = args
    runs_main_of = path is not None and (os.path.isdir(path) or zipfile.is_zipfile(path))
    if runs_main_of:  # python puts the folder or zip file itself first
        sys.path[0] = os.path.abspath(path)
    elif path is not None:
        sys.path[0] = os.path.dirname(os.path.abspath(path))
    else:
        sys.path[0] = os.getcwd()
    try:
        if module is not None:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        elif runs_main_of:
            _run_main_of(path)
        else:
            _run_script(path)
    except SystemExit:
        raise
    except BaseException as exc:
        tb = _own_frames(exc.__traceback__, path if path is not None else None)
        if isinstance(exc, ImportError) and tb is None:
            # runpy's own refusal before any of the program ran (a folder without
            # __main__.py, a module not found): one line and Python's status, not a traceback
            print(f"corecast: error: {exc}", file=sys.stderr)
            return 1
        exc.__traceback__ = tb  # the default hook prints the exception's own traceback
        sys.excepthook(type(exc), exc, tb)
        if isinstance(exc, KeyboardInterrupt):  # as Python does: die by SIGINT
            try:
                sys.stdout.flush()
            except Exception:
                pass
            import atexit

            atexit._run_exitfuncs()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
