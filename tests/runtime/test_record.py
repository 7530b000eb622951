"""corecast.recording.record is the one definition of a sample's keys: the live bridge, the
recording reader (every shipped schema, and the one this library writes) and the kernel
predictor give exactly its keys, so a key added on one side and not the other fails; and
its team rule is native/sample.c's."""
from __future__ import annotations

import ast
import inspect
import re
import subprocess
from pathlib import Path

import pytest

from corecast.model.runtime import kernelmodel
from corecast.recording import record
from corecast.recording.abi import STALLS
from corecast.recording.record import (ONE_THREAD_SHARE, SCHEMA, TEAM_SHARE, ProcessSample, RegionSample, hardware_from_struct, region_from_json,
                                           region_from_struct,
                                           team_of)
from corecast.tools.samples import read_recording

from .helpers import EXAMPLES, NATIVE_SOURCE, events, read_lines, run

ROOT = Path(__file__).resolve().parents[2]
REQUIRED = RegionSample.__required_keys__
REGION_KEYS = RegionSample.__required_keys__ | RegionSample.__optional_keys__
PROCESS_KEYS = ProcessSample.__required_keys__ | ProcessSample.__optional_keys__
SHARED = ROOT / "benchmarks" / "scale16_curves" / "samples"
RECORDINGS = sorted((ROOT / "tests" / "data" / "recordings").glob("*.jsonl")) + sorted(SHARED.glob("*.jsonl"))


def keys_of(sample: dict) -> set[str]:
    return PROCESS_KEYS if sample["name"] == "process" else REGION_KEYS


def test_the_record_documents_every_key():
    """Each key says its unit and meaning in a comment on its line."""
    lines = inspect.getsource(record).splitlines()
    classes = [n for n in ast.parse("\n".join(lines)).body if isinstance(n, ast.ClassDef)]
    fields = [n for c in classes for n in c.body if isinstance(n, ast.AnnAssign)]
    assert {f.target.id for f in fields} == PROCESS_KEYS
    for f in fields:
        assert "#" in lines[f.lineno - 1] and lines[f.lineno - 1].split("#", 1)[1].strip(), f.target.id
    assert PROCESS_KEYS > REGION_KEYS > REQUIRED
    assert not ProcessSample.__required_keys__ - REQUIRED  # the process adds optional keys only


def _struct(ffi, name: bytes):
    """A ``struct cc_region_sample`` with every field set, as cc_build_sample fills it."""
    g = ffi.new("struct cc_region_sample *")
    ffi.memmove(g.name, name + b"\0", len(name) + 1)
    ffi.memmove(g.object, b"prog\0", 5)
    g.runtime, g.threads, g.nested, g.calls, g.requested = 0, 4, 0, 10, 4
    g.wall_s, g.busy_s, g.serial_s, g.single_s, g.cpu_s = 1.0, 3.5, 0.3, 0.1, 3.9
    for i in range(len(STALLS)):
        g.stall_s[i], g.hold_s[i] = 0.01 * i, 0.001 * i
        g.acquisitions[i], g.contended[i], g.bytes[i] = 100 + i, i, 8 * i
    g.loop_calls, g.hold_sampled_s, g.hold_samples = 5, 0.02, 3
    g.nhist = 2
    g.hist[0].threads, g.hist[0].calls, g.hist[0].wall_s = 2, 2, 0.3
    g.hist[1].threads, g.hist[1].calls, g.hist[1].wall_s = 4, 8, 0.7
    g.hist_probes[0], g.probe_calls = 2, 2
    g.runq_other_s, g.team_threads = 0.05, 4
    g.tasks, g.task_s, g.task_spawn_s, g.task_depend, g.taskwaits = 12345678901, 2.5, 0.75, 12345, 678
    g.single_tasks, g.single_task_spawn_s = 9876543210, 0.5
    return g


@pytest.mark.parametrize("name", [b"main._omp_fn.0", b"process"])
def test_the_live_bridge_decodes_exactly_the_record(name):
    cffi = pytest.importorskip("cffi")
    from corecast.runtime import build

    ffi = cffi.FFI()
    ffi.cdef(build.abi_cdef(NATIVE_SOURCE))
    counts = ffi.new("struct cc_sample *")
    for i, value in enumerate((1.5, 10, 2, 300, 4e9, 5e9, 7e6, 1e9)):
        counts.counters[i] = value
    counts.counters_measured = 0b10111111  # every counter but llc_misses was read
    hardware = hardware_from_struct(counts)
    assert hardware == {"cycles": 4e9, "instructions": 5e9, "backend_stall_cycles": 1e9}
    sample = region_from_struct(ffi, _struct(ffi, name), hardware)
    assert set(sample) == keys_of(sample)
    for table in ("stalls_s", "acquisitions", "contended", "hold_s", "bytes"):
        assert tuple(sample[table]) == STALLS
    assert sample["hist"] == [(2, 2, 0.3), (4, 8, 0.7)] and sample["probes"] == {2: 2}
    assert (sample["tasks"], sample["task_s"], sample["task_spawn_s"]) == (12345678901, 2.5, 0.75)
    assert (sample["task_depend"], sample["taskwaits"]) == (12345, 678)
    assert (sample["single_tasks"], sample["single_task_spawn_s"]) == (9876543210, 0.5)


def test_task_counters_read_back_and_stay_absent_in_older_lines():
    """The explicit-task counters are keys added to schema 4: a line that has them gives
    them exactly, one written before them gives none (the model then reads busy time as
    before), and a bad value is one clear error."""
    line = {"event": "region", "schema": 4, "pid": 1, "runtime": "openmp", "name": "f._omp_fn.0",
            "calls": 2, "threads": 2, "wall_s": 1.0, "stalls_s": {},
            "counters": {"busy_s": 2.0, "serial_s": 0.0, "tasks": 12345678901, "task_s": 1.5,
                         "task_spawn_s": 0.25}}
    sample = region_from_json(line)
    assert (sample["tasks"], sample["task_s"], sample["task_spawn_s"]) == (12345678901, 1.5, 0.25)
    for key in ("tasks", "task_s", "task_spawn_s"):
        del line["counters"][key]
    assert not {"tasks", "task_s", "task_spawn_s"} & set(region_from_json(line))
    line["counters"].update(tasks=-1, task_s=1.0, task_spawn_s=0.0)
    with pytest.raises(ValueError, match="tasks"):
        region_from_json(line)


def test_dependent_tasks_read_back_and_stay_absent_in_older_lines():
    """``task_depend`` and ``taskwaits`` were added to schema 5 after the other task
    counters: a line with them gives them exactly, one without them (session 33's
    recordings) gives no key, which the task queue model reads as "not counted", and a bad
    value is one clear error."""
    line = {"event": "region", "schema": 5, "pid": 1, "runtime": "openmp", "name": "f._omp_fn.0",
            "calls": 2, "threads": 2, "wall_s": 1.0, "stalls_s": {},
            "counters": {"busy_s": 2.0, "serial_s": 0.0, "tasks": 100, "task_s": 1.5,
                         "task_spawn_s": 0.25, "task_depend": 40, "taskwaits": 7}}
    sample = region_from_json(line)
    assert (sample["task_depend"], sample["taskwaits"]) == (40, 7)
    del line["counters"]["task_depend"], line["counters"]["taskwaits"]
    assert not {"task_depend", "taskwaits"} & set(region_from_json(line))
    line["counters"]["task_depend"] = -3
    with pytest.raises(ValueError, match="task_depend"):
        region_from_json(line)


def test_single_block_tasks_read_back_and_stay_absent_in_older_lines():
    """``single_tasks`` and ``single_task_spawn_s`` were added to schema 5 in session 39: a
    line with them gives them exactly, 0 included; one without them (every earlier
    recording) gives no key, "not recorded", which a model must not read as 0; a bad value
    is one clear error."""
    line = {"event": "region", "schema": 5, "pid": 1, "runtime": "openmp", "name": "f._omp_fn.0",
            "calls": 2, "threads": 2, "wall_s": 1.0, "stalls_s": {},
            "counters": {"busy_s": 2.0, "serial_s": 0.0, "tasks": 100, "task_s": 1.5, "task_spawn_s": 0.25,
                         "task_depend": 0, "taskwaits": 2, "single_tasks": 0, "single_task_spawn_s": 0.0}}
    sample = region_from_json(line)
    assert (sample["single_tasks"], sample["single_task_spawn_s"]) == (0, 0.0)
    line["counters"].update(single_tasks=60, single_task_spawn_s=0.125)
    sample = region_from_json(line)
    assert (sample["single_tasks"], sample["single_task_spawn_s"]) == (60, 0.125)
    del line["counters"]["single_tasks"], line["counters"]["single_task_spawn_s"]
    sample = region_from_json(line)
    assert sample.get("single_tasks") is None and sample.get("single_task_spawn_s") is None
    assert sample["tasks"] == 100  # the other task counters read as before
    line["counters"]["single_task_spawn_s"] = float("nan")
    with pytest.raises(ValueError, match="single_task_spawn_s"):
        region_from_json(line)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recordings_give_the_record(path):
    """Schema-1 recordings (tests/data, and the 16-core runs in benchmarks/scale16_curves)
    lack keys the record marks optional; they give no key the record does not have."""
    for proc in read_recording(str(path)):
        for sample in proc.regions:
            assert REQUIRED <= set(sample) <= keys_of(sample), sample["name"]
        for kernel in proc.kernels:
            sample = kernelmodel.region(kernel)
            assert sample is not None and REQUIRED <= set(sample) <= REGION_KEYS


@pytest.mark.parametrize("program, flags, args", [
    ("omp_critical", ("-fopenmp", "-lm"), ("40",)),  # regions and an OpenMP process
    ("pthreads_sync", ("-pthread",), ("200",)),       # a plain-threads process
])
def test_what_this_library_records_reads_back_as_exactly_the_record(build, lib, tmp_path, program,
                                                                    flags, args):
    exe = build(program, EXAMPLES / f"{program}.c", *flags)
    out = tmp_path / "run.jsonl"
    r = run([exe, *args], preload=lib, output=out, quiet=1,
            env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert {d["schema"] for d in read_lines(out)} == {SCHEMA}
    proc, = read_recording(str(out))
    assert proc.regions[-1]["name"] == "process"
    # The hardware counts are there where this machine's PMU could be read (none here, on
    # most VMs), as the process line's counters say.
    pmu = "cycles" in events(read_lines(out), "process")[-1]["counters"]
    for sample in proc.regions:
        assert set(sample) == keys_of(sample) - (set() if pmu else {"hardware"}), sample["name"]


def test_team_rule_leaves_out_threads_that_mostly_wait():
    assert team_of([0.015, 0.005, 0.19, 0.19]) == 2          # pigz -p 2: reader, writer, 2 workers
    assert team_of([2.9, 0.5, 0.5, 0.5]) == 4                # fork/join: the leader also runs the serial part
    assert team_of([0.36, None, None]) == 0                  # one known CPU time: unknown
    assert team_of([0.01, None, 0.2, 0.2]) == 3              # an ended thread counts
    assert team_of([0.79, 0.0015]) == 1                      # MPI rank and progress thread: one worked


# (CPU times, unknown as None) -> the team; the C and the Python rule must agree on each.
TEAM_CASES = [
    [0.015, 0.005, 0.19, 0.19],    # pigz -p 2: reader, writer, 2 workers
    [2.9, 0.5, 0.5, 0.5],          # fork/join: the leader also runs the serial part
    [0.36, None, None],            # one known CPU time: unknown
    [0.01, None, 0.2, 0.2],        # an ended thread counts
    [1.0, 0.0, 0.0],               # the helpers idle: the busiest alone
    [0.79, 0.0015],                # an MPI rank beside its library's progress thread
    [0.33, 3.8e-5, 4.6e-5, 1e-5],  # a main thread beside helpers waiting on a condvar
    [1.0, 0.0, None],              # one ended unseen: it may have worked, unknown
    [1.0, 0.0099, None, 0.5],      # an ended thread and a busy one: the share rule
    [1.0, 0.0101],                 # just over ONE_THREAD_SHARE: a team of two
    [0.0, 0.0],                    # nobody busy: unknown
    [],
    [0.5],
    [1.0, 1.0, 0.25, 0.2499],      # exactly TEAM_SHARE of the second counts
    [3.0, 2.0, 2.0, 0.4, 0.6, None],
]
# Threads that never called a wrapped function have no slot: the library gives each an even
# share of the process's CPU time beyond the listed threads' (listed, unseen, process CPU).
UNSEEN_CASES = [
    ([0.5], 4, 4.5),               # a leader beside 4 unseen workers of 1 s each: a team of 5
    ([0.9, 0.8], 3, 2.0),          # 0.1 s each: under a quarter of the second busiest's
    ([1.0, 0.0], 2, 1.0),          # nothing left for the unseen: they idled
]


def test_team_rule_is_the_library_s(gcc, tmp_path):
    """native/sample.c's team_of, compiled alone with the CPU-time lookup stubbed, gives
    what record.team_of gives."""
    source = (ROOT / "native" / "sample.c").read_text()
    share = re.search(r"#define TEAM_SHARE (\S+)", source).group(1)
    assert float(share) == TEAM_SHARE
    alone = re.search(r"#define ONE_THREAD_SHARE (\S+)", source).group(1)
    assert float(alone) == ONE_THREAD_SHARE
    func = re.search(r"^static int team_of\(.*?^}\n", source, re.S | re.M).group(0)
    harness = tmp_path / "team.c"
    harness.write_text(f"""#include <stdio.h>
#include <stdlib.h>
#define CC_MAX_THREADS 64
#define TEAM_SHARE {share}
#define ONE_THREAD_SHARE {alone}
struct cc_thread {{ int tid; int internal; }};
static double cpu_of[CC_MAX_THREADS];
static double cc_slot_cpu_s(const struct cc_thread *t) {{ return cpu_of[t->tid]; }}
static struct cc_thread t[CC_MAX_THREADS];
static const struct cc_thread *cc_thread_slot(int i) {{ return &t[i]; }}
{func}
int main(int argc, char **argv) {{
    for (int i = 3; i < argc; i++) {{
        t[i - 3].tid = i - 3;
        t[i - 3].internal = 0;
        cpu_of[i - 3] = atof(argv[i]);
    }}
    printf("%d\\n", team_of(argc - 3, atoi(argv[1]), atof(argv[2])));
    return 0;
}}
""")
    exe = tmp_path / "team"
    r = subprocess.run([gcc, "-O2", "-o", str(exe), str(harness)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    def c_team_of(cpus: list, unseen: int = 0, cpu_s: float = 0.0) -> int:
        args = ["-1" if c is None else repr(c) for c in cpus]  # the library: < 0 for unknown
        return int(subprocess.run([str(exe), str(unseen), repr(cpu_s), *args], capture_output=True, text=True,
                                  check=True).stdout)

    for cpus in TEAM_CASES:  # no unseen threads: what a recording lists
        assert c_team_of(cpus) == team_of(cpus), cpus
    for listed, unseen, cpu_s in UNSEEN_CASES:
        share = max(0.0, cpu_s - sum(c for c in listed if c > 0)) / unseen
        assert c_team_of(listed, unseen, cpu_s) == team_of(listed + [share] * unseen), (listed, unseen, cpu_s)
    assert [c_team_of(*case) for case in UNSEEN_CASES] == [5, 2, 1]
