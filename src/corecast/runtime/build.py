"""Builds the native libraries (called from setup.py; also usable by hand):

- ``libcorecast_preload.so``: native/ + shims/, plain C, never links libpython;
- ``libcorecast_model.so``: cffi's embedding API around corecast.runtime.bridge;
- ``libcorecast_calibrate.so``: ``corecast calibrate``'s kernels (native/calibrate/),
  plain C with OpenMP, loaded by ``tools/calibrate.py`` through ctypes;
- ``teardown_order/<soname>.so``: empty libraries that need an OpenMP runtime, which order
  the exit's finalizers (build_teardown_order).

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

from .._native import CALIBRATE_NAME, MODEL_NAME, PRELOAD_NAME

ROOT = Path(__file__).resolve().parents[3]  # the source tree: native/, shims/
NATIVE = ROOT / "native"
SHIMS = ROOT / "shims"
CALIBRATE = NATIVE / "calibrate" / "calibrate.c"

# The model library's C glue and its init code, real files beside the C they call
# (native/model/: not native/*.c, which the preload library compiles).
MODEL_GLUE = NATIVE / "model" / "model_glue.c"
MODEL_INIT = NATIVE / "model" / "model_init.py"

MODEL_CDEF = """
const char *corecast_model_root(void);
const char *corecast_model_start_dir(void);
int corecast_model_host_python(void);
void corecast_model_run_final(void);
void corecast_model_started(const char *error);
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
        f"static const char cc_site[] = {c_string(site)};\n" + MODEL_GLUE.read_text(),
        include_dirs=[str(NATIVE)],
        # Lets a non-Python host find libpython when it lives outside the linker path.
        extra_link_args=[f"-Wl,-rpath,{sysconfig.get_config_var('LIBDIR')}"],
    )
    ffi.embedding_init_code(MODEL_INIT.read_text())  # cffi takes the code as text
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        built = ffi.compile(tmpdir=tmp, target=MODEL_NAME, verbose=False)
        dest = outdir / MODEL_NAME
        os.replace(built, dest)
    return dest


def preload_sources() -> list[str]:
    return sorted(str(p) for p in list(NATIVE.glob("*.c")) + list(SHIMS.glob("*.c")))


# OpenMP runtimes that free their threads' state in their destructor (LLVM's, by both of
# its names, and Intel's): the exit finalizes the model's libraries before them
# (bridge.c's cc_model_finalize_first).  libgomp's destructor frees nothing its threads use.
TEARDOWN_RUNTIMES = ("libomp.so.5", "libomp.so", "libiomp5.so")
TEARDOWN_DIR = "teardown_order"


def preload_macros() -> list[tuple[str, str]]:
    return python_defines() + [("CC_TEARDOWN_RUNTIMES", c_string(" ".join(TEARDOWN_RUNTIMES))),
                               ("CC_TEARDOWN_DIR", c_string(TEARDOWN_DIR))]


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


def build_calibrate(outdir: Path) -> Path:
    """``corecast calibrate``'s kernels: a library rather than a program, so that the
    measurement comes back as numbers (no output to parse) and needs nothing on PATH; with
    libgomp's threads, so that they are placed as an OpenMP program's would be.  -O2
    without -march: the code most programs are built as, on whatever machine runs it."""
    import subprocess

    outdir.mkdir(parents=True, exist_ok=True)
    dest = outdir / CALIBRATE_NAME
    cmd = ["gcc", "-shared", "-O2", "-fPIC", "-fopenmp", "-Wall", "-Wextra", "-o", str(dest), str(CALIBRATE)]
    subprocess.run(cmd, check=True)
    return dest


def build_teardown_order(outdir: Path) -> Path:
    """``outdir``/teardown_order/<soname>.so for each of TEARDOWN_RUNTIMES: an empty library
    whose one need is that runtime.  Loaded last at exit (only where a runtime of that name
    is loaded already), it makes the C library finalize the runtime after everything loaded
    before it.  Built against a stand-in with the runtime's soname: the runtime need not be
    installed here."""
    import subprocess

    dest = outdir / TEARDOWN_DIR
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.c"
        empty.write_text("/* nothing: the library is its one DT_NEEDED */\n")
        for soname in TEARDOWN_RUNTIMES:
            stand_in = Path(tmp) / soname
            base = ["gcc", "-shared", "-fPIC", "-nostdlib"]
            subprocess.run([*base, f"-Wl,-soname,{soname}", "-o", str(stand_in), str(empty)], check=True)
            subprocess.run([*base, "-o", str(dest / f"{soname}.so"), str(empty), "-Wl,--no-as-needed",
                            str(stand_in)], check=True)
    return dest


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    print(build_preload(out))
    print(build_model(out))
    print(build_calibrate(out))
    print(build_teardown_order(out))
