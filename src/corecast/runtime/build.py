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
/* Why the model cannot start ("" while it can): cffi answers a failed start with zeroes,
 * which read as success, and prints its reason on a stderr the program may have closed. */
static char cc_start_error[200];
static int cc_started; /* set by the init code's last line only */

static void start_failed(const char *what, const char *detail) {
    if (!cc_start_error[0])
        snprintf(cc_start_error, sizeof cc_start_error, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
}

/* The pending Python exception as the reason (GIL held), cleared. */
static void python_failed(const char *what) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *msg = text ? PyUnicode_AsUTF8(text) : NULL;
    char detail[160];
    snprintf(detail, sizeof detail, "%s: %s", type ? ((PyTypeObject *)type)->tp_name : "error", msg ? msg : "?");
    start_failed(what, detail);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* sys.path of our own interpreter, set before cffi imports _cffi_backend: the package
 * root, the site directories the build recorded and the interpreter's own, with the
 * paths their .pth files name (runtime/sitepaths.py). */
static const char cc_path_code[] =
    "import sys\n"
    "sys.path.insert(0, root)\n"
    "from corecast.runtime.sitepaths import model_sys_path\n"
    "sys.path.extend(p for p in model_sys_path(root, [p for p in recorded.split(':') if p])\n"
    "                if p not in sys.path)\n";

static void set_path(const char *root) {
    PyObject *globals = PyDict_New(), *r = NULL;
    PyObject *root_s = PyUnicode_DecodeFSDefault(root), *site_s = PyUnicode_DecodeFSDefault(cc_site);
    if (globals && root_s && site_s && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0
        && PyDict_SetItemString(globals, "root", root_s) == 0 && PyDict_SetItemString(globals, "recorded", site_s) == 0)
        r = PyRun_String(cc_path_code, Py_file_input, globals, globals);
    if (!r)
        python_failed("cannot set the model's module path");
    Py_XDECREF(r);
    Py_XDECREF(root_s);
    Py_XDECREF(site_s);
    Py_XDECREF(globals);
}

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
    PyStatus status = Py_PreInitialize(&pre);
    if (PyStatus_Exception(status))
        return start_failed("its Python could not be pre-initialised", status.err_msg);
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
    status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status))
        return start_failed("its Python could not be initialised", status.err_msg);
    set_path(root);
    PyEval_SaveThread(); /* cffi takes the GIL with PyGILState_Ensure */
}

/* Starts the model (cffi's init code) now; NULL once it runs, else why it cannot. */
const char *corecast_model_start(void) {
    if (cc_start_error[0])
        return cc_start_error;
    if (!Py_IsInitialized()) {
        start_failed("its Python is not running", NULL);
        return cc_start_error;
    }
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *backend = PyImport_ImportModule("_cffi_backend"); /* cffi's first import */
    if (!backend)
        python_failed("cannot import cffi's _cffi_backend");
    Py_XDECREF(backend);
    PyGILState_Release(gil);
    if (!cc_start_error[0] && (cffi_start_python() != 0 || !cc_started))
        start_failed("cffi could not run its init code", NULL);
    return cc_start_error[0] ? cc_start_error : NULL;
}

void corecast_model_started(const char *error) {
    if (error && error[0])
        start_failed(error, NULL);
    else
        cc_started = 1;
}

const char *corecast_model_root(void) { return cc_root; }
int corecast_model_host_python(void) { return cc_host_python; }
void corecast_model_run_final(void) { if (cc_final_cb) cc_final_cb(); }
"""

MODEL_CDEF = """
const char *corecast_model_root(void);
int corecast_model_host_python(void);
void corecast_model_run_final(void);
void corecast_model_started(const char *error);
"""

INIT_CODE = r"""
from _corecast_model import ffi, lib

_predict = None
try:
    # A Python host's sys.path is the host's own (python -S stays -S); our own interpreter's
    # was set before cffi started (corecast_model_configure).
    from corecast.runtime.bridge import predict_sample as _predict
    from corecast.runtime import blas as _blas

    # In a non-Python host numpy and scipy would be the model's alone: one BLAS thread.
    _blas.one_thread = not lib.corecast_model_host_python()
    if lib.corecast_model_host_python():
        import atexit
        # The host's interpreter is finalised before C exit handlers run: report from here.
        atexit.register(lib.corecast_model_run_final)
    lib.corecast_model_started(ffi.NULL)  # the one sign of a start that worked
except Exception as exc:  # said by the library's report, never as a traceback
    lib.corecast_model_started(f"cannot import corecast: {type(exc).__name__}: {exc}".encode()[:180])


@ffi.def_extern(error=1)
def corecast_model_predict(sample, result):
    return _predict(ffi, sample, result)
"""


def c_string(text: str) -> str:
    """``text`` as a C string literal (octal escapes: no quoting rules to get wrong)."""
    safe = set(b"/._-+:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03o}" for b in text.encode()) + '"'


LAUNCHER = NATIVE / "launcher" / "corecast.c"


def build_launcher(dest: Path, python: str) -> Path:
    """The ``corecast`` command (native/launcher/corecast.c): starts ``python``'s CLI with
    SIGINT held over the interpreter's start-up."""
    import subprocess

    dest.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", f"-DCORECAST_PYTHON={c_string(python)}", "-o", str(dest),
           str(LAUNCHER)]
    subprocess.run(cmd, check=True)
    return dest


def recorded_site_dirs() -> list[str]:
    """The site directories of the interpreter running the build: pip builds with the
    target environment's interpreter (its build isolation changes sys.path, not
    sys.prefix), so in an editable install these are where numpy and cffi live."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(paths[k] for k in ("purelib", "platlib") if k in paths))


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


def build_model(outdir: Path, site_dirs: list[str] = ()) -> Path:
    """The model library in ``outdir``; ``site_dirs`` go on its interpreter's path after
    the package root (an editable install's environment: see recorded_site_dirs)."""
    site = ":".join(d for d in site_dirs if ":" not in d)  # ':' separates them
    ffi = cffi.FFI()
    ffi.embedding_api("int corecast_model_predict(struct cc_sample *, struct cc_result *);")
    ffi.cdef(abi_cdef() + MODEL_CDEF)
    ffi.set_source(
        "_corecast_model",
        f"static const char cc_site[] = {c_string(site)};\n" + MODEL_C,
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
