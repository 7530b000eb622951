"""What-if: how far the machine's own loss of per-thread speed explains the runtime's
over-predicted gains on this folder's 16-core runs, before ``corecast calibrate`` has been
run on that machine.

The recordings at 2 and 4 threads are replayed as ``benchmarks/scale16.py`` does, with and
without a machine calibration (``model/machine/calibration.py``) whose e(n) is the measured
efficiency S(n) / n of NPB ep.W (embarrassingly parallel: a stand-in for what the
calibration kernel would measure there, 0.82 at 16).  ep.W itself is not scored, nor
curves without a 1-thread time.  Once ``corecast calibrate`` has measured that machine,
``python benchmarks/scale16.py benchmarks/device16 --machine FILE`` is the real figure.
Since issue #38 item 4 the curve goes only to regions whose evidence (probes) names it, and
these recordings hold none: the what-if now changes nothing (``benchmarks/calibrated.py``
replays them with probes).

    python benchmarks/device16/machine_whatif.py
"""
from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import scale16  # noqa: E402  (benchmarks/scale16.py)

from corecast.model.machine.calibration import Calibration, Curve  # noqa: E402

HELD_OUT = {"npb-cg.A", "npb-cg.W", "npb-lu.W", "npb-sp.W", "pigz", "xz"}


def ep_w_standin() -> Calibration:
    ep = scale16.measured_curve(HERE / "npb-ep.W.csv")
    counts = sorted(ep)
    return Calibration(Curve(counts, [ep[1] / ep[n] / n for n in counts]), None, 16, "device16 (NPB ep.W stand-in)")


def main() -> None:
    cal = ep_w_standin()
    print("e(n) from ep.W: " + ", ".join(f"{n}: {cal.compute.at(n):.2f}" for n in (2, 4, 8, 16)))

    def keep(name: str) -> bool:
        return name != "npb-ep.W" and 1 in scale16.measured_curve(HERE / f"{name}.csv")

    rows = {what: scale16.evaluate(HERE, [2, 4], keep=keep, machine=m)
            for what, m in (("as replayed", None), ("with e(n)", cal))}
    for label, held in (("scale16 programs", False), ("held-out programs", True)):
        for n0 in (2, 4):
            for what, part in rows.items():
                errs = [r["log_error"] for r in part if (r["curve"] in HELD_OUT) == held and r["sampled_at"] == n0]
                print(f"{label:17} sampled at {n0} ({len(errs):2}), {what:11}: median |ln err| "
                      f"{statistics.median(errs):.3f}, within 20% {sum(e <= math.log(1.2) for e in errs) / len(errs):.2f}, "
                      f"off by > 50% {sum(e > math.log(1.5) for e in errs) / len(errs):.2f}")


if __name__ == "__main__":
    main()
