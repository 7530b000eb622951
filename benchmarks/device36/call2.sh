#!/bin/bash
# Device call 2 (README.md beside this file): splash3-barnes, the one Splash-3 program that
# session 36's call (../device34/call3.sh) left out: its first run stopped with glibc's
# "buffer overflow detected" (getparam.c copies strlen + 1 bytes into malloc(strlen), which
# the device's gcc fortifies).  The manifest's build now mends that line in its scratch copy.
# The same curves and recordings as the rest of its suite, for this program alone, built in
# a folder of its own (a warm machine's build folder may hold the binary that aborted).
# Returns sb36.tgz, summary.txt, logs.tgz; a cut call resumes as call3.sh's does.
# Knobs: DL (default 100: timeout_s 120), and call3.sh's.
cd "$(dirname "$0")/../.." || exit 1
exec env SUITE=splash3 PACK=sb36 CALL=2 DL="${DL:-100}" \
  C16ARGS="--only splash3-barnes --build ${T:-/tmp}/build-sb36 ${C16ARGS:-}" bash benchmarks/device34/call3.sh
