"""The one-sample contention model's curve: a team model at n0 (``lockqueue.TeamModel``)
to T(n) per call, its band, the losses per part and the future bottleneck.

T(n) = S + max(f(n) locks(n), locks(n) + idle(n)) + o(n), speedup S(n) = T(1) / T(n):

* S, the serialised work, does not shrink with n (Amdahl); locks(n) is the lock part
  (``lockqueue``).
* **Imbalance** at the barriers: per thread and call i0 = idle / n0.  Central: the
  spread of per-thread work of random iteration costs grows as sqrt(work per thread) and
  the latest of n threads as sqrt(2 ln n):  idle(n) = i0 sqrt(n0/n) g(n)/g(n0),
  g(n) = sqrt(2 ln n).  The band takes the smallest and largest of this, a spread
  proportional to the work per thread (``bound``'s i0 (n0/n) g(n)/g(n0)) and a spread
  fixed by the chunk size (dynamic schedules: i0, constant).  The part of i0 that is the
  barriers' own latency (``contention.barrier_latency``) does not spread: at the region's
  end barrier it stays constant; at barriers passed within a call (``repeated``: explicit
  and worksharing barriers; a process's pthread barriers) it is the wait for the latest of
  n threads' delays, whose size the work does not set, and grows as g(n)/g(n0) in the
  central and low curves (the high keeps it constant).  Measured from 2 to 16 threads on
  the 16-core machine, the wait per episode at such barriers grew 1.3-19x (NPB bt, sp, lu,
  cg, is; median about 4), and 3.5x at streamcluster's pthread barriers, while the
  region-end waits of Rodinia's lud and nw shrank.
* **Team start/join** o grows linearly with the team, o (n - 1) / (n0 - 1) (the band's
  high keeps it constant beyond n0).
* **Oversubscription**: beyond ``cores`` threads (the cores of the machine the
  predictions are for) CPU-bound work (compute, holds) takes n / cores longer:
  f(n) = max(1, n / cores).  Time-sharing also absorbs imbalance (the cores run the late
  threads while the early ones wait at the barrier), so the parallel time is the larger
  of the CPU work spread over the cores, f(n) locks(n), and the latest thread's span,
  locks(n) + idle(n) (a work/span bound; measured on a 2-core machine with
  ``examples/omp_critical.c`` at 3, 4 and 8 threads it is within 10%).

Band (low <= speedup <= high, all equal to 1 at n = 1): each part's own high and low
variant as above and in ``lockqueue``; the process model adds its serial band.

Future bottleneck (ESTIMA's term): at the target count, the part that loses the most
thread time: a lock category ("critical", "atomic", "omp_lock", "mutex", "rwlock"),
"loop_schedule", "imbalance", "serial", "runqueue" (oversubscription) or "fork_join";
None when the parts together lose less than ``BOTTLENECK_SHARE`` of n T(n).

Standard library only: imported inside profiled programs.
"""
from __future__ import annotations

import math

from .bound import TeamPrediction, prediction_counts, fastest_count
from .lockqueue import TeamModel, lock_times

BOTTLENECK_SHARE = 0.02  # below this share of n T(n) lost, there is no bottleneck


class ContentionPrediction(TeamPrediction):
    """``TeamPrediction`` plus the lost thread time per part at the target (``losses``,
    seconds over the sample); ``bottleneck`` is the future bottleneck (or None) and
    ``work_s`` T(1) over the sample, for ``contention.compose_process``."""

    __slots__ = ("losses",)

    def __init__(self, threads: list[int], speedup: list[float], low: list[float], high: list[float],
                 fastest: int, basis: str, fitted: list[str] | None = None, bottleneck: str | None = None,
                 losses: dict[str, float] | None = None, work_s: float = 0.0) -> None:
        super().__init__(threads, speedup, low, high, fastest, basis, fitted, bottleneck, work_s)
        self.losses = losses or {}


def _growth(n: int) -> float:
    return math.sqrt(2.0 * math.log(n)) if n > 1 else 0.0


def stretch(n: int, cores: int) -> float:
    return max(1.0, n / cores)


def _idle(m: TeamModel, n: int, variant: str) -> float:
    if m.idle <= 0 or m.n0 < 2 or n < 2:
        return 0.0
    g = _growth(n) / _growth(m.n0)
    latency = min(m.latency, m.idle)  # the barriers' own: splitting the work does not shrink it
    spread = m.idle - latency
    # A barrier passed many times per call waits each time for the latest of n threads'
    # delays (wake-ups, cache-line hand-offs), whose size does not shrink with the work:
    # that part grows as the latest of n draws, g (the band's high end keeps it constant)
    grown = latency * (1.0 - m.repeated) + latency * m.repeated * repeated_growth(n, m.n0)
    proportional = spread * (m.n0 / n) * g
    random_spread = spread * math.sqrt(m.n0 / n) * g
    if variant == "high":
        return latency + min(proportional, random_spread, spread)
    if variant == "low":
        return max(latency, grown) + max(proportional, random_spread, spread)
    return grown + random_spread


def repeated_growth(n: int, n0: int) -> float:
    """How the latency at barriers passed within a call grows from n0 to n threads: the
    latest of n threads' delays against n0's, g(n)/g(n0) (``benchmarks/barrier_growth.py``
    scores it against the alternatives leave-one-suite-out)."""
    return _growth(n) / _growth(n0)


def _overhead(m: TeamModel, n: int, variant: str) -> float:
    if m.overhead <= 0 or m.n0 < 2 or n < 2:
        return 0.0
    grow = (n - 1) / (m.n0 - 1)
    return m.overhead * (min(grow, 1.0) if variant == "high" else grow)


def curve(m: TeamModel, counts: list[int], variant: str) -> tuple[list[float], dict]:
    """T(n) at ``counts`` and the losses per part at the last count."""
    locks = lock_times(m, counts, variant)
    times = []
    for n in counts:
        t_lock, _ = locks[n]
        extra = max((stretch(n, m.cores) - 1.0) * t_lock, _idle(m, n, variant))
        times.append(m.serial + t_lock + extra + _overhead(m, n, variant))
    n = counts[-1]
    t_lock, lock_losses = locks[n]
    over = (stretch(n, m.cores) - 1.0) * t_lock
    idle = _idle(m, n, variant)
    losses = dict(lock_losses)
    # Oversubscription and imbalance overlap (the cores run other threads while some
    # wait at the barrier): the larger of the two is what is lost.
    losses["imbalance"] = n * idle if idle > over else 0.0
    losses["runqueue"] = n * over if over >= idle else 0.0
    losses["serial"] = (n - 1) * m.serial
    losses["fork_join"] = n * _overhead(m, n, variant)
    return times, losses


def model_time(m: TeamModel, n: int) -> float:
    return curve(m, [1, n] if n > 1 else [1], "central")[0][-1]


def bottleneck_of(losses: dict, total: float) -> str | None:
    name, value = max(losses.items(), key=lambda kv: kv[1], default=(None, 0.0))
    if name is None or value <= 0 or sum(v for v in losses.values() if v > 0) < BOTTLENECK_SHARE * total:
        return None
    return name


def predict_curves(models: dict[str, TeamModel], target: int, calls: float, basis: str,
                   fitted: list[str]) -> ContentionPrediction:
    """The prediction from the central, low and high models (``calls``: calls per sample)."""
    counts = prediction_counts(target)
    curves = {}
    losses = {}
    for variant, m in models.items():
        times, lost = curve(m, counts, variant)
        curves[variant] = [times[0] / t if t > 0 and times[0] > 0 else 1.0 for t in times]
        if variant == "central":
            losses = {k: v * calls for k, v in lost.items() if v > 0}
            total = counts[-1] * times[-1] * calls
            work = times[0] * calls
    central = curves["central"]
    low = [min(a, c) for a, c in zip(curves["low"], central)]
    high = [max(a, c) for a, c in zip(curves["high"], central)]
    return ContentionPrediction(counts, central, low, high, fastest_count(counts, central), basis,
                                fitted, bottleneck_of(losses, total), losses, work)


def ordered_fits(fitted: set) -> list[str]:
    """The fitted knobs in the order the basis lists them."""
    order = ("think_time", "hold_time", "hold_split", "handoff", "handoff_prior", "lock_cv", "lock_copies",
             "loop_cost", "serial_fraction", "cpu_share", "wait_scale")
    return [k for k in order if k in fitted] + sorted(fitted - set(order))
