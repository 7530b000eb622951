#!/bin/bash
# Before the lease, here, in the checkout the session was started in (the one the device
# receives): names the commit in .dev/commit.txt (the device's copy has no .git), checks that
# .dev holds what the three calls read, and that what travels stays under 64 MiB.  Changes
# nothing else; exit 1 with one line per problem.  BASE=COMMIT first rebuilds .dev/base (#40's
# comparison: `git archive COMMIT`; default: keep it).  DEV moves .dev (a dry run).  CALLS:
# the folder of the calls to check (default this one; a later lease's prep.sh sets it).
# NEED_NPB=0: the calls build no NPB (../device45/), so .dev/npb is not asked for.
cd "$(dirname "$0")/../.." || exit 1
DEV=${DEV:-.dev}
CALLS=${CALLS:-benchmarks/device32}
bad=0
say() { echo "prep: $*"; }
fail() { echo "prep: PROBLEM: $*"; bad=1; }

[ -n "$(git status --porcelain --untracked-files=no)" ] && \
  fail "uncommitted changes: they travel, but .dev/commit.txt would not name them (commit first)"
git check-ignore -q "$DEV" || fail "$DEV is not ignored by git (echo /.dev/ >> .git/info/exclude)"
mkdir -p "$DEV"
git rev-parse --short HEAD > "$DEV/commit.txt" && say "commit $(cat "$DEV/commit.txt") in $DEV/commit.txt"
if [ -n "${BASE:-}" ]; then
  rm -rf "$DEV/base" && mkdir -p "$DEV/base" && git archive "$BASE" | tar -x -C "$DEV/base" \
    && echo "$BASE" > "$DEV/base/BASE_COMMIT" && say "$DEV/base = git archive $BASE"
fi

# What the calls read (README.md beside this file says which call reads what).
for w in cffi pycparser setuptools wheel pyopencl pytools platformdirs siphash24 typing_extensions; do
  n=$(ls "$DEV"/whl/"$w"-*.whl 2>/dev/null | wc -l)
  [ "$n" = 1 ] || fail "$DEV/whl: $n wheels of $w (one needed: two stop the install)"
done
ls "$DEV"/whl/cffi-*cp312*manylinux*x86_64*.whl >/dev/null 2>&1 || fail "$DEV/whl: no cffi for CPython 3.12 x86-64 (the device's Python)"
if grep -qs setup_base "$CALLS"/call*.sh; then  # only calls that compare with a base read it
  [ -f "$DEV/base/pyproject.toml" ] || fail "$DEV/base: no tree (#40's base sides would be left out)"
fi
[ -f "$DEV/base/BASE_COMMIT" ] && say "base $(cat "$DEV/base/BASE_COMMIT")"
if [ "${NEED_NPB:-1}" != 0 ]; then
  [ -f "$DEV/npb/config/make.def" ] && [ -d "$DEV/npb/BT" ] && [ -d "$DEV/npb/CG" ] || fail "$DEV/npb: no NPB3.0-omp-C tree with config/make.def"
fi
[ -f benchmarks/device16/calibration.json ] || fail "benchmarks/device16/calibration.json missing (call 2's --machine)"
PY=${PY:-python3}
"$PY" - "$DEV" <<'EOF' || bad=1
import importlib.util, sys
from pathlib import Path
dev = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("opencl_suite", "benchmarks/opencl_suite.py")
suite = importlib.util.module_from_spec(spec); sys.modules["opencl_suite"] = suite; spec.loader.exec_module(suite)
try:
    for k in suite.KERNELS:
        suite.read_source(k, dev / "oclsuite")
except suite.SuiteError as exc:
    print(f"prep: PROBLEM: {exc}", flush=True)
    sys.exit(1)
EOF
"$PY" benchmarks/corpus16/sources.py verify --manifest "$DEV/corpus16/programs.json" > "${TMPDIR:-/tmp}/prep-verify.$$" 2>&1 \
  || { fail "corpus16 sources: $(tail -1 "${TMPDIR:-/tmp}/prep-verify.$$")"; }
rm -f "${TMPDIR:-/tmp}/prep-verify.$$"

# What travels: tracked and untracked-not-ignored files, and the carried .dev.
tree=$( { git ls-files -z; git ls-files -z -o --exclude-standard; } | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
dev=$(du -sb "$DEV" | cut -f1)
total=$(( (tree + dev) / 1048576 ))
say "travels: tree $(( tree / 1048576 )) MiB + $DEV $(( dev / 1048576 )) MiB = $total MiB (limit 64)"
[ $total -lt 60 ] || fail "over 60 MiB travel: carry less"
for f in "$CALLS"/call*.sh; do
  git ls-files --error-unmatch "$f" >/dev/null 2>&1 || fail "$f is not committed"
  bash -n "$f" || fail "$f: syntax"
done
[ $bad = 0 ] && say "ready: run the calls as $CALLS/README.md says" || say "not ready"
exit $bad
