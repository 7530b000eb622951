import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import corecast
from corecast.model.curve.entities import Measurements
from corecast.model.curve.methods import auto
from corecast.model.curve.methods.laws import amdahl, usl


def test_two_points_answer_with_wide_band_and_warning():
    p = corecast.predict([1, 2], [10.0, 19.0], metric="throughput")
    assert p.method == "auto"
    assert any("two measured counts" in w for w in p.warnings)
    assert p.high[-1] / p.low[-1] > 1.5
    assert 1.5 < p.speedup[3] < 4.0


def test_median_of_members_lies_between_them():
    n = np.arange(1.0, 13.0)
    x = usl(n, [10.0, 0.03, 0.003])
    data = Measurements.from_samples(n, x)
    fit = auto.fit_auto(data, 32)
    assert [m.split(":")[0] for m in fit.extras["members"]] == list(auto.DEFAULT_RULES.members)
    q = np.arange(1.0, 33.0)
    assert np.all(fit.low(q) <= fit.perf(q) + 1e-9)
    assert np.all(fit.perf(q) <= fit.high(q) + 1e-9)
    assert "median" in fit.reason


@pytest.mark.parametrize("counts, members", [
    ((1, 2, 4, 8), auto.FEW_COUNT_RULES.members),  # a 16-core machine's curve up to 8
    ((1, 2, 3, 4), auto.FEW_COUNT_RULES.members),
    ((1, 2, 4, 6, 8), auto.MAIN_RULES.members),  # 5 counts: the main rule
    ((1, 2, 2, 4, 4, 8, 8), auto.FEW_COUNT_RULES.members),  # repetitions are not counts
])
def test_curves_of_few_counts_take_their_own_rule(counts, members):
    """4 distinct counts or fewer (but enough for a recent trend): the few-count rule's
    members, the two laws anchored; more: the main rule's (benchmarks/fewcounts.py)."""
    n = np.asarray(counts, float)
    fit = auto.fit_auto(Measurements.from_samples(n, usl(n, [10.0, 0.03, 0.003])), 32)
    fitted = [m.split(":")[0] for m in fit.extras["members"]]  # presca needs more counts than these
    assert set(fitted) <= set(members) and {"usl", "trend" if "trend" in members else "amdahl"} <= set(fitted)
    assert fit.extras["rules"] == (auto.FEW_COUNT_RULES if len(set(counts)) <= auto.FEW_COUNTS else auto.MAIN_RULES).label()


def test_the_few_count_rule_can_be_left_out():
    """``MAIN_RULES`` (the rule alone, as benchmarks compare it) predicts a 4-count curve as
    the main rule does."""
    n = np.array([1.0, 2.0, 4.0, 8.0])
    data = Measurements.from_samples(n, usl(n, [10.0, 0.03, 0.003]))
    with auto.using(auto.MAIN_RULES):
        fit = auto.fit_auto(data, 32)
    assert fit.extras["rules"] == auto.MAIN_RULES.label()
    assert "damped" in " ".join(fit.extras["members"])
    assert "few" not in auto.MAIN_RULES.label() and "4 counts or fewer" in auto.DEFAULT_RULES.label()


def test_exact_usl_curve_is_extrapolated_well():
    n = np.arange(1.0, 13.0)
    x = usl(n, [10.0, 0.03, 0.001])
    p = corecast.predict(n, x, metric="throughput", upto=24)
    truth = usl(np.arange(1.0, 25.0), [10.0, 0.03, 0.001])
    assert np.max(np.abs(p.values - truth) / truth) < 0.1


def test_amdahl_curve_never_predicted_to_collapse():
    n = np.array([1.0, 2, 4, 6, 8])
    p = corecast.predict(n, amdahl(n, [1.0, 0.05]), metric="throughput", upto=32)
    assert p.values[-1] > p.values[7]


def test_stall_columns_add_estima_member():
    data = Measurements.from_samples([1, 2, 3], [1, 2, 3], stalls={"lock": [0, 1, 2]})
    assert "estima" in auto.members_for(data)
    assert "estima" not in auto.members_for(Measurements.from_samples([1, 2], [1, 2]))


def test_backtest_warns_when_the_range_is_too_short():
    # Linear to 8 threads, then collapsing: the first half cannot foresee the second.
    n = np.arange(1.0, 13.0)
    x = np.where(n <= 6, n, 6 * (6 / n) ** 3)
    p = corecast.predict(n, x, metric="throughput")
    assert any("measure at larger counts" in w for w in p.warnings)


def test_two_falling_points_are_followed():
    # Two threads slower than one: Amdahl cannot fall, so auto fits USL through both.
    p = corecast.predict([1, 2], [0.27, 0.77], metric="time", upto=8)
    assert p.values[0] == pytest.approx(0.27, rel=1e-6)
    assert p.values[1] == pytest.approx(0.77, rel=1e-6)
    assert p.preferred == 1
    assert np.all(np.diff(p.values) > 0)


def test_backtest_scores_every_member_and_the_reason_names_them():
    n = np.arange(1.0, 17.0)
    x = usl(n, [10.0, 0.05, 0.002])
    fit = auto.fit_auto(Measurements.from_samples(n, x), 32)
    assert set(fit.extras["backtest"]) == set(auto.DEFAULT_RULES.members)
    assert fit.extras["backtest"]["usl"] < 0.01  # the exact law foresees its own upper half
    assert fit.extras["backtest"]["plateau"] > 0.05
    assert "backtest (fitted up to 8" in fit.reason


def test_rules_change_which_members_are_combined():
    n = np.arange(1.0, 17.0)
    data = Measurements.from_samples(n, usl(n, [10.0, 0.05, 0.002]))
    with auto.using(auto.Rules("best", k=1)):
        best = auto.fit_auto(data, 32)
    assert best.extras["chosen"] == ["usl"]
    assert np.allclose(best.perf([32]), usl(np.array([32.0]), [10.0, 0.05, 0.002]), rtol=1e-3)
    median = auto.fit_auto(data, 32)
    assert len(median.extras["chosen"]) == 5


def test_member_sets_and_damping_come_from_the_rules():
    n = np.array([1.0, 2, 4, 8, 16])
    data = Measurements.from_samples(n, 5.0 * n**0.8)
    rules = auto.Rules(members=("usl", "trend", "damped"), damping=0.5)
    with auto.using(rules):
        fit = auto.fit_auto(data, 64)
    assert fit.extras["members"] == ["usl", "trend", "damped"]
    assert fit.params["damped"]["slope"] == pytest.approx(0.4)
    assert "damped(0.5)" in rules.label()
    assert set(fit.extras["backtest"]) == {"usl", "trend", "damped"}


def test_short_curves_get_the_base_members_under_every_rule():
    n, x = [1.0, 2, 4], [10.0, 18.0, 30.0]
    data = Measurements.from_samples(n, x)
    default = auto.fit_auto(data, 16)
    assert default.extras["members"] == ["usl", "amdahl"]  # presca and the continuations need more
    for rules in auto.RULE_CHOICES:
        with auto.using(rules):
            fit = auto.fit_auto(data, 16)
        assert fit.extras["members"] == default.extras["members"]
        assert np.allclose(fit.perf([8, 16]), default.perf([8, 16]))


def test_band_widens_per_doubling_by_the_members_median_backtest_error():
    n = np.array([1.0, 2, 3, 4, 6, 8, 12, 16])
    x = 10 * n / (1 + 0.05 * (n - 1) + 0.004 * n * (n - 1)) * (1 + 0.03 * np.sin(n))
    data = Measurements.from_samples(n, x)
    narrow_rules = dataclasses.replace(auto.DEFAULT_RULES, band=0.0)
    with auto.using(narrow_rules):
        narrow = auto.fit_auto(data, 64)
    wide = auto.fit_auto(data, 64)  # DEFAULT_RULES: band > 0
    assert narrow.extras["band_per_doubling"] is None
    per_doubling = wide.extras["band_per_doubling"]
    errors = [e for e in wide.extras["backtest"].values() if e is not None]
    assert per_doubling == pytest.approx(auto.DEFAULT_RULES.band * np.median(errors))
    assert np.allclose(wide.perf([8, 32, 64]), narrow.perf([8, 32, 64]))  # the curve is the band's centre
    at = np.array([16.0, 32.0, 64.0])
    for k, doublings in enumerate((0, 1, 2)):
        lo, hi, mid = wide.low(at)[k], wide.high(at)[k], wide.perf(at)[k]
        assert lo <= mid * np.exp(-per_doubling * doublings) * (1 + 1e-9)
        assert hi >= mid * np.exp(per_doubling * doublings) * (1 - 1e-9)
        assert lo <= narrow.low(at)[k] and hi >= narrow.high(at)[k]
    assert f"widens by at least {per_doubling:.0%} per doubling" in wide.reason


def test_anchored_rules_continue_the_laws_from_the_last_measured_value():
    n = np.array([1.0, 2, 4, 6, 8, 12, 16])
    x = usl(n, [10.0, 0.04, 0.002]) * np.array([1.0, 0.97, 1.03, 0.98, 1.02, 0.96, 1.06])
    data = Measurements.from_samples(n, x)
    plain_rules = auto.Rules(members=("usl", "amdahl", "plateau", "trend"))
    anchored_rules = auto.Rules(members=("usl", "amdahl", "plateau", "trend"), anchor=True)
    with auto.using(plain_rules):
        plain = auto.fit_auto(data, 64)
    with auto.using(anchored_rules):
        anchored = auto.fit_auto(data, 64)
    assert anchored.extras["members"] == ["usl:anchored", "amdahl:anchored", "plateau", "trend"]
    for law in ("usl", "amdahl"):
        before = next(f for f in plain.members if f.method == law)
        after = next(f for f in anchored.members if f.method == law)
        assert after.perf([16])[0] == pytest.approx(x[-1])
        assert np.allclose(after.perf([32, 64]) / after.perf([16]), before.perf([32, 64]) / before.perf([16]))
    # The continuation members are the same either way, and so is the backtest's cut.
    assert anchored.params["trend"] == plain.params["trend"]
    assert set(anchored.extras["backtest"]) == set(plain.extras["backtest"])
    assert "usl(anchored)+amdahl(anchored)" in anchored_rules.label()
    assert "anchored" not in plain_rules.label()


@given(st.lists(st.floats(1e-6, 1e9, allow_subnormal=False), min_size=4, max_size=12),
       st.sampled_from(["throughput", "time"]))
@settings(max_examples=60, deadline=None)
def test_any_positive_curve_gets_a_finite_prediction_inside_its_band(values, metric):
    # Whatever the shipped rule's members do with odd curves (USL through noise,
    # anchored to a tiny or huge last value), the prediction stays usable.
    n = np.arange(1, len(values) + 1)
    p = corecast.predict(n, values, metric=metric, upto=4 * len(values))
    assert np.all(np.isfinite(p.values)) and np.all(p.values > 0)
    assert np.all(p.low <= p.values * (1 + 1e-9)) and np.all(p.values <= p.high * (1 + 1e-9))
    assert 1 <= p.preferred <= 4 * len(values)


def test_the_step_member_leaves_the_median_alone_where_it_agrees():
    # Asked at the same counts, the members' median voting once more is the median itself.
    n = np.arange(1.0, 13.0)
    fit = auto.fit_auto(Measurements.from_samples(n, usl(n, [10.0, 0.05, 0.002])), 32)
    q = np.arange(1.0, 33.0)
    assert fit.perf_with is not None and fit.step_yield == auto.DEFAULT_RULES.smt_member
    assert np.allclose(fit.perf_with(q, q), fit.perf(q))
    with auto.using(dataclasses.replace(auto.DEFAULT_RULES, smt_member=None)):
        assert auto.fit_auto(Measurements.from_samples(n, usl(n, [10.0, 0.05, 0.002])), 32).perf_with is None


def _smt_curve(rules: auto.Rules, **machine):
    n = np.arange(1, 9)
    with auto.using(rules):
        return corecast.predict(n, 100.0 * n / (1 + 0.02 * (n - 1)), metric="throughput", upto=16, **machine)


def test_the_step_member_votes_only_past_an_unmeasured_smt_boundary():
    step, none = auto.DEFAULT_RULES, dataclasses.replace(auto.DEFAULT_RULES, smt_member=None)
    # No machine, or none whose cores the counts ahead share: the rule changes nothing.
    for machine in ({}, {"hw_threads": 16, "cores": 16}):
        assert np.array_equal(_smt_curve(step, **machine).values, _smt_curve(none, **machine).values)
    # 8 cores, 16 hardware threads: up to the cores nothing changes; past them the members
    # asked at yield 1 pull the median up, never above what every member says at yield 1.
    smt = dict(hw_threads=16, cores=8)
    with_step, without = _smt_curve(step, **smt), _smt_curve(none, **smt)
    whole_core = _smt_curve(none)  # no machine: every thread a whole core
    past = with_step.counts > 8
    assert np.allclose(with_step.values[~past], without.values[~past])
    assert np.all(with_step.values[past] > without.values[past])
    assert np.all(with_step.values[past] <= whole_core.values[past] * (1 + 1e-9))
    assert np.all((with_step.low <= with_step.values) & (with_step.values <= with_step.high))
    assert "SMT yield 1 vote" in with_step.reason and "SMT yield" not in without.reason


@pytest.mark.parametrize("counts", [(1, 2, 4, 8), (1, 2, 4), (1, 2)])
def test_curves_of_few_counts_keep_the_step_member_past_an_unmeasured_smt_boundary(counts):
    """The few-count rule was chosen on curves that never crossed an SMT boundary (the
    16-core machine's to 16); it dropped the main rule's step member with the rest, so
    on 8 cores of 16 hardware threads a 4-count curve's threads ahead no longer had the
    members asked at SMT yield 1 voting (LFCA's 6 few-count splits, 4 cores of 8 threads,
    lose accuracy without it), and a 2-3 count curve, which every rule predicts alike,
    was predicted otherwise than by the main rule."""
    n = np.asarray(counts, float)
    values = 100.0 * n / (1 + 0.02 * (n - 1))
    smt = dict(metric="throughput", upto=16, hw_threads=16, cores=8)
    p = corecast.predict(n, values, **smt)
    assert "SMT yield 1 vote" in p.reason or p.candidate == "amdahl"  # 2 counts: amdahl alone
    if len(counts) < 4:
        with auto.using(auto.MAIN_RULES):
            main = corecast.predict(n, values, **smt)
        assert np.allclose(p.values, main.values) and np.allclose(p.low, main.low)


def test_an_even_median_is_said_to_lie_between_its_middle_members():
    """A median of an even number of members is the geometric mean of the middle two, as
    far from one as from the other: 'closest to' one of them was float rounding's pick.
    On 4 counts the few-count rule always combines 2 (presca cannot fit 4 counts)."""
    n = np.array([1.0, 2.0, 4.0, 8.0])
    y = usl(n, [10.0, 0.03, 0.003]) * (1 + 0.03 * np.sin(n))
    fit = auto.fit_auto(Measurements.from_samples(n, y), 32)
    assert len(fit.extras["chosen"]) == 2
    assert "closest to" not in fit.reason and "midway between" in fit.reason, fit.reason
    at = np.log([m.perf(np.array([32.0]))[0] for m in fit.members])
    mid = np.sort(at)[len(at) // 2 - 1: len(at) // 2 + 1]
    assert np.isclose(np.log(fit.perf(np.array([32.0]))[0]), mid.mean())
