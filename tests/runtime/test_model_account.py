"""The model's CPU told apart from the measurement's (issue #40): the summary's ``sampler``
object counts what the model took, its start and all of it, and a ``--target-machine``
run without memory-traffic counters hands no window to the model (its node predictions
are made once, at exit).  Counts, not times: nothing here depends on the machine's speed."""
from __future__ import annotations

import subprocess

import pytest

from corecast.model.machine import numa as machines

from .helpers import TIMEOUT, clean_env, events, read_lines

# Parallel regions between sleeps: the run lasts 0.3 s or more however fast the machine,
# many 20 ms windows.
REGIONS_C = r"""
#include <omp.h>
#include <stdio.h>
#include <unistd.h>
static double a[1 << 16];
int main(void) {
    for (int k = 0; k < 6; k++) {
#pragma omp parallel for num_threads(1 + k % 2)
        for (int i = 0; i < (1 << 16); i++)
            a[i] = a[i] * 0.5 + i;
        usleep(50000);
    }
    printf("%g\n", a[7]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def regions(build):
    return build("model_account", REGIONS_C, "-fopenmp")


def summary_of(prog, lib, tmp_path, **extra) -> dict:
    out = tmp_path / "out.jsonl"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out), CORECAST_WINDOW_MS="20", **extra)
    r = subprocess.run([str(prog)], env=env, capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    lines = read_lines(out)
    (summary,) = events(lines, "summary")
    return {"summary": summary, "lines": lines}


def test_the_model_cpu_is_counted_apart_within_corecasts(regions, lib, tmp_path):
    got = summary_of(regions, lib, tmp_path, CORECAST_QUIET="1")
    summary = got["summary"]
    sampler = summary["sampler"]
    assert summary["model"] == "ok"
    assert sampler["model_runs"] == 0  # only the exit predicted (the output asks for it)
    # the exit's run started the interpreter: both counted, the start within the whole
    assert 0 < sampler["model_start_cpu_s"] <= sampler["model_cpu_s"]
    assert sampler["model_cpu_s"] <= summary["corecast_cpu_s"] + 1e-5


def test_a_target_machine_without_counters_hands_no_window_to_the_model(regions, lib, tmp_path):
    machine = machines.path_of("opteron6380")
    got = summary_of(regions, lib, tmp_path, CORECAST_QUIET="1", CORECAST_TARGET_MACHINE=str(machine),
                     CORECAST_TARGET="64")
    sampler = got["summary"]["sampler"]
    assert sampler["windows"] >= 2
    assert sampler["model_runs"] == 0  # the node predictions are the exit's alone
    assert sampler["model_cpu_s"] > 0
    (region,) = [r for r in events(got["lines"], "region") if not r.get("nested")]
    assert region.get("predicted_nodes"), region  # made once, at exit


def test_the_model_cpu_is_its_start_and_its_prediction(regions, lib, tmp_path):
    # The exit's run both starts the interpreter and predicts: the whole is more than the
    # start (a model_cpu_s that counted the start alone would look so, the same figure twice).
    sampler = summary_of(regions, lib, tmp_path, CORECAST_QUIET="1")["summary"]["sampler"]
    assert 0 < sampler["model_start_cpu_s"] < sampler["model_cpu_s"]


def test_a_model_run_apart_at_an_exit_without_a_sampler_is_in_corecasts_cpu(regions, lib, tmp_path):
    # No sampler (its thread refused, as under RLIMIT_NPROC): the exit runs the model in a
    # task apart, whose CPU is corecast's too.
    summary = summary_of(regions, lib, tmp_path, CORECAST_QUIET="1", CORECAST_TEST_FAULT="no_sampler")["summary"]
    assert summary["model"] == "ok" and summary["sampler"]["model_cpu_s"] > 0
    assert summary["sampler"]["model_cpu_s"] <= summary["corecast_cpu_s"] + 1e-5


def _plan(event_type: int, config: int) -> str:
    from corecast.runtime.numa_events import Event, Plan, encode

    return encode(Plan(source="test", events=[Event("cycles", -1, event_type, config)]))


def test_numa_events_are_opened_once_whatever_the_threads(regions, lib, tmp_path):
    # The summary says how many events were planned and opened: one open per event on the
    # first active thread, inherited by the threads the program starts (issue #40: never
    # one per thread).  A software event (the task clock) opens wherever perf does.
    machine = str(machines.path_of("opteron6380"))
    got = summary_of(regions, lib, tmp_path, CORECAST_QUIET="1", CORECAST_TARGET_MACHINE=machine,
                     CORECAST_NUMA_EVENTS=_plan(1, 1), OMP_NUM_THREADS="4")
    numa = got["summary"]["numa"]
    if numa["events_open"] == 0:
        pytest.skip("perf_event_open refused even a software event here")
    assert (numa["events"], numa["events_open"]) == (1, 1)
    # An event the kernel has no PMU for: planned, not opened, nothing counted.
    (tmp_path / "none").mkdir()
    numa = summary_of(regions, lib, tmp_path / "none", CORECAST_QUIET="1", CORECAST_TARGET_MACHINE=machine,
                      CORECAST_NUMA_EVENTS=_plan(0x7FFFFFF0, 0))["summary"]["numa"]
    assert (numa["events"], numa["events_open"], numa["measured"]) == (1, 0, [])
    # No plan: none.
    (tmp_path / "plain").mkdir()
    numa = summary_of(regions, lib, tmp_path / "plain", CORECAST_QUIET="1")["summary"]["numa"]
    assert (numa["events"], numa["events_open"]) == (0, 0)


def test_the_summary_accounts_for_the_launcher_and_the_exits_wait(regions, tmp_path):
    # `corecast run`'s launcher (an interpreter, its imports, the NUMA plan) runs in the
    # program's process before its image: its CPU is the summary's launcher_cpu_s.  The
    # exiting thread waited for the sampler's prediction: exit_wait_s.
    import sys
    from pathlib import Path

    out = tmp_path / "out.jsonl"
    cli = Path(sys.executable).with_name("corecast")
    r = subprocess.run([str(cli), "run", "--json-out", str(out), "--", str(regions)], env=clean_env(),
                       capture_output=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    (summary,) = events(read_lines(out), "summary")
    assert summary["launcher_cpu_s"] > 0
    assert summary["sampler"]["exit_wait_s"] > 0  # the exit's prediction came from the sampler
