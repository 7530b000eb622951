"""One run of the program under the preload library, and what it recorded."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from ..errors import InputError
from ..io.fileio import read_bytes, read_tail
from ..io.stallplugin import StallPlugin
from .inputs import THREAD_ENV, Launch, substitute

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
    kernels: int = 0  # OpenCL kernels recorded, summed over processes


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


@dataclass
class RunOutput:
    """One run's JSON Lines, read as ``corecast replay`` reads them (``tools.samples``)."""

    active: bool = False  # the preload library wrote at least one line
    processes: Optional[list] = None  # tools.samples.RecordedProcess each; None: no usable records

    @property
    def stalls(self) -> dict[str, float]:
        """Each stall category's seconds in the process records, summed over the processes."""
        out: dict[str, float] = {}
        for proc in self.processes or ():
            for r in proc.regions:
                if r["name"] == "process":
                    for k, v in r["stalls_s"].items():
                        out[k] = out.get(k, 0.0) + v
        return out

    @property
    def kernels(self) -> int:
        """OpenCL kernels recorded, over the processes (an OpenCL sweep's count reaches only them)."""
        return sum(len(proc.kernels) for proc in self.processes or ())

    @property
    def regions(self) -> dict[str, tuple[float, dict]]:
        """Each region's own wall time and stalls, summed over the processes; {} when the
        run recorded no region."""
        out: dict[str, tuple[float, dict]] = {}
        for proc in self.processes or ():
            for r in proc.regions:
                if r["name"] == "process":
                    continue
                wall, stalls = out.get(r["name"], (0.0, {}))
                for k, v in r["stalls_s"].items():
                    stalls[k] = stalls.get(k, 0.0) + v
                out[r["name"]] = (wall + r["wall_s"], stalls)
        return out


def read_output(path: Path) -> RunOutput:
    """One run's output: lines a killed process cut short are skipped, and records that
    cannot be used leave no processes; InputError when the file cannot be read whole
    (e.g. larger than the input limit)."""
    from ..io.readers.recording import json_lines
    from ..tools.samples import processes

    lines = list(json_lines(str(path), cut_short_ok=True))
    out = RunOutput(active=any(isinstance(v, dict) for _, v in lines))
    try:
        out.processes = processes(str(path), lines)
    except InputError:
        pass
    return out


def read_ranks(paths: Sequence[Path], wall: float) -> tuple[RunOutput, float]:
    """A rank sweep's run: the ranks' outputs as one (stalls summed over all ranks) and
    the longest MPI phase of its ranks (``Run.time_s``), or ``wall`` when no rank recorded one."""
    from ..tools.ranks import runs_of

    outputs = [read_output(p) for p in paths]
    ranks = RunOutput(any(o.active for o in outputs),
                      [proc for o in outputs for proc in o.processes or ()])
    if not ranks.active or any(o.processes is None for o in outputs):
        return ranks, wall
    try:
        runs, _ = runs_of((str(p), o.processes) for p, o in zip(paths, outputs))
    except InputError:  # no rank records (not an MPI program): the launcher's wall time
        return ranks, wall
    phase = max(r.time_s for r in runs)
    return ranks, phase if phase > 0 else wall


def run_once(
    command: Sequence[str],
    threads: int,
    runtime: str,
    cpus: Sequence[int],
    upto: int,
    workdir: Path,
    timeout: float,
    plugins: Sequence[StallPlugin] = (),
    launch: Optional[Launch] = None,
    placement: str = "none",
) -> RunResult:
    """Run ``command`` once at ``threads`` (ranks with ``launch``) under the preload library,
    on the first ``threads`` CPUs of ``cpus`` (in the ``placement`` policy's order)."""
    from ..model.tuning.placement import cpus_for, omp_env
    from ..runtime.launcher import preload_env, program_signals

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

    # subprocess's restore_signals has put SIGPIPE and SIGXFSZ back to the default before
    # child_setup runs: those the caller had ignored are ignored again, as without corecast.
    ignore = [sig for sig, disposition in program_signals() if disposition == signal.SIG_IGN]

    def child_setup() -> None:  # in the child, between fork and exec
        signal.pthread_sigmask(signal.SIG_SETMASK, held)  # the program gets the mask we had
        for sig in ignore:
            signal.signal(sig, signal.SIG_IGN)
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
            output = read_output(json_path)
        else:
            output, elapsed = read_ranks(sorted(workdir.glob(f"{threads}.rank-*.jsonl")), elapsed)
    except InputError as exc:
        return RunResult(threads, False, reason=f"its corecast output: {exc}")
    values, errors = {}, {}
    for plug in plugins:
        try:
            if plug.source == "file":
                path = Path(substitute([plug.path or ""], threads)[0])
                # A file left over from an earlier run is not this run's report.
                if not path.is_file() or path.stat().st_mtime < start_wall - 1.0:
                    raise InputError(f"{path} was not written by the run")
                values[plug.name] = plug.read(path=path)
            else:
                text = read_bytes(out_path if plug.source == "stdout" else err_path).decode(
                    "utf-8", errors="replace")
                values[plug.name] = plug.read(text=text)
        except (InputError, OSError) as exc:
            errors[plug.name] = str(exc)
    # Rank runs: regions are not merged across ranks (yet); their stalls are.
    return RunResult(threads, True, elapsed, active=output.active, stalls=output.stalls,
                     plugin_values=values, plugin_errors=errors,
                     regions=output.regions if launch is None else {}, kernels=output.kernels)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()
