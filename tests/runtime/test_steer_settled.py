"""Steering's end (issue #40): once every region that steering can move has settled, a
window needs no model run (native/steer_start.c, cc_steering_settled): the model's answer
is each settled count, for ever.  A region the model has not answered yet still reaches it.
The C tests script the model's answers, so the number of model runs does not depend on the
machine's speed or load; the Python test checks that the exit's prediction is the same
whether the settled windows ran the model or not."""
from __future__ import annotations

import math

import pytest

from corecast.model.runtime.predictor import predict_window

from .helpers import FAKE_MODEL_PRELUDE_C, NATIVE_SOURCE, beside_model, clean_env, events, read_lines, run
from .steer_sim import SimRegion

# Every region the model is shown settles at its first answer on 1 thread, as the real
# model answers a settled region; one it never steers (nested, asked for one thread) gets
# no count, as runtime/bridge.py's _steer leaves it, and so does one of fewer than 2 calls
# (the real model's "not measured yet": history.MIN_CALLS).
SETTLING_MODEL_C = FAKE_MODEL_PRELUDE_C + r"""
int corecast_model_predict(const struct cc_sample *s, struct cc_result *r) {
    r->status = 0;
    for (int i = 0; i < s->nregions; i++) {
        const struct cc_region_sample *g = &s->regions[i];
        struct cc_region_prediction *p = &r->regions[i];
        one_count(p, "settling model");
        if (i < s->nregions - 1 && !g->nested && g->requested >= 2 && g->calls >= 2) /* the process is last */
            p->next_threads = p->steer_chosen = 1;
    }
    return 0;
}
"""

# A region runs once at the start (an initialisation, as NPB's), then phase 1 runs region A
# (a critical-section convoy the C side lets start the model) for ``phase_s`` seconds of
# wall time, phase 2 region B, new, as long; with argv[2] = 1 a region asked for one thread
# runs beside them in every window.  Time-based phases: the windows after the model's first
# answer are many on any machine (50 ms windows).
PHASES = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static long region_a(int c) {
    long s = 0;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 1000; i++) {
#pragma omp critical
        s += (i ^ c) & 7;
    }
    return s;
}
static long region_b(int c) {
    long s = 0;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < 1000; i++) {
#pragma omp critical
        s += (i ^ c) & 3;
    }
    return s;
}
static long alone(int c) {
    long s = 0;
#pragma omp parallel num_threads(1)
    s += c & 5;
    return s;
}
static long init_once(void) {
    long s = 0;
#pragma omp parallel reduction(+ : s)
    s += omp_get_thread_num() >= 0;
    return s;
}
int main(int argc, char **argv) {
    double phase_s = atof(argv[1]);
    int with_alone = atoi(argv[2]);
    long a = init_once() > 0, b = 0;
    for (double end = now() + phase_s; now() < end;)
        for (int c = 0; c < 20; c++)
            a += region_a(c) + (with_alone ? alone(c) : 0);
    for (double end = now() + phase_s; now() < end;)
        for (int c = 0; c < 20; c++)
            b += region_b(c) + (with_alone ? alone(c) : 0);
    printf("%ld %ld\n", a > 0, b > 0);
    return 0;
}
"""


@pytest.mark.parametrize("with_alone", [0, 1])
def test_settled_regions_take_no_model_run_and_a_new_region_does(build, lib, tmp_path, with_alone):
    prog = build("steer_phases", PHASES, "-fopenmp")
    model = build("settling_model.so", SETTLING_MODEL_C, "-shared", "-fPIC", f"-I{NATIVE_SOURCE}")
    preload = beside_model(lib, model, tmp_path / "settling")
    out = tmp_path / "cc.jsonl"
    proc = run([prog, "0.6", with_alone], env=clean_env(OMP_NUM_THREADS="2"), preload=preload, output=out,
               steer="1", window_ms="50", quiet="1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"1 1\n"
    lines = read_lines(out)
    (summary,) = events(lines, "summary")
    sampler = summary["sampler"]
    regions = {r["name"]: r for r in events(lines, "region")}
    (a,) = [r for n, r in regions.items() if "region_a" in n]
    (b,) = [r for n, r in regions.items() if "region_b" in n]
    # A's first answer settled it (the region of one thread is never steered, and the one run
    # once is "not measured yet" until it runs again): no more runs until B came, whose first
    # window went to the model (B then ran at 1 thread), and none after.  Before, every
    # window after the model's start ran it: some 20 or more.
    assert sampler["model_started_s"] is not None
    assert 1 <= sampler["model_runs"] <= 2, sampler
    assert sampler["settled_windows"] >= 4, sampler  # 1.2 s of 50 ms windows, less the few before
    assert {t["threads"] for t in b["by_team"] if t["calls"]} >= {1}, b["by_team"]
    assert a["steering"]["chosen"] == b["steering"]["chosen"] == 1
    (once,) = [r for n, r in regions.items() if "init_once" in n]
    assert once["calls"] == 1 and once["steering"]["chosen"] is None
    if with_alone:
        (alone,) = [r for n, r in regions.items() if "alone" in n]
        assert {t["threads"] for t in alone["by_team"]} == {1}


def _exit_prediction(sim: SimRegion) -> tuple:
    """The exit's prediction of ``sim``'s region from its history (final=True), with its
    steering's chosen count and gain, as runtime/bridge.py reads them."""
    region = sim.record()
    (pred,) = predict_window([region], sim.own, sim.own, sim.own, sim.histories, final=True)
    history = sim.histories[("main._omp_fn.0", "sim")]
    return pred, sim.steer.chosen(), sim.steer.gain(history)


def test_the_exit_prediction_is_the_same_without_the_settled_windows_model_runs():
    # Two identical convoys steered until settled; then one runs 30 windows through the
    # model (as before) and the other the same windows with no model run (as the sampler
    # now does), and both exits predict: the histories read cumulative counts, so the
    # prediction, the chosen count and its gain agree.
    def convoy() -> SimRegion:
        return SimRegion(2, lambda k: 1e-3 * k, lambda k: 0.6 if k > 1 else 0.0, window_s=0.05)

    ran, skipped = convoy(), convoy()
    for sim in (ran, skipped):
        for _ in range(40):
            if sim.steer.chosen() is not None:
                break
            sim.window()
        assert sim.steer.chosen() == 1
    ran.run(30)
    for _ in range(30):  # the same windows, the model not run: only the counts grow
        team, span = skipped.team, skipped.window_s
        calls = int(skipped.in_flight + skipped.busy * span / skipped.per_call(team))
        skipped.in_flight = skipped.in_flight + skipped.busy * span / skipped.per_call(team) - calls
        entry = skipped.hist.setdefault(team, [0, 0.0])
        entry[0] += calls
        entry[1] += calls * skipped.per_call(team)
        skipped.stalls += skipped.stall_share(team) * team * calls * skipped.per_call(team)
        skipped.elapsed += span
        skipped.teams.append(team)
    assert ran.hist == skipped.hist and ran.teams == skipped.teams
    (p1, chosen1, gain1), (p2, chosen2, gain2) = _exit_prediction(ran), _exit_prediction(skipped)
    assert chosen1 == chosen2 == 1 and math.isclose(gain1, gain2, rel_tol=1e-12)
    assert p1.threads == p2.threads and p1.fastest == p2.fastest and p1.basis == p2.basis
    for x, y in ((p1.speedup, p2.speedup), (p1.low, p2.low), (p1.high, p2.high)):
        assert all(math.isclose(u, v, rel_tol=1e-9) for u, v in zip(x, y)), (x, y)


def test_a_region_of_one_call_is_not_measured_yet_however_long_the_run():
    # native/steer_start.c skips the model for a region of fewer than 2 calls: the real
    # model's answer for it is its own count, with no state changed, at any elapsed time.
    from corecast.model.runtime.steering import RegionSteer
    from corecast.recording.record import region_from_json

    region = region_from_json({
        "name": "init._omp_fn.0", "object": "sim", "runtime": "openmp", "threads": 4, "calls": 1, "wall_s": 0.02,
        "requested": 4, "stalls_s": {"imbalance": 0.05},
        "counters": {"busy_s": 0.03, "serial_s": 0.0, "acquisitions": {}},
        "by_team": [{"threads": 4, "calls": 1, "wall_s": 0.02}],
    })
    histories: dict = {}
    steer = RegionSteer(4)
    for window in range(1, 2000, 37):
        (pred,) = predict_window([region], 4, 4, 4, histories, final=False)
        history = histories[("init._omp_fn.0", "sim")]
        assert steer.step(history, region, pred, 0.2 * window, 0.2) == 4
        assert steer.chosen() is None and steer.steps == 0 and steer.tuner is None
        assert steer.reason == "not measured yet"
