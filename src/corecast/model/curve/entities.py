"""Data the model core works on: measurements in, fitted curves and predictions out.

Every model works on *performance* in the throughput sense (higher is better):
``perf = value`` for throughput data and ``perf = 1 / value`` for time data.
Results are converted back to the user's metric at the edge (``CurvePrediction``).
Kept as one at over 400 lines: the three types a curve passes through (in, fitted, out).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Literal, Mapping

import numpy as np

from ...errors import InputError  # noqa: F401  (defined without numpy: fileio and the runtime raise it)
from ..machine.hardware import SMT_YIELD, Hardware
from ..scaling import ScalingPrediction

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Metric = Literal["time", "throughput"]
METRICS: tuple[str, ...] = ("time", "throughput")
# See Measurements.normalised: curves whose median lies beyond 10 ** +-SAFE_DECADES are
# divided by it; values may lie at most MAX_SPAN from their median.
SAFE_DECADES = 10
MAX_SPAN = 1e50


def to_perf(values: np.ndarray, metric: str) -> np.ndarray:
    """User metric -> throughput-like performance (higher is better)."""
    values = np.asarray(values, dtype=float)
    return values if metric == "throughput" else 1.0 / values


def from_perf(perf: np.ndarray, metric: str) -> np.ndarray:
    """Throughput-like performance -> user metric (the map is its own inverse)."""
    return to_perf(perf, metric)


@dataclass(frozen=True)
class Measurements:
    """One measured curve, repetitions folded into their median.

    ``counts`` are sorted ascending and unique per (count, sizes) combination.
    ``spread`` is the half-width of the repetitions' range relative to their median
    (0 for a single run).  ``stalls`` hold per-count medians of each stall category
    (same unit as time), ``sizes`` the program's input-size variables per point.
    """

    counts: np.ndarray
    values: np.ndarray
    metric: str
    spread: np.ndarray
    repetitions: np.ndarray
    stalls: Mapping[str, np.ndarray] = field(default_factory=dict)
    sizes: Mapping[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_samples(
        cls,
        counts: ArrayLike,
        values: ArrayLike,
        metric: str = "throughput",
        stalls: Mapping[str, object] | None = None,
        sizes: Mapping[str, object] | None = None,
    ) -> "Measurements":
        """Group raw samples (repetitions allowed) into a curve; raises InputError."""
        if metric not in METRICS:
            raise InputError(f"unknown metric {metric!r}: use time or throughput")
        c = _floats("count", counts)
        v = _floats("value", values)
        if c.size != v.size:
            raise InputError("counts and values differ in length")
        if c.size == 0:
            raise InputError("no measurements")
        stalls = {k: _floats(f"stall column {k!r}: value", s) for k, s in (stalls or {}).items()}
        sizes = {k: _floats(f"size column {k!r}: value", s) for k, s in (sizes or {}).items()}
        for name, arr in list(stalls.items()) + list(sizes.items()):
            if arr.size != c.size:
                raise InputError(f"column {name!r} differs in length from the counts")
        _check_finite("count", c)
        _check_finite("value", v)
        if np.any(c < 1):
            raise InputError(f"count {c[c < 1][0]:g} is below 1")
        if np.any(c != np.floor(c)):  # as every reader's counts (io.readers.raw.as_count)
            raise InputError(f"count {c[c != np.floor(c)][0]:g} is not a whole number >= 1")
        if np.any(v <= 0):
            raise InputError(f"value {v[v <= 0][0]:g} is not positive")
        for name, arr in stalls.items():
            _check_finite(name, arr)
            if np.any(arr < 0):
                raise InputError(f"stall column {name!r} has a negative value")
        for name, arr in sizes.items():
            _check_finite(name, arr)
            if np.any(arr <= 0):
                raise InputError(f"size column {name!r} has a value that is not positive")

        size_names = sorted(sizes)
        # One group per distinct (count, sizes...) row, ordered by count first so size-blind
        # code sees an ascending curve per size; vectorised for curves of 10,000 points.
        keys = np.column_stack([c] + [sizes[n] for n in size_names])
        rows, group = np.unique(keys, axis=0, return_inverse=True)
        group = group.ravel()
        med, low, high, reps = _group_stats(group, rows.shape[0], v)
        return cls(
            counts=rows[:, 0].copy(),
            values=med,
            metric=metric,
            spread=(high - low) / 2.0 / med,
            repetitions=reps,
            stalls={n: _group_stats(group, rows.shape[0], a)[0] for n, a in stalls.items()},
            sizes={n: rows[:, 1 + j].copy() for j, n in enumerate(size_names)},
        )

    @property
    def perf(self) -> np.ndarray:
        return to_perf(self.values, self.metric)

    @property
    def time(self) -> np.ndarray:
        """Values as a time (lower is better), for models built on time."""
        return 1.0 / self.perf

    def __len__(self) -> int:
        return int(self.counts.size)

    def head(self, k: int) -> "Measurements":
        """The first k points (lowest counts)."""
        return self.subset(np.arange(min(k, len(self))))

    def subset(self, index: ArrayLike) -> "Measurements":
        index = np.asarray(index)
        return Measurements(
            counts=self.counts[index],
            values=self.values[index],
            metric=self.metric,
            spread=self.spread[index],
            repetitions=self.repetitions[index],
            stalls={k: a[index] for k, a in self.stalls.items()},
            sizes={k: a[index] for k, a in self.sizes.items()},
        )

    def target_size(self) -> dict[str, float]:
        """The input size predictions are made for: the largest measured one."""
        if not self.sizes:
            return {}
        rows = zip(*(self.sizes[k] for k in sorted(self.sizes)))
        return dict(zip(sorted(self.sizes), max(rows)))

    def at_target_size(self) -> "Measurements":
        """Only the points measured at the target size (what size-blind methods use)."""
        target = self.target_size()
        if not target:
            return self
        mask = np.ones(len(self), dtype=bool)
        for k, v in target.items():
            mask &= self.sizes[k] == v
        return self.subset(np.flatnonzero(mask))

    def normalised(self) -> tuple["Measurements", float]:
        """The curve in a unit the models handle, and the factor (``scale``) it was divided by.

        Models need values near 1, not 1e-308 or 1e300: their arithmetic (1 / value,
        n * value, squared residuals) would overflow or underflow.  A curve whose median
        lies beyond ``10 ** +-SAFE_DECADES`` is divided by its median (a measured value,
        so nothing overflows before the division), so curves that differ only in their
        unit get the same fit.  Curves in everyday units are left exactly as they are:
        the kernel fits are not exactly invariant to the unit (dividing every curve by
        its median changed PreSca's kernel choice on a measured curve).  Stalls (a time)
        are scaled like the time: divided by ``scale`` for time data, multiplied by it
        for throughput data (time ~ 1 / throughput).
        Raises InputError when values lie more than ``MAX_SPAN`` from their median: no
        real curve spans that much, and the models' intermediate products would overflow.
        """
        median = float(np.sort(self.values)[(len(self) - 1) // 2])
        scale = 1.0 if abs(np.log10(median)) <= SAFE_DECADES else median
        values = self.values / scale
        stall_factor = 1.0 / scale if self.metric == "time" else scale
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            stalls = {k: a * stall_factor for k, a in self.stalls.items()}
        if not np.all((self.values >= median / MAX_SPAN) & (self.values <= median * MAX_SPAN)):
            raise InputError(
                f"values range from {self.values.min():g} to {self.values.max():g}: "
                "too many orders of magnitude apart to fit one curve"
            )
        for k, a in stalls.items():
            if not np.all(np.isfinite(a)):
                raise InputError(f"stall column {k!r} is too large next to the values (unit mix-up?)")
        return replace(self, values=values, stalls=stalls), scale

    def binned(self, max_points: int) -> "Measurements":
        """At most about ``max_points`` points per input size, dense counts pooled into bins.

        Fitting every one of thousands of counts costs minutes (PreSca and ESTIMA refit
        their kernels on every prefix of the points) and adds little: neighbouring counts
        say the same thing.  Counts are grouped into bins of equal width in log(count)
        (bins start at a measured count and hold the counts up to ``ratio`` times it, the
        ratio chosen as the smallest that yields at most ``max_points`` bins), so sparse
        small counts, where the speedup changes fastest, stay single points and dense
        large counts are pooled.  A bin is represented by its middle count, the median of
        its values (and stalls), the sum of its repetitions and the median of their
        spreads.  A curve with at most ``max_points`` counts per size is returned as is.
        """
        group_keys = list(zip(*(self.sizes[k] for k in sorted(self.sizes)))) or [()] * len(self)
        by_size: dict[tuple, list[int]] = {}
        for i, key in enumerate(group_keys):
            by_size.setdefault(key, []).append(i)
        if all(len(idx) <= max_points for idx in by_size.values()):
            return self
        members: list[np.ndarray] = []
        for idx in by_size.values():
            idx = np.asarray(idx)  # ascending counts within one size
            members += [idx[b] for b in _log_bins(self.counts[idx], max_points)]
        members.sort(key=lambda m: (self.counts[m[(m.size - 1) // 2]], m[0]))
        middle = np.array([m[(m.size - 1) // 2] for m in members])

        def median(arr: np.ndarray) -> np.ndarray:
            return np.array([float(np.median(arr[m])) for m in members])

        return Measurements(
            counts=self.counts[middle],
            values=median(self.values),
            metric=self.metric,
            spread=median(self.spread),
            repetitions=np.array([int(self.repetitions[m].sum()) for m in members]),
            stalls={k: median(a) for k, a in self.stalls.items()},
            sizes={k: a[middle] for k, a in self.sizes.items()},
        )


def _log_bins(counts: np.ndarray, max_points: int) -> list[np.ndarray]:
    """Index ranges of ascending ``counts`` cut into at most ``max_points`` bins of equal
    log width (see ``Measurements.binned``); the width is found by bisection."""

    def cut(ratio: float) -> list[np.ndarray] | None:
        bins, i = [], 0
        while i < counts.size:
            j = int(np.searchsorted(counts, counts[i] * ratio, side="right"))
            bins.append(np.arange(i, max(j, i + 1)))
            i = max(j, i + 1)
            if len(bins) > max_points:
                return None
        return bins

    lo, hi = 1.0, float(counts[-1] / counts[0]) * 2.0  # hi: a single bin
    for _ in range(60):
        mid = float(np.sqrt(lo * hi))
        if cut(mid) is None:
            lo = mid
        else:
            hi = mid
    return cut(hi)


def _group_stats(group: np.ndarray, ngroups: int, arr: np.ndarray):
    """Per group: median, minimum, maximum and size of ``arr``.

    The median of an even group is ``a + (b - a) / 2`` (not ``(a + b) / 2``) so values
    near the float maximum do not overflow.
    """
    order = np.lexsort((arr, group))
    ordered = arr[order]
    size = np.bincount(group, minlength=ngroups)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    lo, hi = ordered[start + (size - 1) // 2], ordered[start + size // 2]
    return lo + (hi - lo) / 2.0, ordered[start], ordered[start + size - 1], size


def _floats(name: str, items: object) -> np.ndarray:
    """``items`` (any iterable of numbers: a list, an array, a generator) as a flat float
    array; InputError naming the first item that is not a number."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise InputError(f"{name}s must be numbers, one per measurement, got {type(items).__name__}")
    if not isinstance(items, (np.ndarray, list, tuple)):
        items = list(items)
    try:
        return np.asarray(items, dtype=float).ravel()
    except (TypeError, ValueError):
        pass
    for item in np.asarray(items, dtype=object).ravel():
        try:
            float(item)
        except (TypeError, ValueError):
            raise InputError(f"{name} {item!r} is not a number") from None
    raise InputError(f"{name}s are not a flat list of numbers")


def _check_finite(name: str, arr: np.ndarray) -> None:
    bad = ~np.isfinite(arr)
    if np.any(bad):
        raise InputError(f"{name} {arr[bad][0]} is not a finite number")


PerfFunction = Callable[[np.ndarray], np.ndarray]


@dataclass
class Fit:
    """A fitted performance curve as a method returns it.

    ``perf(n)`` gives throughput-like performance at counts ``n`` (at the target size
    when the data has sizes).  ``low``/``high`` optionally give the method's own band
    (e.g. the spread of its candidates); the generic band is added on top.
    """

    method: str
    candidate: str
    perf: PerfFunction
    reason: str
    params: dict = field(default_factory=dict)
    residual: float = 0.0  # RMS of log(fit / measured) on the points it was fitted to
    low: PerfFunction | None = None
    high: PerfFunction | None = None
    checkpoints: list[float] = field(default_factory=list)
    extras: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # ``predict`` fits normalised data (``Measurements.normalised``); extras that carry
    # stall values are mapped back to the user's unit by this (extras, unit) -> extras.
    extras_in_unit: Callable[[dict, float], dict] | None = None
    # The models a combined fit (auto) is made of, for their fit quality.
    members: list["Fit"] = field(default_factory=list)
    # auto's step member (methods/auto.py): perf(n) with the members at counts ``at`` voting too,
    perf_with: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    step_yield: float | None = None  # and the SMT yield ``predict`` asks those counts at


@dataclass
class CurvePrediction(ScalingPrediction):
    """A method's fit of a measured curve: predictions in the user's metric for every
    requested count (``basis``: ``reason``; a member of ``model.scaling.ScalingPrediction``)."""

    method: str
    metric: str
    candidate: str
    reason: str
    counts: np.ndarray
    values: np.ndarray
    low: np.ndarray
    high: np.ndarray
    speedup: np.ndarray
    efficiency: np.ndarray
    speedup_base: float
    preferred: int
    knee: int
    knee_fraction: float
    requested_at: list[int]
    measured: Measurements
    checkpoints: list[float]
    params: dict
    extras: dict
    warnings: list[str]
    # Values were divided by this before fitting: ``params`` are for that normalised curve
    # (the JSON gives it as params["value_scale"]).
    value_scale: float = 1.0
    # Per model (the chosen one first, then auto's members): {"model", "params", "rss",
    # "adj_r2", "smape"} against the measured points (see fitquality).
    fit_quality: list[dict] = field(default_factory=list)
    hardware: Hardware | None = None  # the machine predicted for (None: not given)
    # The count of the best predicted performance the band supports (``preferred`` is the
    # one that pays off, at most this); None where not computed.
    fastest: int | None = None
    # True where ``fastest`` is the best measured count because the model's optimum was
    # measured slower (``preference.measured_preferred``): a measurement, not the band's.
    fastest_measured: bool = False
    # The rule's preferred count where a measured ``fastest`` capped it, or the measured
    # counts clearly beat it (``preference.measured_paid``); None elsewhere.
    model_preferred: int | None = None
    min_gain: float = 0.25  # the preferred count's threshold (prediction.DEFAULT_MIN_GAIN)
    scaling: str = "strong"  # strong | weak
    count_unit: str = "threads"  # what the input's count is: threads, ranks, or an Extra-P parameter's name
    # The input's own name for a value read as ``metric`` though it names no time (an
    # Extra-P metric such as bytes_sent, a cost read as a time is); "": ``metric`` says it.
    value_name: str = ""

    @property
    def value_label(self) -> str:
        """What the value is called in the report: ``value_name``, else ``metric``."""
        return self.value_name or self.metric

    def to_dict(self) -> dict:
        """The JSON contract of ``corecast predict --json``."""
        return {
            "method": self.method,
            "metric": self.metric,
            "candidate": self.candidate,
            "reason": self.reason,
            "predictions": [
                {
                    "threads": int(n),
                    "value": float(v),
                    "low": float(lo),
                    "high": float(hi),
                    "speedup": float(s),
                    "efficiency": float(e) if np.isfinite(e) else None,
                }
                for n, v, lo, hi, s, e in zip(
                    self.counts, self.values, self.low, self.high, self.speedup, self.efficiency
                )
            ],
            # The counts are in count_unit (threads, ranks, ...): *_count are the unit-neutral
            # keys; *_threads, the same numbers, stay for readers written before them.
            "preferred_count": int(self.preferred),
            "fastest_count": None if self.fastest is None else int(self.fastest),
            "knee_count": None if self.knee is None else int(self.knee),
            "preferred_threads": int(self.preferred),
            "fastest_threads": None if self.fastest is None else int(self.fastest),
            "fastest_measured": bool(self.fastest_measured),
            "min_gain": float(self.min_gain),
            "scaling": self.scaling,
            "count_unit": self.count_unit,
            "knee_threads": None if self.knee is None else int(self.knee),
            "knee_fraction": float(self.knee_fraction),
            "speedup_base": float(self.speedup_base),
            "hardware": None if self.hardware is None else {"hw_threads": self.hardware.hw_threads,
                                                            "cores": self.hardware.cores,
                                                            "sockets": self.hardware.sockets,
                                                            "fill": self.hardware.fill,
                                                            "smt_yield": SMT_YIELD,
                                                            "waits_for_slowest":
                                                                self.hardware.waits_for_slowest(self.metric)},
            "checkpoints": [float(c) for c in self.checkpoints],
            "params": _jsonable({**self.params, "value_scale": self.value_scale}),
            "extras": _jsonable(self.extras),
            "fit_quality": _jsonable(self.fit_quality),
            "warnings": list(self.warnings),
        }

    @property
    def basis(self) -> str:
        return self.reason

    def speedup_band(self) -> tuple[np.ndarray, np.ndarray]:
        """The band as speedups: the speedup times the band's performance over the central
        one (in time the low value is the high speedup)."""
        perf, low, high = (to_perf(v, self.metric) for v in (self.values, self.low, self.high))
        worse, better = (high, low) if self.metric == "time" else (low, high)
        with np.errstate(all="ignore"):
            return self.speedup * worse / perf, self.speedup * better / perf

    def value_at(self, n: float) -> float:
        i = np.flatnonzero(self.counts == n)
        if i.size == 0:
            raise KeyError(n)
        return float(self.values[i[0]])


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.floating, float)):
        return float(obj) if np.isfinite(obj) else None
    if isinstance(obj, (np.integer,)):
        return int(obj)
    return obj
