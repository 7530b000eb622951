#!/bin/bash
# The one device call of a 15-minute lease (README.md beside this file): device36's calls 3
# and 2 in one set-up, the held-out suite first.
#  1. #38: OmpSCR (`ompscr`, 9 OpenMP programs; benchmarks/corpus16/README.md), the fresh
#     held-out suite declared on 2026-11-28 and never measured: curves at 1, 2, 4, 8, 16
#     threads in 3 interleaved rounds and, after the first round, the three recordings
#     (`--target 16` at 2 and 4 threads, `--probe` at 16), one measure.py pass whose budget
#     keeps OCL_NEED seconds for part 2.  Returns PACK.tgz (om45.tgz: what scale16.py and
#     corpus16/take_in.py read), its per-program lines in summary.txt.
#  2. #42: the device-bound example on the H200 through NVIDIA's OpenCL and on pocl (cheap:
#     about 15 s; left out when less than POCL_NEED + 30 s remain), then the 8 kernels on pocl
#     at 1..MAXCU compute units with corecast's run from 2 units, as ../device34/call2.sh
#     (the same kernels, repetitions and budget, so that its opencl_cu_8.json decides
#     UNIT_CONTENTION as ../device36/README.md wrote before it runs).  Returns
#     opencl_cu_8.txt, opencl_cu_8.json and bound.tgz (gpu_bound.txt/.jsonl,
#     pocl_bound.txt/.jsonl, the plain runs' walls).
# Every file else is in logs.tgz (the device returns at most 8 files; this call returns 6).
# A cut call resumes: copy the returned PACK.tgz to .dev/PACK.tgz and call again (measure.py
# skips what its runs.jsonl holds); OMPSCR=0 or OCL=0 leaves a part out (a part already back).
# Knobs: DL (default 560: timeout_s 590; with a start of 60-120 s the lease holds the machine
# under 12 minutes), OMPSCR (1), OCL (1), GPU (1: the H200 steps), OCL_NEED (175: seconds kept
# for part 2 while part 1 runs), POCL_NEED (150: pocl8's expected wall at OCL_BUDGET 100), PACK
# (om45), SUITE (ompscr), COUNTS (1,2,4,8,16), REPS (3), TIMEOUT (30: one run's limit),
# C16ARGS (more measure.py arguments; a dry run on 2 cores: --tiny), MAXCU (THREADS), RUNS_AT
# (2), REPEAT (2), OCL_BUDGET (100), KERNELS, LAUNCHES (16) and MS (150), and
# ../device32/common.sh's (OUT, T, RESERVE, THREADS, PY, TORCH_VENV).
cd "$(dirname "$0")/../.." || exit 1
CALL=45; DL=${DL:-560}
. benchmarks/device32/common.sh
setup
SUITE=${SUITE:-ompscr}; PACK=${PACK:-om45}
OCL_NEED=${OCL_NEED:-175}; POCL_NEED=${POCL_NEED:-150}
[ "${OCL:-1}" = 0 ] && OCL_NEED=0

# ---- part 1: #38, the held-out suite's curves and recordings
if [ "${OMPSCR:-1}" != 0 ]; then
  M=.dev/corpus16/programs.json
  D="$T/$PACK"
  mkdir -p "$D"
  [ -f ".dev/$PACK.tgz" ] && [ ! -s "$D/runs.jsonl" ] && tar xzf ".dev/$PACK.tgz" -C "$D" && note "resumed from .dev/$PACK.tgz"
  L=$(( $(left) - RESERVE - OCL_NEED - 3 ))
  if [ "$L" -lt 30 ]; then
    note "$SUITE: skipped, $L s for it (DL=$DL, OCL_NEED=$OCL_NEED)"
  else
    step "$SUITE curves and recordings" $(( L + 3 )) "$PACK.log" "$PY" benchmarks/corpus16/measure.py --manifest "$M" \
      --out "$D" --suites "$SUITE" --threads "${COUNTS:-1,2,4,8,16}" --reps "${REPS:-3}" \
      --timeout "${TIMEOUT:-30}" --budget "$L" --build "$T/build-$PACK" ${C16ARGS:-}
    tail -n 2 "$OUT/$PACK.log"
  fi
  # What came back, per program: timed runs and recordings, and any that failed (one line each).
  "$PY" - "$D" <<'PYEOF' | tee -a "$SUM"
import json, sys, collections
from pathlib import Path
d = Path(sys.argv[1])
runs = [json.loads(l) for l in open(d / "runs.jsonl")] if (d / "runs.jsonl").exists() else []
n = collections.Counter((r["name"], r["kind"]) for r in runs if r.get("rc") == 0)
bad = [r for r in runs if r.get("rc") not in (0, None) or r.get("kind") == "build"]
for name in sorted({r["name"] for r in runs}):
    t1 = sorted(r["time_s"] for r in runs if r["name"] == name and r.get("kind") == "time" and r["threads"] == 1 and r.get("rc") == 0)
    print(f"{name}: {n[(name, 'time')]} timed, {n[(name, 'sample')]} recordings, T(1) {t1[len(t1) // 2] if t1 else '-'} s")
for r in bad:
    print(f"FAILED {r['name']} {r.get('kind')}{' at ' + str(r['threads']) if 'threads' in r else ''}: rc {r.get('rc')} {(r.get('err') or r.get('error') or '')[:120]}")
PYEOF
  cp .dev/commit.txt "$D/corecast-commit.txt" 2>/dev/null
  if [ -s "$D/runs.jsonl" ]; then
    tar czf "$T/$PACK.tgz" -C "$D" --exclude=./work . && mv "$T/$PACK.tgz" "$OUT/$PACK.tgz"
  fi
fi

# ---- part 2: #42, the device-bound example (H200, pocl), then the pocl kernels
if [ "${OCL:-1}" != 0 ]; then
  KERNELS=${KERNELS:-smooth,triangle,pb.gemm,pb.conv2d,pb.jacobi2d,pb.mvt,pb.atax,pb.covar}
  BOUND=(examples/opencl_device_bound.py "${LAUNCHES:-16}" "${MS:-150}")
  step opencl_platforms 30 opencl.txt "$PY" -c 'import pyopencl as cl
for p in cl.get_platforms():
    print(p.name, [(d.name, d.max_compute_units) for d in p.get_devices()])'
  cat "$OUT/opencl.txt"
  BOUND_S=40  # each run of the example (bound, ../device32/common.sh)
  if [ "$(left)" -lt $(( RESERVE + POCL_NEED + 30 )) ]; then
    note "device-bound example: left out, $(left) s left (pocl8 needs about $POCL_NEED s)"
  else
    if [ "${GPU:-1}" != 0 ]; then
      gpu_env
      bound gpu_bound "${GPUENV[@]}"
    fi
    bound pocl_bound PYOPENCL_CTX=0
  fi
  # opencl_cu.py writes the measured curves to its JSON before the corecast runs, so a run
  # cut short keeps its truth; it prints its table only at the end.
  step pocl8 $(( $(left) - RESERVE )) opencl_cu_8.txt "$PY" benchmarks/opencl_cu.py --max-cu "${MAXCU:-$THREADS}" \
    --runs "${RUNS_AT:-2}" --repeat "${REPEAT:-2}" --budget "${OCL_BUDGET:-100}" --kernels "$KERNELS" \
    --suite .dev/oclsuite --machine benchmarks/device16/calibration.json --json "$OUT/opencl_cu_8.json"
  tail -n 30 "$OUT/opencl_cu_8.txt"
  bf=$(cd "$OUT" && ls gpu_bound.txt gpu_bound.jsonl gpu_bound_plain.txt pocl_bound.txt pocl_bound.jsonl \
    pocl_bound_plain.txt 2>/dev/null)
  if [ -n "$bf" ]; then
    tar czf "$T/bound.tgz" -C "$OUT" $bf && (cd "$OUT" && rm -f $bf) && mv "$T/bound.tgz" "$OUT/bound.tgz"
  fi
fi
finish "$PACK.tgz" opencl_cu_8.txt opencl_cu_8.json bound.tgz
