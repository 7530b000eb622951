"""What fails 1 run in 20: varied hosts run many times under load, each way of running
corecast compared with the bare run of the same host.

    python benchmarks/stress.py [--repeat 20] [--only HOST[:MODE]] [--no-load] [--env N=V] [--show]

Hosts (benchmarks/stress_host.c and stress_host.py, and examples/): `omp` (regions, a task
tree, an omp lock, a critical section), `pthreads` (examples/pthreads_sync.c: mutex,
condition variable, barrier, rwlock, semaphore), `fork` (forks a child, forks one that
execs sh, then execs echo), `sigterm` and `abort` (OpenMP, then killed by their own signal),
`thread-exit` (exit(5) from a thread while two others run OpenMP regions), `signals` (a SIGALRM
every 200 us without SA_RESTART through OpenMP regions and semaphore waits), `steer` (two
OpenMP regions called 3000 times, about 1 s: an integer reduction and a critical-section
convoy, so that --steer steps a team and --probe probes), `nested` (teams a task or a single block
starts at 2 active levels, then teams of one five deep), `clang-omp`, `clang-nested`,
`clang-signals` (the same built with clang -fopenmp: libomp, measured through OMPT; when clang
builds OpenMP; not thread-exit: libomp tears itself down in its destructor under the
threads still in regions, and the bare run crashes by itself, 3 of 150: benchmarks/exit_race.py
compares its rates), `throw` (benchmarks/stress_throw.cpp: OpenMP
threads throw and catch C++ exceptions through a few frames; libgcc's unwinder finds objects
by _dl_find_object), `throw-libunwind` (the same linked with libunwind8, whose unwinder asks
dl_iterate_phdr, which the preload library wraps, for each frame), `py-threads`
(Python threads, Lock and Queue, sys.exit(7)), `py-osexit` (os._exit(5) from a thread while
others run), `py-fork` (os.fork while threads run; the child sys.exit(3)s), `opencl` (examples/opencl_two_kernels.py on pocl), `mpi` (examples/mpi_halo.c,
2 ranks under mpirun).  Modes: `bare`, `run` (`corecast run`), `steer`, `probe`, `json`
(`--quiet --json-out F`), and for Python hosts `opencl` (`python -m corecast.opencl`).

Each host x mode runs --repeat times with two busy loops (`yes > /dev/null`) beside it, then
once without them, each run in a fresh working folder, with a hang guard of 120 s.  A run
held when, against one bare run without load: its stdout bytes, its exit status (or signal)
and the files it wrote are the same; its JSON Lines (json mode; ranks' files for mpi) parse
line by line, and there are some when the program ends by exit rather than a signal; its
stderr has no Python traceback, "internal error" or sanitizer-like message that the bare
run's lacks.  One line per host x mode: `held N/N` or `DIFFERS k/N: what` (the first 3
differences), and the wall time's median and worst against the bare mode's median under
load (a run over 10x that and 1 s more is reported as `slow`, not a failure: load makes it
so).  Exit
status 1 when any differs.  Nothing here depends on speed but the `slow` note.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
PY = sys.executable
GUARD_S = 120
SLOW = 10.0
SLOW_ABOVE_S = 1.0  # and this much over it: the model's start alone is 10x a program of 30 ms
LIBUNWIND = Path("/usr/lib/x86_64-linux-gnu/libunwind.so.8")  # libunwind8 (nongnu), if installed
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
# What a run's stderr may not say unless the bare run's says it too.
BAD_STDERR = re.compile(r"Traceback \(most recent call last\)|internal error|Sanitizer|runtime error:"
                        r"|double free|corrupted|stack smashing|malloc\(\)|Segmentation fault|core dumped"
                        r"|Fatal Python error|Assertion .* failed", re.I)


def build(work: Path) -> dict[str, tuple[str, list[str]]]:
    """host -> (kind: c, py or mpi; argv)."""
    cc = lambda src, out, *flags: subprocess.run([flags[0], "-O2", *flags[1:], str(src), "-o", str(work / out)],
                                                 check=True)
    cc(ROOT / "benchmarks" / "stress_host.c", "stress_host", "gcc", "-fopenmp", "-pthread")
    cc(ROOT / "examples" / "pthreads_sync.c", "pthreads_sync", "gcc", "-pthread")
    hosts = {m: ("c", [str(work / "stress_host"), m]) for m in ("omp", "fork", "sigterm", "abort", "thread-exit",
                                                              "signals", "steer", "nested")}
    if clang_openmp(work):  # libomp: corecast measures it through OMPT, not libgomp's entry points
        cc(ROOT / "benchmarks" / "stress_host.c", "stress_host_clang", "clang", "-fopenmp", "-pthread")
        hosts.update({f"clang-{m}": ("c", [str(work / "stress_host_clang"), m])
                      for m in ("omp", "nested", "signals")})  # not thread-exit: libomp's own exit races
    hosts["pthreads"] = ("c", [str(work / "pthreads_sync"), "200", "4"])
    cc(ROOT / "benchmarks" / "stress_throw.cpp", "stress_throw", "g++", "-fopenmp")
    hosts["throw"] = ("c", [str(work / "stress_throw")])
    if LIBUNWIND.exists():  # its unwinder asks dl_iterate_phdr (wrapped) for every frame; libgcc's does not
        cc(ROOT / "benchmarks" / "stress_throw.cpp", "stress_throw_libunwind", "g++", "-fopenmp",
           "-Wl,--no-as-needed", str(LIBUNWIND))  # needed though only libstdc++'s throw calls it
        hosts["throw-libunwind"] = ("c", [str(work / "stress_throw_libunwind")])
    script = str(ROOT / "benchmarks" / "stress_host.py")
    hosts["py-threads"] = ("py", [PY, script, "threads"])
    hosts["py-osexit"] = ("py", [PY, script, "osexit"])
    hosts["py-fork"] = ("py", [PY, script, "fork"])
    hosts["opencl"] = ("py", [PY, str(ROOT / "examples" / "opencl_two_kernels.py"), "16384", "4"])
    if shutil.which("mpicc") and shutil.which("mpirun"):
        cc(ROOT / "examples" / "mpi_halo.c", "mpi_halo", "mpicc")
        hosts["mpi"] = ("mpi", [str(work / "mpi_halo"), "20000", "20"])
    return hosts


def clang_openmp(work: Path) -> bool:
    """Whether clang builds and runs an OpenMP program here (libomp installed)."""
    if not shutil.which("clang"):
        return False
    src, out = work / "probe.c", work / "probe"
    src.write_text("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
    try:
        return (subprocess.run(["clang", "-fopenmp", str(src), "-o", str(out)], capture_output=True).returncode == 0
                and subprocess.run([str(out)], capture_output=True, timeout=30).returncode == 0)
    except (OSError, subprocess.TimeoutExpired):
        return False


def modes(kind: str) -> list[str]:
    return ["bare", "run", "steer", "probe", "json"] + (["opencl"] if kind == "py" else [])


def command(kind: str, argv: list[str], mode: str, jsonl: str) -> list[str]:
    """The argv that runs host ``argv`` in ``mode`` (``jsonl``: the JSON Lines path)."""
    corecast = str(BIN / "corecast")
    pre = {"bare": [], "run": [corecast, "run", "--"], "steer": [corecast, "run", "--steer", "--"],
           "probe": [corecast, "run", "--probe", "--"],
           "json": [corecast, "run", "--quiet", "--json-out", jsonl, "--"]}.get(mode)
    if mode == "opencl":
        return [PY, "-m", "corecast.opencl", *argv[1:]]
    return [*MPIRUN, *pre, *argv] if kind == "mpi" else [*pre, *argv]


EXTRA_ENV: dict[str, str] = {}  # --env: every run's, the bare runs' too


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env.setdefault("OMP_NUM_THREADS", "2")
    env.update(EXTRA_ENV)
    return env


def json_problem(folder: Path, want_lines: bool) -> str:
    files = sorted(folder.glob("*.jsonl"))
    if want_lines and not any(f.stat().st_size for f in files):
        return "no JSON lines"
    for f in files:
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            try:
                json.loads(line)
            except ValueError as e:
                return f"{f.name} line {n}: {e}: {line[:80]!r}"
    return ""


def run_once(kind: str, argv: list[str], mode: str, work: Path) -> dict:
    """One run in a fresh folder: what the program left, and what corecast may not leave."""
    d = Path(tempfile.mkdtemp(dir=work))
    cwd, jdir = d / "cwd", d / "json"
    cwd.mkdir()
    jdir.mkdir()
    jsonl = str(jdir / ("r{rank}.jsonl" if kind == "mpi" else "r.jsonl"))
    t0 = time.monotonic()
    try:
        r = subprocess.run(command(kind, argv, mode, jsonl), cwd=cwd, env=clean_env(), capture_output=True,
                           timeout=GUARD_S)
        out, err, status = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, status = e.stdout or b"", e.stderr or b"", "hang"
    wall = time.monotonic() - t0
    files = {p.name: p.read_bytes() for p in sorted(cwd.iterdir()) if p.is_file() and not p.name.startswith("core")}
    res = {"stdout": out, "status": status, "files": files, "wall": wall,
           "stderr marks": sorted(set(m.group(0) for m in BAD_STDERR.finditer(err.decode(errors="replace")))),
           "stderr": err}
    if mode == "json":
        res["json"] = json_problem(jdir, isinstance(status, int) and status >= 0)
    shutil.rmtree(d, ignore_errors=True)
    return res


def differences(got: dict, base: dict) -> list[str]:
    diff = [f"{k}: {got[k]!r:.160} != {base[k]!r:.160}" for k in ("stdout", "status", "files") if got[k] != base[k]]
    extra = [m for m in got["stderr marks"] if m not in base["stderr marks"]]
    if extra or got["status"] != base["status"]:
        tail = got["stderr"].decode(errors="replace").strip().splitlines()[-3:]
        diff.append(f"stderr says {extra}: {' | '.join(tail)!r:.300}")
    if got.get("json"):
        diff.append(f"json: {got['json']}")
    return diff


class Load:
    """Two busy loops beside the runs, ended by stop()."""

    def __init__(self, on: bool):
        self.procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2 if on else 0)]

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def cell(kind: str, argv: list[str], mode: str, base: dict, work: Path, repeat: int, load: bool, show) -> tuple[int, int, list[str], list[float]]:
    """(runs, differing runs, first differences, loaded walls) of one host x mode."""
    runs, bad, notes, walls = 0, 0, [], []
    busy = Load(load)
    for loaded in [True] * repeat + [False]:
        if not loaded:
            busy.stop()
        got = run_once(kind, argv, mode, work)
        runs += 1
        if loaded:
            walls.append(got["wall"])
        diff = differences(got, base)
        if show:
            show(f"{'load' if loaded else 'idle'} {got['wall']:.2f}s status {got['status']} {diff}")
        if diff:
            bad += 1
            if len(notes) < 3:
                notes.append(f"run {runs}{'' if loaded else ' (no load)'}: " + "; ".join(diff))
    busy.stop()
    return runs, bad, notes, walls


def main(args: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=20, help="runs under load per host x mode")
    ap.add_argument("--only", action="append", help="HOST or HOST:MODE (repeatable, or comma-separated)")
    ap.add_argument("--no-load", action="store_true", help="no busy loops beside the runs")
    ap.add_argument("--show", action="store_true", help="a line per run")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="set in every run (e.g. CORECAST_WINDOW_MS=10: the sampler in more of each run)")
    ap.add_argument("--keep", help="keep the built hosts in this folder")
    a = ap.parse_args(args)
    if a.repeat < 1:
        print("stress: --repeat must be at least 1", file=sys.stderr)
        return 2
    EXTRA_ENV.update(kv.split("=", 1) for kv in a.env if "=" in kv)
    a.only = [w for words in a.only or [] for w in words.split(",") if w]  # as the other benchmarks' --only
    work = Path(a.keep or tempfile.mkdtemp(prefix="stress-"))
    work.mkdir(parents=True, exist_ok=True)
    bad = 0
    try:
        hosts = build(work)
        wanted = [(h, m) for h, (kind, _) in hosts.items() for m in modes(kind)
                  if not a.only or h in a.only or f"{h}:{m}" in a.only]
        if a.only and not wanted:
            print(f"stress: nothing matches {a.only} (hosts: {', '.join(hosts)})", file=sys.stderr)
            return 2
        bases: dict[str, dict] = {}
        bare_med: dict[str, float] = {}
        for host, mode in wanted:
            kind, argv = hosts[host]
            if host not in bases:
                bases[host] = run_once(kind, argv, "bare", work)
            show = (lambda line, h=host, m=mode: print(f"    {h}:{m} {line}", flush=True)) if a.show else None
            runs, nbad, notes, walls = cell(kind, argv, mode, bases[host], work, a.repeat, not a.no_load, show)
            med = statistics.median(walls) if walls else 0.0
            if mode == "bare":
                bare_med[host] = med
            ref = bare_med.get(host) or bases[host]["wall"]
            worst = max(walls, default=0.0)
            slow = (f"  slow: worst {worst / ref:.0f}x bare" if ref > 0 and worst > SLOW * ref
                    and worst > ref + SLOW_ABOVE_S else "")
            bad += nbad > 0
            head = f"held {runs}/{runs}" if not nbad else f"DIFFERS {nbad}/{runs}"
            print(f"{host + ':' + mode:20} {head:14} wall median {med:.2f}s worst {worst:.2f}s{slow}"
                  + "".join(f"\n    {n}" for n in notes), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
