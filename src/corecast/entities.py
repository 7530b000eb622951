"""Data the model core works on: measurements in, fitted curves and predictions out.

Every model works on *performance* in the throughput sense (higher is better):
``perf = value`` for throughput data and ``perf = 1 / value`` for time data.
Results are converted back to the user's metric at the edge (``Prediction``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping

import numpy as np

from .errors import InputError  # noqa: F401  (defined without numpy: fileio and the runtime raise it)

Metric = Literal["time", "throughput"]
METRICS: tuple[str, ...] = ("time", "throughput")


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
        counts,
        values,
        metric: str = "throughput",
        stalls: Mapping[str, object] | None = None,
        sizes: Mapping[str, object] | None = None,
    ) -> "Measurements":
        """Group raw samples (repetitions allowed) into a curve; raises InputError."""
        if metric not in METRICS:
            raise InputError(f"unknown metric {metric!r}: use time or throughput")
        c = np.asarray(counts, dtype=float).ravel()
        v = np.asarray(values, dtype=float).ravel()
        if c.size != v.size:
            raise InputError("counts and values differ in length")
        if c.size == 0:
            raise InputError("no measurements")
        stalls = {k: np.asarray(s, dtype=float).ravel() for k, s in (stalls or {}).items()}
        sizes = {k: np.asarray(s, dtype=float).ravel() for k, s in (sizes or {}).items()}
        for name, arr in list(stalls.items()) + list(sizes.items()):
            if arr.size != c.size:
                raise InputError(f"column {name!r} differs in length from the counts")
        _check_finite("count", c)
        _check_finite("value", v)
        if np.any(c < 1):
            raise InputError(f"count {c[c < 1][0]:g} is below 1")
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
        groups: dict[tuple, list[int]] = {}
        for i, ci in enumerate(c):
            groups.setdefault(tuple([ci] + [sizes[n][i] for n in size_names]), []).append(i)
        # Ordered by count first so size-blind code sees an ascending curve per size.
        order = sorted(groups)
        idx = [groups[key] for key in order]
        med = np.array([np.median(v[i]) for i in idx])
        spread = np.array([(v[i].max() - v[i].min()) / 2.0 / np.median(v[i]) for i in idx])
        return cls(
            counts=np.array([k[0] for k in order]),
            values=med,
            metric=metric,
            spread=spread,
            repetitions=np.array([len(i) for i in idx]),
            stalls={n: np.array([np.median(a[i]) for i in idx]) for n, a in stalls.items()},
            sizes={n: np.array([k[1 + j] for k in order]) for j, n in enumerate(size_names)},
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

    def subset(self, index) -> "Measurements":
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
        rows = list(zip(*(self.sizes[k] for k in sorted(self.sizes))))
        best = max(rows, key=lambda r: (r, rows.count(r)))
        return dict(zip(sorted(self.sizes), best))

    def at_target_size(self) -> "Measurements":
        """Only the points measured at the target size (what size-blind methods use)."""
        target = self.target_size()
        if not target:
            return self
        mask = np.ones(len(self), dtype=bool)
        for k, v in target.items():
            mask &= self.sizes[k] == v
        return self.subset(np.flatnonzero(mask))


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


@dataclass
class Prediction:
    """Predictions in the user's metric for every requested count."""

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
                    "efficiency": float(e),
                }
                for n, v, lo, hi, s, e in zip(
                    self.counts, self.values, self.low, self.high, self.speedup, self.efficiency
                )
            ],
            "preferred_threads": int(self.preferred),
            "knee_threads": int(self.knee),
            "knee_fraction": float(self.knee_fraction),
            "speedup_base": float(self.speedup_base),
            "checkpoints": [float(c) for c in self.checkpoints],
            "params": _jsonable(self.params),
            "extras": _jsonable(self.extras),
            "warnings": list(self.warnings),
        }

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
