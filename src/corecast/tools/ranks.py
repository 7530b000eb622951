"""MPI runs merged across ranks: per-rank compute and MPI wait, the slowest rank, and the
predicted speedup over rank counts (``corecast merge``).

Every rank writes its own JSON Lines (``CORECAST_OUTPUT=run-{rank}.jsonl``); the records
carry ``rank`` and ``ranks``.  A *run* is the ranks of one world size (a rank seen twice
at the same size starts another run: repetitions).

Per rank, the MPI phase is the process's wall time less ``MPI_Init`` and ``MPI_Finalize``;
its MPI wait is the ``mpi_p2p`` plus ``mpi_collective`` stall time, its compute the rest.

Predictions over rank counts, by how many world sizes were measured:

* two or more: a fit over every world size, as ``corecast sweep`` does; from three the
  regression method (Barnes et al., "A Regression-Based Approach to
  Scalability Prediction", ICS 2008) on the run's
  time per world size (the longest MPI phase of its ranks), with the MPI waits summed over ranks as its stall columns,
  so compute and wait are fitted separately when the program is not compute bound; from
  two ``auto``.
* one world size: a one-run model of that run.  Strong scaling: the
  run's total compute ``C`` is shared by ``p`` ranks with the measured imbalance
  ``lambda = max / mean`` compute (1 at one rank); the slowest rank's own MPI wait is the
  communication cost (it waits for messages, not for other ranks), its point-to-point part
  constant in ``p`` (neighbour exchanges) and its collective part growing as
  ``log2 p / log2 P`` (tree collectives).  ``T(1) = C``,
  ``T(p) = lambda C / p + w_p2p + w_coll log2 p / log2 P`` (at ``P`` the slowest rank's own
  MPI phase, which may end a little before the run's time, ``Run.time_s``).

Standard library only, except numpy and the prediction methods for the regression case.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InputError, counted
from ..io.fileio import shown
from ..model.scaling import ScalingPrediction
from ..recording.abi import MPI_WAITS
from .samples import NoRecords, RecordedProcess, read_once, read_recording

WAITS = MPI_WAITS  # the stall categories' names (recording.abi.STALLS): the columns' too
NO_RECORDS = ("no records, left out: its process ended before its exit report (killed by a signal, or by "
              "the launcher after another rank's MPI_Abort, crash or non-zero exit)")
NO_WHOLE_RUN = ("no prediction over rank counts: no run has every rank's records, and a run's compute and "
                "time need them all")
ONE_RUN_MODEL = ("one run: compute shared by p ranks with the measured imbalance, point-to-point "
                 "wait constant, collective wait growing with log2 p")


@dataclass
class RankSample:
    rank: int
    pid: int
    source: str          # the file it came from
    threads: int
    wall_s: float        # the MPI phase: elapsed less MPI_Init and MPI_Finalize
    compute_s: float
    waits_s: dict        # mpi_p2p, mpi_collective
    bytes: dict          # mpi_p2p, mpi_collective
    init_s: float
    finalize_s: float

    @property
    def wait_s(self) -> float:
        return sum(self.waits_s.values())


@dataclass
class Run:
    ranks: int                              # the world size
    per_rank: list[RankSample] = field(default_factory=list)

    @property
    def missing(self) -> list[int]:
        seen = {r.rank for r in self.per_rank}
        return [r for r in range(self.ranks) if r not in seen]

    @property
    def slowest(self) -> RankSample:
        """The rank on the critical path: the most compute (the others wait for it)."""
        return max(self.per_rank, key=lambda r: (r.compute_s, r.wall_s))

    @property
    def longest(self) -> RankSample:
        """The rank whose MPI phase is the run's time: the last to leave it, which need not
        be the slowest (its sends and waits may end it later)."""
        return max(self.per_rank, key=lambda r: r.wall_s)

    @property
    def time_s(self) -> float:
        """The run's time: the longest MPI phase of its ranks (``longest``'s), as a rank
        sweep's; not the slowest rank's own."""
        return self.longest.wall_s

    @property
    def compute_total_s(self) -> float:
        return sum(r.compute_s for r in self.per_rank)

    @property
    def imbalance(self) -> float:
        mean = self.compute_total_s / len(self.per_rank)
        return self.slowest.compute_s / mean if mean > 0 else 1.0


@dataclass
class RankPrediction(ScalingPrediction):
    """MPI ranks' recordings merged: speedup and time per rank count, and the regression's
    band (``band``; the one-run model has none).  As ``predict``'s: ``preferred``, the count
    that pays off (each rank added up to it gains at least a quarter of one), ``fastest``,
    the best predicted count, or the best measured one where ``fastest_measured`` (the
    model's optimum was measured slower), and ``model_preferred``, the rule's preferred
    count where the measurements replaced it (``CurvePrediction``'s fields).  ``runs``: every
    run read; the prediction rests on those with every rank's records (``whole``), and is
    none (``counts`` empty, ``preferred`` None) where there are none."""

    runs: list[Run]
    model: str
    counts: list[int]
    speedup: list[float]
    time_s: list[float]
    preferred: int | None
    warnings: list[str]
    fastest: int | None = None
    fastest_measured: bool = False
    model_preferred: int | None = None
    band: tuple[list[float], list[float]] | None = None
    # The regression's input: the run's time (Run.time_s) per world size, repetitions folded
    # as it folds them (empty for the one-run model).
    measured_s: dict[int, float] = field(default_factory=dict)
    speedup_base: int = 1  # the count the speedup is relative to: the smallest measured one when fitted
    count_unit = "ranks"

    @property
    def basis(self) -> str:
        return self.model

    @property
    def whole(self) -> list[Run]:
        """The runs the prediction rests on: those with every rank's records."""
        return [r for r in self.runs if not r.missing]

    def speedup_band(self) -> tuple[list[float], list[float]] | None:
        return self.band


def rank_sample(proc: RecordedProcess, source: str) -> RankSample:
    process = next((r for r in proc.regions if r["name"] == "process"), None)
    if process is None:
        raise InputError(f"{shown(source)}: rank {proc.rank} (pid {proc.pid}) has no process record")
    elapsed = proc.elapsed_s or process["wall_s"]
    wall = max(elapsed - proc.mpi_init_s - proc.mpi_finalize_s, 0.0)
    waits = {k: float(process["stalls_s"].get(k, 0.0)) for k in WAITS}
    total = sum(waits.values())
    if total > wall > 0:  # MPI called from several threads: their waits overlap in time
        waits = {k: v * wall / total for k, v in waits.items()}
    nbytes = process.get("bytes", {})
    return RankSample(rank=proc.rank, pid=proc.pid, source=source, threads=process["threads"],
                      wall_s=wall, compute_s=max(wall - sum(waits.values()), 0.0), waits_s=waits,
                      bytes={k: int(nbytes.get(k, 0)) for k in WAITS}, init_s=proc.mpi_init_s,
                      finalize_s=proc.mpi_finalize_s)


def collect_runs(paths: list[str], format: str | None = None) -> tuple[list[Run], list[str]]:
    """The runs in ``paths`` by world size (smallest first) and warnings.  A process
    without a rank is a one-line error, and so is a file without records where no file
    has any; beside files that have them it is a rank that ended before its exit report
    (killed: its ``--json-out`` file stays empty), left out with a warning, its rank
    missing from its run.  ``format``: the recording reader's name (default: the one
    there is)."""
    recordings, empty = [], []
    for path in paths:
        try:
            recordings.append((path, read_recording(path, format)))
        except NoRecords as exc:
            empty.append((path, exc))
    if not recordings and empty:
        raise empty[0][1]
    runs, warnings = runs_of(recordings)
    return runs, [f"{shown(path)}: {NO_RECORDS}" for path, _ in empty] + warnings


def runs_of(recordings: Iterable[tuple[str, list[RecordedProcess]]]) -> tuple[list[Run], list[str]]:
    """``collect_runs`` of recordings already read: (file, its processes) each."""
    from ..model.scaling import MAX_COUNT

    runs: dict[int, list[Run]] = {}
    seen: dict[frozenset, str] = {}  # a process's records: the file they came from
    warnings = []
    for path, procs in recordings:
        for proc in procs:
            if proc.rank is None:
                raise InputError(f"{shown(path)}: pid {proc.pid} has no rank: not started by an MPI "
                                 "launcher (or written by a corecast before schema 3)")
            size = proc.ranks or proc.rank + 1
            if size > MAX_COUNT:  # a run lists its missing ranks: keep that bounded
                raise InputError(f"{shown(path)}: pid {proc.pid}: a world of {size} ranks; at most {MAX_COUNT} "
                                 "are merged")
            # the same records again (a file named twice, `merge run-*.jsonl run-0.jsonl`, or a
            # copy) are no repetition: it read as a second run, its other ranks missing
            first, said = read_once(path, proc, seen)
            warnings += said
            if not first:
                continue
            sample = rank_sample(proc, path)
            same = runs.setdefault(size, [])
            # a rank seen again at this size belongs to the next repetition
            run = next((r for r in same if all(s.rank != sample.rank for s in r.per_rank)), None)
            if run is None:
                run = Run(size)
                same.append(run)
            run.per_rank.append(sample)
    ordered = [r for size in sorted(runs) for r in runs[size]]
    for run in ordered:
        run.per_rank.sort(key=lambda r: r.rank)
        if run.missing:
            warnings.append(f"run at {counted(run.ranks, 'rank')}: no records of "
                            f"{'rank' if len(run.missing) == 1 else 'ranks'} "
                            f"{','.join(map(str, run.missing[:8]))}{'...' if len(run.missing) > 8 else ''}")
    return ordered, warnings


def rank_counts(largest: int, upto: int) -> list[int]:
    """The rank counts a merge predicts at and shows: the powers of two up to ``upto``,
    the largest measured count and ``upto``.  (The runtime's thread counts are
    ``model.runtime.bound.prediction_counts``.)"""
    counts, n = set(), 1
    while n <= upto:
        counts.add(n)
        n *= 2
    counts.update((largest, upto))
    return sorted(c for c in counts if c <= upto)


def one_run_times(run: Run, counts: list[int]) -> list[float]:
    """``T(p)`` of the one-run model (module docstring) at ``counts``."""
    slow = run.slowest
    c_total, lam, big = run.compute_total_s, run.imbalance, run.ranks
    times = []
    for p in counts:
        t = c_total / p * (lam if p > 1 else 1.0)
        if p > 1 and big > 1:
            t += slow.waits_s["mpi_p2p"] + slow.waits_s["mpi_collective"] * math.log2(p) / math.log2(big)
        times.append(t)
    return times


def merge(paths: list[str], upto: int | None = None, format: str | None = None) -> RankPrediction:
    """The runs of ``paths`` and their prediction over rank counts, which rests on the runs
    with every rank's records only: a run's total compute and time need them all (rank 1
    of 2 missing read as half the work).  Where no run has them all, no prediction:
    ``counts`` empty, ``preferred`` None, and a warning says why."""
    every, warnings = collect_runs(paths, format)
    runs = [r for r in every if not r.missing]
    if not runs:
        warnings.append(NO_WHOLE_RUN)
        return RankPrediction(every, "", [], [], [], None, warnings)
    if len(runs) < len(every):
        left = sorted({r.ranks for r in every if r.missing})
        warnings.append(f"{'runs' if len(left) > 1 else 'the run'} at {', '.join(map(str, left))} ranks, "
                        "without every rank's records, left out of the prediction over rank counts")
    largest = max(r.ranks for r in runs)
    upto = upto or max(16, 2 * largest)
    sizes = sorted({r.ranks for r in runs})
    if len(sizes) >= 2:
        # Every measured world size is fitted (as sweep does): the regression from 3, auto
        # from 2; the one-run model of the largest run contradicted a measured smaller one.
        from ..model.curve.extrapolation import REGRESSION_NEEDS_3, with_advice
        from ..model.curve.prediction import predict

        method = "regression" if len(sizes) >= 3 else "auto"
        if method == "auto":
            warnings.append(REGRESSION_NEEDS_3)
        pred = predict([r.ranks for r in runs], [r.time_s for r in runs], metric="time", upto=upto,
                       method=method,
                       stalls={k: [sum(s.waits_s[k] for s in r.per_rank) for r in runs] for k in WAITS})
        counts = [int(c) for c in pred.counts]
        warnings += with_advice(pred.warnings, "")  # merge has no --method
        low, high = pred.speedup_band()
        seen = pred.measured.at_target_size()
        return RankPrediction(every, f"{method} over {len(sizes)} rank counts: {pred.reason}", counts,
                              [float(s) for s in pred.speedup], [float(v) for v in pred.values],
                              int(pred.preferred), warnings, pred.fastest, pred.fastest_measured,
                              pred.model_preferred, ([float(x) for x in low], [float(x) for x in high]),
                              {int(n): float(t) for n, t in zip(seen.counts, seen.values)},
                              int(pred.speedup_base))
    run = max(runs, key=lambda r: (r.ranks, -r.time_s))
    if run.compute_total_s <= 0:
        raise InputError(f"the run at {run.ranks} ranks has no compute time left after its MPI waits; "
                         "nothing to predict")
    if run.ranks == 1:
        warnings.append("one rank measured: its communication cost at more ranks is unknown (ideal scaling)")
    counts = rank_counts(run.ranks, upto)
    times = one_run_times(run, counts)
    t1 = times[0]
    speedup = [t1 / t for t in times]
    best = max(range(len(counts)), key=lambda i: (round(speedup[i], 6), -counts[i]))
    if counts[best] == counts[-1] > run.ranks:  # still gaining where the counts asked stop
        warnings.append(f"the fastest count is bounded by the largest count asked ({counts[-1]}), where the "
                        "one-run model still gains: a larger --upto may name a larger one")
    return RankPrediction(every, f"{ONE_RUN_MODEL} (from the run at {counted(run.ranks, 'rank')})", counts, speedup, times,
                          one_run_preferred(counts, speedup, sizes, counts[best]), warnings, counts[best])


def one_run_preferred(counts: list[int], speedup: list[float], sizes: list[int], fastest: int) -> int:
    """``predict``'s preferred count over the one-run model's curve, walked from 1 rank:
    the model's ``T(1) = C`` is its speedup's base, so a second rank that loses time is
    no step that pays off (from the measured count the walk never asked).  The model has no
    band, so no count past the largest run is vouched for (``preferred_count`` with a low
    end of nothing there): the count is one up to the largest run, and at most the fastest."""
    import numpy as np

    from ..model.curve.preference import preferred_count

    perf = np.asarray(speedup, float)
    return min(preferred_count(np.asarray(counts, float), perf, np.zeros_like(perf), float(counts[0]),
                               float(sizes[-1])), fastest)
