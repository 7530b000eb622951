"""Issue #40's cost figures in one command: what the preload library, steering and
``--target-machine`` cost where they cannot help, and how close a steered convoy ends to
its best fixed count.  Every case runs its sides in rounds whose order rotates
(interleaved), and the table gives each side's median wall seconds with its spread
(quartiles, min, max) and the median against the case's reference side.

    python benchmarks/steer_suite.py [--runs 15] [--threads 16] [--npb DIR] [--bin DIR]
        [--base VENV] [--npb-programs bt.W,cg.A] [--cases npb,slowdown,convoy,lock,longcall,triad,hotpath]
        [--fixed-counts 1,2] [--account] [--window-ms MS] [--json-out FILE] [--budget S]

Cases (``--threads T``; NPB binaries in ``--npb``, the examples built in ``--bin``):
- ``npb``: bt.W, cg.A (``--npb-programs``; at their best count, T): no corecast, the quiet library
  (``CORECAST_QUIET=1``), the library with ``CORECAST_STEER=1`` (quiet too: no report);
- ``slowdown``: ``omp_slowdown 4000`` steered from T against 1 thread without corecast
  (its best fixed count: 0.26 s against 1.2 s at 2 threads and 3.7 s at 16 on the 16-core
  device, benchmarks/device16/omp_slowdown.csv) and with the quiet library (the library's
  own share); ``--fixed-counts 1,2`` adds 2 threads without corecast to check that, and each
  steered case ends with a line naming its best fixed count and whether each steered side
  is within #40's 15% + 50 ms of it;
- ``convoy``: ``omp_slowdown 20000`` on 2 CPUs (``taskset -c 0,1``), steered from 2
  against 1 thread (the 2-core convoy);
- ``lock``: ``omp_lock_convoy 50000`` (``--bin``: a clang build takes the OMPT path, whose
  mutex callbacks are handed back as libgomp's wrappers are, ``shims/ompt.c``; libomp's own
  part of an attached tool stays) on 2 CPUs, steered from 2 against 1 thread;
- ``longcall``: ``omp_slowdown 20 5000000`` (20 calls of 5M sections: a few calls a
  window, rated between call ends, ``native/boundary.c``) with ``slowdown``'s sides;
- ``triad``: ``omp_triad`` without corecast, under ``corecast run`` and under ``corecast
  run --target-machine opteron6380`` (reports to /dev/null);
- ``hotpath``: ``benchmarks/hotpath.py --threads T --runs R`` (with ``--base``: its base
  sides too): CPU ns per OpenMP call of the library, quiet and reporting, for many short
  regions, many barriers, a dynamic loop and omp_triad's alternating team sizes (its
  table follows the others; its record is the JSON's ``hotpath``).
Cases run in the order ``--cases`` names them, and ``--json-out`` is rewritten after each
one (a device call cut short keeps the cases it finished).  ``--budget S`` ends every case
within S seconds in all: each case gets an equal share of what is left (a case that ends
early leaves its rest to the next) and stops its rounds where the next would pass that share
(at least one round; the table says how many ran; a case after the budget is spent is not
run, but the first always is), so a call's ``timeout`` never cuts a case.  ``--base VENV`` adds the same
corecast sides from another install (a venv holding an older build: before and after in
the same rounds).  Output is checked: a side whose
stdout differs from the reference's is flagged (omp_triad and NPB print timings, so only
their exit status is compared there).  Besides wall time each side's median CPU seconds
(user + system of the run, launcher included) and the library's own CPU (the report's
``own CPU``; sides with a report only) are given, and the paired figures: the median over
rounds of each round's side / reference - 1, wall and CPU (a round's runs share the
machine's state, so the pairs resolve what the sides' spread, +-10% at 16 threads on
2026-11-27, hides: 9 runs did not resolve 3-5%).  After the timed rounds every side that
preloads the library or runs ``corecast run`` runs once more with ``CORECAST_OUTPUT`` (not
timed: the exit then
predicts) for the library's own account, the summary's ``sampler`` object: windows, the
model's window runs, the steered windows that needed none (every region settled), when
steering started the model, and how long the sections went uncounted, with the summary's
``corecast_cpu_s`` (the sampler's and the model's CPU, the exit's prediction included: the
diagnostic run's ``CORECAST_OUTPUT`` makes the exit predict, which a quiet timed run does not)
with the model's share, ``model_cpu_s`` and ``model_start_cpu_s`` (its interpreter's start and
imports), the sampler's ``exit_wait_s`` (the exiting thread's wait for the exit's prediction),
the summary's ``launcher_cpu_s`` (``corecast run``'s launcher, before the program's image) and
its NUMA ``events`` planned and ``events_open`` (``numa_events``, ``numa_events_open``,
``numa_measured``: the roles counted), and the run's CPU (``diag`` in the table and the JSON; ``corecast run`` sides too,
their ``CORECAST_OUTPUT`` passed through the launcher).  ``--account`` makes that run after
every timed run of such a side, in the same rotation, and the table gives their medians
(the JSON keeps each run's, ``accounts``); ``--window-ms`` sets ``CORECAST_WINDOW_MS``.

The device call (issue #40's 16-thread figures; one call, ``carry: [".dev"]``,
``timeout_s: 560``), with ``.dev/`` set up as ``benchmarks/corpus16/README.md`` says
(wheels in ``.dev/whl``, NPB3.0-omp-C in ``.dev/npb`` with ``make.def``) and the commit to
compare with in ``.dev/base`` (``git archive BASE | tar -x -C .dev/base``):

    bash benchmarks/corpus16/setup.sh; export PATH=/tmp/v/bin:$PATH; mkdir -p /tmp/bin $OUT;
    for p in omp_slowdown omp_triad; do gcc -O2 -fopenmp examples/$p.c -o /tmp/bin/$p -lm; done;
    (cd .dev/npb && mkdir -p bin && make BT CLASS=W >/dev/null 2>&1; make CG CLASS=A >/dev/null 2>&1);
    B=; [ -d .dev/base ] && python3 -m venv --system-site-packages /tmp/vb &&
    /tmp/vb/bin/pip install -q --no-index --no-deps .dev/whl/*.whl &&
    /tmp/vb/bin/pip install -q --no-index --no-deps --no-build-isolation .dev/base && B="--base /tmp/vb";
    timeout 500 /tmp/v/bin/python benchmarks/steer_suite.py --runs 15 --threads 16 --npb .dev/npb/bin
    --bin /tmp/bin --cases npb,slowdown,convoy,longcall,triad $B --json-out $OUT/steer_suite.json
    > $OUT/steer_suite.txt 2>&1; tail -70 $OUT/steer_suite.txt

(one line; the ``hotpath`` case, measured twice on 2026-11-27, is left out to keep it within
the call).  About 6 minutes with a base: bt.W 15 x 5 runs of 0.45 s, cg.A 15 x 5 of 0.25 s,
omp_slowdown 15 x 5 of 0.4 s, the convoy 15 x 5 of 1.8 s, omp_triad 15 x 5 of 0.8 s, and
the diagnostic runs; ``longcall`` adds 15 x 5 runs of about 0.5 s at 1 thread (2-core VM)
and its steered sides, whose first call runs whole at 16 threads (not measured yet: if the
call runs out, ``--runs 11``).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecast._native import PRELOAD

HERE_CLI = Path(sys.executable).with_name("corecast")


def preload_of(venv: Path) -> str:
    """The preload library of the corecast installed in ``venv``."""
    py = venv / "bin" / "python"
    return subprocess.run([str(py), "-c", "from corecast._native import PRELOAD; print(PRELOAD)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def side(cmd: list[str], threads: int, preload: str | None = None, steer: bool = False,
         cli: list[str] | None = None, window_ms: str | None = None) -> dict:
    """One way to run a case: ``cli`` (a corecast command line put before ``--``) or the
    library preloaded, quiet, steered or not; ``window_ms``: its CORECAST_WINDOW_MS."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    env["OMP_NUM_THREADS"] = str(threads)
    if preload:
        env.update(LD_PRELOAD=preload, CORECAST_QUIET="1", CORECAST_STEER="1" if steer else "0")
    if window_ms and (preload or cli):
        env["CORECAST_WINDOW_MS"] = window_ms
    argv = [*cli, "--", *cmd] if cli else cmd
    return {"argv": argv, "env": env, "cli": bool(cli)}


def cases(args: argparse.Namespace) -> dict[str, tuple[str, dict[str, dict], bool]]:
    """name -> (reference side, sides, compare stdout)."""
    t, npb, bins, w = args.threads, Path(args.npb), Path(args.bin), args.window_ms
    libs = {"": str(PRELOAD)}
    clis = {"": str(HERE_CLI)}
    if args.base:
        libs["base "] = preload_of(Path(args.base))
        clis["base "] = str(Path(args.base) / "bin" / "corecast")
    out: dict[str, tuple[str, dict[str, dict], bool]] = {}
    for name in args.npb_programs.split(","):
        cmd = [str(npb / name)]
        sides = {"none": side(cmd, t)}
        for tag, lib in libs.items():
            sides[f"{tag}quiet"] = side(cmd, t, lib, window_ms=w)
            sides[f"{tag}steer"] = side(cmd, t, lib, steer=True, window_ms=w)
        out[name] = ("none", sides, False)
    for name, cmd, own in (("slowdown", [str(bins / "omp_slowdown"), "4000"], t),
                           ("convoy", ["taskset", "-c", "0,1", str(bins / "omp_slowdown"), "20000"], 2),
                           ("lock", ["taskset", "-c", "0,1", str(bins / "omp_lock_convoy"), "50000"], 2),
                           ("longcall", [str(bins / "omp_slowdown"), "20", "5000000"], t)):
        sides = {"1 thread": side(cmd, 1)}
        for n in args.fixed_counts:  # more fixed counts without corecast: is 1 the best one?
            if 1 < n <= own:
                sides[f"{n} threads"] = side(cmd, n)
        for tag, lib in libs.items():
            sides[f"{tag}1 thread, quiet"] = side(cmd, 1, lib, window_ms=w)
            sides[f"{tag}steer from {own}"] = side(cmd, own, lib, steer=True, window_ms=w)
        out[name] = ("1 thread", sides, True)
    cmd = [str(bins / "omp_triad")]
    sides = {"none": side(cmd, t)}
    for tag, cli in clis.items():
        sides[f"{tag}run"] = side(cmd, t, cli=[cli, "run"], window_ms=w)
        sides[f"{tag}target-machine"] = side(cmd, t, cli=[cli, "run", "--target-machine", "opteron6380"], window_ms=w)
    out["triad"] = ("none", sides, False)
    # In the order asked: a device call that runs out of time keeps the cases named first.
    order = [k for c in args.cases.split(",") for k in (args.npb_programs.split(",") if c == "npb" else [c])]
    return {k: out[k] for k in order if k in out}


OWN_CPU = re.compile(rb"own CPU ([0-9.]+) s")


def timed(s: dict) -> tuple[float, bytes, int, float, float | None]:
    """Wall seconds, stdout, exit status, the run's CPU seconds (user + system, launcher
    included) and the library's own CPU from its report (None without one: quiet sides)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(s["argv"], env=s["env"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    own = OWN_CPU.search(r.stderr)
    return wall, r.stdout, r.returncode, cpu, float(own.group(1)) if own else None


def paired_median(side: list[float], ref: list[float]) -> float:
    """The median over rounds of side / reference - 1, in % (runs of one round are paired)."""
    return 100 * statistics.median(a / b - 1 for a, b in zip(side, ref) if b > 0)


def diagnose(s: dict) -> dict | None:
    """One more run of a side that preloads the library, with ``CORECAST_OUTPUT``: its
    summary's ``sampler`` object with the summary's ``corecast_cpu_s`` (the sampler's and the
    model's CPU, the exit's prediction included) and the run's CPU seconds (user + system)
    beside it (None where the run wrote none)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "diag.jsonl"
        env = dict(s["env"], CORECAST_OUTPUT=str(out))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(s["argv"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if not out.exists():
            return None
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("event") == "summary":
                numa = rec.get("numa") or {}
                return dict(rec.get("sampler") or {}, corecast_cpu_s=rec.get("corecast_cpu_s"),
                            launcher_cpu_s=rec.get("launcher_cpu_s"), numa_events=numa.get("events"),
                            numa_events_open=numa.get("events_open"), numa_measured=len(numa.get("measured") or []),
                            run_cpu_s=after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return None


ACCOUNT_KEYS = ("windows", "model_runs", "settled_windows", "corecast_cpu_s", "model_cpu_s", "model_start_cpu_s",
                "run_cpu_s", "exit_wait_s", "launcher_cpu_s", "numa_events", "numa_events_open", "numa_measured")


def account_medians(runs: list[dict | None]) -> dict | None:
    """The medians of several diagnostic runs' figures (``ACCOUNT_KEYS``), ``model_started_s``
    the median of those that started the model (None: none did), ``runs`` their number."""
    runs = [r for r in runs if r]
    if not runs:
        return None
    out: dict = {k: statistics.median(r[k] for r in runs) for k in ACCOUNT_KEYS if all(r.get(k) is not None for r in runs)}
    started = [r["model_started_s"] for r in runs if r.get("model_started_s") is not None]
    out["model_started_s"] = statistics.median(started) if started else None
    out["sync_uncounted_s"] = statistics.median(r.get("sync_uncounted_s", 0) for r in runs)
    out["runs"] = len(runs)
    return out


def diag_text(d: dict | None) -> str:
    """The library's own account of a run (medians where several), short: windows, model
    start and runs, windows settled (no model run), corecast's CPU, uncounted s."""
    if not d:
        return "-"
    started = d.get("model_started_s")
    runs = f"{d.get('model_runs'):g}" if d.get("model_runs") is not None else "?"
    model = f"model from {started:.2f} s, {runs} runs" if started is not None else f"model out ({runs} runs)"
    settled = f", {d['settled_windows']:g} settled" if d.get("settled_windows") is not None else ""
    cpu = f", cc cpu {d['corecast_cpu_s']:.3f} s" if d.get("corecast_cpu_s") is not None else ""
    if cpu and d.get("model_cpu_s") is not None:  # the model's share (its start first), where recorded
        cpu += f" (model {d['model_cpu_s']:.3f}, its start {d.get('model_start_cpu_s', 0):.3f})"
    # issue #40: the exit's wait for its prediction, the launcher's CPU, the NUMA events
    # planned and opened (and roles counted), where the summary has them
    extra = "".join(f", {label} {d[k]:.3f} s" for k, label in (("exit_wait_s", "exit wait"),
                                                                ("launcher_cpu_s", "launcher cpu")) if d.get(k) is not None)
    if d.get("numa_events"):
        extra += f", numa events {d['numa_events']:g} ({d.get('numa_events_open', 0):g} open, " \
                 f"{d.get('numa_measured', 0):g} roles counted)"
    return (f"{d.get('windows'):g} windows, {model}{settled}{cpu}{extra}, uncounted {d.get('sync_uncounted_s', 0):.2f} s"
            + (f" (median of {d['runs']})" if d.get("runs", 1) > 1 else ""))


def spread(v: list[float]) -> dict:
    q = statistics.quantiles(v, n=4) if len(v) >= 2 else [v[0]] * 3
    return {"median": statistics.median(v), "q1": q[0], "q3": q[2], "min": min(v), "max": max(v), "runs": len(v)}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def hotpath(args: argparse.Namespace) -> dict:
    """benchmarks/hotpath.py's CPU rounds at the same thread count, its table printed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "hotpath.json"
        cmd = [sys.executable, str(Path(__file__).with_name("hotpath.py")), "--threads", str(args.threads),
               "--runs", str(args.runs), "--json-out", str(out)] + (["--base", args.base] if args.base else [])
        print(f"\nhotpath (load {load()})", flush=True)
        rc = subprocess.run(cmd).returncode
        return json.loads(out.read_text()) if rc == 0 and out.exists() else {"failed": rc}


def another_round(elapsed_s: float, rounds: int, share_s: float) -> bool:
    """Whether a case that ran ``rounds`` rounds in ``elapsed_s`` has time for one more within
    its ``share_s`` of ``--budget``, at its mean round so far; a case always runs one (a
    case with no round has no figure), so a call past its budget still ends with a table."""
    return rounds == 0 or elapsed_s + elapsed_s / rounds <= share_s


STEER_BOUND = (0.15, 0.050)  # #40: a steered run within 15% + 50 ms of its best fixed count


def best_fixed(summary: dict[str, dict]) -> str | None:
    """How a steered case ends against its best fixed count without corecast (the sides
    "N thread(s)", by median): one line, None without a steered side."""
    fixed = {s: m["median"] for s, m in summary.items() if re.fullmatch(r"\d+ threads?", s)}
    steered = {s: m["median"] for s, m in summary.items() if s.startswith("steer from")}
    if not fixed or not steered:
        return None
    best = min(fixed, key=fixed.get)
    bound = fixed[best] * (1 + STEER_BOUND[0]) + STEER_BOUND[1]
    return (f"  best fixed count of {', '.join(fixed)}: {best} ({fixed[best]:.3f} s; within 15% + 50 ms: "
            f"<= {bound:.3f} s); " + "; ".join(
                f"{s} {t:.3f} s ({100 * (t / fixed[best] - 1):+.1f}%, {1000 * (t - fixed[best]):+.0f} ms): "
                + ("within" if t <= bound else "OUTSIDE") for s, t in steered.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--threads", type=int, default=16, help="the programs' own count (NPB, slowdown, triad)")
    ap.add_argument("--npb", default=".dev/npb/bin", help="NPB3.0-omp-C binaries (bt.W, cg.A)")
    ap.add_argument("--bin", default="/tmp/bin", help="omp_slowdown and omp_triad built from examples/")
    ap.add_argument("--base", help="a venv with another corecast build: its sides run in the same rounds")
    ap.add_argument("--npb-programs", default="bt.W,cg.A", help="NPB binaries timed like bt.W and cg.A")
    ap.add_argument("--cases", default="npb,slowdown,convoy,longcall,triad,hotpath")
    ap.add_argument("--fixed-counts", default="1", type=lambda v: [int(x) for x in v.split(",")],
                    help="fixed thread counts without corecast of the steered cases (default 1, the "
                         "reference; more, e.g. 1,2, check that 1 is their best)")
    ap.add_argument("--account", action="store_true",
                    help="a diagnostic run after every timed run of a side with the library (not one per side)")
    ap.add_argument("--window-ms", help="CORECAST_WINDOW_MS of every side with the library")
    ap.add_argument("--json-out", help="write every run's time and the summaries here")
    ap.add_argument("--budget", type=float,
                    help="seconds for the cases' rounds in all: each case gets an equal share of what is "
                         "left and stops its rounds where the next would pass it (default: no limit; "
                         "hotpath is not held to it)")
    args = ap.parse_args()
    deadline = time.monotonic() + args.budget if args.budget else None
    record: dict = {"threads": args.threads, "runs": args.runs, "cpus": os.cpu_count(), "load_before": load(),
                    "window_ms": args.window_ms, "budget_s": args.budget, "cases": {}}
    print(f"{os.cpu_count()} CPUs, {args.threads} threads, {args.runs} interleaved rounds; load {load()}"
          + (f"; budget {args.budget:g} s" if args.budget else ""), flush=True)
    todo = cases(args)
    for k, (name, (ref, sides, same_out)) in enumerate(todo.items()):
        share = (deadline - time.monotonic()) / (len(todo) - k) if deadline else None
        if share is not None and share <= 0 and k > 0:  # the first case runs a round whatever is left
            print(f"\n{name}: not run, --budget spent", flush=True)
            record["cases"][name] = {"reference": ref, "rounds": 0, "sides": {}}
            continue
        started = time.monotonic()
        times: dict[str, list[float]] = {s: [] for s in sides}
        cpus: dict[str, list[float]] = {s: [] for s in sides}
        owns: dict[str, list[float]] = {s: [] for s in sides}
        outs: dict[str, set] = {s: set() for s in sides}
        bad: dict[str, int] = {s: 0 for s in sides}
        names = list(sides)
        accounts: dict[str, list] = {s: [] for s in names if "LD_PRELOAD" in sides[s]["env"] or sides[s]["cli"]}
        for i in range(args.runs):
            if share is not None and not another_round(time.monotonic() - started, i, share):
                break
            for s in names[i % len(names):] + names[:i % len(names)]:
                t, out, rc, cpu, own = timed(sides[s])
                times[s].append(t)
                cpus[s].append(cpu)
                if own is not None:
                    owns[s].append(own)
                outs[s].add(out)
                bad[s] += rc != 0
                if args.account and s in accounts:  # in the same rotation: its own round's load
                    accounts[s].append(diagnose(sides[s]))
        summary = {s: spread(v) for s, v in times.items()}
        if not args.account:
            accounts = {s: [diagnose(sides[s])] for s in accounts}
        diags = {s: account_medians(v) for s, v in accounts.items()}
        rounds = len(times[ref])
        print(f"\n{name} (load {load()})" + (f"; {rounds} of {args.runs} rounds within its {share:.0f} s share "
                                              "of --budget" if rounds < args.runs else ""))
        # CPU medians: on a loaded or oversubscribed machine wall time hides a 0.1 s cost
        print(f"  {'side':26} {'median':>7} {'q1':>7} {'q3':>7} {'min':>7} {'max':>7}  vs {ref:8}"
              f" {'cpu':>6} {'own cpu':>7} {'paired':>7} {'cpu pair':>8}  diag")
        for s, m in summary.items():
            vs = 100 * (m["median"] / summary[ref]["median"] - 1)
            flags = (" EXIT STATUS" if bad[s] else "") + (
                " OUTPUT DIFFERS" if same_out and outs[s] != outs[ref] else "")
            cpu = statistics.median(cpus[s])
            own = statistics.median(owns[s]) if owns[s] else None
            paired = paired_median(times[s], times[ref])
            cpu_paired = paired_median(cpus[s], cpus[ref])
            print(f"  {s:26} {m['median']:7.3f} {m['q1']:7.3f} {m['q3']:7.3f} {m['min']:7.3f} {m['max']:7.3f}"
                  f"  {vs:+8.1f}% {cpu:6.3f} " + (f"{own:7.3f}" if own is not None else f"{'-':>7}")
                  + f" {paired:+6.1f}% {cpu_paired:+7.1f}%  {diag_text(diags.get(s))}" + flags)
            m.update(vs_ref=vs, failed=bad[s], times=times[s], cpu_median=cpu, cpu=cpus[s],
                     own_cpu_median=own, own_cpu=owns[s], paired_pct=paired, cpu_paired_pct=cpu_paired,
                     diag=diags.get(s), accounts=accounts.get(s))
        best = best_fixed(summary)
        if best:
            print(best)
        record["cases"][name] = {"reference": ref, "rounds": rounds, "sides": summary, "best_fixed": best}
        sys.stdout.flush()
        if args.json_out:  # after every case: a call cut short keeps what it measured
            Path(args.json_out).write_text(json.dumps(record, indent=1))
    if "hotpath" in args.cases.split(","):
        record["hotpath"] = hotpath(args)
    record["load_after"] = load()
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
