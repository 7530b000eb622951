#!/bin/bash
# Before the lease: what call 1 reads beyond device32/prep.sh's checks (one numpy wheel for
# CPython 3.12 in .dev/whl-clean; the clean venv has no system site packages to find numpy
# in) and that the manifest holds barnes's mended build (call 2), then device32/prep.sh for
# this folder's calls.
cd "$(dirname "$0")/../.." || exit 1
DEV=${DEV:-.dev}
n=$(ls "$DEV"/whl-clean/numpy-*cp312*x86_64*.whl 2>/dev/null | wc -l)
[ "$n" = 1 ] || { echo "prep: PROBLEM: $DEV/whl-clean: $n numpy wheels for CPython 3.12 x86-64 (one needed: pip download --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 --no-deps -d $DEV/whl-clean numpy)"; bad=1; }
grep -q 'malloc(leng + 1)' "$DEV/corpus16/programs.json" 2>/dev/null \
  || { echo "prep: PROBLEM: $DEV/corpus16/programs.json: splash3-barnes's build lacks the getparam.c mend (README.md, call 2)"; bad=1; }
[ "${bad:-0}" = 0 ] || { echo "prep: not ready"; exit 1; }
exec env CALLS=benchmarks/device36 bash benchmarks/device32/prep.sh
