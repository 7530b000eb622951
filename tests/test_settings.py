"""The settings table (corecast.io.settings) is the one source of CORECAST_* names: the C
header and docs/environment.md are generated from it, and no source reads a name it lacks."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from corecast.io import settings

ROOT = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"\bCORECAST_[A-Z][A-Z0-9_]*")
# Not settings: header guards, and the launcher's build-time define of its interpreter.
NOT_SETTINGS = re.compile(r"CORECAST_(\w+_H|H|PYTHON)$")


def names_in(paths) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for p in paths:
        for n in _NAME.findall(p.read_text(errors="replace")):
            if not NOT_SETTINGS.match(n):
                found.setdefault(n, set()).add(str(p.relative_to(ROOT)))
    return found


def test_generated_files_match_the_table():
    """Run `python -m corecast.io.settings` (from src/) after changing the table."""
    assert (ROOT / "native" / "settings.h").read_text() == settings.c_header()
    assert (ROOT / "docs" / "environment.md").read_text() == settings.markdown()


def test_every_name_read_anywhere_is_in_the_table():
    code = [p for d in ("native", "shims", "src") for p in (ROOT / d).rglob("*")
            if p.suffix in (".c", ".h", ".py")]
    docs = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *(ROOT / "docs").glob("*.md")]
    unknown = {n: sorted(where) for n, where in names_in(code + docs).items() if n not in settings.BY_NAME}
    assert not unknown, f"CORECAST_* names the table (src/corecast/io/settings.py) lacks: {unknown}"


def test_readme_links_the_generated_table():
    assert "docs/environment.md" in (ROOT / "README.md").read_text()


def test_table_is_well_formed():
    assert len(settings.BY_NAME) == len(settings.TABLE)
    for s in settings.TABLE:
        assert s.name.startswith("CORECAST_") and s.kind in ("flag", "int", "number", "text")
        assert s.readers and set(s.readers) <= {settings.LIB, settings.MODEL, settings.LAUNCHER}
        assert s.meaning
        if s.kind in ("flag", "int"):
            assert s.lo is not None and s.hi is not None and s.lo <= s.hi
        if s.field:  # the library parses it into cc_cfg: a whole number it reads
            assert s.kind in ("flag", "int") and settings.LIB in s.readers
    header = (ROOT / "native" / "corecast.h").read_text()
    max_threads = int(re.search(r"#define CC_MAX_THREADS (\d+)", header).group(1))
    assert settings.BY_NAME[settings.TARGET].hi == max_threads
    cfg = re.search(r"struct cc_config \{(.*?)\};", header, re.S).group(1)
    for s in settings.TABLE:
        if s.field:
            assert re.search(rf"\bint[^;]*\b{s.field}\b", cfg), s.field


@pytest.mark.parametrize("raw, value", [
    ("", 200), ("50", 50), (" 50", 50), ("+50", 50), ("050", 50), ("50 ", None), ("5e1", None),
    ("9", None), ("60001", None), ("-50", None), ("lots", None), ("99999999999999999999", None), ("1_000", None),
])
def test_one_parse_rule_and_one_warning(raw, value):
    warned = []
    got = settings.integer(settings.WINDOW_MS, {settings.WINDOW_MS: raw}, warned.append)
    assert got == (200 if value is None else value)
    if value is None:
        assert warned == [f"CORECAST_WINDOW_MS={raw} is not a whole number in [10, 60000]; using 200"]
    else:
        assert warned == []


def test_defaults_and_overrides():
    assert settings.integer(settings.TARGET, {}) == settings.default_of(settings.TARGET) >= 1
    assert settings.integer(settings.TARGET, {settings.TARGET: "x"}, default=None) is None
    assert settings.bad_value(settings.PROBE, "maybe", 0) == \
        "CORECAST_PROBE=maybe is not 0 or 1 (or true or false, yes or no, on or off); using 0"
    assert settings.bad_value(settings.TARGET, "x", 8).endswith("is not a whole number in [1, 1024]; using 8")
    # A flag reads OpenMP's words for its values too (OMP_DYNAMIC=true), as the library does.
    for word, value in (("yes", 1), ("TRUE", 1), ("On", 1), ("no", 0), ("false", 0), ("OFF", 0)):
        assert settings.integer(settings.QUIET, {settings.QUIET: word}) == value
    assert settings.integer(settings.TARGET, {settings.TARGET: "yes"}, default=None) is None
    assert settings.positive(settings.MAX_INPUT_MB, {}) == 64
    with pytest.raises(ValueError, match=r"CORECAST_MAX_INPUT_MB='0': not a positive number of MiB"):
        settings.positive(settings.MAX_INPUT_MB, {settings.MAX_INPUT_MB: "0"})


def test_rank_and_output_path_follow_the_library():
    env = {"PMI_RANK": "3", "PMI_SIZE": "8"}
    assert settings.rank_identity(env) == (3, 8)
    assert settings.rank_identity({"SLURM_PROCID": "2", "SLURM_NTASKS": "2"}) == (2, None)
    assert settings.rank_identity({"OMPI_COMM_WORLD_RANK": "x"}) == (None, None)
    assert settings.output_path("o-{rank}-{pid}.jsonl", env, 7) == "o-3-7.jsonl"


def test_the_generator_outside_a_source_tree_is_one_line(tmp_path, capsys):
    # `python -m corecast.io.settings` from an installed package: FileNotFoundError traceback
    assert settings.main([], root=str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not corecast's source tree" in err
    assert list(tmp_path.iterdir()) == []


def test_the_columns_generator_outside_a_source_tree_is_one_line(tmp_path, capsys):
    # `python -m corecast.views.columns` from an installed package (ARCHITECTURE.md's command
    # run from the checkout's root) once ended in a FileNotFoundError traceback
    from corecast.views import columns

    assert columns.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not corecast's source tree" in err and "corecast.views.columns" in err
    assert list(tmp_path.iterdir()) == []


def test_the_doc_says_which_settings_display_env_leaves_out():
    """It said CORECAST_DISPLAY_ENV prints "them all", every variable corecast reads, while the
    library leaves the table's unshown ones out (native/settings.h's CC_SETTINGS_SHOWN)."""
    text = " ".join((ROOT / "docs" / "environment.md").read_text().split())
    start = text.index("`CORECAST_DISPLAY_ENV=1` prints")
    said = text[start:text.index("Readers:", start)]
    hidden = [s.name for s in settings.TABLE if not s.shown]
    assert hidden and all(f"`{name}`" in said for name in hidden), said
    assert "them all" not in said
    rows = (ROOT / "docs" / "environment.md").read_text().splitlines()
    for s in settings.TABLE:
        row = next(line for line in rows if line.startswith(f"| `{s.name}` |"))
        assert ("not shown by CORECAST_DISPLAY_ENV" in row) == (not s.shown), row
