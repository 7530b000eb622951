"""Does a machine calibration help?  The runtime's S(16) predictions from the committed
recordings, replayed without and with a calibration (``corecast calibrate``'s file), per
suite: median and worst |ln(predicted / measured S(16))|, the share within 20%, and how
many predictions the calibration changed.

Each recording at 2 and 4 threads is replayed as ``benchmarks/scale16.py`` does (its
``evaluate``), in two ways: as recorded (no probes, so no region has evidence for a curve
and nothing may change: a check of the rule), and with the 1- and 2-thread recordings as
the regions' probes (``--history 1,2``, what ``corecast run --probe`` measures), where a
region's growth of work per call picks its curve (``model/runtime/evidence.py``).

    python benchmarks/calibrated.py CALFILE [DIR ...] [--suites A,B | --skip-suites A,B] [--json]
    python benchmarks/calibrated.py --epw-standin [DIR ...]    # device16's NPB ep.W as the compute curve

DIRs default to ``benchmarks/bands.py``'s, and the suites left out by default are its
(corpus16's held-out suites, and BOTS): they are replayed only for the closing report, by
naming them (``--skip-suites bots``).  The file must be the one measured on the machine
that recorded DIR (the 16-core device machine for all three default DIRs).
``--epw-standin`` uses NPB ep.W's measured efficiency on that machine as the compute curve
(no bandwidth curve): a check of the code path, not a calibration.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bands  # noqa: E402
import scale16  # noqa: E402

from corecast.model.machine.calibration import Calibration, CalibrationError, Curve, read  # noqa: E402

COUNTS = [2, 4]
MODES = {"as recorded": [], "probes at 1,2": [1, 2]}


def epw_standin() -> Calibration:
    """NPB ep.W's efficiency S(n) / n on the 16-core machine as a compute curve."""
    ep = scale16.measured_curve(HERE / "device16" / "npb-ep.W.csv")
    counts = sorted(ep)
    return Calibration(Curve(counts, [ep[1] / ep[n] / n for n in counts]), None, 16, "NPB ep.W stand-in")


def score(errs: list[float]) -> dict:
    return {"median": round(statistics.median(errs), 4) if errs else None,
            "worst": round(max(errs), 4) if errs else None,
            "within_20pct": round(sum(e <= math.log(1.2) for e in errs) / len(errs), 3) if errs else None}


def compare(dirs: list[Path], cal: Calibration, suites) -> list[dict]:
    """One row per (directory, suite, mode): the scores without and with ``cal``."""
    out = []
    for d in dirs:
        for mode, history in MODES.items():
            plain = scale16.evaluate(d, COUNTS, history, suites=suites)
            calibrated = scale16.evaluate(d, COUNTS, history, machine=cal, suites=suites)
            by_suite: dict[str, list[tuple[dict, dict]]] = {}
            for p, c in zip(plain, calibrated):
                assert (p["curve"], p["sampled_at"]) == (c["curve"], c["sampled_at"])
                by_suite.setdefault(scale16.suite_of(d / f"{p['curve']}.csv"), []).append((p, c))
            for suite, pairs in sorted(by_suite.items()):
                out.append({"dir": d.name if d.name != "data" else d.parent.name, "suite": suite, "mode": mode,
                            "points": len(pairs),
                            "changed": sum(p["predicted_s16"] != c["predicted_s16"] for p, c in pairs),
                            "uncalibrated": score([p["log_error"] for p, _ in pairs]),
                            "calibrated": score([c["log_error"] for _, c in pairs]),
                            "errors": [(p["curve"], p["sampled_at"], p["log_error"], c["log_error"]) for p, c in pairs]})
    return out


def pooled(rows: list[dict], mode: str) -> dict:
    errs = [e for r in rows if r["mode"] == mode for e in r["errors"]]
    return {"points": len(errs), "changed": sum(r["changed"] for r in rows if r["mode"] == mode),
            "uncalibrated": score([e[2] for e in errs]), "calibrated": score([e[3] for e in errs])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calfile", nargs="?", help="the calibration (corecast calibrate on the recording machine)")
    ap.add_argument("dirs", nargs="*", help="scale16-style directories (default: benchmarks/bands.py's)")
    ap.add_argument("--epw-standin", action="store_true", help="NPB ep.W's efficiency as the compute curve "
                    "instead of CALFILE (every positional argument is then a DIR)")
    ap.add_argument("--suites", default="", help="comma-separated suites: these alone")
    ap.add_argument("--skip-suites", default=bands.DEFAULT_SKIP,
                    help=f"comma-separated suites left out (default {bands.DEFAULT_SKIP}: held out, or "
                    "recorded before task timing)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.epw_standin:
        cal, dirs = epw_standin(), [Path(p) for p in ([args.calfile] if args.calfile else []) + args.dirs]
    elif not args.calfile:
        print("calibrated.py: name a calibration file (or --epw-standin)", file=sys.stderr)
        return 2
    else:
        try:
            cal = read(args.calfile)
        except CalibrationError as exc:
            print(f"calibrated.py: {exc}", file=sys.stderr)
            return 2
        dirs = [Path(p) for p in args.dirs]
    dirs = dirs or bands.DEFAULT_DIRS
    for d in dirs:
        if not d.is_dir():
            print(f"calibrated.py: no such directory: {d}", file=sys.stderr)
            return 2
    rows = compare(dirs, cal, scale16.suite_filter(args.suites, args.skip_suites))
    total = {mode: pooled(rows, mode) for mode in MODES}
    if args.json:
        print(json.dumps({"rows": rows, "pooled": total}, indent=1))
        return 0

    def cells(s: dict) -> str:
        return f"{s['median']:7.3f} {s['worst']:6.3f} {s['within_20pct']:5.0%}"

    print(f"{'dir':<15} {'suite':<14} {'mode':<14} {'pts':>3} {'chg':>3}   "
          f"{'uncalibrated: median worst w20':>30}   {'calibrated: median worst w20':>28}")
    for r in rows:
        print(f"{r['dir']:<15} {r['suite']:<14} {r['mode']:<14} {r['points']:>3} {r['changed']:>3}   "
              f"{'':>9}{cells(r['uncalibrated'])}   {'':>7}{cells(r['calibrated'])}")
    for mode, s in total.items():
        print(f"{'all':<15} {'':<14} {mode:<14} {s['points']:>3} {s['changed']:>3}   "
              f"{'':>9}{cells(s['uncalibrated'])}   {'':>7}{cells(s['calibrated'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
