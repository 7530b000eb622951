#!/bin/bash
# Device run: set up (corecast from this tree, gcc-13 NPB, test programs), then go.py, then tar $OUT.
# Knobs: OUT, DL (seconds in all), GO (go.py or go2.py), PHASES, LOCAL (corecast already
# installed); paths CC_VENV (/tmp/v), CC_BIN (/tmp/bin), CC_DATA (/tmp/data60.bin), which
# go.py and go2.py read too.
S=$(date +%s); DL=${DL:-500}
V=${CC_VENV:-/tmp/v}; export CC_BIN=${CC_BIN:-/tmp/bin} CC_DATA=${CC_DATA:-/tmp/data60.bin}
export PATH=$V/bin:$CC_BIN:$PATH PYTHONUNBUFFERED=1
mkdir -p "$CC_BIN" "$OUT"
fin() { cp /tmp/npb.log /tmp/cc-install.log "$OUT"/ 2>/dev/null; (cd "$OUT" && tar czf ../res.tgz . && rm -rf ./* && mv ../res.tgz .); }
trap fin EXIT
cp .dev/bin/* "$CC_BIN"/
for d in .dev/pigz_*.deb .dev/zlib1g_*.deb; do dpkg -x $d /tmp/pigz; done
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/pigz/lib/x86_64-linux-gnu exec /tmp/pigz/usr/bin/pigz "$@"\n' > "$CC_BIN"/pigz; chmod +x "$CC_BIN"/pigz
( cd .dev/npb && mv bin bin12 && mkdir -p bin && for spec in CG:A EP:W FT:A IS:A MG:A LU:W SP:W BT:W CG:W FT:W IS:W MG:W BT:S FT:S MG:S IS:S; do
    b=$(echo ${spec%:*} | tr A-Z a-z).${spec#*:}; make ${spec%:*} CLASS=${spec#*:} >/dev/null 2>&1 || { echo "npb build failed $b, gcc-12 copy"; cp bin12/$b bin/; }; done; echo npb done $(( $(date +%s)-S ))s ) > /tmp/npb.log 2>&1 &
NP=$!
if [ -z "${LOCAL:-}" ]; then
  python3 -m venv --system-site-packages "$V"
  echo /opt/torch/.venv/lib/python3.12/site-packages > "$V"/lib/python3.12/site-packages/torchvenv.pth
  "$V"/bin/pip install -q --no-index --no-deps .dev/whl/*.whl
  "$V"/bin/pip install --no-index --no-deps --no-build-isolation . > /tmp/cc-install.log 2>&1 || { echo "SETUP: corecast install failed"; tail -30 /tmp/cc-install.log; exit 3; }
fi
python3 .dev/gen.py "$CC_DATA" &
GP=$!
corecast --version || { echo "SETUP: no corecast"; exit 3; }
wait $NP $GP; cat /tmp/npb.log; ls -la "$CC_DATA"
echo "setup took $(( $(date +%s)-S ))s"
python3 .dev/${GO:-go.py} "$OUT" $(( DL - ($(date +%s)-S) )) ${PHASES:-}
