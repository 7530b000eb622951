#!/bin/bash
# Device call 1 (README.md beside this file): issue #40's omp_triad in a venv of its own, the
# way a user installs corecast (`python3 -m venv`, no system site packages, no .pth file into
# /opt/torch/.venv), to tell the launcher's own cost from the device's Python set-up.  In
# session 36 (../steer16/s34/) `python -c pass` took 71 ms there, 44 ms of it `site`
# importing certifi, and `corecast run` cost omp_triad +12.7%, a fixed ~80 ms.
#  1. `python3 -X importtime -c pass` of the venv used so far ($T/v, setup.sh's) and of the
#     clean one: where `site`'s time goes (importtime.txt);
#  2. launch_cost.py --wall in the clean venv (launcher.txt);
#  3. omp_triad with no corecast, `corecast run` and `--target-machine` from the clean venv,
#     RUNS interleaved rounds in half of what is left (triad.txt / .json);
#  4. NPB (bt.W) with no corecast, quiet and --steer from the clean venv, the rest: #40's
#     quiet bound (3%) was met by median in session 36 (+1.8%) and missed in session 33
#     (+4.0%) with nearly the same library, so it is measured a third time (npb.txt / .json).
# Knobs: DL (default 240: timeout_s 260), RUNS (21), WALL_RUNS (20), NPB (bt.W; a dry run on
# 2 cores: bt.S), and common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=1; DL=${DL:-240}
PY3=$(command -v python3)  # the machine's own, before setup puts the corecast venv first on PATH
. benchmarks/device32/common.sh
setup
build_examples omp_triad
NPB=${NPB:-bt.W}
build_npb ${NPB//,/ }
VC="$T/vc"
if [ ! -x "$VC/bin/corecast" ]; then
  # corecast's wheel is built by the other venv, so the clean one gets no setuptools (and no
  # distutils-precedence.pth), as an install from an index with build isolation gets none.
  step clean_venv 120 setup.log bash -c "rm -rf '$T/ccwhl' && '$PY' -m pip wheel -q --no-index --no-deps \
    --no-build-isolation -w '$T/ccwhl' . && '$PY3' -m venv '$VC' && '$VC/bin/pip' install -q --no-index --no-deps \
    .dev/whl-clean/numpy-*.whl .dev/whl/cffi-*.whl .dev/whl/pycparser-*.whl '$T'/ccwhl/corecast-*.whl"
fi
if ! "$VC/bin/python" -c 'import corecast._native, numpy' >> "$OUT/setup.log" 2>&1; then
  note "CLEAN VENV FAILED (setup.log)"; tail -5 "$OUT/setup.log"; finish; exit 0
fi
{ for p in "$PY" "$VC/bin/python"; do
    echo "== $p -X importtime -c pass (the 12 slowest, cumulative us)"
    "$p" -X importtime -c pass 2>&1 | sort -t'|' -k2 -n -r | head -12
  done; } > "$OUT/importtime.txt" 2>&1
cat "$OUT/importtime.txt"
step launcher 40 launcher.txt env PATH="$VC/bin:$PATH" "$VC/bin/python" benchmarks/launch_cost.py --wall "${WALL_RUNS:-20}"
cat "$OUT/launcher.txt"
B=$(( ($(left) - RESERVE - 50) / 2 )); [ $B -lt 20 ] && B=20
step triad $(( B + 25 )) triad.txt env PATH="$VC/bin:$PATH" "$VC/bin/python" benchmarks/steer_suite.py \
  --runs "${RUNS:-21}" --threads "$THREADS" --bin "$T/bin" --cases triad --budget "$B" --json-out "$OUT/triad.json"
tail -n 8 "$OUT/triad.txt"
B2=$(( $(left) - RESERVE - 20 )); [ $B2 -lt 10 ] && B2=10
step npb $(( B2 + 15 )) npb.txt env PATH="$VC/bin:$PATH" "$VC/bin/python" benchmarks/steer_suite.py \
  --runs "${RUNS:-21}" --threads "$THREADS" --npb .dev/npb/bin --cases npb --npb-programs "$NPB" \
  --account --budget "$B2" --json-out "$OUT/npb.json"
tail -n 8 "$OUT/npb.txt"
finish importtime.txt launcher.txt triad.txt triad.json npb.txt npb.json
