#!/bin/bash
# One device call (benchmarks/corpus16/README.md): corpus16 (#43/#38) first, then issue #40's
# steer_suite in what is left.  Run from the repository root with `carry: [".dev"]`, after
# setting up .dev/ as the README says.  Knobs: DL (seconds in all), STEER_S (seconds kept
# for steer_suite; 0: none), CAL (1, the default: `corecast calibrate` on the idle machine
# first, its file and stdout to $OUT; 0: skip), C16PRE (a measure.py pass run first, e.g. "--rerecord
# --record-only --suites bots"), C16ARGS (extra measure.py arguments), and for a local dry
# run PY (the Python with corecast) and SKIPSETUP.  GPU_S (seconds kept at the end for issue
# #42's GPU steps; 0, the default: none) needs pyopencl's wheels in .dev/whl.  OCLCU_S (seconds
# kept before them for issue #42's pocl run at 1..16 compute units with the public suite's
# kernels, benchmarks/opencl_cu.py --suite; 0, the default: none) needs those wheels and
# .dev/oclsuite (python benchmarks/opencl_suite.py export).
T0=$(date +%s); DL=${DL:-575}; STEER_S=${STEER_S:-120}
export PYTHONUNBUFFERED=1
: "${OUT:=/tmp/out}"; mkdir -p "$OUT"
el() { echo $(( $(date +%s) - T0 )); }
if [ -z "${SKIPSETUP:-}" ]; then
  bash benchmarks/corpus16/setup.sh > "$OUT/setup.log" 2>&1
  PY=${PY:-/tmp/v/bin/python}
fi
echo "setup done at $(el) s" | tee -a "$OUT/setup.log"
{ lscpu; echo; nproc; uname -a; free -g; } > "$OUT/lscpu.txt" 2>&1
( cd .dev/npb && mkdir -p bin && { make BT CLASS=W >/dev/null 2>&1; make CG CLASS=A >/dev/null 2>&1; ls bin; } ) >> "$OUT/setup.log" 2>&1 &
mkdir -p /tmp/bin
for p in omp_slowdown omp_triad; do [ -x /tmp/bin/$p ] || gcc -O2 -fopenmp examples/$p.c -o /tmp/bin/$p -lm; done
wait
echo "npb and examples built at $(el) s" | tee -a "$OUT/setup.log"
# The machine's curves (issue #38 item 4), while nothing else runs; a few seconds, at most 60.
# Guarded: a corecast without the command, or a failed measurement, costs only this line.
if [ "${CAL:-1}" != 0 ]; then
  timeout 60 $PY -m corecast calibrate -o "$OUT/calibration.json" > "$OUT/calibrate.txt" 2>&1
  echo "calibrate rc $? at $(el) s"; cat "$OUT/calibrate.txt"
fi
mkdir -p /tmp/c16; [ -f .dev/c16.tgz ] && tar xzf .dev/c16.tgz -C /tmp/c16
if [ -n "${C16PRE:-}" ]; then
  B=$(( DL - $(el) - STEER_S - ${GPU_S:-0} - ${OCLCU_S:-0} - 15 ))
  $PY benchmarks/corpus16/measure.py --manifest .dev/corpus16/programs.json --budget $B --timeout 30 --out /tmp/c16 $C16PRE > "$OUT/corpus-pre.log" 2>&1
  tail -2 "$OUT/corpus-pre.log"
fi
B=$(( DL - $(el) - STEER_S - ${GPU_S:-0} - ${OCLCU_S:-0} - 15 ))
$PY benchmarks/corpus16/measure.py --manifest .dev/corpus16/programs.json --budget $B --timeout 30 --out /tmp/c16 ${C16ARGS:-} > "$OUT/corpus.log" 2>&1
cp .dev/commit.txt /tmp/c16/corecast-commit.txt 2>/dev/null
tar czf "$OUT/c16.tgz" -C /tmp/c16 --exclude=./work .
tail -3 "$OUT/corpus.log"; echo "corpus done at $(el) s"
L=$(( DL - $(el) - ${GPU_S:-0} - ${OCLCU_S:-0} - 5 ))
if [ "$STEER_S" -gt 0 ] && [ $L -gt 20 ]; then
  timeout $L $PY benchmarks/steer_suite.py --runs ${STEER_RUNS:-9} --threads ${STEER_T:-16} --npb .dev/npb/bin --bin /tmp/bin --json-out "$OUT/steer_suite.json" > "$OUT/steer_suite.txt" 2>&1
  echo "steer_suite rc $? at $(el) s"; tail -40 "$OUT/steer_suite.txt"
fi
# Issue #42 on pocl (the CPU device, /etc/OpenCL/vendors' ICD): the examples, the in-house
# and the suite's kernels at 1..16 compute units; the budget two thirds of OCLCU_S, the
# rest the children's starts (opencl_cu.py's docstring).
if [ "${OCLCU_S:-0}" -gt 0 ]; then
  L=$(( DL - $(el) - ${GPU_S:-0} - 3 ))
  timeout $L $PY benchmarks/opencl_cu.py --max-cu 16 --repeat 2 --budget $(( OCLCU_S * 2 / 3 )) \
    --suite .dev/oclsuite --json "$OUT/opencl_cu_suite.json" > "$OUT/opencl_cu_suite.txt" 2>&1
  echo "opencl_cu rc $? at $(el) s"; tail -20 "$OUT/opencl_cu_suite.txt"
fi
# Issue #42 on the GPU: NVIDIA's ICD named through a folder of its own (it is not in
# /etc/OpenCL/vendors); the two-kernel example under corecast, then the work-group check.
if [ "${GPU_S:-0}" -gt 0 ]; then
  mkdir -p /tmp/icd && echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/icd PYOPENCL_CTX=0
  G=$(( DL - $(el) - 3 )); G1=$(( G / 2 ))
  timeout $G1 $PY -m corecast run --json-out "$OUT/gpu.jsonl" -- $PY examples/opencl_two_kernels.py > "$OUT/gpu_run.txt" 2>&1
  echo "gpu run rc $? at $(el) s"; cat "$OUT/gpu_run.txt" | tail -40
  G=$(( DL - $(el) - 3 ))
  [ $G -gt 10 ] && timeout $G $PY benchmarks/opencl_cu.py --gpu --budget 20 --json "$OUT/gpu_groups.json" > "$OUT/gpu_groups.txt" 2>&1
  echo "gpu groups rc $? at $(el) s"; tail -30 "$OUT/gpu_groups.txt"
fi
# The device hands back at most 8 files from $OUT: everything but the corpus in one tarball,
# written outside $OUT (a tarball written into the folder it reads changes that folder as
# tar reads it: tar exits 1, "file changed as we read it", and nothing was deleted).
tar czf /tmp/results.tgz -C "$OUT" --exclude=c16.tgz . \
  && find "$OUT" -maxdepth 1 -type f ! -name c16.tgz -delete && mv /tmp/results.tgz "$OUT/results.tgz"
ls -la "$OUT"
