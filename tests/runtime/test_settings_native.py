"""The preload library reads the settings table as corecast.io.settings does: the same
parse rule, default and warning for each whole number, and CORECAST_DISPLAY_ENV lists
every setting the table shows."""
from __future__ import annotations

import os
import re
import shutil

import pytest

from corecast.io import settings

from .helpers import clean_env, run

TRUE = shutil.which("true") or "/bin/true"
_SHOWN = re.compile(r"^  (CORECAST_\w+) = '(.*)'$", re.M)
CASES = [" 50", "+70", "050", "50 ", "lots", "9", "60001", "", "-1", "99999999999999999999",
         "yes", "on",  # a flag's words are no whole number (native/config.c reads them for flags only)
         "9" * 41, "x" * 5000,  # shown cut to 40 (fuzz40: the value filled the line, its "using" lost)
         "\u00e9" * 45, "a" + "\u20ac" * 40, "\u00e9" * 40,  # 40 characters, not 40 bytes (review40)
         "\udc80" * 5000, "\udcb0" * 45, "\u00e9\udcff" * 30]  # bytes that start no character: one each


def displayed(lib, **env: str) -> tuple[dict[str, str], list[str]]:
    proc = run([TRUE], env=clean_env(**env), preload=lib, display_env="1")
    assert proc.returncode == 0
    err = proc.stderr.decode()
    block = err[err.index("CORECAST DISPLAY ENVIRONMENT BEGIN\n"):err.index("CORECAST DISPLAY ENVIRONMENT END\n")]
    warnings = [ln[len("corecast: warning: "):] for ln in err.splitlines() if ln.startswith("corecast: warning: ")]
    return dict(_SHOWN.findall(block)), warnings


def test_display_env_lists_every_setting(lib):
    shown, warnings = displayed(lib, CORECAST_MACHINE_FILE="/m.json", CORECAST_OUTPUT="o-{rank}.jsonl")
    assert list(shown) == [s.name for s in settings.TABLE if s.shown] and not warnings
    # A relative output is the starting directory's (test_a_relative_output_is_the_starting_directorys).
    assert shown[settings.MACHINE_FILE] == "/m.json" and shown[settings.OUTPUT] == f"{os.getcwd()}/o-{{rank}}.jsonl"
    assert shown[settings.WINDOW_MS] == "200" and shown[settings.DISPLAY_ENV] == "1"


def both_readers(lib, raw: str, *names: str) -> list[str]:
    """The library's warnings for ``names`` set to ``raw``, checked against Python's: the
    same values in force and the same warnings."""
    env = {name: raw for name in names}
    shown, warnings = displayed(lib, **env)
    python_warnings: list[str] = []
    for name in names:
        assert shown[name] == str(settings.integer(name, env, python_warnings.append))
    # A byte that starts no character: the library's line shows '?', Python's text keeps the
    # surrogate escape; the cut is the same.
    assert warnings == [re.sub("[\udc80-\udcff]", "?", w) for w in python_warnings]
    return warnings


@pytest.mark.parametrize("raw", CASES)
def test_library_and_python_parse_alike(lib, raw):
    both_readers(lib, raw, settings.WINDOW_MS, settings.EXIT_TIMEOUT_MS)


@pytest.mark.parametrize("raw", ["yes", "TRUE", "on", "no", "False", "off", "maybe", "2", " 1", "1"])
def test_library_and_python_read_a_flag_alike(lib, raw):
    # A flag reads OpenMP's words for its values (OMP_DYNAMIC=true): CORECAST_QUIET=yes said
    # "is not a whole number in [0, 1]" and printed the report it asked to leave out (runuser37).
    warnings = both_readers(lib, raw, settings.QUIET, settings.KEEP_COUNTING)
    assert (warnings == []) == (raw.strip().lower() in settings.FLAG_WORDS or raw.strip() in ("0", "1"))
