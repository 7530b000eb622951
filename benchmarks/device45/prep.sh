#!/bin/bash
# Before the lease, in the checkout the device receives: what call.sh reads beyond
# ../device32/prep.sh's checks (the manifest's 9 ompscr programs at OmpSCR's pinned commit,
# the Jacobi pair's build mend, a pyopencl wheel for CPython 3.12 x86-64), then device32/prep.sh
# for this folder's call with NEED_NPB=0 (no NPB is built here; no call here reads .dev/base
# or .dev/whl-clean).  Exit 1 with one line per problem.  DEV moves .dev (a dry run); PY a
# Python (default python3).
cd "$(dirname "$0")/../.." || exit 1
DEV=${DEV:-.dev}
PY=${PY:-python3}
bad=0
"$PY" - "$DEV/corpus16/programs.json" <<'EOF' || bad=1
import json, sys
path = sys.argv[1]
try:
    m = json.load(open(path))
except (OSError, ValueError) as exc:
    print(f"prep: PROBLEM: {path}: {exc} (benchmarks/corpus16/README.md, the OmpSCR section)")
    sys.exit(1)
want = ["ompscr-" + n for n in "md mandel fft fft6 lu jacobi01 jacobi02 qsort qsomp6".split()]
progs = {p.get("name"): p for p in m.get("programs", []) if p.get("suite") == "ompscr"}
problems = []
missing = [n for n in want if n not in progs]
if missing:
    problems.append(f"no {', '.join(missing)} in suite ompscr")
src = m.get("sources", {}).get("ompscr", {})
if not str(src.get("commit", "")).startswith("d277761f6fdc"):
    problems.append("source ompscr is not utpalbora/OmpSCR_v2.0 at d277761f6fdc")
for n in ("ompscr-jacobi01", "ompscr-jacobi02"):
    if n in progs and "-DOSCR_malloc=malloc" not in progs[n].get("build", ""):
        problems.append(f"{n}'s build lacks the OSCR_malloc mend (its pointer is truncated: a segfault)")
for p in problems:
    print(f"prep: PROBLEM: {path}: {p}")
sys.exit(1 if problems else 0)
EOF
n=$(ls "$DEV"/whl/pyopencl-*cp312*x86_64*.whl 2>/dev/null | wc -l)
[ "$n" = 1 ] || { echo "prep: PROBLEM: $DEV/whl: $n pyopencl wheels for CPython 3.12 x86-64 (part 2 needs one)"; bad=1; }
[ -f "$DEV/om45.tgz" ] && echo "prep: $DEV/om45.tgz is there: the call resumes from it (remove it to measure afresh)"
[ $bad = 0 ] || { echo "prep: not ready"; exit 1; }
exec env CALLS=benchmarks/device45 NEED_NPB=0 DEV="$DEV" PY="$PY" bash benchmarks/device32/prep.sh
