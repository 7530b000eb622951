"""Steering (corecast run --steer): a region that is slower with more threads settles on
fewer threads, the program's output stays the same, and steering never adds threads."""
from __future__ import annotations

from .helpers import EXAMPLES, clean_env, events, read_lines, run

CALLS = "8000"


def _slowdown(build):
    return build("omp_slowdown", EXAMPLES / "omp_slowdown.c", "-fopenmp")


def test_steering_settles_on_fewer_threads(build, lib, tmp_path):
    prog = _slowdown(build)
    env = clean_env(OMP_NUM_THREADS="2")
    plain = run([prog, CALLS], env=env)
    out = tmp_path / "cc.jsonl"
    steered = run([prog, CALLS], env=env, preload=lib, output=out, steer="1", window_ms="50")
    assert plain.returncode == steered.returncode == 0
    assert steered.stdout == plain.stdout
    (region,) = events(read_lines(out), "region")
    steering = region["steering"]
    assert steering["own"] == 2
    assert steering["chosen"] == 1 and steering["now"] == 1
    assert steering["gain"] > 0
    assert steering["steps"] >= 1 and steering["not_explored"] is None
    by_team = {t["threads"]: t["calls"] for t in region["by_team"]}
    assert set(by_team) == {1, 2}
    assert by_team[1] > by_team[2]  # most calls ran after steering took over
    assert sum(by_team.values()) == region["calls"] == int(CALLS)
    assert "steering main._omp_fn.0: 1 threads" in steered.stderr.decode()


def test_steering_never_adds_threads(build, lib, tmp_path):
    prog = _slowdown(build)
    out = tmp_path / "cc.jsonl"
    proc = run([prog, "2000"], env=clean_env(OMP_NUM_THREADS="1"), preload=lib, output=out,
               steer="1", window_ms="20")
    assert proc.returncode == 0
    (region,) = events(read_lines(out), "region")
    assert {t["threads"] for t in region["by_team"]} == {1}
    assert region["steering"]["chosen"] is None
    assert region["steering"]["not_explored"] == "one thread"
    assert "steering main._omp_fn.0: not explored, 1 threads kept: one thread" in proc.stderr.decode()


def test_without_steering_the_team_is_the_programs(build, lib, tmp_path):
    prog = _slowdown(build)
    out = tmp_path / "cc.jsonl"
    proc = run([prog, "2000"], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, output=out,
               window_ms="20")
    assert proc.returncode == 0
    (region,) = events(read_lines(out), "region")
    assert {t["threads"] for t in region["by_team"]} == {2}
    assert "steering" not in region
