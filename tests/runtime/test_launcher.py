"""``corecast run`` and ``corecast lib``: what cannot be preloaded is refused with one line
and exit 2, unknown commands exit 127, and the environment it builds."""
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
    assert "not found" in one_error_line(proc)
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
    assert path == launcher.library_path()
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
