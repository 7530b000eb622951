"""A relative CORECAST_TARGET_MACHINE or CORECAST_MACHINE_FILE under a bare LD_PRELOAD names
a file in the directory the program started in, as ``corecast run`` resolves them: the
model reads them at the exit, by when the program may have changed directory ("m.json: no
such file or preset").  A preset's name still names the preset.  Nothing here depends on
the machine's speed."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from corecast.model.machine import numa as machines

from .helpers import TIMEOUT, clean_env, events, read_lines
from .test_calibration import this_machine

# Parallel regions, then a chdir to argv[1] before the exit.
MOVES_C = r"""
#include <stdio.h>
#include <unistd.h>
static double a[1 << 16];
int main(int argc, char **argv) {
    for (int k = 0; k < 4; k++) {
#pragma omp parallel for num_threads(2)
        for (int i = 0; i < (1 << 16); i++)
            a[i] = a[i] * 0.5 + i;
    }
    if (argc > 1 && chdir(argv[1]) != 0)
        return 3;
    printf("%g\n", a[7]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def moves(build):
    return build("moves_before_exit", MOVES_C, "-fopenmp")


def run_moving(prog, lib, tmp_path, **extra):
    """The program started in tmp_path/start, moving to tmp_path/elsewhere before its exit."""
    start, elsewhere = tmp_path / "start", tmp_path / "elsewhere"
    start.mkdir(exist_ok=True)
    elsewhere.mkdir(exist_ok=True)
    out = tmp_path / "out.jsonl"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out), CORECAST_QUIET="1", **extra)
    r = subprocess.run([str(prog), str(elsewhere)], env=env, cwd=start, capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    (summary,) = events(read_lines(out), "summary")
    return r, summary, read_lines(out), start


@pytest.mark.parametrize("spec", ["m.json", "./m.json", "opteron6380"])
def test_a_relative_target_machine_is_the_start_directorys(moves, lib, tmp_path, spec):
    (tmp_path / "start").mkdir()
    shutil.copy(machines.path_of("opteron6380"), tmp_path / "start" / "m.json")
    r, summary, lines, _ = run_moving(moves, lib, tmp_path, CORECAST_TARGET_MACHINE=spec, CORECAST_TARGET="64")
    assert "no node-count predictions" not in r.stderr, r.stderr
    assert summary["model"] == "ok"
    (region,) = [e for e in events(lines, "region") if not e.get("nested")]
    assert region.get("predicted_nodes"), region


def test_a_relative_machine_file_is_the_start_directorys(moves, lib, tmp_path):
    (tmp_path / "start").mkdir()
    this_machine(tmp_path / "start", [[1, 1.0], [2, 0.9], [16, 0.45]])
    r, summary, _, _ = run_moving(moves, lib, tmp_path, CORECAST_MACHINE_FILE="calibration.json",
                                  CORECAST_TARGET="16")
    assert "calibration not used" not in r.stderr, r.stderr
    assert summary["predicted_for"]["source"] == "target, calibrated"
