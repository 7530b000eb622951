#!/bin/bash
# Device call 3 (README.md beside this file): issue #38's recordings.  Every program of a
# suite recorded twice with this build (`measure.py --record-only`: corecast run --target 16
# at 2 and 4 threads, --probe at 16), pass A then pass B, suite by suite: BOTS first (its
# recordings predate the task counters: pass A replaces them in data/), then the held-out
# suites, then the other development suites, as far as DL allows.  A and B of one program
# and count, a minute or so apart, measure the recordings' own noise.
# Each pass's folder starts with data/runs.jsonl's timed runs only: measure.py then knows
# every program's time at each count (its budget check) and leaves out those that failed
# (bots-concom at 16), and records every program again.
# Knobs: DL (default 200; with less device time left, DL = budget_left_s - 60 and timeout_s
# DL + 20), SUITES (the order), TIMEOUT (one run's limit, 30 s), C16ARGS (more measure.py
# arguments; a dry run on 2 cores: --tiny), and common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=3; DL=${DL:-200}
. benchmarks/device32/common.sh
setup
M=.dev/corpus16/programs.json
SUITES=${SUITES:-bots,gapbs,kastors,phoenix,miniapps,pyhost,rodinia,polybench-acc}
for X in A B; do
  mkdir -p "$T/rec$X"
  [ -s "$T/rec$X/runs.jsonl" ] || grep '"kind": "time"' benchmarks/corpus16/data/runs.jsonl > "$T/rec$X/runs.jsonl"
  cp benchmarks/corpus16/data/*.csv "$T/rec$X/"  # the curves: each folder is what scale16.py reads
done
# Each suite's pass A builds its programs (in parallel; pass B and a later call find them
# built in measure.py's build/), so a short call builds no suite it does not reach.
for S in ${SUITES//,/ }; do
  for X in A B; do
    L=$(( $(left) - RESERVE - 3 ))
    [ $L -lt 10 ] && break 2
    step "record $S $X" $(( L + 3 )) "rec$X.log" "$PY" benchmarks/corpus16/measure.py --manifest "$M" \
      --out "$T/rec$X" --record-only --suites "$S" --timeout "${TIMEOUT:-30}" --budget "$L" ${C16ARGS:-}
    tail -n 1 "$OUT/rec$X.log"
  done
done
for X in A B; do
  cp .dev/commit.txt "$T/rec$X/corecast-commit.txt" 2>/dev/null
  tar czf "$T/rec$X.tgz" -C "$T/rec$X" --exclude=./work . && mv "$T/rec$X.tgz" "$OUT/rec$X.tgz"
done
finish recA.tgz recB.tgz
