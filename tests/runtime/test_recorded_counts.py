"""A recording's counts the library always writes as 1 or more (a region's or process's
threads, a team size in ``by_team``, calls, cores, ranks) are refused at 0 with one line,
by replay and merge alike: a hand-edited ``threads: 0`` was read as 1 without a word, and
the replay then described a run that is not the one the file says."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RECORDINGS = Path(__file__).resolve().parents[1] / "data" / "recordings"


def lines() -> list[dict]:
    return [json.loads(x) for x in (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text().splitlines()]


def edited(event: str, change) -> list[dict]:
    out = lines()
    change(next(rec for rec in out if rec["event"] == event))
    return out


def command(what: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "corecast", what, str(path)], capture_output=True,
                          text=True, timeout=120)


EDITS = {
    "region threads": ("region", lambda r: r.update(threads=0), "threads is 0"),
    "process threads": ("process", lambda r: r.update(threads=0), "threads is 0"),
    "region calls": ("region", lambda r: r.update(calls=0), "calls is 0"),
    "summary cores": ("summary", lambda r: r.update(cores=0), "cores is 0"),
    "a by_team size": ("region", lambda r: r.update(by_team=[{"threads": 0, "calls": 4000, "wall_s": 2.2}]),
                       "threads is 0"),
    "world size": ("process", lambda r: r.update(rank=0, ranks=0), "ranks is 0"),
}


@pytest.mark.parametrize("what", ["replay", "merge"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_zero_count_is_one_line_and_a_failure(tmp_path, what, edit):
    event, change, said = EDITS[edit]
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in edited(event, change)))
    r = command(what, path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert said in r.stderr and "edited.jsonl: line " in r.stderr, r.stderr


def test_the_recording_as_written_replays(tmp_path):
    path = tmp_path / "as-is.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines()))
    r = command("replay", path)
    assert r.returncode == 0, r.stderr


def kernel_lines(threads: object) -> list[dict]:
    """A pocl run's recording with every kernel line's ``threads`` (its device's compute
    units) set to ``threads``, under rank 0 of 1 so that merge reads it too."""
    out = [json.loads(x) for x in (RECORDINGS / "schema5-opencl-device-bound-pocl.jsonl").read_text().splitlines()]
    for rec in out:
        rec.update(rank=0, ranks=1)
        if rec["event"] == "kernel":
            rec["threads"] = threads
    return out


@pytest.mark.parametrize("what", ["replay", "merge"])
@pytest.mark.parametrize("threads,said", [(0, "threads is 0"), (10**9, "threads 1000000000 is above")])
def test_a_kernel_lines_compute_units_are_a_count(tmp_path, what, threads, said):
    """A kernel line's ``threads`` is refused at 0 as a region's is (it was read as 1
    compute unit), and above the largest count (replay walked every count up to it)."""
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in kernel_lines(threads)))
    r = command(what, path)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert said in r.stderr and "edited.jsonl: line " in r.stderr, r.stderr


@pytest.mark.parametrize("what", ["replay", "merge"])
def test_the_kernel_recording_as_written_reads(tmp_path, what):
    path = tmp_path / "as-is.jsonl"
    path.write_text("".join(json.dumps(rec) + "\n" for rec in kernel_lines(2)))
    r = command(what, path)
    assert r.returncode == 0, r.stderr
