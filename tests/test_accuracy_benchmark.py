"""Guards the issue-2 claim: on the measured curves, auto is ahead of every single method
on all three figures (median error, share of splits under 20% max error, pick loss); and
that accuracy.py --loso chooses auto's rule for a source without that source's splits."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(__file__).resolve().parent / "data" / "curves"  # copies of ../shared/datasets/*.csv



def _bench():
    return load_benchmark("accuracy")


def test_auto_beats_every_peer_on_the_shared_curves():
    bench = _bench()
    splits = bench.splits_of(DATASETS)
    assert len(splits) >= 10
    rows = {r[0]: r for r in bench.summarise(splits, list(bench.PEERS))}
    auto = rows.pop("auto")
    assert auto[1] == len(splits)
    for name, (_, k, med, share, loss, *_) in rows.items():
        if k == 0:
            continue
        assert auto[2] < med, f"median error: auto {auto[2]:.3f} vs {name} {med:.3f}"
        assert auto[3] > share, f"share: auto {auto[3]:.2f} vs {name} {share:.2f}"
        assert auto[4] < loss, f"pick loss: auto {auto[4]:.3f} vs {name} {loss:.3f}"


def _same_curve(a, b) -> bool:
    """Rules that differ only in their band give the same curve."""
    return replace(a, band=0.0) == replace(b, band=0.0)


def test_held_out_source_never_chooses_its_own_rule(monkeypatch):
    bench = _bench()
    good, bad = bench.Score(0.01, 0.05, 0.0, 1.0), bench.Score(0.5, 0.9, 0.5, 0.0)
    special = bench.auto.RULE_CHOICES[1]  # best only on source "a"
    shipped = f"{bench.auto.MAIN_RULES.label()}, band 0"  # good covers all: the narrowest band

    def fake(sp, method, rules=bench.auto.MAIN_RULES, verbose=False, past=None):
        if method != "auto":
            return bad
        if bench.source_of(sp) == "a":
            return good if _same_curve(rules, special) else bad
        return good if _same_curve(rules, bench.auto.MAIN_RULES) else bad

    monkeypatch.setattr(bench, "try_score", fake)
    splits = [bench.Split(f"{src}__curve{i}", None, None, 8.0) for src, i in
              (("a", 0), ("b", 0), ("b", 1), ("c", 0), ("c", 1))]
    overall, per_source, chosen = bench.loso(splits)
    # "a" alone prefers `special`; held out, it gets the others' choice and scores badly.
    assert chosen["a"] == shipped
    assert per_source["a"][0][3] == 0.0  # share under 20% of auto on "a"
    # With "a" among the others, no band holds there (coverage 0): the widest.
    widest = f"{bench.auto.MAIN_RULES.label()}, band {bench.auto.BAND_CHOICES[-1]:g}"
    assert chosen["b"] == chosen["c"] == widest
    assert per_source["b"][0][3] == 1.0
    assert overall[0][1] == 5 and overall[0][3] == 0.8


def test_rules_worse_than_the_median_on_the_guard_curves_are_not_candidates(monkeypatch):
    bench = _bench()
    median = bench.auto.Rules()
    better, worse_loss = bench.auto.RULE_CHOICES[1], bench.auto.RULE_CHOICES[2]
    base = bench.Score(0.10, 0.15, 0.05, 0.8)

    def fake(sp, method, rules=bench.auto.MAIN_RULES, verbose=False, past=None):
        if rules == better:
            return bench.Score(0.05, 0.10, 0.05, 0.8)
        if rules == worse_loss:  # better error, worse pick: still not a candidate
            return bench.Score(0.01, 0.05, 0.06, 0.9)
        return base if rules == median else bench.Score(0.2, 0.5, 0.1, 0.5)

    monkeypatch.setattr(bench, "try_score", fake)
    splits = [bench.Split(f"{src}__curve{i}", None, None, 8.0) for src in "gh" for i in range(2)]
    ok, rows = bench.admissible(splits)
    assert ok == [median, better]
    assert len(rows) == len(bench.auto.RULE_CHOICES)
    # loso() only ever chooses among the candidates it is given.
    _, _, chosen = bench.loso(splits, ok)
    assert chosen["g"] == chosen["h"] == chosen["*"] == f"{better.label()}, band 0"


def test_band_is_the_narrowest_holding_the_rate_in_every_other_source():
    bench = _bench()
    rate = bench.auto.BAND_RATE
    bands = bench.auto.BAND_CHOICES
    # Coverage grows with the band; source "x" needs bands[2], "y" bands[1], "z" (never
    # consulted when held out) would need the widest.
    need = {"x": bands[2], "y": bands[1], "z": bands[-1]}
    sources = ["x", "x", "y", "z"]

    def scores_of_band(band):
        return [bench.Score(0.1, 0.1, 0.0, 1.0 if band >= need[s] else rate - 0.1) for s in sources]

    assert bench.calibrate_band(scores_of_band, [0, 1, 2], sources) == bands[2]
    assert bench.calibrate_band(scores_of_band, [2], sources) == bands[1]
    assert bench.calibrate_band(scores_of_band, [0, 1, 2, 3], sources) == bands[-1]
    # Exactly the stated rate holds.
    assert bench.calibrate_band(lambda b: [bench.Score(0.1, 0.1, 0.0, rate)] * 4, [0, 1], sources) == bands[0]
    # The guard curves must hold the rate too: here from bands[3] on.
    assert bench.calibrate_band(scores_of_band, [2], sources,
                                lambda b: rate if b >= bands[3] else rate - 0.01) == bands[3]


def _selection():
    return load_benchmark("selection")


def test_pick_rules_score_the_same_pick_as_the_benchmark():
    bench = _bench()
    selection = _selection()
    n = np.arange(1.0, 33.0)
    # Rises to 24, then collapses: extrapolating the rise from 8 counts picks a bad count.
    x = np.where(n <= 24, 10 * n / (1 + 0.02 * (n - 1)), 1.0)
    data = bench.Measurements.from_samples(n, x)
    sp = bench.Split("s__c", data.subset(np.flatnonzero(n <= 8)), data, 8.0)
    losses = selection.pick_losses(sp)
    assert set(losses) == set(selection.PICKS)
    assert losses["best predicted"] == pytest.approx(bench.score(sp, "auto").pick_loss)
    assert losses["best predicted"] > 0.5  # picked past the collapse
    assert losses["at most 2x measured"] < 0.3  # at most 16: 1 - x(16) / x(24) = 0.25


def test_reach_says_whether_the_members_span_the_test_values():
    bench = _bench()
    selection = _selection()
    n = np.arange(1.0, 17.0)
    rising = 10 * n / (1 + 0.02 * (n - 1))
    data = bench.Measurements.from_samples(n, rising)
    sp = bench.Split("s__c", data.subset(np.flatnonzero(n <= 8)), data, 8.0)
    assert selection.reach(sp) < 0.05  # plateau below, trend above a smooth curve's next doubling
    # A cliff right after the measured counts: every member stays above it.
    cliff = bench.Measurements.from_samples(n, np.where(n <= 8, rising, 0.1 * rising))
    sp = bench.Split("s__c", cliff.subset(np.flatnonzero(n <= 8)), cliff, 8.0)
    assert selection.reach(sp) > 0.5


def test_ceiling_scores_hindsight_choices_of_the_members():
    bench = _bench()
    selection = _selection()
    n = np.arange(1.0, 17.0)
    splits = []
    for src, scale in (("a", 1.0), ("b", 3.0)):
        data = bench.Measurements.from_samples(n, scale * 10 * n)  # perfect scaling: trend is exact
        splits.append(bench.Split(f"{src}__c", data.subset(np.flatnonzero(n <= 8)), data, 8.0))
    rows, chosen = selection.ceiling(splits)
    assert set(chosen) == {"a", "b"}
    assert all(set(sub) <= set(bench.auto.MAIN_RULES.members) for sub in chosen.values())
    assert rows["auto (shipped rule)"] == bench.aggregate("auto", [bench.try_score(sp, "auto") for sp in splits])
    per_split = rows["best member per split"]
    assert per_split[1] == 2 and per_split[3] == 1.0 and per_split[2] < 1e-6
    # plateau alone misses the doubling by half: the hindsight subsets do not hold it alone.
    assert all(sub != ("plateau",) for sub in chosen.values())


def test_a_curve_is_predicted_for_the_machine_its_provenance_names(tmp_path):
    bench = _bench()
    rows = "".join(f"{n},{100 * n}\n" for n in (1, 2, 4, 6, 8, 10, 12, 16))
    (tmp_path / "a__known.csv").write_text(
        "# source: x, metric: throughput, machine: m (per y, z), hardware threads: 12, cores: 6, notes: n\n"
        "threads,value\n" + rows)
    (tmp_path / "b__unknown.csv").write_text("# source: x, metric: throughput, machine: m, notes: n\nthreads,value\n"
                                             + rows)
    splits = {sp.curve: sp for sp in bench.splits_of(tmp_path) if sp.m == 8}
    assert splits["a__known"].machine == (12, 6, None, None)
    assert splits["b__unknown"].machine == (None, None, None, None)
    known, unknown = (bench.predict_split(splits[c], "auto") for c in ("a__known", "b__unknown"))
    assert known.hardware is not None and known.preferred <= 12 and np.argmax(known.values) < 12
    assert unknown.hardware is None and np.argmax(unknown.values) == 15
    (tmp_path / "c__pinned.csv").write_text(
        "# source: x, metric: throughput, machine: m, hardware threads: 16, cores: 8, sockets: 2, "
        "fill: sockets, notes: n\nthreads,value\n" + rows)
    pinned = [sp for sp in bench.splits_of(tmp_path) if sp.curve == "c__pinned" and sp.m == 8][0]
    assert pinned.machine == (16, 8, 2, "sockets")
    assert bench.predict_split(pinned, "auto").hardware.fill == "sockets"
    # --no-topology: the same curves as if their provenance named no machine.
    bare = {sp.curve: sp for sp in bench.splits_of(tmp_path, topology=False)}
    assert all(sp.machine == bench.NO_MACHINE for sp in bare.values())
    assert bench.predict_split(bare["a__known"], "auto").hardware is None


def test_named_losses_score_the_counts_predict_names():
    """The fastest and preferred losses are the measured value at the count predict names
    against the best measured, a name between measured counts taken at the measured count
    below it; the argmax pick loss beside them is unchanged."""
    bench = _bench()
    n = np.array([1.0, 2, 4, 6, 8, 12, 16])
    x = np.array([10.0, 19, 36, 50, 60, 45, 40])  # best measured: 60 at 8
    data = bench.Measurements.from_samples(n, x)
    sp = bench.Split("s__c", data.subset(np.flatnonzero(n <= 4)), data, 4.0)
    values = np.interp(np.arange(1, 17), n, x)  # a perfect prediction: the argmax is 8
    s = bench.score_values(sp, values, fastest=4, preferred=7)
    assert s.pick_loss == pytest.approx(0.0)
    assert s.fastest_loss == pytest.approx(1 - 36 / 60)
    assert s.preferred_loss == pytest.approx(1 - 50 / 60)  # 7 was not measured: scored at 6
    assert s.off_grid == 0.5
    # A time curve: the loss is on performance, 1 / time.
    timed = bench.Measurements.from_samples(n, 1 / x, metric="time")
    st = bench.score_values(bench.Split("s__t", timed.subset(np.flatnonzero(n <= 4)), timed, 4.0),
                            1 / values, fastest=12, preferred=12)
    assert st.fastest_loss == st.preferred_loss == pytest.approx(1 - 45 / 60) and st.off_grid == 0.0
    # Without names (a bare curve) the new figures are nan, and aggregate skips them.
    bare = bench.score_values(sp, values)
    assert np.isnan(bare.fastest_loss) and np.isnan(bare.preferred_loss) and np.isnan(bare.off_grid)
    row = bench.aggregate("m", [s, st, bare, None])
    assert row[:2] == ("m", 3) and row[4] == pytest.approx(0.0)
    assert row[6] == pytest.approx(((1 - 36 / 60) + (1 - 45 / 60)) / 2)
    assert row[7] == pytest.approx(((1 - 50 / 60) + (1 - 45 / 60)) / 2)
    assert row[8] == pytest.approx(0.25)


def test_score_hands_the_predictions_named_counts_to_the_losses():
    bench = _bench()
    n = np.arange(1.0, 17.0)
    data = bench.Measurements.from_samples(n, np.where(n <= 12, 10 * n, 60.0))
    sp = bench.Split("s__c", data.subset(np.flatnonzero(n <= 8)), data, 8.0)
    pred = bench.predict_split(sp, "auto")
    s = bench.score(sp, "auto")
    assert s.fastest_loss == pytest.approx(1 - data.perf[int(pred.fastest) - 1] / 120)
    assert s.preferred_loss == pytest.approx(1 - data.perf[int(pred.preferred) - 1] / 120)


def _past_split(bench, metric: str = "throughput"):
    """A curve measured at 1-8, 16, 24, 32, 35 and 40 on a 36-thread machine: 36 itself not
    measured, the pick's candidates past it 40 only (ibr's 70, 75 around its 72)."""
    n = np.array([1.0, 2, 4, 6, 8, 16, 24, 32, 35, 40])
    x = np.where(n <= 36, 10 * n, 200.0)  # time-sharing past 36 halves it
    data = bench.Measurements.from_samples(n, x if metric == "throughput" else 1 / x, metric=metric)
    return bench.Split("s__c", data.subset(np.flatnonzero(n <= 8)), data, 8.0, (36, None, None, None))


@pytest.mark.parametrize("metric", ["throughput", "time"])
def test_past_the_hardware_threads_the_variants_fall(metric):
    bench = _bench()
    sp = _past_split(bench, metric)
    grid = np.arange(1.0, 41.0)
    held = np.minimum(10 * grid, 360.0)  # predict's own: held at the value at 36
    values = held if metric == "throughput" else 1 / held
    half = bench.PastHw(1.0).values(sp, values)
    perf = half if metric == "throughput" else 1 / half
    assert np.allclose(perf[:36], held[:36]) and perf[39] == pytest.approx(360 * 36 / 40)
    assert bench.PastHw(0.5).values(sp, values)[39] == pytest.approx(values[39] * (40 / 36) ** (
        0.5 if metric == "time" else -0.5))
    with bench.picking("argmax"):  # the fall alone moves the argmax pick back to 35: 324 < 350
        assert bench.score_values(sp, values).pick_loss == pytest.approx(1 - 200 / 350)
        assert bench.score_values(sp, half).pick_loss == pytest.approx(0.0)
    # Without the machine (or trained past it) nothing changes.
    bare = replace(sp, machine=bench.NO_MACHINE)
    assert np.array_equal(bench.PastHw(1.0).values(bare, values), values)
    assert bench.hw_threads(bare) is None and bench.hw_threads(sp) == 36
    assert bench.hw_threads(replace(sp, train=sp.full)) is None
    # trained up to the hardware threads exactly, the machine still applies (predict: top <= hw)
    assert bench.hw_threads(replace(sp, machine=(8, None, None, None))) == 8


@pytest.mark.parametrize("metric", ["throughput", "time"])
def test_the_pick_is_the_count_predict_would_name(metric):
    """The pick loss scores the measured count predict's own rule names (#41): none past
    the hardware threads (ibr's 75 on 72, here 40 on 36, held at 36's value, beat 35 under
    the argmax), and of near ties a training count, else the fewest."""
    bench = _bench()
    sp = _past_split(bench, metric)
    grid = np.arange(1.0, 41.0)
    held = np.minimum(10 * grid, 360.0)  # predict's own past the hardware threads
    values = held if metric == "throughput" else 1 / held
    with bench.picking("argmax"):
        assert bench.score_values(sp, values).pick_loss == pytest.approx(1 - 200 / 350)  # 40
    assert bench.score_values(sp, values).pick_loss == pytest.approx(0.0)  # 35
    # The named counts are scored as before: the pick rule moves the pick alone.
    with bench.picking("argmax"):
        before = bench.score(sp, "usl")
    after = bench.score(sp, "usl")
    assert replace(before, pick_loss=0.0) == replace(after, pick_loss=0.0)
    assert after.pick_loss <= before.pick_loss
    # Without the machine the count past it may be picked, as predict may name it.
    bare = replace(sp, machine=bench.NO_MACHINE)
    assert bench.score_values(bare, values).pick_loss == pytest.approx(1 - 200 / 350)
    # Near ties (FASTEST_TIE): a training count (8) before a better-predicted test count (16).
    n = np.array([1.0, 2, 4, 6, 8, 16])
    x = np.array([10.0, 19, 36, 50, 60, 30])
    data = bench.Measurements.from_samples(n, x)
    near = bench.Split("s__n", data.subset(np.flatnonzero(n <= 8)), data, 8.0)
    flat = np.interp(np.arange(1, 17), [1, 8, 16], [10, 60, 60 * (1 + 1e-4)])
    with bench.picking("argmax"):
        assert bench.score_values(near, flat).pick_loss == pytest.approx(0.5)
    assert bench.score_values(near, flat).pick_loss == pytest.approx(0.0)
    with pytest.raises(ValueError):
        with bench.picking("best"):
            pass


def test_main_says_which_pick_it_scores(capsys):
    bench = _bench()
    assert bench.main(["--datasets", str(DATASETS), "--methods", "plateau", "--pick", "argmax"]) == 0
    out = capsys.readouterr().out
    assert f"pick loss's count (argmax): {bench.PICKS['argmax']}" in out
    assert bench.main(["--datasets", str(DATASETS), "--methods", "plateau"]) == 0
    assert f"pick loss's count (product): {bench.PICKS['product']}" in capsys.readouterr().out
    assert bench._pick == ["product"]


def test_loso_chooses_what_happens_past_the_hardware_threads_on_the_other_sources(monkeypatch):
    bench = _bench()
    good, bad = bench.Score(0.01, 0.05, 0.0, 1.0), bench.Score(0.5, 0.9, 0.5, 0.0)
    falls = bench.PastHw(1.0)

    def fake(sp, method, rules=bench.auto.MAIN_RULES, verbose=False, past=bench.NO_PAST):
        if method != "auto" or not _same_curve(rules, bench.auto.MAIN_RULES):
            return bad
        if bench.source_of(sp) == "a":  # only "a" is better held at the value at the hardware threads
            return good if past == bench.NO_PAST else bad
        return good if past == falls else bad

    monkeypatch.setattr(bench, "try_score", fake)
    splits = [bench.Split(f"{src}__curve{i}", None, None, 8.0) for src, i in
              (("a", 0), ("b", 0), ("b", 1), ("c", 0), ("c", 1))]
    overall, per_source, chosen = bench.loso(splits, pasts=bench.PAST_HW)
    assert chosen["a"].startswith(bench.auto.MAIN_RULES.label() + falls.label())
    assert per_source["a"][0][3] == 0.0 and per_source["b"][0][3] == 1.0
    with pytest.raises(ValueError):
        bench.loso(splits, pasts=(falls,))
