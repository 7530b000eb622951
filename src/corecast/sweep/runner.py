"""The sweep: every count run ``repeat`` times, the runs summarised per count and per
region, the whole program and each region extrapolated (``corecast.model.curve.extrapolation``)."""
from __future__ import annotations

import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from ..errors import InputError
from ..model.curve.extrapolation import extrapolate
from ..tools.ranks import WAITS
from ..model.machine.sysfs import allowed_cpus
from .inputs import (DEFAULT_REPEAT, DEFAULT_TIMEOUT_S, PLACEHOLDER, RUNTIMES, Launch, check_command,
                     default_counts, default_upto)
from ..io.stallplugin import StallPlugin
from ..io.sweepresult import MIN_REGION_SHARE, SweepError, empty_result
from .runs import RunResult, run_once

MIN_COUNTS = 2  # successful counts needed to predict anything


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
    plugins: Sequence[StallPlugin] = (),
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
    unit = "rank" if launch else "thread"
    if len(counts) < MIN_COUNTS:  # said before the runs, not after them
        flag = "--ranks" if launch else "--threads"
        raise SweepError(f"a prediction needs at least {MIN_COUNTS} counts, {flag} gives {len(counts)}; "
                         f"add some ({flag} 1,2)" if threads else
                         f"a prediction needs at least {MIN_COUNTS} counts, and this process may use "
                         f"{len(counts)} CPU; give them with --threads 1,2 (the second runs oversubscribed)")
    from ..model.scaling import MAX_COUNT

    if upto is not None and not 1 <= upto <= MAX_COUNT:
        raise SweepError(f"--upto must be between 1 and {MAX_COUNT}, got {upto}")
    if upto is not None and upto < min(counts):  # predict's refusal, said before the runs
        raise SweepError(f"--upto {upto} is below the smallest count swept ({min(counts)}), and no count below "
                         f"it is named preferred or fastest: give --upto {min(counts)} or more")
    try:
        check_command(command)
    except InputError as exc:
        raise SweepError(str(exc)) from None
    horizon = int(upto) if upto is not None else default_upto(counts)
    from ..model.tuning.placement import LAUNCHER_PLACEMENT, PLACEMENTS, cpu_order, cpus_for

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
    result = empty_result(command, runtime, warnings, failed)
    if launch is not None:
        # what ran the counts: the launcher's ranks, not --runtime's default (the text and HTML said mpi)
        result.update(runtime="mpi", count="ranks", launcher=list(launch.words), threads_per_rank=launch.threads)
        # As a thread sweep's, so that a reader finds the key: the launcher placed the ranks
        result["placement"] = {"policy": LAUNCHER_PLACEMENT, "omp_places": False, "cpus": {}}
    else:
        result["placement"] = {"policy": placement, "omp_places": placement != "none" and runtime == "openmp",
                               "cpus": {str(n): cpus_for(n, cpus) for n in counts}}
        result["cpus_allowed"] = len(cpus)  # the machine it ran on, for `corecast predict` of this file
        if runtime == "opencl":  # the count is pocl's compute units, as the kernels' reports name them
            result["count"] = "compute units"

    # Plugin categories: a pattern that never matched is skipped with a warning.
    all_runs = [r for n in ok for r in runs[n]]
    if runtime == "opencl" and all_runs and not any(r.kernels for r in all_runs):
        warnings.append("no OpenCL kernel was recorded in any run: the count (pocl's compute units) reaches "
                        "only kernels, so every count ran the same program; for its own threads use "
                        "--runtime openmp or pthreads")
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
            **({} if launch else {"cpus": cpus_for(n, cpus)}),  # a launcher's ranks got none of corecast's
            # every repetition, so exports (Extra-P) keep what the median folds away
            "runs": [{"time_s": float(r.time_s), "stalls_s": {k: float(st.get(k, 0.0)) for k in categories}}
                     for r, st in zip(runs[n], per_count[n])],
        })

    if len(ok) < MIN_COUNTS:
        worst = min(failed)  # every count was asked for: fewer succeeded only where runs failed
        raise SweepError(f"only {len(ok)} of {len(counts)} counts succeeded, a prediction needs "
                         f"{MIN_COUNTS} (at {worst} {unit}{'s' if worst != 1 else ''}: {failed[worst]})", result)
    if not any(r.active for r in all_runs):
        warnings.append("no parallel activity detected in any run (the preload library wrote nothing: "
                        "the program ran no OpenMP region and no pthreads synchronisation); nothing predicted")
        raise SweepError("no parallel activity detected in any run; nothing predicted", result)

    shared = None if launch is not None else len(cpus)  # the CPUs every count's threads shared
    try:
        extrapolate(result, {n: [r.time_s for r in runs[n]] for n in ok}, ok, categories, per_count, horizon,
                    waits=None if launch is None else WAITS, cpus=shared)
    except InputError as exc:
        result.update(predictions=[], stall_predictions={}, preferred_count=None, fastest_count=None,
                      preferred_threads=None, fastest_threads=None, fastest_measured=False, bottleneck=None)
        raise SweepError(f"cannot predict from the measurements: {exc}", result) from None
    result["regions"] = region_curves(runs, ok, result["measured"], horizon, shared)
    return result


def region_curves(runs: dict, ok: list[int], measured: list[dict], horizon: int,
                  cpus: int | None = None) -> list[dict]:
    """Each OpenMP region taking at least ``MIN_REGION_SHARE`` of the run (at some count),
    extrapolated like the whole program from its own time per count (``cpus``: as
    ``extrapolate`` takes it)."""
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
             "stalls_s": {k: float(statistics.median([s.get(k, 0.0) for s in per_count[n]])) for k in categories},
             # every repetition, as the whole program's entries keep them (Extra-P's export)
             "runs": [{"time_s": float(t), "stalls_s": {k: float(s.get(k, 0.0)) for k in categories}}
                      for t, s in zip(times[n], per_count[n])]}
            for n in at], "predictions": [], "stall_predictions": {}, "preferred_count": None,
            "fastest_count": None, "preferred_threads": None, "fastest_threads": None, "fastest_measured": False, "bottleneck": None, "warnings": []}
        if len(at) < MIN_COUNTS or min(statistics.median(times[n]) for n in at) <= 0:
            region["warnings"].append(f"measured at {len(at)} count(s) with a positive time; not predicted")
        else:
            try:
                extrapolate(region, times, at, categories, per_count, horizon, cpus=cpus)
            except InputError as exc:
                region["warnings"].append(f"cannot predict: {exc}")
        out.append(region)
    out.sort(key=lambda r: -r["share"])
    return out

