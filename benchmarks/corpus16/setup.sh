#!/bin/bash
# Device set-up for the corpus kit (../../shared/device/README.md's pattern): a venv at /tmp/v
# that sees the device's numpy (a .pth file; a --system-site-packages venv does not see
# /opt/torch/.venv), corecast installed from this working tree with the wheels carried in
# .dev/whl.  Idempotent: a warm machine skips what is there.  Run from the repository root.
set -u
if [ ! -x /tmp/v/bin/corecast ]; then
  python3 -m venv --system-site-packages /tmp/v >/dev/null
  sp=$(/tmp/v/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -d /opt/torch/.venv ] && ls -d /opt/torch/.venv/lib/python3*/site-packages > "$sp/torchvenv.pth"
  /tmp/v/bin/pip install -q --no-index --no-deps .dev/whl/*.whl
  /tmp/v/bin/pip install --no-index --no-deps --no-build-isolation . > /tmp/cc-install.log 2>&1 \
    || { echo "SETUP: corecast install failed"; tail -5 /tmp/cc-install.log; }
fi
/tmp/v/bin/python -c 'import numpy' 2>/dev/null || echo "SETUP: numpy not importable in /tmp/v (py-numpy-blocks will fail)"
