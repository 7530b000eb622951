"""numa_events: the event tables and the planner, on fake /proc/cpuinfo texts and fake
sysfs trees (AMD family 15h with its northbridge PMU, Intel Xeons with uncore IMCs, Zen,
unknown CPUs, no PMU at all), the env-var encoding, decoding the counts, the launcher."""
from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from corecast.recording import abi
from corecast.runtime import launcher, numa_events
from corecast.runtime.bridge import decode_counts

from .helpers import NATIVE_SOURCE
from corecast.runtime.numa_events import Event, Plan, encode, plan, topology


def cpuinfo(vendor: str, family: int, model: int, name: str = "test cpu", cpus: int = 2) -> str:
    block = ("processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
             "model name\t: {name}\nstepping\t: 0\n")
    return "\n".join(block.format(i=i, vendor=vendor, family=family, model=model, name=name)
                     for i in range(cpus)) + "\n"


OPTERON_6380 = cpuinfo("AuthenticAMD", 21, 2, "AMD Opteron(tm) Processor 6380")
XEON_SKX = cpuinfo("GenuineIntel", 6, 0x55, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz")
EPYC_ROME = cpuinfo("AuthenticAMD", 23, 0x31, "AMD EPYC 7702 64-Core Processor")
EPYC_GENOA = cpuinfo("AuthenticAMD", 25, 0x11, "AMD EPYC 9654 96-Core Processor")


def make_sysfs(root: Path, nodes: dict[int, str] | None, pmus: dict[str, dict], online: str | None = None) -> str:
    """A fake /sys: ``nodes`` id -> cpulist (None: no node directory), ``pmus`` name ->
    {"type": int, "cpumask": str, "format": {field: text}}."""
    if nodes is not None:
        for n, cpus in nodes.items():
            d = root / "devices/system/node" / f"node{n}"
            d.mkdir(parents=True)
            (d / "cpulist").write_text(cpus + "\n")
    if online is not None:
        d = root / "devices/system/cpu"
        d.mkdir(parents=True)
        (d / "online").write_text(online + "\n")
    devices = root / "bus/event_source/devices"
    devices.mkdir(parents=True)
    for name, spec in pmus.items():
        d = devices / name
        d.mkdir()
        (d / "type").write_text(f"{spec['type']}\n")
        if "cpumask" in spec:
            (d / "cpumask").write_text(spec["cpumask"] + "\n")
        for field, text in spec.get("format", {}).items():
            (d / "format").mkdir(exist_ok=True)
            (d / "format" / field).write_text(text + "\n")
    return str(root)


def by_role(p: Plan, role: str) -> list[Event]:
    return [e for e in p.events if e.role == role]


# ---- AMD family 15h: the paper's Opteron 6380 ----------------------------------------------
@pytest.fixture
def opteron(tmp_path):
    """Two G34 sockets = four nodes of 8 cores; one amd_nb unit per node."""
    nodes = {0: "0-7", 1: "8-15", 2: "16-23", 3: "24-31"}
    return make_sysfs(tmp_path, nodes, {
        "cpu": {"type": 4},
        "amd_nb": {"type": 11, "cpumask": "0,8,16,24",
                   "format": {"event": "config:0-7,32-35", "umask": "config:8-15"}},
    }, online="0-31")


def test_fam15h_plans_all_four_roles(opteron):
    p = plan(OPTERON_6380, opteron)
    assert p.source == "amd-fam15h" and p.reason == ""
    assert p.roles == ["cycles", "llc", "bus", "mct"]
    assert p.missing == {}
    (cycles,) = by_role(p, "cycles")
    assert (cycles.type, cycles.config, cycles.cpu, cycles.node) == (4, 0x76, -1, -1)
    # NBPMCx4E1: EventSelect[11:8] = 4 goes to config[35:32]; any core, read block any.
    llc = by_role(p, "llc")
    assert [(e.cpu, e.node) for e in llc] == [(0, 0), (8, 1), (16, 2), (24, 3)]
    assert {e.config for e in llc} == {0x4_0000_F7E1} and {e.type for e in llc} == {11}
    mct = by_role(p, "mct")
    assert [(e.cpu, e.node) for e in mct] == [(0, 0), (8, 1), (16, 2), (24, 3)]
    assert {e.config for e in mct} == {0x1_0000_03F0}


def test_fam15h_dram_requests_per_source_and_target_node(opteron):
    bus = by_role(plan(OPTERON_6380, opteron), "bus")
    assert len(bus) == 16  # 4 northbridges x 4 target nodes
    for e in bus:
        assert e.config == 0x1_0000_00E0 | (1 << e.node) << 8  # NBPMCx1E0, unit mask bit = target
        assert e.cpu in (0, 8, 16, 24) and 0 <= e.node < 4
    assert {(e.cpu, e.node) for e in bus} == {(c, m) for c in (0, 8, 16, 24) for m in range(4)}


def test_fam15h_without_northbridge_pmu_counts_cycles_only(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-7"}, {"cpu": {"type": 4}})
    p = plan(OPTERON_6380, root)
    assert p.roles == ["cycles"]
    assert set(p.missing) == {"llc", "bus", "mct"}
    assert all("amd_nb" in why for why in p.missing.values())


def test_format_files_are_honoured(tmp_path):
    # A PMU whose event field is only 8 bits wide cannot take 12-bit NB events: no role
    # is planned with a truncated event select.
    root = make_sysfs(tmp_path, {0: "0-7"}, {
        "cpu": {"type": 4},
        "amd_nb": {"type": 11, "cpumask": "0", "format": {"event": "config:0-7", "umask": "config:8-15"}},
    })
    p = plan(OPTERON_6380, root)
    assert p.roles == ["cycles"]
    assert all("does not fit" in p.missing[r] for r in ("llc", "bus", "mct"))


def test_fam15h_later_models_are_not_in_the_table(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-3"}, {"cpu": {"type": 4}})
    p = plan(cpuinfo("AuthenticAMD", 21, 0x30), root)
    assert p.events == [] and p.reason.startswith("unknown CPU family")


# ---- Intel Xeon ---------------------------------------------------------------------------
def xeon_sysfs(root: Path, nodes: dict[int, str], imc_cpumask: str, channels: int = 6) -> str:
    pmus = {"cpu": {"type": 4}}
    for i in range(channels):
        pmus[f"uncore_imc_{i}"] = {"type": 20 + i, "cpumask": imc_cpumask}
    pmus["uncore_imc_free_running_0"] = {"type": 40, "cpumask": imc_cpumask}  # not a CAS counter
    return make_sysfs(root, nodes, pmus)


def test_intel_xeon_two_sockets(tmp_path):
    root = xeon_sysfs(tmp_path, {0: "0-19,40-59", 1: "20-39,60-79"}, "0,20")
    p = plan(XEON_SKX, root)
    assert p.source == "intel-06-55"
    assert p.roles == ["cycles", "llc", "mct"]
    assert "bus" in p.missing
    (cycles,) = by_role(p, "cycles")
    (llc,) = by_role(p, "llc")
    assert (cycles.config, llc.config) == (0x3C, 0x412E)  # architectural events
    assert llc.cpu == -1  # LONGEST_LAT_CACHE.MISS counts the program's own threads
    mct = by_role(p, "mct")
    assert len(mct) == 12  # 6 channels x 2 sockets
    assert {e.config for e in mct} == {0x0F04}  # UNC_M_CAS_COUNT.ALL
    assert {(e.type, e.cpu, e.node) for e in mct} == {(20 + i, c, n) for i in range(6) for c, n in ((0, 0), (20, 1))}


@pytest.mark.parametrize("model, config", [(0x6A, 0x3F04), (0x8F, 0xFF05), (0x3F, 0x0F04)])
def test_intel_cas_event_by_model(tmp_path, model, config):
    root = xeon_sysfs(tmp_path, {0: "0-3", 1: "4-7"}, "0,4", channels=2)
    mct = by_role(plan(cpuinfo("GenuineIntel", 6, model), root), "mct")
    assert mct and {e.config for e in mct} == {config}


def test_intel_unknown_model_keeps_core_events(tmp_path):
    root = xeon_sysfs(tmp_path, {0: "0-3"}, "0", channels=1)
    p = plan(cpuinfo("GenuineIntel", 6, 0xAD), root)
    assert p.roles == ["cycles", "llc"]
    assert "0xad" in p.missing["mct"]


def test_sub_numa_clustering_cannot_split_socket_counters(tmp_path):
    # Two nodes per socket, IMC units per socket: mct per node would be invented.
    root = xeon_sysfs(tmp_path, {0: "0-9", 1: "10-19", 2: "20-29", 3: "30-39"}, "0,20")
    p = plan(XEON_SKX, root)
    assert p.roles == ["cycles", "llc"]
    assert "not on every node" in p.missing["mct"]


# ---- AMD Zen ------------------------------------------------------------------------------
def zen_sysfs(root: Path, nodes: dict[int, str], l3_cpumask: str, df_cpumask: str) -> str:
    return make_sysfs(root, nodes, {
        "cpu": {"type": 4},
        "amd_l3": {"type": 12, "cpumask": l3_cpumask, "format": {"event": "config:0-7", "umask": "config:8-15"}},
        "amd_df": {"type": 13, "cpumask": df_cpumask,
                   "format": {"event": "config:0-7,32-35,59-60", "umask": "config:8-15"}},
    })


def test_zen2_one_node_per_socket(tmp_path):
    root = zen_sysfs(tmp_path, {0: "0-15", 1: "16-31"}, "0,4,8,12,16,20,24,28", "0,16")
    p = plan(EPYC_ROME, root)
    assert p.source == "amd-zen2"
    assert p.roles == ["cycles", "llc", "mct"]
    assert "bus" in p.missing  # no per-target-node DRAM request event on Zen
    llc = by_role(p, "llc")
    assert len(llc) == 8 and {e.config for e in llc} == {0x0106}  # L3PMCx06 umask 01h
    assert [e.node for e in llc] == [0, 0, 0, 0, 1, 1, 1, 1]
    mct = by_role(p, "mct")
    assert len(mct) == 16  # 8 DRAM channels x 2 sockets
    assert 0x1_0000_3807 in {e.config for e in mct}  # channel 4: DF event 0x107, umask 38h
    assert {e.node for e in mct} == {0, 1}


def test_zen2_nps4_leaves_controllers_out(tmp_path):
    root = zen_sysfs(tmp_path, {0: "0-3", 1: "4-7", 2: "8-11", 3: "12-15"}, "0,4,8,12", "0")
    p = plan(EPYC_ROME, root)
    assert p.roles == ["cycles", "llc"]
    assert "mct" in p.missing


def test_zen4_l3_miss_event(tmp_path):
    root = zen_sysfs(tmp_path, {0: "0-15"}, "0,8", "0")
    p = plan(EPYC_GENOA, root)
    assert p.source == "amd-zen4"
    assert p.roles == ["cycles", "llc"]
    assert {e.config for e in by_role(p, "llc")} == {0x0104}  # L3PMCx04 umask 01h
    assert set(p.missing) == {"bus", "mct"}


@pytest.mark.parametrize("family, model, source", [
    (23, 0x01, "amd-zen1"), (23, 0x31, "amd-zen2"), (25, 0x01, "amd-zen3"), (25, 0x21, "amd-zen3"),
    (25, 0x11, "amd-zen4"), (25, 0x61, "amd-zen4"), (26, 0x02, "amd-zen5")])
def test_zen_generation_by_family_and_model(family, model, source):
    assert numa_events.select_table("AuthenticAMD", family, model).source == source


# ---- nothing to count ---------------------------------------------------------------------
def test_unknown_vendor(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-3"}, {"cpu": {"type": 4}})
    p = plan(cpuinfo("CentaurHauls", 6, 15), root)
    assert p.events == [] and p.source == ""
    assert p.reason.startswith("unknown CPU family") and "CentaurHauls" in p.reason
    assert encode(p) == ""


def test_no_pmu_at_all(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-3"}, {})
    p = plan(OPTERON_6380, root)
    assert p.events == [] and encode(p) == ""
    assert p.reason == f"no PMU: {root}/bus/event_source/devices/cpu missing"


def test_unreadable_cpuinfo(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-3"}, {"cpu": {"type": 4}})
    p = plan("garbage\n", root)
    assert p.events == [] and "cpuinfo" in p.reason


def machine_root(tmp_path: Path, cpuinfo_text: str, pmus: dict) -> str:
    """A fake / for plan_for_this_machine: proc/cpuinfo and sys (make_sysfs)."""
    (tmp_path / "proc").mkdir(parents=True)
    (tmp_path / "proc/cpuinfo").write_text(cpuinfo_text)
    make_sysfs(tmp_path / "sys", {0: "0-15"}, pmus, online="0-15")
    return str(tmp_path)


def test_a_pmu_that_runs_no_events_plans_none(tmp_path):
    # The 16-core device's case as far as sysfs goes (issue #40): a `cpu` PMU shown, Intel
    # family 6 model 0xCF.  One test event decides; where it fails, the library gets no
    # plan, rather than opening every event, inherited by each thread, for nothing.
    root = machine_root(tmp_path, cpuinfo("GenuineIntel", 6, 0xCF, cpus=16), {"cpu": {"type": 4}})
    tried: list[Event] = []

    def refuses(e: Event) -> str:
        tried.append(e)
        return "the PMU refused a test event (cycles): No such file or directory"

    p = numa_events.plan_for_this_machine(root, trial=refuses)
    assert [e.role for e in tried] == ["cycles"]  # one event tried, the first planned
    assert p.events == [] and encode(p) == "" and p.reason.startswith("the PMU refused")
    assert p.source == "intel-06-cf" and "mct" in p.missing
    # Where it counts, the plan is plan()'s: cycles and LLC misses, no controllers.
    p = numa_events.plan_for_this_machine(root, trial=lambda e: "")
    assert [e.role for e in p.events] == ["cycles", "llc"] and not p.reason
    # No PMU at all: nothing to try.
    tried.clear()
    bare = machine_root(tmp_path / "bare", cpuinfo("GenuineIntel", 6, 0xCF), {})
    assert numa_events.plan_for_this_machine(bare, trial=refuses).reason.startswith("no PMU")
    assert tried == []


@pytest.mark.skipif(numa_events.PERF_EVENT_OPEN_NR.get(__import__("os").uname().machine) is None,
                    reason="perf_event_open's number unknown here")
def test_try_event_opens_one_event_and_reads_it():
    # Software events exist wherever perf does: the task clock counts, the dummy event
    # opens and counts nothing, an unknown PMU type is refused.
    if Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip() == "3":
        pytest.skip("perf_event_open is closed to unprivileged users here")
    assert numa_events.try_event(Event("cycles", -1, 1, 1, name="task clock")) == ""
    assert "did not count" in numa_events.try_event(Event("cycles", -1, 1, 9, name="dummy"))
    assert numa_events.try_event(Event("cycles", -1, 0x7FFFFFF0, 0)).startswith("the PMU refused a test event")


def test_too_many_events_drop_whole_roles(opteron, monkeypatch):
    monkeypatch.setattr(numa_events, "NUMA_MAX_EVENTS", 10)
    p = plan(OPTERON_6380, opteron)
    assert p.roles == ["cycles", "llc", "mct"]  # 16 bus events went first
    assert "more than 10" in p.missing["bus"]


# ---- topology -----------------------------------------------------------------------------
def test_topology_keeps_online_cpus(tmp_path):
    root = make_sysfs(tmp_path, {0: "0-3", 1: "4-7", 2: ""}, {}, online="0-2,4-7")
    assert topology(root) == {0: [0, 1, 2], 1: [4, 5, 6, 7], 2: []}


def test_topology_without_nodes_is_one_node(tmp_path):
    root = make_sysfs(tmp_path, None, {}, online="0-5")
    assert topology(root) == {0: [0, 1, 2, 3, 4, 5]}


def test_cpuinfo_and_cpulist_parsing():
    assert numa_events.parse_cpuinfo(OPTERON_6380) == ("AuthenticAMD", 21, 2)
    assert numa_events.parse_cpulist("0-2,5,7-8\n") == [0, 1, 2, 5, 7, 8]
    with pytest.raises(ValueError):
        numa_events.parse_cpulist("3-1")


# ---- encoding, decoding, launcher ---------------------------------------------------------
def test_encode_is_the_struct_in_hex(opteron):
    """The value is "v2:" and the hex of struct cc_numa_plan's header and the events used
    (read back here through the struct's ctypes copy; the library's decoder reads it in
    test_numa_plan.py)."""
    p = plan(OPTERON_6380, opteron)
    text = encode(p)
    prefix, _, digits = text.partition(":")
    assert prefix == f"v{abi.NUMA_PLAN_VERSION}"
    data = bytes.fromhex(digits)
    assert len(data) == abi.NumaPlan.ev.offset + len(p.events) * ctypes.sizeof(abi.NumaEvent)
    s = abi.NumaPlan.from_buffer_copy(data.ljust(ctypes.sizeof(abi.NumaPlan), b"\0"))
    assert (s.version, s.n, s.source) == (abi.NUMA_PLAN_VERSION, len(p.events), b"amd-fam15h")
    assert [(abi.NUMA_ROLES[e.role], e.node, e.type, e.config, e.config1, e.cpu) for e in s.ev[:s.n]] == \
        [(e.role, e.node, e.type, e.config, e.config1, e.cpu) for e in p.events]
    assert s.ev[0].role == 0 and s.ev[0].config == 0x76 and s.ev[0].cpu == -1


def test_decode_counts():
    cffi = pytest.importorskip("cffi")
    from corecast.runtime import build

    ffi = cffi.FFI()
    ffi.cdef(build.abi_cdef(NATIVE_SOURCE))
    n = ffi.new("struct cc_numa_counts *")
    n.nodes = 2
    n.node_cpus[0], n.node_cpus[1] = 8, 6
    n.measured = 1 << 0 | 1 << 3  # cycles, mct
    n.multiplexed = 1
    n.cycles, n.llc_misses = 1e9, 123.0  # llc not measured: its value must not show
    n.mct[0], n.mct[1] = 10.0, 20.0
    n.bus[0] = 5.0
    ffi.memmove(n.source, b"amd-fam15h\0", 11)
    assert decode_counts(ffi, n) == {
        "nodes": 2, "node_cpus": [8, 6], "measured": ["cycles", "mct"], "multiplexed": True,
        "cycles": 1e9, "llc_misses": None, "bus": None, "mct": [10.0, 20.0], "source": "amd-fam15h"}


def test_launcher_sets_target_machine_and_events(lib, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fake = Plan(source="amd-fam15h", events=[Event("cycles", -1, 4, 0x76)])
    monkeypatch.setattr(numa_events, "plan_for_this_machine", lambda: fake)
    env = launcher.preload_env({"PATH": "/bin"}, target_machine="m.toml")
    assert env["CORECAST_TARGET_MACHINE"] == str(tmp_path / "m.toml")
    assert env["CORECAST_NUMA_EVENTS"] == encode(fake) and encode(fake).startswith("v2:")
    # No events on this machine: none set, and none inherited either.
    monkeypatch.setattr(numa_events, "plan_for_this_machine", lambda: Plan(reason="no PMU"))
    env = launcher.preload_env({"CORECAST_NUMA_EVENTS": "v2:00"}, target_machine="m.toml")
    assert "CORECAST_NUMA_EVENTS" not in env and "CORECAST_TARGET_MACHINE" in env
    # A plan the struct cannot carry (a PMU type beyond 32 bits): no counters, not no run.
    huge = Plan(source="odd", events=[Event("cycles", -1, 2**32, 0x76)])
    monkeypatch.setattr(numa_events, "plan_for_this_machine", lambda: huge)
    env = launcher.preload_env({"CORECAST_NUMA_EVENTS": "v2:00"}, target_machine="m.toml")
    assert "CORECAST_NUMA_EVENTS" not in env and "CORECAST_TARGET_MACHINE" in env
    # Without a target machine nothing NUMA is set.
    env = launcher.preload_env({"PATH": "/bin"})
    assert not any(k in env for k in ("CORECAST_TARGET_MACHINE", "CORECAST_NUMA_EVENTS"))


def test_a_window_handed_over_for_the_counters_predicts_nothing(monkeypatch):
    """With --target-machine and memory counters, the sampler hands the model every window
    (the counters are credited to the region that dominated it); without steering nothing
    reads a window's predictions, so none are made: the histories and the counters are
    kept, and the exit predicts from them (issue #40)."""
    cffi = pytest.importorskip("cffi")
    from pathlib import Path

    from corecast.runtime import bridge, build

    from .helpers import NATIVE_SOURCE
    from .test_record import _struct

    ffi = cffi.FFI()
    ffi.cdef(build.abi_cdef(NATIVE_SOURCE))
    preset = Path(bridge.__file__).resolve().parents[1] / "model" / "machine" / "presets" / "opteron6380.json"
    monkeypatch.setenv("CORECAST_TARGET_MACHINE", str(preset))
    monkeypatch.setattr(bridge, "_numa", None)
    monkeypatch.setattr(bridge, "_histories", {})
    sample, result = ffi.new("struct cc_sample *"), ffi.new("struct cc_result *")
    for i, name in enumerate((b"main._omp_fn.0", b"process")):
        ffi.memmove(ffi.addressof(sample.regions[i]), _struct(ffi, name), ffi.sizeof("struct cc_region_sample"))
    sample.regions[0].nhist = 1
    sample.regions[0].hist[0].threads, sample.regions[0].hist[0].calls, sample.regions[0].hist[0].wall_s = 4, 10, 1.0
    sample.nregions, sample.target, sample.cores, sample.window_s = 2, 16, 16, 0.2
    sample.numa.measured, sample.numa.nodes, sample.numa.cycles = 1, 1, 1e9  # cycles only
    sample.final = 0
    assert bridge.predict_sample(ffi, sample, result) == 0 and result.status == 0
    assert result.regions[0].npred == 0 and result.regions[1].npred == 0  # nothing predicted
    assert bridge._histories[(b"main._omp_fn.0".decode(), "prog")].seen == {4: (10, 1.0)}
    assert bridge._numa.last is not None and bridge._numa.last["measured"] == ["cycles"]
    sample.final = 1
    assert bridge.predict_sample(ffi, sample, result) == 0 and result.status == 0
    assert result.regions[0].npred == 16 and result.regions[1].npred == 16
