#!/bin/bash
# Before the lease: device32/prep.sh's checks (the commit into .dev/commit.txt, the wheels,
# NPB, the pocl suite's kernels, the corpus sources, what travels) for this folder's calls.
exec env CALLS=benchmarks/device35 bash "$(dirname "$0")/../device32/prep.sh"
