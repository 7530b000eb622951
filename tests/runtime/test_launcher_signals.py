"""A program ``corecast run`` or ``corecast sweep`` starts gets the signal dispositions
its caller gave: a SIGPIPE, SIGXFSZ or SIGINT the caller ignored stays ignored (as across
any exec: ``trap '' PIPE``, a background job of a script), the others are the default.

No check races the program: it prints its own dispositions (sigaction), and the test
compares them with what the same program prints when started without corecast."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.io import settings

from .helpers import TIMEOUT, clean_env

SCRIPT = Path(sys.executable).parent / "corecast"  # the installed command: the C launcher

# Prints, to argv[1] or stdout: each signal's disposition, whether SIGINT is blocked, and
# the CORECAST_* names in its environment.
SHOWS_ITS_SIGNALS_C = r"""
#include <signal.h>
#include <stdio.h>
#include <string.h>
extern char **environ;
static const char *how(int sig) {
    struct sigaction sa;
    sigaction(sig, NULL, &sa);
    return sa.sa_handler == SIG_IGN ? "ign" : sa.sa_handler == SIG_DFL ? "dfl" : "caught";
}
int main(int argc, char **argv) {
    FILE *out = argc > 1 ? fopen(argv[1], "w") : stdout;
    sigset_t held;
    sigprocmask(SIG_BLOCK, NULL, &held);
    fprintf(out, "PIPE=%s XFSZ=%s INT=%s INT-blocked=%d", how(SIGPIPE), how(SIGXFSZ), how(SIGINT),
            sigismember(&held, SIGINT));
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "CORECAST_", 9) == 0)
            fprintf(out, " %.*s", (int)strcspn(*e, "="), *e);
    fprintf(out, "\n");
    return 0;
}
"""

CASES = [(), ("SIGPIPE",), ("SIGXFSZ",), ("SIGINT",), ("SIGPIPE", "SIGXFSZ", "SIGINT")]


@pytest.fixture(scope="module")
def shows(build) -> Path:
    return build("shows_its_signals", SHOWS_ITS_SIGNALS_C)


def command() -> list[str]:
    if not SCRIPT.is_file():
        pytest.skip(f"the corecast command is not installed beside {sys.executable}")
    return [str(SCRIPT)]


def started_ignoring(ignored, argv: list[str]) -> subprocess.CompletedProcess:
    """``argv`` started by a caller that ignores the signals named in ``ignored``."""
    def setup() -> None:  # after subprocess has put SIGPIPE and SIGXFSZ back to the default
        for name in ignored:
            signal.signal(getattr(signal, name), signal.SIG_IGN)

    return subprocess.run([str(a) for a in argv], env=clean_env(), capture_output=True, text=True,
                          preexec_fn=setup, timeout=TIMEOUT)


def dispositions(line: str) -> tuple[str, list[str]]:
    """The dispositions and the CORECAST_* names a line of the program shows."""
    words = line.split()
    return " ".join(words[:4]), words[4:]


def expected(ignored) -> str:
    pipe, xfsz, intr = ("ign" if s in ignored else "dfl" for s in ("SIGPIPE", "SIGXFSZ", "SIGINT"))
    return f"PIPE={pipe} XFSZ={xfsz} INT={intr} INT-blocked=0"


@pytest.mark.parametrize("ignored", CASES, ids=lambda c: "+".join(c) or "none")
def test_corecast_run_keeps_what_the_caller_ignored(shows, lib, ignored):
    bare = started_ignoring(ignored, [shows])
    assert dispositions(bare.stdout)[0] == expected(ignored)
    ours = started_ignoring(ignored, command() + ["run", "--quiet", "--", shows])
    assert ours.returncode == 0, ours.stderr
    shown, names = dispositions(ours.stdout)
    assert shown == dispositions(bare.stdout)[0]
    # The command's record of the caller's signals is not passed on to the program.
    run_sets = {s.name for s in settings.TABLE if s.set_by_run}
    assert set(names) <= run_sets, names


def test_python_m_corecast_run_cannot_know_pipe_and_xfsz(shows, lib):
    """CPython ignores SIGPIPE and SIGXFSZ before corecast's first line: without the
    command's record, the program gets the defaults; SIGINT is still the caller's."""
    ours = started_ignoring(("SIGPIPE", "SIGINT"), [sys.executable, "-m", "corecast", "run", "--quiet", "--", shows])
    assert ours.returncode == 0, ours.stderr
    assert dispositions(ours.stdout)[0] == "PIPE=dfl XFSZ=dfl INT=ign INT-blocked=0"


def test_a_pipe_the_caller_ignored_gives_the_program_epipe(build, lib):
    """The report's case: ``trap '' PIPE; corecast run -- prog | true`` must get EPIPE and
    the program's own status, not death by SIGPIPE.  The reader is gone before the program
    writes (it waits for its stdout's POLLERR), so nothing here depends on timing."""
    prog = build("writes_to_a_closed_pipe", r"""
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
    struct pollfd p = {.fd = 1, .events = 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR) {}  /* POLLERR: the reader closed it */
    if (write(1, "data\n", 5) < 0) fprintf(stderr, "%s\n", strerror(errno));
    return 3;
}
""")
    for argv in ([prog], command() + ["run", "--quiet", "--", prog]):
        def setup() -> None:
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)

        reader = subprocess.Popen(["true"], stdin=subprocess.PIPE)
        writer = subprocess.Popen([str(a) for a in argv], stdout=reader.stdin, stderr=subprocess.PIPE,
                                  env=clean_env(), preexec_fn=setup)
        reader.stdin.close()
        reader.wait(timeout=TIMEOUT)
        err = writer.communicate(timeout=TIMEOUT)[1].decode()
        assert writer.returncode == 3, (argv, writer.returncode, err)
        assert err == "Broken pipe\n", err


def test_corecast_sweep_runs_keep_what_the_caller_ignored(shows, lib, tmp_path):
    ignored = ("SIGPIPE", "SIGINT")
    seen = tmp_path / "seen-{threads}.txt"
    r = started_ignoring(ignored, command() + ["sweep", "--threads", "1,2", "--repeat", "1",
                                               "--json-out", str(tmp_path / "sweep.json"), "--", shows, seen])
    out = tmp_path / "seen-1.txt"
    assert out.is_file(), r.stderr
    assert dispositions(out.read_text())[0] == expected(ignored)
    json.loads((tmp_path / "sweep.json").read_text())  # the sweep itself ran to its end


def test_run_help_says_python_m_loses_pipe_and_xfsz():
    """What ``python -m corecast run`` cannot pass on is said where a user looks first."""
    r = subprocess.run([sys.executable, "-m", "corecast", "run", "--help"], env=clean_env(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "python -m corecast" in text and "SIGPIPE or SIGXFSZ" in text, text
