"""The report channel for Python code inside a profiled program: the stderr the program
started with.  A program may close fd 2 and open a data file there (xz, sort --parallel);
corecast's lines must not land in it.  The preload library finds the original stderr at
each write and exports that (``corecast_report_write``); without the library
(``CORECAST_OPENCL=1`` alone, ``python -m corecast.opencl``), ``keep()`` does the same in
Python: the original stderr is known by its identity and found at each write, as
``native/channel.c`` does: the program's fd 2 (or another of 0-9) while it is still that
file, else a copy held by a thread of corecast's in a descriptor table of its own
(``unshare(CLONE_FILES)``), through which that thread writes for the caller, else the
terminal or file it was, reopened by its path.  No descriptor of corecast's is in the program's table, not even for the time of one write: ``ls /proc/self/fd`` lists what it lists without corecast, and a
daemon the program forks holds nothing of the caller's stderr pipe.  Each write is whole
or none (``io.fileio.past_file_limit``, ``SignalsHeld``).  Standard library and
``io.fileio`` only."""
from __future__ import annotations

import os
import stat

_origin: tuple[int, int, str] | None = None  # keep()'s (st_dev, st_ino, path to reopen or "")
_jobs = None  # the keeper's queue of (bytes, threading.Event) to write through its copy
_keeper_pid = -1  # the process whose keeper that is: a fork's child has none
_lib_write = None  # the preload library's corecast_report_write, False when absent
_stalled = False  # a writer stopped waiting for the keeper (a stalled reader holds its write)

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


def _keeper(ready, out: list, jobs) -> None:
    """The keeper thread: a descriptor table of its own holding only a copy of fd 2, kept
    until the process ends (a thread's table is not inherited by fork).  It writes the
    lines that no descriptor of the program's reaches any more through that copy, as
    native/channel.c's holder does: the copy shares the program's description, so a
    ``2>log`` opened without O_APPEND has its offset moved past the line (a reopened copy
    appended it where the shell's next line went over it), and a socket, which cannot be
    reopened, gets it.  A write that blocks (a stalled reader) blocks here; the writer
    stops waiting after PATIENCE_S."""
    global _stalled
    try:
        copy = own_descriptor_table(copy_stderr=True)
        if copy is not None and copy >= 0:  # refused: no copy rather than one in the program's table
            out.append(copy)
    finally:
        ready.set()
    if not out:
        return
    while True:
        data, done = jobs.get()
        try:
            _write_all(copy, data)
        except OSError:
            pass
        finally:
            _stalled = False
            done.set()


def keep() -> None:
    """Without the preload library: remember the stderr the program has now, and have a
    thread of corecast's keep a copy of it outside the program's descriptor table."""
    global _origin, _jobs, _keeper_pid
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

    import queue

    ready, out, jobs = threading.Event(), [], queue.SimpleQueue()
    threading.Thread(target=_keeper, args=(ready, out, jobs), name="corecast-channel", daemon=True).start()
    ready.wait(5)
    if out:
        _jobs, _keeper_pid = jobs, os.getpid()


def _is_origin(fd: int) -> bool:
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return _origin is not None and (st.st_dev, st.st_ino) == _origin[:2]


def _reopen(paths: list[str]) -> int | None:
    """The first of ``paths`` that opens as the original stderr, in the calling thread's table."""
    for path in paths:
        try:  # non-blocking: a pipe without a reader fails at once; appending: a file's lines stay
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue
        if _is_origin(fd):
            return fd
        os.close(fd)
    return None


def _program_origin() -> int | None:
    """The program's own descriptor of the original stderr, among its low numbers."""
    for fd in (2, *range(LOW_FDS)):
        if _is_origin(fd):
            return fd
    return None


def _by_keeper(data: bytes) -> bool:
    """``data`` written by the keeper thread through its copy; False where this process has
    no keeper (refused, or a fork's child, where the keeper thread does not exist)."""
    if _jobs is None or _keeper_pid != os.getpid():
        return False
    import threading

    global _stalled
    if _stalled:  # stuck in a write a stalled reader holds: not waited for again
        return False
    done = threading.Event()
    _jobs.put((data, done))
    if not done.wait(PATIENCE_S):
        _stalled = True  # the line is still written once the reader reads again
    return True


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
    if _origin is None:
        fd, temp = 2, False  # neither the library nor keep(): a plain Python program's stderr
    else:
        fd, temp = _program_origin(), False
        if fd is None:
            if _by_keeper(data):
                return
            # No keeper: the terminal or file it was, by its path, for this one write.
            fd, temp = _reopen([_origin[2]] if _origin[2] else []), True
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
