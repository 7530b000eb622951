"""What probing (CORECAST_PROBE=1) adds to a run: each command runs under the preload
library with probing off and on, alternating (the order flips each round), and the table
gives the median wall seconds of each side, the difference and each side's minimum (the least disturbed run), next to what the library
itself estimated (the regions' summed probe_extra_s against their summed wall time).

    python benchmarks/probe_cost.py [--runs 5] [--model] 'CMD ARGS' ['CMD ARGS' ...]

Without ``--model`` the runs are quiet with no output file, so the model never starts:
the figures are the probes' own cost.  With ``--model`` every run writes JSON Lines and the
model predicts each window, as in real use (a probed region is predicted by the standard
library alone: its probes measure T(1), they do not call for a history fit with numpy and
scipy).  The environment (OMP_NUM_THREADS, ...) is the caller's.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corecast._native import PRELOAD


def one_run(cmd: list[str], probe: bool, output: Path | None) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORECAST_")}
    env.update(LD_PRELOAD=str(PRELOAD), CORECAST_QUIET="1", CORECAST_PROBE="1" if probe else "0")
    if output is not None:
        output.unlink(missing_ok=True)
        env["CORECAST_OUTPUT"] = str(output)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def estimate(path: Path) -> tuple[int, int, float, float]:
    """Regions probed, probe calls, summed probe_extra_s and wall_s of the regions."""
    regions = [r for r in map(json.loads, path.read_text().splitlines()) if r["event"] == "region"]
    return (sum(1 for r in regions if r["probe_calls"]), sum(r["probe_calls"] for r in regions),
            sum(r["probe_extra_s"] for r in regions), sum(r["wall_s"] for r in regions))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", action="store_true", help="JSON output: the model runs too")
    ap.add_argument("commands", nargs="+")
    args = ap.parse_args()
    print(f"{'command':40} {'off s':>7} {'on s':>7} {'diff':>7} {'min off':>7} {'min on':>7}  "
          "estimate (library)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cc.jsonl"
        for text in args.commands:
            cmd = shlex.split(text)
            times: dict[bool, list[float]] = {False: [], True: []}
            for i in range(args.runs):
                for probe in ((False, True) if i % 2 == 0 else (True, False)):
                    times[probe].append(one_run(cmd, probe, out if args.model else None))
            one_run(cmd, True, out)  # once more with output: the library's own estimate
            probed, calls, extra, wall = estimate(out)
            off, on = statistics.median(times[False]), statistics.median(times[True])
            print(f"{text[-40:]:40} {off:7.3f} {on:7.3f} {100 * (on - off) / off:+6.1f}% "
                  f"{min(times[False]):7.3f} {min(times[True]):7.3f}  "
                  f"{probed} regions, {calls} probe calls, extra {extra:+.4f} s of {wall:.3f} s "
                  f"({100 * extra / max(wall - extra, 1e-12):+.2f}%)")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
