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
