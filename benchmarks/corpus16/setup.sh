#!/bin/bash
# Device set-up for the corpus kit (../../shared/device/README.md's pattern): a venv at /tmp/v
# that sees the device's numpy (a .pth file; a --system-site-packages venv does not see
# /opt/torch/.venv), corecast installed from this working tree with the wheels carried in
# .dev/whl.  Idempotent: a warm machine skips what is there.  Run from the repository root.
# VENV and TORCH_VENV move the venv and the interpreter whose packages it sees (a dry run
# elsewhere: benchmarks/device32/README.md).
set -u
VENV=${VENV:-/tmp/v}; TORCH_VENV=${TORCH_VENV:-/opt/torch/.venv}
if [ ! -x "$VENV/bin/corecast" ]; then
  python3 -m venv --system-site-packages "$VENV" >/dev/null
  sp=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -d "$TORCH_VENV" ] && ls -d "$TORCH_VENV"/lib/python3*/site-packages > "$sp/torchvenv.pth"
  "$VENV/bin/pip" install -q --no-index --no-deps .dev/whl/*.whl
  "$VENV/bin/pip" install --no-index --no-deps --no-build-isolation . > "$VENV/cc-install.log" 2>&1 \
    || { echo "SETUP: corecast install failed"; tail -5 "$VENV/cc-install.log"; }
fi
"$VENV/bin/python" -c 'import numpy' 2>/dev/null || echo "SETUP: numpy not importable in $VENV (py-numpy-blocks will fail)"
