#!/bin/bash
# Device call 2 (README.md beside this file): issue #42.  A device-bound host on the H200
# through NVIDIA's OpenCL (examples/opencl_device_bound.py: long kernels back to back, the
# host blocked on each): once without corecast (its wall and output), once under
# `corecast run --json-out` (the process line should say "waiting on the device (x% of
# wall)"); the same on pocl's CPU device; then the 8 kernels on pocl at 1..16 compute units
# with corecast's run from 2 compute units, with the machine's calibration (--machine).
# Knobs: DL (default 280: run it with timeout_s 300), LAUNCHES (16) and MS (150: the
# example's launches and milliseconds a launch), MAXCU (16), RUNS_AT (2: the corecast runs'
# compute units), REPEAT (2), OCL_BUDGET (100: the pocl run's device seconds; its wall time
# about 1.7x that), KERNELS, GPU (0: no GPU steps), and common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=2; DL=${DL:-280}
. benchmarks/device32/common.sh
setup
KERNELS=${KERNELS:-smooth,triangle,pb.gemm,pb.conv2d,pb.jacobi2d,pb.mvt,pb.atax,pb.covar}
BOUND=(examples/opencl_device_bound.py "${LAUNCHES:-16}" "${MS:-150}")
step opencl_platforms 60 opencl.txt "$PY" -c 'import pyopencl as cl
for p in cl.get_platforms():
    print(p.name, [(d.name, d.max_compute_units) for d in p.get_devices()])'
cat "$OUT/opencl.txt"

if [ "${GPU:-1}" != 0 ]; then
  gpu_env
  bound gpu_bound "${GPUENV[@]}"
fi
bound pocl_bound PYOPENCL_CTX=0

# opencl_cu.py writes the measured curves to its JSON before the corecast runs, so a run cut
# short keeps its truth; it prints its table only at the end.
step pocl8 $(( $(left) - RESERVE )) opencl_cu_8.txt "$PY" benchmarks/opencl_cu.py --max-cu "${MAXCU:-16}" \
  --runs "${RUNS_AT:-2}" --repeat "${REPEAT:-2}" --budget "${OCL_BUDGET:-100}" --kernels "$KERNELS" \
  --suite .dev/oclsuite --machine benchmarks/device16/calibration.json --json "$OUT/opencl_cu_8.json"
tail -n 30 "$OUT/opencl_cu_8.txt"
finish opencl_cu_8.txt opencl_cu_8.json gpu_bound.txt gpu_bound.jsonl pocl_bound.txt pocl_bound.jsonl
