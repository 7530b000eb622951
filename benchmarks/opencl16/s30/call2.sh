#!/bin/bash
# Session 30 device call 2: #38's probe-at-1 recordings (held-out suites first, then the
# development suites), with #42's pocl run of the 8 kernels that count in between.
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1; mkdir -p $OUT /tmp/c16
[ -x /tmp/v/bin/python ] || bash benchmarks/corpus16/setup.sh > $OUT/setup.log 2>&1
PY=/tmp/v/bin/python; { lscpu; nproc; } > $OUT/lscpu.txt 2>&1
tar xzf .dev/c16.tgz -C /tmp/c16
echo "setup at $(el) s"
M="--manifest .dev/corpus16/programs.json --timeout 30 --out /tmp/c16 --record-only --samples 1 --threads 1"
$PY benchmarks/corpus16/measure.py $M --budget ${HB:-110} --suites phoenix,miniapps,pyhost,gapbs,kastors > $OUT/held.log 2>&1
echo "held-out at $(el) s"; tail -3 $OUT/held.log
timeout ${OCL_T:-170} $PY benchmarks/opencl_cu.py --max-cu 16 --repeat 2 --budget ${OCL_B:-110} --kernels smooth,triangle,pb.gemm,pb.conv2d,pb.jacobi2d,pb.mvt,pb.atax,pb.covar --suite .dev/oclsuite --json $OUT/opencl_cu_8.json > $OUT/opencl_cu_8.txt 2>&1
echo "ocl rc $? at $(el) s"; tail -8 $OUT/opencl_cu_8.txt
L=$(( ${DL:-330} - $(el) - 8 ))
[ $L -gt 15 ] && $PY benchmarks/corpus16/measure.py $M --budget $L --suites rodinia,bots,polybench-acc > $OUT/dev.log 2>&1
echo "dev at $(el) s"; tail -3 $OUT/dev.log
cp .dev/commit.txt /tmp/c16/corecast-commit.txt
tar czf /tmp/c16.tgz -C /tmp/c16 --exclude=./work --exclude=./build . && mv /tmp/c16.tgz $OUT/c16.tgz
tar czf /tmp/logs.tgz -C $OUT --exclude=c16.tgz . && mv /tmp/logs.tgz $OUT/logs.tgz
ls -la $OUT
