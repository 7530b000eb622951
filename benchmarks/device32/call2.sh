#!/bin/bash
# Device call 2 (README.md beside this file): issue #42.  First the GPU steps on the H200
# through NVIDIA's OpenCL (the two-kernel example under corecast run; opencl_cu.py --gpu, the
# work-group sweep: about 30 s), then the 8 kernels that count on pocl's CPU device at 1..16
# compute units with their corecast runs at 2 and 4 in the same call, with the machine's
# calibration (--machine).
# Knobs: DL (default 280: run it with timeout_s 300), MAXCU (16), OCL_BUDGET (100: the pocl
# run's device seconds; its wall time about 1.7x that), KERNELS, GPU (0: no GPU steps), and
# common.sh's.
cd "$(dirname "$0")/../.." || exit 1
CALL=2; DL=${DL:-280}
. benchmarks/device32/common.sh
setup
KERNELS=${KERNELS:-smooth,triangle,pb.gemm,pb.conv2d,pb.jacobi2d,pb.mvt,pb.atax,pb.covar}
step opencl_platforms 60 opencl.txt "$PY" -c 'import pyopencl as cl
for p in cl.get_platforms():
    print(p.name, [(d.name, d.max_compute_units) for d in p.get_devices()])'
cat "$OUT/opencl.txt"

if [ "${GPU:-1}" != 0 ]; then
  gpu_env
  step gpu_run 60 gpu_run.txt env "${GPUENV[@]}" "$PY" -m corecast run --json-out "$OUT/gpu.jsonl" -- \
    "$PY" examples/opencl_two_kernels.py
  tail -n 22 "$OUT/gpu_run.txt"
  step gpu_groups 90 gpu_groups.txt env "${GPUENV[@]}" "$PY" benchmarks/opencl_cu.py --gpu --budget 30 \
    --json "$OUT/gpu_groups.json"
  tail -n 12 "$OUT/gpu_groups.txt"
fi

# opencl_cu.py writes the measured curves to its JSON before the corecast runs, so a run cut
# short keeps its truth; it prints its table only at the end.
step pocl8 $(( $(left) - RESERVE )) opencl_cu_8.txt "$PY" benchmarks/opencl_cu.py --max-cu "${MAXCU:-16}" \
  --repeat 2 --budget "${OCL_BUDGET:-100}" --kernels "$KERNELS" --suite .dev/oclsuite \
  --machine benchmarks/device16/calibration.json --json "$OUT/opencl_cu_8.json"
tail -n 30 "$OUT/opencl_cu_8.txt"
finish opencl_cu_8.txt opencl_cu_8.json gpu.jsonl gpu_groups.json
