"""The corpus in benchmarks/data: every curve parses and says where it came from."""
import re
from pathlib import Path

import pytest

from corecast.io.readers.measurements import read_measurements

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
CURVES = sorted(DATA.glob("*.csv"))
PROVENANCE = re.compile(
    r"^# source: github [\w.-]+/[\w.-]+ \S+ @[0-9a-f]{40}\b.*, metric: (throughput|time), machine: [^,]+.*, notes: .+$"
)


def test_corpus_is_large_and_diverse():
    sources = {p.stem.split("__")[0] for p in CURVES}
    assert len(CURVES) >= 60
    assert len(sources) >= 8


@pytest.mark.parametrize("path", CURVES, ids=[p.stem for p in CURVES])
def test_curve_parses_and_has_provenance(path):
    first = path.read_text().splitlines()[0]
    match = PROVENANCE.match(first)
    assert match, f"{path.name}: provenance line malformed: {first[:120]}"
    data = read_measurements(str(path))
    assert data.metric == match.group(1)
    assert len(set(data.counts.tolist())) >= 5


def test_every_curve_is_in_the_index():
    index = (DATA / "README.md").read_text()
    for path in CURVES:
        assert f"| {path.name} |" in index
