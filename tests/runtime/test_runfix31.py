"""What a new user's pass over the runtime commands left (session runfix31), in the
preload library: a misspelt CORECAST_* setting under a bare LD_PRELOAD, --steer and
--probe on a program with no OpenMP region, steering's own team of a nested region, and
the header's "(target)" without a target."""
from __future__ import annotations

import re

from corecast.io import settings

from .helpers import EXAMPLES, clean_env, corecast_run, events, read_lines, run

WARNING = "corecast: warning: "


def _pthreads(build):
    return build("pthreads_sync", EXAMPLES / "pthreads_sync.c", "-pthread")


def _warnings(stderr: bytes) -> list[str]:
    return [ln[len(WARNING):] for ln in stderr.decode().splitlines() if ln.startswith(WARNING)]


def test_a_misspelt_setting_is_named_in_the_exit_report(build, lib):
    # LD_PRELOAD=$(corecast lib) CORECAST_TRAGET=8 ./prog predicted for this machine's
    # CPUs without a word: only the corecast command named the typo.
    prog = _pthreads(build)
    odd = {"CORECAST_TRAGET": "8", "CORECAST_target": "3", "CORECAST_NOTHING_LIKE_IT": "1",
           "CORECAST_TRAGTE": "2"}  # two swaps: as near as two letters changed
    plain = run([prog], env=clean_env(**odd))
    proc = run([prog], env=clean_env(**odd), preload=lib)
    assert proc.returncode == plain.returncode == 0
    assert proc.stdout == plain.stdout  # the program's output is its own
    # the same lines as the command's, the closest name by the same rule
    assert sorted(_warnings(proc.stderr)) == settings.unknown_names(odd)
    assert "(did you mean CORECAST_TARGET?)" in settings.unknown_names({"CORECAST_TRAGET": "8"})[0]


def test_the_library_names_the_first_four_typos_and_counts_the_rest(build, lib):
    prog = _pthreads(build)
    odd = {f"CORECAST_ODD{i}": "1" for i in range(6)}
    proc = run([prog], env=clean_env(**odd), preload=lib)
    got = _warnings(proc.stderr)
    assert proc.returncode == 0 and sum("is not a corecast setting" in w for w in got) == 4
    assert "and 2 more CORECAST_* variables that are not corecast settings; ignored" in got


def test_the_command_and_the_library_name_a_typo_once(build, lib):
    prog = _pthreads(build)
    proc = corecast_run([], [prog], env=clean_env(CORECAST_TRAGET="8"))
    assert proc.returncode == 0
    assert proc.stderr.decode().count("CORECAST_TRAGET is not a corecast setting") == 1


def test_known_settings_say_nothing(build, lib):
    prog = _pthreads(build)
    proc = run([prog], env=clean_env(CORECAST_WINDOW_MS="50"), preload=lib, quiet="1")
    assert proc.returncode == 0 and _warnings(proc.stderr) == []


def test_steer_and_probe_say_there_is_no_openmp_region(build, lib):
    # --steer and --probe on a pthreads program did nothing, without a word.
    prog = _pthreads(build)
    for flag, line in (("--steer", "steering: no OpenMP region to steer (pthreads only)"),
                       ("--probe", "probing: no OpenMP region to probe (pthreads only)")):
        proc = corecast_run([flag], [prog])
        assert proc.returncode == 0
        assert line in proc.stderr.decode().splitlines()
    plain = corecast_run([], [prog])
    assert "no OpenMP region" not in plain.stderr.decode()


def test_an_openmp_program_steered_has_no_such_line(build, lib):
    prog = build("omp_slowdown", EXAMPLES / "omp_slowdown.c", "-fopenmp")
    proc = run([prog, "200"], env=clean_env(OMP_NUM_THREADS="2"), preload=lib, steer="1")
    assert proc.returncode == 0 and "no OpenMP region" not in proc.stderr.decode()


NESTED_C = r"""
#include <omp.h>
#include <stdio.h>
int main(void) {
    double s = 0;
    omp_set_max_active_levels(2);
    for (int c = 0; c < 50; c++) {
#pragma omp parallel num_threads(2) reduction(+:s)
        {
#pragma omp parallel num_threads(2) reduction(+:s)
            for (int i = 0; i < 2000; i++) s += i * 1e-9;
        }
    }
    printf("%g\n", s);
    return 0;
}
"""


def test_a_nested_regions_own_team_is_the_same_in_report_and_record(build, lib, tmp_path):
    # The JSON said "own": 0 for a nested region while the report said "2 threads kept".
    prog = build("nested_steer", NESTED_C, "-fopenmp")
    out = tmp_path / "n.jsonl"
    proc = run([prog], env=clean_env(), preload=lib, output=out, steer="1")
    assert proc.returncode == 0
    (nested,) = [r for r in events(read_lines(out), "region") if r["nested"]]
    own = nested["steering"]["own"]
    assert own == nested["threads"] == 2
    line = re.search(rf"steering {re.escape(nested['name'])}: .*?(\d+) threads? kept", proc.stderr.decode())
    assert line and int(line.group(1)) == own


def test_the_header_says_this_machine_without_a_target(build, lib, tmp_path):
    # "(target)" without --target: the predictions were for this machine's CPUs.
    prog = _pthreads(build)
    out = tmp_path / "o.jsonl"
    proc = run([prog], env=clean_env(), preload=lib, output=out)
    assert proc.returncode == 0
    (summary,) = events(read_lines(out), "summary")
    assert summary["predicted_for"]["source"] == "this machine"
    assert re.search(rb"-core machine \(this machine\)\n", proc.stderr)
    out = tmp_path / "t.jsonl"
    proc = run([prog], env=clean_env(), preload=lib, output=out, target="4")
    (summary,) = events(read_lines(out), "summary")
    assert summary["predicted_for"] == {"cores": 4, "source": "target"}
    assert b"on a 4-core machine (target)\n" in proc.stderr
