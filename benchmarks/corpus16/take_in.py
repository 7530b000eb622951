"""Take a device call's corpus results into ``data/``: one command instead of the README's
hand steps (unpack, check, copy, merge ``runs.jsonl``), for a new suite's pack (device34's
``sp34.tgz`` and ``om34.tgz``, device35's ``kt35.tgz``) or, with ``--samples-only``, a pass
of recordings made again (device32/call3.sh's ``recA.tgz``).

    python benchmarks/corpus16/take_in.py PACK.tgz [--data DIR] [--samples-only] [--suites A,B]
        [--note TEXT] [--counts 1,2,4,8,16] [--reps 3] [--recorded 2,4,16] [--failed A,B] [--check]

The pack's own calls are those in its ``calls.jsonl``; its runs of other calls (the timed
runs a recording pass starts from) are not taken again.  For every program those calls ran:

* a new suite's program must have ``--reps`` timed runs with exit 0 at every count of
  ``--counts``, its ``NAME.csv``, and a recording with exit 0 at every count of
  ``--recorded`` (``samples/NAME-N.jsonl``); ``--samples-only`` asks for the recordings alone;
* a program whose median 1-thread time lies outside 0.5-5 s is named (resize it before
  anything is replayed; it is still taken in).

Any problem is one line and nothing is written (exit 1); ``--check`` only checks.  A new
suite's ``NAME.csv`` or recording that ``data/`` already holds is refused (a file is never
overwritten, except recordings with ``--samples-only``, which replaces them).  The pack's
calls are appended to ``data/calls.jsonl`` numbered after the last one there (``--note``
added to each, and ``corecast``, the pack's ``corecast-commit.txt``, which also becomes
``data/corecast-commit.txt``: the last call's commit), and its runs to ``data/runs.jsonl``
with those numbers.  ``--suites`` takes
only those suites' programs (the runs' ``suite``; a pass that recorded several suites).
``--failed`` names programs the device could not run (a run that did not end with exit 0
and no ``NAME.csv`` in the pack): their runs are kept in ``runs.jsonl`` as the failure's
record, and nothing else of theirs is asked for or copied.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
T1_RANGE = (0.5, 5.0)  # seconds: the corpus's sizes aim at 1-4 s at one thread


class TakeInError(Exception):
    """A problem with the pack or the data folder: one line, exit 1."""


def jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError:
                raise TakeInError(f"{path}: line {i} is not JSON") from None
            if not isinstance(rec, dict):
                raise TakeInError(f"{path}: line {i} is not an object")
            out.append(rec)
    return out


def unpack(pack: Path, into: Path) -> Path:
    """The pack's files under ``into`` (regular files and folders only, none outside it)."""
    try:
        with tarfile.open(pack) as tar:
            for m in tar.getmembers():
                name = Path(m.name)
                if name.is_absolute() or ".." in name.parts or not (m.isfile() or m.isdir()):
                    raise TakeInError(f"{pack}: member {m.name!r} is not a plain file inside the pack")
            try:
                tar.extractall(into, filter="data")
            except TypeError:  # a Python without extraction filters; the members were checked above
                tar.extractall(into)
    except tarfile.ReadError:
        raise TakeInError(f"{pack}: not a tar archive (plain, gzip, bzip2 or xz)") from None
    except (OSError, tarfile.TarError) as exc:
        raise TakeInError(f"{pack}: cannot unpack: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return into


def pack_commit(pack_dir: Path) -> str:
    """The corecast commit the pack's calls ran (its ``corecast-commit.txt``), or ""."""
    path = pack_dir / "corecast-commit.txt"
    lines = path.read_text(errors="replace").split() if path.is_file() else []
    return lines[0] if lines else ""


def plan(pack_dir: Path, data: Path, samples_only: bool, counts: list[int], reps: int,
         recorded: list[int], suites: set[str] | None = None, failed: frozenset[str] = frozenset()
         ) -> tuple[list[str], list[Path], list[dict], list[dict], list[str]]:
    """What taking the pack in writes: its programs, the files to copy (relative to the
    pack), its calls and runs renumbered; and the lines naming programs to resize."""
    calls = jsonl(pack_dir / "calls.jsonl")
    if not calls:
        raise TakeInError(f"{pack_dir.name}: no calls.jsonl in the pack (not a measure.py folder)")
    own = {int(c["call"]) for c in calls if isinstance(c.get("call"), int)}
    # A recording pass starts from data's timed runs (their own call numbers, which may equal
    # the pack's): with --samples-only only its recordings are its own.
    runs = [r for r in jsonl(pack_dir / "runs.jsonl") if r.get("call") in own
            and (not samples_only or r.get("kind") == "sample") and (suites is None or r.get("suite") in suites)]
    if not runs:
        raise TakeInError(f"{pack_dir.name}: its runs.jsonl holds no run of its own calls {sorted(own)}"
                          + (f" in suites {','.join(sorted(suites))}" if suites else ""))
    base = max((int(c["call"]) for c in jsonl(data / "calls.jsonl") if isinstance(c.get("call"), int)), default=0)
    # Only the calls whose runs are taken (a pass's other suites' calls are not)
    number = {k: base + i for i, k in enumerate(sorted({r["call"] for r in runs}), 1)}
    names = sorted({str(r.get("name")) for r in runs})
    problems, files, resize = [], [], []
    for name in sorted(failed - set(names)):
        problems.append(f"{name}: --failed names it, but the pack's calls did not run it")
    for name in names:
        mine = [r for r in runs if r.get("name") == name and r.get("rc") == 0]
        if name in failed:
            # A failure is kept as what it was: its runs, never a curve or a recording.
            if (pack_dir / f"{name}.csv").exists() or all(r.get("rc") == 0 for r in runs if r.get("name") == name):
                problems.append(f"{name}: --failed names it, but the pack has its {name}.csv or no failed run")
            continue
        for n in recorded:
            rec = Path("samples") / f"{name}-{n}.jsonl"
            if not any(r.get("kind") == "sample" and r.get("threads") == n for r in mine) or not (pack_dir / rec).is_file():
                problems.append(f"{name}: no recording with exit 0 at {n} threads")
            else:
                files.append(rec)
        if samples_only:
            continue
        for n in counts:
            got = sum(1 for r in mine if r.get("kind") == "time" and r.get("threads") == n)
            if got < reps:
                problems.append(f"{name}: {got} timed runs with exit 0 at {n} threads, {reps} needed")
        if not (pack_dir / f"{name}.csv").is_file():
            problems.append(f"{name}: no {name}.csv in the pack")
        else:
            files.append(Path(f"{name}.csv"))
        t1 = [r["time_s"] for r in mine if r.get("kind") == "time" and r.get("threads") == 1]
        if t1 and not T1_RANGE[0] <= statistics.median(t1) <= T1_RANGE[1]:
            resize.append(f"{name}: T(1) {statistics.median(t1):.3g} s, outside {T1_RANGE[0]}-{T1_RANGE[1]} s: "
                          "resize it before anything is replayed")
    for f in files:
        if (data / f).exists() and not (samples_only and f.parts[0] == "samples"):
            problems.append(f"{f}: data/ holds it already (a new suite's files never replace others)")
    if problems:
        raise TakeInError("; ".join(problems))
    rev = pack_commit(pack_dir)
    new_calls = [{**c, "call": number[c["call"]], **({"corecast": rev} if rev and "corecast" not in c else {})}
                 for c in calls if c.get("call") in number]
    new_runs = [{**r, "call": number[r["call"]]} for r in runs]
    return names, files, new_calls, new_runs, resize


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pack", type=Path)
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--samples-only", action="store_true", help="recordings made again: replace them, no curves")
    ap.add_argument("--suites", default="", help="comma-separated suites: only their programs")
    ap.add_argument("--note", default="", help="a note added to each call's line in calls.jsonl")
    ap.add_argument("--counts", default="1,2,4,8,16", help="counts every program was timed at")
    ap.add_argument("--reps", type=int, default=3, help="timed runs needed at each count")
    ap.add_argument("--recorded", default="2,4,16", help="counts every program was recorded at")
    ap.add_argument("--failed", default="", help="comma-separated programs the device could not run: "
                    "their failed runs are kept, nothing else asked for")
    ap.add_argument("--check", action="store_true", help="check only: write nothing")
    args = ap.parse_args(argv)
    try:
        counts = [int(x) for x in args.counts.split(",") if x]
        recorded = [int(x) for x in args.recorded.split(",") if x]
    except ValueError:
        print("take_in.py: --counts and --recorded are comma-separated whole numbers", file=sys.stderr)
        return 2
    failed = frozenset(x for x in args.failed.split(",") if x)
    if not (args.data / "calls.jsonl").is_file():
        print(f"take_in.py: {args.data} has no calls.jsonl (not corpus16's data folder)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pack_dir = unpack(args.pack, Path(tmp))
            names, files, calls, runs, resize = plan(pack_dir, args.data, args.samples_only, counts,
                                                     args.reps, recorded,
                                                     set(args.suites.split(",")) if args.suites else None,
                                                     failed)
        except TakeInError as exc:
            print(f"take_in.py: {exc}", file=sys.stderr)
            return 1
        for line in resize:
            print(f"take_in.py: {line}")
        taken = f"{len(set(names) - failed)} programs" + (f" ({len(failed)} failed: its runs only)" if failed else "")
        if args.check:
            print(f"take_in.py: {args.pack.name}: {taken} ready, {len(files)} files (--check: "
                  "nothing written)")
            return 0
        (args.data / "samples").mkdir(exist_ok=True)
        for f in files:
            shutil.copyfile(pack_dir / f, args.data / f)
        if pack_commit(pack_dir):
            shutil.copyfile(pack_dir / "corecast-commit.txt", args.data / "corecast-commit.txt")
    with (args.data / "calls.jsonl").open("a") as out:
        for c in calls:
            out.write(json.dumps({**c, **({"note": args.note} if args.note else {})}) + "\n")
    with (args.data / "runs.jsonl").open("a") as out:
        for r in runs:
            out.write(json.dumps(r) + "\n")
    print(f"take_in.py: {args.pack.name}: {taken}, {len(files)} files into {args.data}, "
          f"calls {', '.join(str(c['call']) for c in calls)}, {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
