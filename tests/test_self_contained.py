"""The tests read only what is in the repository (#39 step 7): no test builds a path into the
folder kept beside it (``ROOT.parent / "shared"``, ``"../shared/..."``).  What a test needs
from there is copied into tests/data with its provenance; benchmarks may still read it."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def outside_paths(source: str) -> list[int]:
    """Lines that join "shared" onto a parent folder, or spell a path starting ../shared."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.right, ast.Constant) and node.right.value == "shared"
                and "parent" in ast.unparse(node.left)):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith("../shared")):
            lines.append(node.lineno)
    return lines


def test_no_test_reads_outside_the_repository():
    found = {f"{p.relative_to(TESTS)}:{n}" for p in TESTS.rglob("*.py")
             if p != Path(__file__).resolve() for n in outside_paths(p.read_text())}
    assert not found, f"tests read ../shared: {sorted(found)}"


def test_the_check_sees_both_spellings():
    assert outside_paths('D = ROOT.parent / "shared" / "datasets"\n') == [1]
    assert outside_paths('D = Path(__file__).parents[2] / "shared"\n') == [1]
    assert outside_paths('D = Path("../shared/datasets")\n') == [1]
    assert outside_paths('D = tmp_path / "shared"\n') == []  # a test's own folder
