"""docs/file-formats.md lists every registered reader, in detection order, as the
registry describes it (regenerate the list: ``python tests/test_file_formats.py``); the
readers detect the files they are for, and ``--format`` forces one."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corecast.cli import main
from corecast.errors import InputError
from corecast.io.readers import CURVES, NUMA_SAMPLE, READERS, RECORDING, read, read_inputs, readers
from corecast.io.readers.registry import Sniff

DOC = Path(__file__).resolve().parents[1] / "docs" / "file-formats.md"
BEGIN, END = "<!-- readers: begin (generated from the registry) -->", "<!-- readers: end -->"
COMMANDS = {CURVES: "`corecast predict FILE`", RECORDING: "`corecast replay`, `merge`, `numa --replay`",
            NUMA_SAMPLE: "`corecast numa --sample`, `--co-run`"}
FLAGGED = (CURVES, RECORDING)  # the kinds whose commands take --format


def formats_section() -> str:
    out = [BEGIN]
    for kind in (CURVES, RECORDING, NUMA_SAMPLE):
        out += ["", f"### Read by {COMMANDS[kind]}", "",
                "| name (flag) | reads | detected by |", "|---|---|---|"]
        out += [f"| `{r.name}` ({f'`{r.flag}`' if kind in FLAGGED else 'no flag: one format'}) | {r.reads} "
                f"| {r.detection} |" for r in readers(kind)]
    return "\n".join(out + ["", END])


def _generated(text: str) -> str:
    return text[text.index(BEGIN):text.index(END) + len(END)]


def test_docs_list_every_registered_reader():
    assert _generated(DOC.read_text()) == formats_section(), \
        "docs/file-formats.md differs from the registry: run python tests/test_file_formats.py"


def test_each_kind_ends_in_a_fallback_and_names_are_unique():
    assert set(r.yields for r in READERS.values()) == {CURVES, RECORDING, NUMA_SAMPLE}
    assert readers(CURVES)[-1].name == "csv" and [r.name for r in readers(RECORDING)] == ["recording"]
    assert [r.name for r in readers(NUMA_SAMPLE)] == ["numa-sample"]


@pytest.mark.parametrize("name, text, reader", [
    ("m.csv", "threads,time\n1,10\n2,5\n", "csv"),
    ("r.json", '{"measured": [{"threads": 1, "time_s": 1}]}', "sweep"),
    ("x.txt", "# c\nPARAMETER p\nPOINTS 1 2\n", "extrap-text"),
    ("x.json", '{"parameters": ["p"], "measurements": {}}', "extrap-json"),
    ("x.jsonl", '{"params": {"p": 1}, "value": 1}\n{"params": {"p": 2}, "value": 1}\n', "extrap-json"),
    ("p.json", '[{"path": "main"}]', "caliper"),
    ("p.json", '{"records": []}', "caliper"),
    ("p.cali", "__rec=ctx\n", "caliper"),
    ("run.jsonl", '{"event": "region", "schema": 4}\n', "recording"),
    ("s.json", '{"llc": [0.001, 0.002], "bus": [0.002, 0.001]}', "numa-sample"),
])
def test_detection(name, text, reader):
    kind = READERS[reader].yields
    found = next(r for r in readers(kind) if r.detect(Sniff(name, text)))
    assert found.name == reader


def test_format_forces_a_reader(tmp_path):
    text = "PARAMETER p\nPOINTS 1 2 4\nREGION r\nMETRIC time\nDATA 4\nDATA 2\nDATA 1\n"
    path = tmp_path / "x.txt"
    path.write_text(text)
    (auto,) = read_inputs([str(path)])
    (forced,) = read_inputs([str(path)], format="extrap-text")
    assert auto.source == forced.source == "extrap" and list(auto.data.values) == list(forced.data.values)
    with pytest.raises(InputError, match="x.txt: no header row|x.txt: line"):
        read_inputs([str(path)], format="csv")
    with pytest.raises(InputError, match="unknown format 'recording'"):
        read([str(path)], CURVES, "recording")


def test_format_flag_on_the_cli(tmp_path, capsys):
    path = tmp_path / "m.txt"
    path.write_text("threads,time\n1,10\n2,5.2\n4,2.8\n8,1.7\n")
    assert main(["predict", "--format", "csv", "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["method"]
    assert main(["predict", "--format", "extrap-json", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("corecast: error: ") and err.count("\n") == 1 and "m.txt" in err
    assert main(["replay", "--format", "csv", str(path)]) == 2
    assert "invalid choice" in capsys.readouterr().err


if __name__ == "__main__":
    doc = DOC.read_text()
    DOC.write_text(doc.replace(_generated(doc), formats_section()))
    sys.exit(0)
