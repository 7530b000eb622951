"""What a sweep runs: thread counts, stall plugins, the command and its MPI launcher."""
from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..errors import InputError
from ..io.fileio import parse_json, read_text
from ..model.machine.sysfs import allowed_cpus
from ..recording.abi import STALLS
from ..io.stallplugin import REDUCERS
from ..io.sweepresult import SweepError

RUNTIMES = ("openmp", "pthreads", "opencl")
# pocl 4 reads POCL_CPU_MAX_CU_COUNT (its compute units); POCL_MAX_PTHREAD_COUNT is the
# name pocl before 4 reads (and 4 still honours with a deprecation note): both are set.
THREAD_ENV = {"openmp": ("OMP_NUM_THREADS",), "opencl": ("POCL_CPU_MAX_CU_COUNT", "POCL_MAX_PTHREAD_COUNT")}
PLACEHOLDER = "{threads}"
RANKS_PLACEHOLDER = "{ranks}"
DEFAULT_REPEAT = 3
DEFAULT_TIMEOUT_S = 600.0
# Default horizon: twice the largest measured count, but at least this (a sweep on a
# small machine is usually run to ask about a bigger one).
MIN_DEFAULT_UPTO = 16
PLUGIN_SOURCES = ("stdout", "stderr", "file")
PLUGIN_KEYS = {"name", "source", "path", "pattern", "reducer"}


def parse_threads(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``: whole numbers >= 1, no repeats, returned ascending."""
    items = [i.strip() for i in text.split(",")]
    if not text.strip() or any(not i for i in items):
        raise InputError(f"--threads {text!r} is not a comma-separated list of counts like 1,2,4")
    counts = []
    for item in items:
        try:
            n = int(item)
        except ValueError:
            raise InputError(f"--threads: {item!r} is not a whole number") from None
        if n < 1:
            raise InputError(f"--threads: {n} is below 1")
        if n in counts:
            raise InputError(f"--threads: count {n} is listed twice (use --repeat for repetitions)")
        counts.append(n)
    return sorted(counts)


def default_counts() -> list[int]:
    return list(range(1, len(allowed_cpus()) + 1))


def default_upto(counts: Iterable[int]) -> int:
    return max(MIN_DEFAULT_UPTO, 2 * max(counts))


@dataclass(frozen=True)
class PluginSpec:
    """One ``--stall-plugin`` entry: an extra stall category read after every run."""

    name: str
    source: str  # stdout | stderr | file
    pattern: str
    reducer: str = "sum"
    path: Optional[str] = None  # source "file"; may contain {threads}

    def file_for(self, threads: int) -> str:
        return (self.path or "").replace(PLACEHOLDER, str(threads))


def parse_plugins(entries: object, origin: str = "stall plugin") -> list[PluginSpec]:
    """Validate decoded plugin declarations (a list of objects, or ``{"plugin": [...]}``)."""
    if isinstance(entries, dict):
        keys = [k for k in ("plugin", "plugins") if k in entries]
        if len(keys) != 1 or len(entries) != 1:
            raise InputError(f"{origin}: expected a list of plugins, or one 'plugin' list")
        entries = entries[keys[0]]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{origin}: expected a non-empty list of plugins")
    taken = set(STALLS)
    out: list[PluginSpec] = []
    for i, e in enumerate(entries, 1):
        where = f"{origin}: plugin {i}"
        if not isinstance(e, dict):
            raise InputError(f"{where} is not an object")
        unknown = sorted(set(e) - PLUGIN_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(PLUGIN_KEYS))})")
        for key in ("name", "source", "pattern"):
            if not isinstance(e.get(key), str) or not e[key].strip():
                raise InputError(f"{where}: {key!r} must be a non-empty string")
        name, source, pattern = e["name"].strip(), e["source"], e["pattern"]
        where = f"{origin}: plugin {name!r}"
        if name in taken:
            raise InputError(f"{where}: the name is already a measured category or another plugin's")
        taken.add(name)
        if source not in PLUGIN_SOURCES:
            raise InputError(f"{where}: source {source!r} is not one of {', '.join(PLUGIN_SOURCES)}")
        reducer = e.get("reducer", "sum")
        if reducer not in REDUCERS:
            raise InputError(f"{where}: reducer {reducer!r} is not one of {', '.join(REDUCERS)}")
        path = e.get("path")
        if source == "file":
            if not isinstance(path, str) or not path.strip():
                raise InputError(f"{where}: source 'file' needs a 'path'")
        elif path is not None:
            raise InputError(f"{where}: 'path' is only for source 'file'")
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise InputError(f"{where}: pattern is not a valid regular expression: {exc}") from None
        if groups != 1:
            raise InputError(f"{where}: pattern must have exactly one capture group, has {groups}")
        out.append(PluginSpec(name, source, pattern, reducer, path))
    return out


def load_plugins(path: str) -> list[PluginSpec]:
    """Read a plugin file: JSON, or TOML (``[[plugin]]`` tables) where tomllib exists."""
    text = read_text(path)
    if path.lower().endswith(".toml"):
        try:
            import tomllib  # Python 3.11+
        except ImportError:
            raise InputError(f"{path}: TOML plugin files need Python 3.11+; use JSON") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path}: not valid TOML: {exc}") from None
    else:
        data = parse_json(text, path)
    return parse_plugins(data, origin=path)


def substitute(command: Sequence[str], threads: int, ranks: int | None = None) -> list[str]:
    out = [a.replace(PLACEHOLDER, str(threads)) for a in command]
    return out if ranks is None else [a.replace(RANKS_PLACEHOLDER, str(ranks)) for a in out]


@dataclass(frozen=True)
class Launch:
    """An MPI launcher for rank sweeps: its words (``{ranks}`` placeholder) and the threads
    per rank for hybrid programs (None: the program's own default)."""

    words: tuple[str, ...]
    threads: Optional[int] = None

    @classmethod
    def parse(cls, text: str, threads: Optional[int] = None) -> "Launch":
        import shlex

        try:
            words = tuple(shlex.split(text))
        except ValueError as exc:
            raise SweepError(f"--launcher: {exc}") from None
        if not words or not any(RANKS_PLACEHOLDER in w for w in words):
            raise SweepError("--launcher must hold {ranks} where the rank count goes, e.g. \"mpirun -np {ranks}\"")
        if shutil.which(words[0]) is None:
            raise SweepError(f"{words[0]}: command not found (the --launcher)")
        return cls(words, threads)

    def argv(self, command: Sequence[str], ranks: int, json_template: Path, upto: int) -> list[str]:
        """The launcher, then each rank's ``corecast run`` with its own JSON Lines."""
        wrap = [sys.executable, "-m", "corecast", "run", "--quiet", "--target", str(upto),
                "--json-out", str(json_template), "--"]
        return (substitute(self.words, ranks, ranks) + wrap
                + substitute(command, self.threads or 1, ranks))


def check_command(command: Sequence[str]) -> str:
    """The executable ``command`` runs; InputError if it cannot be found or preloaded."""
    from ..runtime import launcher

    if not command:
        raise InputError("no command given (usage: corecast sweep [options] -- CMD ARGS...)")
    name = substitute(command[:1], 1, 1)[0]
    exe = shutil.which(name)
    if exe is None:
        raise InputError(f"{name}: command not found")
    reason = launcher.why_not_preloadable(exe)
    if reason:
        raise InputError(f"{name} {reason}; corecast cannot measure it")
    try:
        launcher.library_path()
    except launcher.LaunchError as exc:
        raise InputError(str(exc)) from None
    return exe
