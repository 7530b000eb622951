"""Issue 20 (numbers): units of any size, fits that miss the data, thousands of counts."""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import corecast
from corecast.cli import main
from corecast.model.curve.entities import InputError, Measurements
from corecast.model.curve.methods.laws import usl
from corecast.model.curve.prediction import MAX_FIT_POINTS, PREFERRED_SLACK

from cli_checks import assert_one_line_error

N = np.array([1, 2, 3, 4, 6, 8, 12, 16], float)
# Time with a little fixed noise so that the models differ (on exact USL data they tie,
# and the reason names whichever rounding favours), in units of its (lower) median: a
# curve in an extreme unit is divided by that median, so it becomes this one.
_RAW = 1.0 / usl(N, [1.0, 0.04, 0.002]) * np.array([1.0, 1.02, 0.98, 1.01, 0.99, 1.02, 0.985, 1.0])
TIME = _RAW / np.sort(_RAW)[(N.size - 1) // 2]


def usl_time_curve(count: int, minimum: int, seed: int, noise: float = 0.02):
    """Counts 1..count, USL-shaped time with its noise-free minimum at ``minimum``."""
    n = np.arange(1.0, count + 1.0)
    t = (1.0 + 0.05 * (n - 1.0) + 0.95 / minimum**2 * n * (n - 1.0)) / n
    return n, t * np.exp(np.random.default_rng(seed).normal(0.0, noise, n.size))


def write_csv(path, counts, values, header="threads,time") -> str:
    path.write_text(header + "\n" + "".join(f"{int(n)},{float(v)!r}\n" for n, v in zip(counts, values)))
    return str(path)


# -- units --------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e-308, 1e-300, 3.7e-250, 1e-150, 1e-11, 1e11, 1e150, 1e300])
@pytest.mark.parametrize("metric", ["time", "throughput"])
def test_prediction_is_the_same_in_any_unit(scale, metric):
    rtol = 1e-6  # the input differs in its last bits; the optimisers may amplify that a little
    values = TIME if metric == "time" else 1.0 / TIME
    values = values / np.sort(values)[(N.size - 1) // 2]  # what a far-off unit is divided into
    ref = corecast.predict(N, values, metric=metric)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning may escape
        p = corecast.predict(N, values * scale, metric=metric)
    np.testing.assert_allclose(p.values / scale, ref.values, rtol=rtol)
    np.testing.assert_allclose(p.low / scale, ref.low, rtol=rtol)
    np.testing.assert_allclose(p.high / scale, ref.high, rtol=rtol)
    np.testing.assert_allclose(p.speedup, ref.speedup, rtol=rtol)
    assert (p.preferred, p.knee, p.candidate) == (ref.preferred, ref.knee, ref.candidate)
    assert p.warnings == ref.warnings
    assert p.value_scale != 1.0 and ref.value_scale == 1.0
    json.dumps(p.to_dict(), allow_nan=False)


def test_everyday_units_are_not_rescaled():
    for scale in (1e-9, 1e-3, 1.0, 1e7, 1e9):
        assert corecast.predict(N, TIME * scale, metric="time").value_scale == 1.0


def test_estima_stall_extras_come_back_in_the_users_unit():
    n = np.arange(1.0, 11.0)
    memory, lock = 60.0 + n, 0.8 * (n - 1.0) ** 2
    t = (40.0 + memory + lock) / n
    ref = corecast.predict(n, t, metric="time", method="estima", stalls={"memory": memory, "lock": lock})
    s = 1e-300  # a multiple of the scale step: the same fit
    p = corecast.predict(n, t * s, metric="time", method="estima",
                         stalls={"memory": memory * s, "lock": lock * s})
    np.testing.assert_allclose(p.values / s, ref.values, rtol=1e-6)
    for k in ("memory", "lock"):
        np.testing.assert_allclose(p.extras["categories"][k]["values"] / s,
                                   ref.extras["categories"][k]["values"], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(p.extras["stalls_per_core"] / s, ref.extras["stalls_per_core"], rtol=1e-6)
    np.testing.assert_allclose(p.extras["factor"], ref.extras["factor"], rtol=1e-6)


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    """The real command in a fresh interpreter, so warnings reach stderr as a user sees them."""
    return subprocess.run([sys.executable, "-m", "corecast", *argv], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("scale", [1e-308, 1e300])
def test_cli_tiny_and_huge_units_print_no_warnings(tmp_path, scale):
    ref = json.loads(run_cli("predict", "--json", write_csv(tmp_path / "one.csv", N, TIME)).stdout)
    out = run_cli("predict", "--json", write_csv(tmp_path / "scaled.csv", N, TIME * scale))
    assert out.returncode == 0 and out.stderr == ""
    got = json.loads(out.stdout)
    assert got["preferred_threads"] == ref["preferred_threads"]
    np.testing.assert_allclose([r["value"] / scale for r in got["predictions"]],
                               [r["value"] for r in ref["predictions"]], rtol=1e-6)
    table = run_cli("predict", str(tmp_path / "scaled.csv"))
    assert table.returncode == 0 and table.stderr == "" and "preferred count" in table.stdout


@pytest.mark.parametrize("cell", ["inf", "-1", "nan", "0", "1e400"])
def test_cli_value_that_is_not_finite_and_positive_is_one_line_error(tmp_path, capsys, cell):
    path = tmp_path / "bad.csv"
    path.write_text(f"threads,time\n1,1.0\n2,{cell}\n3,0.4\n")
    assert_one_line_error(capsys, ["predict", str(path)])


@pytest.mark.parametrize("values, match", [
    ([1.0, np.inf, 0.4], "finite"),
    ([1.0, -0.5, 0.4], "not positive"),
    ([1e-60, 1.0, 1e60], "orders of magnitude"),
])
def test_api_bad_values_raise_input_error(values, match):
    with pytest.raises(InputError, match=match):
        corecast.predict([1, 2, 3], values, metric="time")


def test_cli_values_too_far_apart_for_one_unit(tmp_path, capsys):
    path = write_csv(tmp_path / "wide.csv", [1, 2, 3], [1e-60, 1.0, 1e60])
    assert "orders of magnitude" in assert_one_line_error(capsys, ["predict", path])


# -- fits that miss the measurements --------------------------------------------------

DROP_N = np.array([1, 2, 3, 4, 5, 6, 7, 8], float)
DROP_T = np.array([10.0, 5.0, 3.4, 2.6, 2.2, 9.0, 12.0, 15.0])  # sharp slowdown past 5


def test_fit_that_misses_a_point_is_reported_in_table_and_json(tmp_path, capsys):
    path = write_csv(tmp_path / "drop.csv", DROP_N, DROP_T)
    assert main(["predict", "--method", "amdahl", path]) == 0
    table = capsys.readouterr().out
    assert any(line.startswith("warning: the fit misses") for line in table.splitlines())
    assert main(["predict", "--method", "amdahl", "--json", path]) == 0
    d = json.loads(capsys.readouterr().out)
    assert any("misses" in w and "1.5x" in w for w in d["warnings"])


def test_clean_curve_has_no_fit_miss_warning():
    for method in ("auto", "usl", "amdahl"):
        p = corecast.predict(N, TIME, metric="time", method=method)
        assert not any("misses" in w for w in p.warnings), (method, p.warnings)


# -- many counts ------------------------------------------------------------------------


def test_binning_keeps_small_curves_and_bounds_large_ones():
    small = Measurements.from_samples(np.arange(1.0, MAX_FIT_POINTS + 1), np.ones(MAX_FIT_POINTS), "time")
    assert small.binned(MAX_FIT_POINTS) is small
    n = np.repeat(np.arange(1.0, 2001.0), 2)
    big = Measurements.from_samples(n, 1.0 + 0.01 * np.sin(n), "time").binned(MAX_FIT_POINTS)
    assert 0.8 * MAX_FIT_POINTS <= len(big) <= MAX_FIT_POINTS
    assert list(big.counts[:8]) == [1, 2, 3, 4, 5, 6, 7, 8]  # sparse small counts stay points
    assert set(big.counts) <= set(n) and np.all(np.diff(big.counts) > 0)
    assert big.repetitions.sum() == n.size


def test_binning_is_per_input_size():
    n = np.tile(np.arange(1.0, 201.0), 2)
    size = np.repeat([10.0, 20.0], 200)
    data = Measurements.from_samples(n, n * size, "time", sizes={"n": size}).binned(MAX_FIT_POINTS)
    for s in (10.0, 20.0):
        part = data.sizes["n"] == s
        assert np.count_nonzero(part) <= MAX_FIT_POINTS
        np.testing.assert_allclose(data.values[part], data.counts[part] * s, rtol=0.05)


@pytest.mark.parametrize("seed", [7, 11])
def test_preferred_is_within_3_percent_of_the_best_measured_of_2000(seed):
    n, t = usl_time_curve(2000, 195, seed)
    p = corecast.predict(n, t, metric="time")
    assert p.preferred <= p.fastest <= 2000
    assert t[p.fastest - 1] <= (1 + PREFERRED_SLACK) * t.min()


def test_models_choice_stands_when_measurements_agree():
    p = corecast.predict(N, TIME, metric="time", method="usl", upto=64)
    # USL's optimum lies beyond the measured range, where the band's low end does not beat
    # the measured best: the fastest count named stays at the largest measured one.
    assert int(p.counts[np.argmin(p.values)]) in (21, 22) and p.fastest == 16
    inside = corecast.predict(np.arange(1.0, 41.0), 1.0 / usl(np.arange(1.0, 41.0), [1.0, 0.04, 0.002]),
                              metric="time", method="usl")
    assert inside.fastest in (21, 22) and not any("best measured" in w for w in inside.warnings)
