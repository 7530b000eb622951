"""A new user's pass over the offline CLI (session newuser30): a CSV of an MPI curve
labelled threads, and hyperfine's exports, which a performance engineer brings first."""
from __future__ import annotations

import json

import pytest

from corecast.cli import main

CURVE = "1,10\n2,5.5\n4,3\n8,2\n"


@pytest.mark.parametrize("column, unit, one", [
    ("ranks", "ranks", "rank"), ("Processes", "processes", "process"), ("nodes", "nodes", "node"),
    ("core", "cores", "core"), ("threads", "threads", "thread"), ("n", "threads", "thread"),
])
def test_a_csv_count_column_names_the_counts_unit(tmp_path, capsys, column, unit, one):
    # 'ranks,time' was printed as threads in the table, the lines and the JSON's
    # count_unit, while an Extra-P file whose parameter is ranks said ranks.
    path = tmp_path / "c.csv"
    path.write_text(f"{column},time\n{CURVE}")
    assert main(["predict", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count_unit"] == unit
    assert main(["predict", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{unit} ") and f"each {one} added" in out
    if unit != "threads":
        assert "thread" not in out
