"""benchmarks/fewcounts.py (#41): which splits the few-counts criterion selects, and that
its second rule is chosen for a group without that group's splits."""
from pathlib import Path

import pytest

import numpy as np
from benchmark_module import benchmark_module, load_benchmark

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    return load_benchmark("fewcounts")


def _split(bench, counts, m):
    n = np.asarray(counts, float)
    data = bench.acc.Measurements.from_samples(n, 10 * n)
    return bench.Split("s__c", data.subset(np.flatnonzero(n <= m)), data, m)


def test_criterion_is_four_distinct_training_counts_or_fewer():
    bench = _bench()
    assert bench.few(_split(bench, (1, 2, 4, 8, 16), 8.0))  # 1, 2, 4, 8: the 16-core curves
    assert bench.few(_split(bench, (1, 2, 3, 4, 6, 8), 4.0))
    assert not bench.few(_split(bench, (1, 2, 3, 4, 6, 8), 6.0))  # 5 counts
    assert not bench.few(_split(bench, range(1, 17), 8.0))


def test_criterion_on_the_curves_it_was_measured_on():
    with benchmark_module("fewcounts") as bench:  # sixteen_core imports scale16 lazily
        sixteen = bench.sixteen_core()
        public = bench.corpus()
    assert sum(bench.few(m.split) for m in sixteen) == 90 and len(sixteen) == 104
    assert {m.group for m in public if bench.few(m.split)} == {"lfca"}
    assert sum(bench.few(m.split) for m in public) == 6
    assert {m.group for m in sixteen} >= {"bots", "rodinia", "polybench-acc", "phoenix", "miniapps", "pyhost",
                                           "npb", "examples"}


def _members(bench, groups):
    return [bench.Member(g, bench.Split(f"{g}__curve{i}", None, None, 8.0), True) for g, i in groups]


def test_held_out_group_never_chooses_its_own_rule(monkeypatch):
    bench = _bench()
    good, bad = bench.Score(0.01, 0.05, 0.0, 1.0), bench.Score(0.5, 0.9, 0.5, 0.0)
    special, other = bench.CANDIDATES[1], bench.CANDIDATES[2]

    def fake(sp, method, rules=None, verbose=False):
        if sp.curve.startswith("a__"):  # "a" alone prefers `special`
            return good if rules == special else bad
        return good if rules == other else bad

    monkeypatch.setattr(bench, "try_score", fake)
    members = _members(bench, (("a", 0), ("b", 0), ("b", 1), ("c", 0), ("c", 1)))
    table = bench.score_table(members)
    held, chosen = bench.leave_one_group_out(members, table)
    assert chosen["a"] == other and held[0] == bad
    assert chosen["b"] == chosen["c"] == chosen["*"] == other
    assert held[1:] == [good] * 4


def test_dominate_keeps_the_shipped_rule_unless_another_is_no_worse_on_every_figure(monkeypatch):
    bench = _bench()
    shipped = bench.auto.MAIN_RULES
    sharper, dominating = bench.CANDIDATES[1], bench.CANDIDATES[2]
    assert shipped not in (sharper, dominating)

    def fake(sp, method, rules=None, verbose=False):
        if rules == sharper:  # the best merit, but a worse pick than the shipped rule's
            return bench.Score(0.01, 0.02, 0.06, 1.0)
        if rules == dominating:
            return bench.Score(0.09, 0.15, 0.05, 1.0)
        if rules == shipped:
            return bench.Score(0.10, 0.15, 0.05, 1.0)
        return bench.Score(0.5, 0.9, 0.5, 0.0)

    monkeypatch.setattr(bench, "try_score", fake)
    members = _members(bench, (("a", 0), ("b", 0)))
    table = bench.score_table(members)
    assert bench.leave_one_group_out(members, table)[1]["*"] == sharper
    assert bench.leave_one_group_out(members, table, dominate=True)[1]["*"] == dominating
    del table[dominating]
    assert bench.leave_one_group_out(members, table, dominate=True)[1]["*"] == shipped


def test_accuracy_loso_hands_back_each_splits_held_out_score(monkeypatch):
    acc = load_benchmark("accuracy")
    good, bad = acc.Score(0.01, 0.05, 0.0, 1.0), acc.Score(0.5, 0.9, 0.5, 0.0)
    special = acc.auto.RULE_CHOICES[1]

    def fake(sp, method, rules=acc.auto.DEFAULT_RULES, verbose=False, past=None):
        if method != "auto":
            return bad
        mine = rules.members == special.members and rules.anchor == special.anchor
        return good if (acc.source_of(sp) == "a") == mine else bad

    monkeypatch.setattr(acc, "try_score", fake)
    splits = [acc.Split(f"{src}__curve{i}", None, None, 8.0) for src, i in (("a", 0), ("b", 0), ("b", 1), ("c", 0))]
    held: list = []
    acc.loso(splits, held_out=held)
    # "a" alone scores well with `special`; held out it gets the others' rule.
    assert held == [bad, good, good, good]


@pytest.mark.parametrize("second_error, verdict", [(0.10, "verdict: ships"), (0.30, "verdict: does not ship")])
def test_decide_scores_the_second_rule_on_the_deciding_splits_only(monkeypatch, capsys, second_error, verdict):
    """--decide: the second rule is chosen on the other curves' selected splits and set
    against the main rule on the DECIDING suites' splits trained on 1..8 only."""
    bench = _bench()
    curve = (1, 2, 4, 8, 16)
    other = [bench.Member("npb", _split(bench, curve, 8.0), True), bench.Member("bots", _split(bench, curve, 8.0), True)]
    deciding = [bench.Member("gapbs", _split(bench, curve, m), True) for m in (4.0, 8.0)]
    monkeypatch.setattr(bench, "sixteen_core", lambda folders, deciding_=False, **kw: deciding if kw.get("deciding") else other)
    monkeypatch.setattr(bench, "corpus", lambda folder: [])
    seen = []

    def fake(sp, method, rules=None, verbose=False):
        seen.append((sp.m, rules))
        if rules == bench.auto.MAIN_RULES:
            return bench.Score(0.20, 0.25, 0.0, 1.0)
        return bench.Score(second_error, 0.15, 0.0, 1.0) if rules == bench.CANDIDATES[0] else bench.Score(0.5, 0.9, 0.5, 0.0)

    monkeypatch.setattr(bench, "try_score", fake)
    assert bench.decide([], Path(".")) == 0
    out = capsys.readouterr().out
    assert "the test: 1 splits of gapbs" in out and out.count(verdict) == 1 + (second_error < 0.2)
    assert ("the choice is the main rule itself" in out) == (second_error > 0.2)  # --dominate's
    # the deciding split trained on 1..4 is never scored
    assert all(m == 8.0 for m, _ in seen)
