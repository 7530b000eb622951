"""benchmarks/corpus16/take_in.py on synthetic packs: a new suite's pack goes into data/
whole (files copied, calls numbered after data's, runs appended with those numbers), a
recording pass with --samples-only replaces recordings only, and every problem is one line
with nothing written."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from benchmark_module import load_benchmark


def load():
    return load_benchmark("corpus16/take_in")


def write_jsonl(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    (d / "samples").mkdir(parents=True)
    write_jsonl(d / "calls.jsonl", [{"call": 1}, {"call": 2}])
    write_jsonl(d / "runs.jsonl", [{"kind": "time", "name": "old", "threads": 1, "rc": 0, "call": 2}])
    (d / "old.csv").write_text("threads,time\n1,1\n")
    (d / "samples" / "old-2.jsonl").write_text("old recording\n")
    return d


def pack(tmp_path: Path, name: str, programs: dict, calls=(1,), extra_runs=(), t1=2.0, csv=True,
         commit: str | None = None) -> Path:
    """programs: NAME -> (timed reps per count, recorded counts)."""
    src = tmp_path / f"{name}-src"
    (src / "samples").mkdir(parents=True)
    runs = list(extra_runs)
    for prog, (reps, recorded) in programs.items():
        for rep in range(reps):
            runs += [{"kind": "time", "name": prog, "suite": prog.split("-")[0], "threads": n, "rep": rep,
                      "time_s": t1 / n, "rc": 0, "call": calls[-1]} for n in (1, 2, 4, 8, 16)]
        for n in recorded:
            runs.append({"kind": "sample", "name": prog, "suite": prog.split("-")[0], "threads": n, "rep": 0,
                         "time_s": 1.0, "rc": 0, "call": calls[-1]})
            (src / "samples" / f"{prog}-{n}.jsonl").write_text(f"{prog} at {n}\n")
        if csv:
            (src / f"{prog}.csv").write_text(f"# suite: new\nthreads,time\n1,{t1}\n")
    write_jsonl(src / "runs.jsonl", runs)
    write_jsonl(src / "calls.jsonl", [{"call": c, "programs": sorted(programs)} for c in calls])
    if commit is not None:
        (src / "corecast-commit.txt").write_text(commit)
    out = tmp_path / f"{name}.tgz"
    with tarfile.open(out, "w:gz") as tar:
        tar.add(src, arcname=".")
    return out


def test_a_new_suite_goes_in_whole(tmp_path, capsys):
    bench, data = load(), data_dir(tmp_path)
    p = pack(tmp_path, "kt", {"a": (3, (2, 4, 16)), "b": (3, (2, 4, 16))}, t1=9.0)
    assert bench.main([str(p), "--data", str(data), "--check"]) == 0
    assert not (data / "a.csv").exists()
    assert bench.main([str(p), "--data", str(data), "--note", "session 35"]) == 0
    out = capsys.readouterr().out
    assert "a: T(1) 9 s, outside 0.5-5.0 s: resize it before anything is replayed" in out
    assert "kt.tgz: 2 programs, 8 files into" in out and "calls 3, 36 runs" in out
    assert (data / "a.csv").read_text().startswith("# suite: new") and (data / "samples" / "b-16.jsonl").exists()
    calls = [json.loads(x) for x in (data / "calls.jsonl").read_text().splitlines()]
    assert calls[-1] == {"call": 3, "programs": ["a", "b"], "note": "session 35"}
    runs = [json.loads(x) for x in (data / "runs.jsonl").read_text().splitlines()]
    assert len(runs) == 37 and {r["call"] for r in runs[1:]} == {3}
    # Taking the same pack in again would overwrite: refused, nothing written.
    assert bench.main([str(p), "--data", str(data)]) == 1
    assert "a.csv: data/ holds it already" in capsys.readouterr().err
    assert len((data / "runs.jsonl").read_text().splitlines()) == 37


def test_the_packs_corecast_commit_is_named_on_its_calls(tmp_path, capsys):
    bench, data = load(), data_dir(tmp_path)
    (data / "corecast-commit.txt").write_text("older\n")
    p = pack(tmp_path, "kt", {"a": (3, (2, 4, 16))}, commit="4d3f736\n")
    assert bench.main([str(p), "--data", str(data)]) == 0
    calls = [json.loads(x) for x in (data / "calls.jsonl").read_text().splitlines()]
    assert calls[-1] == {"call": 3, "programs": ["a"], "corecast": "4d3f736"}
    assert (data / "corecast-commit.txt").read_text() == "4d3f736\n"


def test_missing_runs_or_recordings_are_named_and_nothing_is_written(tmp_path, capsys):
    bench, data = load(), data_dir(tmp_path)
    before = {f: f.read_bytes() for f in data.rglob("*") if f.is_file()}
    p = pack(tmp_path, "cut", {"a": (2, (2, 4)), "b": (3, (2, 4, 16))})
    assert bench.main([str(p), "--data", str(data)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0  # one line
    assert "a: no recording with exit 0 at 16 threads" in err and "a: 2 timed runs with exit 0 at 1 threads, 3 needed" in err
    assert {f: f.read_bytes() for f in data.rglob("*") if f.is_file()} == before


def test_a_program_the_device_could_not_run_is_kept_as_its_failed_runs(tmp_path, capsys):
    bench, data = load(), data_dir(tmp_path)
    crash = {"kind": "time", "name": "sp-barnes", "suite": "sp", "threads": 1, "rep": 0, "time_s": 0.1,
             "rc": -6, "call": 1}
    p = pack(tmp_path, "sp", {"sp-fft": (3, (2, 4, 16))}, extra_runs=[crash])
    # Without --failed the pack is refused for the missing program.
    assert bench.main([str(p), "--data", str(data), "--check"]) == 1
    assert "sp-barnes: no recording with exit 0 at 2 threads" in capsys.readouterr().err
    # --failed must name a program that failed, not one that ran or one the pack lacks.
    for wrong, says in (("sp-fft", "sp-fft: --failed names it, but the pack has its sp-fft.csv"),
                        ("sp-nope", "sp-nope: --failed names it, but the pack's calls did not run it")):
        assert bench.main([str(p), "--data", str(data), "--failed", f"sp-barnes,{wrong}"]) == 1
        assert says in capsys.readouterr().err
    assert bench.main([str(p), "--data", str(data), "--failed", "sp-barnes"]) == 0
    assert "sp.tgz: 1 programs (1 failed: its runs only), 4 files into" in capsys.readouterr().out
    runs = [json.loads(x) for x in (data / "runs.jsonl").read_text().splitlines()]
    assert [r for r in runs if r["name"] == "sp-barnes"] == [{**crash, "call": 3}]
    assert not list(data.glob("sp-barnes*")) and not list((data / "samples").glob("sp-barnes*"))


def test_a_recording_pass_replaces_recordings_only(tmp_path, capsys):
    """device32/call3.sh's folders start from data's timed runs (other calls, or the same
    number as the pass's own call): only the pass's recordings are taken."""
    bench, data = load(), data_dir(tmp_path)
    copied = [{"kind": "time", "name": "old", "threads": n, "rep": 0, "time_s": 1.0, "rc": 0, "call": 1}
              for n in (1, 2, 4, 8, 16)]
    p = pack(tmp_path, "recA", {"old": (0, (2, 4, 16))}, extra_runs=copied, csv=False)
    assert bench.main([str(p), "--data", str(data)]) == 1  # not a new suite: no curves in it
    assert bench.main([str(p), "--data", str(data), "--samples-only"]) == 0
    assert (data / "samples" / "old-2.jsonl").read_text() == "old at 2\n"
    assert (data / "old.csv").read_text() == "threads,time\n1,1\n"
    runs = [json.loads(x) for x in (data / "runs.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["call"]) for r in runs[1:]] == [("sample", 3)] * 3
    assert "1 programs, 3 files" in capsys.readouterr().out


def test_suites_take_those_programs_and_their_calls_only(tmp_path, capsys):
    """A pass over several suites, one call each: --suites takes one suite's recordings and
    numbers only the call that made them."""
    bench, data = load(), data_dir(tmp_path)
    p = pack(tmp_path, "rec", {"x-a": (0, (2,)), "y-b": (0, (2,))}, calls=(1, 2), csv=False)
    assert bench.main([str(p), "--data", str(data), "--samples-only", "--suites", "x", "--recorded", "2"]) == 0
    assert (data / "samples" / "x-a-2.jsonl").exists() and not (data / "samples" / "y-b-2.jsonl").exists()
    assert "1 programs, 1 files into" in (out := capsys.readouterr().out) and "calls 3, 1 runs" in out
    assert bench.main([str(p), "--data", str(data), "--samples-only", "--suites", "z"]) == 1
    assert "no run of its own calls [1, 2] in suites z" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["not a tarball", None])
def test_bad_input_is_one_line(tmp_path, capsys, bad):
    bench, data = load(), data_dir(tmp_path)
    p = tmp_path / "bad.tgz"
    if bad is None:
        with tarfile.open(p, "w:gz") as tar:
            (tmp_path / "x").write_text("x")
            tar.add(tmp_path / "x", arcname="../escape")
    else:
        p.write_text(bad)
    assert bench.main([str(p), "--data", str(data)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("take_in.py: ") and "Traceback" not in err
    assert bench.main([str(p), "--data", str(tmp_path / "nowhere")]) == 1
    assert bench.main([str(p), "--data", str(data), "--counts", "1,x"]) == 2
