"""Installing the pyopencl instrumentation: an import hook, the patch, the error line.

``instrument()`` arranges for pyopencl's kernel launches to be measured: at once when
pyopencl is already imported, otherwise the moment the program imports it (a
``sys.meta_path`` finder wraps pyopencl's loader; it looks at no other import and leaves
``sys.meta_path`` after pyopencl's).  A process that never imports pyopencl pays for a
finder that compares one string per new import, nothing else.

The patch replaces ``pyopencl._cl.enqueue_nd_range_kernel``, which every ``Kernel.__call__``
reaches through pyopencl's generated invoker, and the same name in ``pyopencl``; the rest
(``corecast.opencl.profile``) is imported only then.

An uncaught pyopencl error saying that there is no OpenCL platform or device, or a
missing pyopencl, gets one ``corecast: warning: opencl:`` hint line after the program's
traceback, which stays as a plain run prints it (as does the exit status, Python's 1);
every other exception is the program's own and left alone.

Standard library only, and nothing imported at module level beyond ``os``, ``sys`` and two
constant-or-one-function modules (``settings``, ``warn``):
this module is imported at the start of every Python process ``corecast run`` starts.
"""
from __future__ import annotations

import os
import sys

from ..io import settings
from .warn import warn

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Mapping

    from .profile import Profiler

PRELOAD_NAME = "libcorecast_preload"  # without the flag: instrument under the preload library
TARGET = "pyopencl"

_finder = None
_profiler = None   # corecast.opencl.profile.Profiler once pyopencl is patched
_installed = False
_excepthook = None  # the hook we replaced
_atexit_registered = False

# Messages of pyopencl errors that mean "no OpenCL here" (ICD loader or create_some_context).
NO_DEVICE_SIGNS = ("PLATFORM_NOT_FOUND", "no platforms found", "no devices found",
                   "DEVICE_NOT_FOUND", "clGetPlatformIDs failed",
                   "no CL platforms available")  # pyopencl 2025+: its own RuntimeError


def disabled() -> bool:
    return settings.integer(settings.DISABLE) == 1  # the library (or nobody) warns


class _Loader:
    """Delegates to pyopencl's own loader and patches the module once it has run."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        self._loader.exec_module(module)
        _remove_finder()
        _on_import(module)


class _Finder:
    """``sys.meta_path`` entry that only answers for ``pyopencl``."""

    def __init__(self):
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET or self.busy:
            return None
        self.busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        except Exception:
            return None
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Loader(spec.loader)
        return spec

    def invalidate_caches(self):
        pass


def _remove_finder() -> None:
    global _finder
    if _finder is not None:
        try:
            sys.meta_path.remove(_finder)
        except ValueError:
            pass
    _finder = None


def _on_import(module) -> None:
    """pyopencl has just been imported: patch it (a failure costs one warning)."""
    global _profiler
    if _profiler is not None or not _installed:
        return
    try:
        from .profile import Profiler

        _profiler = Profiler(module)
        _profiler.patch()
        from ..runtime import devicewait

        devicewait.register(_profiler.device_wait)  # the process line: a host waiting on a GPU
    except Exception as exc:  # the program must run on, unmeasured
        _profiler = None
        warn(f"kernels not measured: {type(exc).__name__}: {exc}")


def _no_opencl_hint(exc_type, exc) -> str | None:
    """The hint for an exception that means there is no OpenCL to use, else None.  The
    pyopencl message itself is in the traceback just above it: not repeated."""
    try:
        if issubclass(exc_type, ImportError) and getattr(exc, "name", None) == TARGET:
            return (f"pyopencl is not installed in this Python ({sys.executable}); "
                    "install it with: pip install 'corecast[opencl]'")
        module = getattr(exc_type, "__module__", "") or ""
        if not module.startswith(TARGET):
            return None
        text = " ".join(str(exc).split())
        if not any(sign.lower() in text.lower() for sign in NO_DEVICE_SIGNS):
            return None
        return ("no OpenCL platform or device to run on (the pyopencl error above); install one, "
                "e.g. the distribution's pocl (apt install pocl-opencl-icd, a CPU device)")
    except Exception:
        return None


def _hook(exc_type, exc, tb):
    # The program's traceback first, as a plain run prints it; the hint only adds a line.
    try:
        return (_excepthook or sys.__excepthook__)(exc_type, exc, tb)
    finally:
        hint = _no_opencl_hint(exc_type, exc)
        if hint is not None:
            try:
                sys.stderr.flush()  # the traceback before the hint on a shared stderr
            except Exception:
                pass
            warn(hint)


def _at_exit() -> None:
    p = _profiler
    if p is None or not _installed:
        return
    try:
        kernels = p.finish()
        if p.unmeasured_launches:
            warn(f"{p.unmeasured_launches} kernel launches not measured: out-of-order queues "
                 "without profiling are left as the program made them")
        if kernels:
            from .report import report

            report(p, kernels)
    except Exception as exc:
        warn(f"no report: {type(exc).__name__}: {exc}")


def instrument() -> bool:
    """Measure pyopencl kernel launches in this process and report at exit.

    Returns False when ``CORECAST_DISABLE=1`` says not to, True otherwise (also when it was
    already on)."""
    global _finder, _installed, _excepthook, _atexit_registered
    if disabled():
        return False
    if _installed:
        return True
    _installed = True
    from ..runtime import channel

    channel.keep()  # the report's stderr, before the program can close or reuse fd 2
    if sys.excepthook is not _hook:
        _excepthook = sys.excepthook
        sys.excepthook = _hook
    if not _atexit_registered:
        import atexit

        atexit.register(_at_exit)
        _atexit_registered = True
    module = sys.modules.get(TARGET)
    if module is not None and hasattr(module, "_cl"):
        _on_import(module)
    elif _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
    if _profiler is not None and not _profiler.active:
        _profiler.patch()
    return True


def uninstrument() -> None:
    """Undo ``instrument()``: pyopencl's own functions back, no report at exit (what was
    measured stays readable through ``profiler()``)."""
    global _installed, _excepthook
    _installed = False
    _remove_finder()
    if sys.excepthook is _hook:
        sys.excepthook = _excepthook or sys.__excepthook__
    _excepthook = None
    if _profiler is not None:
        _profiler.unpatch()
        from ..runtime import devicewait

        devicewait.register(None)


def profiler() -> Profiler | None:
    """The running ``Profiler`` (None before pyopencl was imported under instrumentation)."""
    return _profiler


def wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the autoload should instrument a process with this environment:
    ``CORECAST_OPENCL=1`` or ``0`` (or a flag's word, ``settings.FLAG_WORDS``) says so;
    unset, the preload library in ``LD_PRELOAD`` (``corecast run``, ``corecast sweep``) does.
    The words as the sitecustomize reads them: ``yes`` without the library was let through
    there and then read here as unset (not instrumented, without a word)."""
    environ = os.environ if environ is None else environ
    flag = environ.get(settings.OPENCL, "").strip()
    flag = str(settings.FLAG_WORDS.get(flag.lower(), flag))
    if flag in ("0", "1"):  # another value is the default's (the sitecustomize warned)
        return flag == "1"
    return PRELOAD_NAME in environ.get("LD_PRELOAD", "")


def autoload() -> None:
    """Called by the sitecustomize ``corecast run`` puts on PYTHONPATH."""
    if wanted():
        instrument()
