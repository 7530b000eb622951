"""Bands that hold (issue #38): every prediction's band is joined with the empirical one
(model/runtime/spread.py, chosen by benchmarks/bands.py), and a sample that shows nothing
of how work divides (one busy thread) claims no gain."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from corecast.model.runtime import spread
from corecast.model.runtime.bound import TeamPrediction, prediction_counts
from corecast.model.runtime.contention import process_contention
from corecast.model.runtime.predictor import predict_window

from .test_contention import process, region

ROOT = Path(__file__).resolve().parents[2]


def flat(target: int = 16) -> TeamPrediction:
    counts = prediction_counts(target)
    s = [float(n) for n in counts]
    return TeamPrediction(counts, s, list(s), list(s), counts[-1], "test")


def test_the_empirical_band_widens_per_doubling_and_keeps_the_central():
    pred = spread.widen(flat())
    for n, s, lo, hi in zip(pred.threads, pred.speedup, pred.low, pred.high):
        assert s == n  # the central prediction is the model's
        assert lo == pytest.approx(s * math.exp(spread.LOW_PER_DOUBLING * math.log2(n)))
        assert hi == pytest.approx(s * math.exp(spread.HIGH_PER_DOUBLING * math.log2(n)))
    assert pred.low[0] == pred.high[0] == 1.0  # S(1) = 1 exactly
    ratios = [h / lo for h, lo in zip(pred.high, pred.low)]
    assert ratios == sorted(ratios) and ratios[-1] > 1.2  # wider with every doubling


def test_a_wider_model_band_is_kept():
    pred = flat()
    pred.low[-1], pred.high[-1] = 0.1, 100.0
    spread.widen(pred)
    assert (pred.low[-1], pred.high[-1]) == (0.1, 100.0)


def test_disabled_leaves_the_models_band():
    with spread.disabled():
        pred = spread.widen(flat())
    assert pred.low == pred.speedup == pred.high


def test_the_constants_bound_an_over_prediction():
    """The band runs mostly below the central prediction: on the measured curves the model
    over-predicted far more often than it under-predicted."""
    assert spread.LOW_PER_DOUBLING < 0 < spread.HIGH_PER_DOUBLING < -spread.LOW_PER_DOUBLING


def test_one_busy_thread_claims_no_gain():
    """A main thread doing all the work beside an idle helper: no S@N = N, a band up to it."""
    p = process(threads=2, wall=1.0, cpu=1.0)
    p["team_threads"] = 1
    pred = process_contention(p, target=8, cores=8)
    assert pred.speedup == pytest.approx([1.0] * len(pred.threads))
    assert pred.fastest == 1
    assert pred.high[-1] == pytest.approx(8.0)
    assert "no evidence" in pred.basis


# A main thread doing all the work beside helpers that only wait (an MPI library's progress
# thread, a pool that is never fed): the helpers spend microseconds of CPU.
IDLE_HELPERS_C = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int done;
static void *helper(void *a) {
    (void)a;
    pthread_mutex_lock(&m);
    while (!done)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    return 0;
}
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], 0, helper, 0);
    volatile double s = 0;
    for (long i = 0; i < n; i++)
        s += i;
    pthread_mutex_lock(&m);
    done = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], 0);
    printf("%g\n", s);
    return 0;
}
"""


def test_a_live_main_thread_beside_idle_helpers_claims_no_gain(build, lib, tmp_path):
    """What the library measures for one busy thread beside idle helpers reaches the model's
    "no evidence" answer: the library's team rule counted the helpers' microseconds of CPU
    as a team of 4, and the process read as a measured serial fraction (S@8 0.94, band
    0.56-1.17, a confident 'fastest 1')."""
    from .helpers import events, read_lines, run

    exe = build("idle_helpers", IDLE_HELPERS_C, "-pthread")
    out = tmp_path / "idle.jsonl"
    r = run([exe, 100_000_000], preload=lib, output=out, target=8, quiet=0)
    assert r.returncode == 0, r.stderr
    (proc,) = events(read_lines(out), "process")
    assert proc["counters"]["team_threads"] == 1, proc["per_thread"]
    assert "no evidence" in proc["basis"], proc["basis"]
    assert [p["speedup"] for p in proc["predicted"]] == [1] * 8
    assert proc["predicted"][-1]["high"] >= 7.0
    # and names no count: the JSON's null, the table's "?" and a line saying why
    assert proc["fastest_threads"] is None
    report = r.stderr.decode()
    row = next(line for line in report.splitlines() if line.startswith("process (pthreads)"))
    assert row.split()[-2] == "?", row  # the fastest cell, before the bottleneck
    assert "no evidence: the process ran its work one thread at a time" in report, report


def _openmp_window(threads: int, hist=None) -> list[dict]:
    r = region(threads=threads, busy=threads * 1.0, calls=10)
    r["hist"] = hist if hist is not None else [(threads, 10, r["wall_s"])]
    p = process(threads=threads, wall=r["wall_s"] * 1.1, cpu=threads * 1.0)
    p["runtime"] = "openmp"
    return [r, p]


def test_a_region_run_on_one_thread_claims_no_evidence():
    """An OpenMP region whose every call ran on a team of one shows nothing of how its
    work divides: its band and the process's reach down to no gain, and both bases say
    so; the central value stays the model's."""
    for pred in predict_window(_openmp_window(1), 16, 16, 16, {}):
        i = pred.threads.index(16)
        assert pred.low[i] <= 1.0 < pred.speedup[i]
        assert pred.basis.endswith("no evidence at 1 thread")
        assert pred.fastest is None  # a count read off the assumed curve would be 16
        # at every count past one, 2 included: a team of one shows nothing of any team
        assert [n for n, lo in zip(pred.threads, pred.low) if n > 1 and lo > 1.0] == []
        assert pred.threads[0] == 1 and pred.low[0] == pred.speedup[0] == 1.0
    for pred in predict_window(_openmp_window(2), 16, 16, 16, {}):
        i = pred.threads.index(16)
        assert pred.low[i] > 1.0 and "no evidence" not in pred.basis
        assert pred.fastest is not None


def test_one_busy_thread_names_no_fastest_count():
    """The runtime's one predictor names no fastest count for a plain-threads process whose
    work one thread did (its central value, no gain, would read as a confident 'fastest
    1'); with a team it names one."""
    p = process(threads=2, wall=1.0, cpu=1.0)
    p["team_threads"] = 1
    (pred,) = predict_window([p], 8, 8, 8, {})
    assert "no evidence" in pred.basis and pred.fastest is None
    team = process(threads=2, wall=1.0, cpu=1.9)
    (pred,) = predict_window([team], 8, 8, 8, {})
    assert "no evidence" not in pred.basis and pred.fastest is not None


def test_a_region_that_also_ran_with_a_team_has_evidence():
    """Steered or probed down to one thread, a region's history still holds its team."""
    (r, _p) = _openmp_window(1, hist=[(1, 10, 0.5), (4, 30, 0.6)])
    (pred,) = predict_window([r], 16, 16, 16, {})
    assert "no evidence at 1 thread" not in pred.basis


def test_threads_outside_the_list_still_count_as_parallel():
    """Workers that never called a wrapped function are not in the per-thread list (Phoenix
    makes and joins them per phase), but the process's CPU time shows they ran: 3.4 CPU-s
    in 1 s of wall is at least 4 threads at once, not "one thread did the work"."""
    p = process(threads=1, wall=1.0, cpu=3.4)
    pred = process_contention(p, target=16, cores=16)
    assert "no evidence" not in pred.basis
    assert pred.speedup[pred.threads.index(4)] > 3.0
    # CPU time just over the wall time is noise, not a second thread
    one = process_contention(process(threads=1, wall=1.0, cpu=1.04), target=16, cores=16)
    assert "no evidence" in one.basis


def test_the_predictor_puts_the_band_on_every_prediction():
    p = process(threads=4, wall=1.0, cpu=3.6)
    (pred,) = predict_window([p], 16, 16, 16, {})
    i = pred.threads.index(16)
    assert pred.low[i] <= pred.speedup[i] * math.exp(spread.LOW_PER_DOUBLING * 4) * (1 + 1e-9)


def test_the_benchmark_chose_these_constants():
    """spread.py's constants are what benchmarks/bands.py chooses on the measured curves."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bands.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bands  # noqa: E402

    # the shipped constants, or a choice the held-out suites turned down (bands.REJECTED)
    assert result["chosen_on_all"] in [{"lo": spread.LOW_PER_DOUBLING, "hi": spread.HIGH_PER_DOUBLING}, *bands.REJECTED]
    assert result["held_out"]["coverage"] > result["model_band_alone"]["coverage"]


def test_cpu_over_wall_makes_no_team_beyond_the_cpus():
    """A sample whose wall time is cut short (61 us) beside 34 CPU-s: CPU over wall is 552,000,
    which is no team; the rule stops at the CPUs the process ran on (the model's fit over
    that many threads ran for minutes: a Hypothesis case of test_contention)."""
    from corecast.model.runtime.contention import process_team
    p = process(threads=254, wall=6.1e-05, cpu=33.7)
    assert process_team(p, 102) == 254
    assert process_team(process(threads=1, wall=1e-4, cpu=50.0), 16) == 16
    assert process_team(process(threads=1, wall=1e-4, cpu=50.0)) <= 1024


def test_the_benchmark_chose_the_machine_loss_at_the_sampled_count():
    """evidence.py's LOSS_PER_DOUBLING is what benchmarks/work_prior.py chooses, and held
    out it beats no loss on the --probe runs at 16 threads (the case it is for)."""
    from corecast.model.runtime import evidence

    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "work_prior.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import work_prior  # noqa: E402

    # the shipped constant, or a choice the held-out suites turned down (work_prior.REJECTED)
    assert result["chosen_on_all"] in [evidence.LOSS_PER_DOUBLING, *work_prior.REJECTED]
    assert result["held_out"]["probe_16"]["median_log_error"] < result["no_prior"]["probe_16"]["median_log_error"]


def test_the_benchmark_chose_the_barrier_latency_growth():
    """teamcurve's repeated_growth is what benchmarks/barrier_growth.py chooses on the
    development recordings (or a choice it records as turned down), and it keeps the
    guards: scale16 and device16 no worse than the constant latency before it."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "barrier_growth.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import barrier_growth  # noqa: E402

    assert result["in_sample"]["variant"] in [barrier_growth.SHIPPED, *barrier_growth.REJECTED]
    shipped, before = result["variants"][barrier_growth.SHIPPED], result["variants"]["before"]
    for guard in barrier_growth.GUARDS:
        assert shipped["guards"][guard]["median_log_error"] <= before["guards"][guard]["median_log_error"]


def test_no_recorded_signal_predicts_the_inflation_at_the_sampled_count():
    """benchmarks/inflation_signals.py (#38): on the development recordings no signal a
    recording holds corrects T(1) better held out than none, and the model applies none."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "inflation_signals.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["chosen"] == "none"
    assert result["recordings"] >= 100 and not {"gapbs", "kastors", "phoenix"} & set(result["suites"])


def test_inflation_signals_chooses_a_signal_that_predicts_the_error():
    """The selection can say yes: a signal that sets at_n0 across suites is found, fitted
    on the other suites, and chosen over no correction and a constant one."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import inflation_signals as inf  # noqa: E402

    rows = [{"suite": f"s{k % 4}", "x": 0.1 * k, "at_n0": 0.03 * k, "signed": 0.03 * k + 0.01}
            for k in range(16)]
    candidates = {"linear x": inf.loso_linear(rows, "x")}
    assert candidates["linear x"]["median_at_n0"] < 1e-9
    none = inf.score([(r, 0.0) for r in rows])
    constant = inf.score([(r, 0.2) for r in rows])
    assert inf.choose(candidates, (none, constant)) == "linear x"
    assert inf.choose({"linear x": none}, (none, constant)) == "none"


def synthetic_rows() -> list[dict]:
    """Points at 16 threads in two suites whose misses the model's bottleneck tells apart:
    10 imbalance-bound predictions in each miss by up to e^(+-0.4 x 4), 20 others by
    e^(+-0.02 x 4)."""
    rows = []
    for suite in ("a", "b"):
        for bottleneck, spread_z, count in (("imbalance", 0.4, 10), ("serial", 0.02, 20)):
            for k in range(count):
                z = spread_z * (2 * k / (count - 1) - 1)
                rows.append({"suite": suite, "program": f"{suite}{k}", "dir": "d", "n": 16, "n0": 2,
                             "bottleneck": bottleneck, "predicted": 8.0, "measured": 8.0 * math.exp(4 * z),
                             "low": 8.0, "high": 8.0, "z": z})
    return rows


def bands_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bands  # noqa: E402

    return bands


def test_a_band_by_the_bottleneck_narrows_where_the_model_predicts_well():
    """benchmarks/bands.py's class-conditional band (Mondrian conformal): each class's
    percentiles apart, so the predictions whose misses are small get a narrow band and the
    others a wide one; held out (one suite chosen on the other) it is narrower than the single
    band in median and scores better, both holding at least 80%."""
    bands = bands_module()
    rows = synthetic_rows()
    table = bands.choose_table(rows, "bottleneck")
    (i_lo, i_hi), (o_lo, o_hi), (a_lo, a_hi) = table["imbalance"], table["other"], table["all"]
    assert i_lo < a_lo < o_lo < 0 < o_hi < a_hi < i_hi
    assert o_hi - o_lo < 0.1 * (i_hi - i_lo)
    narrow, wide = bands.banded([r for r in rows if r["bottleneck"] == "serial"][:1], table, "bottleneck"), \
        bands.banded([r for r in rows if r["bottleneck"] == "imbalance"][:1], table, "bottleneck")
    assert narrow[0]["high"] / narrow[0]["low"] < 1.5 < 5 < wide[0]["high"] / wide[0]["low"]
    single, by_class = bands.scheme_scores(rows, "single"), bands.scheme_scores(rows, "bottleneck")
    assert by_class["held_out"]["coverage"] >= 0.8 and single["held_out"]["coverage"] >= 0.8
    assert by_class["held_out"]["median_high_over_low"] < single["held_out"]["median_high_over_low"]
    assert by_class["held_out"]["interval_score"] < single["held_out"]["interval_score"]


def test_a_scheme_keeps_the_models_wider_band_and_a_class_it_never_saw_gets_the_pooled_one():
    bands = bands_module()
    row = {**synthetic_rows()[0], "low": 0.5, "high": 100.0, "bottleneck": "critical"}
    table = {"all": (-0.1, 0.05), "imbalance": (-0.5, 0.1)}
    (out,) = bands.banded([row], table, "bottleneck")
    assert (out["low"], out["high"]) == (0.5, 100.0)
    (out,) = bands.banded([{**row, "low": 8.0, "high": 8.0}], table, "bottleneck")
    assert out["low"] == pytest.approx(8.0 * math.exp(-0.4)) and out["high"] == pytest.approx(8.0 * math.exp(0.2))


def test_the_evidence_dependent_bands_are_scored_and_the_one_turned_down_is_recorded():
    """bands.py scores each scheme leave one suite out and in sample; the class table it
    chooses on the development suites is the one the held-out suites turned down
    (REJECTED_SCHEMES: spread.py keeps the single band), and --apply scores that table beside
    spread.py's."""
    bands = bands_module()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bands.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    schemes = json.loads(proc.stdout)["schemes"]
    assert set(schemes) == set(bands.SCHEMES)
    chosen = schemes["bottleneck"]["chosen_on_all"]
    assert {k: tuple(chosen[k]) for k in ("imbalance", "other")} == bands.REJECTED_SCHEMES["bottleneck"]
    assert not hasattr(spread, "evidence_class")  # no class in the runtime's band
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bands.py"), "--apply", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    applied = json.loads(proc.stdout)
    assert applied["turned_down"]["bottleneck"]["applied"]["points"] == applied["score"]["points"]


def test_the_waits_band_widens_the_high_end_with_the_extrapolated_waits():
    """benchmarks/bands.py's ``waits_high`` (session bands38): the low end is the single
    band's, the high end S e^(hi log2 n (a + w)); on points whose under-predictions grow with
    the waits share w it chooses a narrow high end where w is 0 and a wide one where it is 1."""
    bands = bands_module()
    rows = []
    for suite in ("a", "b"):
        for w in (0.0, 1.0):
            for k in range(20):
                z = 0.05 * (2 * k / 19 - 1) * (0.1 + w)  # the spread of ln(measured / predicted) per doubling
                rows.append({"suite": suite, "program": f"{suite}{k}", "n": 16, "n0": 2, "waits": w,
                             "predicted": 8.0, "measured": 8.0 * math.exp(4 * z), "low": 8.0, "high": 8.0})
    lo, hi, a = bands.choose_waits(rows)
    assert lo < 0 < hi and a in bands.WAITS_SHAPES
    calm, busy = bands.waits_band([rows[0], rows[20]], lo, hi, a)
    assert calm["low"] == pytest.approx(busy["low"])  # the low end does not look at w
    assert calm["high"] < busy["high"]
    assert calm["high"] == pytest.approx(8.0 * math.exp(hi * 4 * a))
    scored = bands.waits_scores(rows)
    assert scored["held_out"]["points"] == len(rows) and set(scored["per_fold"]) == {"a", "b"}


def test_the_waits_band_turned_down_is_what_the_benchmark_chooses_and_is_not_in_the_runtime():
    """On the development suites bands.py chooses bands.WAITS_CHOSEN, the constants the
    held-out suites turned down (docs/runtime-model.md, session bands38): spread.py keeps its
    single band."""
    bands = bands_module()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bands.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert tuple(json.loads(proc.stdout)["waits_high"]["chosen_on_all"]) == bands.WAITS_CHOSEN
    assert not hasattr(spread, "waits_share")
