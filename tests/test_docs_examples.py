"""The docs' examples as a new user copy-pastes them (session docs33): what each block reads
is written by a line above it, and the numbers the docs quote from the code are the code's."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[list[str]]:
    """The lines of each fenced code block of ``page``."""
    out, current = [], None
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                out.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return out


def test_a_sweep_result_a_block_reads_is_written_above_it():
    # README's and sweep.md's block ran `corecast export --extrap sweep.jsonl sweep.json`
    # after a sweep without --json-out: "corecast: error: sweep.json: no such file"
    checked = 0
    for page in PAGES:
        for block in blocks(page):
            written: set[str] = set()
            for line in block:
                command = line.split("#")[0]
                words = command.split()
                if words[:2] in (["corecast", "export"], ["corecast", "predict"]):
                    for name in (w for w in words[2:] if w.startswith("sweep") and w.endswith(".json")):
                        assert name in written, f"{page.name}: {line.strip()!r} reads {name}, which no line above writes"
                        checked += 1
                written.update(m.group(1) for m in re.finditer(r"--json-out\s+(\S+)", command))
    assert checked >= 2  # README's block and sweep.md's


def test_the_schema_the_docs_quote_is_the_records():
    # runtime.md said "Every record carries "schema": 4" after schema 5 was written
    from corecast.recording.record import SCHEMA

    quoted = [(page.name, int(n)) for page in PAGES
              for n in re.findall(r'`"schema": (\d+)`', page.read_text())]
    assert quoted and all(n == SCHEMA for _, n in quoted), quoted
