#!/usr/bin/env bash
# Packs what `npm run bench:multicore` needs for a host with python3 and no Node (a lent
# machine): this Node's binary, the production node_modules and dist, and the UCX libraries the
# native addon links, into .device/ (about 30 MB, ignored by git), with run.sh
# (scripts/bare-host-run.sh) to unpack and run there: carry .device and native/build, then
# `bash .device/run.sh`. Rebuild it after any change under src/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device
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
cp scripts/bare-host-run.sh "$out/run.sh"
du -sh "$out"
