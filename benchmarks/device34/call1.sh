#!/bin/bash
# Device call 1 (README.md beside this file): issue #40 at 16 threads, what session 33 left
# unmeasured.  In this order, each alone on the machine:
#  1. the launcher's wall time (launch_cost.py --wall: its imports, `python -c pass`,
#     `corecast run --quiet -- /bin/true`), launcher.txt;
#  2. omp_triad with no corecast, `corecast run` and `--target-machine`, the rounds holding
#     nothing else of ours (no --account, no base: one diagnostic run per side afterwards),
#     triad.txt / .json;
#  3. `omp_slowdown 4000` steered from 16 against 1 and 2 threads without corecast (its best
#     fixed count, checked), then bt.W and cg.A with no corecast, quiet and --steer, with
#     the library's account of every run, steer_suite.txt / .json.
# Knobs: DL (default 330: run it with timeout_s 360), RUNS (21), NPB (bt.W,cg.A; cg.A last,
# the first the budget drops; a dry run on 2 cores: bt.S,cg.S), TRIAD_SHARE (percent of the
# steer budget for step 2, default 25), WALL_RUNS (20), FIXED (1,2), and common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=1; DL=${DL:-330}
. benchmarks/device32/common.sh
setup
NPB=${NPB:-bt.W,cg.A}
build_npb ${NPB//,/ }
build_examples omp_slowdown omp_triad
note "set up; $(ls .dev/npb/bin 2>/dev/null | tr '\n' ' ')"
step launcher 40 launcher.txt "$PY" benchmarks/launch_cost.py --wall "${WALL_RUNS:-20}"
cat "$OUT/launcher.txt"
# Both steer_suite runs hold their rounds (diagnostic runs included) within their --budget,
# which leaves 25 s for the triad's diagnostic runs after its rounds (no --account) and its
# table, 20 s for the other's tables and JSON, and RESERVE for the end.
B=$(( $(left) - RESERVE - 45 )); [ $B -lt 20 ] && B=20
B1=$(( B * ${TRIAD_SHARE:-25} / 100 ))
step triad $(( B1 + 25 )) triad.txt "$PY" benchmarks/steer_suite.py --runs "${RUNS:-21}" --threads "$THREADS" \
  --bin "$T/bin" --cases triad --budget "$B1" --json-out "$OUT/triad.json"
tail -n 8 "$OUT/triad.txt"
B2=$(( $(left) - RESERVE - 20 )); [ $B2 -lt 10 ] && B2=10
step steer_suite $(( B2 + 15 )) steer_suite.txt "$PY" benchmarks/steer_suite.py --runs "${RUNS:-21}" \
  --threads "$THREADS" --npb .dev/npb/bin --bin "$T/bin" --cases slowdown,npb --npb-programs "$NPB" \
  --fixed-counts "${FIXED:-1,2}" --account --budget "$B2" --json-out "$OUT/steer_suite.json"
tail -n 30 "$OUT/steer_suite.txt"
finish steer_suite.txt steer_suite.json triad.txt triad.json launcher.txt
