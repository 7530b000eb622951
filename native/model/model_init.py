"""The model library's init code: cffi's ``embedding_init_code``, run inside the
model's interpreter when the library starts (``_corecast_model`` is the library itself).
``runtime/build.py`` reads this file as text; it is no module of the package."""
from _corecast_model import ffi, lib

_predict = None
try:
    # A Python host's sys.path is the host's own (python -S stays -S); our own interpreter's
    # was set before cffi started (corecast_model_configure).
    from corecast.runtime.bridge import predict_sample as _predict
    from corecast.runtime import blas as _blas
    from corecast.runtime import bridge as _bridge
    import os as _os

    # The program may have changed directory by the exit: relative machine files are the start's.
    _bridge.START_DIR = _os.fsdecode(ffi.string(lib.corecast_model_start_dir()))

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
