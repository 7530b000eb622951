"""benchmarks/kernel_loss.py's figures are what its text says they are: leave-one-kernel-out
(a kernel's own curve never chooses its sigma), the check's new kernels apart from the ones
the development file holds, |ln| and band coverage over counts 2..N, ties to the smaller
sigma, and a note when the shipped constant is not the choice (session testaudit32: each of
these could be broken with the shipped-constant test still passing)."""
from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from corecast.model.runtime import kernelmodel
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("kernel_loss")


def test_a_kernels_held_out_sigma_is_chosen_without_its_own_curve(bench, tmp_path: Path) -> None:
    saved = json.loads(bench.DEV.read_text())
    # pb.conv2d's curve made to lose far more past 1 unit: the choice on every kernel moves,
    # the one made for pb.conv2d held out (on the others) does not
    saved["measured"]["pb.conv2d"] = {n: t * (int(n) ** 0.5 if int(n) > 1 else 1.0)
                                      for n, t in saved["measured"]["pb.conv2d"].items()}
    bent = tmp_path / "bent.json"
    bent.write_text(json.dumps(saved))
    before, after = bench.evaluate(bench.DEV), bench.evaluate(bent)
    assert after["chosen_on_all"] > before["chosen_on_all"]
    assert after["held_out_sigma"]["pb.conv2d"] == before["held_out_sigma"]["pb.conv2d"]
    assert len(set(before["held_out_sigma"].values())) > 1  # each kernel's own choice


def test_the_check_tells_new_kernels_from_the_development_files(bench) -> None:
    dev = set(bench.evaluate(bench.DEV)["held_out_sigma"])
    c = bench.check(bench.CHECK, dev, kernelmodel.UNIT_CONTENTION)
    check_kernels = set(json.loads(bench.CHECK.read_text())["measured"])
    for label in ("no_loss", "shipped"):
        for run, figs in c[label]["new_kernels"].items():
            assert figs["kernels"] == len(check_kernels - dev) > 0
            assert c[label]["same_kernels"][run]["kernels"] == len(check_kernels & dev) > 0


def test_a_row_scores_counts_2_to_n_and_the_band_on_both_sides(bench) -> None:
    pred = SimpleNamespace(threads=[1, 2, 3, 4], speedup=[1.0, 2.0, 3.0, 4.0],
                           low=[1.0, 1.5, 3.2, 2.5], high=[1.0, 2.5, 3.5, 3.9])
    meas = {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.2}  # 3 below its band, 4 above
    (row,) = bench.rows({"k": meas}, {(2, "k"): pred}, 4)
    assert row["cases"] == 3 and row["held"] == 1
    assert row["abs_ln_top"] == pytest.approx(math.log(4.2 / 4.0))
    assert row["mean_abs_ln"] == pytest.approx(math.log(4.2 / 4.0) / 3)


def test_ties_go_to_the_smaller_sigma(bench) -> None:
    table = {s: [{"kernel": "k", "mean_abs_ln": 0.1}] for s in bench.GRID}
    assert bench.choose(table, {"k"}) == 0.0


def test_it_says_when_the_shipped_constant_is_not_its_choice(bench, monkeypatch, capsys) -> None:
    assert bench.main([]) == 0
    assert "note:" not in capsys.readouterr().out
    monkeypatch.setattr(kernelmodel, "UNIT_CONTENTION", 0.01)
    assert bench.main([]) == 0
    assert "note: kernelmodel.UNIT_CONTENTION is 0.01, this script chooses 0.048" in capsys.readouterr().out


def test_pooled_runs_hold_out_each_kernels_curves_together(bench) -> None:
    # The same run given twice: every kernel's two curves leave together, so each held-out
    # choice is the single run's (a copy of the held-out kernel left in would pull it).
    one, two = bench.evaluate(bench.DEV), bench.evaluate([bench.DEV, bench.DEV])
    assert two["held_out_sigma"] == one["held_out_sigma"]
    assert two["chosen_on_all"] == one["chosen_on_all"]
    assert two["held_out"][2]["cases"] == 2 * one["held_out"][2]["cases"]


def test_a_candidate_is_scored_on_the_check_beside_the_shipped_constant(bench, capsys) -> None:
    dev = set(bench.evaluate(bench.DEV)["held_out_sigma"])
    c = bench.check(bench.CHECK, dev, kernelmodel.UNIT_CONTENTION, 0.0)
    # a candidate of no loss scores as the no-loss row does; a different one does not
    assert c["candidate"] == c["no_loss"] and c["candidate_sigma"] == 0.0
    assert bench.check(bench.CHECK, dev, kernelmodel.UNIT_CONTENTION, 0.02)["candidate"] != c["no_loss"]
    assert "candidate" not in bench.check(bench.CHECK, dev, kernelmodel.UNIT_CONTENTION)
    assert bench.main(["--candidate", "0.02"]) == 0
    assert "(candidate 0.02)" in capsys.readouterr().out
    assert bench.main(["--candidate", "1.5"]) == 2
    assert "--candidate is a per-unit loss in [0, 1)" in capsys.readouterr().err
