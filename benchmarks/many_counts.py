"""How ``corecast.predict`` copes with many measured counts.

Each case is a synthetic USL-shaped time curve ``T(n) = (1 + s (n-1) + k n (n-1)) / n``
measured at every count 1..COUNTS with 2% multiplicative noise, its minimum placed at
count MIN (k = (1 - s) / MIN^2).  A case marked ``s`` (``10000:195s``) also carries two
stall columns, the serial and the contention share of the time summed over threads
(``s (n-1)`` and ``k n (n-1)``), so auto adds ESTIMA.  Every case runs in its own process (so a slow one can be
cut off by ``--timeout``) with the default method (auto) and default ``--upto`` (twice the
largest count).  Printed per case: wall seconds, the preferred count, the best measured
count, and how much slower the preferred count was measured than the best one
(``measured[preferred] / min(measured) - 1``; "-" when the preferred count lies beyond the
measured range).

    python benchmarks/many_counts.py [--cases 100:30,1000:195,10000:195s] [--timeout 600]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

SERIAL = 0.05
NOISE = 0.02
SEED = 7
DEFAULT_CASES = "100:30,1000:195,2000:195,10000:195,10000:195s"


def curve(count: int, minimum: int, seed: int = SEED) -> tuple[np.ndarray, np.ndarray, dict]:
    """Counts 1..count, noisy times whose noise-free minimum is at ``minimum``, and the
    stall totals that make up the time beyond the work."""
    n = np.arange(1.0, count + 1.0)
    kappa = (1.0 - SERIAL) / minimum**2
    stalls = {"serial": SERIAL * (n - 1.0), "contention": kappa * n * (n - 1.0)}
    t = (1.0 + stalls["serial"] + stalls["contention"]) / n
    rng = np.random.default_rng(seed)
    return n, t * np.exp(rng.normal(0.0, NOISE, n.size)), stalls


def one_case(case: str) -> dict:
    import corecast  # imported here so the timing includes nothing but the prediction

    count, minimum = map(int, case.rstrip("s").split(":"))
    n, t, stalls = curve(count, minimum)
    start = time.perf_counter()
    pred = corecast.predict(n, t, metric="time", stalls=stalls if case.endswith("s") else None)
    seconds = time.perf_counter() - start
    best = int(n[np.argmin(t)])
    slowdown = None
    if pred.preferred <= count:
        slowdown = float(t[pred.preferred - 1] / t.min() - 1.0)
    return {"case": case, "seconds": seconds, "preferred": int(pred.preferred),
            "best_measured": best, "slowdown": slowdown, "warnings": pred.warnings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="COUNTS:MIN,... (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case before it is cut off")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # one case, run in this process
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one_case(args.one)))
        return 0
    print(f"{'case':>11} {'seconds':>8} {'preferred':>9} {'best meas.':>10} {'slowdown':>8}")
    for case in args.cases.split(","):
        try:
            out = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True,
                                 text=True, timeout=args.timeout, check=True)
        except subprocess.TimeoutExpired:
            print(f"{case:>11} {'>' + format(args.timeout, 'g'):>8}  (cut off)")
            continue
        except subprocess.CalledProcessError as e:
            print(f"{case:>11} failed: {e.stderr.strip().splitlines()[-1:]}")
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        slow = "-" if r["slowdown"] is None else f"{r['slowdown']:+.1%}"
        print(f"{case:>11} {r['seconds']:>8.2f} {r['preferred']:>9} {r['best_measured']:>10} {slow:>8}")
        for w in r["warnings"]:
            print(f"{'':>13}warning: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
