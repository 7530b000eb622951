"""The prediction family (corecast.model.scaling): every model's answer is a ScalingPrediction
with counts, a speedup at each, a band or None, a named count among the counts (each
name with one meaning: ``fastest``, ``preferred``) and a basis; the runtime's members import without numpy."""
from __future__ import annotations

import subprocess
import sys

import pytest

from corecast import CurvePrediction, ScalingPrediction, predict
from corecast.model.machine.numa import load
from corecast.model.numa import NumaPrediction, Rates, predict_nodes
from corecast.model.runtime.bound import TeamPrediction, region_bound
from corecast.model.runtime.contention import region_contention
from corecast.model.runtime.numa import NumaRegionPrediction, NumaState, predict_region_nodes
from corecast.model.runtime.teamcurve import ContentionPrediction
from corecast.tools.ranks import RankPrediction

REGION = {"name": "main._omp_fn.0", "object": "prog", "runtime": "openmp", "threads": 4,
          "nested": False, "calls": 10, "wall_s": 1.0, "busy_s": 4.0, "serial_s": 0.5,
          "cpu_s": 0.0, "stalls_s": {"imbalance": 0.2}, "loop_calls": 0, "hold_sampled_s": 0.0,
          "hold_samples": 0, "hist": []}


def members() -> list[ScalingPrediction]:
    curve = predict([1, 2, 4, 8], [8.0, 4.3, 2.5, 1.6], metric="time", upto=16)
    numa = predict_nodes(load("opteron6380"), Rates([1e-3] * 8, [1.2e-3] * 8, [7e-3] * 8))
    nodes = predict_region_nodes(NumaState(path="opteron6380"), REGION, None, None,
                                 lambda t: region_bound(REGION, t))
    ranks = RankPrediction([], "one-run model", [1, 2, 4], [1.0, 1.8, 3.1], [3.0, 1.7, 0.97], 4, [])
    return [curve, region_bound(REGION, 16), region_contention(REGION, 16, 16), numa, nodes, ranks]


def test_each_model_answers_with_a_member_of_the_family():
    kinds = [CurvePrediction, TeamPrediction, ContentionPrediction, NumaPrediction,
             NumaRegionPrediction, RankPrediction]
    for pred, kind in zip(members(), kinds):
        assert isinstance(pred, kind) and isinstance(pred, ScalingPrediction)
        counts = [int(n) for n in pred.counts]
        assert len(counts) == len(pred.speedup) > 1 and counts == sorted(counts)
        named = [getattr(pred, name) for name in ("fastest", "preferred") if hasattr(pred, name)]
        assert named and all(n is None or n in counts for n in named), kind.__name__
        assert isinstance(pred.basis, str) and pred.basis
        assert isinstance(pred.count_unit, str)
        band = pred.speedup_band()
        if band is not None:
            low, high = band
            for lo, s, hi in zip(low, pred.speedup, high):
                assert lo <= s * (1 + 1e-9) and s <= hi * (1 + 1e-9), kind.__name__


def test_curve_band_in_speedups_matches_the_value_band():
    for metric, values in (("time", [8.0, 4.3, 2.5, 1.6]), ("throughput", [1.0, 1.9, 3.2, 5.0])):
        pred = predict([1, 2, 4, 8], values, metric=metric, upto=16)
        low, high = pred.speedup_band()
        base = pred.values[0] if metric == "throughput" else 1 / pred.values[0]
        best = (1 / pred.low) if metric == "time" else pred.high
        assert high == pytest.approx(best / base, rel=1e-9)


def test_runtime_members_import_without_numpy():
    code = ("import sys; import corecast.model.runtime.bound, corecast.model.runtime.numa, "
            "corecast.model.runtime.teamcurve, corecast.model.scaling; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_runtime_names_its_best_count_fastest():
    """The runtime's members name the fewest threads within 1% of the best speedup
    ``fastest``, as predict's JSON and tables do; ``preferred`` is predict's other count
    (each thread added pays) and would read as that."""
    for pred in (region_bound(REGION, 16), region_contention(REGION, 16, 16)):
        assert not hasattr(pred, "preferred")
        best = max(pred.speedup)
        i = pred.threads.index(pred.fastest)
        assert pred.speedup[i] >= 0.99 * best and all(s < 0.99 * best for s in pred.speedup[:i])
