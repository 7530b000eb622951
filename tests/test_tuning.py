"""Online thread-count selection: OPreSca, Binsearch, simulate and ``corecast tune-sim``."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from corecast.model.curve import smallfit
from corecast.cli import main
from corecast.model.tuning.tuners import Binsearch, OPreSca
from corecast.model.tuning.tunesim import simulate

from cli_checks import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(__file__).resolve().parent / "data" / "curves"  # copies of ../shared/datasets/*.csv


def usl(n, alpha, beta, scale=1000.0):
    n = np.asarray(n, dtype=float)
    return scale * n / (1 + alpha * (n - 1) + beta * n * (n - 1))


def drive(tuner, curve, max_steps=40):
    """Run the tuner against curve (dict count -> perf) until it converges; the counts tried."""
    tried = []
    for _ in range(max_steps):
        if tuner.converged:
            break
        c = tuner.next_count()
        tried.append(c)
        tuner.observe(c, curve[c])
    return tried


# ---------------------------------------------------------------- OPreSca


@pytest.mark.parametrize(
    "top, alpha, beta",
    [
        (48, 0.05, 0.002),  # peak near 22, inside the range
        (64, 0.02, 0.0005),  # peak near 44
        (32, 0.30, 0.01),  # early peak near 8
    ],
)
def test_opresca_finds_an_inner_peak_in_a_few_steps(top, alpha, beta):
    counts = np.arange(1, top + 1)
    curve = dict(zip(counts.tolist(), usl(counts, alpha, beta)))
    best = max(curve, key=curve.get)
    assert 1 < best < top
    t = OPreSca(counts)
    tried = drive(t, curve)
    assert t.converged
    assert len(tried) <= 9
    assert 1 - curve[t.best] / curve[best] < 0.02
    assert t.best in t.history


@pytest.mark.parametrize("top", [16, 32, 64])
def test_opresca_finds_a_peak_at_the_edge(top):
    counts = np.arange(1, top + 1)
    curve = dict(zip(counts.tolist(), usl(counts, 0.03, 0.0)))  # Amdahl: best at the top
    t = OPreSca(counts)
    tried = drive(t, curve)
    assert t.converged and len(tried) <= 6
    assert 1 - curve[t.best] / curve[top] < 0.01


def test_opresca_finds_a_peak_at_the_low_edge():
    counts = list(range(1, 33))
    curve = {c: 100.0 / c**0.5 for c in counts}  # more threads only hurt
    t = OPreSca(counts)
    drive(t, curve)
    assert t.converged and t.best <= 2


def test_default_seeds_are_the_quartiles_snapped_to_the_candidates():
    assert OPreSca(range(1, 65)).default_seeds() == [16, 32, 48]
    assert OPreSca([1, 2, 4, 8, 16, 24, 32]).default_seeds() == [8, 16, 24]
    t = OPreSca(range(1, 49))
    seen = []
    for _ in range(3):
        seen.append(t.next_count())
        t.observe(seen[-1], 1.0 + len(seen))
    assert seen == [12, 24, 36]


def test_explicit_and_random_seeds():
    t = OPreSca(range(1, 33), seeds=[3, 30, 7])
    seen = []
    for _ in range(3):
        seen.append(t.next_count())
        t.observe(seen[-1], float(seen[-1]))
    assert seen == [3, 30, 7]

    def first3(rng_seed):
        t = OPreSca(range(1, 101), seeds=(), rng_seed=rng_seed)
        out = []
        for _ in range(3):
            out.append(t.next_count())
            t.observe(out[-1], 1.0)
        return out

    a = first3(1)
    assert a == first3(1) and len(set(a)) == 3  # reproducible, never repeats a count
    assert any(first3(s) != a for s in range(2, 6))


def test_converged_tuner_stops_moving():
    counts = list(range(1, 41))
    curve = dict(zip(counts, usl(counts, 0.04, 0.003)))
    t = OPreSca(counts)
    drive(t, curve)
    assert t.converged
    chosen = t.best
    for wobble in (1.0, 1.05, 0.95, 1.1, 0.9):  # noise below the change threshold
        assert t.next_count() == chosen
        t.observe(chosen, curve[chosen] * wobble)
        assert t.converged and t.best == chosen
    assert t.restarts == 0


def test_workload_change_restarts_the_search():
    counts = list(range(1, 49))
    before = dict(zip(counts, usl(counts, 0.02, 0.0001)))  # best at 48
    after = dict(zip(counts, usl(counts, 0.1, 0.01, scale=600.0)))  # best near 9
    t = OPreSca(counts, change_threshold=0.15)
    drive(t, before)
    old = t.best
    assert t.converged and old >= 40
    t.observe(old, after[old])  # the stable count now performs very differently
    assert not t.converged
    assert t.restarts == 1
    assert t.history == {old: pytest.approx(after[old])}  # only the revealing measurement
    drive(t, after)
    assert t.converged
    assert 1 - after[t.best] / max(after.values()) < 0.03


def test_history_keeps_a_running_median():
    t = OPreSca(range(1, 9))
    for v in (10.0, 100.0, 12.0):
        t.observe(4, v)
    assert t.history[4] == 12.0


def test_failed_fits_never_raise(monkeypatch):
    counts = list(range(1, 25))
    monkeypatch.setattr(smallfit, "rational", lambda *a, **k: None)
    monkeypatch.setattr(smallfit, "polynomial", lambda *a, **k: None)
    t = OPreSca(counts)
    curve = dict(zip(counts, usl(counts, 0.05, 0.002)))
    tried = drive(t, curve)
    assert t.converged  # bisection fallback inside the bracket
    assert len(tried) < len(counts)
    assert 1 - curve[t.best] / max(curve.values()) < 0.05


@pytest.mark.parametrize(
    "values",
    [
        lambda c: 5.0,  # flat
        lambda c: 0.0 if c % 3 == 0 else 1e6,  # zeros and spikes
        lambda c: 1e-300 * c,  # tiny
        lambda c: float(c % 7 + 1) ** 9,  # wild
    ],
)
def test_pathological_curves_converge_without_errors(values):
    counts = list(range(1, 33))
    t = OPreSca(counts)
    tried = drive(t, {c: values(c) for c in counts}, max_steps=len(counts) + 2)
    assert t.converged
    assert len(tried) <= len(counts)


def test_observe_rejects_non_numbers():
    t = OPreSca(range(1, 9))
    with pytest.raises(ValueError):
        t.observe(2, float("nan"))
    with pytest.raises(ValueError):
        t.observe(2, -1.0)


def test_tiny_candidate_sets():
    t = OPreSca([4])
    assert t.next_count() == 4
    t.observe(4, 1.0)
    assert t.converged and t.best == 4
    t = OPreSca([2, 8])
    drive(t, {2: 1.0, 8: 3.0})
    assert t.converged and t.best == 8


# ---------------------------------------------------------------- Binsearch


def test_binsearch_grows_by_a_doubling_increment_then_bisects():
    counts = list(range(1, 65))
    curve = dict(zip(counts, usl(counts, 0.03, 0.0008)))  # unimodal, peak near 35
    peak = max(curve, key=curve.get)
    t = Binsearch(counts)
    tried = drive(t, curve)
    assert tried[:5] == [1, 5, 13, 29, 61]  # 61 is already past the peak: performance drops
    assert t.converged and t.best == peak  # the bracket closes on the exact peak
    assert all(29 < c < 61 for c in tried[5:])  # phase 2 stays inside the bracket


def test_binsearch_snaps_to_the_candidates_and_stops_at_the_top():
    counts = [1, 2, 4, 8, 12, 16, 24, 32]
    curve = {c: float(c) for c in counts}  # best at the top
    t = Binsearch(counts)
    tried = drive(t, curve)
    assert tried == [1, 4, 12, 32, 24]  # 1, 5->4, 13->12, 29->32 (nearest above 12), bracket (24, 32)
    assert t.best == 32


def test_binsearch_restarts_on_a_workload_change():
    counts = list(range(1, 33))
    t = Binsearch(counts)
    drive(t, dict(zip(counts, usl(counts, 0.0, 0.0))))
    assert t.converged and t.best == 32
    t.observe(32, 1.0)
    assert not t.converged and t.next_count() == 1


# ---------------------------------------------------------------- simulate


class Scripted:
    """A tuner that tries a fixed list of counts, then converges on the last one."""

    def __init__(self, path):
        self.path = list(path)
        self.i = 0
        self.seen = []

    @property
    def converged(self):
        return self.i >= len(self.path)

    def next_count(self):
        return self.path[min(self.i, len(self.path) - 1)]

    def observe(self, count, perf):
        self.seen.append((count, perf))
        self.i += 1

    @property
    def best(self):
        return self.path[-1]


def test_simulate_numbers_on_a_hand_made_curve():
    counts, perf = [1, 2, 3, 4], [1.0, 2.0, 4.0, 3.0]
    r = simulate(Scripted([1, 4, 3]), counts, perf)
    # losses 0.75, 0.25, 0, then the convergence interval at 3: 0
    assert r == {"steps": 4, "chosen": 3, "final_loss": 0.0, "sum_loss": pytest.approx(1.0)}

    r = simulate(Binsearch(counts), counts, perf)
    # 1 (0.75), 5->4 (0.25), no drop and top reached; bisect (1, 4): 2 (0.5), then 3 (0);
    # bracket (2, 4) closed: converged on 3, and one interval there (0).
    assert r == {"steps": 5, "chosen": 3, "final_loss": 0.0, "sum_loss": pytest.approx(1.5)}


def test_simulate_time_data_and_noise():
    counts, time = [1, 2, 4], np.array([4.0, 1.0, 2.0])
    r = simulate(Scripted([2]), counts, 1.0 / time)
    assert r["chosen"] == 2 and r["final_loss"] == 0.0 and r["steps"] == 2

    tuner = Scripted([1, 2, 4, 2])
    simulate(tuner, counts, [1.0, 2.0, 4.0], noise=0.1, rng_seed=5)
    observed = [p for _, p in tuner.seen]
    assert observed != [1.0, 2.0, 4.0, 2.0]  # noisy
    again = Scripted([1, 2, 4, 2])
    simulate(again, counts, [1.0, 2.0, 4.0], noise=0.1, rng_seed=5)
    assert [p for _, p in again.seen] == observed  # and reproducible


def test_simulate_stops_at_max_steps_and_rejects_foreign_counts():
    r = simulate(Scripted(list(range(1, 11))), list(range(1, 11)), np.ones(10), max_steps=4)
    assert r["steps"] == 4
    with pytest.raises(ValueError):
        simulate(Scripted([7]), [1, 2, 3], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        simulate(Scripted([1]), [1, 2, 3], [1.0, 2.0, 3.0], noise=-0.1)


# ---------------------------------------------------------------- benchmark claim


def _bench():
    spec = importlib.util.spec_from_file_location("tuning_bench", ROOT / "benchmarks" / "tuning.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tuning_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_paper_figures_on_the_shared_curves():
    """The paper's headline, noise-free: < 7 steps, < 3% final loss, >= 2x cheaper than Binsearch."""
    bench = _bench()
    curves = bench.load_curves(DATASETS)
    assert len(curves) >= 10
    avg = bench.averages(bench.evaluate(curves, 0.0, 1))
    o, b = avg["opresca"], avg["binsearch"]
    assert o["steps"] < 7
    assert o["final_loss"] < 0.03
    assert b["sum_loss"] / o["sum_loss"] >= 2.0


# ---------------------------------------------------------------- CLI


@pytest.fixture
def curve_csv(tmp_path) -> str:
    path = tmp_path / "curve.csv"
    counts = list(range(1, 33))
    path.write_text("threads,throughput\n" + "".join(f"{n},{v}\n" for n, v in zip(counts, usl(counts, 0.03, 0.001))))
    return str(path)


def test_tune_sim_json_contract(capsys, curve_csv):
    assert main(["tune-sim", curve_csv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    doc = json.loads(out)
    assert set(doc) == {"opresca", "binsearch", "input"}
    for r in (doc["opresca"], doc["binsearch"]):
        assert set(r) == {"steps", "chosen", "final_loss", "sum_loss", "counts_tried"}
        assert isinstance(r["steps"], int) and isinstance(r["chosen"], int)
        # the text's last column: one count per step, the chosen one last
        assert len(r["counts_tried"]) == r["steps"] and r["counts_tried"][-1] == r["chosen"]
        assert isinstance(r["final_loss"], float) and isinstance(r["sum_loss"], float)
        assert 0 <= r["final_loss"] <= 1 and r["sum_loss"] >= r["final_loss"]
        assert 1 <= r["chosen"] <= 32
    counts = list(range(1, 33))
    trace: list = []
    expect = simulate(OPreSca(counts), counts, usl(counts, 0.03, 0.001), trace=trace)
    assert {k: v for k, v in doc["opresca"].items() if k != "counts_tried"} == pytest.approx(expect)
    assert doc["opresca"]["counts_tried"] == [c for c, _, _ in trace]


def test_tune_sim_noise_seed_and_table(capsys, curve_csv, tmp_path):
    assert main(["tune-sim", curve_csv, "--json", "--noise", "0.05", "--seed", "3"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["tune-sim", curve_csv, "--json", "--noise", "0.05", "--seed", "3"]) == 0
    assert json.loads(capsys.readouterr().out) == a
    assert main(["tune-sim", curve_csv]) == 0
    out = capsys.readouterr().out
    assert "OPreSca" in out and "Binsearch" in out
    timefile = tmp_path / "t.csv"
    timefile.write_text("# metric: time\nthreads,value\n1,8\n2,4.5\n4,3\n8,3.5\n")
    assert main(["tune-sim", str(timefile), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["opresca"]["chosen"] == 4 and doc["binsearch"]["chosen"] == 4


def test_tune_sim_table_gives_both_losses_in_one_unit(capsys, curve_csv):
    # Both are fractions of the best performance: "0.0%" beside "0.81" read as 0.81%.
    assert main(["tune-sim", curve_csv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["tune-sim", curve_csv]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith(("OPreSca", "Binsearch"))}
    for label, name in (("OPreSca", "opresca"), ("Binsearch", "binsearch")):
        final, summed = rows[label][3], rows[label][4]
        assert final.endswith("%") and summed.endswith("%")
        assert float(summed.rstrip("%")) == pytest.approx(100 * doc[name]["sum_loss"], abs=0.05)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["missing.csv"], "no such file"),
        (["{curve}", "--noise", "-0.1"], "--noise"),
        (["{curve}", "--noise", "abc"], "not a number"),
        (["{curve}", "--noise", "nan"], "--noise"),
        (["{curve}", "--seed", "x"], "--seed"),
        (["{curve}", "--metric", "speed"], "--metric"),
        (["{short}"], "at least 3"),
        (["{bad}"], "not a number"),
    ],
)
def test_tune_sim_bad_input(capsys, tmp_path, curve_csv, args, needle):
    short = tmp_path / "short.csv"
    short.write_text("threads,time\n1,10\n2,6\n2,6.2\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("threads,time\n1,10\n2,fast\n")
    argv = ["tune-sim"] + [a.format(curve=curve_csv, short=short, bad=bad) for a in args]
    assert needle in assert_one_line_error(capsys, argv)


# ---------------------------------------------------------------- go-back (steering)


def test_go_back_returns_to_the_best_after_a_slower_interval():
    counts = list(range(1, 17))
    curve = {c: 100.0 * c / (1 + 0.01 * c * c) for c in counts}  # best at 10
    t = OPreSca(counts, seeds=[16, 8, 4], min_gain=0.03, go_back=True)
    assert t.next_count() == 16
    t.observe(16, curve[16])
    assert t.next_count() == 8
    t.observe(8, curve[8])  # faster: the search goes on below the own count
    assert t.next_count() == 4
    t.observe(4, curve[4])  # slower than 8: back to 8 at once
    assert t.next_count() == 8 and not t.converged
    tried = drive(t, curve)
    assert t.converged and abs(t.best - 10) <= 1
    assert all(4 < c < 16 for c in tried)  # only inside the bracket around the best


def test_go_back_skips_seeds_a_unimodal_curve_cannot_peak_at():
    t = OPreSca(range(1, 17), seeds=[16, 8, 4], min_gain=0.03, go_back=True)
    t.observe(16, 10.0)
    t.observe(8, 6.0)  # halving the team made it slower
    assert t.next_count() == 16  # go back; 4 lies outside the bracket (8, 16]
    t.observe(16, 10.0)
    assert t.converged and t.best == 16


def test_go_back_ignores_differences_below_min_gain():
    t = OPreSca(range(1, 17), seeds=[16, 8, 4], min_gain=0.03, go_back=True)
    t.observe(16, 10.0)
    t.observe(8, 9.8)  # 2% slower: noise, so no go-back interval, and 4 is outside (8, 16]
    assert t.converged and t.next_count() == 16
