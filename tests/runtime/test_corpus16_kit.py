"""The corpus kit (benchmarks/corpus16/measure.py, #43) end to end on two tiny programs of
this repository (tests/corpus16): builds, interleaved timings, recordings, the layout
benchmarks/scale16.py reads, and resuming.  Nothing here depends on how fast the machine
is: the budget is far above what the runs need, and no time is compared."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "benchmarks" / "corpus16" / "measure.py"
MANIFEST = ROOT / "tests" / "corpus16" / "programs.json"
NAMES = ("t-omp", "t-pth")
REPS = 3


def kit(out: Path, build: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(KIT), "--manifest", str(MANIFEST), "--build", str(build),
                           "--out", str(out), "--threads", "1,2", "--budget", "600", "--tiny", *extra],
                          capture_output=True, text=True, timeout=900)


def finished(out: Path) -> list[dict]:
    return [r for r in map(json.loads, (out / "runs.jsonl").read_text().splitlines())
            if r["kind"] in ("time", "sample")]


@pytest.fixture(scope="module")
def first_call(tmp_path_factory, gcc, lib):
    out, build = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("build")
    r = kit(out, build)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, build, r


def test_layout_is_what_scale16_reads(first_call):
    out, _, r = first_call
    assert "Traceback" not in r.stdout + r.stderr
    for name in NAMES:
        lines = [ln for ln in (out / f"{name}.csv").read_text().splitlines() if not ln.startswith("#")]
        assert lines[0] == "threads,time"
        counts = sorted(int(ln.split(",")[0]) for ln in lines[1:])
        assert counts == [1] * REPS + [2] * REPS
        assert all(float(ln.split(",")[1]) > 0 for ln in lines[1:])
        # 2 is the only recording count in --threads 1,2 (4 and 16 are not measured)
        rec = out / "samples" / f"{name}-2.jsonl"
        events = [json.loads(ln)["event"] for ln in rec.read_text().splitlines()]
        assert "process" in events
        assert not (out / "samples" / f"{name}-4.jsonl").exists()
    for meta in ("lscpu.txt", "compiler.txt", "corecast-commit.txt"):
        assert (out / meta).read_text().strip()
    from corecast.io.readers.measurements import read_measurements  # corecast's own reader takes the CSV
    m = read_measurements(str(out / "t-omp.csv"), "time")
    assert list(m.counts) == [1, 2]


def test_timings_are_interleaved(first_call):
    out, _, _ = first_call
    runs = [(r["name"], r["threads"], r["rep"]) for r in finished(out) if r["kind"] == "time"]
    # repetition by repetition: every program and count once before the next repetition
    assert [rep for _, _, rep in runs] == sorted(rep for _, _, rep in runs)
    assert runs[:4] == [("t-omp", 1, 0), ("t-omp", 2, 0), ("t-pth", 1, 0), ("t-pth", 2, 0)]
    assert runs[4:6] == [("t-omp", 2, 1), ("t-omp", 1, 1)]  # the counts' order alternates


def test_second_call_resumes(first_call):
    out, build, _ = first_call
    before = finished(out)
    r = kit(out, build)
    assert r.returncode == 0, r.stderr
    assert finished(out) == before  # nothing redone
    assert "0 run(s)" in r.stdout
    # a call cut short: the log lost its last 5 runs, and only those run again
    log = out / "runs.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:-5]) + "\n")
    r = kit(out, build)
    assert r.returncode == 0, r.stderr
    redone = finished(out)
    assert len(redone) == len(before)
    assert {(x["kind"], x["name"], x["threads"], x["rep"]) for x in redone} == \
           {(x["kind"], x["name"], x["threads"], x["rep"]) for x in before}
    assert "5 run(s)" in r.stdout
    assert len((out / "calls.jsonl").read_text().splitlines()) == 3


def test_bad_input_is_one_line(tmp_path):
    for extra in (["--threads", "one,2"], ["--only", "nosuch"], ["--suites", "test-omp,nosuch"],
                  ["--manifest", str(tmp_path / "none.json")]):
        r = subprocess.run([sys.executable, str(KIT), "--manifest", str(MANIFEST), "--out", str(tmp_path / "o"),
                            *extra], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_rerecord_redoes_only_other_builds_recordings(first_call):
    out, build, _ = first_call
    log = out / "runs.jsonl"
    before = log.read_text()
    times = [r for r in finished(out) if r["kind"] == "time"]
    # the same build: nothing to redo
    r = kit(out, build, "--record-only", "--rerecord")
    assert r.returncode == 0, r.stderr
    assert "0 run(s)" in r.stdout
    # recordings marked as another build's are redone, and no timed run is
    log.write_text(before.replace('"lib": "', '"lib": "other'))
    r = kit(out, build, "--record-only", "--rerecord")
    assert r.returncode == 0, r.stderr
    assert f"{len(NAMES)} run(s)" in r.stdout  # one recording (at 2) per program
    assert [r for r in finished(out) if r["kind"] == "time"] == times


def test_samples_records_at_one_thread_only_what_is_missing(first_call):
    # the one-thread recordings scale16.py --history 1 reads, added to a measured corpus
    out, build, _ = first_call
    times = [r for r in finished(out) if r["kind"] == "time"]
    r = kit(out, build, "--record-only", "--samples", "1,2")
    assert r.returncode == 0, r.stderr
    assert f"{len(NAMES)} run(s)" in r.stdout  # the ones at 2 exist already
    for name in NAMES:
        events = [json.loads(ln)["event"] for ln in (out / "samples" / f"{name}-1.jsonl").read_text().splitlines()]
        assert "process" in events
    assert [r for r in finished(out) if r["kind"] == "time"] == times
    bad = subprocess.run([sys.executable, str(KIT), "--manifest", str(MANIFEST), "--out", str(out),
                          "--samples", "two"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "corpus16: error: --samples 'two': not a comma-separated list of whole numbers"], bad.stderr


def test_suites_selects_programs(tmp_path, gcc):
    # a device call measures only the fresh held-out suites this way (README: the next call)
    for flag in ("--suites", "--suite"):
        out, build = tmp_path / flag / "out", tmp_path / flag / "build"
        r = kit(out, build, flag, "test-pthreads", "--build-only")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "1 program(s) built" in r.stdout
        assert sorted(p.name for p in build.iterdir()) == ["t-pth"]
        call = json.loads((out / "calls.jsonl").read_text())
        assert call["programs"] == ["t-pth"]


def test_pack_into_its_own_folder_keeps_the_trees(tmp_path):
    # packing a packed manifest again (pack .dev/corpus16 --manifest .dev/corpus16/programs.json)
    # deleted each tree before copying it onto itself
    src = tmp_path / "m" / "sources" / "x"
    src.mkdir(parents=True)
    (src / "a.c").write_text("int main(void) { return 0; }\n")
    manifest = tmp_path / "m" / "programs.json"
    manifest.write_text(json.dumps({"sources_dir": "sources", "programs": [],
                                    "sources": {"x": {"repo": "o/x", "commit": "0" * 40, "paths": ["."]}}}))
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "corpus16" / "sources.py"), "pack",
                        str(tmp_path / "m"), "--manifest", str(manifest)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (src / "a.c").read_text().startswith("int main")


def test_no_samples_times_only(tmp_path, gcc):
    out, build = tmp_path / "out", tmp_path / "build"
    r = kit(out, build, "--samples", "", "--reps", "1", "--only", "t-pth")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not list(out.glob("samples/*.jsonl"))
    assert [r["kind"] for r in finished(out)] == ["time", "time"]
