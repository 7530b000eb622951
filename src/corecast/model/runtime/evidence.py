"""Which of the machine's curves (``corecast calibrate``: compute e_c, bandwidth e_b;
``model/machine/calibration.py``) a region's one-sample prediction gets, and how: the one place
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

Hardware counters, where a PMU could be read (``record.ProcessSample["hardware"]``; the
16-core device machine and most VMs have none), are the first signal, before the work per
call: the run's memory traffic (last-level-cache misses, a 64-byte line each, over its
wall time) against the triad's bandwidth at the region's team (``memory_share``):

- at least ``BUSY_MEMORY`` of it: the bandwidth curve;
- at most ``IDLE_MEMORY`` of it, and not bound by synchronisation: the compute curve;
- in between: the work per call decides, as without counters.

The counts are the whole process's, not the region's, so the share is an average over
serial and parallel time alike.  They also bound the process from below as a roofline
does (Williams, Waterman and Patterson, "Roofline", CACM 2009): its bytes cannot move faster
than the machine's bandwidth at n threads, T(n) >= B / bw(n) (``roofline``).  An
OpenCL kernel on a CPU device is bounded the same way by its compulsory traffic, the
bytes of its buffer arguments, where they exceed the last-level cache (``kernel_roofline``).

Applied, a curve changes the time at n by e(n0) / e(n) (the sample at n0 saw e(n0), the
model took that rate as the work): S(n) is multiplied by e(n) / e(n0) for n >= 2; T(1)
is the anchored, measured one and stays.  The basis says which curve was applied (its
evidence, the work per call's growth, is already there: ``anchor_t1``'s words), or why none
was ("no machine curve: no evidence").

Without a measurement the machine's loss is not ignored where it is sure to matter: T(1)
taken from busy time at the sampled count carries the loss the sampled team ran at, an
assumed e(n0) chosen on the development recordings (``one_thread_work``).

Standard library only: it runs inside profiled programs.
"""
from __future__ import annotations

import math

from ...recording.abi import SYNC_WAITS
from .bound import fastest_count
from .history import BASIS_LEN

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from ..machine.calibration import Calibration
    from .bound import TeamPrediction
    from ...recording.record import ProcessSample, RegionSample

SYNC_SHARE = 0.5  # waits at least this share of the threads' time: bound by synchronisation
GROWTH = 1.10     # work per call grew at least this much with the team: bandwidth-bound
FLAT = 1.05       # work per call within this factor either way: compute-bound
LINE_BYTES = 64   # what one last-level-cache miss brings from memory
BUSY_MEMORY = 0.5  # memory traffic over the triad's bandwidth at the team: bandwidth-bound
IDLE_MEMORY = 0.1  # at most this: the threads do not compete for memory


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


def bandwidth_at(cal: Calibration, n: float) -> float | None:
    """The triad's bytes per second at ``n`` threads (None: not measured)."""
    if cal.bandwidth is None or not cal.gbps:
        return None
    return cal.bandwidth.at(n) * n * cal.gbps[0] * 1e9


def memory_bytes(process: ProcessSample | None) -> float | None:
    """Bytes the run brought from memory so far (last-level-cache misses, a line each),
    None without the counter."""
    hardware = process.get("hardware") if process else None
    if not hardware or "llc_misses" not in hardware:
        return None
    return float(hardware["llc_misses"]) * LINE_BYTES


def memory_share(process: ProcessSample | None, n0: int, cal: Calibration) -> float | None:
    """The run's memory traffic per second over the triad's bandwidth at ``n0`` threads;
    None without the counter or the bandwidth curve."""
    moved, bw = memory_bytes(process), bandwidth_at(cal, n0)
    if moved is None or bw is None or not process or float(process["wall_s"]) <= 0:
        return None
    return moved / float(process["wall_s"]) / bw


def choose(region: RegionSample, growth: float | None,
           memory: float | None = None) -> tuple[str | None, str]:
    """The curve the evidence calls for ("compute", "bandwidth" or None) and why.
    ``growth``: work per call at the sampled team over that at a smaller one, None when
    not measured; ``memory``: the run's memory traffic over the triad's bandwidth at the
    team (``memory_share``), None without counters."""
    share = sync_share(region)
    if share >= SYNC_SHARE:
        return None, f"waits {share:.0%} of its time"
    if memory is not None and memory >= BUSY_MEMORY:
        return "bandwidth", f"memory {memory:.0%} of the triad's (counters)"
    if memory is not None and memory <= IDLE_MEMORY:
        return "compute", f"memory {memory:.0%} of the triad's (counters)"
    if growth is None:
        return None, "no evidence"
    if growth >= GROWTH:
        return "bandwidth", f"work/call x{growth:.2f}"
    if 1 / FLAT <= growth <= FLAT:
        return "compute", f"work/call x{growth:.2f}"
    return None, f"work/call x{growth:.2f}, neither"


def apply_machine(pred: TeamPrediction, region: RegionSample, cal: Calibration,
                  process: ProcessSample | None = None) -> str:
    """Puts into ``pred`` (sampled at ``region["threads"]``) the curve its evidence calls
    for (the counters of ``process``, the window's process record, first; then
    ``pred.bandwidth``, the work-per-call growth ``history.anchor_t1`` measured, which its
    basis shows), and returns the basis's note on it: the curve and its factor at the
    target, or why none was applied."""
    n0 = int(region["threads"])
    kind, why = choose(region, pred.bandwidth, memory_share(process, n0, cal))
    curve = cal.curve(kind) if kind else None
    if kind is not None and curve is None:
        why = f"{kind}-bound, that curve not measured"
    if curve is None:
        return not_applied(why)
    e0 = curve.at(n0)
    factor = [curve.at(n) / e0 if n > 1 else 1.0 for n in pred.threads]
    pred.scale(factor)
    return f"; {kind} curve x{factor[-1]:.2f} {n0}->{pred.threads[-1]}"


def roofline(pred: TeamPrediction, process: ProcessSample, cal: Calibration) -> str:
    """Caps the process prediction ``pred`` where its bytes cannot move fast enough:
    T(n) >= B / bw(n), so S(n) <= T(1) bw(n) / B, with B the bytes the run moved so far
    (``memory_bytes``), T(1) the prediction's (``work_s``) and bw the triad's.  B is
    scaled down where it would need more than bw at the measured team in the measured
    time (the counters also count prefetches; the triad is one access pattern), so the
    cap never falls below what was measured.  Returns the basis's note ("" when it does
    not bind, or without the counter or the bandwidth curve)."""
    moved = memory_bytes(process)
    n0 = max(1, int(process.get("team_threads") or process["threads"]))
    bw0, wall = bandwidth_at(cal, n0), float(process["wall_s"])
    if not moved or bw0 is None or wall <= 0 or pred.work_s <= 0:
        return ""
    moved = min(moved, wall * bw0)
    if not hold_under(pred, [pred.work_s * bandwidth_at(cal, n) / moved for n in pred.threads]):
        return ""
    return f"; roofline {moved / 1e9:.3g} GB at {bandwidth_at(cal, pred.threads[-1]) / 1e9:.3g} GB/s"


def hold_under(pred: TeamPrediction, caps: list[float]) -> bool:
    """``pred`` (in place) held under ``caps`` (one per count) at 2 or more threads: the
    speedup and the band's high end (never below the speedup), the low end never above
    the speedup, the fastest count again; True where a cap bound."""
    capped = False
    for i, (n, cap) in enumerate(zip(pred.threads, caps)):
        if n > 1 and pred.speedup[i] > cap:
            pred.speedup[i] = cap
            capped = True
        if n > 1 and pred.high[i] > cap:  # the band's high end is held too: say so
            pred.high[i] = max(cap, pred.speedup[i])
            capped = True
        pred.low[i] = min(pred.low[i], pred.speedup[i])
    if capped:
        pred.fastest = fastest_count(pred.threads, pred.speedup)
    return capped


def kernel_roofline(pred: TeamPrediction, moved: float, launches: int, wall: float, n0: int,
                    cal: Calibration | None) -> str:
    """Caps the prediction ``pred`` of an OpenCL kernel on a CPU device (its compute units
    are this host's cores) from a sample of ``launches`` launches at ``n0`` units that took
    ``wall`` seconds of device time and read or wrote ``moved`` bytes of buffers at least
    once (their compulsory traffic): where one launch's buffers exceed the last-level
    cache, a launch at n units takes at least its bytes over bw(n), so S(n) <= T(1) bw(n) /
    moved, T(1) the prediction's (``work_s``, over the same launches) and bw the triad's
    (the roofline: Williams, Waterman and Patterson, CACM 2009).  ``moved`` is held to
    what the sample could have moved at bw(n0) in the prediction's own time at n0 (the
    device time less the run-queue wait of other load; ``wall`` where n0 is past the
    target), so the cap never falls below the sampled point.  Returns the basis's note:
    the limit where it binds, why none applies where that is not known, "" where it does
    not bind."""
    if cal is None or cal.bandwidth is None or not cal.gbps:
        return "; bandwidth unmeasured (no machine calibration)"
    if not cal.llc_bytes:
        return "; bandwidth cap not applied: the calibration has no LLC size"
    per_launch = moved / launches if launches > 0 else 0.0
    if per_launch <= cal.llc_bytes or wall <= 0 or pred.work_s <= 0:
        return ""
    n0 = max(1, n0)
    if n0 in pred.threads and pred.speedup[pred.threads.index(n0)] > 0:
        wall = pred.work_s / pred.speedup[pred.threads.index(n0)]
    held = min(moved, wall * bandwidth_at(cal, n0))
    caps = [pred.work_s * bandwidth_at(cal, n) / held for n in pred.threads]
    if not hold_under(pred, caps):
        return ""
    top = pred.threads[-1]
    if pred.speedup[-1] >= caps[-1] * (1 - 1e-9):
        pred.bottleneck = "bandwidth"
    return f"; bandwidth: {per_launch / 1e6:.0f} MB per launch, {bandwidth_at(cal, top) / 1e9:.1f} GB/s at {top}"


# The machine's loss of per-thread speed at n busy threads assumed where nothing measured
# it: exp(-LOSS_PER_DOUBLING log2 n).  Chosen leave-one-suite-out on the development
# recordings by ``benchmarks/work_prior.py`` (which says when this is not its choice).
LOSS_PER_DOUBLING = 0.03


def prior_loss(n: float) -> float:
    """The assumed loss e(n) at ``n`` busy threads (1 at one thread)."""
    return math.exp(-LOSS_PER_DOUBLING * math.log2(max(n, 1.0)))


def one_thread_work(pred: TeamPrediction, measured: int) -> TeamPrediction:
    """``pred`` (in place; returned) with T(1) taken as the work of threads that ran ``measured``
    at once times the loss they ran at, ``prior_loss(measured)``: busy time at n0 threads
    is each thread's work at the speed n0 busy threads keep, not one thread alone's, so a
    one-sample model that takes it as T(1) predicts too much (on the 16-core machine a
    ``--probe`` run at 16 threads over-predicted its own S(16) by a median 29%).  T(n) for
    n >= 2 stays the model's: from 2 and 4 threads the model's own growth of the waits
    already carried what the machine loses beyond n0 (``benchmarks/work_prior.py`` tells:
    e(n) on every count made those predictions worse).  ``measured``: the smallest team
    whose time per call the prediction is anchored to (the sampled one, or the smallest
    a probe ran); 1 changes nothing."""
    f = prior_loss(measured)
    if f >= 1.0:
        return pred
    pred.scale([f if n > 1 else 1.0 for n in pred.threads])
    pred.work_s *= f
    if "machine_loss" not in pred.fitted:
        pred.fitted = list(pred.fitted) + ["machine_loss"]
    return pred


def not_applied(why: str) -> str:
    """The basis's note when no curve was applied."""
    return f"; no machine curve: {why}"


def with_note(basis: str, note: str) -> str:
    """``basis`` ending in ``note``, cut to fit the C field (``BASIS_LEN``): at its last
    whole item (", ", "; "), else before a colon's clause, else after the last word that
    fits, never inside a word (a clause cut at a word can say something else: "waiting on
    the device (66% of wall): more CPU")."""
    room = BASIS_LEN - len(note)
    if len(basis) <= room:
        return basis + note
    cut = basis[:room]
    for sep in ("; ", ", ", ": ", " "):
        at = cut.rfind(sep)
        if at > 0:
            return cut[:at] + note
    return cut + note
