"""Shared checks for the CLI: the error contract (one `corecast: error:` line, exit 2) and predict's JSON keys."""
from __future__ import annotations

from pathlib import Path

from corecast.cli import main

# The keys of predict's JSON object (test_cli, test_sweepviz).
TOP_KEYS = {
    "method", "metric", "candidate", "reason", "predictions", "preferred_threads", "knee_threads",
    "knee_fraction", "speedup_base", "checkpoints", "params", "extras", "fit_quality", "warnings", "hardware",
    "fastest_threads", "fastest_measured", "min_gain", "scaling", "count_unit",
    "preferred_count", "fastest_count", "knee_count",
}


def assert_one_line_error(capsys, argv, plot: Path | None = None, internal: bool = False) -> str:
    """Runs ``corecast ARGV`` in-process; returns the error line.  With ``plot``, also
    checks that nothing (not even a temporary file) was written there.  Bad input is told
    as what is wrong with it, never as corecast's own failure ("internal error"), unless
    ``internal``."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("corecast: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "Traceback" not in err
    assert ("internal error" in err) == internal, err
    if plot is not None:
        assert not plot.exists()
        assert not list(plot.parent.glob("*.png"))
    return err
