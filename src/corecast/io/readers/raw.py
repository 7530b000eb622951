"""What the curve readers hand back (``Series``; ``RawSeries`` before it becomes
``Measurements``), and the checks they share.  Apart from the package's ``__init__``
(which registers the readers) so that the readers import it without an import circle."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...errors import InputError
from ...model.scaling import MAX_COUNT, over_max_count

if TYPE_CHECKING:
    from ...model.curve.entities import Measurements


@dataclass
class Series:
    """One curve: its measurements, or why it cannot be fitted (``error``).

    ``callpath`` and ``metric_name`` are None for a corecast CSV or sweep result (one
    curve per file); for Extra-P, Caliper and CUBE inputs they name the curve as the tool does."""

    data: "Measurements | None"
    callpath: str | None = None
    metric_name: str | None = None
    source: str = "csv"  # the tool that wrote it: csv (corecast's own) | extrap | caliper | cube | hyperfine
    error: str | None = None
    count_unit: str = "threads"  # threads, ranks, or an Extra-P parameter's name (scaling.count_unit_of)
    # What the reader left out or doubts, for the prediction's warning lines (hyperfine's failed runs).
    warnings: list[str] = field(default_factory=list)
    hw_threads: int | None = None  # the CPUs the curve was measured on, where the file says (a sweep's)
    # Every count the file measured, where ``data`` (what is fitted) leaves some out
    # (``as_the_sweep``): a tuner's replay (tune-sim) tries what was measured; None: ``data``.
    measured: "Measurements | None" = None
    # What a fit of ``data`` leaves out, said with predict's warnings (``as_the_sweep``);
    # not a reader's warning: tune-sim fits nothing and replays every measured count.
    fit_note: str | None = None
    value_name: str = ""  # CurvePrediction.value_name: a tool's metric read as a time that names none


    @property
    def label(self) -> str:
        if self.callpath is None:
            return ""
        return f"{self.callpath} [{self.metric_name}]" if self.metric_name else self.callpath


@dataclass
class RawSeries:
    """What a reader found: (count, value) pairs of one callpath and metric."""

    callpath: str
    metric_name: str
    points: list[tuple[float, float]]
    count_unit: str = "threads"  # "ranks" where the count is an MPI rank count; scaling.count_unit_of
    warnings: list[str] = field(default_factory=list)  # as Series.warnings
    cpus_allowed: int | None = None  # the CPUs a sweep's runs shared (an export of it says)


def as_the_sweep(series: Series, cpus: int | None) -> None:
    """The curve as the sweep fitted it (``hardware.fitted_within``, the sweep's own rule):
    where counts ran oversubscribed on its ``cpus`` and 2 counts or more did not, those
    alone, on a machine of ``cpus`` hardware threads (predict's own, unless it is given
    one); otherwise every count, and no machine, as the sweep.  For a sweep result and
    its Extra-P export alike."""
    from ...model.machine.hardware import fitted_within

    inside, series.fit_note = fitted_within(list(series.data.counts), cpus)
    if inside is not None:
        series.measured = series.data
        series.data = series.data.subset(inside)
        series.hw_threads = cpus


def as_count(x: float, where: str) -> float:
    """``x`` checked to be a count (a whole number from 1 to ``MAX_COUNT``)."""
    if not (math.isfinite(x) and x >= 1 and x == int(x)):
        raise InputError(f"{where}: {x:g} is not a count (a whole number >= 1); corecast's "
                         "one parameter is the thread, core or process count")
    if x > MAX_COUNT:
        raise InputError(f"{where}: {over_max_count(f'{x:.0f}')}")
    return float(x)


def one_curve(data: "Measurements", path: str, callpath: str | None, profile_metric: str | None,
              count_unit: str = "threads", count_attribute: str | None = None) -> list[Series]:
    """A corecast file's one curve; the options that pick among named curves are refused."""
    if callpath or profile_metric:
        raise InputError(f"{path}: --callpath and --profile-metric are for Extra-P, "
                         "Caliper and CUBE inputs, this is a corecast CSV or sweep result")
    no_count_attribute(path, count_attribute, "a corecast CSV or sweep result")
    return [Series(data, count_unit=count_unit)]


def check_metric(metric: str | None) -> None:
    """A ``--metric`` the curve readers take (None: the file's own)."""
    if metric is None:
        return
    from ...model.curve.entities import METRICS  # numpy: only when a metric is given

    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}: use time or throughput")


def no_count_attribute(path: str, count_attribute: str | None, what: str) -> None:
    """``--count-attribute`` refused for a file whose count column is fixed (``what``
    names the file's kind): ignored, it would look obeyed."""
    if count_attribute:
        raise InputError(f"{path}: --count-attribute is for Caliper and CUBE inputs, this is {what} "
                         "(its count is its first column or parameter)")


STALL_METRIC = "stall:"  # a stall category as a metric, as `corecast export --extrap` writes it


def named_curves(raw: list[RawSeries], source: str, path: str, metric: str | None,
                 callpath: str | None = None, profile_metric: str | None = None) -> list[Series]:
    """Another tool's curves, filtered to ``callpath`` and ``profile_metric`` when given.
    Without ``profile_metric``, a callpath's ``stall:NAME`` metrics measured run by run
    beside its ``time`` are that curve's stall columns (as a CSV's ``stall:NAME`` columns
    are), not curves of their own: a wait category has no speedup or preferred count."""
    if callpath is not None:
        picked = [r for r in raw if r.callpath == callpath]
        if not picked:
            raise InputError(f"{path}: no callpath {callpath!r} ({_names('callpath', [r.callpath for r in raw])})")
        raw = picked
    if profile_metric is not None:
        picked = [r for r in raw if r.metric_name == profile_metric]
        if not picked:
            raise InputError(f"{path}: no metric {profile_metric!r} "
                             f"({_names('metric', [r.metric_name for r in raw])})")
        raw = picked
        return [_series(r, source, metric) for r in raw]
    times = {r.callpath: r for r in raw if r.metric_name == "time"}
    stalls: dict[str, dict[str, list[float]]] = {}
    curves = []
    for r in raw:
        t = times.get(r.callpath)
        if (r.metric_name.startswith(STALL_METRIC) and t is not None
                and [n for n, _ in r.points] == [n for n, _ in t.points]):  # the same runs, in order
            stalls.setdefault(r.callpath, {})[r.metric_name[len(STALL_METRIC):]] = [v for _, v in r.points]
        else:
            curves.append(r)
    return [_series(r, source, metric, stalls.get(r.callpath) if r is times.get(r.callpath) else None)
            for r in curves]


def _names(kind: str, names: list[str], most: int = 8) -> str:
    """What the file has instead, for the error: its first ``most`` names in order."""
    names = [n for n in dict.fromkeys(names) if n]
    shown = ", ".join(repr(n) for n in names[:most])
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"the file's {kind}{'s' if len(names) != 1 else ''}: {shown}{more}" if names else f"the file names no {kind}"


def _series(raw: RawSeries, source: str, metric: str | None,
            stalls: dict[str, list[float]] | None = None) -> Series:
    from ...model.curve.entities import Measurements  # numpy: only once measurements are built

    counts = [n for n, _ in raw.points]
    values = [v for _, v in raw.points]
    try:
        data = Measurements.from_samples(counts, values, metric or "time", stalls=stalls)
    except InputError as exc:
        return Series(None, raw.callpath, raw.metric_name, source, error=str(exc), count_unit=raw.count_unit)
    # Without --metric another tool's value is read as a time: one named otherwise (bytes_sent)
    # keeps its name in the report
    named = metric is None and "time" not in raw.metric_name.lower() and raw.metric_name not in ("", "<default>")
    series = Series(data, raw.callpath, raw.metric_name, source, count_unit=raw.count_unit,
                    value_name=raw.metric_name if named else "")
    if named:
        series.warnings.append(f"{raw.metric_name} is read as a cost, as a time is (lower is better); "
                               "--metric throughput reads it as a rate")
    as_the_sweep(series, raw.cpus_allowed)
    return series
