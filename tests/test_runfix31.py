"""What a new user's pass over the runtime commands left (session runfix31), offline: the
closest-name rule the library shares, a sweep result's CPUs read back by predict, and
replay's header for OpenCL kernels."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from corecast.cli import main
from corecast.io import settings

RECORDINGS = Path(__file__).resolve().parent / "data" / "recordings"


@pytest.mark.parametrize("typed, near", [
    ("CORECAST_TRAGET", "CORECAST_TARGET"), ("CORECAST_target", "CORECAST_TARGET"),
    ("CORECAST_WINDOW_M", "CORECAST_WINDOW_MS"), ("CORECAST_STEEL", "CORECAST_STEER"),
    ("CORECAST_TRAGTE", "CORECAST_TARGET"),  # two neighbours swapped twice: 2 edits, not 4
    ("CORECAST_THREADS", None), ("CORECAST_" + "X" * 60, None)])
def test_the_closest_setting(typed, near):
    assert settings.closest(typed) == near


def test_the_header_lists_every_name_for_the_library():
    # native/config.c tells a typo from a setting by this list: the table's, every name.
    # CC_SETTINGS_ALL is CC_SETTINGS_SHOWN and the names the display leaves out.
    header = settings.c_header()

    def names(macro: str) -> list[str]:
        body = header[header.index(f"#define {macro}"):].split("\n\n")[0]
        return [ln.strip().strip(", \\").strip('"') for ln in body.splitlines()[1:]]

    assert header[header.index("#define CC_SETTINGS_ALL"):].startswith("#define CC_SETTINGS_ALL CC_SETTINGS_SHOWN ")
    assert sorted(names("CC_SETTINGS_SHOWN") + names("CC_SETTINGS_ALL")) == sorted(s.name for s in settings.TABLE)


def _sweep(tmp_path: Path, counts_times: list[tuple[int, float]], cpus: int | None, upto: int) -> tuple[Path, dict]:
    """A sweep result as run_sweep writes it, its predictions made by the sweep's own
    extrapolation on ``cpus`` CPUs."""
    from corecast.io.sweepresult import empty_result
    from corecast.model.curve.extrapolation import extrapolate

    result = empty_result(["prog"], "openmp", [], {})
    ok = [n for n, _ in counts_times]
    result["measured"] = [{"threads": n, "time_s": t, "spread_s": 0.0, "stalls_s": {}} for n, t in counts_times]
    if cpus is not None:
        result["cpus_allowed"] = cpus
    extrapolate(result, {n: [t] for n, t in counts_times}, ok, [], {n: [{}] for n in ok}, upto, cpus=cpus)
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(result))
    return path, result


def _predicted(capsys, path: Path, upto: int, *extra: str) -> dict:
    assert main(["predict", str(path), "--upto", str(upto), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("counts_times, cpus", [
    ([(1, 1.0), (2, 0.9), (4, 2.5)], 2),   # 4 ran oversubscribed on 2 CPUs: the sweep fits 1 and 2
    ([(1, 1.0), (2, 0.6)], 2),             # within the CPUs: every count, no machine
    ([(1, 1.0), (2, 0.6), (4, 0.5)], 4)])
def test_predict_of_a_sweep_result_predicts_what_the_sweep_did(capsys, tmp_path, counts_times, cpus):
    # predict sweep.json said T(32) = 0.48 s where the sweep itself said 7.88 s (2 CPUs):
    # it fitted the oversubscribed count, and knew nothing of the CPUs.
    path, result = _sweep(tmp_path, counts_times, cpus, 32)
    swept = {p["threads"]: p["value"] for p in result["predictions"]}
    mine = {p["threads"]: p["value"] for p in _predicted(capsys, path, 32)["predictions"]}
    assert mine[32] == pytest.approx(swept[32], rel=1e-6)
    assert mine[2] == pytest.approx(swept[2], rel=1e-6)


def test_a_sweep_results_cpus_give_way_to_the_users_machine(capsys, tmp_path):
    path, _ = _sweep(tmp_path, [(1, 1.0), (2, 0.9), (4, 2.5)], 2, 32)
    assert main(["predict", str(path), "--upto", "32"]) == 0
    out = capsys.readouterr().out
    assert "count 4 ran oversubscribed on the sweep's 2 CPUs: left out of the time's fit" in out
    assert "share the machine's 2 hardware threads" in out
    assert main(["predict", str(path), "--upto", "32", "--hw-threads", "64"]) == 0
    assert "share the machine's 2 hardware threads" not in capsys.readouterr().out


def test_a_sweep_result_records_its_cpus(capsys, tmp_path):
    from corecast.io.sweepresult import SweepResult

    path, result = _sweep(tmp_path, [(1, 1.0), (2, 0.6)], 2, 8)
    assert SweepResult.read(result).cpus_allowed == 2
    del result["cpus_allowed"]  # a result written before it: none
    assert SweepResult.read(result).cpus_allowed is None
    result["cpus_allowed"] = "two"
    path.write_text(json.dumps(result))
    assert main(["predict", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith('"cpus_allowed" "two" must be a whole number >= 1') and len(err.splitlines()) == 1


def test_replay_counts_a_kernels_compute_units(capsys):
    # replay's header said "up to 4 threads" of a kernel's compute units.
    assert main(["replay", str(RECORDINGS / "schema1-opencl-kernel.jsonl")]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "predicted speedup up to 4 compute units on a 4-core machine (recorded target)" in head
    assert main(["replay", "--target", "2", str(RECORDINGS / "schema4-opencl-host-pocl.jsonl")]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "up to 2 threads (2 compute units for its kernels) on a 2-core machine (target)" in head
