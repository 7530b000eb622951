# Sourced by callN.sh (here and in later leases' folders, ../device34/): the call's clock,
# its steps, its set-up and its end.  A step that fails or runs out is one line in
# $OUT/summary.txt and the call goes on; every step's limit is cut to what is left of DL,
# less RESERVE for the end, so the summary is always printed before the run's timeout_s.
# Knobs (environment): DL (seconds this call may take, set by callN.sh; less than its
# timeout_s), OUT (the device sets it), T (scratch root, default /tmp), RESERVE (seconds kept
# for the end, default 12), THREADS (the programs' count, default 16), PY (a Python with
# corecast: no venv is made; a dry run), TORCH_VENV (setup.sh's interpreter whose packages
# the venv sees).
T0=$(date +%s)
: "${OUT:=/tmp/out32}"
T=${T:-/tmp}
RESERVE=${RESERVE:-12}
THREADS=${THREADS:-16}
mkdir -p "$OUT" "$T/bin"
export PYTHONUNBUFFERED=1
SUM="$OUT/summary.txt"

el() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( DL - $(date +%s) + T0 )); }
note() { echo "[$(el) s] $*" | tee -a "$SUM"; }

# step NAME SECONDS LOG CMD...: CMD under `timeout` at SECONDS or what is left less RESERVE,
# whichever is less (skipped under 5 s), its stdout and stderr appended to $OUT/LOG ('-':
# this call's own); its exit status and time noted.
step() {
  local name=$1 want=$2 log=$3 lim rc t
  shift 3
  lim=$(( $(left) - RESERVE ))
  [ "$want" -lt "$lim" ] && lim=$want
  if [ "$lim" -lt 5 ]; then note "$name: skipped, $(left) s left of DL=$DL"; return 99; fi
  t=$(date +%s)
  if [ "$log" = - ]; then timeout -k 5 "$lim" "$@"; else timeout -k 5 "$lim" "$@" >> "$OUT/$log" 2>&1; fi
  rc=$?
  note "$name: rc $rc in $(( $(date +%s) - t )) s (limit $lim s)$([ $rc = 124 ] || [ $rc = 137 ] && echo ': TIMED OUT')"
  return $rc
}

# The venv with this tree's corecast ($T/v; benchmarks/corpus16/setup.sh), and what the
# call needs to know of the machine.
setup() {
  note "call $CALL, DL=$DL s, THREADS=$THREADS, commit $(cat .dev/commit.txt 2>/dev/null || echo '? (no .dev/commit.txt)')"
  if [ -z "${PY:-}" ]; then
    step venv 180 setup.log env VENV="$T/v" bash benchmarks/corpus16/setup.sh
    PY="$T/v/bin/python"
  fi
  export PATH="$(dirname "$PY"):$PATH"
  if "$PY" -c 'import corecast._native' >> "$OUT/setup.log" 2>&1; then
    note "setup: corecast in $PY"
  else
    note "SETUP FAILED: $PY cannot import corecast (setup.log)"; tail -5 "$OUT/setup.log"
  fi
  { lscpu || cat /proc/cpuinfo; echo; nproc; uname -a; free -g; cat /proc/loadavg; } > "$OUT/lscpu.txt" 2>&1
}

# The commit to compare with (#40's --base) in $T/vb, from .dev/base (git archive BASE).
setup_base() {
  if [ ! -x "$T/vb/bin/corecast" ] && [ -d .dev/base ]; then
    step base_venv 150 setup.log bash -c "python3 -m venv --system-site-packages '$T/vb' && '$T/vb/bin/pip' \
      install -q --no-index --no-deps .dev/whl/*.whl && '$T/vb/bin/pip' install -q --no-index --no-deps \
      --no-build-isolation .dev/base"
  fi
  if [ -x "$T/vb/bin/corecast" ]; then BASE="--base $T/vb"; else BASE=; note "no base venv: the base sides are left out"; fi
}

# NPB binaries (NAME.CLASS) into .dev/npb/bin, the examples into $T/bin.
build_npb() {
  local p
  mkdir -p .dev/npb/bin
  for p in "$@"; do
    [ -x ".dev/npb/bin/$p" ] || (cd .dev/npb && make "$(echo "${p%.*}" | tr a-z A-Z)" CLASS="${p#*.}") >> "$OUT/setup.log" 2>&1
    [ -x ".dev/npb/bin/$p" ] || note "npb $p: not built (setup.log)"
  done
}
build_examples() {
  local p
  for p in "$@"; do
    [ -x "$T/bin/$p" ] || gcc -O2 -fopenmp "examples/$p.c" -o "$T/bin/$p" -lm >> "$OUT/setup.log" 2>&1 \
      || note "example $p: not built (setup.log)"
  done
}

# gpu_env: GPUENV, the environment that puts pyopencl on the H200.  NVIDIA's ICD is not in
# /etc/OpenCL/vendors (pocl's is): named through a folder of its own.
gpu_env() {
  local NV=/usr/local/nvidia/lib64/libnvidia-opencl.so.1
  if [ -e "$NV" ]; then
    mkdir -p "$T/icd" && echo "$NV" > "$T/icd/nvidia.icd"
    GPUENV=(OCL_ICD_VENDORS="$T/icd" PYOPENCL_CTX=0)
  else
    note "no $NV: the GPU steps run on the default OpenCL device (a dry run, not the H200)"
    GPUENV=(PYOPENCL_CTX=0)
  fi
}

# bound NAME ENV...: examples/opencl_device_bound.py (BOUND: its arguments after the Python)
# with ENV, without corecast (its wall in NAME_plain.txt), then under corecast run (NAME.txt,
# NAME.jsonl); the process line printed.  BOUND_S: each run's limit (default 60).
bound() {
  local name=$1; shift
  step "$name plain" "${BOUND_S:-60}" "${name}_plain.txt" env "$@" bash -c 'time "$0" "$@"' "$PY" "${BOUND[@]}"
  step "$name corecast" "${BOUND_S:-60}" "$name.txt" env "$@" "$PY" -m corecast run --json-out "$OUT/$name.jsonl" -- \
    "$PY" "${BOUND[@]}"
  grep -h "^chain:\|^real" "$OUT/${name}_plain.txt" "$OUT/$name.txt"
  grep -A3 "^region " "$OUT/$name.txt" | head -4
  grep "^time: wall" "$OUT/$name.txt"
}

# The end: every file of $OUT but those named packed into logs.tgz (the device returns at
# most 8 files, 16 MiB each), then the summary.
finish() {
  local keep f args=()
  note "end, $(left) s left of DL=$DL; load $(cut -d' ' -f1-3 /proc/loadavg)"
  for f in "$OUT"/*; do
    [ -f "$f" ] || continue
    keep=0
    for k in "$@" summary.txt; do [ "$(basename "$f")" = "$k" ] && keep=1; done
    [ $keep = 0 ] && args+=("$(basename "$f")")
  done
  if [ ${#args[@]} -gt 0 ]; then
    tar czf "$T/logs.tgz" -C "$OUT" "${args[@]}" && (cd "$OUT" && rm -f "${args[@]}") && mv "$T/logs.tgz" "$OUT/logs.tgz"
  fi
  find "$OUT" -maxdepth 1 -type f -size +15M -exec echo "TOO LARGE to come back: {}" \;
  [ "$(find "$OUT" -mindepth 1 | wc -l)" -le 8 ] || echo "OVER 8 FILES in $OUT: not all come back"
  echo "==== $OUT"; ls -la "$OUT"
  echo "==== summary (call $CALL)"; cat "$SUM"
}
