"""Guards the issue-2 claim: on the measured curves, auto is ahead of every single method
on all three figures (median error, share of splits under 20% max error, pick loss)."""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"

pytestmark = pytest.mark.skipif(not DATASETS.is_dir(), reason="shared datasets not present")


def _bench():
    spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["accuracy"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_auto_beats_every_peer_on_the_shared_curves():
    bench = _bench()
    splits = [s for name, data in bench.load_all(DATASETS) for s in bench.splits(name, data)]
    assert len(splits) >= 10
    rows = {r[0]: r for r in bench.summarise(splits, list(bench.PEERS))}
    auto = rows.pop("auto")
    assert auto[1] == len(splits)
    for name, (_, k, med, share, loss, _) in rows.items():
        if k == 0:
            continue
        assert auto[2] < med, f"median error: auto {auto[2]:.3f} vs {name} {med:.3f}"
        assert auto[3] > share, f"share: auto {auto[3]:.2f} vs {name} {share:.2f}"
        assert auto[4] < loss, f"pick loss: auto {auto[4]:.3f} vs {name} {loss:.3f}"
