"""The program's output, descriptors and exit status are its own, whatever corecast's writes
meet: a file-size limit, a full disk, a reader that left, a daemon detaching, a
decimal-comma locale, a program that uses descriptor 1000 or lists its descriptors, a
serial program's exit, _exit's unflushed buffers.  Each
case runs the same program without and with corecast and compares."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import EXAMPLES, TIMEOUT, clean_env, events, read_lines, report_blocks, run, run_bounded

CORECAST = [sys.executable, "-m", "corecast"]


@pytest.fixture(scope="module")
def omp_critical(build):
    return build("omp_critical", EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")


def sh(script: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], env=clean_env(**env), capture_output=True,
                          timeout=TIMEOUT)


def corecast_cmd() -> str:
    return " ".join(f"'{c}'" for c in CORECAST)


# ---- the program's data first: file-size limits and full disks --------------------------------
def test_file_size_limit_keeps_the_programs_output_and_status(omp_critical, lib, tmp_path):
    """`ulimit -f 2` (2 KiB): the JSON Lines (about 3.6 KB) do not fit.  The program's 39
    bytes are written and its status is 0, as without corecast; the JSON is not written in
    part, and a warning says why."""
    script = (f"cd '{tmp_path}'; ulimit -f 2; '{omp_critical}' 100 > plain.txt; echo plain=$?; "
              f"{corecast_cmd()} run --json-out j.jsonl -- '{omp_critical}' 100 > o.txt; echo run=$?")
    proc = sh(script)
    assert b"plain=0" in proc.stdout and b"run=0" in proc.stdout, proc
    assert (tmp_path / "o.txt").read_bytes() == (tmp_path / "plain.txt").read_bytes() != b""
    assert b"File too large" in proc.stderr
    assert not events(read_lines(tmp_path / "j.jsonl"), "summary")  # whole lines only (read_lines checks)


def test_a_file_size_limit_leaves_corecasts_own_bytecode_whole(omp_critical, lib, tmp_path):
    """The model's interpreter compiles a module whose .pyc is missing (an editable install,
    a changed source).  Under `ulimit -f 1` it left a .pyc cut at 1 KiB (CPython does not
    check that write), and every later run of any program said "no predictions: ... cannot
    import corecast: EOFError: marshal data too short".  No bytecode is written under a
    file-size limit.  The module's .pyc is moved aside for the test and put back."""
    import importlib.util

    from corecast.model.runtime import spread

    pyc = Path(importlib.util.cache_from_source(spread.__file__))
    if not os.access(pyc.parent, os.W_OK):
        pytest.skip(f"corecast's bytecode folder is not writable here: {pyc.parent}")
    aside = tmp_path / pyc.name
    if pyc.exists():
        shutil.move(pyc, aside)
    try:
        limited = sh(f"ulimit -f 1; '{omp_critical}' 100", LD_PRELOAD=str(lib))
        assert limited.returncode == 0 and b"cannot import corecast" not in limited.stderr, limited.stderr
        later = run([omp_critical, "100"], preload=lib)
        assert later.returncode == 0 and b"cannot import corecast" not in later.stderr, later.stderr
        assert b"main._omp_fn.0" in later.stderr
    finally:
        if aside.exists():
            os.replace(aside, pyc)


def test_file_size_limit_on_a_stderr_file(omp_critical, lib, tmp_path):
    """The report itself meets the limit (stderr into a file that is already near it)."""
    script = (f"cd '{tmp_path}'; head -c 2040 /dev/zero > err.txt; ulimit -f 2; "
              f"LD_PRELOAD='{lib}' '{omp_critical}' 100 > o.txt 2>>err.txt; echo run=$?")
    proc = sh(script)
    assert b"run=0" in proc.stdout, proc
    assert (tmp_path / "err.txt").read_bytes() == bytes(2040)
    assert (tmp_path / "o.txt").read_bytes().startswith(b"total ")


def test_full_disk_keeps_the_programs_output_and_status(omp_critical, lib, tmp_path):
    """A tmpfs with one page free: the program's output takes it (flushed before anything of
    corecast's is written), the JSON Lines get ENOSPC and a warning."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a private tmpfs")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "tmpfs", str(mnt)], capture_output=True,
                           timeout=TIMEOUT)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode(errors='replace').strip()}")
    # 64 KiB, 60 KiB filled: one 4-KiB page left.  The mount lives in unshare's namespace only.
    script = f"""set -e
mount -t tmpfs -o size=64k tmpfs '{mnt}'
cd '{mnt}'
head -c $((60 * 1024)) /dev/zero > filler
set +e
'{omp_critical}' 100 > plain.txt; echo plain=$?
cp plain.txt '{tmp_path}/plain.txt'; rm plain.txt
{corecast_cmd()} run --json-out j.jsonl -- '{omp_critical}' 100 > o.txt; echo run=$?
cp o.txt '{tmp_path}/o.txt'
"""
    proc = subprocess.run(["unshare", "-m", "bash", "-c", script], env=clean_env(), capture_output=True,
                          timeout=TIMEOUT)
    out = proc.stdout.decode()
    assert "plain=0" in out and "run=0" in out, (out, proc.stderr)
    assert (tmp_path / "o.txt").read_bytes() == (tmp_path / "plain.txt").read_bytes() != b""
    assert b"No space left on device" in proc.stderr, proc.stderr


def test_enospc_on_the_json_lines_warns_and_keeps_the_status(omp_critical, lib, tmp_path):
    """/dev/full: every write of the JSON Lines fails with ENOSPC."""
    proc = run([omp_critical, "100"], preload=lib, output="/dev/full")
    assert proc.returncode == 0 and proc.stdout.startswith(b"total ")
    assert b"No space left on device" in proc.stderr


def test_a_stderr_reader_that_left_does_not_kill_the_program(omp_critical, lib):
    """The report written into a pipe nobody reads: SIGPIPE, whose default would end the
    program with status -13, is taken back."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([str(omp_critical), "100"], env=clean_env(LD_PRELOAD=str(lib)),
                              stdout=subprocess.PIPE, stderr=w, timeout=TIMEOUT)
    finally:
        os.close(w)
    assert proc.returncode == 0 and proc.stdout.startswith(b"total ")


ATEXIT_C = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 2000000; i++) s += i * 0.5;
    printf("program output %.0f\n", s);   /* buffered: stdout is a file */
    return 0;
}
"""


def test_the_programs_buffered_output_comes_before_the_report(build, lib, tmp_path):
    exe = build("buffered_then_exit", ATEXIT_C, "-fopenmp")
    out = tmp_path / "both.txt"
    with open(out, "wb") as f:
        proc = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), stdout=f, stderr=subprocess.STDOUT,
                              timeout=TIMEOUT)
    assert proc.returncode == 0
    text = out.read_text()
    assert text.startswith("program output ") and "corecast: pid " in text


def test_a_file_opened_twice_keeps_the_programs_output(build, lib, tmp_path):
    """`prog >f 2>f` opens f twice, each descriptor with its own offset: the program's stdout
    fills f from its start, and the report, written at stderr's offset 0, wrote over it.
    It goes after what the file holds now."""
    exe = build("buffered_then_exit", ATEXIT_C, "-fopenmp")
    texts = []
    for env in (clean_env(), clean_env(LD_PRELOAD=str(lib))):
        out = tmp_path / "twice.txt"
        with open(out, "wb") as stdout, open(out, "wb") as stderr:
            proc = subprocess.run([str(exe)], env=env, stdout=stdout, stderr=stderr, timeout=TIMEOUT)
        assert proc.returncode == 0
        texts.append(out.read_text())
    plain, measured = texts
    assert plain.startswith("program output ")
    assert measured.startswith(plain) and "corecast: pid " in measured[len(plain):]


CHDIR_C = r"""
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 2000000; i++) s += i * 0.5;
    mkdir("elsewhere", 0755);
    if (chdir("elsewhere") != 0) return 1;
    printf("%.0f\n", s);
    return 0;
}
"""


def test_a_relative_output_is_the_starting_directorys(build, lib, tmp_path):
    """CORECAST_OUTPUT=run.jsonl under a bare LD_PRELOAD landed in whatever directory the
    program had moved to by its exit; it is the one it started in, as `corecast run
    --json-out` makes it."""
    exe = build("chdir_then_exit", CHDIR_C, "-fopenmp")
    proc = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT="run.jsonl",
                                                     CORECAST_QUIET="1"), cwd=tmp_path, capture_output=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert events(read_lines(tmp_path / "run.jsonl"), "summary")
    assert not (tmp_path / "elsewhere" / "run.jsonl").exists()


# ---- daemons --------------------------------------------------------------------------------
DAEMON_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *work(void *a) { volatile double s = 0; for (long i = 0; i < 2000000; i++) s += i; return a; }
int main(int argc, char **argv) {
    if (atoi(argv[2])) { /* parallel activity first: the sampler runs and keeps its copy */
        pthread_t t[2];
        for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
        for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    }
    if (daemon(0, 0) != 0) return 1;
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%d\n", getpid());
    fclose(f);
    for (;;) pause();
}
"""


@pytest.mark.parametrize("threads", [0, 1])
@pytest.mark.parametrize("how", ["run", "preload"])
def test_a_daemon_does_not_hold_the_callers_pipes(build, lib, tmp_path, threads, how):
    """`x=$(corecast run -- ./daemon)` returns when the parent exits, as without corecast:
    the daemon (alive until the test kills it) holds no copy of the caller's stderr."""
    exe = build("daemon", DAEMON_C, "-pthread")
    pidfile = tmp_path / "daemon.pid"
    cmd = [str(exe), str(pidfile), str(threads)]
    if how == "run":
        cmd = [*CORECAST, "run", "--", *cmd]
    env = clean_env(**({"LD_PRELOAD": str(lib)} if how == "preload" else {}))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=60)  # the daemon never ends by itself
    finally:
        deadline = time.monotonic() + TIMEOUT
        while not pidfile.exists() or not pidfile.read_text().endswith("\n"):
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if pidfile.exists() and pidfile.read_text().strip():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        proc.kill()
    assert proc.returncode == 0, err


# ---- the program's descriptors ------------------------------------------------------------
LISTFD_C = r"""
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *work(void *a) { volatile double s = 0; for (long i = 0; i < 3000000; i++) s += i; return a; }
int main(int argc, char **argv) {
    if (!strcmp(argv[1], "close2")) { /* closes its stderr, a data file takes fd 2 */
        close(2);
        if (open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644) != 2) return 9;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int fds[256], n = 0;
    while ((e = readdir(d)) && n < 256)
        if (e->d_name[0] != '.') fds[n++] = atoi(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++) printf("%d\n", fds[i]);
    printf("fd1000 %s\n", fcntl(1000, F_GETFD) < 0 ? "free" : "used");
    return 0;
}
"""


@pytest.mark.parametrize("mode", ["threads", "close2"])
def test_the_descriptor_table_is_the_programs(build, lib, tmp_path, mode):
    """No descriptor of corecast's in the program's table: while the sampler runs, and after
    the program closed its stderr (a keeper thread holds the copy in a table of its own)."""
    exe = build("listfd", LISTFD_C, "-pthread")
    plain = run([exe, mode, tmp_path / "plain.txt"])
    measured = run([exe, mode, tmp_path / "data.txt"], preload=lib)
    assert plain.returncode == measured.returncode == 0, measured.stderr
    assert sorted(measured.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    assert b"fd1000 free" in measured.stdout
    assert report_blocks(measured.stderr) == 1  # and the report still reached the original stderr
    if mode == "close2":
        assert (tmp_path / "data.txt").read_bytes() == b""


def test_a_shell_can_use_descriptor_1000(lib, tmp_path):
    target = tmp_path / "f"
    proc = subprocess.run([*CORECAST, "run", "--", "bash", "-c", f"exec 1000>'{target}'; echo data >&1000"],
                          env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert target.read_bytes() == b"data\n"


def test_ls_proc_self_fd_lists_what_a_plain_run_lists(lib):
    plain = subprocess.run(["ls", "/proc/self/fd"], env=clean_env(), capture_output=True, timeout=TIMEOUT)
    measured = subprocess.run([*CORECAST, "run", "--", "ls", "/proc/self/fd"], env=clean_env(),
                              capture_output=True, timeout=TIMEOUT)
    assert measured.returncode == 0 and measured.stdout == plain.stdout


# ---- signals --------------------------------------------------------------------------------
SIGBLOCK_C = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *work(void *arg) { volatile long x = 0; for (long i = 0; i < 20000000; i++) x += i; return arg; }
int main(int argc, char **argv) {
    int sig = atoi(argv[1]);
    sigset_t all, pending;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL); /* every signal left pending */
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    kill(getpid(), sig); /* sent to the process: a thread that does not block it takes it */
    usleep(20000);
    sigpending(&pending);
    printf("pending %d\n", sigismember(&pending, sig));
    return 0;
}
"""


@pytest.mark.parametrize("sig", [signal.SIGABRT, signal.SIGSEGV, signal.SIGTERM], ids=lambda s: s.name)
def test_a_program_that_blocks_every_signal_keeps_them_pending(build, lib, sig):
    """A signal sent to a program that blocks them all stays pending: the sampler, the one
    thread left that did not block SIGABRT and the faults (kept for the exit guard), took a
    `kill -ABRT` or `kill -SEGV` and ended the program (status 134, 139)."""
    exe = build("sigblock", SIGBLOCK_C, "-pthread")
    plain = run([exe, int(sig)])
    measured = run([exe, int(sig)], preload=lib)
    assert plain.returncode == measured.returncode == 0, measured.stderr
    assert measured.stdout == plain.stdout == b"pending 1\n"


# ---- resource limits --------------------------------------------------------------------------
VMPEAK_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void *work(void *arg) { volatile long x = 0; for (long i = 0; i < 20000000; i++) x += i; return arg; }
int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    usleep(400000); /* the sampler's windows */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmPeak:", 7)) fputs(line, stdout);
    return 0;
}
"""


def test_the_sampler_leaves_the_address_space_to_the_program(build, lib, tmp_path):
    """Under `ulimit -v` the address space is the program's to allocate.  The sampler's
    thread took a malloc arena of its own (opendir, each window: 64 MB reserved, 128 MB at
    its peak) and the default stack (8 MB): VmPeak was 152 MB above a plain run's, and a
    program under `ulimit -v 170000` could allocate 60 MB instead of 140 MB.  Then 14 MB was
    left: the static tables (13 MB) and a 1 MB stack.  The tables are mapped as used now
    (native/lazy.c): 1.7 MB above a plain run's peak of 18868 kB (VmPeak, this program), the
    library's code and small tables, the sampler's stack and its records."""
    exe = build("vmpeak", VMPEAK_C, "-pthread")

    def peak(proc: subprocess.CompletedProcess) -> int:  # kB
        return int(proc.stdout.split()[1])

    plain = run([exe])
    out = tmp_path / "cc.jsonl"
    measured = run([exe], preload=lib, output=out, quiet="1", window_ms="20")
    assert plain.returncode == measured.returncode == 0, measured.stderr
    (summary,) = events(read_lines(out), "summary")
    assert summary["sampler"]["windows"] >= 1  # the sampler did read the task list
    assert peak(measured) - peak(plain) < 4 * 1024, (peak(plain), peak(measured))


# ---- locales ----------------------------------------------------------------------------------
LOCALE_C = r"""
#include <locale.h>
#include <stdio.h>
int main(void) {
    setlocale(LC_ALL, "");
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 3000000; i++) s += i * 0.5;
    printf("%.1f\n", 0.5);   /* "0,5" in a decimal-comma locale: the locale is in force */
    return s < 0;
}
"""

LOCALE_PY = r"""
import locale, sys, threading
locale.setlocale(locale.LC_ALL, "")
def work():
    s = 0
    for i in range(300000):
        s += i
t = [threading.Thread(target=work) for _ in range(2)]
for x in t: x.start()
for x in t: x.join()
print(locale.format_string("%.1f", 0.5))
"""


@pytest.fixture(scope="module")
def locales(tmp_path_factory):
    """de_DE.UTF-8 and tr_TR.UTF-8 compiled into a private LOCPATH (no system change)."""
    if shutil.which("localedef") is None:
        pytest.skip("localedef is not installed")
    folder = tmp_path_factory.mktemp("locales")
    for name in ("de_DE", "tr_TR"):
        r = subprocess.run(["localedef", "-i", name, "-f", "UTF-8", str(folder / f"{name}.UTF-8")],
                           capture_output=True, timeout=TIMEOUT)
        if not (folder / f"{name}.UTF-8").is_dir():
            pytest.skip(f"localedef cannot build {name}.UTF-8: {r.stderr.decode(errors='replace')[:200]}")
    return folder


@pytest.mark.parametrize("name", ["de_DE.UTF-8", "tr_TR.UTF-8"])
@pytest.mark.parametrize("host", ["c", "python"])
def test_json_and_table_numbers_whatever_the_locale(build, lib, locales, tmp_path, name, host):
    cmd = [build("locale_omp", LOCALE_C, "-fopenmp")] if host == "c" else [sys.executable, "-c", LOCALE_PY]
    out = tmp_path / "j.jsonl"
    proc = run(cmd, env=clean_env(LOCPATH=str(locales), LC_ALL=name), preload=lib, output=out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"0,5\n"  # the program did switch to a decimal comma
    lines = read_lines(out)  # every line parses
    summary = events(lines, "summary")[0]
    assert isinstance(summary["elapsed_s"], float | int)
    assert not re.search(rb"\d,\d+s\b", proc.stderr), proc.stderr


# ---- warnings once ---------------------------------------------------------------------------
@pytest.mark.parametrize("via", [["sh", "-c", 'exec "$0" 100'], ["env"]])
def test_a_bad_setting_is_warned_about_once_per_process(omp_critical, lib, via):
    cmd = [*via, str(omp_critical)] if via[0] == "env" else [*via[:2], via[2], str(omp_critical)]
    if via[0] == "env":
        cmd.append("100")
    proc = run(cmd, preload=lib, target="abc")
    assert proc.returncode == 0
    assert proc.stderr.count(b"CORECAST_TARGET=abc") == 1, proc.stderr
    env = run(["sh", "-c", "exec env"], preload=lib, target="abc")
    assert b"CORECAST_WARNED" not in env.stdout  # the mark is gone before the program runs


def test_an_image_without_the_library_gets_the_environment_it_was_given(lib):
    """After a warning an image marks the environment of its exec for the next image of its
    pid, which removes the mark; one that does not load the library (`env -i`, a program that
    drops LD_PRELOAD) cannot: it printed CORECAST_WARNED_PID=N among its own variables."""
    for cmd in (["env", "-i", "A=1", "env"], ["sh", "-c", "exec env -i A=1 env"]):
        proc = run(cmd, preload=lib, target="abc")
        assert (proc.returncode, proc.stdout) == (0, b"A=1\n"), (cmd, proc.stdout)
        assert proc.stderr.count(b"CORECAST_TARGET=abc") == 1, proc.stderr


# A thread sits in a dl_iterate_phdr callback (the loader's lock held) for good while main
# execs: the exec must not ask the loader anything.
EXEC_IN_LOADER_C = r"""
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <unistd.h>
static volatile int inside;
static int stay(struct dl_phdr_info *info, size_t size, void *arg) {
    inside = 1;
    for (;;)
        pause();
    return 0;
}
static void *walker(void *arg) {
    dl_iterate_phdr(stay, NULL);
    return NULL;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, NULL, walker, NULL);
    while (!inside)
        ;
    char *argv[] = {"true", NULL};
    execv("/bin/true", argv);
    return 3;
}
"""


def test_an_exec_beside_a_thread_in_the_loader_asks_it_nothing(build, lib):
    """After a warning the exec marks its environment where it preloads the library; finding
    the library's name asked the loader (dladdr), whose lock the other thread holds: the
    exec waited for it (a callback that never returns: for ever)."""
    exe = build("exec_in_loader", EXEC_IN_LOADER_C, "-pthread")
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_TARGET="abc")
    proc = run_bounded([exe], env, hung_s=60)
    assert proc.returncode == 0, proc.stderr


# ---- the exits besides a parallel program's return (a mutation audit's finds) -----------------
SERIAL_C = r"""
#include <locale.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc > 1) setlocale(LC_ALL, "");
    printf("program output %.1f\n", 0.5);   /* buffered: stdout is a file or a pipe */
    return 0;
}
"""


def test_a_serial_programs_buffered_output_comes_before_the_serial_run_line(build, tmp_path):
    """`corecast run` of a program with no parallel activity says "serial run" at its exit:
    after the program's buffered output, as the parallel report comes (2>&1 into one file)."""
    exe = build("serial_buffered", SERIAL_C)
    out = tmp_path / "both.txt"
    with open(out, "wb") as f:
        proc = subprocess.run([*CORECAST, "run", "--", str(exe)], env=clean_env(), stdout=f,
                              stderr=subprocess.STDOUT, timeout=TIMEOUT)
    assert proc.returncode == 0
    text = out.read_text()
    assert text.startswith("program output 0.5\n") and "serial run" in text, text


def test_the_serial_run_line_and_record_whatever_the_locale(build, locales, tmp_path):
    """The "serial run" line and its JSON summary are written in the C locale, also for a
    program that switched to a decimal comma."""
    exe = build("serial_buffered", SERIAL_C)
    out = tmp_path / "s.jsonl"
    proc = subprocess.run([*CORECAST, "run", "--json-out", str(out), "--", str(exe), "locale"],
                          env=clean_env(LOCPATH=str(locales), LC_ALL="de_DE.UTF-8"), capture_output=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"program output 0,5\n"  # the program did switch
    assert b"serial run" in proc.stderr
    assert not re.search(rb"\d,\d+s\b", proc.stderr), proc.stderr
    (summary,) = events(read_lines(out), "summary")  # every line parses
    assert summary["serial_run"] is True and isinstance(summary["elapsed_s"], float | int)


UNDERSCORE_EXIT_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 2000000; i++) s += i * 0.5;
    printf("never written %.0f\n", s);   /* buffered (stdout is a pipe): _exit drops it */
    _exit(3);
}
"""


def test_exit_without_flushing_drops_the_programs_buffered_output_as_without_corecast(build, lib):
    """_exit skips the stdio flush: the report made on its way must not flush the program's
    buffers either (their bytes would be output the program never wrote)."""
    exe = build("underscore_exit", UNDERSCORE_EXIT_C, "-fopenmp")
    plain = run([exe])
    measured = run([exe], preload=lib)
    assert plain.returncode == measured.returncode == 3
    assert plain.stdout == b""
    assert measured.stdout == plain.stdout and report_blocks(measured.stderr) == 1


OWN_STREAM_C = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    FILE *log = fdopen(dup(2), "w");   /* a stream of the program's own on its stderr */
    setvbuf(log, NULL, _IOFBF, 1 << 16);
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < 2000000; i++) s += i * 0.5;
    fprintf(log, "program log %.0f\n", s);   /* buffered until the exit */
    return 0;
}
"""


def test_every_stream_the_program_opened_is_flushed_before_the_report(build, lib, tmp_path):
    """Not stdout and stderr only: a buffered stream of the program's own (a logging
    library's FILE on a copy of its stderr) comes before the report, as exit() flushes it."""
    exe = build("own_stream_then_exit", OWN_STREAM_C, "-fopenmp")
    out = tmp_path / "err.txt"
    with open(out, "wb") as f:
        proc = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib)), stderr=f, timeout=TIMEOUT)
    assert proc.returncode == 0
    text = out.read_text()
    assert text.startswith("program log ") and "corecast: pid " in text, text


def test_a_warning_into_a_stderr_reader_that_left_does_not_kill_the_program(lib):
    """A start-up warning (a bad setting) is written on the program's own thread: the SIGPIPE
    its write raises there is taken back before the thread's mask is, as the report's is."""
    exe = shutil.which("true")
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([str(exe)], env=clean_env(LD_PRELOAD=str(lib), CORECAST_TARGET="abc"),
                              stderr=w, timeout=TIMEOUT)
    finally:
        os.close(w)
    assert proc.returncode == 0
