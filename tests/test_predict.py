import json

import numpy as np
import pytest

import corecast
from corecast.model.curve.entities import InputError
from corecast.model.curve.methods.laws import usl

N = np.array([1, 2, 3, 4, 6, 8], float)
X = usl(N, [100.0, 0.04, 0.002])


def test_every_count_up_to_twice_the_largest_plus_at():
    p = corecast.predict(N, X, metric="throughput", at=[40, 100])
    assert list(p.counts) == list(range(1, 17)) + [40, 100]
    assert np.all(p.low <= p.values) and np.all(p.values <= p.high)


def test_band_widens_with_extrapolation_distance():
    p = corecast.predict(N, X, metric="throughput", upto=64, method="usl")
    rel = np.log(p.high / p.low)
    assert rel[63] > rel[15] > rel[7]
    assert rel[8:].min() >= rel[:8].max() - 1e-12


def test_time_and_throughput_agree():
    a = corecast.predict(N, X, metric="throughput", upto=32)
    b = corecast.predict(N, 1 / X, metric="time", upto=32)
    np.testing.assert_allclose(a.values, 1 / b.values, rtol=1e-9)
    np.testing.assert_allclose(a.speedup, b.speedup, rtol=1e-9)
    np.testing.assert_allclose(a.low, 1 / b.high, rtol=1e-9)
    assert a.preferred == b.preferred


def test_preferred_and_knee_on_a_peaking_curve():
    p = corecast.predict(N, X, metric="throughput", upto=64, method="usl")
    # USL peak at sqrt((1 - sigma) / kappa) ~ 21.9: the fastest count; the preferred one
    # is where a thread stops adding a quarter of one, before it.
    assert p.fastest in (21, 22)
    assert p.knee <= p.fastest and p.preferred <= p.fastest
    gains = np.diff(p.values) / p.values[0]
    assert gains[p.knee - 1] < 0.1
    assert np.all(gains[: p.knee - 1] >= 0.1)


def test_speedup_relative_to_smallest_count_when_one_is_missing():
    p = corecast.predict([2, 4, 8, 16], [2, 4, 8, 16], metric="throughput", upto=16, method="amdahl")
    assert p.speedup_base == 2
    assert p.speedup[1] == pytest.approx(1.0, rel=1e-6)
    assert any("relative to count 2" in w for w in p.warnings)


def test_repetitions_use_the_median_and_widen_the_band():
    one = corecast.predict(N, X, metric="throughput", method="usl")
    reps = corecast.predict(np.repeat(N, 3), np.repeat(X, 3) * np.tile([0.8, 1.0, 1.2], N.size), metric="throughput", method="usl")
    np.testing.assert_allclose(one.values, reps.values, rtol=1e-6)
    assert np.all(reps.high / reps.low > one.high / one.low)


def test_json_contract_is_serialisable():
    d = corecast.predict(N, X, metric="throughput").to_dict()
    json.dumps(d)
    assert {"method", "metric", "predictions", "preferred_threads", "warnings"} <= set(d)
    assert set(d["predictions"][0]) >= {"threads", "value", "low", "high", "speedup"}


@pytest.mark.parametrize(
    "counts, values, match",
    [
        ([1], [1.0], "at least 2"),
        ([1, 2], [1.0, -1.0], "not positive"),
        ([0, 2], [1.0, 1.0], "below 1"),
        ([1, 2], [1.0, np.nan], "finite"),
        ([1, 2, 3], [1.0, 2.0], "length"),
    ],
)
def test_bad_input(counts, values, match):
    with pytest.raises(InputError, match=match):
        corecast.predict(counts, values, metric="throughput")


def test_method_needing_more_points_says_how_many():
    with pytest.raises(InputError, match="presca needs at least 5"):
        corecast.predict([1, 2, 3], [1, 2, 3], metric="throughput", method="presca")
    with pytest.raises(InputError, match="unknown method"):
        corecast.predict([1, 2, 3], [1, 2, 3], metric="throughput", method="nope")


def test_fit_quality_left_out_changes_no_prediction():
    # The runtime's exit asks for no fit figures (and so no leave-last-out refit): every
    # other field is the same, bit for bit.
    counts = list(range(1, 17))
    times = [0.002 + 0.040 / n + 0.0004 * n for n in counts]
    full = corecast.predict(counts, times, metric="time", upto=64)
    lean = corecast.predict(counts, times, metric="time", upto=64, with_fit_quality=False)
    assert full.fit_quality and full.fit_quality[0]["holdout"] == "leave-last-out"
    assert lean.fit_quality == []
    assert dict(full.to_dict(), fit_quality=[]) == lean.to_dict()


def test_a_fit_miss_advises_the_callers_own_way_to_try_another_method(tmp_path, capsys):
    # The model wrote "try another --method", a flag of the CLI, into the Python API's
    # warnings too (corecast.predict has method=, no --method).
    import corecast
    from corecast.cli import main

    counts, times = [1, 2, 4, 8], [1.0, 0.5, 1.0, 3.0]  # Amdahl's law cannot follow it
    (miss,) = [w for w in corecast.predict(counts, times, metric="time", method="amdahl").warnings
               if w.startswith("the fit misses")]
    assert miss.endswith("the model does not follow this curve; try another method")
    f = tmp_path / "miss.csv"
    f.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(counts, times)))
    main(["predict", str(f), "--method", "amdahl"])
    out = capsys.readouterr()
    assert "the model does not follow this curve; try another --method" in out.out + out.err


# Six counts with a lock wait: enough for every method but the size-column ones.
STALLED = ("threads,time,stall:lock\n1,10.0,0.1\n2,5.3,0.2\n4,2.9,0.4\n8,1.8,0.9\n12,1.5,1.5\n"
           "16,1.4,2.3\n")


@pytest.mark.parametrize("method", ["usl", "amdahl", "gustafson", "presca", "plateau", "trend", "damped",
                                    "estima", "regression", "auto"])
def test_a_method_that_does_not_read_stall_columns_says_so(tmp_path, capsys, method):
    """A single --method left stall:* columns unused without a word, where auto warns."""
    from corecast.cli import main

    path = tmp_path / "s.csv"
    path.write_text(STALLED)
    assert main(["predict", str(path), "--method", method]) == 0
    warned = [w for w in capsys.readouterr().out.splitlines() if w.startswith("warning: stall:* columns unused")]
    reads = method in ("estima", "regression", "auto")
    assert warned == ([] if reads else [f"warning: stall:* columns unused: method {method} does not read them "
                                         "(estima and regression do, and auto through estima)"])


# Three counts auto fits poorly: its curve walks to 1, where 2 ran 1.8x faster.
POOR = ([1, 2, 4], [10.0, 5.5, 12.0])


def test_a_preferred_count_is_never_one_the_measurements_clearly_beat(tmp_path, capsys):
    from corecast.cli import main
    from corecast.model.curve.extrapolation import extrapolate

    p = corecast.predict(*POOR, metric="time")
    assert (p.preferred, p.model_preferred, p.fastest) == (2, 1, 2)
    assert "preferred count is 2, from the measured counts: the model's 1 was measured 82% slower than 2" in p.warnings
    # The named count moved; auto's fitted curve did not (it is still the model's 8.65 at 2).
    assert p.values[list(p.counts).index(2)] == pytest.approx(8.6454, rel=1e-3)
    path = tmp_path / "poor.csv"
    path.write_text("threads,time\n" + "".join(f"{n},{t}\n" for n, t in zip(*POOR)))
    assert main(["predict", str(path)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("preferred count:")]
    assert line == ("preferred count: 2 (from the measured counts, past the model's preferred 1, which was "
                    "measured slower; measured time 5.5)")
    # A sweep names the same count.
    result = {"warnings": []}
    extrapolate(result, {n: [t] for n, t in zip(*POOR)}, POOR[0], [], {n: [{}] for n in POOR[0]}, 8)
    assert result["preferred_count"] == 2


def test_a_preferred_count_the_measurements_do_not_contradict_stands():
    # 4 measured within the slack of 2: the rule's 2 is no count the measurements beat.
    p = corecast.predict([1, 2, 4], [10.0, 5.5, 5.4], metric="time")
    assert p.model_preferred is None and not [w for w in p.warnings if w.startswith("preferred count is")]
