"""benchmarks/opencl_cu.py with a public suite's kernels (issue #42): the checked loader,
the export from a git dir, the host set-ups, the child and the rescore of saved lines.
The fetched suite is not needed: tests that want it say why they skip."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = "__kernel void scale(__global float *a, const float s) { a[get_global_id(0)] *= s; }\n"


def _bench():
    path = ROOT / "benchmarks" / "opencl_cu.py"
    spec = importlib.util.spec_from_file_location("opencl_cu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tiny(suite, tmp_path: Path, text: str = TINY):
    """A one-kernel suite written here: (its SuiteKernel, the tree it is in)."""
    k = suite.SuiteKernel("t.scale", "cl/tiny.cl", "scale", hashlib.sha256(text.encode()).hexdigest(),
                          repo="test/tiny", commit="0" * 40)
    k.file(tmp_path).parent.mkdir(parents=True)
    k.file(tmp_path).write_text(text)
    return k, tmp_path


def test_the_loader_reads_a_pinned_file_and_names_a_changed_or_missing_one_in_one_line(tmp_path):
    suite = _bench().opencl_suite
    k, tree = _tiny(suite, tmp_path)
    assert suite.read_source(k, tree) == TINY
    k.file(tree).write_text(TINY.replace("*=", "+="))
    with pytest.raises(suite.SuiteError) as exc:
        suite.read_source(k, tree)
    assert "is not test/tiny@000000000000's file (sha256" in str(exc.value) and "\n" not in str(exc.value)
    k.file(tree).unlink()
    with pytest.raises(suite.SuiteError) as exc:
        suite.read_source(k, tree)
    assert "t.scale: cannot read" in str(exc.value) and "opencl_suite.py export" in str(exc.value)


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_the_benchmark_ends_in_one_line_on_a_missing_or_changed_suite_file(tmp_path, capsys, damage):
    bench = _bench()
    gemm = next(k for k in bench.opencl_suite.KERNELS if k.name == "pb.gemm")
    if damage == "changed":
        gemm.file(tmp_path).parent.mkdir(parents=True)
        gemm.file(tmp_path).write_text("__kernel void gemm() {}\n")
    assert bench.main(["--suite", str(tmp_path), "--kernels", "smooth,pb.gemm", "--max-cu", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("opencl_cu: error: pb.gemm: ")
    assert ("cannot read" if damage == "missing" else "sha256") in err[0]


def test_a_suite_kernel_without_suite_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        _bench().main(["--kernels", "pb.atax"])
    assert exc.value.code == 2
    assert "kernel pb.atax is the public suite's: name its exported tree with --suite DIR" in capsys.readouterr().err


def test_export_writes_the_pinned_file_from_a_git_dir_and_refuses_another(tmp_path):
    suite = _bench().opencl_suite
    work = tmp_path / "mirror" / "test+tiny" / "repo"
    (work / "cl").mkdir(parents=True)
    (work / "cl" / "tiny.cl").write_text(TINY)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "tiny"], check=True)
    commit = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    k = suite.SuiteKernel("t.scale", "cl/tiny.cl", "scale", hashlib.sha256(TINY.encode()).hexdigest(),
                          repo="test/tiny", commit=commit)
    (written,) = suite.export(tmp_path / "mirror", tmp_path / "tree", (k,))
    assert written == k.file(tmp_path / "tree") and suite.read_source(k, tmp_path / "tree") == TINY
    other = suite.SuiteKernel("t.scale", "cl/tiny.cl", "scale", "0" * 64, repo="test/tiny", commit=commit)
    with pytest.raises(suite.SuiteError, match="is not the pinned one"):
        suite.export(tmp_path / "mirror", tmp_path / "tree2", (other,))
    assert not other.file(tmp_path / "tree2").exists()
    with pytest.raises(suite.SuiteError, match="fetch github:test/none first"):
        suite.export(tmp_path / "mirror", tmp_path / "tree3", (suite.SuiteKernel("x", "a", "b", "c", repo="test/none"),))


def test_every_suite_kernel_has_a_host_set_up_that_fits_its_ndrange():
    np = pytest.importorskip("numpy")
    bench = _bench()
    for k in bench.opencl_suite.KERNELS:
        args, glob, local = bench._suite_setup(k.name, lambda n, fill=True: ("buf", n), np)
        assert args and len(glob) == len(local) and all(g % lo == 0 for g, lo in zip(glob, local)), k.name
    with pytest.raises(KeyError):
        bench._suite_setup("pb.none", None, np)


def test_recorded_kernel_lines_are_named_by_the_suite_not_by_their_function():
    bench = _bench()
    lines = [{"event": "kernel", "name": "gemm"}, {"event": "kernel", "name": "smooth"},
             {"event": "kernel", "name": "atax_kernel1"}, {"event": "process", "name": "gemm"}]
    got = bench.kernel_lines(["smooth", "pb.gemm"], lines)
    assert got == {"smooth": lines[1], "pb.gemm": lines[0]}  # atax not asked for, the process line no kernel


def test_a_suite_kernel_written_by_the_test_runs_in_the_child(opencl, tmp_path, capsys, monkeypatch):
    bench = _bench()
    k, tree = _tiny(bench.opencl_suite, tmp_path)
    monkeypatch.setattr(bench.opencl_suite, "KERNELS", (k,))
    monkeypatch.setattr(bench, "_suite_setup", lambda name, buf, np: ((buf(256), np.float32(1.0)), (256,), (64,)))
    assert bench.child(["t.scale"], 0.001, str(tree)) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(got["per_launch_s"]) == {"t.scale"} and got["per_launch_s"]["t.scale"] > 0


def test_the_fetched_suite_builds_and_runs_in_the_child(opencl, capsys):
    """Every pinned kernel against its host set-up (arguments, NDRange) on the device."""
    bench = _bench()
    tree = bench.opencl_suite.DEFAULT_DEST
    try:
        for k in bench.opencl_suite.KERNELS:
            bench.opencl_suite.read_source(k, tree)
    except bench.opencl_suite.SuiteError as exc:
        pytest.skip(f"the suite is not exported here ({exc})")
    names = [k.name for k in bench.opencl_suite.KERNELS]
    assert bench.child(names, 0.001, str(tree)) == 0
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert list(got["per_launch_s"]) == names and all(t > 0 for t in got["per_launch_s"].values())


def test_rescore_predicts_saved_suite_kernel_lines_again(tmp_path, capsys):
    """A saved run whose suite kernels carry their functions' names: scored again, with the
    examples-and-suite figures apart from the in-house kernels'."""
    bench = _bench()
    saved = json.loads((ROOT / "benchmarks" / "opencl16" / "opencl_cu.json").read_text())
    as_suite = {"sgemm": ("pb.gemm", "gemm"), "stencil": ("pb.jacobi2d", "runJacobi2D_kernel1")}
    for old, (new, function) in as_suite.items():
        saved["measured"][new] = saved["measured"][old]
        for per in saved["lines"].values():
            per[new] = dict(per[old], name=function)
    path, out = tmp_path / "saved.json", tmp_path / "again.json"
    path.write_text(json.dumps(saved))
    assert bench.main(["--rescore", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    rows = [line.split()[0] for line in text.splitlines()[2:] if " | " in line and not line.startswith("run@")]
    assert rows == ["smooth", "triangle", "triad", "sgemm", "reduce", "stencil", "conv", "nbody",
                    "pb.gemm", "pb.jacobi2d"]
    figures = json.loads(out.read_text())["figures"]
    for r in ("2", "4"):
        assert figures[r]["kernels"] == 10 and figures[r]["examples+suite"]["kernels"] == 4
        assert f"run@{r} (examples+suite): 4 kernels" in text
    # the copied lines are predicted as their originals: same figures per kernel
    again = json.loads(out.read_text())["lines"]["4"]
    assert again["pb.gemm"]["predicted"] == again["sgemm"]["predicted"]


def test_the_set_up_bytes_are_what_the_hook_records(opencl, tmp_path):
    """A saved line without ``sample.buffer_bytes`` gets its kernel's from the set-up here
    (``setup_bytes``): the same bytes the hook records for the child's launches."""
    from .helpers import clean_env, read_lines

    bench, out = _bench(), tmp_path / "k.jsonl"
    names = ["smooth", "triangle", "sgemm", "reduce", "conv", "nbody"]
    r = subprocess.run([sys.executable, "-m", "corecast.opencl", str(ROOT / "benchmarks" / "opencl_cu.py"),
                        "--child", ",".join(names), "--seconds", "0.001"],
                       env=clean_env(CORECAST_OUTPUT=str(out), CORECAST_QUIET="1"), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    got = {d["name"]: d["sample"]["buffer_bytes"] for d in read_lines(out) if d["event"] == "kernel"}
    assert got == {n: bench.setup_bytes(n) for n in names}


def _calibration(tmp_path: Path, llc: int) -> Path:
    doc = json.loads((ROOT / "benchmarks" / "device16" / "calibration.json").read_text())
    doc["machine"]["llc_bytes"] = llc
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(doc))
    return path


def test_rescore_with_the_machine_file_caps_kernels_whose_buffers_pass_the_llc(tmp_path, capsys):
    """Session 22's saved run (lines without buffer_bytes): with the device machine's
    calibration as it is (LLC 300 MiB) no kernel's buffers pass the LLC and nothing changes;
    with an LLC of 100 MiB the triad's 192 MiB are capped (the stencil's 128 MiB pass it too,
    but move in 1.6 ms at 82 GB/s: no bound at 16 on a 40 ms launch)."""
    bench, saved = _bench(), str(ROOT / "benchmarks" / "opencl16" / "opencl_cu.json")
    runs = {}
    for label, machine in (("none", None), ("300", ROOT / "benchmarks" / "device16" / "calibration.json"),
                           ("100", _calibration(tmp_path, 100 << 20))):
        out = tmp_path / f"{label}.json"
        machine_args = ["--machine", str(machine)] if machine else []
        assert bench.main(["--rescore", saved, "--json", str(out)] + machine_args) == 0
        runs[label] = json.loads(out.read_text())["lines"]["4"]
    capsys.readouterr()
    for name in runs["none"]:
        assert runs["300"][name]["predicted"] == runs["none"][name]["predicted"], name
    capped = {n for n in runs["none"] if runs["100"][n]["predicted"] != runs["none"][n]["predicted"]}
    assert capped == {"triad"}
    assert runs["100"]["triad"]["predicted"][-1]["speedup"] < runs["none"]["triad"]["predicted"][-1]["speedup"]
    assert "bandwidth: 201 MB per launch, 82.0 GB/s at 16" in runs["100"]["triad"]["basis"]
    assert runs["none"]["triad"]["basis"].endswith("bandwidth unmeasured (no machine calibration)")


def test_a_bad_machine_file_is_one_line(tmp_path, capsys):
    bench, bad = _bench(), tmp_path / "bad.json"
    bad.write_text("{}")
    saved = str(ROOT / "benchmarks" / "opencl16" / "opencl_cu.json")
    for argv in (["--rescore", saved, "--machine", str(bad)], ["--max-cu", "1", "--machine", str(bad)]):
        assert bench.main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("opencl_cu: error: --machine: ") and "calibration" in err[0]
