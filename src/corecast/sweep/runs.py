"""One run of the program under the preload library, and what it recorded."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ..errors import InputError
from ..io.fileio import read_bytes, read_tail
from ..io.stallplugin import read_stall
from .inputs import THREAD_ENV, Launch, PluginSpec, substitute

MAX_REASON = 200  # characters of the program's last stderr line kept in a failure reason


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
    from ..runtime.ranks import collect_runs

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
    from ..runtime.samples import read_recording

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
    from ..placement import cpus_for, omp_env
    from ..runtime.launcher import preload_env

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

    def child_setup() -> None:  # in the child, between fork and exec
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # the program gets the mask we had
        if mask and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, mask)

    start_wall = time.time()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        start = time.perf_counter()
        # Ctrl-C is held while the child starts: a KeyboardInterrupt inside Popen would
        # leave a child in its own session that nobody kills.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    preexec_fn=child_setup, start_new_session=True)
        except OSError as exc:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            return RunResult(threads, False, reason=f"cannot execute: {exc.strerror or exc}")
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a Ctrl-C held meanwhile arrives here
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
