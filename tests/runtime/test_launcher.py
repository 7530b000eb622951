"""``corecast run`` and ``corecast lib``: what cannot be preloaded is refused with one line
and exit 2, what cannot be run gets a shell's status and reason (127 missing, 126 not
runnable; the exec table compares with bash), and the environment it builds."""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.runtime import launcher

from .helpers import TIMEOUT, clean_env, corecast_run, run

HELLO_C = '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n'


def one_error_line(proc) -> str:
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert proc.stdout == b""
    return lines[0]


@pytest.fixture(scope="module")
def hello(build) -> Path:
    return build("hello", HELLO_C)


@pytest.fixture(scope="module")
def static_hello(gcc, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("static")
    src = folder / "hello.c"
    src.write_text(HELLO_C)
    out = folder / "hello_static"
    r = subprocess.run([gcc, "-static", "-o", str(out), str(src)], capture_output=True, timeout=TIMEOUT)
    if r.returncode != 0:
        pytest.skip("gcc -static does not link here (no static libc)")
    return out


def test_static_binary_is_refused(static_hello, lib):
    assert run([static_hello]).stdout == b"hello\n"
    proc = corecast_run([], [static_hello])
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "statically linked" in line and static_hello.name in line


def test_setuid_binary_is_refused(hello, lib, tmp_path):
    copy = tmp_path / "hello_setuid"
    shutil.copy2(hello, copy)
    os.chmod(copy, os.stat(copy).st_mode | stat.S_ISUID)
    proc = corecast_run([], [copy])
    assert proc.returncode == 2
    assert "setuid" in one_error_line(proc)


def test_setgid_binary_is_refused(hello, lib, tmp_path):
    copy = tmp_path / "hello_setgid"
    shutil.copy2(hello, copy)
    os.chmod(copy, os.stat(copy).st_mode | stat.S_ISGID)
    proc = corecast_run([], [copy])
    assert proc.returncode == 2
    assert "setgid" in one_error_line(proc)


def test_dynamic_binary_runs(hello, lib):
    proc = corecast_run([], [hello])
    assert proc.returncode == 0
    assert proc.stdout == b"hello\n"
    # no threads: one line saying so, from the program corecast run started
    assert proc.stderr.count(b"\n") == 1 and b"serial run: no parallel activity" in proc.stderr


def test_unknown_command_exits_127(lib, tmp_path):
    proc = corecast_run([], [str(tmp_path / "no-such-program"), "arg"])
    assert proc.returncode == 127
    assert "No such file or directory" in one_error_line(proc)  # as bash says for a path
    proc = corecast_run([], ["corecast-no-such-command-anywhere"])
    assert proc.returncode == 127
    one_error_line(proc)


def test_no_command_is_an_error(lib):
    proc = subprocess.run([sys.executable, "-m", "corecast", "run"], capture_output=True,
                          env=clean_env(), timeout=TIMEOUT)
    assert proc.returncode == 2
    one_error_line(proc)


def test_exit_status_passes_through(lib):
    proc = corecast_run([], [sys.executable, "-c", "import sys; print('x'); sys.exit(7)"])
    assert proc.returncode == 7 and proc.stdout == b"x\n"


def test_the_program_does_not_inherit_pythons_ignored_signals(lib):
    # Python ignores SIGPIPE and SIGXFSZ; a program exec'd from it would keep that, and
    # `corecast run -- yes | head -1` would print "Broken pipe" and exit 1 instead of dying.
    cat = shutil.which("cat")
    proc = corecast_run(["--quiet"], [cat, "/proc/self/status"])
    assert proc.returncode == 0
    ignored = int(next(line.split()[1] for line in proc.stdout.decode().splitlines()
                       if line.startswith("SigIgn:")), 16)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        assert not ignored & (1 << (sig - 1)), sig.name


@pytest.mark.parametrize("args, words", [
    (["--target", "99999"], "--target: '99999' must be at most 1024"),
    (["--window-ms", "5"], "--window-ms: '5' must be at least 10"),
])
def test_run_refuses_settings_the_library_would_not_take(lib, args, words):
    proc = corecast_run(args, ["true"])
    assert proc.returncode == 2 and words in one_error_line(proc)


def test_json_out_that_is_a_directory_is_refused(lib, tmp_path):
    proc = corecast_run(["--json-out", str(tmp_path)], ["true"])
    assert proc.returncode == 2 and "is a directory" in one_error_line(proc)


def test_lib_prints_an_existing_path(lib):
    proc = subprocess.run([sys.executable, "-m", "corecast", "lib"], capture_output=True, text=True,
                          env=clean_env(), timeout=TIMEOUT)
    assert proc.returncode == 0
    path = Path(proc.stdout.strip())
    assert proc.stdout.count("\n") == 1
    assert path.is_absolute() and path.is_file()
    assert path == Path(launcher.library_path())
    assert path.name == "libcorecast_preload.so"


def test_preload_env_appends_to_existing_preload(lib):
    env = launcher.preload_env({"LD_PRELOAD": "/opt/other.so", "KEEP": "1"})
    assert env["LD_PRELOAD"] == f"/opt/other.so:{lib}"
    assert env["KEEP"] == "1"
    assert launcher.preload_env({})["LD_PRELOAD"] == str(lib)
    assert launcher.preload_env({"LD_PRELOAD": "  "})["LD_PRELOAD"] == str(lib)


def test_preload_env_settings(lib, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = {"PATH": "/bin"}
    env = launcher.preload_env(base, target=16, window_ms=50, json_out="cc.jsonl", quiet=True)
    assert env["CORECAST_TARGET"] == "16"
    assert env["CORECAST_WINDOW_MS"] == "50"
    assert env["CORECAST_OUTPUT"] == str(tmp_path / "cc.jsonl")
    assert env["CORECAST_QUIET"] == "1"
    assert base == {"PATH": "/bin"}  # the caller's dict is left alone
    plain = launcher.preload_env(base)
    assert not any(k.startswith("CORECAST_") for k in plain)


def test_run_appends_to_the_callers_preload(lib):
    """End to end: the program sees the caller's LD_PRELOAD first, then corecast."""
    script = "import os; print(os.environ['LD_PRELOAD'])"
    proc = corecast_run([], [sys.executable, "-c", script], env=clean_env(LD_PRELOAD="libm.so.6"))
    assert proc.returncode == 0
    assert proc.stdout.decode().strip() == f"libm.so.6:{lib}"


def test_why_not_preloadable(hello, tmp_path):
    assert launcher.why_not_preloadable(str(hello)) is None
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    assert launcher.why_not_preloadable(str(script)) is None  # its interpreter is preloaded


def test_start_output_empties_files_and_link_targets_but_leaves_fifos(tmp_path):
    target = tmp_path / "target.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    launcher.start_output(str(link), "link.jsonl")
    assert link.is_symlink() and target.read_text() == ""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    launcher.start_output(str(fifo), "fifo")  # no reader: opening it would block
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    new = tmp_path / "new.jsonl"
    launcher.start_output(str(new), "new.jsonl")
    assert new.read_text() == ""


# The exec table: each case runs through `bash -c` and `corecast run --`; the statuses must
# match (127 missing, 126 present but not runnable) and corecast's one line names bash's reason.
EXEC_CASES = [
    ("corecast-no-such-command-anywhere", "command not found"),
    ("./missing", "No such file or directory"),
    ("./nox", "Permission denied"),  # no execute permission
    ("./folder", "Is a directory"),
    ("./bad_interp", "bad interpreter"),  # #!/nonexistent/interp
    ("nox_in_path", "Permission denied"),  # the only match in PATH is not executable
    ("./elf_cut", "Exec format error"),  # the ELF magic and nothing whole after it
    ("./elf_magic", "Exec format error"),  # the magic alone: bash does not hand it to sh
    ("./elf_object", "Exec format error"),  # a relocatable object (.o) with execute permission
    ("./no_shebang", None),  # an executable text file: /bin/sh runs it
    ("./good", None),  # #!/bin/sh
    ("sub/../good", None),  # a relative path with a slash: not searched in PATH
    ("found", None),  # found in PATH
    ("here", None),  # found through PATH's empty entry: the current folder
]


@pytest.fixture(scope="module")
def exec_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("exec")
    (root / "sub").mkdir()
    (root / "folder").mkdir()
    (root / "bin").mkdir()
    files = {
        "nox": ("echo nox\n", 0o644),
        "bad_interp": ("#!/nonexistent/interp\necho bad\n", 0o755),
        "no_shebang": ('echo "no shebang $1"\n', 0o755),
        "good": ('#!/bin/sh\necho "good $1"\n', 0o755),
        "bin/found": ('#!/bin/sh\necho "found $1"\n', 0o755),
        "bin/nox_in_path": ("#!/bin/sh\necho nox\n", 0o644),
        "here": ('#!/bin/sh\necho "here $1"\n', 0o755),
    }
    for name, (text, mode) in files.items():
        (root / name).write_text(text)
        os.chmod(root / name, mode)
    # ELF files exec refuses (ENOEXEC): a header cut short, and a 64-bit little-endian
    # ET_REL header (e_type 1) with no program headers, as gcc -c writes.
    elf_object = b"\x7fELF\x02\x01\x01" + bytes(9) + (1).to_bytes(2, "little") + bytes(46)
    for name, data in {"elf_cut": b"\x7fELFgarbage", "elf_magic": b"\x7fELF", "elf_object": elf_object}.items():
        (root / name).write_bytes(data)
        os.chmod(root / name, 0o755)
    return root


@pytest.mark.parametrize("name, reason", EXEC_CASES, ids=[c[0] for c in EXEC_CASES])
def test_exec_statuses_match_bash(lib, exec_folder, name, reason):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash to compare with")
    if os.access(exec_folder / "nox", os.X_OK):
        pytest.skip("this user may execute any file")
    env = clean_env(PATH=f"{exec_folder / 'bin'}::{os.environ.get('PATH', os.defpath)}")
    shell = run([bash, "-c", f"{name} arg"], env=env, cwd=exec_folder)
    proc = corecast_run(["--quiet"], [name, "arg"], env=env, cwd=exec_folder)
    assert proc.returncode == shell.returncode, (proc.stderr, shell.stderr)
    if reason is None:
        assert proc.returncode == 0 and proc.stdout == shell.stdout and proc.stdout.endswith(b" arg\n")
        assert proc.stderr == b""
    else:
        assert proc.returncode == (127 if reason in ("command not found", "No such file or directory",
                                                     "bad interpreter") else 126)
        line = one_error_line(proc)
        assert reason in line and name in line, line


def test_an_executable_text_file_runs_under_the_library(lib, exec_folder, tmp_path):
    # No "#!": /bin/sh runs it, preloaded like any program corecast starts.
    out = tmp_path / "run.jsonl"
    proc = corecast_run(["--json-out", str(out), "--quiet"], ["./no_shebang", "x"], cwd=exec_folder)
    assert proc.returncode == 0 and proc.stdout == b"no shebang x\n"
    assert out.read_text().strip(), "the library wrote nothing: /bin/sh was not preloaded"


@pytest.mark.parametrize("path", ["/", "/nonexistent/x", "/etc/shadow"])
def test_why_not_preloadable_never_raises(path):
    assert launcher.why_not_preloadable(path) is None


@pytest.mark.parametrize("data", [b"\x7fELF", b"\x7fELFgarbage", b"\x7fELF\x02\x01" + bytes(58),
                                  b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x02\x00" + bytes(46)],
                         ids=["magic", "cut", "no-type", "exec-without-headers"])
def test_why_not_preloadable_leaves_broken_elf_files_to_exec(tmp_path, data):
    bad = tmp_path / "bad"
    bad.write_bytes(data)
    bad.chmod(0o755)
    assert launcher.why_not_preloadable(str(bad)) is None
