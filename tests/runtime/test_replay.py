"""``corecast replay``: recorded runs predicted again through the live library's predictor.

* every record version corecast has written replays (schema 1: the files in
  ``tests/data/recordings``, recorded on a 16-core machine before records were versioned,
  and a schema-1 OpenCL kernel line; schema 2: written here by the library);
* a fresh recording replays to the predictions the run itself printed;
* bad files end in one line and status 2.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.tools.replay import replay
from corecast.recording.record import SCHEMA, SCHEMAS
from corecast.tools.samples import read_recording

from .helpers import EXAMPLES, FAKE_MODEL_PRELUDE_C, NATIVE_SOURCE, beside_model, events, read_lines, run

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"
SCHEMA1 = sorted(RECORDINGS.glob("schema1-*.jsonl"))


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecast", "replay", *args], capture_output=True,
                          text=True, timeout=120)


def test_the_schema_the_library_writes_is_the_one_replay_reads():
    header = (NATIVE_SOURCE / "model_abi.h").read_text()
    assert int(re.search(r"#define CC_SAMPLE_SCHEMA (\d+)", header).group(1)) == SCHEMA
    assert SCHEMA in SCHEMAS and 1 in SCHEMAS


@pytest.mark.parametrize("path", SCHEMA1, ids=lambda p: p.stem)
def test_schema1_recordings_replay(path):
    assert len(SCHEMA1) >= 4
    reps = replay(str(path), 16)
    assert reps
    for rep in reps:
        assert rep.recorded.schema == 1
        preds = rep.predictions + [p for _, p in rep.kernels]
        assert preds and all(p is not None for p in preds)
        for p in preds:
            assert p.threads == list(range(1, 17))
            assert p.speedup[0] == pytest.approx(1.0)
            assert all(lo <= s * (1 + 1e-9) and s <= hi * (1 + 1e-9)
                       for lo, s, hi in zip(p.low, p.speedup, p.high))
            assert 1 <= p.fastest <= 16
    r = cli(str(path), "--target", "16", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["processes"]) == len(reps)
    for proc in out["processes"]:
        assert {"pid", "threads", "predicted", "fastest_threads", "basis", "regions"} <= set(proc)
    table = cli(str(path), "--target", "16")
    assert table.returncode == 0 and "corecast replay: pid" in table.stdout and "S@16" in table.stdout


def test_schema1_openmp_recording_composes_the_process_from_its_regions():
    rep = replay(str(RECORDINGS / "schema1-npb-mg.A-4.jsonl"))[0]
    assert rep.target == 16 and rep.recorded.cores == 16
    names = [r["name"] for r in rep.recorded.regions]
    assert names[-1] == "process" and len(names) == 10
    region, pred = rep.process
    assert pred.basis.startswith("contention model: serial time between regions")
    assert region["threads"] == 4


def test_schema1_kernel_line_replays_through_the_kernel_predictor():
    rep = replay(str(RECORDINGS / "schema1-opencl-kernel.jsonl"))[0]
    (kernel, pred), = rep.kernels
    assert kernel.name == "smooth" and kernel.sample.launches == 10
    # one global/local size pair: the work-group cap of the live predictor applies
    from corecast.model.runtime.workgroups import work_groups

    assert work_groups(kernel) == 4096 // 64
    assert pred.threads == [1, 2, 3, 4] and pred.basis.startswith("contention model on the kernel's sample")


def test_replay_shows_a_kernels_stalls_as_the_run_did():
    """The kernel row's stall cell is the live kernel table's (the compute units' lost
    time by category, views.columns.kernel_stall_cell); replay printed '-' there."""
    from corecast.model.runtime.kernelmodel import stalls
    from corecast.opencl.report import _top

    path = RECORDINGS / "schema4-opencl-host-pocl.jsonl"
    rep = replay(str(path))[0]
    rows = {line.split(" (")[0]: line for line in cli(str(path)).stdout.splitlines()}
    for kernel, _ in rep.kernels:
        live = _top(stalls(kernel), kernel)
        assert live.startswith("runqueue") and live in rows[kernel.name], (live, rows[kernel.name])


def test_an_opencl_host_s_process_line_says_replay_cannot_leave_the_runtime_out():
    """examples/opencl_two_kernels.py on pocl: the run's process line said 'serial host'
    (S@2 1.00, band 1.00-1.00, its 3 runtime threads left out); replay, without what the
    OpenCL layer saw, predicted all 5 threads (0.95, band 0.84-1.01) and said nothing of it."""
    path = RECORDINGS / "schema4-opencl-host-pocl.jsonl"
    rep = replay(str(path))[0]
    assert rep.kernels and rep.process is not None
    assert any("OpenCL host" in w for w in rep.warnings), rep.warnings
    r = cli(str(path))
    assert r.returncode == 0 and "warning: an OpenCL host: its process line" in r.stdout
    plain = replay(str(RECORDINGS / "schema1-opencl-kernel.jsonl"))[0]  # kernels alone: nothing to say
    assert not plain.warnings


def test_an_opencl_host_recorded_with_what_the_layer_saw_replays_its_process_line():
    """examples/opencl_device_bound.py on pocl (2-core VM, session 37): the run's process
    line said "waiting on the CPU device (91% of wall)"; replay gave 1.51, fastest 2,
    "serial" (runuser37).  The kernel lines now carry what the OpenCL layer saw of the host
    (``host``), and replay predicts the process line from it as the run did."""
    from corecast.recording.kernelstats import HostSeen
    from corecast.recording.record import host_from_json

    path = RECORDINGS / "schema5-opencl-device-bound-pocl.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    (process,) = [d for d in lines if d["event"] == "process"]
    rep = replay(str(path))[0]
    assert rep.process[1].basis == process["basis"]
    assert rep.process[1].bottleneck == process["future_bottleneck"] == "waiting on device 91% of wall"
    assert [round(s, 2) for s in rep.process[1].speedup] == [p["speedup"] for p in process["predicted"]]
    assert not any("OpenCL host" in w for w in rep.warnings)
    (kernel,) = [d for d in lines if d["event"] == "kernel"]
    seen = host_from_json(kernel)
    assert isinstance(seen, HostSeen) and seen.to_json() == kernel["host"]


def test_a_gpu_kernel_replays_to_the_devices_compute_units_as_the_run_did():
    """examples/opencl_two_kernels.py on the H200 (session 33, 16-core host): the run's
    kernel table predicted to the device's 132 compute units (smooth fastest 132, triangle
    "4 work-groups per launch on 132 compute units"); replay cut both kernels at the host's
    16 cores (smooth fastest 16) and printed only the process line's basis, so what limits
    each kernel was not named (#42)."""
    path = RECORDINGS / "schema5-opencl-h200.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    recorded = {d["name"]: d for d in lines if d["event"] == "kernel"}
    rep = replay(str(path))[0]
    for kernel, pred in rep.kernels:
        run = recorded[kernel.name]
        assert pred.threads[-1] == 132 == run["predicted"][-1]["threads"]
        assert pred.fastest == run["fastest_threads"]
        assert pred.basis.startswith("work-group bound on the device's compute units")  # the current model's words
    assert rep.process[1].threads[-1] == 16  # the host's own threads still to its cores
    out = cli(str(path)).stdout
    assert "up to 16 threads (132 compute units for its kernels: gpu, its compute units, not the host's " \
           "16 cores) on a 16-core machine" in out, out
    rows = out.splitlines()
    head = next(i for i, line in enumerate(rows) if line.startswith("kernel "))
    assert "S@132" in rows[head] and "band@132" in rows[head]
    assert rows[head + 1].startswith("triangle (NVIDIA H200)") and rows[head + 1].split()[-2:] == ["4", "work_groups"]
    assert "  triangle: work-group bound on the device's compute units: 4 work-groups per launch on 132" in out
    # Asked for a target, replay predicts every row to it, as the run does under CORECAST_TARGET.
    assert all(p.threads[-1] == 8 for _, p in replay(str(path), 8)[0].kernels)


def test_a_cpu_device_s_kernels_replay_to_the_recorded_target(tmp_path):
    """pocl's CPU device: its compute units are the host's cores, and its kernels are
    predicted to the run's target as its threads are (a run under CORECAST_TARGET=4 on 2
    cores), not cut at the cores as a device's own units would be."""
    lines = [json.loads(line) for line in (RECORDINGS / "schema5-opencl-device-bound-pocl.jsonl").read_text().splitlines()]
    for d in lines:
        if d["event"] == "summary":
            assert (d["cores"], d["target"]) == (2, 2)
            d["target"] = 4
    path = tmp_path / "target4.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    rep = replay(str(path))[0]
    assert rep.kernels and all(p.threads[-1] == 4 for _, p in rep.kernels)
    assert rep.process[1].threads[-1] == 4


def test_kernels_of_devices_of_different_sizes_share_the_largest_s_columns(tmp_path):
    """Two devices, 66 and 132 compute units: the kernel block's columns reach the larger,
    each kernel predicted to its own (the smaller's band at 132 is '-')."""
    lines = [json.loads(line) for line in (RECORDINGS / "schema5-opencl-h200.jsonl").read_text().splitlines()]
    for d in lines:
        if d.get("name") == "triangle":
            d["threads"] = 66
    path = tmp_path / "two-devices.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    rep = replay(str(path))[0]
    assert [(k.name, p.threads[-1]) for k, p in rep.kernels] == [("triangle", 66), ("smooth", 132)]
    rows = cli(str(path)).stdout.splitlines()
    head = next(i for i, line in enumerate(rows) if line.startswith("kernel "))
    assert rows[head].split()[-4:-2] == ["S@132", "band@132"], rows[head]
    assert rows[head + 1].startswith("triangle") and rows[head + 1].split()[-4] == "-"


def test_a_recording_of_gpu_kernels_alone_has_one_heading(tmp_path):
    """Kernel lines without a process line (the OpenCL hook alone, CORECAST_OPENCL=1 without
    the preload library): the regions' heading, to the host's 16, stood over no row above
    the kernels' own, to the device's 132."""
    lines = (RECORDINGS / "schema5-opencl-h200.jsonl").read_text().splitlines()
    path = tmp_path / "kernels.jsonl"
    path.write_text("".join(line + "\n" for line in lines if json.loads(line)["event"] != "process"))
    out = cli(str(path)).stdout
    heads = [line for line in out.splitlines() if line.split()[:2] in (["region", "calls"], ["kernel", "calls"])]
    assert len(heads) == 1 and "S@132" in heads[0] and "band@132" in heads[0], out


@pytest.mark.parametrize("host, message", [({"device_s": "x"}, "device_s is 'x', not a number >= 0"),
                                           ({"device_s": 1.0}, "missing 'wait_s'"),
                                           ({"program_cpu_s": [0.3, -1]}, "program_cpu_s is -1, not a number >= 0")])
def test_a_kernel_line_s_bad_host_object_is_one_line(tmp_path, host, message):
    lines = (RECORDINGS / "schema5-opencl-device-bound-pocl.jsonl").read_text().splitlines()
    kernel = next(json.loads(line) for line in lines if '"event":"kernel"' in line)
    kernel["host"] = {**kernel["host"], **host} if "program_cpu_s" in host else host
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(kernel) + "\n")
    r = cli(str(path))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and f"line 1: not a corecast kernel record ({message})" in r.stderr


@pytest.mark.parametrize("sizes", [{"global_sizes": [[1024]], "local_sizes": [[float("inf")]]},
                                   {"global_sizes": [[1024]], "local_sizes": [[2.5]]}])
def test_a_kernel_line_s_launch_shape_that_is_not_whole_numbers_is_one_line(tmp_path, sizes):
    # fuzz40: int() of Infinity was 'internal error: OverflowError', and 2.5 was read as 2
    lines = (RECORDINGS / "schema1-opencl-kernel.jsonl").read_text().splitlines()
    kernel = next(json.loads(line) for line in lines if '"event": "kernel"' in line or '"event":"kernel"' in line)
    kernel.update(sizes)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(kernel) + "\n")
    r = cli(str(path))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "line 1: not a corecast kernel record (a work size is " in r.stderr, r.stderr


def test_a_kernel_line_s_host_without_its_cpu_times_is_one_line(tmp_path):
    # Every other field of a ``host`` object present: the program's CPU times are still
    # required, not read as none (HostSeen.to_json always writes them).
    lines = (RECORDINGS / "schema5-opencl-device-bound-pocl.jsonl").read_text().splitlines()
    kernel = next(json.loads(line) for line in lines if '"event":"kernel"' in line)
    del kernel["host"]["program_cpu_s"]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(kernel) + "\n")
    r = cli(str(path))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "line 1: not a corecast kernel record (missing 'program_cpu_s')" in r.stderr, r.stderr


def test_fresh_recording_replays_to_what_the_run_printed(build, lib, tmp_path):
    """Schema 2, written by this library: replay goes through the same predictor, so it
    gives the run's own predictions (rounded as the JSON rounds them)."""
    exe = build("omp_critical", EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")
    out = tmp_path / "run.jsonl"
    r = run([exe, "40"], preload=lib, output=out, target=8, quiet=1,
            env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    lines = read_lines(out)
    recorded = events(lines, "region") + events(lines, "process")
    assert recorded and all(d["schema"] == SCHEMA for d in lines)
    region = events(lines, "region")[0]
    for key in ("nested", "requested"):
        assert key in region
    assert {"single_s", "hold_s"} <= set(region["counters"])
    rep = replay(str(out))[0]
    assert rep.recorded.schema == SCHEMA and rep.target == 8
    by_name = {r["name"]: p for r, p in zip(rep.recorded.regions, rep.predictions)}
    for d in recorded:
        pred = by_name[d["name"]]
        assert [p["threads"] for p in d["predicted"]] == pred.threads
        assert [p["speedup"] for p in d["predicted"]] == pytest.approx(pred.speedup, rel=1e-3, abs=1e-3)
        assert d["fastest_threads"] == pred.fastest
        assert d["basis"] == pred.basis[:95]


def test_serial_program_replays_as_a_serial_run(tmp_path):
    line = {"event": "process", "schema": SCHEMA, "pid": 7, "runtime": "pthreads", "name": "process",
            "object": "xz", "calls": 1, "threads": 1, "wall_s": 1.0, "stalls_s": {},
            "counters": {"busy_s": 1.0, "serial_s": 0, "cpu_s": 1.0, "loop_calls": 0, "hold_sampled_s": 0,
                         "hold_samples": 0, "acquisitions": {}, "contended": {}}}
    path = tmp_path / "serial.jsonl"
    path.write_text(json.dumps(line) + "\n")
    r = cli(str(path), "--target", "4")
    assert r.returncode == 0, r.stderr
    # The library's one line (native/report.c), not a header over an empty table with
    # "speedups: predicted" (runuser37).
    assert r.stdout == ("corecast replay: pid 7, time not recorded: serial run: no parallel activity "
                        "(no thread started, no OpenMP region); nothing to predict\n")
    assert json.loads(cli(str(path), "--json").stdout)["processes"][0]["serial_run"] is True
    # A parallel image that exec'd a serial one (one pid): its table, then the serial line.
    parallel = dict(line, threads=4, counters=dict(line["counters"], cpu_s=3.8, busy_s=4.0))
    summary = {"event": "summary", "schema": SCHEMA, "pid": 7, "elapsed_s": 1.0, "cores": 4, "target": 8,
               "regions": 0, "serial_run": True}
    path.write_text(json.dumps(parallel) + "\n" + json.dumps(summary) + "\n")
    out = cli(str(path)).stdout.splitlines()
    assert any(row.startswith("process (pthreads)") for row in out)
    assert out[-2:] == ["corecast: serial run: no parallel activity (no thread started, no OpenMP region); "
                        "nothing to predict", f"replayed: schema {SCHEMA} records with the current model"]


def test_a_process_one_thread_worked_in_names_no_fastest_count(tmp_path):
    """Replay shows what the run's table shows for a sample that is no evidence (one busy
    thread beside idle helpers): '?' for the fastest count, the line saying why, and null
    in the JSON."""
    line = {"event": "process", "schema": SCHEMA, "pid": 7, "runtime": "pthreads", "name": "process",
            "object": "p", "calls": 1, "threads": 3, "wall_s": 1.0, "stalls_s": {"cond": 2.0},
            "counters": {"busy_s": 1.0, "serial_s": 0, "cpu_s": 1.0, "loop_calls": 0, "hold_sampled_s": 0,
                         "hold_samples": 0, "acquisitions": {}, "contended": {}, "team_threads": 1}}
    path = tmp_path / "onebusy.jsonl"
    path.write_text(json.dumps(line) + "\n")
    r = cli(str(path), "--target", "8")
    assert r.returncode == 0, r.stderr
    row = next(x for x in r.stdout.splitlines() if x.startswith("process (pthreads)"))
    assert row.split()[-2] == "?", r.stdout
    assert "no evidence: the process ran its work one thread at a time" in r.stdout, r.stdout
    assert json.loads(cli(str(path), "--json").stdout)["processes"][0]["fastest_threads"] is None


def test_a_huge_stall_is_a_share_not_inf(tmp_path):
    """A record's absurd stall (1e308 s: a tampered recording) is at most 100% of the
    thread time; 100 x 1e308 overflowed before the division and printed 'mutex inf%'."""
    line = {"event": "process", "schema": SCHEMA, "pid": 7, "runtime": "pthreads", "name": "process",
            "object": "p", "calls": 1, "threads": 2, "wall_s": 1.0, "stalls_s": {"mutex": 1e308},
            "counters": {"busy_s": 2.0, "serial_s": 0, "cpu_s": 2.0, "loop_calls": 0, "hold_sampled_s": 0,
                         "hold_samples": 0, "acquisitions": {}, "contended": {}}}
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(line) + "\n")
    r = cli(str(path))
    assert r.returncode == 0, r.stderr
    assert "mutex 100%" in r.stdout and "inf" not in r.stdout, r.stdout


def test_huge_times_print_compactly(tmp_path):
    """A record's absurd wall time (1e308: a tampered or broken recording) is a short
    column, not 300 digits; ordinary times keep the library's milliseconds."""
    def line(wall_s: float, pid: int) -> str:
        return json.dumps({"event": "process", "schema": SCHEMA, "pid": pid, "runtime": "pthreads",
                           "name": "process", "object": "xz", "calls": 3, "threads": 2, "wall_s": wall_s,
                           "stalls_s": {},
                           "counters": {"busy_s": 1.0, "serial_s": 0, "cpu_s": 1.0, "loop_calls": 0,
                                        "hold_sampled_s": 0, "hold_samples": 0, "acquisitions": {},
                                        "contended": {}}}) + "\n"
    path = tmp_path / "huge.jsonl"
    path.write_text(line(1e308, 7) + line(12345.6, 8) + line(1.5, 9))
    r = cli(str(path), "--target", "4")
    assert r.returncode == 0, r.stderr
    rows = [row for row in r.stdout.splitlines() if row.startswith("process (pthreads)")]
    assert len(rows) == 3, r.stdout
    assert " 1e+308s " in rows[0] and " 1.23e+04s " in rows[1] and "    1.500s " in rows[2]
    assert len({len(row.split("s ")[0]) for row in rows}) == 1  # one column width
    assert max(len(row) for row in r.stdout.splitlines()) < 200


@pytest.mark.parametrize("content, message", [
    ("not json\n", "line 1: not JSON"),
    ("[" * 100000 + "]" * 100000 + "\n", "line 1: not JSON: nested too deeply"),
    ('{"event":"summary","pid":' + "9" * 5000 + "}\n", "line 1: not JSON: Exceeds the limit"),
    ('{"event":"summary","pid":1}\n', "line 1: not a corecast summary record (missing 'cores')"),
    ('{"event":"summary","pid":1,"cores":2,"target":2,"elapsed_s":1}\n', "no region, process or kernel records"),
    ("", "no region, process or kernel records"),
    ('{"event":"region","schema":99,"pid":1}\n', "schema 99 is not one this corecast reads"),
    ('{"event":"region","schema":0,"pid":1}\n', f"schema 0 is not one this corecast reads ({', '.join(map(str, SCHEMAS))}); no corecast"),
    ('{"event":"region","schema":"4","pid":1}\n', f"schema '4' is not one this corecast reads ({', '.join(map(str, SCHEMAS))}); no corecast"),
    ('{"event":"region","pid":1,"name":"f","threads":2}\n', "line 1: not a corecast region record"),
    ('{"event":"region","pid":1,"name":"f","threads":-2,"calls":1,"wall_s":1,"counters":{}}\n',
     "threads is -2"),
    # fuzz40: a JSON integer past float range, and Infinity where a whole number belongs, were
    # 'internal error: OverflowError'
    ('{"event":"region","pid":1,"name":"f","threads":2,"calls":1,"wall_s":1' + "0" * 400 + ',"counters":{}}\n',
     "line 1: not a corecast region record (wall_s is 1000"),
    ('{"event":"region","pid":1,"name":"f","threads":2,"calls":1' + "0" * 400 + ',"wall_s":1,"counters":{}}\n',
     "line 1: not a corecast region record (calls is 1000000000000000000000000000000000000000..., past the 64 bits"),
])
def test_bad_recordings_are_one_line(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    r = cli(str(path))
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert message in r.stderr


def test_a_field_of_the_wrong_type_names_its_record(tmp_path):
    # A region line whose by_team is a number, not a list: a TypeError in the decoder, told
    # as what is wrong with that line (not the CLI's "internal error" for corecast's own faults)
    line = next(rec for rec in map(json.loads, (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text().splitlines())
                if rec["event"] == "region")
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(dict(line, by_team=5)) + "\n")
    r = cli(str(path))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert "bad.jsonl: line 1: not a corecast region record" in r.stderr and "internal error" not in r.stderr


def test_missing_file_is_one_line(tmp_path):
    r = cli(str(tmp_path / "nope.jsonl"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "nope.jsonl" in r.stderr


def test_read_recording_groups_processes(tmp_path):
    a = (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text()
    b = (RECORDINGS / "schema1-pthreads_sync-2.jsonl").read_text()
    path = tmp_path / "two.jsonl"
    path.write_text(a + b)
    procs = read_recording(str(path))
    assert [p.pid for p in procs] == [9054, 10640]
    assert [r["name"] for r in procs[1].regions] == ["process"]


def test_no_stall_share_passes_100_percent():
    """Waits of more threads than the recorded team (a pool, team sizes that varied) are
    shown as shares of the time those threads were seen, as the library's table does."""
    from corecast.views.replayview import _stalls

    region = {"threads": 2, "wall_s": 1.0, "busy_s": 2.0, "stalls_s": {"critical": 2.7, "imbalance": 0.3}}
    shares = [int(part.split()[-1].rstrip("%")) for part in _stalls(region).split(", ")]
    assert max(shares) <= 100 and shares[0] == 90


def test_a_cell_cut_short_says_so():
    from corecast.views.replayview import _cell

    assert _cell("short", 8) == "short   "
    cut = _cell("a_function_with_a_really_long_name", 10)
    assert len(cut) == 10 and cut.endswith("\u2026") and cut.startswith("a_functio")



def printed_and_replayed(build, lib, tmp_path, name: str) -> tuple[list[str], list[str]]:
    """omp_critical built as ``name``, run under the library at 2 threads (target 8): the
    lines of the library's own table and of ``corecast replay``'s of the same run."""
    exe = build(name, EXAMPLES / "omp_critical.c", "-fopenmp", "-lm")
    out = tmp_path / "run.jsonl"
    r = run([exe, "40"], preload=lib, output=out, target=8,
            env={"OMP_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    printed = (r.stderr.decode() if isinstance(r.stderr, bytes) else r.stderr).splitlines()
    return printed, cli(str(out), "--target", "8").stdout.splitlines()

def test_the_library_s_table_and_replay_s_share_one_layout(build, lib, tmp_path):
    """One column table (views/columns.py) lays out both: the generated header the C
    table is printed with is the table's, and a run's printed table and its replay have
    the same column line and the same measured cells in every row."""
    from corecast.views import columns

    assert (NATIVE_SOURCE / "report_columns.h").read_text() == columns.c_header(), \
        "native/report_columns.h is stale: run PYTHONPATH=src python -m corecast.views.columns"
    printed, shown = printed_and_replayed(build, lib, tmp_path, "omp_critical")
    heading = columns.heading(8)
    assert heading in printed and heading in shown
    measured = len(heading.split(" S@")[0])  # label, calls, threads, time, stalls
    rows = [line for line in printed if line.startswith(("omp_critical", "main", "process"))]
    replayed = [line for line in shown if line.startswith(("omp_critical", "main", "process"))]
    assert rows and [row[:measured] for row in rows] == [row[:measured] for row in replayed]


def band_cells(tmp_path, ends: list[tuple[float, float]], n: int) -> tuple[list[str], list[str]]:
    """The band cells of ``ends`` at ``n`` threads as the library prints them (native/
    report_columns.h, compiled here) and as replay does (views.columns)."""
    from types import SimpleNamespace

    from corecast.views import columns

    src = tmp_path / "band.c"
    src.write_text("#include <stdio.h>\n#include \"report_columns.h\"\nint main(void) {\n"
                   + "".join(f"    printf(CC_COL_BAND \"|\\n\", CC_COL_BAND_DECIMALS({lo}), {lo}, "
                             f"CC_COL_BAND_DECIMALS({hi}), {hi});\n" for lo, hi in ends)
                   + "    return 0;\n}\n")
    exe = tmp_path / "band"
    subprocess.run(["gcc", "-I", str(NATIVE_SOURCE), "-o", str(exe), str(src)], check=True)
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    cells = [columns.band_cell(SimpleNamespace(threads=[n], low=[lo], high=[hi]), n) for lo, hi in ends]
    return [line[:-1] for line in printed], cells


def test_a_band_past_100_keeps_its_cell_in_both_tables(tmp_path):
    """A band's ends from 100 on lose decimals so that the cell keeps its 11 cells, in the
    library's format (native/report_columns.h, compiled here) and in replay's alike: a
    GPU's band@132, 66.00-132.00, pushed the row one cell (#42)."""
    from corecast.views import columns

    ends = [(0.5, 1.94), (66.0, 132.0), (99.996, 100.0), (640.5, 1500.25), (99.994, 999.96), (-120.0, 2.0)]
    printed, cells = band_cells(tmp_path, ends, 132)
    assert printed == cells
    assert all(len(cell) == 1 + columns.BAND for cell in cells[:4]), cells
    assert cells[1] == " 66.00-132.0"


def test_a_band_around_a_small_speedup_has_its_decimals_in_both_tables(tmp_path):
    """A steered run's S@16 0.007 (0.007485) sat beside the band 0.01-0.01 (0.006725 to
    0.007892), which leaves the point out: a band's end below 0.01 gets the three decimals
    its S@n cell has (columns.speedup_cell), in the library's format and replay's alike."""
    from corecast.views import columns

    ends = [(0.006725, 0.007892), (0.0042, 0.07), (0.0, 0.0099), (0.00004, 0.5), (0.0099, 0.01)]
    printed, cells = band_cells(tmp_path, ends, 16)
    assert printed == cells
    assert cells[:2] == [" 0.007-0.008", " 0.004-0.07 "], cells
    assert all(len(cell) == 1 + columns.BAND for cell in cells), cells
    point = columns.speedup_cell(0.007485)
    lo, hi = cells[0].split("-")
    assert float(lo) <= float(point) <= float(hi)


@pytest.mark.parametrize("letter", ["x", "\u00e9"])
def test_a_long_label_widens_the_column_in_both_tables(build, lib, tmp_path, letter):
    """A label longer than the column's 34 cells widens it, in the library's table and in
    replay's alike: "compute._omp_fn.0 (omp_two_regions)" was cut by one cell (#41).  The
    width counts cells, not bytes: an "\u00e9" is two bytes and one cell (report.c cells())."""
    from corecast.views import columns

    name = "omp_critical_" + letter * 30  # the label is "REGION (this name)", about 60 cells
    printed, shown = printed_and_replayed(build, lib, tmp_path, name)
    for lines in (printed, shown):
        rows = [line for line in lines if line.startswith("main.")]
        assert rows and all(f"({name}) " in row for row in rows)
        width = max(len(row.split(f"({name})")[0]) + len(name) + 2 for row in rows)
        assert columns.heading(8, width) in lines


def test_a_label_past_the_widest_column_ends_in_an_ellipsis_in_both_tables(build, lib, tmp_path):
    """The library's table (native/text.c's cell) and replay's cut a label too long for the
    widest column the same way, and both say so with an ellipsis (#41 item 5)."""
    from corecast.views import columns

    name = "omp_critical_" + "x" * columns.LABEL_MAX
    printed, shown = printed_and_replayed(build, lib, tmp_path, name)
    cut = [[line[:columns.LABEL_MAX] for line in lines if line.startswith("main.")] for lines in (printed, shown)]
    assert cut[0] and cut[0] == cut[1]
    assert all(label.endswith("\u2026") for label in cut[0])
    assert all(columns.heading(8, columns.LABEL_MAX) in lines for lines in (printed, shown))


# Three waits whose names and shares never fit the stalls column together, whichever
# comes first: a barrier, a semaphore and a condition variable, each released 100 ms late.
THREE_WAITS = r"""
#include <pthread.h>
#include <semaphore.h>
#include <unistd.h>
static pthread_barrier_t bar;
static sem_t sem;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;
static void *late(void *a) {
    (void)a;
    usleep(100000);
    pthread_barrier_wait(&bar);
    pthread_mutex_lock(&m);
    while (!ready) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    return 0;
}
static void *waiter(void *a) { (void)a; pthread_barrier_wait(&bar); sem_wait(&sem); return 0; }
int main(void) {
    pthread_t t[2];
    pthread_barrier_init(&bar, 0, 3);
    sem_init(&sem, 0, 0);
    pthread_create(&t[0], 0, late, 0);
    pthread_create(&t[1], 0, waiter, 0);
    pthread_barrier_wait(&bar);
    usleep(100000);
    sem_post(&sem);
    usleep(100000);
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
    return 0;
}
"""


def test_a_stalls_cell_keeps_whole_categories_in_both_tables(build, lib, tmp_path):
    """Three categories too long for the column together: both tables show the ones that
    fit whole, with their shares, and an ellipsis for the rest, never a name whose share
    was cut off ("semaphore 11%, con\u2026")."""
    from corecast.views import columns

    exe = build("three_waits", THREE_WAITS, "-pthread")
    out = tmp_path / "run.jsonl"
    r = run([exe], preload=lib, output=out, target=8, env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    printed = (r.stderr.decode() if isinstance(r.stderr, bytes) else r.stderr).splitlines()
    shown = cli(str(out), "--target", "8").stdout.splitlines()
    start = columns.LABEL + columns.CALLS + columns.THREADS + columns.TIME + 5
    cells = [[line[start:start + columns.STALLS].rstrip() for line in lines if line.startswith("process")]
             for lines in (printed, shown)]
    assert cells[0] and cells[0] == cells[1], (printed, shown)
    whole = re.compile(r"^[a-z_]+ \d+%(, [a-z_]+ \d+%)*(, \u2026)?$")
    assert all(whole.match(cell) for cell in cells[0]), cells
    assert cells[0][0].endswith(", \u2026")  # the three never fit together


def test_the_stall_cell_rule():
    from corecast.views.columns import stall_cell

    assert stall_cell([]) == "-"
    assert stall_cell(["imbalance 12%", "critical 3%"]) == "imbalance 12%, critical 3%"
    assert stall_cell(["semaphore 19%", "mutex 18%", "rwlock 12%"], 34) == "semaphore 19%, mutex 18%, \u2026"
    assert stall_cell(["a 1%", "b 2%"], 9) == "a 1%, \u2026"  # "a 1%, b 2%" is 10
    # Two fit, but not with the ellipsis after them: the second gives way to it.
    assert stall_cell(["pthread_barrier 22%", "condvar 22%", "semaphore 11%"], 34) == "pthread_barrier 22%, \u2026"


def test_a_target_machine_run_says_replay_leaves_its_node_model_out(tmp_path):
    # A --target-machine run's replay gave other thread predictions than the run printed,
    # without a word (runuser37): the node model is numa --replay's.
    proc = {"event": "process", "schema": SCHEMA, "pid": 7, "runtime": "pthreads", "name": "process",
            "object": "p", "calls": 1, "threads": 2, "wall_s": 1.0, "stalls_s": {},
            "counters": {"busy_s": 2.0, "serial_s": 0, "cpu_s": 1.8, "loop_calls": 0, "hold_sampled_s": 0,
                         "hold_samples": 0, "acquisitions": {}, "contended": {}}}
    summary = {"event": "summary", "schema": SCHEMA, "pid": 7, "elapsed_s": 1.0, "cores": 2, "target": 64,
               "predicted_for": {"cores": 64, "source": "target machine Opteron, 4 sockets"}}
    path = tmp_path / "tm.jsonl"
    path.write_text(json.dumps(proc) + "\n" + json.dumps(summary) + "\n")
    out = cli(str(path)).stdout
    assert "warning: recorded with --target-machine (Opteron, 4 sockets)" in out
    assert "corecast numa --replay" in out
    for source in ("this machine", "this machine, calibrated", "target, calibrated"):  # bridge._predicted_for's
        summary["predicted_for"]["source"] = source
        path.write_text(json.dumps(proc) + "\n" + json.dumps(summary) + "\n")
        assert "--target-machine" not in cli(str(path)).stdout, source


def test_a_small_speedup_never_reads_as_zero_in_the_exit_table():
    # A steered convoy measured S@2 = 1/456: both tables printed 0.00 (runuser37).  The
    # library prints the same cells (native/report.c, CC_COL_SPEEDUP_SMALL).
    from corecast.views import columns

    assert [columns.speedup_cell(v) for v in (1.5, 0.0123, 0.0022, 0.0004, 0.0)] == \
        ["1.50", "0.01", "0.002", "<0.001", "0.00"]
    assert all(len(columns.speedup_cell(v)) <= columns.SPEEDUP for v in (0.0022, 0.0004, 99.99))
    # the bounds belong to the wider cell, as the library's `v < BELOW` has it
    assert [columns.speedup_cell(v) for v in (columns.SPEEDUP_SMALL, columns.SPEEDUP_TINY)] == ["0.01", "0.001"]


# A stand-in model that predicts every region and the process at 1, 2, 4 and 8 threads
# with speedups too small for two decimals (a steered convoy's S@2 was 1/456).
SMALL_SPEEDUP_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    static const double at[4] = {1.0, 0.0123, 0.0022, 0.0004};
    r->status = 0;
    for (int i = 0; i < s->nregions; i++) {
        struct cc_region_prediction *p = &r->regions[i];
        one_count(p, "small speedups");
        p->npred = 4;
        for (int k = 0; k < 4; k++) {
            p->threads[k] = 1 << k;
            p->speedup[k] = p->low[k] = p->high[k] = at[k];
        }
    }
    return 0;
}
"""

TWO_THREADS_C = r"""
#include <pthread.h>
static void *work(void *a) { return a; }
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    pthread_join(t, 0);
    return 0;
}
"""


def test_the_library_prints_small_speedups_by_the_one_cell_rule(build, lib, tmp_path):
    """native/report.c's S@n cells follow views/columns.py's speedup_cell: 0.0123 is 0.01,
    0.0022 is 0.002 and 0.0004 is <0.001, never 0.00 (CC_COL_SPEEDUP_SMALL)."""
    from corecast.views import columns

    model = build("small_speedup_model.so", SMALL_SPEEDUP_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    beside = beside_model(lib, model, tmp_path / "lib")
    r = run([build("two_threads", TWO_THREADS_C, "-pthread")], preload=beside, target=8,
            env={"PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stderr.decode().splitlines() if line.startswith("process")]
    at = dict(zip((1, 2, 4, 8), (1.0, 0.0123, 0.0022, 0.0004)))
    cells = "".join(f" {columns.speedup_cell(at[c]):>{columns.SPEEDUP}}" for c in columns.speedup_columns(8))
    assert rows and all(cells in row for row in rows), (cells, r.stderr.decode())
