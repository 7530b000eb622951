"""A program ``corecast run`` or ``corecast sweep`` starts gets its caller's LC_CTYPE, none
where the caller had none, from the corecast command (its C launcher's record) and from
``python -m corecast`` (the environment it was exec'd with) alike.  CPython's locale
coercion (PEP 538) sets LC_CTYPE=C.UTF-8 in corecast's environment when the caller has no
locale or LANG=C/POSIX: the program then counted characters where a plain run counts bytes
(``wc -m``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import TIMEOUT

SCRIPT = Path(sys.executable).parent / "corecast"  # the installed command: the C launcher

# The program's LC_CTYPE ("unset": none) and whether any corecast record reached it.
SHOWS = ["/bin/sh", "-c", 'printf "%s %s\\n" "${LC_CTYPE-unset}" "${CORECAST_CALLER_LC_CTYPE-none}" > "$1"', "sh"]

# The caller's environment (as `env -i PATH=... [VAR=...]` gives) and the LC_CTYPE expected.
CASES = [({}, "unset"), ({"LANG": "POSIX"}, "unset"), ({"LANG": "C"}, "unset"),
         ({"LC_CTYPE": "C"}, "C"), ({"LC_CTYPE": ""}, ""), ({"LANG": "C.UTF-8"}, "unset")]


def command(entry: str = "command") -> list[str]:
    if entry == "python -m":
        return [sys.executable, "-m", "corecast"]
    if not SCRIPT.is_file():
        pytest.skip(f"the corecast command is not installed beside {sys.executable}")
    return [str(SCRIPT)]


ENTRIES = ["command", "python -m"]


def bare(**extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", **extra}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("extra,ctype", CASES, ids=lambda c: repr(c))
def test_corecast_run_gives_the_callers_lc_ctype(lib, tmp_path, extra, ctype, entry):
    seen = tmp_path / "seen.txt"
    r = subprocess.run(command(entry) + ["run", "--quiet", "--", *SHOWS, str(seen)], env=bare(**extra),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert seen.read_text() == f"{ctype} none\n"


def test_wc_counts_as_without_corecast(lib, tmp_path):
    text = tmp_path / "u.txt"
    text.write_bytes("h\u00e9llo w\u00f6rld\n".encode())
    plain = subprocess.run(["wc", "-m", str(text)], env=bare(), capture_output=True, text=True, timeout=TIMEOUT)
    r = subprocess.run(command() + ["run", "--quiet", "--", "wc", "-m", str(text)], env=bare(),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout


@pytest.mark.parametrize("entry", ENTRIES)
def test_corecast_sweep_runs_get_the_callers_lc_ctype(lib, tmp_path, entry):
    seen = tmp_path / "seen-{threads}.txt"
    r = subprocess.run(command(entry) + ["sweep", "--threads", "1,2", "--repeat", "1", "--json-out",
                                    str(tmp_path / "sweep.json"), "--", *SHOWS, str(seen)],
                       env=bare(LANG="POSIX"), capture_output=True, text=True, timeout=TIMEOUT)
    out = tmp_path / "seen-1.txt"
    assert out.is_file(), r.stderr
    assert out.read_text() == "unset none\n"
    json.loads((tmp_path / "sweep.json").read_text())  # the sweep itself ran to its end


def test_non_ascii_in_corecast_output_under_no_locale(lib, tmp_path):
    """corecast's own Python still prints a non-ASCII name (UTF-8 mode under the C locale)."""
    r = subprocess.run(command() + ["run", "--", str(tmp_path / "h\u00e9")], env=bare(),
                       capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 127
    assert "h\u00e9".encode() in r.stderr, r.stderr


def test_python_m_leaves_an_lc_ctype_coercion_did_not_set(lib, tmp_path):
    """Only CPython's coercion is undone: a value set after start (here by -c's own line,
    as a sitecustomize might) reaches the program."""
    seen = tmp_path / "seen.txt"
    start = ("import os, sys; os.environ['LC_CTYPE'] = 'POSIX'; sys.argv[0] = 'corecast'; "
             "from corecast.__main__ import console; console()")
    r = subprocess.run([sys.executable, "-c", start, "run", "--quiet", "--", *SHOWS, str(seen)],
                       env=bare(LC_CTYPE="C"), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert seen.read_text() == "POSIX none\n"
