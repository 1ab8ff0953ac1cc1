#!/usr/bin/env bash
# Packs what `npm run bench:multicore` needs for a host with python3 and no Node (a lent
# machine): this Node's binary, the production node_modules and dist, and the UCX libraries the
# native addon links, into .device/ (about 30 MB, ignored by git), with run.sh
# (scripts/bare-host-run.sh) to unpack and run there: carry .device and native/build, then
# `bash .device/run.sh`. Rebuild it after any change under src/.
#
# --peers adds the peers for `bash .device/run.sh strong` (bench:strong and bench:ompi next to
# hypre and Open MPI): hypre_pcg and mpibench built here, and this machine's Open MPI, hypre and
# the libraries they load, as files at their own paths (mpi-root.tar.xz, about 18 MB), which
# run.sh adds to a Debian 12 host without overwriting a file it has.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
peers=no
[ "${1:-}" = --peers ] && peers=yes
npm run build --silent
rm -rf "$out" && mkdir -p "$out/lib" "$out/ucxmod"
xz -T0 -6 -c "$(readlink -f "$(command -v node)")" > "$out/node.xz"
tmp=$(mktemp -d)
cp package.json package-lock.json "$tmp/"
# tsx (and its esbuild) only compile TypeScript job files; the bench runs compiled ones.
(cd "$tmp" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund >/dev/null && rm -rf node_modules/@esbuild node_modules/esbuild node_modules/tsx)
cp -r dist "$tmp/dist"
tar -cJf "$out/prod-nm.tar.xz" -C "$tmp" node_modules dist
rm -rf "$tmp"
ldd native/build/Release/nbc_native.node | awk '/libuc|libnuma/ {print $3}' | while read -r l; do cp -L "$l" "$out/lib/"; done
git rev-parse HEAD > "$out/commit"
if [ "$peers" = yes ]; then
  mkdir -p "$out/peers"
  mpicc -O2 ../shared/peers/hypre_pcg.c -o "$out/peers/hypre_pcg" -I/usr/include/hypre -lHYPRE -lm
  mpicc -O2 ../shared/peers/mpibench.c -o "$out/peers/mpibench"
  mpicc -O2 bench/peers/mpicolls.c -o "$out/peers/mpicolls"
  # Every package that owns a library the peers, mpirun or Open MPI's and PMIx's plugins load,
  # and Open MPI's own; libc6 is the host's. Shared objects, programs and data only.
  libs=$( { ldd /usr/bin/orterun "$out"/peers/* /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so \
    /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so 2>/dev/null | awk '/=>/ {print $3}'; } | sort -u)
  pkgs=$(for l in $libs; do r=$(readlink -f "$l"); dpkg -S "$r" 2>/dev/null || dpkg -S "${r#/usr}" 2>/dev/null || true; done \
    | cut -d: -f1 | sort -u | grep -v -x libc6)
  for p in $pkgs openmpi-bin openmpi-common; do dpkg -L "$p"; done | sort -u | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then echo "$f"; fi
  done | grep -v -E '\.a$|/include/|/pkgconfig/|/cmake/|\.h$|\.mod$|^/usr/share/(doc|man|lintian|bug)/' > "$out/mpi-files.txt"
  # The alternatives' links (mpirun, BLAS and LAPACK) belong to no package.
  for f in /usr/bin/mpirun /usr/bin/mpiexec /usr/lib/x86_64-linux-gnu/libblas.so.3 /usr/lib/x86_64-linux-gnu/liblapack.so.3; do
    echo "$f"; readlink "$f"
  done >> "$out/mpi-files.txt"
  tar -cJf "$out/mpi-root.tar.xz" -T "$out/mpi-files.txt" 2>/dev/null
  rm "$out/mpi-files.txt"
fi
cp scripts/bare-host-run.sh "$out/run.sh"
du -sh "$out"
