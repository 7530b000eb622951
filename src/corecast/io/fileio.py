"""Files in and out: the one reader and the one writer every corecast command uses
(see "Files in and out" below).  The measurement tables they read are
``readers.measurements``.

Standard library only at import time: the runtime reads machine files with it inside
profiled programs (numpy is imported where measurements are built).  Kept as one at
over 400 lines: every rule for a file read or written, and for its JSON text, in one place.
"""
from __future__ import annotations

import errno
import math
import os
import stat
import sys

from . import settings
from ..errors import InputError

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Iterable

# ---------------------------------------------------------------- files in and out
#
# Every file corecast's Python side reads goes through ``read_bytes``/``read_text`` and
# every file it writes through ``write_file`` (whole files) or ``append_lines`` (JSON
# Lines), so the rules hold everywhere:
# - ``-`` is standard input or output;
# - a file is opened once (a FIFO works) and read up to a size limit
#   (``CORECAST_MAX_INPUT_MB``, default 64 MiB): ``/dev/zero`` is an error, not a
#   MemoryError;
# - a regular file or a new path is replaced atomically (temporary file in the same
#   folder, then a rename); a symlink's target is replaced and the link stays; FIFOs,
#   character devices and /dev/stdout (/dev/fd/N) are written in place, never replaced
#   or unlinked;
# - every failure is an ``InputError`` (``OutputError`` when writing) whose one line
#   names the file (printably).

DEFAULT_MAX_INPUT_MB = 64
STDIO = "-"
# Paths that name one of this process's open descriptors: written through it (its file
# offset and append mode are the caller's), as a shell redirection would be.
_FD_ALIASES = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_PATH = r"/dev/fd/(\d+)|/proc/(?:self|thread-self|(\d+))/fd/(\d+)"  # compiled where used: see _json_c


class OutputError(InputError):
    """A file corecast cannot write; the one-line message names it."""


def printable(text: str) -> str:
    """``text`` with every character that is not printable (control characters such as
    ESC, bidirectional overrides, undecodable bytes of a file name) written as Python
    writes it in a string literal (``\\x1b``, ``\\u202e``, ``\\udcff``), so that names
    from outside cannot move the cursor or recolour a terminal.  Tables escape each line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def quoted(text: str, most: int = 40) -> str:
    """``text`` as an error message quotes it: repr (non-printables escaped), cut short
    after ``most`` characters (a 5000-digit number)."""
    return repr(text) if len(text) <= most else repr(text[:most]) + "..."


def shown(path: str | os.PathLike) -> str:
    """``path`` as error messages show it."""
    path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    return "standard input" if path == STDIO else printable(path)


def file_key(path: str) -> object | None:
    """What makes two names one file: an existing regular file's device and inode (a link,
    './x', another spelling), else the resolved path; None for standard input or output and
    for what is not a regular file (two outputs to /dev/null are fine, a FIFO is read as often
    as it is named)."""
    if path == STDIO:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def input_limit() -> int:
    """The most bytes one input file may have: ``CORECAST_MAX_INPUT_MB`` MiB (default 64)."""
    try:
        mb = settings.positive(settings.MAX_INPUT_MB)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return math.ceil(mb * (1 << 20))


def too_large(path: str, limit: int) -> InputError:
    """The one line for an input over ``limit`` bytes (``input_limit()``)."""
    return InputError(f"{shown(path)}: larger than the input limit of {limit_text(limit)} "
                      f"(set {settings.MAX_INPUT_MB} to raise it)")


def limit_text(limit: int) -> str:
    """The limit as ``CORECAST_MAX_INPUT_MB`` gave it (1e-9 MiB, not the 9.537e-07 MiB that
    its one byte is), with the bytes where it is under a KiB; a limit that setting did not
    give, in MiB."""
    given = printable(settings.text(settings.MAX_INPUT_MB).strip())
    try:
        from_setting = math.ceil(settings.positive(settings.MAX_INPUT_MB) * (1 << 20)) == limit
    except ValueError:
        from_setting = False
    text = f"{given} MiB" if given and from_setting and len(given) <= 24 else f"{limit / (1 << 20):.4g} MiB"
    return text + (f", {limit} byte{'' if limit == 1 else 's'}" if limit < 1 << 10 else "")


def read_error(path: str, exc: OSError) -> InputError:
    """The one line for an input that ``open`` or ``read`` refused."""
    if isinstance(exc, FileNotFoundError):
        reason = "no such file"
    elif isinstance(exc, IsADirectoryError):
        reason = "is a directory"
    elif isinstance(exc, PermissionError):
        reason = "permission denied"
    else:
        reason = f"cannot read: {exc.strerror or exc}"
    return InputError(f"{shown(path)}: {reason}")


def _read_upto(stream, size: int) -> bytes:
    """At most ``size`` bytes of ``stream``, a MiB at a time: read(size) allocates all of
    ``size`` at once, and the limit may be set far above memory."""
    chunks, total = [], 0
    while total < size:
        chunk = stream.read(min(1 << 20, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def read_bytes(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The contents of ``path`` (``-``: standard input), read once and at most ``limit``
    bytes (default ``input_limit()``); InputError with one line naming the file otherwise."""
    path = os.fspath(path)
    limit = input_limit() if limit is None else limit
    if path == STDIO:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError("standard input: not open")
        try:
            data = _read_upto(stream, limit + 1)
        except OSError as exc:
            raise read_error(path, exc) from None
    else:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    raise too_large(path, limit)  # before reading any of it
                data = _read_upto(f, limit + 1)  # a device or FIFO says its size only by ending
        except OSError as exc:
            raise read_error(path, exc) from None
    if len(data) > limit:
        raise too_large(path, limit)
    return data


def read_tail(path: str | os.PathLike, size: int) -> bytes:
    """The last ``size`` bytes of the regular file ``path`` (the end of a log, whatever
    its length); InputError with one line naming the file otherwise."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISREG(st.st_mode) and st.st_size > size:
                f.seek(st.st_size - size)
            return f.read(size)
    except OSError as exc:
        raise read_error(path, exc) from None


def read_text(path: str | os.PathLike, limit: int | None = None) -> str:
    """``read_bytes`` decoded as UTF-8 (a leading byte-order mark, as spreadsheets write
    it, is dropped); text that is not UTF-8 is an InputError naming the line."""
    raw = read_bytes(path, limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"{shown(path)}: line {line}: not UTF-8 text") from None


def parse_json(text: str, path: str | os.PathLike, what: str = "valid JSON", hint: str = "",
               line: int | None = None) -> object:
    """``text`` (read from ``path``) parsed as one JSON value; otherwise an InputError of
    one line naming the file, the place and "not WHAT", with ``hint`` (what was expected)
    after a second value (e.g. JSON Lines given where one object belongs).  ``line``:
    ``text`` is that line of a JSON Lines file."""
    name = shown(path) if line is None else f"{shown(path)}: line {line}"
    value = _json_c_loads(text)
    if value is not _UNPARSED:
        return value
    import json  # what is wrong, in json's words (and `corecast run` reads no JSON)

    if line is None and not text.strip():  # as the CSV reader says it, not "Expecting value"
        raise InputError(f"{name}: file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        why = _json_error(e, text)
        if line is not None:
            raise InputError(f"{name}: not {what}: {why}") from None
        if e.msg == "Extra data":
            raise InputError(f"{name}: line {e.lineno}: more than one JSON value" + (f"; {hint}" if hint else "")) \
                from None
        raise InputError(f"{name}: line {e.lineno}: column {e.colno}: not {what}: {why}") from None
    except RecursionError:
        raise InputError(f"{name}: not {what}: nested too deeply") from None
    except ValueError as e:  # e.g. an integer with more digits than Python converts
        raise InputError(f"{name}: not {what}: {str(e).split(';')[0]}") from None


CUT_SHORT = "cut short (the text ends inside a JSON value)"


def _json_error(e, text: str) -> str:
    """json's reason, said as a user can act on it: text that ends inside a value (a file
    cut short, a run stopped while writing) says so; json's "Unterminated string starting
    at" (its place follows) reads as a sentence cut off."""
    end = len(text.rstrip(_WHITESPACE))
    if end and (e.msg.startswith("Unterminated string") or e.pos >= end):  # (no text: no value begun)
        return CUT_SHORT
    return e.msg


# The json package imports re, and re enum: 35M instructions (10 ms on the 2-core VM) that
# a --target-machine run paid at its exit, in the model's interpreter, for a machine file
# and the node answers.  The package's own C scanner and encoder need neither; without
# them, or for text that is not one valid JSON value, the package does the work.
_UNPARSED = object()
_WHITESPACE = " \t\n\r"  # JSON's


class _Decoding:
    """What ``_json.make_scanner`` reads of a decoder: ``json.JSONDecoder()``'s defaults."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


def _json_c_loads(text: str) -> object:
    """``json.loads(text)`` through the C scanner alone; ``_UNPARSED`` where it cannot say
    (no C scanner, a byte order mark, text that is not one JSON value)."""
    try:
        from _json import make_scanner
    except ImportError:
        return _UNPARSED
    if not isinstance(text, str) or text.startswith("\ufeff"):
        return _UNPARSED
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = make_scanner(_Decoding())(text, start)
    except (StopIteration, ValueError, RecursionError):
        return _UNPARSED
    return value if not text[end:].strip(_WHITESPACE) else _UNPARSED


def _unserializable(o: object) -> object:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def json_text(value: object) -> str:
    """``json.dumps(value, separators=(",", ":"), allow_nan=False)``, without importing
    the json package where CPython's C encoder is there."""
    try:
        from _json import encode_basestring_ascii, make_encoder

        encode = make_encoder({}, _unserializable, encode_basestring_ascii, None, ":", ",", False, False, False)
    except (ImportError, TypeError):  # another Python, or another signature
        import json

        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    return "".join(encode(value, 0))


def _fd_of(path: str) -> int | None:
    """The descriptor of this process that ``path`` names (/dev/stdout, /dev/fd/N,
    /proc/self/fd/N), directly or through symlinks, or None."""
    for _ in range(40):  # the kernel's limit on symlink hops
        if path in _FD_ALIASES:
            return _FD_ALIASES[path]
        import re

        m = re.fullmatch(_FD_PATH, path)
        if m and (m[2] is None or int(m[2]) == os.getpid()):
            return int(m[1] or m[3])
        try:
            link = os.readlink(path)
        except OSError:  # not a symlink (or not there)
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return None


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (undecodable bytes of a file name or argument)
    become U+FFFD, as UTF-8 cannot hold them."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _flush_std_streams() -> None:
    """Python's buffered standard streams first, so that output keeps its order."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass  # closed or replaced


def write_file(path: str | os.PathLike, data: bytes | str, what: str = "") -> None:
    """Write ``data`` (str: as UTF-8) to ``path``, the one way corecast writes a file.

    A regular file or a new path is replaced atomically: a failure leaves the old file
    (or nothing) there, never half of the new one.  A symlink is followed and its target
    replaced; the link stays.  A FIFO or character device is written in place and ``-``
    (or /dev/stdout, /dev/fd/N) goes to that descriptor.  Block devices, sockets and
    folders are refused.  ``what`` (e.g. "plot") words the error: one line, OutputError."""
    path = os.fspath(path)
    if isinstance(data, str):
        data = _utf8(data)
    where = f"cannot write {what}".rstrip()
    if path == STDIO:
        try:
            stream = getattr(sys.stdout, "buffer", None)
            if stream is None:  # a text-only replacement of sys.stdout
                sys.stdout.write(data.decode("utf-8", errors="replace"))
            else:
                sys.stdout.flush()
                stream.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise  # the reader went away: the CLI stops quietly, as for any other output
        except OSError as exc:
            raise OutputError(f"standard output: {where}: {exc.strerror or exc}") from None
        return
    try:
        fd = _fd_of(path)
        if fd is not None:
            _flush_std_streams()
            _write_all(fd, data)
            return
        real = os.path.realpath(path)  # a symlink: replace its target, keep the link
        try:
            mode = os.stat(real).st_mode
        except FileNotFoundError:
            mode = None
        if mode is None or stat.S_ISREG(mode):
            _replace(real, data, mode)
        elif stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
            with open(real, "wb", buffering=0) as f:  # O_TRUNC is a no-op on these
                _write_all(f.fileno(), data)
        else:
            kinds = {stat.S_IFDIR: "a folder", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}
            raise OutputError(f"{shown(path)}: {where}: {kinds.get(stat.S_IFMT(mode), 'not a regular file')}")
    except OSError as exc:
        raise OutputError(f"{shown(path)}: {where}: {exc.strerror or exc}") from None


def _replace(path: str, data: bytes, mode: int | None) -> None:
    """Write a temporary file next to ``path`` and rename it over ``path``."""
    import tempfile  # writers only: the runtime reads machine files through this module

    fd, tmp = tempfile.mkstemp(prefix=".corecast-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the rename must not land before the data
        if mode is None:
            # mkstemp makes the file private (0600); give it what a plain open() would.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        else:  # a replaced file keeps its permissions
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def hostile_symlink(path: str) -> bool:
    """The fs.protected_symlinks rule, as the preload library applies it to its output: a
    symlink in a world-writable sticky directory (/tmp) owned by neither that directory's
    owner nor us is not followed (someone else's link there may point at any of our files)."""
    try:
        link = os.lstat(path)
        if not stat.S_ISLNK(link.st_mode):
            return False
        parent = os.stat(os.path.dirname(path) or ".")
    except OSError:
        return False
    shared = parent.st_mode & stat.S_ISVTX and parent.st_mode & stat.S_IWOTH
    return bool(shared) and link.st_uid not in (parent.st_uid, os.geteuid())


def past_file_limit(fd: int, n: int) -> bool:
    """Whether ``n`` more bytes on ``fd`` would cross the file-size limit (``ulimit -f``):
    the kernel would write part of them and raise SIGXFSZ.  Only regular files have one.
    corecast's own writes check it first, as ``native/write.c``: a line whole or none."""
    import fcntl
    import resource

    try:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit == resource.RLIM_INFINITY:
            return False
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        at = st.st_size if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND else os.lseek(fd, 0, os.SEEK_CUR)
    except (OSError, ValueError):
        return False
    return at + n > limit


class SignalsHeld:
    """``with SignalsHeld():`` around corecast's own writes, as ``native/write.c``: SIGPIPE
    (a reader that left) and SIGXFSZ (``ulimit -f``) blocked on this thread, and taken back
    if the write raised them, where a program that set their default action back would
    have been killed by corecast's write."""

    def __enter__(self) -> SignalsHeld:
        import signal

        self.quiet = {signal.SIGPIPE, signal.SIGXFSZ}
        self.old = signal.pthread_sigmask(signal.SIG_BLOCK, self.quiet)
        self.before = signal.sigpending()
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for sig in self.quiet - self.before:
            if sig in signal.sigpending():
                signal.sigtimedwait({sig}, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, self.old)


APPEND_PATIENCE_S = 5.0  # a reader that stops reading gets this long for all the lines


def append_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Append ``lines`` (each ending in a newline) to ``path``, creating it; the one way
    corecast appends JSON Lines, with the preload library's rules for its own output
    (this runs at the exit of profiled programs): O_APPEND and one ``write`` per line, so
    that lines of several processes never interleave; a line whole or none at ``ulimit -f``
    and no SIGPIPE or SIGXFSZ of its raising (``SignalsHeld``); a FIFO without a reader is an error
    rather than a wait, and a reader that stops reading gets ``APPEND_PATIENCE_S`` in all;
    a symlink is followed unless ``hostile_symlink``.  Failures are one-line OutputErrors."""
    import select
    import time

    path = os.fspath(path)
    if hostile_symlink(path):
        raise OutputError(f"{shown(path)}: cannot write: a symlink in a shared sticky directory "
                          "owned by someone else; not followed")
    fd = None
    try:
        named = _fd_of(path)
        if named is not None:
            _flush_std_streams()
            fd = os.dup(named)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK, 0o666)
        deadline = time.monotonic() + APPEND_PATIENCE_S
        with SignalsHeld():
            for line in lines:
                view = memoryview(_utf8(line))
                if past_file_limit(fd, len(view)):  # a line whole or none
                    raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
                while view:
                    try:
                        view = view[os.write(fd, view):]
                    except BlockingIOError:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise OutputError(f"{shown(path)}: cannot write: its reader stopped reading") from None
                        select.select([], [fd], [], min(left, 0.2))
    except OSError as exc:
        reason = "no reader on the FIFO" if exc.errno == errno.ENXIO else exc.strerror or exc
        raise OutputError(f"{shown(path)}: cannot write: {reason}") from None
    finally:
        if fd is not None:
            os.close(fd)
