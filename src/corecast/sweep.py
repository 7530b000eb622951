"""``corecast sweep``: run a program at several thread counts, measure, extrapolate.

Each run goes through the preload library (``CORECAST_OUTPUT`` to a temporary file,
``CORECAST_QUIET=1``, ``CORECAST_TARGET`` = the prediction horizon) and is confined to
``n`` of the CPUs this process may use, chosen by ``--placement`` (``corecast.placement``;
``os.sched_setaffinity`` in the child, and ``OMP_PLACES``/``OMP_PROC_BIND`` for OpenMP),
so a pthreads program cannot spread over more cores than the count says.  The count reaches
the program through ``OMP_NUM_THREADS`` (openmp), ``POCL_CPU_MAX_CU_COUNT`` and the legacy
``POCL_MAX_PTHREAD_COUNT`` (opencl) and a
``{threads}`` placeholder anywhere in the command (every runtime).

Per count: the median wall time of the repetitions (``time.perf_counter`` around the
run), the spread (half the range) and, per stall category, the median over repetitions
of the ``stalls_s`` of the run's process lines summed over its processes.  Categories
that are zero at every count are left out.  Stall plugins (``--stall-plugin``) add
categories read from the program's stdout, stderr or a file.

Extrapolation: the time with ``corecast.predict(method="auto", stalls=...)``; every stall
category with ESTIMA's per-category extrapolation (method ``estima``, which needs
``estima.MIN_POINTS`` counts), or with fewer counts with ``auto`` on the category as a
curve; the future bottleneck is the category with the largest predicted stall at the
horizon; the preferred count is the time prediction's.

``run_sweep(...)`` returns the JSON object ``--json-out`` writes (the contract
``corecast.sweepviz`` consumes)::

    {"measured": [{"threads": n, "time_s": t, "spread_s": d, "stalls_s": {category: s}}],
     "predictions": [{"threads": n, "value": v, "low": l, "high": h, "speedup": s}],
     "stall_predictions": {category: [{"threads": n, "value": v}]},
     "preferred_threads": k, "bottleneck": category, "command": [...], "runtime": "...",
     "warnings": [...], "failed": [{"threads": n, "reason": "..."}],
     "placement": {"policy": "compact", "omp_places": true, "cpus": {"n": [cpu, ...]}},
     "regions": [{"name": "main._omp_fn.0", "share": s, "measured": [...], "predictions": [...],
                  "stall_predictions": {...}, "preferred_threads": k, "bottleneck": category,
                  "warnings": [...]}]}

Each ``measured`` entry also lists its ``cpus``.  ``regions`` holds every OpenMP region
taking at least ``MIN_REGION_SHARE`` of the run at some count, its own time (from the
runs' JSON Lines, read with ``runtime.samples``) extrapolated like the whole program's.

``preferred_threads`` and ``bottleneck`` are null, ``predictions`` and
``stall_predictions`` empty, when nothing could be predicted.

MPI rank sweeps (``launcher``, e.g. ``"mpirun -np {ranks}"``): the count is the number of
ranks, ``{ranks}`` in the launcher (and in the command) says where it goes, and each rank
runs under ``corecast run`` with its own JSON Lines.  No CPU confinement (the launcher
places the ranks); ``threads`` (one count) sets ``OMP_NUM_THREADS`` and ``{threads}`` for
hybrid programs.  The time per run is the slowest rank's MPI phase (its wall time less
``MPI_Init`` and ``MPI_Finalize``, as ``corecast merge`` computes it; the launcher's own
start-up is left out), the stall columns are the MPI waits summed over ranks, and the time
is extrapolated with the regression method (compute/wait split; ``auto`` below 3 counts).
The result has the same keys (the count under ``"threads"``) plus ``"count": "ranks"``,
``"launcher"`` and ``"threads_per_rank"``.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from .entities import InputError
from .fileio import parse_json, printable, read_bytes, read_tail, read_text, write_file
from .runtime.abi import STALLS
from .stallplugin import REDUCERS, read_stall

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
MIN_COUNTS = 2  # successful counts needed to predict anything
PLUGIN_SOURCES = ("stdout", "stderr", "file")
PLUGIN_KEYS = {"name", "source", "path", "pattern", "reducer"}
MAX_REASON = 200  # characters of the program's last stderr line kept in a failure reason
MIN_REGION_SHARE = 0.05  # regions taking less of the run are not extrapolated on their own


class SweepError(InputError):
    """A one-line reason the sweep cannot start or cannot predict.

    ``result`` is the (partial) result object when the runs were made, so the caller can
    still write and print what was measured.
    """

    def __init__(self, message: str, result: Optional[dict] = None):
        super().__init__(message)
        self.result = result


# ---------------------------------------------------------------- inputs


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


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, ascending."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


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
    from .runtime import launcher

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


# ---------------------------------------------------------------- one run


@dataclass
class RunResult:
    threads: int
    ok: bool
    time_s: float = 0.0
    reason: str = ""
    active: bool = False  # the preload library wrote at least one line
    stalls: dict = field(default_factory=dict)  # category -> seconds summed over processes
    plugin_values: dict = field(default_factory=dict)  # plugin name -> value (matched ones)
    plugin_errors: dict = field(default_factory=dict)  # plugin name -> why it gave no value
    regions: dict = field(default_factory=dict)  # region name -> (own wall s, stalls_s), summed over processes


def _describe_exit(status: int, stderr_path: Path) -> str:
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        reason = f"killed by {name}"
    else:
        reason = f"exit status {status}"
    try:  # only the end: a program's stderr may be larger than any input limit
        text = read_tail(stderr_path, 1 << 16).decode("utf-8", errors="replace")
    except InputError:
        text = ""
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    if last:
        if len(last) > MAX_REASON:
            last = last[: MAX_REASON - 3] + "..."
        reason += f": {last}"
    return reason


def read_jsonl(path: Path) -> tuple[bool, dict]:
    """(any line written, stalls_s summed over the process lines) of one run's output;
    InputError when it cannot be read whole (e.g. larger than the input limit)."""
    stalls: dict[str, float] = {}
    active = False
    text = read_bytes(path).decode("utf-8", errors="replace")
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed process
        if not isinstance(obj, dict):
            continue
        active = True
        if obj.get("event") != "process":
            continue
        for k, v in (obj.get("stalls_s") or {}).items():
            if isinstance(v, (int, float)) and math.isfinite(v):
                stalls[k] = stalls.get(k, 0.0) + float(v)
    return active, stalls


def read_ranks(paths: Sequence[Path], wall: float) -> tuple[bool, dict, float]:
    """A rank sweep's run: (any line written, stalls summed over all ranks, the slowest
    rank's MPI phase, or ``wall`` when no rank recorded one)."""
    from .runtime.ranks import collect_runs

    active, stalls = False, {}
    for p in paths:
        a, s = read_jsonl(p)
        active = active or a
        for k, v in s.items():
            stalls[k] = stalls.get(k, 0.0) + v
    if not active:
        return False, stalls, wall
    try:
        runs, _ = collect_runs([str(p) for p in paths])
    except InputError:  # no rank records (not an MPI program): the launcher's wall time
        return active, stalls, wall
    phase = max(r.time_s for r in runs)
    return active, stalls, phase if phase > 0 else wall


def read_regions(path: Path) -> dict[str, tuple[float, dict]]:
    """Each region's own wall time and stalls in one run's JSON Lines, summed over the
    processes (read with ``runtime.samples.read_recording``, as ``corecast replay``
    reads them); {} when the run recorded no region."""
    from .runtime.samples import read_recording

    try:
        procs = read_recording(str(path))
    except InputError:
        return {}
    out: dict[str, tuple[float, dict]] = {}
    for proc in procs:
        for r in proc.regions:
            if r["name"] == "process":
                continue
            wall, stalls = out.get(r["name"], (0.0, {}))
            for k, v in r["stalls_s"].items():
                stalls[k] = stalls.get(k, 0.0) + v
            out[r["name"]] = (wall + r["wall_s"], stalls)
    return out


def run_once(
    command: Sequence[str],
    threads: int,
    runtime: str,
    cpus: Sequence[int],
    upto: int,
    workdir: Path,
    timeout: float,
    plugins: Sequence[PluginSpec] = (),
    launch: Optional[Launch] = None,
    placement: str = "none",
) -> RunResult:
    """Run ``command`` once at ``threads`` (ranks with ``launch``) under the preload library,
    on the first ``threads`` CPUs of ``cpus`` (in the ``placement`` policy's order)."""
    from .placement import cpus_for, omp_env
    from .runtime.launcher import preload_env

    out_path, err_path, json_path = (workdir / f"{threads}.{k}" for k in ("out", "err", "jsonl"))
    rank_paths = workdir / f"{threads}.rank-{{rank}}.jsonl"
    for p in [out_path, err_path, json_path, *workdir.glob(f"{threads}.rank-*.jsonl")]:
        p.unlink(missing_ok=True)
    json_path.touch()
    if launch is None:
        argv = substitute(command, threads)
        env = preload_env(dict(os.environ), target=upto, json_out=str(json_path), quiet=True)
        for name in THREAD_ENV.get(runtime, ()):
            env[name] = str(threads)
        mask = cpus_for(threads, cpus)
        if placement != "none" and runtime == "openmp" and threads <= len(cpus):
            env.update(omp_env(mask))
    else:  # the launcher is not preloaded, and places the ranks itself
        argv = launch.argv(command, threads, rank_paths, upto)
        env = dict(os.environ)
        if launch.threads:
            env["OMP_NUM_THREADS"] = str(launch.threads)
        mask = None

    def confine() -> None:  # in the child, between fork and exec
        os.sched_setaffinity(0, mask)

    start_wall = time.time()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    preexec_fn=confine if mask and hasattr(os, "sched_setaffinity") else None,
                                    start_new_session=True)
        except OSError as exc:
            return RunResult(threads, False, reason=f"cannot execute: {exc.strerror or exc}")
        try:
            status = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return RunResult(threads, False, reason=f"timed out after {timeout:g} s")
        except BaseException:  # Ctrl-C: leave no orphan behind
            _kill_group(proc)
            raise
        elapsed = time.perf_counter() - start
    if status != 0:
        return RunResult(threads, False, reason=_describe_exit(status, err_path))
    try:
        if launch is None:
            active, stalls = read_jsonl(json_path)
        else:
            active, stalls, elapsed = read_ranks(sorted(workdir.glob(f"{threads}.rank-*.jsonl")), elapsed)
    except InputError as exc:
        return RunResult(threads, False, reason=f"its corecast output: {exc}")
    values, errors = {}, {}
    for plug in plugins:
        try:
            if plug.source == "file":
                path = Path(plug.file_for(threads))
                # A file left over from an earlier run is not this run's report.
                if not path.is_file() or path.stat().st_mtime < start_wall - 1.0:
                    raise InputError(f"{path} was not written by the run")
                values[plug.name] = read_stall(plug.pattern, plug.reducer, path=path)
            else:
                text = read_bytes(out_path if plug.source == "stdout" else err_path).decode(
                    "utf-8", errors="replace")
                values[plug.name] = read_stall(plug.pattern, plug.reducer, text=text)
        except (InputError, OSError) as exc:
            errors[plug.name] = str(exc)
    return RunResult(threads, True, elapsed, active=active, stalls=stalls,
                     plugin_values=values, plugin_errors=errors, regions=read_regions(json_path))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


# ---------------------------------------------------------------- the sweep


def _progress_bar(total: int, enabled: bool):
    """A tqdm bar on stderr when it is a terminal, else None."""
    if not enabled or not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    tqdm.monitor_interval = 0  # no monitor thread: the children are forked with preexec_fn
    return tqdm(total=total, file=sys.stderr, unit="run", leave=False, dynamic_ncols=True)


def run_sweep(
    command: Sequence[str],
    threads: Optional[Sequence[int]] = None,
    repeat: int = DEFAULT_REPEAT,
    upto: Optional[int] = None,
    runtime: str = "openmp",
    plugins: Sequence[PluginSpec] = (),
    timeout: float = DEFAULT_TIMEOUT_S,
    progress: bool = False,
    launch: Optional[Launch] = None,
    placement: str = "compact",
) -> dict:
    """Run ``command`` ``repeat`` times at each count in ``threads`` (rank counts with
    ``launch``) and predict.

    Returns the result object (see the module docstring).  Raises ``SweepError`` before
    any run for bad input or a command that cannot be run, and after the runs (with
    ``.result`` set) when fewer than 2 counts succeeded or no run showed parallel activity.
    """
    command = list(command)
    if runtime not in RUNTIMES:
        raise SweepError(f"unknown runtime {runtime!r}; use {', '.join(RUNTIMES)}")
    if repeat < 1:
        raise SweepError(f"--repeat must be at least 1, got {repeat}")
    if not (timeout > 0 and math.isfinite(timeout)):
        raise SweepError(f"--timeout must be a positive number of seconds, got {timeout}")
    if launch is not None and not threads:
        raise SweepError("a rank sweep needs its rank counts (--ranks 1,2,4)")
    counts = sorted(set(threads)) if threads else default_counts()
    if any(int(n) != n or n < 1 for n in counts):
        raise SweepError(f"{'rank' if launch else 'thread'} counts must be whole numbers >= 1")
    counts = [int(n) for n in counts]
    from .prediction import MAX_COUNT

    if upto is not None and not 1 <= upto <= MAX_COUNT:
        raise SweepError(f"--upto must be between 1 and {MAX_COUNT}, got {upto}")
    try:
        check_command(command)
    except InputError as exc:
        raise SweepError(str(exc)) from None
    horizon = int(upto) if upto is not None else default_upto(counts)
    from .placement import PLACEMENTS, cpu_order, cpus_for

    if placement not in PLACEMENTS:
        raise SweepError(f"unknown placement {placement!r}; use {', '.join(PLACEMENTS)}")

    warnings: list[str] = []
    cpus, why = cpu_order(placement, allowed_cpus())
    if why and launch is None:
        warnings.append(why)
    over = [n for n in counts if n > len(cpus) and launch is None]
    if over:
        warnings.append(f"{'counts' if len(over) > 1 else 'count'} {', '.join(map(str, over))} "
                        f"{'exceed' if len(over) > 1 else 'exceeds'} the {len(cpus)} CPUs this process "
                        f"may use: {'they' if len(over) > 1 else 'it'} ran oversubscribed on all {len(cpus)}")
    if runtime == "pthreads" and launch is None and not any(PLACEHOLDER in a for a in command):
        warnings.append("the command has no {threads} placeholder: with --runtime pthreads only the "
                        "CPUs the program may use change with the count")

    runs: dict[int, list[RunResult]] = {n: [] for n in counts}
    failed: dict[int, str] = {}
    bar = _progress_bar(len(counts) * repeat, progress)
    try:
        with tempfile.TemporaryDirectory(prefix="corecast-sweep-") as tmp:
            # Repetitions round-robin over the counts, so slow drift (other load, clock
            # changes) spreads over all counts instead of biasing one.
            for rep in range(repeat):
                for n in counts:
                    if n in failed:
                        continue
                    if bar is not None:
                        bar.set_description(f"{n} {'rank' if launch else 'thread'}{'s' if n != 1 else ''}, "
                                            f"run {rep + 1}/{repeat}")
                    r = run_once(command, n, runtime, cpus, horizon, Path(tmp), timeout, plugins, launch,
                                 placement)
                    if r.ok:
                        runs[n].append(r)
                    else:
                        failed[n] = r.reason
                        if bar is not None:
                            bar.update(repeat - rep - 1)  # its remaining repetitions are skipped
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()

    ok = [n for n in counts if n not in failed and runs[n]]
    result = _empty_result(command, runtime, warnings, failed)
    if launch is not None:
        result.update(count="ranks", launcher=list(launch.words), threads_per_rank=launch.threads)
    else:
        result["placement"] = {"policy": placement, "omp_places": placement != "none" and runtime == "openmp",
                               "cpus": {str(n): cpus_for(n, cpus) for n in counts}}

    # Plugin categories: a pattern that never matched is skipped with a warning.
    all_runs = [r for n in ok for r in runs[n]]
    plugin_names = []
    for plug in plugins:
        hits = sum(1 for r in all_runs if plug.name in r.plugin_values)
        if all_runs and hits == 0:
            why = next((r.plugin_errors[plug.name] for r in all_runs if plug.name in r.plugin_errors), "")
            warnings.append(f"stall plugin {plug.name!r} matched in no run ({why}); category skipped")
        elif hits < len(all_runs):
            warnings.append(f"stall plugin {plug.name!r} matched in {hits} of {len(all_runs)} runs; "
                            "0 is used for the others")
            plugin_names.append(plug.name)
        else:
            plugin_names.append(plug.name)

    def run_stalls(r: RunResult) -> dict:
        s = dict(r.stalls)
        for name in plugin_names:
            s[name] = s.get(name, 0.0) + r.plugin_values.get(name, 0.0)
        return s

    per_count = {n: [run_stalls(r) for r in runs[n]] for n in ok}
    categories = sorted({k for rows in per_count.values() for s in rows for k in s})
    medians = {n: {k: float(statistics.median([s.get(k, 0.0) for s in per_count[n]])) for k in categories}
               for n in ok}
    # Keep the categories that are non-zero at some count, largest first.
    categories = [k for k in categories if any(medians[n][k] > 0 for n in ok)]
    categories.sort(key=lambda k: (-max(medians[n][k] for n in ok), k))
    for n in ok:
        times = [r.time_s for r in runs[n]]
        result["measured"].append({
            "threads": n,
            "time_s": float(statistics.median(times)),
            "spread_s": float((max(times) - min(times)) / 2.0),
            "stalls_s": {k: medians[n][k] for k in categories},
            "cpus": cpus_for(n, cpus),
        })

    if len(ok) < MIN_COUNTS:
        if failed:
            worst = min(failed)
            message = (f"only {len(ok)} of {len(counts)} counts succeeded, a prediction needs "
                       f"{MIN_COUNTS} (at {worst} thread{'s' if worst != 1 else ''}: {failed[worst]})")
        else:
            message = f"a prediction needs at least {MIN_COUNTS} counts; add some with --threads"
        raise SweepError(message, result)
    if not any(r.active for r in all_runs):
        warnings.append("no parallel activity detected in any run (the preload library wrote nothing: "
                        "the program ran no OpenMP region and no pthreads synchronisation); nothing predicted")
        raise SweepError("no parallel activity detected in any run; nothing predicted", result)

    try:
        _extrapolate(result, {n: [r.time_s for r in runs[n]] for n in ok}, ok, categories, per_count, horizon,
                     ranks=launch is not None)
    except InputError as exc:
        result.update(predictions=[], stall_predictions={}, preferred_threads=None, bottleneck=None)
        raise SweepError(f"cannot predict from the measurements: {exc}", result) from None
    result["regions"] = _regions(runs, ok, result["measured"], horizon)
    return result


def _regions(runs: dict, ok: list[int], measured: list[dict], horizon: int) -> list[dict]:
    """Each OpenMP region taking at least ``MIN_REGION_SHARE`` of the run (at some count),
    extrapolated like the whole program from its own time per count."""
    run_time = {m["threads"]: m["time_s"] for m in measured}
    names = sorted({name for n in ok for r in runs[n] for name in r.regions})
    out = []
    for name in names:
        at = [n for n in ok if all(name in r.regions for r in runs[n])]
        if not at:
            continue
        times = {n: [r.regions[name][0] for r in runs[n]] for n in at}
        share = max(statistics.median(times[n]) / run_time[n] for n in at)
        if share < MIN_REGION_SHARE:
            continue
        per_count = {n: [dict(r.regions[name][1]) for r in runs[n]] for n in at}
        categories = sorted({k for n in at for s in per_count[n] for k, v in s.items() if v > 0})
        region = {"name": name, "share": float(share), "measured": [
            {"threads": n, "time_s": float(statistics.median(times[n])),
             "spread_s": float((max(times[n]) - min(times[n])) / 2.0),
             "stalls_s": {k: float(statistics.median([s.get(k, 0.0) for s in per_count[n]])) for k in categories}}
            for n in at], "predictions": [], "stall_predictions": {}, "preferred_threads": None,
            "bottleneck": None, "warnings": []}
        if len(at) < MIN_COUNTS or min(statistics.median(times[n]) for n in at) <= 0:
            region["warnings"].append(f"measured at {len(at)} count(s) with a positive time; not predicted")
        else:
            try:
                _extrapolate(region, times, at, categories, per_count, horizon)
            except InputError as exc:
                region["warnings"].append(f"cannot predict: {exc}")
        out.append(region)
    out.sort(key=lambda r: -r["share"])
    return out


def _empty_result(command: list[str], runtime: str, warnings: list[str], failed: dict[int, str]) -> dict:
    return {
        "measured": [],
        "predictions": [],
        "stall_predictions": {},
        "preferred_threads": None,
        "bottleneck": None,
        "command": list(command),
        "runtime": runtime,
        "warnings": warnings,
        "failed": [{"threads": n, "reason": failed[n]} for n in sorted(failed)],
        "regions": [],
    }


def _extrapolate(result: dict, times_at: dict, ok: list[int], categories: list[str],
                 per_count: dict, horizon: int, ranks: bool = False) -> None:
    """Predictions of ``times_at`` (count -> the repetitions' times) and of each stall
    category into ``result`` (the whole program's, or one region's; ``ranks``: over rank
    counts)."""
    from .methods.estima import MIN_POINTS
    from .prediction import predict
    from .runtime.ranks import WAITS

    warnings = result["warnings"]
    counts = [n for n in ok for _ in times_at[n]]
    times = [t for n in ok for t in times_at[n]]
    stalls = {k: [s.get(k, 0.0) for n in ok for s in per_count[n]] for k in categories}
    method = "auto"
    if ranks:
        # Over ranks only the MPI waits are the communication the regression splits off (the
        # library's helper threads' waits are not); the regression needs 3 counts.
        categories[:] = [k for k in categories if k in WAITS]
        stalls = {k: stalls[k] for k in categories}
        if len(ok) >= 3:
            method = "regression"
        else:
            warnings.append("the regression over rank counts needs 3 counts: time extrapolated with auto")
    pred = predict(counts, times, metric="time", upto=horizon, method=method, stalls=stalls or None)
    if ranks:
        result["basis"] = pred.reason
    warnings.extend(pred.warnings)
    result["predictions"] = [
        {"threads": int(n), "value": float(v), "low": float(lo), "high": float(hi), "speedup": float(s)}
        for n, v, lo, hi, s in zip(pred.counts, pred.values, pred.low, pred.high, pred.speedup)
    ]
    result["preferred_threads"] = int(pred.preferred)

    grid = [int(n) for n in pred.counts]
    curves: dict[str, list[float]] = {}
    if categories and len(ok) >= MIN_POINTS:
        try:
            est = predict(counts, times, metric="time", upto=horizon, method="estima", stalls=stalls)
            warnings.extend(w for w in est.warnings if w not in warnings)
            ecounts = [int(c) for c in est.extras["counts"]]
            for k in categories:
                values = dict(zip(ecounts, est.extras["categories"][k]["values"]))
                curves[k] = [float(values[n]) for n in grid]
        except (InputError, KeyError, ValueError, FloatingPointError) as exc:
            # ESTIMA as a whole can fail at translating stalls to time; its first step,
            # extrapolating each category, does not depend on that.
            curves = _estima_categories(ok, per_count, categories, grid)
            how = ("its per-category extrapolation was used on its own" if curves
                   else "each category was extrapolated with auto instead")
            warnings.append(f"ESTIMA failed ({exc}); {how}")
    elif categories:
        warnings.append(f"ESTIMA needs {MIN_POINTS} measured counts, the sweep has {len(ok)}: each stall "
                        "category was extrapolated on its own with method auto (rough)")
    for k in categories:
        if k not in curves:
            medians = [statistics.median([s.get(k, 0.0) for s in per_count[n]]) for n in ok]
            curves[k] = _category_curve(ok, medians, grid, horizon, k, warnings)
    result["stall_predictions"] = {
        k: [{"threads": n, "value": max(0.0, float(v))} for n, v in zip(grid, curves[k])] for k in categories
    }
    if categories:
        at_end = {k: curves[k][-1] for k in categories}
        top = max(at_end, key=lambda k: at_end[k])
        result["bottleneck"] = top if at_end[top] > 0 else None


def _estima_categories(ok: list[int], per_count: dict, categories: list[str],
                       grid: list[int]) -> dict[str, list[float]]:
    """ESTIMA's step 1 (``estima.extrapolate_stall``) on each category's medians; {} on failure."""
    import numpy as np

    from .methods.estima import extrapolate_stall

    n = np.array(ok, dtype=float)
    medians = {k: np.array([statistics.median([s.get(k, 0.0) for s in per_count[c]]) for c in ok])
               for k in categories}
    scale = max(float(v.max()) for v in medians.values())
    q = np.array(grid, dtype=float)
    try:
        return {k: [float(v) for v in extrapolate_stall(n, y, float(max(grid)), scale)(q)]
                for k, y in medians.items()}
    except (InputError, ValueError, FloatingPointError):
        return {}


def _category_curve(ok: list[int], values: list[float], grid: list[int], horizon: int,
                    name: str, warnings: list[str]) -> list[float]:
    """One stall category extrapolated with ``auto`` as a time-like curve.

    As in ESTIMA, only the positive points are fitted and the category is 0 below the
    first of them (a lock wait is 0 at one thread).  Within the measured range the
    measurements are interpolated linearly; beyond it auto's curve is scaled to pass
    through the last measured value (a two-point auto fit is Amdahl's law alone, which
    cannot follow a wait that grows, so there the category is held at its last value).
    With one positive point the category is held flat beyond it.
    """
    from .prediction import predict

    top = max(values)
    pos = [(n, v) for n, v in zip(ok, values) if v > 1e-6 * top]
    first, last_n, last_v = pos[0][0], ok[-1], values[-1]
    if len(pos) < 2:
        warnings.append(f"stall category {name!r} is positive at one count only: held flat beyond it")
        ahead = {n: last_v for n in grid}
    else:
        try:
            p = predict([n for n, _ in pos], [v for _, v in pos], metric="time",
                        upto=max(horizon, last_n), method="auto")
            fitted = dict(zip((int(c) for c in p.counts), (float(v) for v in p.values)))
            scale = last_v / fitted[last_n] if fitted[last_n] > 0 else 0.0
            ahead = {n: fitted[n] * scale for n in grid if n > last_n}
        except (InputError, ValueError, FloatingPointError) as exc:
            warnings.append(f"stall category {name!r} could not be extrapolated ({exc}): held flat")
            ahead = {n: last_v for n in grid}
    out = []
    for n in grid:
        if n < first:
            out.append(0.0)
        elif n > last_n:
            out.append(ahead[n])
        else:
            out.append(float(_interp(n, ok, values)))
    return out


def _interp(n: float, xs: Sequence[int], ys: Sequence[float]) -> float:
    import numpy as np

    return float(np.interp(n, xs, ys))


# ---------------------------------------------------------------- report


def _num(x: float) -> str:
    from .report import _num as num

    return num(x)


def format_sweep(result: dict, max_rows: int = 24) -> str:
    """The terminal report: measured counts, predicted counts, preferred count,
    future bottleneck, failed counts and warnings."""
    from .report import _align

    unit = result.get("count", "threads")  # "ranks" for MPI rank sweeps
    launcher = " ".join(result.get("launcher") or [])
    lines = [f"corecast sweep ({'mpi: ' + launcher if launcher else result['runtime']}): "
             f"{' '.join(result['command'])}", ""]
    if result["measured"]:
        header = [unit, "time (s)", "spread (s)", f"top stalls (s, summed over {unit})"]
        rows = []
        for m in result["measured"]:
            top = sorted(m["stalls_s"].items(), key=lambda kv: -kv[1])[:3]
            rows.append([str(m["threads"]), _num(m["time_s"]), _num(m["spread_s"]),
                         ", ".join(f"{k} {_num(v)}" for k, v in top if v > 0)])
        lines += ["measured:"] + _align([header] + rows) + [""]
    preds = result["predictions"]
    if preds:
        measured = {m["threads"] for m in result["measured"]}
        pref = result["preferred_threads"]
        shown = preds
        if len(preds) > max_rows:
            last = preds[-1]["threads"]
            shown = [p for p in preds if p["threads"] in measured or p["threads"] in (pref, last, 1)
                     or (p["threads"] & (p["threads"] - 1)) == 0]
        stall_at = {k: {r["threads"]: r["value"] for r in rows}
                    for k, rows in result["stall_predictions"].items()}
        bottleneck = result["bottleneck"]
        header = [unit, "time (s)", "band low..high", "speedup"]
        if bottleneck:
            header.append(f"{bottleneck} (s)")
        header.append("")
        rows, prev = [], None
        for p in shown:
            n = p["threads"]
            if prev is not None and n != prev + 1:
                rows.append(["..."] + [""] * (len(header) - 1))
            prev = n
            row = [str(n), _num(p["value"]), f"{_num(p['low'])}..{_num(p['high'])}", f"{p['speedup']:.2f}"]
            if bottleneck:
                row.append(_num(stall_at[bottleneck][n]))
            row.append(", ".join(label for label, hit in (("measured", n in measured), ("preferred", n == pref))
                                 if hit))
            rows.append(row)
        lines += ["predicted:"] + _align([header] + rows) + [""]
        best = next(p for p in preds if p["threads"] == pref)
        lines.append(f"preferred count: {pref} (predicted time {_num(best['value'])} s, "
                     f"speedup {best['speedup']:.2f})")
        if bottleneck:
            horizon = preds[-1]["threads"]
            ranked = sorted(((rows[-1]["value"], k) for k, rows in result["stall_predictions"].items()),
                            reverse=True)[:3]
            lines.append(f"future bottleneck at {horizon} {unit}: {bottleneck} (predicted "
                         + ", ".join(f"{k} {_num(v)} s" for v, k in ranked) + ")")
        else:
            lines.append("future bottleneck: none (no stall category is predicted to grow)")
    lines += _region_lines(result)
    place = result.get("placement")
    if place:
        lines.append(f"placement {place['policy']}" + (" (OMP_PLACES, OMP_PROC_BIND=close)" if place["omp_places"] else "")
                     + ": " + "; ".join(f"{n}: {_cpulist(c)}" for n, c in place["cpus"].items()))
    for f in result["failed"]:
        lines.append(f"failed at {f['threads']} {unit[:-1]}{'s' if f['threads'] != 1 else ''}: {f['reason']}")
    if result.get("basis"):
        lines.append(f"model: {result['basis']}")
    lines += [f"warning: {w}" for w in result["warnings"]]
    return "\n".join(printable(line) for line in lines) + "\n"  # command, categories, stderr


def _cpulist(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the kernel's cpulist notation)."""
    parts, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            parts.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(parts)


def _region_lines(result: dict) -> list[str]:
    """One row per extrapolated region: its share, measured and predicted time, preferred
    count and future bottleneck."""
    from .report import _align

    regions = result.get("regions") or []
    if not regions:
        return []
    horizon = result["predictions"][-1]["threads"] if result["predictions"] else None
    header = ["region", "share", "measured (s) at " + ",".join(str(m["threads"]) for m in result["measured"]),
              f"predicted at {horizon} (s)" if horizon else "predicted (s)", "speedup", "preferred", "bottleneck"]
    rows = []
    for r in regions:
        at = {m["threads"]: m["time_s"] for m in r["measured"]}
        last = r["predictions"][-1] if r["predictions"] else None
        rows.append([r["name"], f"{r['share']:.0%}",
                     " ".join(_num(at[m["threads"]]) if m["threads"] in at else "-" for m in result["measured"]),
                     _num(last["value"]) if last else "-", f"{last['speedup']:.2f}" if last else "-",
                     str(r["preferred_threads"] or "-"), r["bottleneck"] or "none"])
    lines = ["", f"regions taking at least {MIN_REGION_SHARE:.0%} of the run (own time, summed over processes):"]
    lines += _align([header + [""] for header in [header]] + [row + [""] for row in rows])
    lines += [f"warning: region {r['name']}: {w}" for r in regions for w in r["warnings"]]
    return lines


def write_json(result: dict, path: str) -> None:
    """The result as one line of JSON (ASCII: non-ASCII text as \\u escapes)."""
    write_file(path, json.dumps(result, allow_nan=False) + "\n")
