"""corecast.recording.abi is the one Python copy of the C<->Python contract: it must agree
with native/model_abi.h and native/core.c's CC_STALL_NAMES."""
import re

from corecast.recording import abi

from .helpers import NATIVE_SOURCE

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
    assert abi.NUMA_MAX_EVENTS == _define("CC_NUMA_MAX_EVENTS", "numa.c")


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
