#!/bin/bash
# Runs `npm run bench:multicore` on a host that has python3 but no Node (a lent 16-core
# machine), from the bundle scripts/pack-bare-host.sh makes in .device/: Node 20, the
# production node_modules and dist, the UCX libraries the native addon links. Output goes to
# $OUT (default /tmp/multicore-out): setup.txt, log.txt, multicore.tgz, summary.{md,json}.
# Environment: CASES, ROUNDS, BUDGET_S as bench-multicore.mjs takes them.
set -u
OUT=${OUT:-/tmp/multicore-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
T0=$(date +%s)
mkdir -p /tmp/nb
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('.device/node.xz'), open('/tmp/nb/node','wb'))"
chmod +x /tmp/nb/node
export PATH=/tmp/nb:$PATH
python3 -c "import tarfile; tarfile.open('.device/prod-nm.tar.xz').extractall('.')"
export LD_LIBRARY_PATH=$PWD/.device/lib UCX_MODULE_DIR=$PWD/.device/ucxmod
export NBC_COMMIT=$(cat .device/commit)
{ node --version; nproc; uname -r; node dist/cli/nbc.js info 2>&1 | head -30; echo "setup $(( $(date +%s) - T0 )) s"; } > "$OUT/setup.txt" 2>&1
BUDGET_S=${BUDGET_S:-450} node scripts/bench-multicore.mjs --out /tmp/mc > "$OUT/log.txt" 2>&1
echo "exit $? after $(( $(date +%s) - T0 )) s" >> "$OUT/log.txt"
tar -czf "$OUT/multicore.tgz" -C /tmp/mc .
cp /tmp/mc/summary.md /tmp/mc/summary.json "$OUT/" 2>/dev/null
