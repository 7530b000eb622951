"""``corecast run`` and ``corecast lib``: start a program with the preload library."""
from __future__ import annotations

import errno
import os
import signal
import stat
import struct

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Mapping, NoReturn, Sequence

from ..io import settings
from .._native import PRELOAD
from ..io.fileio import hostile_symlink
from .autoload import autoload_env

PT_INTERP = 3
ET_EXEC, ET_DYN = 2, 3  # ELF e_type: what the loader starts


class LaunchError(Exception):
    """One-line reason a program cannot be run under corecast; ``status`` is the exit code."""

    def __init__(self, message: str, status: int = 2):
        super().__init__(message)
        self.status = status


def library_path() -> str:
    if not os.path.isfile(PRELOAD):
        raise LaunchError(f"the preload library is missing ({PRELOAD}); reinstall with 'pip install .'")
    return PRELOAD


def why_not_preloadable(path: str) -> str | None:
    """Why LD_PRELOAD cannot reach ``path`` (setuid/setgid or static), else None (also
    for what is no regular file, cannot be read or is no whole ELF executable: exec itself
    then says why it fails, as a shell would)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        return "is setuid/setgid: the loader ignores LD_PRELOAD for it"
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return None  # a script: its interpreter gets preloaded
            is64 = head[4:5] == b"\x02"
            order = "<" if head[5:6] == b"\x01" else ">"
            # A cut-short header or table, or an object file (a .o): no program the
            # loader would start, so nothing to refuse; exec fails with ENOEXEC.
            e_type, = struct.unpack_from(order + "H", head, 16)
            if is64:
                phoff, = struct.unpack_from(order + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 54)
            else:
                phoff, = struct.unpack_from(order + "I", head, 28)
                phentsize, phnum = struct.unpack_from(order + "HH", head, 42)
            if e_type not in (ET_EXEC, ET_DYN) or phentsize < 4 or phnum == 0:
                return None
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error, OverflowError):
        return None
    if len(table) < phentsize * phnum:
        return None
    for i in range(phnum):
        p_type, = struct.unpack_from(order + "I", table, i * phentsize)
        if p_type == PT_INTERP:
            return None
    return "is statically linked: there is no dynamic loader to preload into"


def preload_env(
    env: dict[str, str],
    target: int | None = None,
    window_ms: int | None = None,
    json_out: str | None = None,
    quiet: bool = False,
    steer: bool = False,
    *,
    target_machine: str | None = None,
    probe: bool = False,
) -> dict[str, str]:
    """``env`` with the library appended to LD_PRELOAD and the CORECAST_* settings.

    ``target_machine`` (a machine description file) asks for NUMA predictions: its absolute
    path goes into CORECAST_TARGET_MACHINE and, where this machine's PMU has them, the
    memory-traffic events to count into CORECAST_NUMA_EVENTS (numa_events.plan)."""
    env = dict(env)
    env.pop(settings.IGNORED_SIGNALS, None)  # the corecast command's, never the program's
    env.pop(settings.CALLER_LC_CTYPE, None)
    lib = library_path()
    current = env.get("LD_PRELOAD", "").strip()
    env["LD_PRELOAD"] = f"{current}:{lib}" if current else lib
    autoload_env(env)  # Python programs: pyopencl kernels are measured
    if target is not None:
        env[settings.TARGET] = str(target)
    if window_ms is not None:
        env[settings.WINDOW_MS] = str(window_ms)
    if json_out is not None:
        env[settings.OUTPUT] = os.path.abspath(json_out)
    if quiet:
        env[settings.QUIET] = "1"
    if steer:
        env[settings.STEER] = "1"
    if probe:
        env[settings.PROBE] = "1"
    if target_machine is not None:
        env[settings.TARGET_MACHINE] = os.path.abspath(target_machine)
        from . import numa_events  # ctypes, sysfs: only when NUMA counters are planned

        try:
            events = numa_events.encode(numa_events.plan_for_this_machine())
        except (OSError, ValueError):  # an odd sysfs: no counters rather than no run
            events = ""
        if events:
            env[settings.NUMA_EVENTS] = events
        else:
            env.pop(settings.NUMA_EVENTS, None)  # none inherited from an outer run
    return env


def start_output(path: str, shown: str) -> None:
    """A fresh JSON Lines file per run (the program and its children then append).  A FIFO
    or device is left as it is: opening one to truncate it would wait for a reader."""
    if hostile_symlink(path):
        raise LaunchError(f"{shown}: a symlink in a shared sticky directory owned by someone "
                          "else; not followed")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None  # not there yet: created below
    if mode is not None and stat.S_ISDIR(mode):
        raise LaunchError(f"{shown}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        return  # opening a FIFO's writing end, even briefly, would give its reader EOF
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO made meanwhile: the library handles it
            return
        raise LaunchError(f"{shown}: cannot write: {exc.strerror}") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def stderr_identity() -> str:
    """"DEV:INO" of this process's fd 2, "closed" without one.  A process the program
    starts reports to its own copy of fd 2 only while that is still this file: a program
    that put a data file on fd 2 and then ran another must not find its report there."""
    try:
        st = os.fstat(2)
    except OSError:
        return "closed"
    return f"{st.st_dev}:{st.st_ino}"


# The signals CPython ignores at start-up (SIGXFZ: SIGXFSZ's name on some systems).
PYTHON_IGNORES = ("SIGPIPE", "SIGXFSZ", "SIGXFZ")

_record: frozenset | None = None
_record_taken = False


def caller_ignored() -> frozenset | None:
    """The names of ``PYTHON_IGNORES`` that corecast's caller had ignored, as the corecast
    command (native/launcher/corecast.c) recorded them in ``settings.IGNORED_SIGNALS``
    before Python started; None without that record (``python -m corecast``).  The first
    call takes the record out of the environment: no program corecast starts sees it."""
    global _record, _record_taken
    if not _record_taken:
        value = os.environ.pop(settings.IGNORED_SIGNALS, None)
        _record = None if value is None else frozenset(n for n in value.split(",") if n in PYTHON_IGNORES)
        _record_taken = True
    return _record


# The LC_CTYPE values CPython's locale coercion sets (PEP 538, _TARGET_LOCALES).
COERCED_LC_CTYPES = ("C.UTF-8", "C.utf8", "UTF-8")


def exec_lc_ctype() -> str | None:
    """This process's LC_CTYPE as it was exec'd, in the corecast command's record format
    ("=VALUE", "" for none), read from /proc/self/environ: the strings execve copied in,
    which setenv never writes over.  None where that cannot be read."""
    try:
        with open("/proc/self/environ", "rb") as f:
            entries = f.read().split(b"\0")
    except OSError:
        return None
    for entry in entries:
        if entry.startswith(b"LC_CTYPE="):
            return "=" + os.fsdecode(entry[len(b"LC_CTYPE="):])  # the first, as getenv
    return ""


def restore_caller_locale() -> None:
    """LC_CTYPE in ``os.environ`` put back to the caller's: CPython's locale coercion
    (PEP 538) set LC_CTYPE=C.UTF-8 there under the C or POSIX locale, and a program
    corecast starts must see the caller's (``wc -m`` counted bytes, not characters, with
    it).  corecast's own stdio keeps the encoding it started with.  The caller's is the
    corecast command's record (native/launcher/corecast.c, ``settings.CALLER_LC_CTYPE``,
    which then leaves the environment), else (``python -m corecast``) this process's
    environment at exec, and only over a value coercion sets: anything else in
    LC_CTYPE now was not CPython's doing (a sitecustomize's)."""
    value = os.environ.pop(settings.CALLER_LC_CTYPE, None)
    if value is None:
        if os.environ.get("LC_CTYPE") not in COERCED_LC_CTYPES:
            return
        value = exec_lc_ctype()
        if value is None:
            return
    if value.startswith("="):
        os.environ["LC_CTYPE"] = value[1:]
    else:
        os.environ.pop("LC_CTYPE", None)


def program_signals() -> list:
    """(signal, disposition) for each of ``PYTHON_IGNORES`` here: what a program corecast
    starts must get, since Python ignores them and an ignored signal stays so across exec.
    SIG_IGN where the caller had ignored it, SIG_DFL otherwise; without the corecast
    command's record (``python -m corecast``) the caller's is unknown: SIG_DFL, as
    subprocess's restore_signals gives."""
    ignored = caller_ignored() or frozenset()
    return [(getattr(signal, name), signal.SIG_IGN if name in ignored else signal.SIG_DFL)
            for name in PYTHON_IGNORES if hasattr(signal, name)]


def run(
    command: Sequence[str],
    target: int | None = None,
    window_ms: int | None = None,
    json_out: str | None = None,
    quiet: bool = False,
    steer: bool = False,
    *,
    target_machine: str | None = None,
    probe: bool = False,
) -> NoReturn:
    """Replace this process with ``command`` under the library: the program keeps its
    stdin/stdout, signals and exit status.  SIGPIPE and SIGXFSZ are the caller's where the
    corecast command recorded them, else the default (``program_signals``)."""
    if not command:
        raise LaunchError("no command given (usage: corecast run [options] -- CMD ARGS...)")
    name = command[0]
    exe = find_program(name, os.environ.get("PATH"))
    why = exec_failure(name, exe, unrunnable(exe))  # refused before the JSON file is touched
    if why is not None:
        raise why
    reason = why_not_preloadable(exe)
    if reason:
        raise LaunchError(f"{command[0]} {reason}; corecast cannot measure it")
    env = preload_env(dict(os.environ), target, window_ms, json_out, quiet, steer,
                      target_machine=target_machine, probe=probe)
    if json_out is not None:  # this process becomes the program: same pid
        start_output(settings.output_path(env[settings.OUTPUT], env, os.getpid()), json_out)
    # The program keeps this pid: only it says "serial run", not every serial child it starts.
    env[settings.LAUNCH_PID] = str(os.getpid())
    env[settings.STDERR] = stderr_identity()
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec:
    # the program would get EPIPE instead of dying quietly at the end of a pipe (`| head`),
    # or die of SIGPIPE where its caller had ignored it.  The caller's, where known.
    for sig, disposition in program_signals():
        signal.signal(sig, disposition)
    try:
        os.execve(exe, list(command), env)
    except OSError as exc:
        if exc.errno != errno.ENOEXEC or _looks_binary(exe):
            raise exec_failure(name, exe, exc.errno or errno.EACCES) from None
    # No "#!" line: a shell script, run by /bin/sh as execvp and shells do (sh gets preloaded).
    try:
        os.execve(SHELL, [SHELL, exe, *command[1:]], env)
    except OSError as exc:
        raise LaunchError(f"{name}: cannot execute: {SHELL}: {exc.strerror}", status=EXIT_NOEXEC) from None


# A shell's statuses for a command it cannot run (POSIX; bash: EX_NOTFOUND, EX_NOEXEC).
EXIT_NOTFOUND = 127
EXIT_NOEXEC = 126
SHELL = "/bin/sh"


def find_program(name: str, path: str | None) -> str:
    """The file a shell runs for ``name``: ``name`` itself when it holds a slash, else the
    first executable file of that name in ``path`` (PATH; an empty entry is the current
    folder; unset: ``os.defpath``, as execvp).  Where no executable matches, the first
    match decides as in bash: a file is "Permission denied" (126), a folder or nothing
    at all "command not found" (127)."""
    if "/" in name:
        return name
    first: str | None = None
    for folder in (os.defpath if path is None else path).split(os.pathsep):
        candidate = os.path.join(folder, name) if folder else os.path.join(".", name)
        try:
            mode = os.stat(candidate).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode) and os.access(candidate, os.X_OK):
            return candidate
        if first is None:
            first = candidate
    if first is not None and not os.path.isdir(first):
        raise LaunchError(f"{first}: Permission denied", status=EXIT_NOEXEC)
    raise LaunchError(f"{name}: command not found", status=EXIT_NOTFOUND)


def unrunnable(path: str) -> int | None:
    """The errno execve will give for ``path`` when it can tell without trying (missing,
    a folder, no execute permission), else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.errno or errno.ENOENT
    if stat.S_ISDIR(mode) or not os.access(path, os.X_OK):
        return errno.EACCES
    return None


def _interpreter(path: str) -> str | None:
    """The program named on ``path``'s "#!" line, None without one."""
    try:
        with open(path, "rb") as f:
            head = f.readline(4096)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split()
    return os.fsdecode(words[0]) if words else None


def _looks_binary(path: str) -> bool:
    """bash's test before it hands a file without "#!" to a shell: the ELF magic (bash
    5.1 on), or a NUL byte in its first line (of at most 80 bytes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(80)
    except OSError:
        return False
    return head.startswith(b"\x7fELF") or b"\0" in head.split(b"\n", 1)[0]


def exec_failure(name: str, path: str, err: int | None) -> LaunchError | None:
    """The error a shell reports when exec of ``path`` (typed as ``name``) fails with
    ``err``: 127 when something is missing, 126 otherwise, with bash's reason."""
    if err is None:
        return None
    if err == errno.ENOENT:
        if not os.path.lexists(path):
            return LaunchError(f"{name}: No such file or directory", status=EXIT_NOTFOUND)
        interp = _interpreter(path)  # the file is there: what it names is not
        what = f"{interp}: bad interpreter" if interp else "cannot execute: required file not found"
        return LaunchError(f"{name}: {what}: No such file or directory", status=EXIT_NOTFOUND)
    if err == errno.EACCES and os.path.isdir(path):
        return LaunchError(f"{name}: Is a directory", status=EXIT_NOEXEC)
    if err == errno.EACCES:
        return LaunchError(f"{name}: Permission denied", status=EXIT_NOEXEC)
    if err == errno.ENOEXEC:
        return LaunchError(f"{name}: cannot execute binary file: Exec format error", status=EXIT_NOEXEC)
    return LaunchError(f"{name}: {os.strerror(err)}", status=EXIT_NOEXEC)
