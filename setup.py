"""Builds corecast's native parts during `pip install .` (metadata: pyproject.toml).

- corecast/_native/libcorecast_preload.so: native/ + shims/, plain C (never links
  libpython), compiled by setuptools as an extension-shaped shared object;
- corecast/_native/libcorecast_model.so: the model library, made with cffi's embedding API;
- corecast/_native/libcorecast_calibrate.so: `corecast calibrate`'s kernels (native/calibrate/);
- corecast/_native/teardown_order/: empty libraries that order the exit's finalizers;
- the `corecast` command: native/launcher/corecast.c, which starts this interpreter's CLI
  with SIGINT held over its start-up (a console script's Python would turn an early
  Ctrl-C into a traceback).
"""
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from distutils.command.build_scripts import build_scripts  # setuptools provides distutils

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
from corecast.runtime import build  # noqa: E402  (light: no numpy/scipy)

PRELOAD = "corecast._native.libcorecast_preload"


class BuildNative(build_ext):
    def get_ext_filename(self, fullname: str) -> str:
        # Called with the full dotted name and with its last part: a plain .so for both.
        if PRELOAD.endswith(fullname):
            return str(Path(*fullname.split("."))) + ".so"
        return super().get_ext_filename(fullname)

    def get_libraries(self, ext):
        # Plain C: no libpython, whatever the platform's extension default.
        return list(ext.libraries) if ext.name == PRELOAD else super().get_libraries(ext)

    def get_export_symbols(self, ext):
        return [] if ext.name == PRELOAD else super().get_export_symbols(ext)

    def run(self) -> None:
        super().run()
        # An editable install leaves the libraries in the source tree, which names no
        # environment: the model's interpreter is told where this one keeps its packages.
        editable = getattr(self, "editable_mode", False) or self.inplace
        build.build_model(Path(self.get_ext_fullpath(PRELOAD)).parent,
                          build.recorded_site_dirs() if editable else [])
        build.build_calibrate(Path(self.get_ext_fullpath(PRELOAD)).parent)
        build.build_teardown_order(Path(self.get_ext_fullpath(PRELOAD)).parent)


class BuildLauncher(build_scripts):
    def copy_scripts(self):
        # The one script is compiled, not copied: the interpreter running the build is
        # the target environment's (pip's build isolation changes sys.path only).
        out = str(build.build_launcher(Path(self.build_dir) / "corecast", sys.executable))
        return [out], [out]


setup(
    scripts=[str(build.LAUNCHER.relative_to(Path(__file__).resolve().parent))],
    ext_modules=[
        Extension(
            PRELOAD,
            sources=[str(Path(p).relative_to(Path(__file__).resolve().parent)) for p in build.preload_sources()],
            define_macros=build.preload_macros(),
            extra_compile_args=build.PRELOAD_CFLAGS,
            libraries=build.PRELOAD_LIBS,
        )
    ],
    cmdclass={"build_ext": BuildNative, "build_scripts": BuildLauncher},
)
