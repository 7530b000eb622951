#!/bin/bash
# Device call 1 (README.md beside this file): #38's task queue split on programs nothing was
# chosen on.  `kastors-task` (KASTORS's four programs with plain tasks and its row-wise
# Jacobi with dependent tasks; benchmarks/corpus16/README.md) was declared held out on
# 2026-11-28 before any of it was measured: device34/call3.sh measures its curves (1, 2, 4,
# 8, 16 threads, 3 interleaved rounds) and records it (corecast run --target 16 at 2 and 4
# threads, --probe at 16) with this commit's library, which counts dependent tasks.
# Returns kt35.tgz, summary.txt, logs.tgz; a cut call resumes from .dev/kt35.tgz.
# Knobs: device34/call3.sh's (DL default 200 here).
SUITE=kastors-task PACK=kt35 CALL=1 DL=${DL:-200} exec bash "$(dirname "$0")/../device34/call3.sh"
