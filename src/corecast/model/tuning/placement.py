"""Where ``corecast sweep`` puts a run's threads: which CPUs a count gets, in which order.

- ``compact``: every core's first hardware thread before any SMT sibling, and the cores
  of one socket before the next (so a count up to the cores never shares a core, and up
  to a socket's cores never spans two sockets);
- ``spread``: cores first as well, round-robin over the sockets (memory bandwidth and
  caches of every socket from two threads on);
- ``none``: the first n CPUs in numeric order (what the kernel numbering gives, which
  on many machines interleaves sockets or puts SMT siblings next to each other).

The topology is sysfs's (``machine.sysfs.cpu_cores``); where it cannot be read, CPUs are
taken in numeric order with a warning.  For OpenMP programs the chosen CPUs become
``OMP_PLACES`` (one place per CPU, in order) with ``OMP_PROC_BIND=close``, so thread i
runs on the i-th CPU of the list (the OpenMP 4.0 places syntax, libgomp and LLVM's).
"""
from __future__ import annotations

from typing import Sequence

PLACEMENTS = ("compact", "spread", "none")
# A launcher's rank sweep: the launcher places the ranks, corecast confines none.
LAUNCHER_PLACEMENT = "launcher"


def cpu_order(policy: str, cpus: Sequence[int], sysfs_root: str = "/sys") -> tuple[list[int], str | None]:
    """``cpus`` in the order ``policy`` fills them, and a warning when the topology was
    not available (then: numeric order)."""
    from ..machine.sysfs import cpu_cores

    cpus = sorted(cpus)
    if policy == "none":
        return cpus, None
    if policy not in PLACEMENTS:
        raise ValueError(f"unknown placement {policy!r}; use {', '.join(PLACEMENTS)}")
    topo = cpu_cores(sysfs_root, cpus)
    if topo is None:
        return cpus, f"placement {policy}: the CPU topology is not readable in sysfs; CPUs taken in numeric order"
    packages = sorted({p for p, _, _ in topo.values()})
    if policy == "compact":
        def key(c):
            p, core, smt = topo[c]
            return (smt, p, core, c)
    else:
        # the k-th core of every socket before the (k+1)-th of any
        rank = {c: sorted({core for p, core, _ in topo.values() if p == topo[c][0]}).index(topo[c][1])
                for c in cpus}

        def key(c):
            p, core, smt = topo[c]
            return (smt, rank[c], packages.index(p), c)
    return sorted(cpus, key=key), None


def cpus_for(n: int, order: Sequence[int]) -> list[int]:
    """The CPUs a run of ``n`` threads gets: the first ``n`` of ``order`` (all of them when
    ``n`` exceeds it: the run is oversubscribed)."""
    return list(order[: max(1, min(n, len(order)))])


def omp_env(cpus: Sequence[int]) -> dict[str, str]:
    """OMP_PLACES (one place per CPU, in order) and OMP_PROC_BIND for ``cpus``."""
    return {"OMP_PLACES": ",".join(f"{{{c}}}" for c in cpus), "OMP_PROC_BIND": "close"}
