#!/bin/bash
# Device call 1 (README.md beside this file): issue #40's steer_suite at 16 threads, this
# build against .dev/base's in the same rounds, with the library's own account of every run.
# Knobs: DL (default 330: run it with timeout_s 360), RUNS (21), CASES (npb,triad), NPB
# (bt.W,cg.A; a dry run on 2 cores: bt.S,cg.S), THREADS, and common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=1; DL=${DL:-330}
. benchmarks/device32/common.sh
setup
setup_base
NPB=${NPB:-bt.W,cg.A}
build_npb ${NPB//,/ }
build_examples omp_triad
note "set up; $(ls .dev/npb/bin 2>/dev/null | tr '\n' ' ')"
# steer_suite's --budget holds its rounds (diagnostic runs included: --account runs them in
# the rounds) within what is left, less 20 s for its tables and JSON and RESERVE for the end.
B=$(( $(left) - RESERVE - 20 )); [ $B -lt 10 ] && B=10
step steer_suite $(( B + 15 )) steer_suite.txt "$PY" benchmarks/steer_suite.py --runs "${RUNS:-21}" \
  --threads "$THREADS" --npb .dev/npb/bin --bin "$T/bin" --cases "${CASES:-npb,triad}" --npb-programs "$NPB" \
  --account $BASE \
  --budget "$B" --json-out "$OUT/steer_suite.json"
tail -n 30 "$OUT/steer_suite.txt"
finish steer_suite.txt steer_suite.json
