#!/bin/bash
# Device run: set up (corecast from this tree, gcc-13 NPB, test programs), then go.py, then tar $OUT.
S=$(date +%s); DL=${DL:-500}
export PATH=/tmp/v/bin:/tmp/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /tmp/bin "$OUT"
fin() { cp /tmp/npb.log /tmp/cc-install.log "$OUT"/ 2>/dev/null; (cd "$OUT" && tar czf ../res.tgz . && rm -rf ./* && mv ../res.tgz .); }
trap fin EXIT
cp .dev/bin/* /tmp/bin/
for d in .dev/pigz_*.deb .dev/zlib1g_*.deb; do dpkg -x $d /tmp/pigz; done
printf '#!/bin/sh\nLD_LIBRARY_PATH=/tmp/pigz/lib/x86_64-linux-gnu exec /tmp/pigz/usr/bin/pigz "$@"\n' > /tmp/bin/pigz; chmod +x /tmp/bin/pigz
( cd .dev/npb && mv bin bin12 && mkdir -p bin && for spec in CG:A EP:W FT:A IS:A MG:A LU:W SP:W BT:W CG:W FT:W IS:W MG:W BT:S FT:S MG:S IS:S; do
    b=$(echo ${spec%:*} | tr A-Z a-z).${spec#*:}; make ${spec%:*} CLASS=${spec#*:} >/dev/null 2>&1 || { echo "npb build failed $b, gcc-12 copy"; cp bin12/$b bin/; }; done; echo npb done $(( $(date +%s)-S ))s ) > /tmp/npb.log 2>&1 &
NP=$!
if [ -z "${LOCAL:-}" ]; then
  python3 -m venv --system-site-packages /tmp/v
  echo /opt/torch/.venv/lib/python3.12/site-packages > /tmp/v/lib/python3.12/site-packages/torchvenv.pth
  /tmp/v/bin/pip install -q --no-index --no-deps .dev/whl/*.whl
  /tmp/v/bin/pip install --no-index --no-deps --no-build-isolation . > /tmp/cc-install.log 2>&1 || { echo "SETUP: corecast install failed"; tail -30 /tmp/cc-install.log; exit 3; }
fi
python3 .dev/gen.py /tmp/data60.bin &
GP=$!
corecast --version || { echo "SETUP: no corecast"; exit 3; }
wait $NP $GP; cat /tmp/npb.log; ls -la /tmp/data60.bin
echo "setup took $(( $(date +%s)-S ))s"
python3 .dev/${GO:-go.py} "$OUT" $(( DL - ($(date +%s)-S) )) ${PHASES:-}
