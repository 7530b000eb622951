"""benchmarks/module_graph.py counts what the layer test walks: cycles and the longest
import chain of a small graph, and its report on this package."""
from __future__ import annotations

from benchmark_module import load_benchmark

graph = load_benchmark("module_graph")


def test_cycles_are_the_components_of_more_than_one_module():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}, "f": set()}
    assert graph.cycles(edges) == [["a", "b", "c"], ["e", "e2"]]
    assert graph.cycles({"a": {"b"}, "b": set()}) == []


def test_longest_chain_counts_a_cycle_once():
    edges = {"top": {"mid", "leaf"}, "mid": {"x"}, "x": {"y"}, "y": {"x", "leaf"}, "leaf": set()}
    assert graph.longest_chain(edges) == ["top", "mid", "x", "leaf"]
    assert graph.longest_chain({"a": set()}) == ["a"]


def test_report_on_this_package(capsys):
    assert graph.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("modules: ") and lines[1].startswith("levels: ")
    assert "upward imports: 0" in lines and "import cycles: 0" in lines  # test_layers' rules
