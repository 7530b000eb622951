#!/bin/bash
# Device call 2 (README.md beside this file): BOTS and KASTORS recorded again, twice each
# (pass A, then B), with this commit's library, whose recordings count the tasks created
# with dependences (counters.task_depend): device32/call3.sh's passes for these two suites.
# BOTS is development (the split's figures so far rest on benchmarks/corpus16/task_depend.py's
# stand-in); KASTORS checks that its dependent tasks are counted as such.
# Returns recA.tgz, recB.tgz, summary.txt, logs.tgz.  Knobs: device32/call3.sh's (DL default 140 here).
SUITES=${SUITES:-bots,kastors} DL=${DL:-140} exec bash "$(dirname "$0")/../device32/call3.sh"
