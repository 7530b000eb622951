"""This machine as sysfs shows it: which CPUs each NUMA node has, the SLIT distances, its
cores and the CPUs this process may run on.  Standard library only (the launcher and the
runtime read it)."""
from __future__ import annotations

import os


def read_sysfs(path: str) -> str | None:
    """A sysfs file's text, None if it cannot be read (a missing node or
    CPU directory is an answer here, not an error: ``io.fileio.read_text`` raises)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """ "0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]; raises ValueError when malformed."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if a < 0 or b < a:
            raise ValueError(part)
        cpus.extend(range(a, b + 1))
    return cpus


def topology(sysfs_root: str = "/sys") -> dict[int, list[int]]:
    """NUMA node id -> its online CPUs (sysfs); without node information, node 0 holds
    every online CPU (as native/numa.c counts it)."""
    online_text = read_sysfs(f"{sysfs_root}/devices/system/cpu/online")
    try:
        online = set(parse_cpulist(online_text)) if online_text is not None else None
    except ValueError:
        online = None
    nodes: dict[int, list[int]] = {}
    node_dir = f"{sysfs_root}/devices/system/node"
    try:
        names = os.listdir(node_dir)
    except OSError:
        names = []
    for name in names:
        node = _node_id(name)
        text = read_sysfs(f"{node_dir}/{name}/cpulist") if node is not None else None
        if text is None:
            continue
        try:
            cpus = parse_cpulist(text)
        except ValueError:
            continue
        nodes[node] = sorted(c for c in cpus if online is None or c in online)
    if not nodes:
        nodes[0] = sorted(online) if online is not None else list(range(os.cpu_count() or 1))
    return dict(sorted(nodes.items()))




def _node_id(name: str) -> int | None:
    """N of a ``nodeN`` folder name, else None (string tests, not re: the model's exit
    with a target machine imports this module, and re with enum cost it 25M instructions)."""
    digits = name[4:]
    return int(digits) if name.startswith("node") and digits.isdecimal() else None


def distances(sysfs_root: str, ids: list[int]) -> list[list[int]]:
    """SLIT distances between the nodes ``ids`` (rows of sysfs's ``distance`` files are
    indexed by position among all nodes, memory-only ones included); 10 where unknown."""
    node_dir = f"{sysfs_root}/devices/system/node"
    try:
        all_ids = sorted(i for i in map(_node_id, os.listdir(node_dir)) if i is not None)
    except OSError:
        all_ids = []
    out = []
    for n in ids:
        try:
            row = [int(v) for v in (read_sysfs(f"{node_dir}/node{n}/distance") or "").split()]
        except ValueError:
            row = []
        out.append([row[all_ids.index(m)] if m in all_ids and all_ids.index(m) < len(row)
                    else (10 if m == n else 20) for m in ids])
    return out


def cpu_cores(sysfs_root: str, cpus: list[int]) -> dict[int, tuple[int, int, int]] | None:
    """CPU -> (package, core, SMT index) from sysfs's ``cpuN/topology``: the socket, the
    core's id within it and the CPU's position among the core's hardware threads
    (``thread_siblings_list``; 0 is the core's first).  None when any CPU's topology
    cannot be read (containers may hide it)."""
    out = {}
    for cpu in cpus:
        base = f"{sysfs_root}/devices/system/cpu/cpu{cpu}/topology"
        package, core = read_sysfs(f"{base}/physical_package_id"), read_sysfs(f"{base}/core_id")
        siblings = read_sysfs(f"{base}/thread_siblings_list")
        try:
            smt = sorted(parse_cpulist(siblings)).index(cpu) if siblings is not None else None
            if package is None or core is None or smt is None:
                return None
            out[cpu] = (int(package), int(core), smt)
        except ValueError:
            return None
    return out


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on, ascending."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def this_machine(sysfs_root: str = "/sys") -> tuple[int, int | None]:
    """(the CPUs this process may run on, the cores they lie on): ``predict --this-machine``.
    The cores are None when sysfs hides the topology."""
    cpus = allowed_cpus()
    topo = cpu_cores(sysfs_root, cpus)
    return len(cpus), (len({(p, c) for p, c, _ in topo.values()}) if topo else None)
