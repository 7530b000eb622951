"""Where the preload library writes: its report and warnings on the stderr the program
started with (never into a file the program opened on fd 2), JSON Lines that cannot hold
the program (a FIFO nobody reads, a reader that stops), no hostile symlink followed, and
names from outside (a program file named with any bytes) valid in JSON and printable in
the table."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from .helpers import EXAMPLES, TIMEOUT, clean_env, corecast_run, events, read_lines, report_blocks, run

DATA = b"DATA 1234\n"

# Closes stderr and leaves: no data file on fd 2, only the threads the runtime reports.
CLOSE_AND_EXIT_C = r"""
#include <pthread.h>
#include <unistd.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long s;
static void *work(void *a) {
    for (int i = 0; i < 200000; i++) { pthread_mutex_lock(&m); s += i; pthread_mutex_unlock(&m); }
    return a;
}
int main(void) {
    close(2);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""

# Many threads alive at once (a barrier holds them; threads made one after another would
# share one slot): the process line's per-thread list is far longer than a page.
MANY_THREADS_C = r"""
#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all;
static void *work(void *a) {
    pthread_mutex_lock(&m);
    pthread_mutex_unlock(&m);
    pthread_barrier_wait(&all);
    return a;
}
int main(void) {
    pthread_t t[96];
    pthread_barrier_init(&all, 0, 97);
    for (int i = 0; i < 96; i++) pthread_create(&t[i], 0, work, 0);
    pthread_barrier_wait(&all);
    for (int i = 0; i < 96; i++) pthread_join(t[i], 0);
    return 0;
}
"""

OMP_C = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 2000000; i++) s += i * 0.5;
    printf("%.0f\n", s);
    return 0;
}
"""


@pytest.fixture(scope="module")
def closefd2(build):
    return build("closefd2", EXAMPLES / "closefd2.c", "-pthread")


def test_closefd2_data_untouched_under_corecast_run(closefd2, lib, tmp_path):
    plain = run([closefd2, tmp_path / "plain.txt"])
    assert plain.returncode == 0 and (tmp_path / "plain.txt").read_bytes() == DATA
    out = tmp_path / "run.jsonl"
    proc = corecast_run(["--json-out", str(out)], [closefd2, tmp_path / "data.txt"])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data.txt").read_bytes() == DATA
    assert report_blocks(proc.stderr) == 1  # on the stderr the program started with
    assert events(read_lines(out), "summary")


def test_closefd2_data_untouched_with_bare_preload(closefd2, lib, tmp_path):
    proc = run([closefd2, tmp_path / "data.txt"], preload=lib)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data.txt").read_bytes() == DATA
    assert report_blocks(proc.stderr) == 1
    assert b"corecast: own CPU" in proc.stderr


LATE_CLOSE_C = r"""
/* Lets its stderr go after its first team (the sampler holds the copy by then). */
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
static void *work(void *a) { volatile double s = 0; for (int i = 0; i < 3000000; i++) s += i; return a; }
static void team(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
}
int main(int argc, char **argv) {
    team();
    close(2);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644); /* lands on fd 2 */
    team();
    return write(fd, "DATA 1234\n", 10) == 10 ? 0 : 1;
}
"""


@pytest.mark.parametrize("when", ["before threads", "after threads"])
def test_a_program_that_lets_stderr_go_under_a_low_descriptor_limit_gets_its_report(closefd2, build, lib,
                                                                                  tmp_path, when):
    """`ulimit -n 64`: the keeper's or the sampler's copy of the stderr went to number 100 or
    above, which the limit refuses, so there was none and the report was lost."""
    exe = closefd2 if when == "before threads" else build("late_close", LATE_CLOSE_C, "-pthread")
    data = tmp_path / "data.txt"
    proc = subprocess.run(["sh", "-c", 'ulimit -n 64 && exec "$@"', "sh", str(exe), str(data)],
                          env={**clean_env(), "LD_PRELOAD": str(lib)}, capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert data.read_bytes() == DATA
    assert report_blocks(proc.stderr) == 1


DATA_THEN_EXEC_C = r"""
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static void *work(void *a) { return a; }
int main(int argc, char **argv) {
    if (argc > 2) { /* the exec'd child: threads of its own, the data file as its fd 2 */
        pthread_t t;
        pthread_create(&t, 0, work, 0);
        pthread_join(t, 0);
        return 0;
    }
    close(2);
    if (open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 9;
    pid_t p = fork();
    if (p == 0) {
        execl(argv[0], argv[0], argv[1], "child", (char *)0);
        _exit(1);
    }
    int st;
    waitpid(p, &st, 0);
    const char msg[] = "DATA\n";
    return write(2, msg, strlen(msg)) == (ssize_t)strlen(msg) && st == 0 ? 0 : 1;
}
"""


def test_a_program_execd_with_a_data_file_on_fd_2_keeps_its_report_out_of_it(build, lib, tmp_path):
    """`corecast run` names the stderr it started with (CORECAST_STDERR): a program exec'd
    with another file on fd 2 (here its parent's data file) reports nowhere rather than
    into that file.  The JSON Lines still have it."""
    exe = build("data_then_exec", DATA_THEN_EXEC_C, "-pthread")
    out = tmp_path / "run.jsonl"
    proc = corecast_run(["--json-out", str(out)], [exe, tmp_path / "data.txt"])
    assert proc.returncode == 0, proc.stderr
    data = (tmp_path / "data.txt").read_bytes()
    assert data.endswith(b"DATA\n") and b"corecast" not in data
    assert len({d["pid"] for d in events(read_lines(out), "summary")}) == 2


def test_closed_stderr_still_gets_report_and_json(build, lib, tmp_path):
    exe = build("close_and_exit", CLOSE_AND_EXIT_C, "-pthread")
    out = tmp_path / "out.jsonl"
    proc = run([exe], preload=lib, output=out)
    assert proc.returncode == 0
    assert report_blocks(proc.stderr) == 1
    assert events(read_lines(out), "summary")


def test_stderr_closed_from_the_start(build, lib, tmp_path):
    """No stderr at all: no report anywhere, the JSON Lines all the same."""
    exe = build("close_and_exit", CLOSE_AND_EXIT_C, "-pthread")
    out = tmp_path / "out.jsonl"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out))
    proc = subprocess.run(["sh", "-c", f"exec '{exe}' 2>&-"], env=env, capture_output=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0 and proc.stderr == b""
    assert events(read_lines(out), "summary")


@pytest.mark.skipif(shutil.which("xz") is None, reason="xz is not installed")
def test_xz_threads_report_on_stderr(lib, tmp_path):
    """xz closes its stderr before it exits: the report still reaches the original one."""
    words = [f"{i * 2654435761 % 1000003:07d} corecast report channel\n" for i in range(300000)]
    (tmp_path / "big.txt").write_text("".join(words))
    with open(tmp_path / "big.txt.xz", "wb") as sink:
        proc = subprocess.run(["xz", "-1", "-T2", "-c", str(tmp_path / "big.txt")],
                              env=clean_env(LD_PRELOAD=str(lib)), stdout=sink,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert proc.returncode == 0
    assert report_blocks(proc.stderr) == 1, proc.stderr.decode(errors="replace")
    plain = subprocess.run(["xz", "-dc", str(tmp_path / "big.txt.xz")], capture_output=True,
                           timeout=TIMEOUT)
    assert plain.stdout == (tmp_path / "big.txt").read_bytes()


# ---- CORECAST_OUTPUT ---------------------------------------------------------------------
def test_fifo_without_reader_does_not_hold_the_program(closefd2, lib, tmp_path):
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    for proc in (run([closefd2, tmp_path / "a.txt"], preload=lib, output=fifo),
                 corecast_run(["--json-out", str(fifo)], [closefd2, tmp_path / "b.txt"])):
        assert proc.returncode == 0
        text = proc.stderr.decode()
        assert text.count("is a FIFO nobody reads; no JSON Lines") == 1, text
        assert report_blocks(proc.stderr) == 1


def test_fifo_whose_reader_stops_reading(build, lib, tmp_path):
    """A reader that opened the FIFO but reads nothing: the program ends anyway, once a
    bounded wait is over, with one warning."""
    exe = build("many_threads", MANY_THREADS_C, "-pthread")
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(reader, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
        proc = run([exe], preload=lib, output=fifo)
        assert proc.returncode == 0
        assert proc.stderr.decode().count("could not write all JSON Lines") == 1, proc.stderr
        first = os.read(reader, 4096)
        assert first.startswith(b'{"event":')
    finally:
        os.close(reader)


def test_fifo_with_a_reader_gets_every_line(build, lib, tmp_path):
    exe = build("many_threads", MANY_THREADS_C, "-pthread")
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the lines fit in the pipe's buffer
    try:
        proc = run([exe], preload=lib, output=fifo)
        data = b""
        while chunk := os.read(reader, 1 << 16):
            data += chunk
    except BlockingIOError:
        pass
    finally:
        os.close(reader)
    assert proc.returncode == 0 and b"warning" not in proc.stderr
    lines = [json.loads(x) for x in data.decode().splitlines()]
    assert lines[-1]["event"] == "summary"
    (process,) = events(lines, "process")
    assert len(process["per_thread"]) >= 96


@pytest.mark.skipif(os.geteuid() != 0, reason="a symlink owned by another user needs root")
def test_hostile_symlink_in_sticky_directory_is_not_followed(closefd2, lib, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    link = shared / "out.jsonl"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)  # someone else's link, in a directory that is not theirs
    proc = run([closefd2, tmp_path / "a.txt"], preload=lib, output=link)
    assert proc.returncode == 0
    assert proc.stderr.decode().count("not followed, no JSON Lines") == 1
    assert victim.read_bytes() == b"precious\n"
    refused = corecast_run(["--json-out", str(link)], [closefd2, tmp_path / "b.txt"])
    assert refused.returncode == 2 and refused.stderr.decode().count("\n") == 1
    assert b"not followed" in refused.stderr
    assert victim.read_bytes() == b"precious\n"
    own = shared / "mine.jsonl"  # our own link there is followed
    own.symlink_to(tmp_path / "target.jsonl")
    ok = run([closefd2, tmp_path / "c.txt"], preload=lib, output=own)
    assert ok.returncode == 0 and events(read_lines(tmp_path / "target.jsonl"), "summary")


# ---- names from outside ------------------------------------------------------------------
def test_hostile_program_name(build, lib, tmp_path):
    """A program file named with an invalid UTF-8 byte, an escape, DEL and a C1 control
    (NEL, U+0085): every JSON line is valid UTF-8 JSON with its controls escaped (a raw NEL
    is a line break to Python's str.splitlines), the table holds no control byte."""
    exe = build("omp_names", OMP_C, "-fopenmp")
    odd = os.path.join(os.fsencode(tmp_path), b"prog\xff\x1b[31mred\x07\xc2\x85nel\x7f")
    shutil.copy(exe, odd)
    out = tmp_path / "out.jsonl"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out), OMP_NUM_THREADS="2")
    proc = subprocess.run([odd], env=env, capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0
    text = out.read_bytes().decode("utf-8", errors="strict")
    assert "\x85" not in text and "\x7f" not in text and "\\u0085nel\\u007f" in text
    lines = [json.loads(line) for line in text.splitlines()]
    (region,) = events(lines, "region")
    assert region["object"] == "prog\ufffd\x1b[31mred\x07\x85nel\x7f"
    assert events(lines, "process")[0]["object"] == region["object"]
    assert report_blocks(proc.stderr) == 1
    assert not any(b < 0x20 and b != 0x0A or b == 0x7F for b in proc.stderr), proc.stderr
    assert b"\xc2\x85" not in proc.stderr
    assert b"prog?" in proc.stderr  # shown, made printable
    proc.stderr.decode("utf-8", errors="strict")


def test_warning_paths_are_printable(closefd2, lib, tmp_path):
    out = tmp_path / "no\x1bdir" / "out.jsonl"
    proc = run([closefd2, tmp_path / "a.txt"], preload=lib, output=out)
    assert proc.returncode == 0
    assert b"\x1b" not in proc.stderr and b"no?dir" in proc.stderr


# ---- Python reports (the OpenCL table) -----------------------------------------------------
CHANNEL_PY = r"""
import os, sys
from corecast.runtime import channel
channel.keep()                      # what the OpenCL hook does when it switches on
os.close(2)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
assert fd == 2
channel.warn("to the original stderr")
os.write(fd, b"DATA 1234\n")
"""


@pytest.mark.parametrize("preloaded", [False, True])
def test_python_reports_use_the_original_stderr(lib, tmp_path, preloaded):
    env = clean_env(**({"LD_PRELOAD": str(lib)} if preloaded else {}))
    proc = subprocess.run([sys.executable, "-c", CHANNEL_PY, str(tmp_path / "data.txt")], env=env,
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data.txt").read_bytes() == DATA
    assert proc.stderr == b"corecast: warning: to the original stderr\n"


def test_json_out_fifo_read_by_cat(closefd2, lib, tmp_path):
    """``corecast run --json-out FIFO`` with a reader: the launcher does not open the FIFO
    (its reader would see the end of the stream), the program's lines all arrive."""
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        proc = corecast_run(["--json-out", str(fifo)], [closefd2, tmp_path / "a.txt"])
        data, _ = reader.communicate(timeout=TIMEOUT)
    finally:
        reader.kill()
    assert proc.returncode == 0 and b"warning" not in proc.stderr, proc.stderr
    lines = [json.loads(x) for x in data.decode().splitlines()]
    assert lines and lines[-1]["event"] == "summary"


# Without the preload library (`python -m corecast.opencl`, CORECAST_OPENCL=1) the channel
# is Python's: keep() must hold nothing in the program's descriptor table either.
KEEP_FDS_PY = r"""
import os
from corecast.runtime import channel
def fds():
    return sorted(int(n) for n in os.listdir("/proc/self/fd"))
before = fds()
channel.keep()
print(before == fds(), flush=True)
"""


def test_python_keep_holds_no_descriptor_in_the_programs_table():
    proc = subprocess.run([sys.executable, "-c", KEEP_FDS_PY], env=clean_env(), capture_output=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"True\n"


KEEP_DAEMON_PY = r"""
import os, signal, sys
from corecast.runtime import channel
channel.keep()
if os.fork() == 0:  # daemon(3) by hand: a session of its own, /dev/null on 0-2
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    signal.pause()
    os._exit(0)
"""


def test_python_keep_lets_a_daemon_go_without_the_callers_pipe(tmp_path):
    """As `x=$(python -m corecast.opencl ./server)`: the caller's stderr pipe ends when the
    program exits, not when the daemon it forked does (the test kills the daemon)."""
    pidfile = tmp_path / "daemon.pid"
    proc = subprocess.Popen([sys.executable, "-c", KEEP_DAEMON_PY, str(pidfile)], env=clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.communicate(timeout=60)  # the daemon never ends by itself
        held = False
    except subprocess.TimeoutExpired:
        held = True
    finally:
        deadline = time.monotonic() + TIMEOUT
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        proc.kill()
    assert not held, "the daemon held the caller's stderr pipe"
    assert proc.returncode == 0


def test_python_reports_reach_a_stderr_pipe_the_program_closed(tmp_path):
    """The copy outside the program's table still reaches a pipe no descriptor of the
    program holds any more (the pipe cannot be reopened by a path)."""
    script = CHANNEL_PY.replace("os.close(2)", "os.close(2); os.closerange(3, 10)")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "data.txt")], env=clean_env(),
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data.txt").read_bytes() == DATA
    assert proc.stderr == b"corecast: warning: to the original stderr\n"


# A line that no descriptor of the program's reaches is written by the keeper thread
# through its copy, in its own table: reopened on the program's thread, the copy would
# take a number in the program's table for the time of the write.  Nothing is reopened.
KEEPER_WRITES_PY = r"""
import atexit, os, sys, threading
from corecast.runtime import channel
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith("/proc"):
        opened.append(threading.current_thread().name)
sys.addaudithook(hook)
channel.keep()
os.close(2)
os.closerange(3, 10)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
assert fd == 2
channel.warn("from the main thread")
os.write(fd, b"DATA 1234\n")
atexit.register(lambda: channel.warn("at exit"))
print(sorted(set(opened)), flush=True)
"""


def test_python_reports_past_the_programs_table_are_opened_by_the_keeper(tmp_path):
    proc = subprocess.run([sys.executable, "-c", KEEPER_WRITES_PY, str(tmp_path / "data.txt")],
                          env=clean_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "data.txt").read_bytes() == DATA
    assert proc.stderr == b"corecast: warning: from the main thread\ncorecast: warning: at exit\n"
    assert proc.stdout == b"[]\n"


# Python's channel writes a line whole or not at all, as native/write.c: at `ulimit -f`
# where stderr is a file, and never with a signal that would end the program (one that set
# SIGXFSZ's or SIGPIPE's default action back).
LIMIT_PY = r"""
import os, signal, sys
from corecast.runtime import channel
if sys.argv[1] == "default":
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
channel.keep()
os.write(2, b"program 1\n")
channel.warn("a" * 20)  # 40 bytes: the file's 50 fit in the limit
os.write(2, b"program 2\n")
channel.warn("b" * 40)  # 60 bytes: 120 would cross it
print("done", flush=True)
"""
FSIZE_LIMIT = 100


@pytest.mark.parametrize("action", ["ignored", "default"])
def test_python_report_lines_stop_whole_at_the_file_size_limit(tmp_path, action):
    import resource

    err = tmp_path / "err.txt"
    with open(err, "wb") as f:
        proc = subprocess.run([sys.executable, "-c", LIMIT_PY, action], env=clean_env(), stdout=subprocess.PIPE,
                              stderr=f, timeout=TIMEOUT,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                    (FSIZE_LIMIT, FSIZE_LIMIT)))
    assert proc.returncode == 0 and proc.stdout == b"done\n", (proc, err.read_bytes())
    assert err.read_bytes() == b"program 1\ncorecast: warning: " + b"a" * 20 + b"\nprogram 2\n"


PIPE_PY = r"""
import signal
from corecast.runtime import channel
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
channel.keep()
channel.warn("to a pipe nobody reads")
print("done", flush=True)
"""


def test_python_report_line_to_a_pipe_without_reader_leaves_the_status():
    """A program that takes SIGPIPE's default action back, its stderr a pipe whose reader
    left: corecast's line is lost, the program is not killed by it."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([sys.executable, "-c", PIPE_PY], env=clean_env(), stdout=subprocess.PIPE,
                              stderr=w, timeout=TIMEOUT)
    finally:
        os.close(w)
    assert proc.returncode == 0 and proc.stdout == b"done\n"


# A region (the sampler starts and keeps a copy of stderr), then a line on stderr, which
# the program then lets go of with fclose, as programs that close their streams do.
FCLOSE_AFTER_C = r"""
#include <stdio.h>
int main(void) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 1000000; i++) s += i * 0.5;
    fprintf(stderr, "program line\n");
    fclose(stderr);
    printf("%g\n", s);
    return 0;
}
"""


# A region, then the program lets its stderr go through stdio: fclose closes fd 2 inside
# libc, and freopen closes it before it opens the new file there.
STDIO_RELEASE_C = r"""
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 1000000; i++) s += i * 0.5;
    fprintf(stderr, "program line\n");
    if (!strcmp(argv[1], "fclose"))
        fclose(stderr);
    else if (!freopen("/dev/null", "w", stderr))
        return 3;
    printf("%g\n", s);
    return 0;
}
"""


@pytest.mark.parametrize("how", ["fclose", "freopen"])
def test_stderr_let_go_through_stdio_before_the_sampler_ran_still_gets_the_report(build, lib, how):
    """The program no longer waits for the sampler to take its copy of the report channel
    (the sampler's first run came 3-10 ms late on a busy machine).  Here the sampler takes
    its table only once the program let its stderr go (CORECAST_TEST_FAULT=slow_table, a
    starved sampler, deterministically): the fclose or freopen wrapper has a keeper take
    the copy first.  A pipe cannot be reopened by path: without the copy the report is lost."""
    exe = build("stdio_release", STDIO_RELEASE_C, "-fopenmp")
    env = clean_env(LD_PRELOAD=str(lib), OMP_NUM_THREADS="2", CORECAST_TEST_FAULT="slow_table")
    proc = subprocess.run([exe, how], env=env, capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0 and proc.stdout == b"2.5e+11\n", proc
    assert report_blocks(proc.stderr) == 1, proc.stderr[:300]
    assert proc.stderr.startswith(b"program line\ncorecast: pid "), proc.stderr[:300]


@pytest.mark.parametrize("holder", ["keeper", "sampler"])
def test_a_log_the_program_let_go_of_keeps_the_report_beside_later_writes(build, lib, tmp_path, holder):
    """`2>log` opens the log without O_APPEND: the shell's next line goes at the offset the
    program's description reached.  A report appended through a reopened copy (a description
    of its own) was then covered by it ("shell after" over "corecast: pi"); written through
    the copy a thread of ours keeps, it moves that offset as the program's own lines do."""
    exe = (build("close_and_exit", CLOSE_AND_EXIT_C, "-pthread") if holder == "keeper"
           else build("fclose_after", FCLOSE_AFTER_C, "-fopenmp"))
    log = tmp_path / "log"
    env = clean_env(LD_PRELOAD=str(lib), OMP_NUM_THREADS="2")
    proc = subprocess.run(["sh", "-c", f"'{exe}' >/dev/null; echo 'shell after' >&2"], env=env,
                          stderr=log.open("wb"), timeout=TIMEOUT)
    assert proc.returncode == 0
    text = log.read_bytes()
    assert report_blocks(text) == 1, text[:200]
    assert text.startswith(b"program line\ncorecast: pid " if holder == "sampler" else b"corecast: pid ")
    assert text.endswith(b"\nshell after\n")


def test_a_socket_stderr_the_program_let_go_of_still_gets_the_report(build, lib, tmp_path):
    """A socket cannot be reopened through /proc: the report reaches it only through the
    copy a thread of ours keeps (the keeper here: the program closes fd 2 first)."""
    import socket

    exe = build("close_and_exit", CLOSE_AND_EXIT_C, "-pthread")
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.run([exe], env=clean_env(LD_PRELOAD=str(lib)), stderr=theirs.fileno(),
                              stdout=subprocess.DEVNULL, timeout=TIMEOUT)
        theirs.close()
        ours.settimeout(TIMEOUT)
        text = b"".join(iter(lambda: ours.recv(65536), b""))
    assert proc.returncode == 0
    assert report_blocks(text) == 1, text[:200]


# Closes stderr (a keeper takes the copy), then 4 threads write numbered lines through the
# report channel at once, as corecast's Python reports do (corecast_report_write).
CONCURRENT_REPORT_LINES_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#define LINES 300
static int (*report_write)(const char *, size_t);
static pthread_barrier_t start;
static void *work(void *a) {
    long t = (long)a;
    pthread_barrier_wait(&start);
    for (int i = 0; i < LINES; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "line %ld %d\n", t, i);
        report_write(line, (size_t)n);
    }
    return a;
}
int main(void) {
    report_write = (int (*)(const char *, size_t))dlsym(RTLD_DEFAULT, "corecast_report_write");
    if (!report_write)
        return 3;
    close(2);
    pthread_t th[4];
    pthread_barrier_init(&start, 0, 4);
    for (long i = 0; i < 4; i++) pthread_create(&th[i], 0, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(th[i], 0);
    return 0;
}
"""


@pytest.mark.parametrize("stderr_kind", ["log", "socket"])
def test_report_lines_written_at_once_by_several_threads_are_all_kept(build, lib, tmp_path, stderr_kind):
    """Several threads writing through the holder's mailbox at once: a writer that found it
    taken went around it (a reopened description appends at the end, where the holder's
    next write at the shared offset covers it; a socket cannot be reopened: nothing), so
    lines were lost.  Every line must arrive once, and the exit report too."""
    import socket

    exe = build("concurrent_report_lines", CONCURRENT_REPORT_LINES_C, "-pthread", "-ldl")
    env = clean_env(LD_PRELOAD=str(lib))
    if stderr_kind == "log":
        log = tmp_path / "log"
        with log.open("wb") as f:  # as `2>log`: without O_APPEND
            proc = subprocess.run([exe], env=env, stderr=f, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
        text = log.read_bytes()
    else:
        ours, theirs = socket.socketpair()
        with ours, theirs:
            proc = subprocess.Popen([exe], env=env, stderr=theirs.fileno(), stdout=subprocess.DEVNULL)
            theirs.close()
            ours.settimeout(TIMEOUT)
            text = b"".join(iter(lambda: ours.recv(65536), b""))
            proc.wait(timeout=TIMEOUT)
    assert proc.returncode == 0
    lines = [ln for ln in text.split(b"\n") if ln.startswith(b"line ")]
    expected = {f"line {t} {i}".encode() for t in range(4) for i in range(300)}
    assert len(lines) == len(expected) and set(lines) == expected, (len(lines), sorted(expected - set(lines))[:5])
    assert report_blocks(text) == 1, text[-300:]


# Without the library: the program lets its stderr go, then a report line comes.
PY_LET_GO_PY = r"""
import os
from corecast.runtime import channel
channel.keep()
os.close(2)
channel.warn("report")
"""


@pytest.mark.parametrize("stderr_kind", ["log", "socket"])
def test_python_reports_to_a_stderr_the_program_let_go_of_keep_beside_later_writes(tmp_path, stderr_kind):
    """docs/promise.md: without the library the Python channel writes through its keeper
    as native/channel.c's holder does, through the copy itself: a `2>log` opened without
    O_APPEND then has its offset moved past the line (the shell's next line went over the
    line appended through a reopened copy), and a socket, which cannot be reopened, gets it."""
    import socket

    if stderr_kind == "log":
        log = tmp_path / "log"
        cmd = f"'{sys.executable}' -c '{PY_LET_GO_PY}'; echo 'shell after' >&2"
        proc = subprocess.run(["sh", "-c", cmd], env=clean_env(), stderr=log.open("wb"), timeout=TIMEOUT)
        assert proc.returncode == 0
        assert log.read_bytes() == b"corecast: warning: report\nshell after\n"
        return
    ours, theirs = socket.socketpair()
    with ours, theirs:
        proc = subprocess.Popen([sys.executable, "-c", PY_LET_GO_PY], env=clean_env(), stderr=theirs.fileno())
        theirs.close()
        ours.settimeout(TIMEOUT)
        text = b"".join(iter(lambda: ours.recv(65536), b""))
        assert proc.wait(timeout=TIMEOUT) == 0
    assert text == b"corecast: warning: report\n"


# Closes stderr (a keeper takes the copy), then forks by the system call, as programs
# that fork without the C library's fork do (no atfork handler runs in the child): the
# child writes a report line and says how long that took.
RAW_FORK_REPORT_C = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    int (*report_write)(const char *, size_t) =
        (int (*)(const char *, size_t))dlsym(RTLD_DEFAULT, "corecast_report_write");
    if (!report_write)
        return 3;
    close(2);
    pid_t pid = (pid_t)syscall(SYS_fork);
    if (pid == 0) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        report_write("child line\n", 11);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%.3f\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
        fflush(stdout);
        syscall(SYS_exit_group, 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
"""


def test_a_child_forked_by_the_system_call_does_not_wait_for_the_parents_holder(build, lib, tmp_path):
    """A child forked without the C library's fork inherits the mailbox's state but not
    the thread that serves it: its line waited the writer's whole patience (5 s) for a
    holder that does not exist there before it was written another way."""
    exe = build("raw_fork_report", RAW_FORK_REPORT_C, "-ldl")
    log = tmp_path / "log"
    with log.open("wb") as f:
        proc = subprocess.run([exe], env=clean_env(LD_PRELOAD=str(lib)), stderr=f, capture_output=False,
                              stdout=subprocess.PIPE, timeout=TIMEOUT)
    assert proc.returncode == 0
    assert float(proc.stdout) < 2.5, proc.stdout  # 5 s: the patience for a holder that is not there
    assert b"child line\n" in log.read_bytes()


# A program that lets its stderr go (xz: fclose(stderr) before it exits), then says how many
# threads it has and whether its stderr's pipe is still held by anyone but it.
FCLOSE_THEN_COUNT_C = r"""
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    fclose(stderr);
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    printf("threads %d\n", n);
    return 0;
}
"""


def test_disabled_library_keeps_no_copy_of_stderr(build, lib, tmp_path):
    """CORECAST_DISABLE=1: nothing will be reported, so letting stderr go starts no keeper
    thread holding a copy of it (a pipe's reader would wait on it until the process ends)."""
    exe = build("fclose_then_count", FCLOSE_THEN_COUNT_C)
    plain = run([exe])
    disabled = run([exe], env=clean_env(CORECAST_DISABLE="1"), preload=lib)
    assert plain.returncode == disabled.returncode == 0, disabled.stderr
    assert plain.stdout == b"threads 1\n"
    assert disabled.stdout == plain.stdout
