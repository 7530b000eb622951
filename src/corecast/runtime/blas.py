"""numpy and scipy for the model inside a profiled program, with one BLAS thread each.

The runtime model is standard library only until a fit needs numpy and scipy (a region's
history at several team sizes, at the exit).  Each of them loads its own OpenBLAS, whose
load starts a pool of (cores - 1) threads unless OPENBLAS_NUM_THREADS says otherwise: 30
threads on 16 cores that a C, C++ or Fortran program never asked for, for fits of a few
points that need one.  So in corecast's own interpreter (a non-Python host: the model
library's init code sets ``one_thread``) the OpenBLAS libraries are loaded with
OPENBLAS_NUM_THREADS=1 set just for that moment.

In a Python host the model runs in the program's interpreter and numpy and scipy are the
program's own: it may use them later, with the BLAS threads it would get without
corecast, so they are imported as they are.
"""
from __future__ import annotations

import os
import sys

VAR = "OPENBLAS_NUM_THREADS"  # read by OpenBLAS before GOTO_ and OMP_NUM_THREADS
MODULES = ("numpy", "scipy.optimize")  # what the model's fits import
one_thread = False  # set by the model library's init code when the host is not Python
_loaded = False


def load_numeric() -> None:
    """Import numpy, with scipy's OpenBLAS loaded as well where it must start no threads
    (see the module's text).  scipy.optimize itself is imported by the fits that need it,
    which then find its OpenBLAS loaded: its import is half a second of CPU, and a
    region's history at two team sizes (a steered region's, often) is fitted without it."""
    global _loaded
    if _loaded:
        return
    import importlib  # here: with its warnings, an eighth of the runtime model's import time

    if one_thread:
        _load_blas_single_threaded()
    importlib.import_module("numpy")
    _loaded = True


def _bundled_blas() -> list[str]:
    """The OpenBLAS libraries in the <package>.libs folders of the numpy and scipy wheels
    (auditwheel's layout), for the packages not imported yet; found without importing them."""
    import glob
    import importlib.util

    found = []
    for pkg in ("numpy", "scipy"):
        if pkg in sys.modules:
            continue
        spec = importlib.util.find_spec(pkg)
        for where in (spec.submodule_search_locations or []) if spec else []:
            found += sorted(glob.glob(os.path.join(os.path.dirname(where), f"{pkg}.libs", "*openblas*.so*")))
    return found


def _load_blas_single_threaded() -> None:
    """Load the OpenBLAS libraries with OPENBLAS_NUM_THREADS=1 in the environment.

    os.putenv is setenv(3) on the host's own environment: another of its threads could read
    the variable, or a child it starts could inherit it, while it is set.  So the window is
    as short as it can be: the bundled libraries are dlopen'ed in it (their constructors read
    the variable and start no threads; the later imports find them loaded) and the previous
    state (value or unset, read from the C environment, not os.environ's copy from the
    interpreter's start) is put back at once.  Only where no bundled library is found (a
    distribution's numpy on the system OpenBLAS) do the imports themselves run in the window."""
    import ctypes
    import importlib

    libs = _bundled_blas()
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    previous = libc.getenv(VAR.encode())
    os.putenv(VAR, "1")
    try:
        try:
            for path in libs:
                ctypes.CDLL(path)
        except OSError:
            libs = []
        if not libs:
            for name in MODULES:
                importlib.import_module(name)
    finally:
        if previous is None:
            os.unsetenv(VAR)
        else:
            os.putenv(VAR.encode(), previous)
