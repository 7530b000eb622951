"""Builds the two native libraries (called from setup.py; also usable by hand):

- ``libcorecast_preload.so``: native/ + shims/, plain C, never links libpython;
- ``libcorecast_model.so``: cffi's embedding API around corecast.runtime.bridge.

    python -m corecast.runtime.build OUTDIR
"""
from __future__ import annotations

import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

import cffi

ROOT = Path(__file__).resolve().parents[3]  # the source tree: native/, shims/
NATIVE = ROOT / "native"
SHIMS = ROOT / "shims"
PRELOAD_NAME = "libcorecast_preload.so"
MODEL_NAME = "libcorecast_model.so"

# C glue of the model library: the preload library hands over the package root, the
# Python home and its exit-report callback before the interpreter starts.
MODEL_C = r"""
#include <Python.h>
#include <string.h>
#include "model_abi.h"

static char cc_root[4096];
static int cc_host_python;
static void (*cc_final_cb)(void);

void corecast_model_configure(const char *root, const char *home, int host_python,
                              void (*final_cb)(void)) {
    strncpy(cc_root, root, sizeof cc_root - 1);
    cc_host_python = host_python;
    cc_final_cb = final_cb;
    if (host_python || Py_IsInitialized())
        return;
    /* The interpreter is started here, and cffi then finds it running (as in a Python
     * host), because its own start would change the program:
     * - LC_CTYPE set from the environment, on the sampler thread while the program runs
     *   (a restore afterwards still races with its reads): configure_locale = 0, and
     *   UTF-8 mode decodes paths the same whatever the locale;
     * - site.main() runs the .pth files of the user's Python, arbitrary code inside the
     *   program (one may print; on this VM one imported ~40 modules, 0.1 s): no site, and
     *   the init code puts the site directories on sys.path itself;
     * - no signal handlers, stdio left as the program set it, the host's PYTHON*
     *   variables ignored (they are not meant for this interpreter), and the home given
     *   (else it is guessed from the host binary). */
    PyPreConfig pre;
    PyPreConfig_InitPythonConfig(&pre);
    pre.configure_locale = 0;
    pre.coerce_c_locale = 0;
    pre.utf8_mode = 1;
    pre.use_environment = 0;
    if (PyStatus_Exception(Py_PreInitialize(&pre)))
        return;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.site_import = 0;
    config.install_signal_handlers = 0;
    config.configure_c_stdio = 0;
    config.use_environment = 0;
    config.parse_argv = 0;
    config.user_site_directory = 0;
    config.pathconfig_warnings = 0;
    if (home && home[0])
        PyConfig_SetBytesString(&config, &config.home, home);
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        return;
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    PyObject *dir = PyUnicode_DecodeFSDefault(root);
    if (path && dir)
        PyList_Insert(path, 0, dir);
    Py_XDECREF(dir);
    PyErr_Clear();
    PyEval_SaveThread(); /* cffi takes the GIL with PyGILState_Ensure */
}

const char *corecast_model_root(void) { return cc_root; }
int corecast_model_host_python(void) { return cc_host_python; }
void corecast_model_run_final(void) { if (cc_final_cb) cc_final_cb(); }
"""

MODEL_CDEF = """
const char *corecast_model_root(void);
int corecast_model_host_python(void);
void corecast_model_run_final(void);
"""

INIT_CODE = r"""
import sys
from _corecast_model import ffi, lib

_root = ffi.string(lib.corecast_model_root()).decode()
if _root and _root not in sys.path:
    sys.path.insert(0, _root)
# Our own interpreter (configure starts it without site): the site directories and the
# paths their .pth files name, none of their code (runtime/sitepaths.py).  A Python host's
# sys.path is the host's own (python -S stays -S).
if sys.flags.no_site and not lib.corecast_model_host_python():
    import site
    from corecast.runtime.sitepaths import site_paths

    # as site.main() orders them: the user's site directory first
    sys.path.extend(p for p in site_paths([site.getusersitepackages()] + site.getsitepackages())
                    if p not in sys.path)
try:
    from corecast.runtime.bridge import predict_sample as _predict
    from corecast.runtime import blas as _blas

    # In a non-Python host numpy and scipy would be the model's alone: one BLAS thread.
    _blas.one_thread = not lib.corecast_model_host_python()
    _error = None
except Exception as exc:  # reported through the result, never as a traceback
    _predict, _error = None, f"cannot import corecast: {exc}"

if lib.corecast_model_host_python():
    import atexit
    # The host's interpreter is finalised before C exit handlers run: report from here.
    atexit.register(lib.corecast_model_run_final)


@ffi.def_extern(error=1)
def corecast_model_predict(sample, result):
    if _predict is None:
        note = _error.encode()[:159] + b"\0"
        ffi.memmove(result.note, note, len(note))
        result.status = 1
        return 1
    return _predict(ffi, sample, result)
"""


def abi_cdef(native: Path = NATIVE) -> str:
    """native/model_abi.h as cdef text: preprocessor lines dropped except integer defines."""
    keep = []
    for line in (native / "model_abi.h").read_text().splitlines():
        if line.startswith("#") and not re.match(r"#define \w+ \d+\s*$", line):
            continue
        keep.append(line)
    return "\n".join(keep)


def python_defines() -> list[tuple[str, str]]:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    soname = sysconfig.get_config_var("INSTSONAME") or ""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        soname = ""
    return [
        ("CC_PY_VERSION", f'"{version}"'),
        ("CC_PY_SONAME", f'"{soname}"'),
        ("CC_PY_HOME", f'"{sys.base_prefix}"'),
    ]


def build_model(outdir: Path) -> Path:
    ffi = cffi.FFI()
    ffi.embedding_api("int corecast_model_predict(struct cc_sample *, struct cc_result *);")
    ffi.cdef(abi_cdef() + MODEL_CDEF)
    ffi.set_source(
        "_corecast_model",
        MODEL_C,
        include_dirs=[str(NATIVE)],
        # Lets a non-Python host find libpython when it lives outside the linker path.
        extra_link_args=[f"-Wl,-rpath,{sysconfig.get_config_var('LIBDIR')}"],
    )
    ffi.embedding_init_code(INIT_CODE)
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        built = ffi.compile(tmpdir=tmp, target=MODEL_NAME, verbose=False)
        dest = outdir / MODEL_NAME
        os.replace(built, dest)
    return dest


def preload_sources() -> list[str]:
    return sorted(str(p) for p in list(NATIVE.glob("*.c")) + list(SHIMS.glob("*.c")))


def preload_macros() -> list[tuple[str, str]]:
    return python_defines()


PRELOAD_CFLAGS = ["-O2", "-fPIC", "-pthread", "-fvisibility=default", "-Wall", "-Wextra",
                  "-Wno-unused-parameter", "-Wno-format-truncation", "-fno-strict-aliasing"]
PRELOAD_LIBS = ["dl", "pthread"]


def build_preload(outdir: Path) -> Path:
    """Plain gcc build of the preload library (setup.py builds the same via setuptools)."""
    import subprocess

    outdir.mkdir(parents=True, exist_ok=True)
    dest = outdir / PRELOAD_NAME
    defs = [f"-D{k}={v}" for k, v in preload_macros()]
    cmd = ["gcc", "-shared", *PRELOAD_CFLAGS, *defs, "-o", str(dest), *preload_sources()]
    cmd += [f"-l{lib}" for lib in PRELOAD_LIBS]
    subprocess.run(cmd, check=True)
    return dest


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    print(build_preload(out))
    print(build_model(out))
