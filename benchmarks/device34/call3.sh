#!/bin/bash
# Device call 3 (README.md beside this file): issue #38's held-out figure on a suite nothing
# was chosen on.  Splash-3 (`splash3`, 8 pthreads programs; benchmarks/corpus16/README.md) was
# added to the corpus manifest and declared held out on 2026-11-28, before any of it was
# measured: this call measures its curves (1, 2, 4, 8, 16 threads, 3 interleaved rounds) and
# records it (corecast run --target 16 at 2 and 4 threads, --probe at 16, after the first
# round), all in one measure.py pass inside DL.  Nothing here predicts or replays: the figure
# is read later, once, with `scale16.py --suites splash3 --skip-suites ''`.  call4.sh is this
# call for another such suite (SUITE, PACK, CALL set).
# Returns PACK.tgz (sp34.tgz; what scale16.py reads: NAME.csv with `# suite:` lines, runs.jsonl,
# samples/NAME-N.jsonl, lscpu.txt, compiler.txt, corecast-commit.txt), summary.txt, logs.tgz.
# A call the budget cut resumes: copy the returned PACK.tgz to .dev/PACK.tgz and call again.
# Knobs: SUITE (splash3), PACK (the results' name, sp34), CALL (3), DL (default 240; with less
# device time left, DL = budget_left_s - 60 and timeout_s DL + 20), COUNTS (1,2,4,8,16), REPS
# (3), TIMEOUT (one run's limit, 30 s), C16ARGS (more measure.py arguments; a dry run on 2
# cores: --tiny), and device32/common.sh's.
cd "$(dirname "$0")/../.." || exit 1
SUITE=${SUITE:-splash3}; PACK=${PACK:-sp34}; CALL=${CALL:-3}; DL=${DL:-240}
. benchmarks/device32/common.sh
setup
M=.dev/corpus16/programs.json
D="$T/$PACK"
mkdir -p "$D"
[ -f ".dev/$PACK.tgz" ] && [ ! -s "$D/runs.jsonl" ] && tar xzf ".dev/$PACK.tgz" -C "$D" && note "resumed from .dev/$PACK.tgz"
# splash3's builds expand Splash-3's m4 macros ($M4, else m4 on PATH); the image may have no m4,
# so the Debian package carried in .dev/corpus16 (apt-get download m4) is unpacked when needed.
if [ "$SUITE" = splash3 ] && ! command -v m4 >/dev/null; then
  deb=$(ls .dev/corpus16/m4_*.deb 2>/dev/null | head -1)
  if [ -n "$deb" ] && mkdir -p "$T/m4" && dpkg -x "$deb" "$T/m4" 2>> "$OUT/setup.log" && "$T/m4/usr/bin/m4" --version >/dev/null 2>&1; then
    export M4="$T/m4/usr/bin/m4"; note "m4: none on PATH, the carried $(basename "$deb")"
  elif [ -n "$deb" ] && mkdir -p "$T/m4" && (cd "$T/m4" && ar x "$OLDPWD/$deb" && tar xf data.tar.* ./usr/bin/m4) 2>> "$OUT/setup.log" \
       && "$T/m4/usr/bin/m4" --version >/dev/null 2>&1; then
    export M4="$T/m4/usr/bin/m4"; note "m4: none on PATH, the carried $(basename "$deb") (ar)"
  else
    note "NO m4: the splash3 programs will not build (setup.log)"
  fi
fi
L=$(( $(left) - RESERVE - 3 ))
step "$SUITE curves and recordings" $(( L + 3 )) "$PACK.log" "$PY" benchmarks/corpus16/measure.py --manifest "$M" \
  --out "$D" --suites "$SUITE" --threads "${COUNTS:-1,2,4,8,16}" --reps "${REPS:-3}" \
  --timeout "${TIMEOUT:-30}" --budget "$L" ${C16ARGS:-}
tail -n 2 "$OUT/$PACK.log"
# What came back, per program: timed runs and recordings, and any that failed (one line each).
"$PY" - "$D" <<'PYEOF' | tee -a "$SUM"
import json, sys, collections
from pathlib import Path
d = Path(sys.argv[1])
runs = [json.loads(l) for l in open(d / "runs.jsonl")] if (d / "runs.jsonl").exists() else []
n = collections.Counter((r["name"], r["kind"]) for r in runs if r.get("rc") == 0)
bad = [r for r in runs if r.get("rc") != 0]
for name in sorted({r["name"] for r in runs}):
    t1 = sorted(r["time_s"] for r in runs if r["name"] == name and r["kind"] == "time" and r["threads"] == 1 and r.get("rc") == 0)
    print(f"{name}: {n[(name, 'time')]} timed, {n[(name, 'sample')]} recordings, T(1) {t1[len(t1) // 2] if t1 else '-'} s")
for r in bad:
    print(f"FAILED {r['name']} {r['kind']} at {r['threads']}: rc {r.get('rc')} {r.get('err', '')[:120]}")
PYEOF
cp .dev/commit.txt "$D/corecast-commit.txt" 2>/dev/null
tar czf "$T/$PACK.tgz" -C "$D" --exclude=./work . && mv "$T/$PACK.tgz" "$OUT/$PACK.tgz"
finish "$PACK.tgz"
