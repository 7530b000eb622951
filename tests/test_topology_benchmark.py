"""benchmarks/topology.py: the boundary its variants act at is the first placement ahead
that no measured count had."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from corecast.model.machine.hardware import Hardware
from benchmark_module import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def topology():
    with benchmark_module("topology") as mod:
        yield mod


def test_the_boundary_is_the_first_placement_no_measured_count_had(topology):
    smt = Hardware(16, 8)
    assert topology.boundary(smt, 4, ("smt",)) == 8  # counts 9.. share cores; 1..4 did not
    assert topology.boundary(smt, 4, ("socket",)) is None  # one socket
    assert topology.boundary(smt, 12, ("smt",)) is None  # 12 already shared cores
    assert topology.boundary(None, 4, ("smt",)) is None and topology.boundary(smt, 16, ("smt",)) is None
    by_socket = Hardware(40, 20, sockets=2, fill="sockets")  # 10 cores a socket
    assert topology.boundary(by_socket, 6, ("smt", "socket")) == 10
    assert topology.boundary(by_socket, 6, ("socket",)) == 20
    assert topology.boundary(by_socket, 14, ("smt",)) is None  # the first socket's SMT was measured
    assert topology.boundary(by_socket, 14, ("smt", "socket")) == 20


def test_the_over_boundary_is_the_hardware_threads(topology):
    by_socket = Hardware(40, 20, sockets=2, fill="sockets")
    assert topology.boundary(by_socket, 25, ("over",)) == 40  # past the sockets: the hardware threads
    assert topology.boundary(by_socket, 6, ("over",)) == 40
    assert topology.boundary(by_socket, 40, ("over",)) is None  # 40 measured: nothing new ahead
    assert topology.boundary(None, 6, ("over",)) is None


def test_weighted_median_is_the_median_with_equal_weights_and_skips_zero_weights(topology):
    rng = np.random.default_rng(3)
    for rows in range(1, 7):
        x = rng.normal(size=(rows, 9))
        x[rng.random(x.shape) < 0.15] = np.nan
        x[0] = rng.normal(size=9)  # every column keeps a value
        nearly_equal = np.r_[np.ones(rows - 1), 1 + 1e-13]  # the general path, not numpy's median
        assert np.allclose(topology.weighted_median(x, nearly_equal), np.nanmedian(x, axis=0), equal_nan=True)
    x = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.0]])
    assert topology.weighted_median(x, np.array([1.0, 0.0, 0.0])).tolist() == [1.0, 5.0]
    assert topology.weighted_median(x, np.array([0.0, 1.0, 3.0])).tolist() == [3.0, 7.0]


def _record(members: list[float], at_yield_1: float, llo: list[float]) -> dict:
    """A split's members, each flat at exp(value), and the members' value at SMT yield 1."""
    n = 4
    logs = np.array([[v] * n for v in members])
    return {"logs": logs, "units": np.arange(1.0, n + 1), "at_yield": {1.0: np.full_like(logs, at_yield_1)},
            "machine": None, "llo": np.array(llo), "backtest": None,
            "pred": SimpleNamespace(value_scale=1.0)}


def test_variants_add_their_voters_and_weights(topology):
    split = SimpleNamespace(train=SimpleNamespace(counts=np.array([1.0, 2.0])),
                            full=SimpleNamespace(metric="throughput"))
    rec = _record([0.0, 0.0], np.log(4.0), [0.3, 0.1])
    assert np.allclose(topology.values(split, rec, "none"), 1.0)
    assert np.allclose(topology.values(split, rec, "yield 1"), 1.0)  # median of 0, 0, log 4
    assert np.allclose(topology.values(split, rec, "yield 1 x2"), 2.0)  # of 0, 0, log 4, log 4
    rec = _record([0.0, np.log(8.0), np.log(2.0)], np.log(2.0), [0.3, 0.1, 0.2])
    assert np.allclose(topology.values(split, rec, "none"), 2.0)
    assert np.allclose(topology.values(split, rec, "llo best 1"), 8.0)  # the member that missed its last count least


def test_per_cell_weights_weigh_each_column_on_its_own(topology):
    x = np.array([[1.0, 1.0], [2.0, 2.0], [9.0, 9.0]])
    w = np.array([[5.0, 1.0], [1.0, 1.0], [1.0, 5.0]])
    assert topology.weighted_median(x, w).tolist() == [1.0, 9.0]
    assert topology.weighted_median(x, np.ones_like(x)).tolist() == [2.0, 2.0]


def test_trimmed_median_leaves_out_the_furthest_voter_only_where_they_disagree(topology):
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [2.0, 2.0, 0.25]])
    where = np.array([True, False, True])
    # Column 0: spread 2 > 1, the voter at 2 goes: median of 0, 0.1, 0.2.  Column 1 is not
    # asked; column 2 spans 0.25 only.
    assert np.allclose(topology.trimmed_median(x, 1.0, where), [0.1, 0.15, 0.15])


def _split(top: float, counts: list[float], values: list[float]) -> SimpleNamespace:
    counts, values = np.array(counts), np.array(values)
    return SimpleNamespace(train=SimpleNamespace(counts=counts[counts <= top]), m=top, machine=(None,) * 4,
                           full=SimpleNamespace(metric="throughput", counts=counts, values=values, perf=values))


def test_regimes_say_where_each_count_puts_its_threads(topology):
    rec = {"logs": np.zeros((2, 20)), "machine": Hardware(16, 8)}
    reg = topology.regimes(_split(4, [1, 2, 4], [1, 2, 4]), rec)
    assert list(reg[:8]) == ["in"] * 8 and list(reg[8:16]) == ["smt"] * 8 and list(reg[16:]) == ["over"] * 4
    assert set(topology.regimes(_split(4, [1, 2, 4], [1, 2, 4]), rec, pooled=True)[8:16]) == {"past"}
    assert set(topology.regimes(_split(4, [1, 2, 4], [1, 2, 4]), dict(rec, machine=None))) == {"in"}


def _machine_record(members: list[np.ndarray], step: np.ndarray, names: list[str]) -> dict:
    logs = np.vstack(members)
    return {"logs": logs, "names": names, "at_yield": {1.0: np.vstack([step] * len(members)), 0.0: logs},
            "machine": Hardware(16, 8), "pred": SimpleNamespace(value_scale=1.0)}


def test_the_spread_pick_stays_below_the_boundary_where_the_voters_disagree_past_it(topology):
    n = np.arange(1.0, 17)
    rising = np.log(n)  # every voter but one says the cores' siblings keep adding
    rec = _machine_record([rising, rising, np.where(n > 8, np.log(8) - 1.0, rising)], rising, ["a", "b", "c"])
    split = _split(4, [1, 2, 4, 8, 16], [1, 2, 4, 8, 6])  # measured: 16 falls behind 8
    shown = topology.values(split, rec, "yield 1")
    assert np.allclose(shown, n)  # the median rises to 16: the pick 16 loses 25%
    base = topology.score_values(split, shown)
    assert np.isclose(base.pick_loss, 0.25)
    # The voters span 1 + log(2) at 16: judged at log 16 - 0.5 x that, 16 no longer beats 8.
    assert topology._spread_pick(split, rec, shown, base, "smt spread 0.5").pick_loss == 0.0
    assert np.isclose(topology._spread_pick(split, rec, shown, base, "smt spread 0.1").pick_loss, 0.25)
    assert np.isclose(topology._spread_pick(split, rec, shown, base, "socket spread 0.5").pick_loss, 0.25)


def test_coreshape_scales_the_per_core_curve_by_what_siblings_add(topology):
    n = np.arange(1.0, 17)
    rec = _machine_record([np.log(np.minimum(n, 8))] * 2, np.log(np.minimum(n, 8)), ["a", "b"])
    voter = topology.coreshape(_split(4, [1, 2, 4], [1, 2, 4]), rec, 0.5)
    # 16 threads on 8 cores: the 8 cores' value times 1 + 0.5 x one sibling per core.
    assert np.isclose(voter[15], np.log(8 * 1.5)) and np.isclose(voter[11], np.log(8 * (1 + 0.5 * 4 / 8)))
    assert np.allclose(voter[:8], np.log(n[:8]))


def test_reliability_weighs_each_voter_by_its_error_in_the_counts_regime(topology):
    n = np.arange(1.0, 17)
    good, bad = np.log(n), np.log(n) + 1.0
    rec = _machine_record([good, bad, bad], good, ["a", "b", "c"])
    split = _split(8, [1, 2, 4, 8, 12, 16], [1, 2, 4, 8, 12, 16])  # scored at 12 and 16: past the cores
    errors = topology.voter_errors(split, rec)
    assert set(errors) == {"smt"} and errors["smt"]["a"] == errors["smt"]["step"] == 0.0
    assert np.isclose(errors["smt"]["b"], 1.0)
    table = topology.reliability([errors], [0])
    # The median of a, b, c and the step voter is halfway; weighted by their errors past
    # the boundary it is a's and the step voter's.
    assert np.allclose(np.log(topology.values(split, rec, "yield 1")[8:]), good[8:] + 0.5)
    assert np.allclose(np.log(topology.values(split, rec, "yield 1 + reliab past 0.1", table)[8:]), good[8:])
    # Where the weights do not reach (measured placements, R = past) the median stands.
    assert np.allclose(np.log(topology.values(split, rec, "yield 1 + reliab past 0.1", table)[:8]), good[:8] + 0.5)


def test_the_quantile_pick_judges_counts_past_the_boundary_at_a_lower_voter(topology):
    n = np.arange(1.0, 17)
    rising = np.log(n)
    low = np.where(n > 8, np.log(8) - 1.0, rising)
    rec = _machine_record([rising, rising, low, low], rising, ["a", "b", "c", "d"])
    split = _split(4, [1, 2, 4, 8, 16], [1, 2, 4, 8, 6])
    shown = topology.values(split, rec, "yield 1")  # the median of a, b, the step voter, c, d: rising
    base = topology.score_values(split, shown)
    assert np.isclose(base.pick_loss, 0.25)
    # The 0.25-quantile of five voters at 16 is the second lowest, c's or d's: 8 wins.
    assert topology._spread_pick(split, rec, shown, base, "smt quantile 0.25").pick_loss == 0.0
    assert np.isclose(topology._spread_pick(split, rec, shown, base, "smt quantile 0.5").pick_loss, 0.25)
