"""Which of the machine's curves (``corecast calibrate``: compute e_c, bandwidth e_b;
``machine/calibration.py``) a region's one-sample prediction gets, and how: the one place
the calibration meets the runtime model.

A curve describes one kind of loss: e_c a thread's compute rate with more cores busy,
e_b a thread's share of memory bandwidth.  Applied to a region it does not suffer, it
makes the prediction worse (issue #38: one curve applied to every region took the median
error on held-out programs from 0.10 to 0.28).  So a region gets a curve only when the
run's evidence names its kind:

1. **Synchronisation**: a region whose threads wait (lock holds and waits, barriers,
   imbalance) for at least ``SYNC_SHARE`` of their time in it is bound by that, not by
   the machine: no curve (the contention model carries the waits).
2. **Work per call at a smaller team** (``TeamPrediction.bandwidth``: the growth of one
   call's work from the smallest team the history measured, probes or earlier windows,
   to the sampled one; ``history.anchor_t1``):
   - grew by ``GROWTH`` or more: the threads compete for memory bandwidth or cache:
     the bandwidth curve;
   - stayed within ``FLAT``: the threads do not slow each other down, so whatever they
     lose at larger teams is the machine's compute rate: the compute curve;
   - anything else (grew a little, or shrank as data came to fit the caches): neither.
3. **No such measurement** (no probes, no history at other sizes): no curve.

Hardware counters would be further evidence (LLC misses per cycle), but the library reads
them per process, not per region, and the predictor does not receive them; machines
without a PMU (the 16-core device machine) have none.

Applied, a curve changes the time at n by e(n0) / e(n) (the sample at n0 saw e(n0), the
model took that rate as the work): S(n) is multiplied by e(n) / e(n0) for n >= 2; T(1)
is the anchored, measured one and stays.  The basis says which curve was applied (its
evidence, the work per call's growth, is already there: ``anchor_t1``'s words), or why none
was ("no machine curve: no evidence").

Standard library only: it runs inside profiled programs.
"""
from __future__ import annotations

from .abi import SYNC_WAITS
from .bound import preferred_count
from .history import BASIS_LEN

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ...machine.calibration import Calibration
    from .bound import TeamPrediction
    from .record import RegionSample

SYNC_SHARE = 0.5  # waits at least this share of the threads' time: bound by synchronisation
GROWTH = 1.10     # work per call grew at least this much with the team: bandwidth-bound
FLAT = 1.05       # work per call within this factor either way: compute-bound


def sync_share(region: RegionSample) -> float:
    """The share of the threads' time in the region spent waiting on each other:
    synchronisation waits and serialised work (lock holds, single blocks), both inside
    busy time, and the implicit barrier's imbalance, beside it."""
    stalls = region["stalls_s"]
    imbalance = stalls.get("imbalance", 0.0)
    total = float(region["busy_s"]) + imbalance
    if total <= 0:
        return 0.0
    waits = sum(stalls.get(k, 0.0) for k in SYNC_WAITS) + imbalance + float(region["serial_s"])
    return min(1.0, waits / total)


def choose(region: RegionSample, growth: float | None) -> tuple[str | None, str]:
    """The curve the evidence calls for ("compute", "bandwidth" or None) and why.
    ``growth``: work per call at the sampled team over that at a smaller one, None when
    not measured."""
    share = sync_share(region)
    if share >= SYNC_SHARE:
        return None, f"waits {share:.0%} of its time"
    if growth is None:
        return None, "no evidence"
    if growth >= GROWTH:
        return "bandwidth", f"work/call x{growth:.2f}"
    if 1 / FLAT <= growth <= FLAT:
        return "compute", f"work/call x{growth:.2f}"
    return None, f"work/call x{growth:.2f}, neither"


def apply_machine(pred: TeamPrediction, region: RegionSample, cal: Calibration) -> str:
    """Puts into ``pred`` (sampled at ``region["threads"]``) the curve its evidence calls
    for (``pred.bandwidth`` is the work-per-call growth ``history.anchor_t1`` measured,
    which its basis shows), and returns the basis's note on it: the curve and its factor
    at the target, or why none was applied."""
    n0 = int(region["threads"])
    kind, why = choose(region, pred.bandwidth)
    curve = cal.curve(kind) if kind else None
    if kind is not None and curve is None:
        why = f"{kind}-bound, that curve not measured"
    if curve is None:
        return not_applied(why)
    e0 = curve.at(n0)
    factor = [curve.at(n) / e0 if n > 1 else 1.0 for n in pred.threads]
    pred.speedup = [s * f for s, f in zip(pred.speedup, factor)]
    pred.low = [s * f for s, f in zip(pred.low, factor)]
    pred.high = [s * f for s, f in zip(pred.high, factor)]
    pred.preferred = preferred_count(pred.threads, pred.speedup)
    return f"; {kind} curve x{factor[-1]:.2f} {n0}->{pred.threads[-1]}"


def not_applied(why: str) -> str:
    """The basis's note when no curve was applied."""
    return f"; no machine curve: {why}"


def with_note(basis: str, note: str) -> str:
    """``basis`` ending in ``note``, cut to fit the C field (``BASIS_LEN``)."""
    return basis[: BASIS_LEN - len(note)] + note
