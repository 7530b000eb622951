"""Which PMU events feed the NUMA model, by CPU vendor and family (the model: Cho, Oh and
Egger, "Online Scalability Characterization of Data-Parallel Programs on Many Cores",
PACT 2016).

The launcher calls ``plan(open('/proc/cpuinfo').read())`` and hands ``encode(plan)`` to the
preload library in ``CORECAST_NUMA_EVENTS``: the plan as ``struct cc_numa_plan``
(native/model_abi.h; its Python copy ``recording.abi.NumaPlan``), its bytes in hex.
native/numa.c opens those events with perf_event_open and fills ``struct cc_numa_counts``,
which the bridge's ``decode_counts`` turns back into a plain dict for the model.  Standard
library only: the launcher imports it.

Roles (bit i of ``cc_numa_counts.measured``, native/model_abi.h CC_NUMA_*), after Cho et al.
Table 2 (the paper's section 4.2):

- ``cycles``: core cycles of the program's threads (a core event, inherited by new threads);
- ``llc``: last-level-cache misses, all memory nodes together;
- ``bus``: DRAM requests from the program's CPU nodes, per *target* memory node;
- ``mct``: requests arriving at each memory node's controller (machine-wide).

Uncore counts are machine-wide: native/numa.c keeps the ``llc`` and ``bus`` events of the
CPU nodes the program may run on (its affinity) and every ``mct`` event.  A role whose
events cannot all be opened is left unmeasured; counts are never made up.

Events multiplexed by the kernel (more events than counters: the AMD northbridge has 4,
as in the paper, which is why it took 4 sub-samples) are scaled by time_enabled /
time_running, and ``multiplexed`` says so.

It runs over 400 lines: the event tables with their sources are most of it, and the plan, its
encoding and its one test event (``try_event``) read them.
"""
from __future__ import annotations

import os
import re
import struct
from collections import namedtuple  # not dataclasses: their import (inspect, ast) cost each run 7 ms

from ..model.machine.sysfs import parse_cpulist, topology
from ..model.machine.sysfs import read_sysfs as _read
from ..recording import abi
from ..recording.abi import MAX_NODES, NUMA_MAX_EVENTS, NUMA_ROLES

TYPE_CHECKING = False  # typing itself costs start-up time: annotations only
if TYPE_CHECKING:
    from typing import Callable


# ---- event tables ----------------------------------------------------------------------
# event: event select, up to 12 bits on AMD (EventSelect[11:8] lives in config[35:32])
Code = namedtuple("Code", "event umask name")


class Role(namedtuple("Role", "pmu codes per_target", defaults=(False,))):
    """pmu: the PMU under <sysfs>/bus/event_source/devices (a regex, full match); codes: a
    tuple of Code, counted separately, summed per role and node; per_target: umask bit m
    selects target memory node m (NBPMCx1E0)."""
    __slots__ = ()

    @property
    def core(self) -> bool:
        return self.pmu == "cpu"


class Table(namedtuple("Table", "source roles missing")):
    """source: the table's name; roles: role -> Role; missing: role -> why the table has none."""
    __slots__ = ()

    def __new__(cls, source: str, roles: dict, missing: dict | None = None) -> "Table":
        return super().__new__(cls, source, roles, {} if missing is None else missing)


# AMD Family 15h Models 00h-0Fh (Opteron 6200/6300, Bulldozer/Piledriver): the paper's
# machine.  AMD, "BIOS and Kernel Developer's Guide (BKDG) for AMD Family 15h Models
# 00h-0Fh Processors", doc. 42301, performance counter events: core PMCx076 "CPU Clocks
# not Halted"; northbridge NBPMCx4E1 "L3 Cache Misses" (UnitMask[7:4] core select, Fh =
# any core; [2:0] read block exclusive/shared/modify), NBPMCx1E0 "CPU to DRAM Requests to
# Target Node" (UnitMask bit m: from the local node to node m), NBPMCx1F0 "Memory
# Controller Requests" (bit 0 write requests to the DCT, bit 1 read requests including
# prefetches; the other bits re-count by size).  Encodings cross-checked with libpfm4
# lib/events/amd64_events_fam15h{,_nb}.h.  Linux exposes the NB counters as the ``amd_nb``
# PMU, one instance per node (its cpumask), event = config[7:0] + config[35:32].
# The NB's target node numbers are the hardware node IDs; on these machines Linux numbers
# its NUMA nodes the same way (SRAT order), which this table assumes.
AMD_FAM15H = Table("amd-fam15h", {
    "cycles": Role("cpu", (Code(0x076, 0x00, "PMCx076 CPU Clocks not Halted"),)),
    "llc": Role("amd_nb", (Code(0x4E1, 0xF7, "NBPMCx4E1 L3 Cache Misses, any core, read block any"),)),
    "bus": Role("amd_nb", (Code(0x1E0, 0x00, "NBPMCx1E0 CPU to DRAM Requests to Target Node"),),
                per_target=True),
    "mct": Role("amd_nb", (Code(0x1F0, 0x03, "NBPMCx1F0 Memory Controller Requests, reads + writes"),)),
})

# Zen: cycles are PMCx076 "Cycles not in Halt" (LsNotHaltedCyc) on every Zen family.  The
# L3 is counted by the ``amd_l3`` PMU, one instance per L3 complex (the kernel fills in
# the slice/thread masks); DRAM traffic by the data fabric (``amd_df``), whose instances
# are per die on Zen 1 and per socket from Zen 2 on, so a per-node split only exists where
# each NUMA node has its own instance (Zen 1; NPS1 on Zen 2/3); otherwise the planner
# leaves ``mct`` out.  The fabric does not say which CPU node a DRAM request came from:
# there is no ``bus`` (per target node) event.
_ZEN_CYCLES = Role("cpu", (Code(0x076, 0x00, "PMCx076 Cycles not in Halt"),))
_ZEN_NO_BUS = {"bus": "the data fabric has no per-target-node DRAM request event on Zen"}
# L3PMCx06 umask 01h L3 miss ("l3_comb_clstr_state.request_miss"): PPR for AMD Family 17h
# Model 01h B1 (doc. 54945), Model 31h B0 (doc. 55803), Family 19h Model 01h B1 (doc.
# 55898); Linux tools/perf/pmu-events/arch/x86/amdzen{1,2,3}/cache.json.
_ZEN123_L3 = Role("amd_l3", (Code(0x06, 0x01, "L3PMCx06 L3 miss"),))
# DF "DRAM Channel Controller Request Types: Requests with Data (64B)", channels 0-7,
# umask 38h: same PPRs; tools/perf/pmu-events/arch/x86/amdzen{1,2,3}/data-fabric.json.
_ZEN123_DF = Role("amd_df", tuple(
    Code(ev, 0x38, f"DF dram_channel_data_controller_{i}")
    for i, ev in enumerate((0x007, 0x047, 0x087, 0x0C7, 0x107, 0x147, 0x187, 0x1C7))))
# L3PMCx04 umask 01h L3LookupState.L3Miss on Zen 4 (Family 19h Models 10h-1Fh, 60h-7Fh,
# A0h-AFh) and Zen 5 (Family 1Ah): PPRs for those families; Linux
# tools/perf/pmu-events/arch/x86/amdzen4/cache.json, amdzen5/l3-cache.json.  Their DRAM
# counters moved to the UMC PMU (``amd_umc_*``), which this table does not use yet.
_ZEN45_L3 = Role("amd_l3", (Code(0x04, 0x01, "L3PMCx04 L3LookupState L3 miss"),))
_ZEN45_NO_MCT = {"mct": "Zen 4/5 DRAM counters (amd_umc) are not in this table"}

AMD_ZEN1 = Table("amd-zen1", {"cycles": _ZEN_CYCLES, "llc": _ZEN123_L3, "mct": _ZEN123_DF}, _ZEN_NO_BUS)
AMD_ZEN2 = Table("amd-zen2", {"cycles": _ZEN_CYCLES, "llc": _ZEN123_L3, "mct": _ZEN123_DF}, _ZEN_NO_BUS)
AMD_ZEN3 = Table("amd-zen3", {"cycles": _ZEN_CYCLES, "llc": _ZEN123_L3, "mct": _ZEN123_DF}, _ZEN_NO_BUS)
AMD_ZEN4 = Table("amd-zen4", {"cycles": _ZEN_CYCLES, "llc": _ZEN45_L3}, {**_ZEN_NO_BUS, **_ZEN45_NO_MCT})
AMD_ZEN5 = Table("amd-zen5", {"cycles": _ZEN_CYCLES, "llc": _ZEN45_L3}, {**_ZEN_NO_BUS, **_ZEN45_NO_MCT})

# Intel family 6: architectural events 3CH/00H "UnHalted Core Cycles" and 2EH/41H "LLC
# Misses" (LONGEST_LAT_CACHE.MISS), Intel SDM Vol. 3B, "Architectural Performance
# Monitoring", table of pre-defined architectural performance events; counted per thread,
# so they are the program's own.  Memory controllers: UNC_M_CAS_COUNT.ALL of each
# ``uncore_imc_N`` PMU (one per channel, cpumask one CPU per socket), from the Xeon uncore
# performance monitoring reference manuals as transcribed in Linux
# tools/perf/pmu-events/arch/x86/<model>/uncore-memory.json.  QPI/UPI and OFFCORE_RESPONSE
# events only split local from remote DRAM, not per target node: no ``bus``.
_INTEL_CYCLES = Role("cpu", (Code(0x3C, 0x00, "UnHalted Core Cycles (architectural)"),))
_INTEL_LLC = Role("cpu", (Code(0x2E, 0x41, "LLC Misses / LONGEST_LAT_CACHE.MISS (architectural)"),))
_IMC = r"uncore_imc_\d+"
_CAS_04_0F = Role(_IMC, (Code(0x04, 0x0F, "UNC_M_CAS_COUNT.ALL"),))   # jaketown .. cascadelakex
_CAS_04_3F = Role(_IMC, (Code(0x04, 0x3F, "UNC_M_CAS_COUNT.ALL"),))   # icelakex
_CAS_05_FF = Role(_IMC, (Code(0x05, 0xFF, "UNC_M_CAS_COUNT.ALL"),))   # sapphirerapids, emeraldrapids
INTEL_IMC_BY_MODEL = {
    0x2D: _CAS_04_0F,  # Sandy Bridge-EP (Xeon E5 v1)
    0x3E: _CAS_04_0F,  # Ivy Bridge-EP/EX (v2)
    0x3F: _CAS_04_0F,  # Haswell-EP/EX (v3): haswellx/uncore-memory.json
    0x4F: _CAS_04_0F,  # Broadwell-EP/EX (v4)
    0x56: _CAS_04_0F,  # Broadwell-DE
    0x55: _CAS_04_0F,  # Skylake-SP, Cascade Lake, Cooper Lake: skylakex/uncore-memory.json
    0x6A: _CAS_04_3F,  # Ice Lake-SP: icelakex/uncore-memory.json (RD 0Fh + WR 30h)
    0x6C: _CAS_04_3F,  # Ice Lake-D
    0x8F: _CAS_05_FF,  # Sapphire Rapids: sapphirerapids/uncore-memory.json
    0xCF: _CAS_05_FF,  # Emerald Rapids (same event list)
}
_INTEL_NO_BUS = {"bus": "Intel counts DRAM requests only as local/remote, not per target node"}


def intel_table(model: int) -> Table:
    roles = {"cycles": _INTEL_CYCLES, "llc": _INTEL_LLC}
    missing = dict(_INTEL_NO_BUS)
    imc = INTEL_IMC_BY_MODEL.get(model)
    if imc is None:
        missing["mct"] = f"no memory-controller event table for Intel model {model:#x}"
    else:
        roles["mct"] = imc
    return Table(f"intel-06-{model:02x}", roles, missing)


def select_table(vendor: str, family: int, model: int) -> Table | None:
    if vendor == "AuthenticAMD":
        if family == 0x15 and model <= 0x0F:
            return AMD_FAM15H
        if family == 0x17:
            return AMD_ZEN1 if model < 0x30 else AMD_ZEN2
        if family == 0x19:
            return AMD_ZEN3 if model <= 0x0F or 0x20 <= model <= 0x5F else AMD_ZEN4
        if family == 0x1A:
            return AMD_ZEN5
        return None
    if vendor == "GenuineIntel" and family == 6:
        return intel_table(model)
    return None


# ---- the plan --------------------------------------------------------------------------
# role: one of NUMA_ROLES; node: memory node (bus: target, mct: the controller's), llc
# uncore: the unit's node, -1: core event; type: perf_event_attr.type (the PMU's sysfs
# type); cpu: -1 counts the program's threads, >= 0 an uncore unit read on that CPU;
# name: for people, not encoded.
Event = namedtuple("Event", "role node type config config1 cpu name", defaults=(0, -1, ""))


class Plan:
    """The events to count: source (the table used, "" if none), events, reason (why
    there are no events at all), missing (role -> why it is not planned)."""

    __slots__ = ("source", "events", "reason", "missing")

    def __init__(self, source: str = "", events: list | None = None, reason: str = "",
                 missing: dict | None = None) -> None:
        self.source, self.reason = source, reason
        self.events = [] if events is None else events
        self.missing = {} if missing is None else missing

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Plan) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __repr__(self) -> str:
        return "Plan(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    @property
    def roles(self) -> list[str]:
        have = {e.role for e in self.events}
        return [r for r in NUMA_ROLES if r in have]


def parse_cpuinfo(text: str) -> tuple[str, int, int] | None:
    """(vendor_id, cpu family, model) of the first processor in /proc/cpuinfo text."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # end of the first processor's block
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    try:
        return fields["vendor_id"], int(fields["cpu family"]), int(fields["model"])
    except (KeyError, ValueError):
        return None


_DEFAULT_FORMAT = {"event": "config:0-7,32-35", "umask": "config:8-15"}


def _format_bits(pmu_dir: str, name: str) -> list[tuple[int, int]]:
    """The config bit ranges of a format field (sysfs format/<name>, else the x86 layout)."""
    text = (_read(f"{pmu_dir}/format/{name}") or _DEFAULT_FORMAT[name]).strip()
    where, _, spec = text.partition(":")
    if where != "config":
        raise ValueError(f"{name} is in {where}, not config")
    ranges = []
    for part in spec.split(","):
        lo, sep, hi = part.partition("-")
        ranges.append((int(lo), int(hi) if sep else int(lo)))
    return ranges


def _scatter(value: int, ranges: list[tuple[int, int]]) -> int:
    out, shift = 0, 0
    for lo, hi in ranges:
        width = hi - lo + 1
        out |= ((value >> shift) & ((1 << width) - 1)) << lo
        shift += width
    if value >> shift:
        raise ValueError(f"{value:#x} does not fit the PMU's format")
    return out


def encode_config(pmu_dir: str, event: int, umask: int) -> int:
    return _scatter(event, _format_bits(pmu_dir, "event")) | _scatter(umask, _format_bits(pmu_dir, "umask"))


def _pmus(devices: str, pattern: str) -> list[str]:
    try:
        names = os.listdir(devices)
    except OSError:
        return []
    return sorted((n for n in names if re.fullmatch(pattern, n)),
                  key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])


def _role_events(role: str, spec: Role, devices: str, nodes: dict[int, list[int]]) -> tuple[list[Event], str]:
    """The events of one role, or ([], why not)."""
    node_of = {cpu: node for node, cpus in nodes.items() for cpu in cpus}
    cpu_nodes = {node for node, cpus in nodes.items() if cpus}
    names = _pmus(devices, spec.pmu)
    if not names:
        return [], f"no {spec.pmu} PMU in {devices}"
    events: list[Event] = []
    for pmu in names:
        pmu_dir = f"{devices}/{pmu}"
        try:
            ptype = int((_read(f"{pmu_dir}/type") or "").strip())
        except ValueError:
            return [], f"{pmu_dir}/type is missing or not a number"
        if spec.core:
            cpus: list[int] = [-1]
        else:
            try:
                cpus = parse_cpulist(_read(f"{pmu_dir}/cpumask") or "")
            except ValueError:
                cpus = []
            if not cpus:
                return [], f"{pmu_dir}/cpumask is missing or empty"
            covered = {node_of.get(c) for c in cpus}
            if None in covered:
                return [], f"{pmu_dir}/cpumask names a CPU of no known node"
            # Every node that runs code needs its own unit: a unit per socket on a machine
            # with several nodes per socket (Intel SNC, AMD NPS2/4) cannot be split.
            if not cpu_nodes <= covered:
                return [], (f"{pmu} has units on nodes {sorted(covered)}, not on every node "
                            f"{sorted(cpu_nodes)} (several nodes per unit?)")
        for cpu in cpus:
            node = -1 if cpu < 0 else node_of[cpu]
            for code in spec.codes:
                for target in (sorted(nodes) if spec.per_target else [None]):
                    umask = code.umask
                    if target is not None:
                        if target >= 8:  # eight target bits in NBPMCx1E0's unit mask
                            return [], f"memory node {target} is beyond the event's 8 target nodes"
                        umask |= 1 << target
                    try:
                        config = encode_config(pmu_dir, code.event, umask)
                    except ValueError as exc:
                        return [], f"{pmu}: {exc}"
                    label = code.name + (f" to node {target}" if target is not None else "")
                    events.append(Event(role, node if target is None else target, ptype, config,
                                        0, cpu, label))
    return events, ""


def plan(cpuinfo_text: str, sysfs_root: str = "/sys") -> Plan:
    """The events to count on this machine, chosen by /proc/cpuinfo's vendor and family."""
    devices = f"{sysfs_root}/bus/event_source/devices"
    if not os.path.isdir(f"{devices}/cpu"):
        return Plan(reason=f"no PMU: {devices}/cpu missing")
    ident = parse_cpuinfo(cpuinfo_text)
    if ident is None:
        return Plan(reason="no vendor_id / cpu family / model in cpuinfo")
    vendor, family, model = ident
    table = select_table(vendor, family, model)
    if table is None:
        return Plan(reason=f"unknown CPU family: {vendor} family {family:#x} model {model:#x}")
    nodes = topology(sysfs_root)
    result = Plan(source=table.source, missing=dict(table.missing))
    for role in NUMA_ROLES:
        spec = table.roles.get(role)
        if spec is None or role in result.missing:
            continue
        if not spec.core and max(nodes) >= MAX_NODES:
            # Core events still work; per-node ones would not fit cc_numa_counts.
            result.missing[role] = f"node ids beyond {MAX_NODES - 1}"
            continue
        events, why = _role_events(role, spec, devices, nodes)
        if why:
            result.missing[role] = why
        result.events.extend(events)
    # Bounded by the C side's table: drop whole roles, the most numerous first.
    for role in ("bus", "mct", "llc"):
        if len(result.events) <= NUMA_MAX_EVENTS:
            break
        result.events = [e for e in result.events if e.role != role]
        result.missing[role] = f"more than {NUMA_MAX_EVENTS} events"
    if not result.events:
        result.reason = "no event of the table could be planned: " + "; ".join(
            f"{r}: {w}" for r, w in result.missing.items())
    return result


def encode(p: Plan) -> str:
    """``CORECAST_NUMA_EVENTS``: ``v2:`` and the hex of ``struct cc_numa_plan``'s header and
    its ``n`` events (the library reads no more); "" when the plan has no events."""
    if not p.events:
        return ""
    import ctypes  # here: a machine without the PMU's events (VMs) is spared its 2 ms

    if len(p.events) > NUMA_MAX_EVENTS:
        raise ValueError(f"{len(p.events)} events, more than the library's {NUMA_MAX_EVENTS}")
    source = p.source.encode()
    if len(source) >= abi.NUMA_SOURCE_LEN:
        raise ValueError(f"event table name {p.source!r} is longer than {abi.NUMA_SOURCE_LEN - 1} bytes")
    s = abi.NumaPlan(version=abi.NUMA_PLAN_VERSION, n=len(p.events), source=source)
    for slot, e in zip(s.ev, p.events):
        fields = (e.config, e.config1, e.type, NUMA_ROLES.index(e.role), e.node, e.cpu)
        slot.config, slot.config1, slot.type, slot.role, slot.node, slot.cpu = fields
        # ctypes wraps what does not fit its field; the library must count what was planned.
        if (slot.config, slot.config1, slot.type, slot.role, slot.node, slot.cpu) != fields:
            raise ValueError(f"event {e.name or e.role!r}: {fields} does not fit struct cc_numa_event")
    used = abi.NumaPlan.ev.offset + len(p.events) * ctypes.sizeof(abi.NumaEvent)
    return f"v{abi.NUMA_PLAN_VERSION}:" + bytes(s)[:used].hex()


# perf_event_open's system call number where Python runs (none in the os module)
PERF_EVENT_OPEN_NR = {"x86_64": 298, "aarch64": 241, "riscv64": 241, "ppc64le": 319, "ppc64": 319,
                      "s390x": 331, "i686": 336, "i386": 336}


def try_event(e: Event) -> str:
    """"" when this process can open ``e`` and it counts, else why not.  A PMU can show in
    sysfs and still run no events (a hypervisor's guest without a virtual PMU): the library
    would open every planned event for nothing, inherited by each thread the program starts."""
    import ctypes  # only where a plan has events

    nr = PERF_EVENT_OPEN_NR.get(os.uname().machine)
    if nr is None:
        return ""  # no number known here: the library tries the events itself
    core = e.cpu < 0
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes): type, size, config,
    # sample_period, sample_type, read_format (time enabled | running), the flag bits
    # (exclude_kernel 1 << 5, exclude_hv 1 << 6: a core event, as native/numa.c opens it),
    # wakeup_events, bp_type, config1.
    attr = struct.pack("=IIQQQQQIIQ", e.type, 64, e.config, 0, 0, 3, (1 << 5 | 1 << 6) if core else 0,
                       0, 0, e.config1)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), ctypes.c_char_p(attr), ctypes.c_int(0 if core else -1),
                      ctypes.c_int(e.cpu), ctypes.c_int(-1), ctypes.c_ulong(8))  # PERF_FLAG_FD_CLOEXEC
    what = e.name or e.role
    if fd < 0:
        return f"the PMU refused a test event ({what}): {os.strerror(ctypes.get_errno())}"
    try:
        sum(range(2000))  # something for a core event to count
        value, _, running = struct.unpack("=QQQ", os.read(fd, 24))
    except (OSError, struct.error):
        value = running = 0
    finally:
        os.close(fd)
    if running == 0 or (core and value == 0):
        return f"a test event ({what}) opened but did not count: no events run here"
    return ""


def plan_for_this_machine(root: str = "/", trial: Callable[[Event], str] = try_event) -> Plan:
    """plan() for /proc/cpuinfo and /sys (under ``root``), kept only where ``trial`` of its
    first event finds the PMU counting; a machine whose cpuinfo cannot be read has none."""
    try:
        with open(os.path.join(root, "proc/cpuinfo")) as f:
            text = f.read()
    except OSError as exc:
        return Plan(reason=f"cannot read /proc/cpuinfo: {exc.strerror}")
    p = plan(text, os.path.join(root, "sys"))
    why = trial(p.events[0]) if p.events else ""
    if why:  # every role needs the cycles (the first event) to be read at all
        return Plan(source=p.source, reason=why, missing=p.missing)
    return p
