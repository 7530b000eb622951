"""Measure a corpus of parallel programs at several thread counts, in one budgeted call (#43).

    python benchmarks/corpus16/measure.py --budget 480 --out DIR [--only NAME,...] [--suites SUITE,...]
        [--threads 1,2,4,8,16] [--reps 3] [--samples 2,4] [--tiny] [--manifest FILE] [--sources DIR]
        [--build DIR]

Reads a program manifest (``--manifest``, default ``local/programs.json`` beside this file;
see README.md for its fields), then

* builds the programs whose binary is missing from ``--build`` (one compiler command each,
  run in the program's source folder, writing only ``{bin}``), in parallel;
* times each program's whole process at each thread count (``OMP_NUM_THREADS`` set, and
  ``{threads}`` in its command line), interleaved: repetition by repetition, every program
  and every count once per repetition, the counts in alternating order;
* after the first repetition, records ``corecast run --target 16 --json-out
  DIR/samples/NAME-N.jsonl`` at 2 and 4 threads (``--samples``) and a ``--probe`` recording
  at 16 (those in ``--threads``);
* writes ``lscpu.txt``, ``corecast-commit.txt`` and ``compiler.txt`` into DIR.

``--record-only`` skips the timed runs; ``--rerecord`` redoes the recordings that another
corecast build made (each recording's log line names its build: a hash of the preload
library), keeping the curves.

Output is what ``benchmarks/scale16.py`` reads: ``DIR/NAME.csv`` (``threads,time``, a
repeated count is a repetition) and ``DIR/samples/NAME-N.jsonl``.  Every finished run is a
line of ``DIR/runs.jsonl``; a later call with the same ``--out`` skips what that log holds,
so a call stopped by its budget resumes where it stopped.  A run starts only if its
expected time (its program's slowest run so far at that count, or a guess from fewer
threads) fits in what is left of ``--budget``; a run still going at the budget is killed
and not logged (the next call runs it again).

Every message is one line; a failing program is logged and left out, never a traceback.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_MANIFEST = HERE / "local" / "programs.json"
SAMPLE_COUNTS = (2, 4)  # plain recordings, what scale16.py replays by default
PROBE_COUNT = 16  # the --probe recording
TARGET = 16
FIRST_GUESS_S = 10.0  # expected time of a program never run at any count (sizes aim at 1-4 s)


class KitError(Exception):
    """A problem with the call's input: reported as one line, exit status 2."""


@dataclass
class Program:
    name: str
    suite: str
    src: Path  # folder the build and run commands start in
    build: str | None  # shell command writing {bin}; None: nothing to build (a script)
    run: str  # command line with {bin} {src} {threads} {size} {python} {work}
    size: str
    url: str = ""
    note: str = ""
    ok_exit: tuple[int, ...] = (0,)  # a program that exits 1 when its size is not its suite's default
    bin: Path = field(default=Path())

    def argv(self, threads: int, work: Path) -> list[str]:
        return [a.format(bin=self.bin, src=self.src, threads=threads, size=self.size, kit=HERE,
                         python=sys.executable, work=work) for a in shlex.split(self.run)]


def load_manifest(path: Path, sources: Path | None, build: Path, tiny: bool) -> list[Program]:
    """Programs of ``path`` (see README.md: ``sources`` names where each source's tree
    lives; a source with ``"local"`` is a folder relative to the manifest)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise KitError(f"no manifest at {path} (see benchmarks/corpus16/README.md)") from None
    except (OSError, ValueError) as exc:
        raise KitError(f"{path}: not a readable JSON manifest: {exc}") from None
    srcs = data.get("sources", {})
    root = sources if sources is not None else path.parent / data.get("sources_dir", "sources")
    progs = []
    for i, p in enumerate(data.get("programs", [])):
        try:
            s = srcs[p["source"]]
            base = (path.parent / s["local"]) if "local" in s else root / p["source"]
            size = str(p["tiny"] if tiny else p["size"])
            prog = Program(p["name"], p["suite"], (base / p.get("dir", ".")).resolve(), p.get("build"),
                           p["run"], size, s.get("url", ""), p.get("note", ""), tuple(p.get("ok_exit", [0])))
        except (KeyError, TypeError) as exc:
            raise KitError(f"{path}: program #{i + 1} lacks {exc} (name, suite, source, run, size, tiny)") from None
        prog.bin = (build / prog.name).resolve()
        progs.append(prog)
    names = [p.name for p in progs]
    if len(set(names)) != len(names):
        raise KitError(f"{path}: program names repeat")
    return progs


# ---------------------------------------------------------------- building

def build_one(prog: Program, timeout: float) -> str | None:
    """Build ``prog`` unless its binary exists; None, or the one-line reason it failed."""
    if prog.build is None or prog.bin.exists():
        return None
    if not prog.src.is_dir():
        return f"source folder {prog.src} is missing (run sources.py export)"
    tmp = prog.bin.with_name(prog.bin.name + ".part")  # a half-written binary is never taken as built
    cmd = prog.build.format(bin=shlex.quote(str(tmp)), src=shlex.quote(str(prog.src)), size=prog.size,
                            kit=shlex.quote(str(HERE)))
    try:
        r = subprocess.run(cmd, shell=True, cwd=prog.src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"build took over {timeout:.0f} s"
    if r.returncode != 0 or not tmp.exists():
        last = [ln for ln in r.stdout.decode(errors="replace").splitlines() if "error" in ln.lower()]
        return f"build failed (exit {r.returncode}): {(last or ['no error line'])[0][:200]}"
    tmp.rename(prog.bin)
    return None


def build_all(progs: list[Program], build: Path, log: "Log", deadline: float) -> list[Program]:
    """Build what is missing in parallel; the programs that can run."""
    build.mkdir(parents=True, exist_ok=True)
    todo = [p for p in progs if p.build is not None and not p.bin.exists()]
    failed: dict[str, str] = {}
    if todo:
        print(f"corpus16: building {len(todo)} program(s)", flush=True)
        jobs = max(1, os.cpu_count() or 1)
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futs = {pool.submit(build_one, p, max(10.0, min(180.0, deadline - time.monotonic()))): p for p in todo}
            for fut in concurrent.futures.as_completed(futs):
                p, why = futs[fut], fut.result()
                if why:
                    failed[p.name] = why
                    print(f"corpus16: {p.name}: {why}", flush=True)
                    log.note(kind="build", name=p.name, error=why)
    return [p for p in progs if p.name not in failed]


# ---------------------------------------------------------------- the run log

class Log:
    """``DIR/runs.jsonl``: one line per finished run (and per build failure)."""

    def __init__(self, out: Path, call: int) -> None:
        self.path = out / "runs.jsonl"
        self.call = call
        self.done: dict[tuple, dict] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a killed call: that run is simply redone
                if rec.get("kind") in ("time", "sample"):
                    self.done[key_of(rec)] = rec

    def note(self, **rec: object) -> None:
        rec["call"] = self.call
        with self.path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        if rec.get("kind") in ("time", "sample"):
            self.done[key_of(rec)] = rec  # type: ignore[arg-type]


def key_of(rec: dict) -> tuple:
    return (rec["kind"], rec["name"], int(rec["threads"]), int(rec.get("rep", 0)))


def expected_s(log: Log, name: str, n: int) -> float:
    """The longest this program took at ``n`` threads so far; else its time at the
    nearest smaller count measured (more threads rarely take longer by much), else a guess."""
    same = [r["time_s"] for r in log.done.values() if r["name"] == name and r["threads"] == n and "time_s" in r]
    if same:
        return max(same)
    fewer = [(r["threads"], r["time_s"]) for r in log.done.values()
             if r["name"] == name and r["kind"] == "time" and "time_s" in r and r["threads"] <= n]
    if fewer:
        return max(t for c, t in fewer if c == max(c for c, _ in fewer))
    return FIRST_GUESS_S


# ---------------------------------------------------------------- one run

def timed(argv: list[str], env: dict, cwd: Path, timeout: float) -> tuple[float, int | None, str]:
    """Wall seconds, exit status (None: killed at ``timeout``) and stderr's last line."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - t0, None, "timeout"
    except OSError as exc:
        return time.perf_counter() - t0, 127, str(exc)
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    return time.perf_counter() - t0, r.returncode, (lines[-1][:300] if lines else "")


def env_for(n: int) -> dict:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(n)
    env["CORPUS_THREADS"] = str(n)  # shim/nprocs.h: programs that count online CPUs
    env.pop("CORECAST_OUTPUT", None)  # only the recordings write JSON Lines
    return env


def library_id() -> str:
    """The corecast build that records (a hash of its preload library): recordings made by
    another build are redone with ``--rerecord``."""
    import hashlib
    try:
        from corecast._native import PRELOAD
        return hashlib.sha256(Path(PRELOAD).read_bytes()).hexdigest()[:12]
    except (ImportError, OSError):
        return "unknown"


def corecast_argv() -> list[str]:
    """``corecast`` of the Python running this script (its venv), else the one on PATH."""
    exe = Path(sys.executable).with_name("corecast")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("corecast")
    if found:
        return [found]
    return [sys.executable, "-m", "corecast"]


# ---------------------------------------------------------------- outputs

def write_csv(out: Path, prog: Program, log: Log, host: str) -> None:
    rows = sorted((r["threads"], r["rep"], r["time_s"]) for r in log.done.values()
                  if r["kind"] == "time" and r["name"] == prog.name and r.get("rc") == 0)
    if not rows:
        return
    head = (f"# source: {prog.suite} {prog.name} ({prog.url or 'this repository'}), size {prog.size}, "
            f"OMP_NUM_THREADS={{n}}; {host}; wall time of the whole process, counts interleaved "
            f"(benchmarks/corpus16/measure.py)\n# suite: {prog.suite}\n# metric: time\nthreads,time\n")
    tmp = out / f".{prog.name}.csv.part"
    tmp.write_text(head + "".join(f"{n},{t:.4f}\n" for n, _, t in rows))
    tmp.replace(out / f"{prog.name}.csv")


def command_text(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30).stdout.decode(
            errors="replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{argv[0]}: not available ({exc})\n"


def write_meta(out: Path, call: int) -> str:
    """lscpu, compiler and corecast commit into ``out`` (a later call on another host
    writes its own ``lscpu-callN.txt`` beside the first); returns the CPU's model name."""
    lscpu = command_text(["lscpu"])
    first = out / "lscpu.txt"
    if not first.exists():
        first.write_text(lscpu)
    elif first.read_text() != lscpu:
        (out / f"lscpu-call{call}.txt").write_text(lscpu)
        print(f"corpus16: this host's lscpu differs from lscpu.txt: written to lscpu-call{call}.txt", flush=True)
    comp = command_text(["gcc", "--version"]).splitlines()[:1] + command_text(["g++", "--version"]).splitlines()[:1]
    (out / "compiler.txt").write_text("\n".join(comp) + f"\npython {platform.python_version()}\n")
    rev = command_text(["git", "-C", str(REPO), "rev-parse", "HEAD"]).strip()
    dirty = command_text(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"]).strip()
    (out / "corecast-commit.txt").write_text(f"{rev}{' (with uncommitted changes)' if dirty else ''}\n")
    model = [ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if ln.startswith("Model name")]
    cpus = [ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if ln.startswith("CPU(s)")]
    return f"{(model or ['unknown CPU'])[0]}, {(cpus or ['?'])[0]} CPUs"


# ---------------------------------------------------------------- the plan

def plan(progs: list[Program], counts: list[int], reps: int,
         sample_counts: tuple[int, ...] = SAMPLE_COUNTS) -> list[tuple[str, Program, int, int]]:
    """(kind, program, threads, rep) in the order they run: repetition 0 of every program
    and count, then the recordings, then the other repetitions; counts alternate in order."""
    steps: list[tuple[str, Program, int, int]] = []
    samples = [n for n in (*sample_counts, PROBE_COUNT) if n in counts]
    for rep in range(reps):
        order = counts if rep % 2 == 0 else counts[::-1]
        for prog in progs:
            steps.extend(("time", prog, n, rep) for n in order)
        if rep == 0:
            steps.extend(("sample", prog, n, 0) for prog in progs for n in samples)
    return steps


def parse_counts(text: str, flag: str = "--threads") -> list[int]:
    try:
        counts = sorted({int(c) for c in text.split(",") if c.strip()})
    except ValueError:
        raise KitError(f"{flag} {text!r}: not a comma-separated list of whole numbers") from None
    if not counts or counts[0] < 1:
        raise KitError(f"{flag} {text!r}: counts must be 1 or more")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="results folder (resumed if it holds runs.jsonl)")
    ap.add_argument("--budget", type=float, default=480.0, help="seconds this call may take in all (default 480)")
    ap.add_argument("--threads", default="1,2,4,8,16", help="thread counts (default 1,2,4,8,16)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions of each count (default 3)")
    ap.add_argument("--only", default="", help="comma-separated program names (default: all)")
    ap.add_argument("--suites", "--suite", dest="suites", default="",
                    help="comma-separated suites (default: all; e.g. only the held-out ones)")
    ap.add_argument("--tiny", action="store_true", help="the programs' tiny sizes (a quick check of the kit)")
    ap.add_argument("--timeout", type=float, default=60.0, help="longest one run may take (default 60 s)")
    ap.add_argument("--manifest", default=str(DEFAULT_MANIFEST), help="program manifest (JSON)")
    ap.add_argument("--sources", default=None, help="folder holding each source's tree "
                    "(default: the manifest's sources_dir)")
    ap.add_argument("--build", default=None, help="folder for the binaries (default: build/ in this kit's "
                    "folder, or build-tiny/ with --tiny)")
    ap.add_argument("--build-only", action="store_true", help="build and stop")
    ap.add_argument("--record-only", action="store_true", help="only the corecast recordings, no timed runs")
    ap.add_argument("--samples", default=",".join(map(str, SAMPLE_COUNTS)),
                    help="counts of the plain recordings (default 2,4; 1 gives scale16.py --history 1 "
                    "the one-thread calls a --probe run would measure), those in --threads")
    ap.add_argument("--rerecord", action="store_true", help="redo recordings made by another corecast build "
                    "(after a change to the library; the curves stay)")
    args = ap.parse_args(argv)
    start = time.monotonic()
    deadline = start + args.budget
    try:
        counts = parse_counts(args.threads)
        sample_counts = tuple(parse_counts(args.samples, "--samples")) if args.samples.strip() else ()
        manifest = Path(args.manifest).resolve()
        build = Path(args.build) if args.build else HERE / ("build-tiny" if args.tiny else "build")
        progs = load_manifest(manifest, Path(args.sources) if args.sources else None, build.resolve(), args.tiny)
        only = [n for n in args.only.split(",") if n]
        unknown = sorted(set(only) - {p.name for p in progs})
        if unknown:
            raise KitError(f"--only: no program named {', '.join(unknown)} in {manifest}")
        suites = [s for s in args.suites.split(",") if s]
        unknown = sorted(set(suites) - {p.suite for p in progs})
        if unknown:
            raise KitError(f"--suites: no suite named {', '.join(unknown)} in {manifest}")
        progs = [p for p in progs if (not only or p.name in only) and (not suites or p.suite in suites)]
        if not progs:
            raise KitError("no program selected")
        out = Path(args.out)
        (out / "samples").mkdir(parents=True, exist_ok=True)
    except KitError as exc:
        print(f"corpus16: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"corpus16: error: {exc.filename or ''}: {exc.strerror}", file=sys.stderr)
        return 2
    calls = out / "calls.jsonl"
    call = 1 + (len(calls.read_text().splitlines()) if calls.exists() else 0)
    log = Log(out, call)
    host = write_meta(out, call)
    with calls.open("a") as f:
        f.write(json.dumps({"call": call, "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "host": host,
                            "budget_s": args.budget, "threads": counts, "tiny": args.tiny,
                            "programs": [p.name for p in progs]}) + "\n")
    progs = build_all(progs, build.resolve(), log, deadline)
    if args.build_only:
        print(f"corpus16: {len(progs)} program(s) built in {time.monotonic() - start:.0f} s", flush=True)
        return 0
    cc = corecast_argv()
    lib = library_id()
    work = out / "work"  # a scratch folder programs may write into ({work})
    work.mkdir(exist_ok=True)
    bad: set[str] = {r["name"] for r in log.done.values() if r.get("rc") not in (0, None) and r["kind"] == "time"}
    ran = 0
    stopped = False
    def done(kind: str, name: str, n: int, rep: int) -> bool:
        rec = log.done.get((kind, name, n, rep))
        return rec is not None and not (kind == "sample" and args.rerecord and rec.get("lib") != lib)

    steps = [s for s in plan(progs, counts, args.reps, sample_counts) if s[0] == "sample" or not args.record_only]
    for kind, prog, n, rep in steps:
        if done(kind, prog.name, n, rep) or prog.name in bad:
            continue
        left = deadline - time.monotonic()
        guess = expected_s(log, prog.name, n) * (1.5 if kind == "sample" else 1.1) + 0.5
        if guess > left:
            stopped = True
            break
        argv = prog.argv(n, work)
        if kind == "sample":
            rec = out / "samples" / f"{prog.name}-{n}.jsonl"
            argv = [*cc, "run", "--target", str(TARGET), "--quiet", *(["--probe"] if n == PROBE_COUNT else []),
                    "--json-out", str(rec), "--", *argv]
        limit = min(args.timeout, left)
        dt, rc, err = timed(argv, env_for(n), prog.src, limit)
        if rc is None and limit < args.timeout:
            stopped = True  # killed by the budget, not by the program's own time: run it next call
            break
        ran += 1
        if rc in prog.ok_exit:
            rc = 0
        log.note(kind=kind, name=prog.name, suite=prog.suite, threads=n, rep=rep, time_s=round(dt, 4),
                 rc=-1 if rc is None else rc, err=err if rc != 0 else "", **({"lib": lib} if kind == "sample" else {}))
        if rc != 0:
            if kind == "time":  # a failed recording loses only that recording
                bad.add(prog.name)
            print(f"corpus16: {prog.name} at {n} threads{' (corecast run)' if kind == 'sample' else ''}: "
                  f"{'timed out' if rc is None else f'exit {rc}'}: {err or 'no message'}; left out", flush=True)
        if kind == "time":
            write_csv(out, prog, log, host)
    todo = sum(1 for k, p, n, r in steps if not done(k, p.name, n, r) and p.name not in bad)
    state = "stopped at the budget" if stopped else "done"
    print(f"corpus16: {state}: {ran} run(s) in {time.monotonic() - start:.0f} s this call, {todo} left"
          f"{', failed: ' + ','.join(sorted(bad)) if bad else ''}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("corpus16: interrupted; the next call resumes from runs.jsonl", file=sys.stderr)
        sys.exit(130)
