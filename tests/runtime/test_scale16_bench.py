"""benchmarks/scale16.py on a one-curve directory: a recording of NPB MG (class A, 4 threads,
the schema-1 file in tests/data/recordings) against its measured 16-core curve."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
from pathlib import Path

import pytest
from benchmark_module import benchmark_module

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "tests" / "data" / "recordings" / "schema1-npb-mg.A-4.jsonl"
# Medians of benchmarks/scale16_curves/npb-mg.A.csv (16-core Xeon VM, 3 repetitions).
CURVE = {1: 2.6750, 2: 1.9477, 4: 1.7812, 8: 1.5938, 16: 1.4658}


def bench():
    spec = importlib.util.spec_from_file_location("scale16", ROOT / "benchmarks" / "scale16.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("with_t1", [True, False])
def test_error_splits_into_the_sampled_speedup_and_the_gain(tmp_path, with_t1):
    (tmp_path / "samples").mkdir()
    shutil.copy(RECORDING, tmp_path / "samples" / "mg-4.jsonl")
    rows = "\n".join(f"{n},{t}" for n, t in CURVE.items() if with_t1 or n > 1)
    (tmp_path / "mg.csv").write_text(f"# metric: time\nthreads,time\n{rows}\n")
    [row] = bench().evaluate(tmp_path, [2, 4])
    assert row["curve"] == "mg" and row["sampled_at"] == 4
    signed = math.log(row["predicted_s16"] / row["measured_s16"])
    assert abs(signed) == pytest.approx(row["log_error"], abs=1e-3)
    if with_t1:  # the two parts add up to the error
        assert row["at_n0"] + row["gain"] == pytest.approx(signed, abs=2e-3)
        # and the first is the model's T(1) against the measured, less the recording's own
        # wall time against the curve's at its count (1.81445 s against 1.7812 s)
        assert row["wall"] == pytest.approx(math.log(1.81445 / CURVE[4]), abs=1e-4)
        assert row["work"] - row["wall"] == pytest.approx(row["at_n0"], abs=2e-3)
    else:  # relative to the sampled count: the gain is the error
        assert row["at_n0"] is None and row["gain"] == pytest.approx(signed, abs=2e-3)
        assert row["work"] is None
    assert row["basis"].endswith("; bandwidth unmeasured")  # no probes in that run


@pytest.mark.parametrize("suite", ["gapbs", "splash3", "ompscr", "kastors-task"])  # the last three: declared held out before they were measured
def test_held_out_suites_are_left_out_by_default(tmp_path, capsys, suite):
    """A curve of a held-out suite (bands.DEFAULT_SKIP) is replayed only when asked for with
    --skip-suites '': a plain run on corpus16's data never shows its prediction."""
    (tmp_path / "samples").mkdir()
    shutil.copy(RECORDING, tmp_path / "samples" / "mg-4.jsonl")
    rows = "\n".join(f"{n},{t}" for n, t in CURVE.items())
    (tmp_path / "mg.csv").write_text(f"# suite: {suite}\n# metric: time\nthreads,time\n{rows}\n")
    with benchmark_module("scale16") as mod:
        assert mod.main([str(tmp_path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["rows"] == []
        assert mod.main([str(tmp_path), "--json", "--suites", suite, "--skip-suites", ""]) == 0
        assert [r["curve"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["mg"]


def test_the_recorded_wall_is_the_summarys_elapsed_else_the_process_records():
    """A recording's own run time: the summary's elapsed time, the process record's wall
    time where the summary is missing, 0 where neither was written (no ratio is taken)."""
    from types import SimpleNamespace

    process = [{"name": "loop", "wall_s": 9.0}, {"name": "process", "wall_s": 1.5}]
    wall = bench().recorded_wall
    assert wall(SimpleNamespace(elapsed_s=2.0, regions=process)) == 2.0
    assert wall(SimpleNamespace(elapsed_s=0.0, regions=process)) == 1.5
    assert wall(SimpleNamespace(elapsed_s=0.0, regions=process[:1])) == 0.0


def test_the_gain_shrink_scales_the_predicted_gain_alone(tmp_path):
    # scale16.py --gain-shrink A (benchmarks/gain_shrink.py's candidate): the speedup at
    # the sampled count stays, the predicted gain to 16 is scaled by A in log space.
    (tmp_path / "samples").mkdir()
    shutil.copy(RECORDING, tmp_path / "samples" / "mg-4.jsonl")
    rows = "\n".join(f"{n},{t}" for n, t in CURVE.items())
    (tmp_path / "mg.csv").write_text(f"# metric: time\nthreads,time\n{rows}\n")
    [plain] = bench().evaluate(tmp_path, [4])
    [shrunk] = bench().evaluate(tmp_path, [4], shrink=0.5)
    assert shrunk["at_n0"] == plain["at_n0"]
    measured = math.log(CURVE[4] / CURVE[16])
    assert shrunk["gain"] + measured == pytest.approx(0.5 * (plain["gain"] + measured), abs=2e-4)
