"""What the model remembers about each region across windows, and the extrapolation from
a region's own measurements at several team sizes.

The C library keeps cumulative calls and wall time per team size; stalls are only kept
per region, so each window's stall growth is credited to the team size that ran most
calls in that window (with steering, a window runs one team size).
"""
from __future__ import annotations

import math

from .blas import load_numeric
from .bound import RegionPrediction, prediction_counts, preferred_count

MIN_CALLS = 2  # calls a team size needs in a window before it counts as measured
BASIS_LEN = 95  # struct cc_region_prediction.basis holds this many characters


class RegionHistory:
    """One region's per-team-size record, updated once per window."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, float]] = {}  # team -> cumulative (calls, wall)
        self.stalls_seen: dict[str, float] = {}
        self.stalls_by_team: dict[int, dict[str, float]] = {}
        self.window_team: int | None = None  # the team that ran this window
        self.window_perf: float | None = None  # its calls per second of region time

    def update(self, region: dict) -> None:
        best, best_calls = None, 0
        window_perf = None
        for team, calls, wall in region["hist"]:
            c0, w0 = self.seen.get(team, (0, 0.0))
            dcalls, dwall = calls - c0, wall - w0
            if dcalls > best_calls:
                best, best_calls = team, dcalls
                window_perf = dcalls / dwall if dwall > 0 else None
            self.seen[team] = (calls, wall)
        self.window_team = best if best_calls >= MIN_CALLS else None
        self.window_perf = window_perf if self.window_team is not None else None
        if best is not None:
            acc = self.stalls_by_team.setdefault(best, {})
            for cat, total in region["stalls_s"].items():
                acc[cat] = acc.get(cat, 0.0) + total - self.stalls_seen.get(cat, 0.0)
        self.stalls_seen = dict(region["stalls_s"])

    def measured(self) -> dict[int, tuple[int, float]]:
        """team -> (calls, wall) for team sizes with enough calls."""
        return {t: cw for t, cw in self.seen.items() if cw[0] >= MIN_CALLS and cw[1] > 0}

    def perf(self, team: int) -> float | None:
        calls, wall = self.seen.get(team, (0, 0.0))
        return calls / wall if calls >= MIN_CALLS and wall > 0 else None


def extrapolate(history: RegionHistory, target: int) -> RegionPrediction | None:
    """Speedups from the region's time per call at the team sizes it ran with (corecast's
    ``auto``; ESTIMA joins it when stalls per team size are known at enough sizes)."""
    measured = history.measured()
    if len(measured) < 2:
        return None
    load_numeric()  # numpy/scipy: only for regions run at several sizes
    from ..prediction import predict

    teams = sorted(measured)
    per_call = [measured[t][1] / measured[t][0] for t in teams]
    stalls = None
    cats = sorted({c for t in teams for c, v in history.stalls_by_team.get(t, {}).items() if v > 0})
    if cats and all(t in history.stalls_by_team for t in teams):
        stalls = {c: [max(history.stalls_by_team[t].get(c, 0.0), 0.0) / measured[t][0] for t in teams]
                  for c in cats}
    counts = prediction_counts(target)
    try:
        pred = predict(teams, per_call, metric="time", upto=max(counts), method="auto", stalls=stalls)
    except Exception:
        return None
    time_at = dict(zip(pred.counts.tolist(), pred.values.tolist()))
    low_at = dict(zip(pred.counts.tolist(), pred.low.tolist()))
    high_at = dict(zip(pred.counts.tolist(), pred.high.tolist()))
    t1 = time_at[1]
    speedup = [t1 / time_at[n] for n in counts]
    low = [t1 / high_at[n] for n in counts]  # in time, the band's high end is the slow one
    high = [t1 / low_at[n] for n in counts]
    basis = f"history: {pred.method} over {len(teams)} team sizes ({pred.candidate})"
    # ESTIMA names the future bottleneck when it was one of auto's members.
    return RegionPrediction(counts, speedup, low, high, preferred_count(counts, speedup), basis, [],
                            pred.extras.get("future_bottleneck"))


def combine(one_sample: RegionPrediction, from_history: RegionPrediction | None,
            sizes: int) -> RegionPrediction:
    """History wins from three team sizes on; with two, the geometric mean of both."""
    if from_history is None:
        return one_sample
    if sizes >= 3:
        from_history.bottleneck = from_history.bottleneck or one_sample.bottleneck
        return from_history
    gm = [math.sqrt(a * b) for a, b in zip(one_sample.speedup, from_history.speedup)]
    lo = [min(a, b) for a, b in zip(one_sample.low, from_history.low)]
    hi = [max(a, b) for a, b in zip(one_sample.high, from_history.high)]
    return RegionPrediction(one_sample.threads, gm, lo, hi, preferred_count(one_sample.threads, gm),
                            "geometric mean of the one-sample model and 2 team sizes' history",
                            one_sample.fitted, one_sample.bottleneck)


def probe_basis(basis: str, probes: dict[int, int]) -> str:
    """``basis`` naming the probe calls (CORECAST_PROBE) in the history it rests on,
    shortened to fit the C field."""
    sizes = ",".join(str(t) for t in sorted(probes))
    calls = sum(probes.values())
    threads = "thread" if sizes == "1" else "threads"
    for note in (f" (probes: {calls} calls at {sizes} {threads})", f" (probes at {sizes})", " (probes)"):
        if len(basis) + len(note) <= BASIS_LEN:
            return basis + note
    return basis[: BASIS_LEN - len(" (probes)")] + " (probes)"
