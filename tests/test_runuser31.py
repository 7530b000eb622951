"""A new user's pass over the runtime commands (session runuser31): a misspelt setting,
a prediction's basis cut mid-word, a calibration's error cut mid-word, a sweep or an
OpenCL run of something that cannot run, and counts in the plural."""
from __future__ import annotations

from corecast.cli import main


def test_a_misspelt_setting_is_named_with_the_closest_one(monkeypatch, capsys):
    # CORECAST_TRAGET=8 was accepted without a word: the run predicted for this machine.
    monkeypatch.setenv("CORECAST_TRAGET", "8")
    monkeypatch.setenv("CORECAST_TARGET", "4")  # a known one says nothing
    assert main(["machine", "presets"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["corecast: warning: CORECAST_TRAGET is not a corecast setting (did you mean "
                   "CORECAST_TARGET?); ignored (docs/environment.md lists them)"]
