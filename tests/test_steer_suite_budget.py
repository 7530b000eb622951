"""benchmarks/steer_suite.py --budget: a device call's cases end within their share of the
seconds given, with a table, rather than being cut by the call's timeout (session 26 lost
its last two cases that way).  No test here depends on how fast anything runs."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmark_module import BENCHMARKS, load_benchmark


def test_another_round_at_the_mean_round() -> None:
    suite = load_benchmark("steer_suite")
    assert suite.another_round(0.0, 0, 0.0)  # one round always: a case with none has no figure
    assert suite.another_round(10.0, 2, 15.0)  # 10 + 5 fits 15
    assert not suite.another_round(10.0, 2, 14.9)
    assert not suite.another_round(30.0, 1, 59.0)


def test_budget_spent_ends_with_tables(tmp_path: Path) -> None:
    """With a budget spent at once, the first case runs its one round and prints its table,
    the second is named as not run, and the JSON holds both."""
    for name in ("a", "b"):
        prog = tmp_path / name
        prog.write_text("#!/bin/sh\nexit 0\n")
        prog.chmod(0o755)
    out = tmp_path / "s.json"
    r = subprocess.run([sys.executable, str(BENCHMARKS / "steer_suite.py"), "--runs", "50", "--threads", "1",
                        "--npb", str(tmp_path), "--npb-programs", "a,b", "--cases", "npb", "--budget", "1e-9",
                        "--json-out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "1 of 50 rounds" in r.stdout and "b: not run, --budget spent" in r.stdout
    rec = json.loads(out.read_text())["cases"]
    assert rec["a"]["rounds"] == 1 and rec["a"]["sides"]["none"]["runs"] == 1
    assert rec["b"] == {"reference": "none", "rounds": 0, "sides": {}}
