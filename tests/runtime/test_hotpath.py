"""The OpenMP hot path at many threads (issue #40): what the region counters hold when its
members fold into per-slot shards, and what an exit costs in instructions (callgrind:
a count, not a time, so load does not move it)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import TIMEOUT, clean_env, events, read_lines, run

MICRO = Path(__file__).resolve().parents[2] / "benchmarks" / "hotpath_micro.c"


@pytest.fixture(scope="module")
def micro(build) -> Path:
    return build("hotpath_micro", MICRO, "-fopenmp")


@pytest.mark.parametrize("threads", [3, 20])
def test_region_counts_sum_over_fold_shards(micro, lib, tmp_path, threads):
    """Every barrier of every member is in the region's counts, once: at 20 threads two
    threads share a shard (slots 16 apart) and their adds must both land."""
    out = tmp_path / "out.jsonl"
    r = run([micro, "barriers", "50"], env=clean_env(OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="passive"),
            preload=lib, quiet=1, output=out)
    assert r.returncode == 0, r.stderr
    lines = read_lines(out)
    (region,) = [d for d in events(lines, "region") if d["name"] != "process"]
    (process,) = events(lines, "process") or [d for d in events(lines, "region") if d["name"] == "process"]
    assert region["counters"]["acquisitions"]["omp_barrier"] == 50 * threads
    assert process["counters"]["acquisitions"]["omp_barrier"] == 50 * threads
    # the same ticks, turned into seconds a moment apart (the clock calibrates as it goes)
    assert region["stalls_s"]["omp_barrier"] == pytest.approx(process["stalls_s"]["omp_barrier"], rel=1e-3)


def test_dynamic_loop_calls_sum_over_fold_shards(micro, lib, tmp_path):
    out = tmp_path / "out.jsonl"
    r = run([micro, "dynamic", "500"], env=clean_env(OMP_NUM_THREADS="18", OMP_WAIT_POLICY="passive"),
            preload=lib, quiet=1, output=out)
    assert r.returncode == 0, r.stderr
    (region,) = [d for d in events(read_lines(out), "region") if d["name"] != "process"]
    # each thread: one start, then a next per chunk it took and one that finds none
    assert region["counters"]["loop_calls"] == 500 + 18


def exit_instructions(micro: Path, lib: Path, tmp_path: Path, **env: str) -> int:
    """Instructions of the exit report (cc_exit_report, inclusive) of a quiet run."""
    out = tmp_path / "callgrind.out"
    e = clean_env(OMP_NUM_THREADS="4", OMP_WAIT_POLICY="passive", LD_PRELOAD=str(lib), CORECAST_QUIET="1", **env)
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(micro), "regions", "20"],
                       env=e, capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr[-2000:]
    ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    counts = [int(m.group(1).replace(",", "")) for m in
              re.finditer(r"^\s*([\d,]+) \([\s\d.]+%\)\s+\S*:cc_exit_report \[", ann, re.M)]
    assert counts, "cc_exit_report not in the profile"
    return max(counts)


@pytest.mark.skipif(not shutil.which("valgrind") or not shutil.which("callgrind_annotate"),
                    reason="valgrind's callgrind is not installed")
def test_quiet_exit_clears_only_the_regions_in_use(micro, lib, tmp_path):
    """The exit's result structs are 0.8 MB each: clearing two and copying one whole cost
    2.8 million instructions on every exit (quiet or not); with the regions in use only,
    a 1-region quiet exit takes about 0.2 million."""
    assert exit_instructions(micro, lib, tmp_path) < 1_000_000


def test_hotpath_benchmark_runs(micro, lib, tmp_path):
    """benchmarks/hotpath.py (issue #40's per-call figures; steer_suite's ``hotpath`` case)
    runs its sides and records each case's calls: a smoke test, no figure checked."""
    import json
    import sys

    out = tmp_path / "hotpath.json"
    script = MICRO.with_name("hotpath.py")
    r = subprocess.run([sys.executable, str(script), "--threads", "2", "--runs", "1", "--scale", "0.01",
                        "--cases", "regions,barriers", "--bin", str(tmp_path), "--json-out", str(out)],
                       env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())["cpu"]
    assert rec["regions"]["calls"] == 200 and rec["barriers"]["calls"] == 400
    assert set(rec["regions"]["sides"]) == {"none", "quiet", "report"}
    bad = subprocess.run([sys.executable, str(script), "--cases", "nosuch"], env=clean_env(),
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.splitlines()) == 1
