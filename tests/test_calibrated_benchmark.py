"""benchmarks/calibrated.py, the check a device-measured calibration is judged by: on the
committed recordings (no probes), no region has evidence for a curve, so a calibration
changes no prediction there; with probes standing in, it changes some."""
from __future__ import annotations

from benchmark_module import load_benchmark


def test_recordings_without_probes_are_not_changed_by_a_calibration():
    bench = load_benchmark("calibrated")
    scale16 = load_benchmark("scale16")
    rows = bench.compare([scale16.DEFAULT], bench.epw_standin(), lambda csv: True)
    recorded = bench.pooled(rows, "as recorded")
    assert recorded["points"] > 10 and recorded["changed"] == 0
    assert recorded["uncalibrated"] == recorded["calibrated"]
    probed = bench.pooled(rows, "probes at 1,2")
    assert probed["points"] == recorded["points"] and probed["changed"] > 0


def test_a_bad_calibration_file_is_one_line(tmp_path, capsys):
    bench = load_benchmark("calibrated")
    bad = tmp_path / "cal.json"
    bad.write_text("{}")
    assert bench.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cal.json" in err
