#!/bin/bash
# Device call 4 (README.md beside this file, optional): call3.sh for OmpSCR (`ompscr`, 9 OpenMP
# programs; benchmarks/corpus16/README.md), the fourth fresh held-out suite for #38, declared
# held out on 2026-11-28 before any of it was measured.  Returns om34.tgz, summary.txt, logs.tgz;
# a cut call resumes from .dev/om34.tgz.  Knobs: call3.sh's (DL default 300 here).
SUITE=ompscr PACK=om34 CALL=4 DL=${DL:-300} exec bash "$(dirname "$0")/call3.sh"
