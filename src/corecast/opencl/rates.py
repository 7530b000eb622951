"""Each kernel's rates from the snapshot intervals of a sample (see ``profile``): every
interval is one equation, what the runtime's threads added in it = sum over the kernels
that ran in it of rate x the kernel's time in it; the normal equations of those are summed
here and solved for rates >= 0 (busy compute units and run-queue wait at most the compute
units)."""
from __future__ import annotations

import math

SOLVER_SWEEPS = 400  # coordinate-descent sweeps of the bounded least squares
MIN_BUSY = 0.01   # busy share of the compute units below which a sample says nothing


def add_interval(a: tuple, b: tuple, timeline: list, normal: dict, rhs: dict, busy_max: dict) -> None:
    """The interval between snapshots ``a`` and ``b`` ((t_ns, cpu_ns, shim, busy threads,
    runq_ns)) into the sums, given the launches' host spans in ``timeline``."""
    over: dict = {}
    for rec, hs, he in timeline:
        ov = min(he, b[0]) - max(hs, a[0])
        if ov > 0:
            over[rec] = over.get(rec, 0) + ov
    if not over:
        return  # nothing ran: the workers slept
    d = [b[1] - a[1], b[4] - a[4]]
    if a[2] is not None and b[2] is not None:
        for fa, fb in zip(a[2], b[2]):
            d.extend(vb - va for va, vb in zip(fa, fb))
    span = b[0] - a[0]
    for r1, o1 in over.items():
        row = rhs.get(r1)
        if row is None or len(row) != len(d):
            row = rhs[r1] = [0.0] * len(d)
        for q, v in enumerate(d):
            row[q] += o1 * v
        for r2, o2 in over.items():
            normal[(r1, r2)] = normal.get((r1, r2), 0.0) + o1 * o2
        if o1 >= 0.9 * span:
            busy_max[r1] = max(busy_max.get(r1, 0), b[3])


def solve_rates(normal: dict, rhs: dict, busy_max: dict, names: list) -> None:
    """Each kernel's rates from the sums, into its record's sample (``names``: the shim's
    wait categories, the columns after CPU time and run-queue wait)."""
    recs = list(rhs)
    if not recs:
        return
    a = [[normal.get((r1, r2), 0.0) for r2 in recs] for r1 in recs]
    width = min(len(row) for row in rhs.values())
    rates = []
    for q in range(width):
        b = [rhs[r][q] for r in recs]
        upper = [float(r.compute_units) if q < 2 else math.inf for r in recs]
        rates.append(bounded_lsq(a, b, upper))
    names = names if width > 2 else []
    k = len(names)
    for j, rec in enumerate(recs):
        smp = rec.sample
        dev = smp.device_ns
        cpu, runq = rates[0][j] * dev, rates[1][j] * dev
        cap = rec.compute_units * dev
        if cpu + runq > cap > 0:
            cpu, runq = cpu * cap / (cpu + runq), runq * cap / (cpu + runq)
        # Next to nothing busy: the kernel fell between snapshots, nothing was resolved.
        smp.cpu_ns, smp.runq_ns, smp.cpu_measured = cpu, runq, cpu >= MIN_BUSY * cap
        smp.threads = busy_max.get(rec, 0)
        for f, field in enumerate((smp.waits, smp.acquisitions, smp.contended)):
            for c, cat in enumerate(names):
                q = 2 + f * k + c
                if q < width and rates[q][j] > 0:
                    field[cat] = rates[q][j] * dev


def bounded_lsq(a: list, b: list, upper: list) -> list:
    """min |A x - b| over 0 <= x <= upper for the normal equations (A = M^T M, b = M^T y):
    coordinate descent, exact for one unknown, converging for the few kernels of a
    sample (A is positive semi-definite)."""
    n = len(b)
    x = [0.0] * n
    for _ in range(SOLVER_SWEEPS if n > 1 else 1):
        for k in range(n):
            if a[k][k] <= 0:
                continue
            r = b[k] - sum(a[k][j] * x[j] for j in range(n) if j != k)
            x[k] = min(max(r / a[k][k], 0.0), upper[k])
    return x
