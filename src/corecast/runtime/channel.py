"""The report channel for Python code inside a profiled program: the stderr the program
started with.  A program may close fd 2 and open a data file there (xz, sort --parallel);
corecast's lines must not land in it.  The preload library finds the original stderr at
each write and exports that (``corecast_report_write``); without the library
(``CORECAST_OPENCL=1`` alone, ``python -m corecast.opencl``), ``keep()`` does the same in
Python: the original stderr is known by its identity and found at each write, as
``native/channel.c`` does: the program's fd 2 (or another of 0-9) while it is still that
file, else a copy held by a thread of corecast's in a descriptor table of its own
(``unshare(CLONE_FILES)``), reopened through ``/proc/self/task/TID/fd/N`` for one write,
else the terminal or file it was, reopened by its path.  No descriptor of corecast's is in
the program's table: ``ls /proc/self/fd`` lists what it lists without corecast, and a
daemon the program forks holds nothing of the caller's stderr pipe.  Each write is whole
or none (``io.fileio.past_file_limit``, ``SignalsHeld``).  Standard library and
``io.fileio`` only."""
from __future__ import annotations

import os
import stat

_origin: tuple[int, int, str] | None = None  # keep()'s (st_dev, st_ino, path to reopen or "")
_holder: tuple[int, int] | None = None  # (tid, fd) of the keeper thread's copy
_lib_write = None  # the preload library's corecast_report_write, False when absent

LOW_FDS = 10  # the program's descriptors looked at first, as native/channel.c
PATIENCE_S = 5.0  # a reopened pipe whose reader stalls gets this long, as native/channel.c
CLONE_FILES = 0x400
SYS_CLOSE_RANGE = 436  # the same number on every Linux architecture


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


def own_descriptor_table(copy_stderr: bool = False) -> int | None:
    """The calling thread takes a descriptor table of its own (``unshare(CLONE_FILES)``)
    holding nothing of the program's, as ``native/channel.c``'s threads do: what it opens
    then never takes one of the program's numbers or shows in its ``/proc/self/fd``, and
    its copies of the program's descriptors are closed at once (a pipe's write end kept
    there would keep its reader from its end of file).  ``copy_stderr``: keeps a copy of
    fd 2 (close-on-exec, 100 or above).  Returns that copy's number, -1 without one, or
    None where ``unshare`` is refused (a seccomp filter): the table stays shared."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_FILES) != 0:
            return None
    except (OSError, AttributeError, ImportError):
        return None
    keep = -1
    if copy_stderr:
        import fcntl

        try:
            keep = fcntl.fcntl(2, fcntl.F_DUPFD_CLOEXEC, 100)
        except OSError:
            keep = -1
    # close_range as a system call: the preload library's close wrappers would take this
    # thread's closing of fd 2 for the program letting its stderr go.
    for lo, hi in ((0, keep - 1), (keep + 1, 0xFFFFFFFF)) if keep >= 0 else ((0, 0xFFFFFFFF),):
        if lo <= hi and libc.syscall(SYS_CLOSE_RANGE, ctypes.c_uint(lo), ctypes.c_uint(hi), ctypes.c_uint(0)):
            for name in os.listdir("/proc/thread-self/fd"):  # before Linux 5.9
                if lo <= int(name) <= hi:
                    try:
                        os.close(int(name))
                    except OSError:
                        pass
    return keep


def _keeper(ready, out: list) -> None:
    """The keeper thread: a descriptor table of its own holding only a copy of fd 2, kept
    until the process ends (a thread's table is not inherited by fork)."""
    import threading

    try:
        copy = own_descriptor_table(copy_stderr=True)
        if copy is not None and copy >= 0:  # refused: no copy rather than one in the program's table
            out.append((threading.get_native_id(), copy))
    finally:
        ready.set()
    if out:
        threading.Event().wait()


def keep() -> None:
    """Without the preload library: remember the stderr the program has now, and have a
    thread of corecast's keep a copy of it outside the program's descriptor table."""
    global _origin, _holder
    if _origin is not None or _library_write() is not None:
        return
    try:
        st = os.fstat(2)
    except OSError:
        _origin = (-1, -1, "")  # started without a stderr: no report
        return
    path = ""
    if stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode):
        try:
            path = os.readlink("/proc/self/fd/2")
        except OSError:
            pass
    _origin = (st.st_dev, st.st_ino, path)
    import threading

    ready, out = threading.Event(), []
    threading.Thread(target=_keeper, args=(ready, out), name="corecast-channel", daemon=True).start()
    ready.wait(5)
    _holder = out[0] if out else None


def _is_origin(fd: int) -> bool:
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return _origin is not None and (st.st_dev, st.st_ino) == _origin[:2]


def _open_origin() -> tuple[int | None, bool]:
    """A descriptor that writes to the original stderr, and whether the caller closes it."""
    if _origin is None:
        return 2, False  # neither the library nor keep(): a plain Python program's stderr
    for fd in (2, *range(LOW_FDS)):
        if _is_origin(fd):
            return fd, False
    paths = [f"/proc/self/task/{_holder[0]}/fd/{_holder[1]}"] if _holder else []
    paths += [_origin[2]] if _origin[2] else []
    for path in paths:
        try:  # non-blocking: a pipe without a reader fails at once; appending: a file's lines stay
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        if _is_origin(fd):
            return fd, True
        os.close(fd)
    return None, False


def _write_all(fd: int, data: bytes) -> None:
    """``data`` on ``fd`` whole, or nothing where it would cross the file-size limit, with
    no SIGPIPE or SIGXFSZ of its raising (``io.fileio``'s rules for corecast's writes, as
    ``native/write.c``)."""
    from ..io.fileio import SignalsHeld, past_file_limit

    if past_file_limit(fd, len(data)):
        return
    import time

    with SignalsHeld():
        deadline = None
        while data:
            try:
                data = data[os.write(fd, data):]
            except BlockingIOError:  # a reopened pipe is non-blocking: wait for its reader, a while
                import select

                deadline = deadline or time.monotonic() + PATIENCE_S
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([], [fd], [], left)[1]:
                    break


def write(text: str) -> None:
    """``text`` on the report channel, whole or not at all (never raises; nothing when the
    channel is gone)."""
    data = text.encode(errors="replace")
    lib = _library_write()
    if lib is not None:
        lib(data, len(data))
        return
    fd, temp = _open_origin()
    if fd is None:
        return
    try:
        _write_all(fd, data)
    except OSError:
        pass
    finally:
        if temp:
            os.close(fd)


def warn_setting(message: str) -> None:
    """A bad ``CORECAST_*`` value's warning (io.settings), unless the preload library is in
    this process: it read the same value at start and already warned."""
    if _library_write() is None:
        warn(message)


def warn(message: str) -> None:
    """One ``corecast: warning: ...`` line on the report channel."""
    write("corecast: warning: " + " ".join(message.split()) + "\n")
