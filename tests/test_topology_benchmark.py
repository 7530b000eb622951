"""benchmarks/topology.py: the boundary its variants act at is the first placement ahead
that no measured count had."""
from pathlib import Path

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
