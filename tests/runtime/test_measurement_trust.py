"""What the measurements can be trusted for: corecast's own CPU time reported apart from
the program's, run-queue wait caused by other load ("machine busy") kept out of the
program's contention, and predictions said to be for a machine of the target's cores."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from corecast.recording.abi import THREAD_STALLS
from corecast.model.runtime.contention import process_contention, region_contention

from .helpers import NATIVE_SOURCE, TIMEOUT, clean_env, corecast_run, events, read_lines

# One worker with a fixed amount of CPU work; main waits for it.
WORKER_C = r"""
#include <pthread.h>
#include <stdio.h>
static volatile unsigned long sink;
static void *work(void *a) {
    unsigned long x = 1;
    for (long i = 0; i < 300000000L; i++) x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
    return a;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, work, 0);
    pthread_join(t, 0);
    printf("done\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def worker(build):
    return build("one_worker", WORKER_C, "-pthread")


def run_with_rusage(cmd, env):
    """Runs ``cmd``; returns (exit status, stderr, CPU seconds the process used)."""
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen([str(c) for c in cmd], env=env, stdout=null, stderr=subprocess.PIPE)
        err = p.stderr.read()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, err, ru.ru_utime + ru.ru_stime


def test_own_cpu_apart_from_the_programs(worker, lib, tmp_path):
    out = tmp_path / "out.jsonl"
    env = clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out))
    rc, err, total = run_with_rusage([worker], env)
    assert rc == 0
    lines = read_lines(out)
    (summary,) = events(lines, "summary")
    (process,) = events(lines, "process")
    own = summary["corecast_cpu_s"]
    assert own > 0  # the model ran at least at exit
    assert b"corecast: own CPU " in err and b"not counted as the program's" in err
    # The program's CPU time leaves corecast's out: together they are at most the total.
    assert process["counters"]["cpu_s"] + own <= total + 0.01
    assert process["counters"]["cpu_s"] > 0


def allowed_cpu() -> int:
    return min(os.sched_getaffinity(0))


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset is not installed")
def test_competing_load_on_the_same_cpu_is_machine_busy(worker, lib, tmp_path):
    cpu = str(allowed_cpu())
    hog = subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)  # the competitor is running
        out = tmp_path / "out.jsonl"
        proc = subprocess.run(["taskset", "-c", cpu, str(worker)],
                              env=clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out)),
                              capture_output=True, timeout=TIMEOUT)
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 0 and proc.stdout == b"done\n"
    lines = read_lines(out)
    (summary,) = events(lines, "summary")
    (process,) = events(lines, "process")
    assert summary["cpus_allowed"] == 1
    assert summary["machine_busy"] is True, summary["runqueue"]
    assert b"corecast: machine busy" in proc.stderr
    rq = summary["runqueue"]
    assert rq["other_load_share"] > 0.10
    # Other load's wait is not the program's contention: the process's runqueue stall is
    # what is left of the wait.
    other = process["counters"]["runqueue_other_load_s"]
    assert other == pytest.approx(rq["other_load_s"], rel=1e-3, abs=1e-6)
    assert process["stalls_s"]["runqueue"] == pytest.approx(rq["wait_s"] - other, rel=1e-3, abs=1e-5)
    assert process["stalls_s"]["runqueue"] < other


BUSY_SHARE = 0.10  # native/report.h CC_BUSY_SHARE


def test_machine_busy_is_said_exactly_when_other_load_took_its_share(worker, lib, tmp_path):
    """Alone (nothing else waiting for this CPU), the program is not "machine busy"; on a
    loaded machine it is exactly when other load held the CPUs for more than BUSY_SHARE of
    its runnable time, in the JSON and the table alike.  It skipped on a busy machine
    before, which this 2-core VM always is, so a rule that called every run busy passed."""
    out = tmp_path / "out.jsonl"
    proc = subprocess.run([str(worker)], env=clean_env(LD_PRELOAD=str(lib), CORECAST_OUTPUT=str(out)),
                          capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0
    (summary,) = events(read_lines(out), "summary")
    rq = summary["runqueue"]
    busy = rq["other_load_share"] > BUSY_SHARE
    assert summary["machine_busy"] is busy, rq
    assert (b"corecast: machine busy" in proc.stderr) is busy
    if rq["share"] < 0.05:  # hardly a wait for a CPU at all: alone
        assert not busy


BUSY_RULE_C = r"""
#include <stdio.h>
#include "report.h"
int main(void) {
    /* runnable s, other load's s: at the line and either side of it, and nothing runnable */
    double cases[][2] = {{1.0, 0.0}, {1.0, 0.05}, {1.0, 0.1}, {1.0, 0.11}, {2.0, 1.0}, {0.0, 0.0}};
    for (int i = 0; i < 6; i++) {
        struct cc_load l = {cases[i][0], cases[i][1], cases[i][1], 1};
        printf("%d", cc_machine_busy(&l));
    }
    return 0;
}
"""


def test_the_busy_rule_is_more_than_a_tenth_of_the_runnable_time(build):
    # The rule on its own, whatever load this machine has: a run's share of other load
    # lands where it will, and the runs above meet the line only by chance.
    prog = build("busy_rule", BUSY_RULE_C, f"-I{NATIVE_SOURCE}")
    assert subprocess.run([str(prog)], capture_output=True, timeout=TIMEOUT).stdout == b"000110"


# ---- which machine the predictions are for ------------------------------------------------
def test_target_beyond_this_machine_predicts_for_a_target_core_machine(worker, lib, tmp_path):
    out = tmp_path / "out.jsonl"
    proc = corecast_run(["--target", "64", "--json-out", str(out)], [worker])
    assert proc.returncode == 0
    lines = read_lines(out)
    (summary,) = events(lines, "summary")
    assert summary["predicted_for"] == {"cores": 64, "source": "target"}
    assert b"predicted speedup up to 64 threads on a 64-core machine (target)" in proc.stderr
    (process,) = events(lines, "process")
    assert process["future_bottleneck"] != "runqueue"  # no oversubscription on that machine


def test_target_machine_names_the_cores(worker, lib, tmp_path):
    out = tmp_path / "out.jsonl"
    proc = corecast_run(["--target-machine", "two-socket", "--json-out", str(out)], [worker])
    assert proc.returncode == 0, proc.stderr
    (summary,) = events(read_lines(out), "summary")
    assert summary["target"] == 32  # the machine's cores, unless --target says otherwise
    assert summary["predicted_for"]["cores"] == 32
    assert summary["predicted_for"]["source"].startswith("target machine ")


def _region(threads=4, busy=4.0):
    stalls = dict.fromkeys(THREAD_STALLS, 0.0)
    return {"name": "r", "object": "x", "runtime": "openmp", "threads": threads, "nested": False,
            "calls": 1, "wall_s": busy / threads, "busy_s": busy, "serial_s": 0.0, "stalls_s": stalls,
            "acquisitions": {}, "contended": {}, "loop_calls": 0}


def test_models_measured_on_few_cores_predict_for_many():
    """Measured on 2 CPUs, predicted for 64 cores: linear, no oversubscription; the
    measuring machine's 4 threads on 2 CPUs are still deflated."""
    r = _region(threads=4, busy=8.0)  # each thread's span twice its CPU work
    pred = region_contention(r, target=64, cores=2, target_cores=64)
    assert pred.speedup == pytest.approx(list(range(1, 65)))
    assert pred.bottleneck is None and "cpu_share" in pred.fitted
    p = {"name": "process", "object": "x", "runtime": "pthreads", "threads": 2, "nested": False,
         "calls": 1, "wall_s": 1.0, "busy_s": 2.0, "cpu_s": 2.0, "serial_s": 0.0,
         "stalls_s": _region()["stalls_s"], "acquisitions": {}, "contended": {}}
    many = process_contention(p, target=64, cores=2, target_cores=64)
    assert many.speedup[-1] == pytest.approx(64, rel=1e-6)
    oversubscribed = process_contention(p, target=64, cores=2)
    assert oversubscribed.speedup[-1] == pytest.approx(2, rel=1e-6)
