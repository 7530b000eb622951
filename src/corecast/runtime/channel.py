"""The report channel for Python code inside a profiled program: the stderr the program
started with.  A program may close fd 2 and open a data file there (xz, sort --parallel);
corecast's lines must not land in it.  The preload library finds the original stderr at
each write and exports that (``corecast_report_write``); without the library (``CORECAST_OPENCL=1`` alone), ``keep()`` makes such a
copy when the OpenCL hook switches on.  Standard library only."""
from __future__ import annotations

import os

_own: tuple[int, int, int] | None = None  # (fd, st_dev, st_ino) of keep()'s copy
_lib_write = None  # the preload library's corecast_report_write, False when absent


def _library_write():
    global _lib_write
    if _lib_write is None:
        try:
            import ctypes

            fn = ctypes.CDLL(None).corecast_report_write  # preloaded symbols are global
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            _lib_write = fn
        except (OSError, AttributeError):
            _lib_write = False
    return _lib_write or None


def keep() -> None:
    """Without the preload library: keep a close-on-exec copy of fd 2 as it is now."""
    global _own
    if _own is not None or _library_write() is not None:
        return
    try:
        st = os.fstat(2)
        fd = os.dup(2)  # os.dup makes it non-inheritable (close-on-exec)
    except OSError:
        _own = (-1, 0, 0)
        return
    _own = (fd, st.st_dev, st.st_ino)


def report_fd() -> int | None:
    """Without the preload library: the original stderr, or None when it is gone (closed,
    or its number reused)."""
    if _own is None:
        return 2  # neither the library nor keep(): a plain Python program's stderr
    own, dev, ino = _own
    try:
        st = os.fstat(own)
    except OSError:
        return None
    return own if (st.st_dev, st.st_ino) == (dev, ino) else None


def write(text: str) -> None:
    """``text`` on the report channel (never raises; nothing when the channel is gone)."""
    data = text.encode(errors="replace")
    lib = _library_write()
    if lib is not None:
        lib(data, len(data))
        return
    fd = report_fd()
    if fd is None:
        return
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass


def warn_setting(message: str) -> None:
    """A bad ``CORECAST_*`` value's warning (io.settings), unless the preload library is in
    this process: it read the same value at start and already warned."""
    if _library_write() is None:
        warn(message)


def warn(message: str) -> None:
    """One ``corecast: warning: ...`` line on the report channel."""
    write("corecast: warning: " + " ".join(message.split()) + "\n")
