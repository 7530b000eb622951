"""Stand-in for ``counters.task_depend`` in recordings made before the library counted it.

The task queue model (docs/runtime-model.md, ``model/runtime/taskqueue.py``) reads a
recording without ``task_depend`` as all its tasks dependent: the model those recordings
always had.  Until BOTS and KASTORS are recorded again with the counter
(``../device35/README.md``), this writes a copy of a corpus16-style folder with the counter
set as the programs' sources say: BOTS's omp-tasks (bsc-pm/bots 2607a69) has no ``depend``
clause, so 0; every task of KASTORS's ``*-task-dep.c`` programs (86e3cd7) has one, so all of
them.  Other programs' recordings are copied unchanged.  Scores made from such a copy are a
stand-in, not a measurement, and say so.

``--drop`` writes the copy the other way: every ``task_depend`` removed, so that recordings
made with the counter replay as the model that was (every task's creating time the queue's
service): the split's before and after on the same recordings.

    python benchmarks/corpus16/task_depend.py DIR OUT [--drop]
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path


def dependent_share(name: str) -> float | None:
    """What the sources say of a recording's program (its file name): the share of its
    tasks created with dependences, None where this stand-in knows nothing."""
    if name.startswith("bots-"):
        return 0.0
    if name.startswith("kastors-") and "taskdep" in name:
        return 1.0
    return None


def main(argv: list[str]) -> int:
    drop = "--drop" in argv
    argv = [a for a in argv if a != "--drop"]
    if len(argv) != 2:
        print("usage: task_depend.py DIR OUT [--drop]", file=sys.stderr)
        return 2
    src, out = Path(argv[0]), Path(argv[1])
    if not (src / "samples").is_dir():
        print(f"task_depend.py: {src} has no samples/ folder", file=sys.stderr)
        return 1
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(src, out)
    given = 0
    for f in sorted((out / "samples").glob("*.jsonl")):
        share = dependent_share(f.name)
        if share is None and not drop:
            continue
        lines = []
        for line in f.read_text().splitlines():
            rec = json.loads(line) if line.strip().startswith("{") else None
            counters = rec.get("counters") if isinstance(rec, dict) else None
            if isinstance(counters, dict) and drop and "task_depend" in counters:
                del counters["task_depend"]
                given += 1
                line = json.dumps(rec)
            elif isinstance(counters, dict) and not drop and "tasks" in counters:
                counters["task_depend"] = int(round(share * counters["tasks"]))
                given += 1
                line = json.dumps(rec)
            lines.append(line)
        f.write_text("\n".join(lines) + "\n")
    print(f"task_depend.py: {given} records {'without' if drop else 'given'} task_depend in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
