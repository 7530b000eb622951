"""The two-level queueing model of memory contention on a NUMA machine (Cho, Oh and Egger,
"Online Scalability Characterization of Data-Parallel Programs on Many Cores", PACT 2016,
section 3), and its inputs.

A program's memory behaviour is three per-memory-node rates per work cycle, sampled on
one CPU node: ``llc[m]`` LLC misses to memory m per core, ``bus[m]`` DRAM requests to m per
core (reads and writes), ``mct[m]`` memory-controller requests at m per node.  For a
program p on CPU nodes N^p next to co-running programs P:

    lam_m        = sum_p MCT_m^p |N^p| / sum_p |N^p|
    ctrl_m       = Q(sum_p |N^p|, 1/D_m, lam_m)                 controller queue, nodes as customers
    ratio[m]     = BUS_m / sum BUS
    bus_delay    = sum_{n in N^p, m} D_b[n][m] ratio[m] / |N^p|
    R_m          = Q(cores per node, 1/(bus_delay + ctrl_m), BUS_m)   bus queue, cores as customers
    C(N)         = (W/N) sum_m LLC_m R_m
    S            = (W + C(1)) / (W/N + C(N))

Speedups here are relative to the program alone on the first node of the machine's fill
order (the issue's contract), i.e. ``S(k) = k (1 + M(alone, 1 node)) / (1 + M(k nodes))``
with ``M = sum_m LLC_m R_m`` the memory cycles per work cycle.

Raw counts (``total_cycles`` given) become rates through the paper's work-cycle
iteration ``W_{i+1} = T - sum_m L_m R_m(rates at W_i)``, ``W_0 = T``; ``W_5`` is used when
the iteration has settled by then, else ``T = W + sum_m L_m R_m`` is solved by bisection
(with heavy traffic the plain iteration oscillates; a note says so).

Standard library only: the runtime calls it inside profiled programs.  It runs over 400 lines: the
model and the three ways to its rates (given, raw counts through the W iteration, and
fitted without counters, its search comparing cheap errors first) are read together.
"""
from __future__ import annotations

import math
from itertools import repeat
from operator import add, mul

from ..recording.values import json_number, shown_value
from .machine.numa import Machine
from .queueing import Q, mva_response_times, response_times
from .scaling import ScalingPrediction

TYPE_CHECKING = False  # typing costs a profiled program start-up time: annotations only
if TYPE_CHECKING:
    from typing import Any, Sequence

W_ITERATIONS = 5  # the paper's W_5
W_FLOOR = 0.01  # work cycles never below 1% of the total (delays too large for the sample)
W_SETTLED = 1e-3  # W_5 and W_4 this close (share of T): the iteration has settled
# fit_rate: a cheap and an exact rms log error closer than this, plus their sums' rounding
# (see there), are ordered by the exact ones (they differ by about 1e-15: measured)
FIT_SURE = 1e-12


class SampleError(ValueError):
    """A sample that cannot be used with a machine, with a one-line reason."""


class Rates:
    """Per-work-cycle rates of one program, one entry per memory node."""

    __slots__ = ("llc", "bus", "mct", "notes")

    def __init__(self, llc: list[float], bus: list[float], mct: list[float],
                 notes: list[str] | None = None):
        self.llc, self.bus, self.mct = llc, bus, mct
        self.notes = notes or []

    def to_dict(self) -> dict[str, Any]:
        return {"llc": self.llc, "bus": self.bus, "mct": self.mct}

    def scaled(self, factor: float) -> "Rates":
        return Rates([v * factor for v in self.llc], [v * factor for v in self.bus],
                     [v * factor for v in self.mct], self.notes)


class NumaPrediction(ScalingPrediction):
    """The NUMA model's answer for a program: predicted speedup per node count
    (1..len(speedup)) and the preferred count (no band)."""

    __slots__ = ("machine", "speedup", "preferred", "rates", "notes", "efficiency")

    def __init__(self, machine: Machine, speedup: list[float], preferred: int, rates: Rates,
                 notes: list[str], efficiency: float | None):
        self.machine = machine
        self.speedup = speedup
        self.preferred = preferred
        self.rates = rates
        self.notes = notes
        self.efficiency = efficiency

    count_unit = "NUMA nodes"
    basis = "NUMA queueing model (Cho, Oh and Egger, PACT 2016)"

    @property
    def counts(self) -> list[int]:
        return list(range(1, len(self.speedup) + 1))

    def to_dict(self) -> dict[str, Any]:
        c = self.machine.cores_per_node
        return {"machine": self.machine.name,
                "predictions": [{"nodes": k, "cores": k * c, "speedup": round(s, 6)}
                                for k, s in enumerate(self.speedup, 1)],
                "preferred_nodes": self.preferred,
                # the best count whether or not an efficiency picked a smaller preferred one
                "fastest_nodes": preferred_nodes(self.speedup),
                # predict's and sweep's unit-neutral keys, beside the ones in nodes
                "count_unit": self.count_unit,
                "preferred_count": self.preferred,
                "fastest_count": preferred_nodes(self.speedup),
                "efficiency": self.efficiency,
                "rates": self.rates.to_dict(),
                "notes": self.notes}


# ---- the model ---------------------------------------------------------------------------
def controller_delays(machine: Machine, programs: Sequence[tuple[Rates, int]]) -> list[float]:
    """``ctrl_m`` for every memory node, given (rates, node count) of every running program.

    The customers of controller m are the nodes whose program sends it requests: the
    paper's sum over all programs, less those with ``MCT_m = 0`` (a node that never asks
    is no customer of a finite-source queue; counting it with the averaged rate would make
    a CPU-bound co-runner slow the program down, which the paper measured it does not)."""
    out = []
    seen: dict = {}  # nodes asked alike (traffic spread evenly) share one queue: solved once
    columns = list(zip(*[r.mct for r, _ in programs]))  # per memory node: each program's MCT_m
    for m in range(machine.nodes):
        demand = columns[m]
        q = seen.get(demand)
        if q is None:
            users = [(v, k) for v, (_, k) in zip(demand, programs) if v > 0]
            total = sum(k for _, k in users)
            lam = sum(v * k for v, k in users) / total if total else 0.0
            q = seen[demand] = Q(max(total, 1), 1.0 / machine.controller_delay, lam)
        out.append(q)
    return out


def bus_delay(machine: Machine, rates: Rates, nodes: Sequence[int]) -> float:
    """The program's mean uncongested bus delay over its nodes, weighted by where its
    DRAM requests go (uniformly when it makes none)."""
    total = sum(rates.bus)
    k = machine.nodes
    ratio = [b / total for b in rates.bus] if total > 0 else [1.0 / k] * k
    return sum(machine.bus_delay[n][m] * ratio[m] for n in nodes for m in range(k)) / len(nodes)


def memory_cycles(machine: Machine, rates: Rates, nodes: Sequence[int],
                  others: Sequence[tuple[Rates, int]] = (), cores: int | None = None,
                  delay: float | None = None, ctrl: Sequence[float] | None = None) -> float:
    """``M = sum_m LLC_m R_m``: memory cycles per work cycle of one core of a program on
    ``nodes`` next to ``others`` ((rates, node count) each).  ``cores`` active per node
    (default: all of them) is the bus queue's population; ``delay`` is
    ``bus_delay(machine, rates, nodes)`` and ``ctrl`` ``controller_delays`` for these
    programs, where the caller already has them."""
    c = machine.cores_per_node if cores is None else cores
    return memory_cycles_at(machine, rates, nodes, [c], others, delay, ctrl)[0]


def memory_cycles_at(machine: Machine, rates: Rates, nodes: Sequence[int], cores: Sequence[int],
                     others: Sequence[tuple[Rates, int]] = (), delay: float | None = None,
                     ctrl: Sequence[float] | None = None, exact: bool = True) -> list[float]:
    """``memory_cycles`` at each bus-queue population in ``cores``, the same floats: each
    distinct bus queue is solved for all of them in one call (``response_times``).  With
    ``exact=False`` the queues are MVA's and each queue's LLC rates are summed before the
    product: within about 1e-13 relative, not bit for bit, for a search's comparisons
    (``fit_rate``)."""
    if ctrl is None:
        ctrl = controller_delays(machine, [(rates, len(nodes)), *others])
    bd = bus_delay(machine, rates, nodes) if delay is None else delay
    totals = [0.0] * len(cores)
    if not exact:
        llc_of: dict = {}
        for m in range(machine.nodes):
            if rates.llc[m] > 0:
                key = (ctrl[m], rates.bus[m])
                llc_of[key] = llc_of.get(key, 0.0) + rates.llc[m]
        for (c, bus), llc in llc_of.items():
            r = mva_response_times(cores, bus, 1.0 / (bd + c))
            totals = list(map(add, totals, map(mul, repeat(llc), r)))
        return totals
    seen: dict = {}  # as in controller_delays: equal queues solved once, summed as before
    for m in range(machine.nodes):
        llc = rates.llc[m]
        if llc > 0:
            key = (ctrl[m], rates.bus[m])
            r = seen.get(key)
            if r is None:  # Q(c, 1 / (bd + ctrl_m), BUS_m) at every c
                r = seen[key] = response_times(cores, rates.bus[m], 1.0 / (bd + ctrl[m]))
            totals = list(map(add, totals, map(mul, repeat(llc), r)))  # t + llc * q
    return totals


def allocation(machine: Machine, co_nodes: Sequence[int] = ()) -> tuple[list[int], list[list[int]]]:
    """Nodes open to the program (the fill order, less the co-runners') and each
    co-runner's nodes: co-runners take the last nodes of the fill order."""
    order = list(machine.fill_order)
    taken: list[list[int]] = []
    for k in co_nodes:
        if k < 1 or k >= len(order):
            raise SampleError(f"a co-runner on {k} node{'' if k == 1 else 's'} leaves no node of {machine.nodes} "
                              f"to the program")
        taken.append(order[-k:])
        order = order[:-k]
    return order, taken


def predict_nodes(machine: Machine, rates: Rates,
                  co_runners: Sequence[tuple[Rates, int]] = (),
                  efficiency: float | None = None) -> NumaPrediction:
    """Speedup at 1..K-K2 nodes relative to the program alone on one node."""
    check_rates(machine, rates)
    for r, _ in co_runners:
        check_rates(machine, r)
    free, _ = allocation(machine, [k for _, k in co_runners])
    base = 1.0 + memory_cycles(machine, rates, free[:1])
    speedup = []
    for k in range(1, len(free) + 1):
        m = memory_cycles(machine, rates, free[:k], co_runners)
        speedup.append(k * base / (1.0 + m))
    if not all(math.isfinite(s) and s > 0 for s in speedup):
        # Rates near the largest float overflow the queueing sums (inf / inf).
        raise SampleError("the sample's rates are too large to model (the memory cycles overflow)")
    notes = list(rates.notes)
    return NumaPrediction(machine, speedup, preferred_nodes(speedup, efficiency), rates, notes,
                          efficiency)


def preferred_nodes(speedup: Sequence[float], efficiency: float | None = None) -> int:
    """The best predicted count (ties: fewer nodes); with ``efficiency`` F the smallest
    count within F of the best speedup."""
    best = max(speedup)
    share = 1.0 - (efficiency or 0.0)
    tol = 1e-9 * best
    return next(k for k, s in enumerate(speedup, 1) if s >= share * best - tol)


# ---- inputs --------------------------------------------------------------------------------
def check_rates(machine: Machine, rates: Rates) -> None:
    for key in ("llc", "bus", "mct"):
        v = getattr(rates, key)
        if len(v) != machine.nodes:
            raise SampleError(f"'{key}' has {len(v)} entr{'y' if len(v) == 1 else 'ies'} but {machine.name} has "
                              f"{machine.nodes} memory node{'s' if machine.nodes != 1 else ''}")


def _values(value: Any, key: str, k: int | None) -> list[float]:
    if not isinstance(value, list) or not value:
        # llc may also be one total (_split_llc): say so where it is neither
        also = ", or one number: the total split by the DRAM request ratio" if key == "llc" else ""
        raise SampleError(f"'{key}' must be a list with one number per memory node{also}")
    out = []
    for i, v in enumerate(value):
        f = json_number(v)
        if f is None or f < 0:
            raise SampleError(f"'{key}'[{i}] must be a finite number >= 0, got {shown_value(v)}")
        out.append(f)
    if k is not None and len(out) != k:
        raise SampleError(f"'{key}' has {len(out)} entr{'y' if len(out) == 1 else 'ies'} but the machine has {k} memory node{'s' if k != 1 else ''}")
    return out


def _split_llc(d: dict, bus: list[float]) -> tuple[list[float], list[str]]:
    """LLC misses per memory node; a single total is split by the DRAM request ratio, as
    the paper does (its L3 miss counter does not say which node a miss went to)."""
    llc = d.get("llc")
    if isinstance(llc, (int, float)) and not isinstance(llc, bool):
        total = _values([llc], "llc", None)[0]
        s = sum(bus)
        share = [b / s for b in bus] if s > 0 else [1.0 / len(bus)] * len(bus)
        return [total * r for r in share], ["llc: total split by the DRAM request ratio"]
    return _values(llc, "llc", len(bus)), []


def parse_sample(d: Any, machine: Machine) -> Rates:
    """Rates from a sample object: ``{"llc", "bus", "mct"}`` per work cycle, or raw counts
    with ``"total_cycles"`` (cycles of the sampled cores together; ``"cores"`` sampled,
    default a whole node; ``"nodes"`` sampled, default 1) through the W iteration.  ``mct``
    may be left out: it is then the node's cores times ``bus`` (all of a node's requests
    reach the controllers), and a note says so."""
    if not isinstance(d, dict):
        raise SampleError("a sample is a JSON object with 'llc', 'bus' and 'mct'")
    known = {"llc", "bus", "mct", "total_cycles", "cores", "nodes", "name", "source"}
    unknown = sorted(set(d) - known)
    if unknown:
        raise SampleError(f"unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")
    for key in ("llc", "bus"):
        if key not in d:
            raise SampleError(f"missing field {key!r}")
    k = machine.nodes
    bus = _values(d["bus"], "bus", k)
    llc, notes = _split_llc(d, bus)
    if "mct" in d:
        mct = _values(d["mct"], "mct", k)
    else:
        mct = None
    if "total_cycles" not in d:
        for key in ("cores", "nodes"):
            if key in d:
                raise SampleError(f"'{key}' only goes with raw counts ('total_cycles')")
        if mct is None:
            mct = [machine.cores_per_node * b for b in bus]
            notes.append("mct: cores per node x bus")
        return Rates(llc, bus, mct, notes)
    return _from_counts(d, machine, llc, bus, mct, notes)


def _positive_int(d: dict, key: str, default: int) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise SampleError(f"'{key}' must be a positive integer, got {shown_value(v)}")
    return v


def _from_counts(d: dict, machine: Machine, llc: list[float], bus: list[float],
                 mct: list[float] | None, notes: list[str]) -> Rates:
    t = json_number(d["total_cycles"])
    if t is None or t <= 0:
        raise SampleError(f"'total_cycles' must be a number > 0, got {shown_value(d['total_cycles'])}")
    nodes = _positive_int(d, "nodes", 1)
    if nodes > machine.nodes:
        raise SampleError(f"'nodes' is {nodes} but the machine has {machine.nodes}")
    cores = _positive_int(d, "cores", machine.cores_per_node * nodes)
    # Per core: the paper divides node counts by the node's cores (section 4.3).
    t_core = t / cores
    l_core = [v / cores for v in llc]
    b_core = [v / cores for v in bus]
    m_node = [v / nodes for v in mct] if mct is not None else [v * cores / nodes for v in b_core]
    if mct is None:
        notes.append("mct: cores per node x bus")
    sampled = machine.fill_order[:nodes]
    per_node = max(1, min(machine.cores_per_node, round(cores / nodes)))

    def stalls(w: float) -> float:
        """Memory stall cycles per core if the work took ``w`` cycles: sum_m L_m R_m."""
        r = Rates([v / w for v in l_core], [v / w for v in b_core], [v / w for v in m_node])
        return w * memory_cycles(machine, r, sampled, cores=per_node)

    floor = W_FLOOR * t_core
    w, prev = t_core, t_core
    for _ in range(W_ITERATIONS):
        prev, w = w, max(t_core - stalls(w), floor)
    if abs(w - prev) > W_SETTLED * t_core:
        # The plain iteration oscillates once stalls are a large share of T (the paper's
        # claim that it converges holds only for light traffic): solve T = W + stalls(W).
        # W + stalls(W) need not be monotone: take its largest root, the one the
        # iteration from W_0 = T approaches when it does converge.
        w, hi = floor, t_core
        for i in range(1, 241):
            lo = t_core * W_FLOOR ** (i / 240)
            if lo + stalls(lo) <= t_core:
                for _ in range(100):
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if mid + stalls(mid) <= t_core else (lo, mid)
                w = lo
                notes.append(f"W_{W_ITERATIONS} had not settled: T = W + stalls solved directly")
                break
            hi = lo
    if w <= floor:
        notes.append("work cycles hit their floor: the machine's delays exceed the sample's cycles")
    notes.append(f"work cycles W = {w / t_core:.3g} of the total")
    return Rates([v / w for v in l_core], [v / w for v in b_core], [v / w for v in m_node], notes)


def fit_rate(machine: Machine, team_times: Sequence[tuple[int, float]],
             share: Sequence[float] | None = None) -> tuple[float, float]:
    """Without counters: the DRAM request rate per core per work cycle (LLC misses taken
    equal to it) that makes the model's one-node curve match the measured work time per
    call at the team sizes seen, ``team_times = [(threads, seconds per call)]`` (two or
    more sizes within one node).  ``share`` is where the requests go (default: evenly
    over the memory nodes).  Returns (rate, rms log error).

    Model: ``t(k) = A (1 + M(r, k cores on the first node)) / k``; A is eliminated in
    closed form, r found by golden-section search on log r."""
    pts = [(k, t) for k, t in team_times if k >= 1 and t > 0]
    if len({k for k, _ in pts}) < 2:
        raise SampleError("fitting the memory rate needs work times at two team sizes or more")
    share = list(share) if share is not None else [1.0 / machine.nodes] * machine.nodes
    first = machine.fill_order[:1]

    def rates(r: float) -> Rates:
        b = [r * s for s in share]
        return Rates(b, b, [0.0] * machine.nodes)

    # One program on one node: each controller has that node as its one customer, who
    # never queues (Q(1, mu, lam) = 1/mu), so the controllers' delays are the same at every
    # rate and team size.  Solved once here, not per rate and size: a third of the fit's
    # CPU, which a --target-machine run spends at its exit.
    ctrl = controller_delays(machine, [(rates(0.0), len(first))])

    sizes = [k for k, _ in pts]
    log_t = [math.log(t) for _, t in pts]

    def error(r: float, exact: bool = True) -> float:
        rr = rates(r)
        bd = bus_delay(machine, rr, first)  # bus rates alone: the same at every team size
        # k active cores are the bus queue's population; their requests to the controllers
        # (mct) enter only ctrl, solved above
        mem = memory_cycles_at(machine, rr, first, sizes, delay=bd, ctrl=ctrl, exact=exact)
        logs = [lt - math.log((1.0 + m) / k) for lt, k, m in zip(log_t, sizes, mem)]
        mean = sum(logs) / len(logs)
        return math.sqrt(sum((v - mean) ** 2 for v in logs) / len(logs))

    # The search's answer is the exact error's, bit for bit, but most of its comparisons
    # are decided by far more than the rounding of an error: those compare a cheap error
    # (MVA's queues, memory_cycles_at(exact=False): a quarter of the CPU), the rest, and
    # every value returned, the exact one.  ``sure`` bounds the two errors' difference: the
    # memory cycles agree to about 1e-14 relative (measured: populations up to 4096), and
    # the sums of n logs of size L round to within n L ulps (512 ulps each here).
    sure = FIT_SURE + (len(pts) + max(sizes)) * (max(abs(v) for v in log_t) + 30.0) * 2.0 ** -44
    exact_at: dict[float, float] = {}

    def exact(r: float) -> float:
        f = exact_at.get(r)
        if f is None:
            f = exact_at[r] = error(r)
        return f

    def cheap(r: float) -> float:
        f = error(r, exact=False)
        return f if math.isfinite(f) else exact(r)

    # rate scale: one request per uncongested round trip is already saturating
    unit = 1.0 / (machine.bus_delay[first[0]][first[0]] + machine.controller_delay)
    grid = [unit * 10 ** (e / 8) for e in range(-48, 17)]  # 1e-6 .. 100 x unit
    errs = [cheap(r) for r in grid]
    low = min(errs)
    # the exact minimum (ties: the first) is among those within 2 sure of the cheap one
    # (none are when the errors are NaN: then all)
    near = [i for i, e in enumerate(errs) if e <= low + 2 * sure] or range(len(grid))
    best = min(near, key=lambda i: (exact(grid[i]), i))
    if exact(grid[0]) <= exact(grid[best]) + 1e-12:
        return 0.0, error(0.0)  # no contention visible: the smallest rate fits as well
    lo = math.log(grid[max(best - 1, 0)])
    hi = math.log(grid[min(best + 1, len(grid) - 1)])
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = cheap(math.exp(a)), cheap(math.exp(b))
    for _ in range(40):
        if abs(fa - fb) <= 2 * sure:  # too close for the cheap errors to order
            fa, fb = exact(math.exp(a)), exact(math.exp(b))
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = cheap(math.exp(a))
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = cheap(math.exp(b))
    r = math.exp((lo + hi) / 2)
    return r, exact(r)
