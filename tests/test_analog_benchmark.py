"""benchmarks/analog.py: the continuation library is what the curves did, and no case is
ever predicted from its own source (leave one source out, the inner choice included)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from corecast.model.curve.entities import Measurements
from benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def analog():
    load_benchmark("accuracy")
    return load_benchmark("analog")


def test_library_holds_each_measured_doubling_and_what_followed(analog):
    n = np.array([1.0, 2, 4, 8, 16, 32, 64])
    rising = Measurements.from_samples(n, 3.0 * n**0.5)
    falling = Measurements.from_samples(n, np.where(n <= 16, 2.0 * n, 32.0 * (16 / n)))
    lib = analog.continuations([("a__rising", rising, (None, None)), ("b__falling", falling, (None, None))])
    # m = 8, 16, 32: four counts up to m and one at 2m.
    assert list(lib.src) == ["a"] * 3 + ["b"] * 3
    assert np.allclose(lib.y[:3], 0.5)
    # Slope over the last doubling, its change, the average slope, log2(m).
    assert np.allclose(lib.x[:3], [[0.5, 0.0, 0.5, k] for k in (3, 4, 5)])
    assert np.allclose(lib.y[3:], [1.0, -1.0, -1.0])  # linear up to 16, then 1/n
    assert lib.x[4, 0] == pytest.approx(1.0) and lib.x[5, 0] == pytest.approx(-1.0)
    assert lib.x[5, 1] == pytest.approx(-2.0)  # the slope's change from the doubling before


def test_neighbours_weigh_each_source_the_same(analog):
    x = np.array([[0.0], [0.1], [0.2], [5.0]])
    idx, w = analog.neighbours(x, np.array(["a", "a", "b", "c"]), np.array([0.0]), (0,), 3)
    assert list(idx) == [0, 1, 2]
    assert np.allclose(w, [0.25, 0.25, 0.5])


def test_no_case_is_predicted_from_its_own_source(analog, monkeypatch):
    seen = []

    def spy(case, lib, train, settings):
        seen.append((case.source, set(lib.src), {c.source for c in train}))
        return settings[0]

    monkeypatch.setattr(analog, "score_values", lambda split, values: sys.modules["accuracy"].Score(values, values, 0.0, 1.0))
    monkeypatch.setattr(analog, "VARIANTS", {"spy": (spy, [(0.05,), (0.5,)])})
    sources = ["a", "b", "c"]
    cases = [analog.Case(None, s, np.zeros(4), {}, {}) for s in sources for _ in range(2)]
    lib = analog.Library(np.zeros((6, 4)), np.zeros(6), np.array([s for s in sources for _ in range(2)]))
    held, chosen = analog.loso(cases, lib)
    assert all(chosen["spy"][s] == (0.05,) for s in sources)  # the lower error has the better merit
    assert len(held["spy"]) == len(cases) and all(h is not None for h in held["spy"])
    assert seen
    for source, lib_sources, train_sources in seen:
        assert source not in lib_sources and source not in train_sources
