"""What a sampled pyopencl launch costs the program's thread, and the process, under
``python -m corecast.opencl``: N launches of a tiny kernel, each waited for
(``queue.finish``); with ``--gap-ms`` (default 10, past the sampling thread's tick) the
program sleeps between them, so that every launch opens a sampling episode and its first
snapshot is taken; ``--gap-ms 0``: back to back, an episode open throughout.  ``CORECAST_WINDOW_MS=60000`` keeps every launch sampled.

    python benchmarks/opencl_snapshot_cost.py [--launches 300] [--gap-ms 10] [--repeats 5] [--base VENV]

Rows: this interpreter's corecast and, with ``--base``, another venv's (before/after),
runs interleaved; each figure the median over the repeats, in microseconds per launch:
the launching thread's CPU time (``time.thread_time``) and the whole process's
(``time.process_time``: the sampling thread and pocl's workers too) over the launch loop,
less the same program run plainly.  CPU time, not wall: the machine may be shared.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

PROGRAM = r"""
import sys, time
import numpy as np
import pyopencl as cl
n, gap = int(sys.argv[1]), float(sys.argv[2]) / 1e3
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
k = cl.Program(ctx, "__kernel void one(__global int *a) { a[get_global_id(0)] = 1; }").build().one
buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 64)
k(queue, (16,), None, buf); queue.finish()  # the first launch's one-off costs left out
t0, p0 = time.thread_time(), time.process_time()
for _ in range(n):
    k(queue, (16,), None, buf)
    queue.finish()
    if gap:
        time.sleep(gap)
print(time.thread_time() - t0, time.process_time() - p0)
"""


def one(python: str, measured: bool, n: int, gap_ms: float, script: str) -> tuple[float, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_") and k != "LD_PRELOAD"}
    env["CORECAST_WINDOW_MS"] = "60000"
    env["CORECAST_QUIET"] = "1"
    cmd = [python, "-m", "corecast.opencl", script, str(n), str(gap_ms)] if measured else \
        [python, script, str(n), str(gap_ms)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    thread_s, process_s = map(float, r.stdout.split()[-2:])
    return thread_s, process_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=300)
    ap.add_argument("--gap-ms", type=float, default=10.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--base", help="a venv with another corecast install: its row too")
    a = ap.parse_args()
    rows = {"this": sys.executable}
    if a.base:
        rows["base"] = os.path.join(a.base, "bin", "python")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROGRAM)
    got: dict[str, list] = {name: [] for name in (*rows, "plain")}
    try:
        for _ in range(a.repeats):
            got["plain"].append(one(sys.executable, False, a.launches, a.gap_ms, f.name))
            for name, python in rows.items():
                got[name].append(one(python, True, a.launches, a.gap_ms, f.name))
    finally:
        os.unlink(f.name)
    med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in got.items()}
    us = 1e6 / a.launches
    print(f"{a.launches} launches, {a.gap_ms:g} ms apart, x {a.repeats} runs; us per launch over plain (plain: "
          f"thread {med['plain'][0] * us:.1f}, process {med['plain'][1] * us:.1f})")
    for name in rows:
        print(f"{name:5s} launching thread {(med[name][0] - med['plain'][0]) * us:7.1f}   "
              f"process {(med[name][1] - med['plain'][1]) * us:7.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
