"""benchmarks/corpus16/task_depend.py: the stand-in for counters.task_depend (the programs'
sources' depend clauses written into a copy of the recordings) and its --drop (the counter
removed: the model that was), each one line, and bad input one line with a non-zero exit."""
from __future__ import annotations

import json

from benchmark_module import load_benchmark


def load():
    return load_benchmark("corpus16/task_depend")


def region(tasks: int) -> str:
    return json.dumps({"event": "region", "name": "f._omp_fn.0", "counters": {"busy_s": 1.0, "tasks": tasks}})


def test_the_stand_in_and_its_drop(tmp_path, capsys):
    bench = load()
    src = tmp_path / "data"
    (src / "samples").mkdir(parents=True)
    (src / "a.csv").write_text("threads,time\n1,1\n")
    lines = {"bots-fib-2.jsonl": [region(10), '{"event": "summary"}'],
             "kastors-sparselu-taskdep-2.jsonl": [region(10)],
             "gapbs-bfs-2.jsonl": [region(10)]}
    for name, body in lines.items():
        (src / "samples" / name).write_text("\n".join(body) + "\n")
    assert bench.main([str(src), str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip().endswith("2 records given task_depend in " + str(tmp_path / "out"))
    read = {name: [json.loads(x) for x in (tmp_path / "out" / "samples" / name).read_text().splitlines()]
            for name in lines}
    assert read["bots-fib-2.jsonl"][0]["counters"]["task_depend"] == 0
    assert read["bots-fib-2.jsonl"][1] == {"event": "summary"}
    assert read["kastors-sparselu-taskdep-2.jsonl"][0]["counters"]["task_depend"] == 10
    assert "task_depend" not in read["gapbs-bfs-2.jsonl"][0]["counters"]  # the sources say nothing
    assert (tmp_path / "out" / "a.csv").read_text() == "threads,time\n1,1\n"
    assert bench.main([str(tmp_path / "out"), str(tmp_path / "back"), "--drop"]) == 0
    assert "2 records without task_depend" in capsys.readouterr().out
    for name in lines:
        assert (tmp_path / "back" / "samples" / name).read_text() == (src / "samples" / name).read_text()


def test_bad_input_is_one_line(tmp_path, capsys):
    bench = load()
    assert bench.main([str(tmp_path / "none"), str(tmp_path / "out")]) == 1
    assert bench.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"task_depend.py: {tmp_path / 'none'} has no samples/ folder", "usage: task_depend.py DIR OUT [--drop]"]
