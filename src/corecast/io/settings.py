"""The ``CORECAST_*`` settings: one table (``TABLE``) naming every variable corecast reads or
sets, with its type, default, range, meaning and readers, and the one parse rule for it.

Generated from the table (``python -m corecast.io.settings`` rewrites both;
tests/test_settings.py fails when either differs from the table):

- ``native/settings.h``: the preload library's parser table (native/config.c reads every
  whole-number setting through it and shows every setting under ``CORECAST_DISPLAY_ENV``);
  committed rather than made by ``pip install .``, so that the C builds with plain gcc and
  an sdist needs no generation step;
- ``docs/environment.md``: the table as the README links it.

Readers: ``library`` (libcorecast_preload, C), ``model`` (Python inside the profiled
program: the model library, the OpenCL hook), ``launcher`` (the ``corecast`` command).
The autoload sitecustomize spells ``CORECAST_OPENCL`` itself: it runs before corecast is
importable.  Standard library only: the OpenCL hook imports this inside profiled programs.
"""
from __future__ import annotations

import math
import os
import sys

TYPE_CHECKING = False  # typing, dataclasses, pathlib cost start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable, Mapping, Optional, Sequence

CORES = "cores"  # a default that is this machine's online CPUs (C: CC_DEFAULT_CORES)
INT_MAX = 2**31 - 1


class Setting:
    """One variable.  ``kind``: ``flag`` (0 or 1), ``int`` (a whole number in [lo, hi]),
    ``number`` (a positive real), ``text`` (read as given; its reader checks it).
    ``readers``: who reads it; ``field``: the library's cc_cfg field a whole number lands
    in; ``set_by_run``: `corecast run` sets it; ``shown``: listed by CORECAST_DISPLAY_ENV;
    ``unit``: a number's unit, for its error."""
    __slots__ = ("name", "kind", "default", "meaning", "readers", "lo", "hi", "field", "set_by_run",
                 "shown", "unit")

    def __init__(self, name: str, kind: str, default: object, meaning: str, readers: tuple,
                 lo: int | None = None, hi: int | None = None, *, field: str = "",
                 set_by_run: bool = False, shown: bool = True, unit: str = "") -> None:
        self.name, self.kind, self.default, self.meaning, self.readers = name, kind, default, meaning, readers
        self.lo, self.hi, self.field, self.set_by_run, self.shown, self.unit = lo, hi, field, set_by_run, shown, unit

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.kind!r}, {self.default!r})"


LIB, MODEL, LAUNCHER = "library", "model", "launcher"

TABLE: tuple = (
    Setting("CORECAST_DISABLE", "flag", 0, "1: corecast stays out (library, OpenMP tool and OpenCL hook)",
            (LIB, MODEL), 0, 1, field="disabled"),
    Setting("CORECAST_TARGET", "int", CORES, "predict up to this many threads / compute units",
            (LIB, MODEL), 1, 1024, field="target", set_by_run=True),
    Setting("CORECAST_WINDOW_MS", "int", 200, "sample window, ms", (LIB, MODEL), 10, 60000,
            field="window_ms", set_by_run=True),
    Setting("CORECAST_OUTPUT", "text", "",
            "JSON Lines path; {rank} and {pid} filled in; relative: to the directory the program started in; "
            "empty: none", (LIB, MODEL), set_by_run=True),
    Setting("CORECAST_QUIET", "flag", 0, "1: no exit report on stderr", (LIB, MODEL), 0, 1,
            field="quiet", set_by_run=True),
    Setting("CORECAST_STEER", "flag", 0, "1: steer OpenMP team sizes", (LIB,), 0, 1, field="steer",
            set_by_run=True),
    Setting("CORECAST_PROBE", "flag", 0, "1: run some calls of repeated regions at smaller teams (off with STEER)",
            (LIB,), 0, 1, field="probe", set_by_run=True),
    Setting("CORECAST_EXIT_TIMEOUT_MS", "int", 10000, "how long the exit waits for the model, ms",
            (LIB,), 0, 600000, field="exit_timeout_ms"),
    Setting("CORECAST_KEEP_COUNTING", "flag", 0, "1: keep every section wrapper (no hand-back once steering settled or counting costs)",
            (LIB,), 0, 1, field="keep_counting"),
    Setting("CORECAST_DISPLAY_ENV", "flag", 0, "1: print these settings at start, like OMP_DISPLAY_ENV (but "
            "corecast's own bookkeeping, marked not shown)",
            (LIB,), 0, 1, field="display_env"),
    Setting("CORECAST_TARGET_MACHINE", "text", "", "machine description for NUMA predictions (--target-machine)",
            (MODEL,), set_by_run=True),
    Setting("CORECAST_MACHINE_FILE", "text", "$XDG_CACHE_HOME/corecast/calibration.json",
            "this machine's calibration (corecast calibrate writes it, a run reads it); empty: none",
            (MODEL, LAUNCHER)),
    Setting("CORECAST_OPENCL", "flag", "", "1 / 0: instrument pyopencl or not; unset: under the library",
            (MODEL,), 0, 1, set_by_run=True),
    Setting("CORECAST_MAX_INPUT_MB", "number", 64, "largest input file corecast reads, MiB (the CLI's, a run's machine file)",
            (MODEL, LAUNCHER),
            unit="MiB"),
    Setting("CORECAST_DEBUG", "text", "", "set, not 0: tracebacks of internal errors", (LAUNCHER,)),
    Setting("CORECAST_NUMA_EVENTS", "text", "",
            "memory-traffic events to count: v2:HEX, struct cc_numa_plan's bytes (planned by corecast run)",
            (LIB,), set_by_run=True),
    Setting("CORECAST_LAUNCH_PID", "int", 0, "the pid corecast run execs: only it is the program",
            (LIB,), 0, INT_MAX, field="launch_pid", set_by_run=True),
    Setting("CORECAST_STDERR", "text", "", "DEV:INO of the stderr corecast run had (closed: none)",
            (LIB,), set_by_run=True),
    Setting("CORECAST_WARNED_PID", "int", 0, "an exec'd image of this pid already warned (set by the library)",
            (LIB,), 0, INT_MAX, shown=False),
    Setting("CORECAST_IGNORED_SIGNALS", "text", "",
            "set by the corecast command: which of SIGPIPE,SIGXFSZ its caller ignored (Python resets "
            "them); taken out of the environment, no program sees it", (LAUNCHER,), shown=False),
    Setting("CORECAST_CALLER_LC_CTYPE", "text", "",
            "set by the corecast command: its caller's LC_CTYPE as =VALUE, empty: none (Python's "
            "locale coercion sets one); taken out of the environment, no program sees it", (LAUNCHER,), shown=False),
    Setting("CORECAST_TEST_FAULT", "text", "",
            "tests only: segv|abort|hang at the exit prediction, report_segv in the C exit report, slow_rewrite, slow_table, no_sampler (its thread refused), naming_at_fork, view_at_fork, loading_at_fork (the region-naming lock, the OpenMP view maker's flag, the model start's flag held at the program's forks), sampler_first (the sampler starts a Python host's model before the program's thread), quiet_exit_awaits (a quiet run's exit awaits a model run of the sampler's, as a reported one does; the sampler starts the model first), view_in_loader (the first OpenMP view's maker, about to ask the loader, waits for the program's corecast_test_gate: a constructor then holds the loader's lock), naming_in_loader (the sampler's first naming, about to ask the loader, waits for the program's corecast_test_gate: a dl_iterate_phdr callback then holds the loader's lock)",
            (LIB, MODEL)),
)
BY_NAME = {s.name: s for s in TABLE}

# The names, for readers and writers (settings.OUTPUT, ...).
DISABLE, TARGET, WINDOW_MS, OUTPUT, QUIET, STEER, PROBE, EXIT_TIMEOUT_MS, KEEP_COUNTING, \
    DISPLAY_ENV, TARGET_MACHINE, MACHINE_FILE, OPENCL, MAX_INPUT_MB, DEBUG, NUMA_EVENTS, \
    LAUNCH_PID, STDERR, WARNED_PID, IGNORED_SIGNALS, CALLER_LC_CTYPE, TEST_FAULT = (s.name for s in TABLE)

# The MPI launchers' rank and world-size variables, tried in this order (C: CC_RANK_VARS).
RANK_VARS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")

FLAG_WORDS = {"false": 0, "no": 0, "off": 0, "true": 1, "yes": 1, "on": 1}  # as OMP_DYNAMIC's


def _whole(text: str, lo: int, hi: int) -> Optional[int]:
    """strtol(v, &end, 10) with *end == 0, as native/config.c reads a whole number (no
    ``re``: its import costs the model's start inside every profiled program ~5 ms); a
    flag (0 or 1) also reads ``FLAG_WORDS``, in any case."""
    if (lo, hi) == (0, 1) and text.lower() in FLAG_WORDS:
        return FLAG_WORDS[text.lower()]
    body = text.lstrip(" \t\n\v\f\r")
    digits = body[1:] if body[:1] in ("+", "-") else body
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    v = int(body)
    return v if lo <= v <= hi else None


def default_of(name: str) -> object:
    """``name``'s default, ``CORES`` resolved to this machine's online CPUs."""
    d = BY_NAME[name].default
    if d == CORES:
        try:
            n = os.sysconf("SC_NPROCESSORS_ONLN")
        except (OSError, ValueError):
            n = 0
        return n if n > 0 else 1
    return d


def integer(name: str, environ: Optional[Mapping[str, str]] = None, warn: Callable[[str], None] | None = None,
            default: object = ...) -> object:
    """A whole-number (or flag) setting as the library reads it: unset or empty gives the
    default (``default`` overrides the table's); a value that is not a whole number in
    range gives the default and one ``warn`` line, in the library's words."""
    s = BY_NAME[name]
    environ = os.environ if environ is None else environ
    fallback = default_of(name) if default is ... else default
    text = environ.get(name, "")
    if not text:
        return fallback
    v = _whole(text, s.lo, s.hi)
    if v is None:
        if warn is not None:
            warn(bad_value(name, text, fallback))
        return fallback
    return v


def unknown_names(environ: Optional[Mapping[str, str]] = None) -> list[str]:
    """A warning per ``CORECAST_*`` variable the table lacks, with the closest name it
    has: a typo of ``CORECAST_TARGET`` was otherwise ignored without a word, and the run
    predicted for the default.  native/config.c says the same line in the exit report of
    a program run under a bare ``LD_PRELOAD``."""
    environ = os.environ if environ is None else environ
    odd = sorted(n for n in environ if n.startswith("CORECAST_") and n not in BY_NAME)
    out = []
    for name in odd:
        near = closest(name)
        hint = f" (did you mean {near}?)" if near else ""
        out.append(f"{name} is not a corecast setting{hint}; ignored (docs/environment.md lists them)")
    return out


NEAR = 2  # at most this many letters typed wrong (or two swapped: one) for a suggestion
NAME_MAX = 64  # longer names get no suggestion (native/config.c keeps this much of one)


def closest(name: str) -> Optional[str]:
    """The table's name nearest ``name``, ignoring case, when at most ``NEAR`` edits away
    (a letter added, dropped, changed, or two neighbours swapped); the first in the
    table's order on a tie.  native/config.c's ``closest`` is the same rule, in C."""
    best, best_d = None, NEAR + 1
    typed = os.fsencode(name).upper()  # bytes, ASCII letters only: as C's toupper
    if len(typed) >= NAME_MAX:
        return None
    for s in TABLE:
        d = _edits(typed, s.name.encode())
        if d < best_d:
            best, best_d = s.name, d
    return best


def _edits(a: bytes, b: bytes) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions and
    transpositions of neighbours, each one edit."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[len(b)]


def bad_value(name: str, text: str, used: object) -> str:
    """The one warning for a bad whole number (native/config.c prints the same)."""
    s = BY_NAME[name]
    shown = "the default" if used is None else used
    text = text if len(text) <= 40 else text[:40] + "..."  # the line keeps its end (40: native/config.c's)
    if (s.lo, s.hi) == (0, 1):
        return f"{name}={text} is not 0 or 1 (or true or false, yes or no, on or off); using {shown}"
    return f"{name}={text} is not a whole number in [{s.lo}, {s.hi}]; using {shown}"


def text(name: str, environ: Optional[Mapping[str, str]] = None) -> str:
    """A text setting as given ("" when unset); its reader checks what it means."""
    return (os.environ if environ is None else environ).get(name, "")


def debug(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether CORECAST_DEBUG asks for tracebacks: set to anything but "" or "0" (a user who
    writes CORECAST_DEBUG=0 means off)."""
    return text(DEBUG, environ).strip() not in ("", "0")


def positive(name: str, environ: Optional[Mapping[str, str]] = None) -> float:
    """A ``number`` setting: the default when unset or blank; ValueError (one line) when
    it is not a positive number (the CLI's input: an error, not a warning)."""
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return float(BY_NAME[name].default)
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        shown = repr(raw) if len(raw) <= 40 else repr(raw[:40]) + "..."
        unit = BY_NAME[name].unit
        raise ValueError(f"{name}={shown}: not a positive number" + (f" of {unit}" if unit else ""))
    return v


def rank_identity(env: Mapping[str, str]) -> tuple:
    """(rank, world size) from an MPI launcher's environment, as the library reads them:
    None where unknown (the size also when it does not exceed the rank)."""
    def first(names: Sequence[str], lo: int) -> Optional[int]:
        text = next((env[v] for v in names if env.get(v)), "")
        return _whole(text, lo, INT_MAX - 1) if text else None

    rank = first(RANK_VARS, 0)
    size = first(SIZE_VARS, 1) if rank is not None else None
    return rank, size if size is not None and size > rank else None


def output_path(template: str, env: Mapping[str, str], pid: int) -> str:
    """``template`` (CORECAST_OUTPUT) with ``{rank}`` and ``{pid}`` filled in as the library
    fills them (native/config.c cc_output_path): the MPI rank (0 without a launcher, or
    when it does not parse) and the pid."""
    rank = rank_identity(env)[0]
    return template.replace("{rank}", str(rank or 0)).replace("{pid}", str(pid))


def calibration_path() -> str:
    """CORECAST_MACHINE_FILE's default: where ``corecast calibrate`` writes and a run looks,
    $XDG_CACHE_HOME/corecast/calibration.json (~/.cache when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "corecast", "calibration.json")


# ---- generated files ---------------------------------------------------------------------



def _c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_header() -> str:
    """native/settings.h: names, the whole numbers' parse table, the display list."""
    out = ["/* Generated from src/corecast/io/settings.py (python -m corecast.io.settings): do not",
           " * edit; tests/test_settings.py fails when it and the table differ. */",
           "#ifndef CORECAST_SETTINGS_H", "#define CORECAST_SETTINGS_H", "",
           "#define CC_DEFAULT_CORES (-1) /* a default of this machine's online CPUs */", ""]
    for s in TABLE:
        out.append(f"#define CC_ENV_{s.name[len('CORECAST_'):]} {_c_str(s.name)}")
    out += ["", "/* X(name, lo, hi, default, cc_cfg field): the whole numbers the library parses. */",
            "#define CC_SETTINGS_INT(X) \\"]
    for s in TABLE:
        if LIB in s.readers and s.field:
            d = "CC_DEFAULT_CORES" if s.default == CORES else str(s.default)
            hi = "INT_MAX" if s.hi == INT_MAX else str(s.hi)
            out.append(f"    X({_c_str(s.name)}, {s.lo}, {hi}, {d}, {s.field}) \\")
    out += ["", "/* Every setting CORECAST_DISPLAY_ENV shows, in the table's order. */",
            "#define CC_SETTINGS_SHOWN \\"]
    out += [f"    {_c_str(s.name)}, \\" for s in TABLE if s.shown]
    out += ["", "/* Every name of the table: a CORECAST_* variable not here is no setting (a typo). */",
            "#define CC_SETTINGS_ALL CC_SETTINGS_SHOWN \\"]
    out += [f"    {_c_str(s.name)}, \\" for s in TABLE if not s.shown]
    out += ["", f"#define CC_NAME_MAX {NAME_MAX} /* longer names get no suggestion */",
            f"#define CC_NAME_NEAR {NEAR} /* edits at most, for a suggestion (settings.closest) */"]
    out += ["", "/* The MPI launchers' rank and world-size variables, tried in this order. */",
            "#define CC_RANK_VARS " + ", ".join(map(_c_str, RANK_VARS)),
            "#define CC_SIZE_VARS " + ", ".join(map(_c_str, SIZE_VARS)), "", "#endif", ""]
    return "\n".join(out)


def _default_text(s: Setting) -> str:
    if s.default == CORES:
        return "this machine's CPUs"
    return "unset" if s.default == "" else f"`{s.default}`"


def _listed(words: list[str]) -> str:
    """"a, b and c"."""
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def markdown() -> str:
    """docs/environment.md."""
    out = ["# Environment", "",
           "<!-- Generated from src/corecast/io/settings.py (python -m corecast.io.settings): do not edit. -->",
           "", "Every `CORECAST_*` variable corecast reads, read once at start. A whole number that does",
           "not parse or is out of range gets one line, `corecast: warning: NAME=VALUE is not a whole",
           "number in [lo, hi]; using D`, and the default (once per process). A flag also reads",
           "OpenMP's words for its values (`OMP_DYNAMIC=true`): `true`, `yes`, `on` and `false`, `no`,",
           "`off`, in any case; anything else gets `... is not 0 or 1 (or true or false, yes or no,",
           "on or off); using D`. A `CORECAST_*` name",
           "not in this table (a typo) gets one line that names the closest one (at most 2 letters",
           "off, ignoring case), `... is not a corecast setting (did you mean CORECAST_TARGET?);",
           "ignored`: from the `corecast` command, or, under a bare `LD_PRELOAD`, among the exit",
           "report's warnings (the first 4 such names; never at start-up, between the program's lines).",
           "`CORECAST_DISPLAY_ENV=1` prints every one (the library's with the value in force, the",
           "others as given) between `CORECAST DISPLAY ENVIRONMENT BEGIN` and `... END`, but",
           _listed([f"`{x.name}`" for x in TABLE if not x.shown]) + ": corecast's own bookkeeping,",
           "which the library sets for itself or the `corecast` command takes out of the environment",
           "before any program starts.",
           "Readers: *library* (the preload library), *model* (Python in the profiled program: the",
           "model, the OpenCL hook), *launcher* (the `corecast` command). *run* marks what",
           "`corecast run` sets from its options (or for itself).", "",
           "| variable | type | range | default | read by | meaning |", "|---|---|---|---|---|---|"]
    for s in TABLE:
        rng = "0, 1" if s.kind == "flag" else (f"[{s.lo}, {s.hi}]" if s.kind == "int" else
                                               "> 0" if s.kind == "number" else "")
        who = ", ".join(s.readers) + (" (run)" if s.set_by_run else "")
        meaning = s.meaning + ("" if s.shown else f"; not shown by {DISPLAY_ENV}")
        cells = (f"`{s.name}`", s.kind, rng, _default_text(s), who, meaning)
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    out += ["", "MPI ranks: `{rank}` is the first of " + ", ".join(f"`{v}`" for v in RANK_VARS)
            + " that is set (0 without one); the world size the first of "
            + ", ".join(f"`{v}`" for v in SIZE_VARS) + ".", ""]
    return "\n".join(out)


def source_tree(module: str, root: Optional[str] = None) -> Optional[str]:
    """The checkout a generator (``python -m MODULE``) writes into: ``root``, by default the
    one this file is in; None, after one line on stderr, where that is no source tree (an
    installed copy has none: the generators raised FileNotFoundError there)."""
    if root is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if all(os.path.isdir(os.path.join(root, d)) for d in ("native", "docs")):
        return root
    sys.stderr.write(f"corecast: error: {root} is not corecast's source tree: run "
                     f"PYTHONPATH=src python -m {module} in a checkout\n")
    return None


def main(argv: Sequence[str] = (), root: Optional[str] = None) -> int:
    """Rewrite native/settings.h and docs/environment.md from the table (``root``: the
    source tree, by default the one this file is in)."""
    root = source_tree("corecast.io.settings", root)
    if root is None:
        return 2
    for rel, text in (("native/settings.h", c_header()), ("docs/environment.md", markdown())):
        with open(os.path.join(root, rel), "w") as f:  # the source tree's: run from src/
            f.write(text)
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
