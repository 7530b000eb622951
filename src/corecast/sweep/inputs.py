"""What a sweep runs: thread counts, the command and its MPI launcher (its stall plugins:
``io.stallplugin``)."""
from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from ..errors import InputError
from ..model.machine.sysfs import allowed_cpus
from ..model.scaling import MAX_COUNT, over_max_count
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


def parse_threads(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``: whole numbers >= 1, no repeats, returned ascending."""
    items = [i.strip() for i in text.split(",")]
    if not text.strip() or any(not i for i in items):
        raise InputError(f"--threads {text!r} is not a comma-separated list of counts like 1,2,4")
    counts = []
    for item in items:
        # ASCII digits only: int() also reads '1_0' as 10 and other scripts' digits.
        if not re.fullmatch(r"\+?[0-9]+", item):
            raise InputError(f"--threads: {item!r} is not a whole number")
        n = int(item)
        if n < 1:
            raise InputError(f"--threads: {n} is below 1")
        if n > MAX_COUNT:
            raise InputError(f"--threads: {over_max_count(str(n))}")
        if n in counts:
            raise InputError(f"--threads: count {n} is listed twice (use --repeat for repetitions)")
        counts.append(n)
    return sorted(counts)


def default_counts() -> list[int]:
    return list(range(1, len(allowed_cpus()) + 1))


def default_upto(counts: Iterable[int]) -> int:
    return max(MIN_DEFAULT_UPTO, min(2 * max(counts), MAX_COUNT))


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
    try:  # what bash would say: a folder or a missing path is not "command not found"
        exe = launcher.find_program(name, os.environ.get("PATH"))
    except launcher.LaunchError as exc:
        raise InputError(str(exc)) from None
    why = launcher.exec_failure(name, exe, launcher.unrunnable(exe))
    if why is not None:
        raise InputError(str(why))
    reason = launcher.why_not_preloadable(exe)
    if reason:
        raise InputError(f"{name} {reason}; corecast cannot measure it")
    try:
        launcher.library_path()
    except launcher.LaunchError as exc:
        raise InputError(str(exc)) from None
    return exe
