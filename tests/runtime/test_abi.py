"""corecast.recording.abi is the one Python copy of the C<->Python contract: it must agree
with native/model_abi.h and native/core.c's CC_STALL_NAMES, and its ctypes copy of the NUMA
event plan must have the compiler's layout."""
import ctypes
import re
import subprocess
import sys

from corecast.recording import abi

from .helpers import NATIVE_SOURCE, run

HEADER = (NATIVE_SOURCE / "model_abi.h").read_text()


def _define(name: str, source: str = "model_abi.h") -> int:
    text = HEADER if source == "model_abi.h" else (NATIVE_SOURCE / source).read_text()
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


def test_stall_names_are_the_c_names_in_c_order():
    core = (NATIVE_SOURCE / "core.c").read_text()
    body = re.search(r"CC_STALL_NAMES\[CC_NSTALL\] = \{(.*?)\};", core, re.S).group(1)
    assert tuple(re.findall(r'"(\w+)"', body)) == abi.STALLS
    assert _define("CC_NSTALL") == len(abi.STALLS)
    # every CC_STALL_* index names the category at that position
    indices = {int(i): n for n, i in re.findall(r"#define CC_STALL_(\w+) (\d+)", HEADER)}
    assert sorted(indices) == list(range(len(abi.STALLS)))
    assert indices[abi.STALLS.index("mpi_p2p")] == "MPI_P2P"
    assert indices[abi.STALLS.index("runqueue")] == "RUNQUEUE"


def test_sizes_match_the_header():
    assert abi.MAX_PRED == _define("CC_MAX_PRED")
    assert abi.MAX_NODES == _define("CC_MAX_NODES")
    assert abi.MAX_THREADS == _define("CC_MAX_THREADS", "corecast.h")
    assert abi.NUMA_MAX_EVENTS == _define("CC_NUMA_MAX_EVENTS")
    assert abi.NUMA_PLAN_VERSION == _define("CC_NUMA_PLAN_VERSION")
    assert _define("CC_NUMA_NROLES") == len(abi.NUMA_ROLES)


def test_numa_roles_are_in_bit_order():
    assert [_define(f"CC_NUMA_{r.upper()}") for r in abi.NUMA_ROLES] == list(range(len(abi.NUMA_ROLES)))


def test_subsets_are_drawn_from_the_names():
    assert set(abi.SYNC_WAITS) < set(abi.THREAD_STALLS) < set(abi.STALLS)
    assert not set(abi.MPI_WAITS) & set(abi.THREAD_STALLS)
    assert set(abi.THREAD_STALLS) - set(abi.SYNC_WAITS) == {"imbalance", "runqueue"}


def test_counter_names_are_the_c_names_in_c_order():
    core = (NATIVE_SOURCE / "core.c").read_text()
    body = re.search(r"CC_COUNTER_NAMES\[CC_NCTR\] = \{(.*?)\};", core, re.S).group(1)
    assert tuple(re.findall(r'"(\w+)"', body)) == abi.COUNTERS
    assert _define("CC_NCTR") == len(abi.COUNTERS)
    assert [_define(f"CC_CTR_{n}") for n in ("CYCLES", "INSTRUCTIONS", "LLC_MISSES", "BACKEND_STALLS")] \
        == [abi.COUNTERS.index(n) for n in abi.HARDWARE]


def _header_fields(struct: str) -> list[str]:
    body = re.search(rf"struct {struct} {{(.*?)\n}};", HEADER, re.S).group(1)
    return re.findall(r"^\s*[\w ]+?\s(\w+)(?:\[\d+\])?;", body, re.M)


PLAN_STRUCTS = {"cc_numa_event": "NumaEvent", "cc_numa_plan": "NumaPlan"}


def test_numa_plan_fields_are_the_headers():
    for struct, name in PLAN_STRUCTS.items():
        assert [f for f, _ in getattr(abi, name)._fields_] == _header_fields(struct), struct
    # The array lengths the header spells out as numbers (cffi's cdef reads it too).
    assert re.search(r"char source\[(\d+)\];\s+/\* the event table, NUL", HEADER).group(1) == str(abi.NUMA_SOURCE_LEN)
    assert abi.NumaPlan.source.size == abi.NUMA_SOURCE_LEN
    assert re.search(r"struct cc_numa_event ev\[(\d+)\];", HEADER).group(1) == str(abi.NUMA_MAX_EVENTS)


def test_numa_plan_layout_is_the_compilers(build):
    """Offsets and sizes as gcc lays the header's structs out, field by field."""
    rows = [(struct, f) for struct, name in PLAN_STRUCTS.items() for f, _ in getattr(abi, name)._fields_]
    prints = "".join(
        f'    printf("{s} {f} %zu %zu\\n", offsetof(struct {s}, {f}), sizeof(((struct {s} *)0)->{f}));\n'
        for s, f in rows)
    prints += "".join(f'    printf("{s} - 0 %zu\\n", sizeof(struct {s}));\n' for s in PLAN_STRUCTS)
    source = f"#include <stddef.h>\n#include <stdio.h>\n#include \"model_abi.h\"\nint main(void) {{\n{prints}    return 0;\n}}\n"
    proc = run([build("numa_plan_layout", source, f"-I{NATIVE_SOURCE}")])
    assert proc.returncode == 0
    measured = {(s, f): (int(o), int(n)) for s, f, o, n in (ln.split() for ln in proc.stdout.decode().splitlines())}
    expected = {}
    for struct, name in PLAN_STRUCTS.items():
        cls = getattr(abi, name)
        expected[(struct, "-")] = (0, ctypes.sizeof(cls))
        for f, _ in cls._fields_:
            expected[(struct, f)] = (getattr(cls, f).offset, getattr(cls, f).size)
    assert measured == expected
    assert measured[("cc_numa_plan", "-")] == (0, 72 + 256 * 32)


def test_importing_abi_loads_no_ctypes():
    """Every profiled program imports abi: ctypes comes only with the plan's structs."""
    code = ("import sys, corecast.recording.abi as a; print('ctypes' in sys.modules); "
            "a.NumaPlan; print('ctypes' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "True"]
