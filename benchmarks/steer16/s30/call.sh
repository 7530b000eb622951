#!/bin/bash
# Session 30 device call 1: #40 steer_suite at 16 threads (with base 390f7d4, --account), then #42 pocl suite.
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1; mkdir -p $OUT /tmp/bin
[ -x /tmp/v/bin/python ] || bash benchmarks/corpus16/setup.sh > $OUT/setup.log 2>&1
export PATH=/tmp/v/bin:$PATH
{ lscpu; nproc; uname -a; } > $OUT/lscpu.txt 2>&1
for p in omp_slowdown omp_triad; do [ -x /tmp/bin/$p ] || gcc -O2 -fopenmp examples/$p.c -o /tmp/bin/$p -lm; done
(cd .dev/npb && mkdir -p bin && make BT CLASS=W >/dev/null 2>&1; make CG CLASS=A >/dev/null 2>&1; ls bin)
B=; [ -x /tmp/vb/bin/python ] || { python3 -m venv --system-site-packages /tmp/vb && /tmp/vb/bin/pip install -q --no-index --no-deps .dev/whl/*.whl && /tmp/vb/bin/pip install -q --no-index --no-deps --no-build-isolation .dev/base > /tmp/vb.log 2>&1; }
[ -x /tmp/vb/bin/corecast ] && B="--base /tmp/vb"
echo "setup done at $(el) s base=[$B]"
timeout ${STEER_T:-270} /tmp/v/bin/python benchmarks/steer_suite.py --runs 9 --threads 16 --npb .dev/npb/bin --bin /tmp/bin --cases npb,slowdown,convoy,triad --account $B --json-out $OUT/steer_suite.json > $OUT/steer_suite.txt 2>&1
echo "steer rc $? at $(el) s"; tail -70 $OUT/steer_suite.txt
timeout ${OCL_T:-170} /tmp/v/bin/python benchmarks/opencl_cu.py --max-cu 16 --repeat 2 --budget ${OCL_B:-75} --suite .dev/oclsuite --json $OUT/opencl_cu_suite.json > $OUT/opencl_cu_suite.txt 2>&1
echo "ocl rc $? at $(el) s"; tail -40 $OUT/opencl_cu_suite.txt
ls -la $OUT
