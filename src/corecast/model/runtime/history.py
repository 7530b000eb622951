"""What the model remembers about each region across windows, and the extrapolation from
a region's own measurements at several team sizes.

The C library keeps cumulative calls and wall time per team size; stalls are only kept
per region, so each window's stall growth is credited to the team size that ran most
calls in that window (with steering, a window runs one team size).  Steering's
measurement of a team size is a span of windows: it ends at the first window by which one
team size made ``MIN_CALLS`` calls in it (with many calls per window, every window), so a
region whose calls are too slow for one window is measured over as many as they take.
"""
from __future__ import annotations

import math

from .bound import TeamPrediction, prediction_counts, fastest_count

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...recording.record import RegionSample

MIN_CALLS = 2  # calls a team size needs in a window before it counts as measured
BASIS_LEN = 95  # struct cc_region_prediction.basis holds this many characters
# The one-sample model describes the calls at the region's largest team; it stands for the
# region while they are at least this share of its calls (probes: >= 97%).
OWN_SHARE = 0.75
LOCK_SHARE = 0.02  # lock hold time above this share of busy time: a region that takes locks


def _numeric_as_it_comes() -> None:
    """Nothing to prepare: the fit's own imports load numpy and scipy."""


# Called before a fit imports numpy and scipy.  The plumbing that hosts the model sets it
# (runtime.bridge: runtime.blas.load_numeric, one BLAS thread in a non-Python host), so the
# model never imports the plumbing; elsewhere (replay, tests) the fit imports them as usual.
load_numeric = _numeric_as_it_comes


class RegionHistory:
    """One region's per-team-size record, updated once per window."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, float]] = {}  # team -> cumulative (calls, wall)
        self.stalls_seen: dict[str, float] = {}
        self.stalls_by_team: dict[int, dict[str, float]] = {}
        self.window_team: int | None = None  # the team a span ending at this window measured
        self.window_perf: float | None = None  # its calls per second of region time in the span
        self.span_from: dict[int, tuple[int, float]] = {}  # ``seen`` at the open span's start
        self.span_windows = 0  # windows in the open span

    def update(self, region: RegionSample) -> None:
        best, best_calls = None, 0
        for team, calls, wall in region["hist"]:
            dcalls = calls - self.seen.get(team, (0, 0.0))[0]
            if dcalls > best_calls:
                best, best_calls = team, dcalls
            self.seen[team] = (calls, wall)
        if best is not None:
            acc = self.stalls_by_team.setdefault(best, {})
            for cat, total in region["stalls_s"].items():
                acc[cat] = acc.get(cat, 0.0) + total - self.stalls_seen.get(cat, 0.0)
        self.stalls_seen = dict(region["stalls_s"])
        self.span_windows += 1
        span = {t: c - self.span_from.get(t, (0, 0.0))[0] for t, (c, _) in self.seen.items()}
        most = max(span, key=span.get, default=None)
        self.window_team = most if most is not None and span[most] >= MIN_CALLS else None
        self.window_perf = self.span_perf(most) if self.window_team is not None else None
        if self.window_team is not None:
            self.new_span()

    def span_perf(self, team: int | None) -> float | None:
        """``team``'s calls per second of region time in the open span (a call or more)."""
        calls, wall = self.seen.get(team, (0, 0.0))
        c0, w0 = self.span_from.get(team, (0, 0.0))
        return (calls - c0) / (wall - w0) if calls > c0 and wall > w0 else None

    def new_span(self) -> None:
        """Ends the open span: the next measurement starts at this window."""
        self.span_from = dict(self.seen)
        self.span_windows = 0

    def measured(self) -> dict[int, tuple[int, float]]:
        """team -> (calls, wall) for team sizes with enough calls."""
        return {t: cw for t, cw in self.seen.items() if cw[0] >= MIN_CALLS and cw[1] > 0}

    def perf(self, team: int) -> float | None:
        calls, wall = self.seen.get(team, (0, 0.0))
        return calls / wall if calls >= MIN_CALLS and wall > 0 else None


def mostly_at(history: RegionHistory, team: int) -> bool:
    """Whether at least ``OWN_SHARE`` of the region's calls ran with ``team`` threads."""
    total = sum(c for c, _ in history.seen.values())
    return total > 0 and history.seen.get(team, (0, 0.0))[0] >= OWN_SHARE * total


def anchor_t1(one: TeamPrediction, region: RegionSample, history: RegionHistory) -> TeamPrediction:
    """The one-sample prediction with T(1) measured instead of taken from busy time.

    Busy time at n threads is work only while threads do not share memory bandwidth and
    cache: once they do, each call's work grows with the team and the model, which takes
    T(1) = work at n, predicts too much.  A region whose history holds calls at 1 thread
    (probes) has T(1) measured: the curve is rescaled to it, T(n) for n >= 2 kept.  Where
    probing's cost cap stopped short of 1 thread, the smallest size probed, m, stands in:
    the curve is rescaled so that T(m) is the measured one.  The ratio is the bandwidth and
    cache term; ``basis`` shows it.
    Regions that hold locks for more than ``LOCK_SHARE`` of their busy time are left alone:
    there the extra work per call at n is the lock's hand-off, which the queue model
    already carries from n0 on (measured: rescaling omp_critical moved its S(16) from 5.6
    to 3.5, measured 5.7)."""
    n0 = int(region["threads"])
    smaller = [t for t in history.measured() if t < n0 and t in one.threads]
    holds = sum((region.get("hold_s") or {}).values()) if region.get("hold_s") else region["serial_s"]
    if n0 < 2 or not smaller or one.work_s <= 0 or holds > LOCK_SHARE * float(region["busy_s"]):
        return one
    m = min(smaller)
    calls, wall = history.seen[m]
    modelled = one.work_s / max(1, int(region["calls"])) / one.speedup[one.threads.index(m)]
    f = (wall / calls) / modelled  # measured over modelled T(m)
    speedup = [s * f if n > 1 else 1.0 for n, s in zip(one.threads, one.speedup)]
    # The band keeps both readings: the 1-thread calls are few (probes: 2 per round).
    low = [min(lo, lo * f) if n > 1 else 1.0 for n, lo in zip(one.threads, one.low)]
    high = [max(hi, hi * f) if n > 1 else 1.0 for n, hi in zip(one.threads, one.high)]
    basis = f"contention + bandwidth: work/call x{1 / f:.2f} from {m} to {n0} threads"
    pred = type(one)(one.threads, speedup, low, high, fastest_count(one.threads, speedup), basis,
                     one.fitted, one.bottleneck, work_s=one.work_s * f)
    pred.bandwidth = 1 / f
    return pred


def reaches(history: RegionHistory, target: int) -> bool:
    """Whether the region's own measurements reach the largest count predicted, from 1
    thread or at three sizes (``interpolate``: measured where measured, no fit)."""
    measured = history.measured()
    return len(measured) >= 2 and max(measured) >= target and (1 in measured or len(measured) >= 3)


def extrapolate(history: RegionHistory, target: int) -> TeamPrediction | None:
    """Speedups from the region's time per call at the team sizes it ran with (corecast's
    ``auto``; ESTIMA joins it when stalls per team size are known at enough sizes)."""
    measured = history.measured()
    if len(measured) < 2:
        return None
    counts = prediction_counts(target)
    if reaches(history, target):
        return interpolate(history, counts)
    if len(measured) == 2:
        return two_sizes(history, counts)
    load_numeric()  # numpy/scipy: only for regions run at several sizes, beyond them
    from ..curve.prediction import predict

    teams = sorted(measured)
    per_call = [measured[t][1] / measured[t][0] for t in teams]
    stalls = None
    cats = sorted({c for t in teams for c, v in history.stalls_by_team.get(t, {}).items() if v > 0})
    if cats and all(t in history.stalls_by_team for t in teams):
        stalls = {c: [max(history.stalls_by_team[t].get(c, 0.0), 0.0) / measured[t][0] for t in teams]
                  for c in cats}
    try:
        # No fit_quality: the report and the JSON Lines carry none of it, and it costs a refit.
        pred = predict(teams, per_call, metric="time", upto=max(counts), method="auto", stalls=stalls,
                       with_fit_quality=False)
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
    calls = sum(c for c, _ in history.seen.values())
    # ESTIMA names the future bottleneck when it was one of auto's members.
    return TeamPrediction(counts, speedup, low, high, fastest_count(counts, speedup), basis, [],
                          pred.extras.get("future_bottleneck"), work_s=t1 * calls)


def two_laws(per_call: dict[int, float]) -> tuple[dict[str, float], dict[str, float]] | None:
    """Amdahl's law T(n) = s + p/n and a power law T(n) = c n^-k, each fitted by least
    squares to a region's time per call at its team sizes (linear in 1/n, and in log n for
    the power law: closed forms, no numpy or scipy).  Through two sizes both are exact;
    None below two.  Amdahl's line may reach zero or below: callers check its times."""
    xs = list(per_call)
    if len(xs) < 2:
        return None

    def line(u: list[float], v: list[float]) -> tuple[float, float]:  # v = a + b u
        mu, mv = sum(u) / len(u), sum(v) / len(v)
        b = sum((x - mu) * (y - mv) for x, y in zip(u, v)) / sum((x - mu) ** 2 for x in u)
        return mv - b * mu, b

    serial, p = line([1 / n for n in xs], [per_call[n] for n in xs])
    c, minus_k = line([math.log(n) for n in xs], [math.log(per_call[n]) for n in xs])
    return {"serial": serial, "p": p}, {"log_c": c, "k": -minus_k}


def _law_times(laws: tuple[dict[str, float], dict[str, float]], n: float) -> tuple[float, float]:
    amdahl, power = laws
    return amdahl["serial"] + amdahl["p"] / n, math.exp(power["log_c"] - power["k"] * math.log(n))


def two_sizes(history: RegionHistory, counts: list[int]) -> TeamPrediction | None:
    """Speedups from two team sizes a < b: two points fix a two-parameter law and cannot
    choose between them, so both are drawn through them, Amdahl's T(n) = s + p/n (the gain
    saturates) and a power law T(n) = T(a) (n/a)^-k (it goes on), their geometric mean the
    speedup and the pair the band.  No fit, so no numpy or scipy: auto's members over two
    points ran scipy at the program's exit for half a second of CPU (``--target 64`` of a
    program that changes its team size, on the 2-core VM) and fitted nothing two points do
    not already fix.  None where Amdahl's line puts a time at or below zero."""
    measured = history.measured()
    a, b = sorted(measured)
    laws = two_laws({t: w / c for t, (c, w) in measured.items()})
    times = {n: _law_times(laws, n) for n in counts}
    if min(t for pair in times.values() for t in pair) <= 0:
        return None
    amdahl1, power1 = times[1]
    t1 = math.sqrt(amdahl1 * power1)
    speedup, low, high = [], [], []
    for n in counts:
        amdahl, power = times[n]
        pair = (amdahl1 / amdahl, power1 / power)
        speedup.append(t1 / math.sqrt(amdahl * power))
        low.append(min(pair))
        high.append(max(pair))
    calls = sum(c for c, _ in history.seen.values())
    basis = f"history: 2 team sizes ({a}, {b}), Amdahl and a power law through them"
    return TeamPrediction(counts, speedup, low, high, fastest_count(counts, speedup), basis, [],
                          work_s=t1 * calls)


def interpolate(history: RegionHistory, counts: list[int]) -> TeamPrediction | None:
    """Speedups where the region's own measurements reach the largest predicted count (as
    after steering on the machine it ran on): measured where measured, between two measured
    sizes a power law through them, and no fit with numpy or scipy (the exit of a steered
    program must not load them: half a second of CPU after the program's own end).  An
    interpolated count's band spans its two neighbours' speedups.  Where 1 thread was not
    measured (steering that stopped at 4 of 16), T(1) and the counts below the smallest
    size come from Amdahl's law and a power law fitted to the sizes (``two_laws``): their
    geometric mean, and the pair in the band.  None where Amdahl's line has nothing
    positive to extend."""
    measured = history.measured()
    teams = sorted(measured)
    per_call = {t: measured[t][1] / measured[t][0] for t in teams}
    below: dict[int, tuple[float, float]] = {}  # n -> the two laws' times, where not measured
    if 1 not in per_call:
        laws = two_laws(per_call)
        below = {n: _law_times(laws, n) for n in counts if n < teams[0]}
        if not below or min(t for pair in below.values() for t in pair) <= 0:
            return None
    t1s = below[1] if below else (per_call[1], per_call[1])
    t1 = math.sqrt(t1s[0] * t1s[1])
    speedup, low, high = [], [], []
    for n in counts:
        if n in below:
            s = t1 / math.sqrt(below[n][0] * below[n][1])
            lo, hi = sorted((t1s[0] / below[n][0], t1s[1] / below[n][1]))
        elif n in per_call:
            s = t1 / per_call[n]
            lo, hi = sorted((t1s[0] / per_call[n], t1s[1] / per_call[n]))
        else:
            a = max(t for t in teams if t < n)
            b = min(t for t in teams if t > n)
            f = math.log(n / a) / math.log(b / a)
            s = t1 / (per_call[a] ** (1 - f) * per_call[b] ** f)
            lo, hi = sorted((min(t1s) / per_call[a], max(t1s) / per_call[b]))
        speedup.append(s)
        low.append(min(lo, s))
        high.append(max(hi, s))
    calls = sum(c for c, _ in history.seen.values())
    basis = f"history: measured at {len(teams)} team sizes, interpolated between"
    if below:
        basis += f"; below {teams[0]}, Amdahl and a power law"
    return TeamPrediction(counts, speedup, low, high, fastest_count(counts, speedup), basis, [],
                          work_s=t1 * calls)


def combine(one_sample: TeamPrediction, from_history: TeamPrediction | None,
            sizes: int, measured: bool = False) -> TeamPrediction:
    """History wins from three team sizes on, and where its measurements reach every count
    predicted (``measured``: ``reaches``; steering on the machine it ran on measured them);
    else, with two sizes, the geometric mean of both."""
    if from_history is None:
        return one_sample
    if sizes >= 3 or measured:
        from_history.bottleneck = from_history.bottleneck or one_sample.bottleneck
        return from_history
    gm = [math.sqrt(a * b) for a, b in zip(one_sample.speedup, from_history.speedup)]
    lo = [min(a, b) for a, b in zip(one_sample.low, from_history.low)]
    hi = [max(a, b) for a, b in zip(one_sample.high, from_history.high)]
    work = math.sqrt(one_sample.work_s * from_history.work_s)  # T(1) of the mean curve
    return TeamPrediction(one_sample.threads, gm, lo, hi, fastest_count(one_sample.threads, gm),
                          "geometric mean of the one-sample model and 2 team sizes' history",
                            one_sample.fitted, one_sample.bottleneck, work)


def probe_basis(basis: str, probes: dict[int, int], room: int = 0) -> str:
    """``basis`` naming the probe calls (CORECAST_PROBE) in the history it rests on,
    shortened to fit the C field with ``room`` characters left for a note after it."""
    sizes = ",".join(str(t) for t in sorted(probes))
    calls = sum(probes.values())
    threads = "thread" if sizes == "1" else "threads"
    most = BASIS_LEN - room
    for note in (f" (probes: {calls} calls at {sizes} {threads})", f" (probes at {sizes})", " (probes)"):
        if len(basis) + len(note) <= most:
            return basis + note
    return basis[: most - len(" (probes)")] + " (probes)"
