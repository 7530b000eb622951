"""An adversarial pass over the commands that read user files (predict, merge, replay,
export, numa): each test holds one defect found, as a performance engineer's habits would
meet it (hand-edited recordings, options given twice, outputs piped on)."""
from __future__ import annotations

import json
from pathlib import Path

from cli_checks import assert_one_line_error

RECORDINGS = Path(__file__).parent / "data" / "recordings"


def _recording(tmp_path: Path, edit) -> str:
    lines = [json.loads(line) for line in (RECORDINGS / "schema1-omp_slowdown-2.jsonl").read_text().splitlines()]
    edit(lines)
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return str(path)


def test_replay_refuses_a_team_past_the_largest_count(tmp_path, capsys):
    # A region line's "threads": 1000000000 (a typo, a hand-edited file) made replay walk the
    # lock queues over every thread: it ran for hours instead of saying what is wrong.
    path = _recording(tmp_path, lambda lines: lines[0].__setitem__("threads", 10**9))
    err = assert_one_line_error(capsys, ["replay", path])
    assert "line 1" in err and "threads 1000000000 is above 100000" in err
