"""The NUMA event plan crosses the exec as struct cc_numa_plan: numa_events.encode fills
its Python copy (recording.abi.NumaPlan) and the library's decoder (native/numa_plan.c,
compiled here on its own and called through ctypes) reads back the same events, or says
what is wrong with a value that is not such a plan.  The processes that see these values
are in test_numa_native.py; MALFORMED is shared with it."""
from __future__ import annotations

import ctypes

import pytest

from corecast.recording import abi
from corecast.runtime.numa_events import Event, Plan, encode, plan

from .helpers import NATIVE_SOURCE
from .test_numa_events import OPTERON_6380, make_sysfs

ROLE = {r: i for i, r in enumerate(abi.NUMA_ROLES)}
PREFIX = f"v{abi.NUMA_PLAN_VERSION}:"


def struct_hex(*events: tuple, version: int = abi.NUMA_PLAN_VERSION, source: bytes = b"src",
               n: int | None = None) -> str:
    """A plan's hex built field by field, without encode's checks: the header and the
    given events (role index, node, type, config, config1, cpu); ``n`` overrides the count."""
    s = abi.NumaPlan(version=version, n=len(events) if n is None else n)
    # Through the address: reading s.source gives a copy, and a 64-byte name has no NUL.
    ctypes.memmove(ctypes.addressof(s) + abi.NumaPlan.source.offset, source, min(len(source), abi.NUMA_SOURCE_LEN))
    for slot, (role, node, ptype, config, config1, cpu) in zip(s.ev, events):
        slot.role, slot.node, slot.type, slot.config, slot.config1, slot.cpu = role, node, ptype, config, config1, cpu
    used = abi.NumaPlan.ev.offset + len(events) * ctypes.sizeof(abi.NumaEvent)
    return bytes(s)[:used].hex()


CYCLES = (ROLE["cycles"], -1, 1, 1, 0, -1)
GOOD = PREFIX + struct_hex(CYCLES)

# (id, value, the decoder's reason): every kind of value that is not a plan.
MALFORMED = [
    ("no-prefix", "garbage", "not v2:HEX"),
    ("old-text-protocol", "v1;src;cycles:-1:1:0x1:0x0:-1", "not v2:HEX"),
    ("next-version-prefix", "v3:" + GOOD[3:], "not v2:HEX"),
    ("prefix-only", PREFIX, "shorter than a plan's header"),
    ("header-cut", GOOD[:3 + 2 * 40], "shorter than a plan's header"),
    ("odd-length", GOOD + "0", "an odd number of hex digits"),
    ("not-hex", GOOD[:-2] + "g0", "not hex"),
    ("sign-in-hex", GOOD[:9] + "-" + GOOD[10:], "not hex"),
    ("struct-version", PREFIX + struct_hex(CYCLES, version=1), "another plan version"),
    ("n-beyond-table", PREFIX + struct_hex(n=abi.NUMA_MAX_EVENTS + 1), "more events than the library holds"),
    ("n-huge", PREFIX + struct_hex(n=2**32 - 1), "more events than the library holds"),
    ("events-cut", PREFIX + struct_hex(CYCLES, CYCLES)[:-64], "not the size of its events"),
    ("bytes-beyond-events", GOOD + "00" * 32, "not the size of its events"),
    ("role", PREFIX + struct_hex((len(abi.NUMA_ROLES), -1, 1, 1, 0, -1)), "an event's role is out of range"),
    ("node-high", PREFIX + struct_hex((ROLE["llc"], abi.MAX_NODES, 1, 1, 0, 0)), "an event's node is out of range"),
    ("node-low", PREFIX + struct_hex((ROLE["llc"], -2, 1, 1, 0, 0)), "an event's node is out of range"),
    ("cpu-low", PREFIX + struct_hex((ROLE["llc"], -1, 1, 1, 0, -2)), "an event's cpu is out of range"),
    ("bus-without-node", PREFIX + struct_hex((ROLE["bus"], -1, 1, 1, 0, 0)), "a per-node event without"),
    ("mct-on-threads", PREFIX + struct_hex((ROLE["mct"], 0, 1, 1, 0, -1)), "a per-node event without"),
    ("cycles-pinned", PREFIX + struct_hex((ROLE["cycles"], -1, 1, 1, 0, 0)), "the program's cycles pinned"),
    ("source-unterminated", PREFIX + struct_hex(CYCLES, source=b"s" * 64), "the source is not"),
    ("source-space", PREFIX + struct_hex(CYCLES, source=b"a src"), "the source is not"),
    ("source-newline", PREFIX + struct_hex(CYCLES, source=b"src\nx"), "the source is not"),
    ("source-empty", PREFIX + struct_hex(CYCLES, source=b""), "the source is not"),
    # Under the kernel's 128 KiB per environment string, far over any plan's 16.5 kB.
    ("huge-zeros", PREFIX + "00" * 60000, "longer than any plan"),
    ("huge-garbage", PREFIX + "zz" * 60000, "longer than any plan"),
]

DECODER_C = r"""
#include "numa_plan.c"
const char *decode(const char *text, struct cc_numa_plan *p) { return cc_numa_plan_decode(text, p); }
"""


@pytest.fixture(scope="module")
def decode(build):
    """The library's decoder: value -> (reason or None, the NumaPlan it filled)."""
    so = ctypes.CDLL(str(build("numa_plan_decoder.so", DECODER_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")))
    so.decode.restype = ctypes.c_char_p
    so.decode.argtypes = [ctypes.c_char_p, ctypes.POINTER(abi.NumaPlan)]

    def _decode(value: str) -> tuple[str | None, abi.NumaPlan]:
        out = abi.NumaPlan()
        why = so.decode(value.encode(), ctypes.byref(out))
        return (why.decode() if why is not None else None), out

    return _decode


def events_of(p: abi.NumaPlan) -> list[tuple]:
    return [(abi.NUMA_ROLES[e.role], e.node, e.type, e.config, e.config1, e.cpu) for e in p.ev[:p.n]]


def planned(p: Plan) -> list[tuple]:
    return [(e.role, e.node, e.type, e.config, e.config1, e.cpu) for e in p.events]


@pytest.fixture
def opteron_plan(tmp_path) -> Plan:
    """The paper's machine: AMD family 15h, four nodes, one amd_nb unit each: 25 events."""
    root = make_sysfs(tmp_path, {0: "0-7", 1: "8-15", 2: "16-23", 3: "24-31"}, {
        "cpu": {"type": 4},
        "amd_nb": {"type": 11, "cpumask": "0,8,16,24",
                   "format": {"event": "config:0-7,32-35", "umask": "config:8-15"}},
    }, online="0-31")
    p = plan(OPTERON_6380, root)
    assert len(p.events) == 25 and p.roles == list(abi.NUMA_ROLES)
    return p


def test_the_opteron_plan_round_trips(decode, opteron_plan):
    value = encode(opteron_plan)
    # The header and the 25 events used, no more: 72 + 25 * 32 bytes.
    assert value.startswith(PREFIX) and len(value) == len(PREFIX) + 2 * (72 + 25 * 32)
    why, back = decode(value)
    assert why is None
    assert back.version == abi.NUMA_PLAN_VERSION and back.source == b"amd-fam15h"
    assert events_of(back) == planned(opteron_plan)


def test_a_full_table_of_extreme_values_round_trips(decode):
    events = [Event(abi.NUMA_ROLES[i % 4], [-1, 15, 0, 7][i % 4], 2**32 - 1 - i, 2**64 - 1 - i, i << 40,
                    [-1, 2**31 - 1, 0, 5][i % 4]) for i in range(abi.NUMA_MAX_EVENTS)]
    full = Plan(source="A-z_0.9" + "x" * 56, events=events)  # 63 bytes and the NUL
    why, back = decode(encode(full))
    assert why is None
    assert back.source == full.source.encode() and events_of(back) == planned(full)


def test_upper_case_hex_reads_the_same(decode):
    (why, back), (why_upper, back_upper) = decode(GOOD), decode(GOOD.upper().replace("V2:", PREFIX))
    assert why is why_upper is None
    assert back.source == back_upper.source == b"src"
    assert events_of(back) == events_of(back_upper) == [("cycles", -1, 1, 1, 0, -1)]


def test_a_plan_without_events_is_a_plan(decode):
    why, back = decode(PREFIX + struct_hex())
    assert why is None and back.n == 0


@pytest.mark.parametrize("value, reason", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_values_are_refused_with_their_reason(decode, value, reason):
    why, _ = decode(value)
    assert why is not None and why.startswith(reason), why


def test_encode_refuses_what_the_struct_cannot_carry():
    with pytest.raises(ValueError, match="does not fit"):
        encode(Plan(source="s", events=[Event("llc", -1, 2**32, 1)]))
    with pytest.raises(ValueError, match="does not fit"):
        encode(Plan(source="s", events=[Event("llc", -1, 4, 2**64)]))
    with pytest.raises(ValueError, match="longer than 63"):
        encode(Plan(source="s" * 64, events=[Event("cycles", -1, 4, 0x76)]))
    with pytest.raises(ValueError, match="more than the library's"):
        encode(Plan(source="s", events=[Event("cycles", -1, 4, 0x76)] * (abi.NUMA_MAX_EVENTS + 1)))
    assert encode(Plan(reason="no PMU")) == ""

