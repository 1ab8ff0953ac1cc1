#!/bin/bash
# Runs a benchmark on a host that has python3 but no Node (a lent 16-core machine), from the
# bundle scripts/pack-bare-host.sh makes in .device/: Node 20, the production node_modules and
# dist, the UCX libraries the native addon links (and with --peers, Open MPI, hypre and the
# peers built). Output goes to $OUT (default /tmp/multicore-out): setup.txt, log.txt, and
#
#   bash .device/run.sh            npm run bench:multicore: multicore.tgz, summary.{md,json}
#                                  (CASES, ROUNDS, BUDGET_S as bench-multicore.mjs takes them)
#   bash .device/run.sh strong     bench:strong and bench:ompi next to hypre and Open MPI:
#                                  strong.tgz, ompi.tgz (SHAPES, ROUNDS, STRONG_S, OMPI_ROUNDS,
#                                  OMPI_CASES, OMPI_S)
set -u
OUT=${OUT:-/tmp/multicore-out}
what=${1:-multicore}
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
if [ -f .device/mpi-root.tar.xz ]; then
  # Open MPI and hypre at their own paths; a file the host has already stays as it is.
  python3 - <<'PY' > "$OUT/peers.txt" 2>&1
import os, tarfile
added = kept = 0
with tarfile.open('.device/mpi-root.tar.xz') as t:
    for m in t.getmembers():
        path = '/' + m.name
        if os.path.lexists(path):
            kept += 1
            continue
        t.extract(m, '/')
        added += 1
print(f'peers: {added} files added, {kept} already there')
PY
  export NBC_PEER_BIN_DIR=$PWD/.device/peers OMPI_MCA_btl_base_warn_component_unused=0
  { mpirun --version 2>&1 | head -1; mpirun --allow-run-as-root --oversubscribe -np 1 "$NBC_PEER_BIN_DIR/hypre_pcg" 10 1e-8 2>&1 | tail -2; } >> "$OUT/peers.txt" 2>&1
fi
{ cat /etc/os-release 2>/dev/null | head -2; node --version; nproc; uname -r; node dist/cli/nbc.js info 2>&1 | head -30; echo "setup $(( $(date +%s) - T0 )) s"; } > "$OUT/setup.txt" 2>&1
case "$what" in
  multicore)
    BUDGET_S=${BUDGET_S:-450} node scripts/bench-multicore.mjs --out /tmp/mc > "$OUT/log.txt" 2>&1
    echo "exit $? after $(( $(date +%s) - T0 )) s" >> "$OUT/log.txt"
    tar -czf "$OUT/multicore.tgz" -C /tmp/mc .
    cp /tmp/mc/summary.md /tmp/mc/summary.json "$OUT/" 2>/dev/null
    ;;
  strong)
    # A time limit each (STRONG_S, OMPI_S), so that what ran comes back as one archive each
    # (a lent machine returns at most 8 files).
    OUT=/tmp/strong CHART=/tmp/strong/strong.svg timeout "${STRONG_S:-330}" node scripts/bench-strong.mjs > "$OUT/log.txt" 2>&1
    echo "bench:strong exit $? after $(( $(date +%s) - T0 )) s" >> "$OUT/log.txt"
    tar -czf "$OUT/strong.tgz" -C /tmp/strong .
    OUT=/tmp/ompi ROUNDS=${OMPI_ROUNDS:-2} CASES=${OMPI_CASES:-} timeout "${OMPI_S:-120}" node scripts/bench-ompi.mjs >> "$OUT/log.txt" 2>&1
    echo "bench:ompi exit $? after $(( $(date +%s) - T0 )) s" >> "$OUT/log.txt"
    tar -czf "$OUT/ompi.tgz" -C /tmp/ompi .
    ;;
  *) echo "run.sh: unknown benchmark '$what' (expected multicore or strong)" >&2; exit 2 ;;
esac
