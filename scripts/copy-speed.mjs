// node scripts/copy-speed.mjs: what a copy between shared memory (a SharedArrayBuffer, as the
// node's arena and rings are) and a plain buffer costs by TypedArray.set and by the native
// addon's copy (memmove), best of 100 x 20 copies per size, hot in cache. bench/HISTORY.md,
// "Shared-memory copies"; the transport's NATIVE_COPY_MIN comes from it.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';

const path = new URL('../native/build/Release/nbc_native.node', import.meta.url);
const addon = existsSync(path) ? createRequire(import.meta.url)(path.pathname) : null;
if (addon?.copy === undefined) console.log('native addon without copy (npm run build builds it): TypedArray.set only');
const best = (f) => {
  let t = Infinity;
  for (let r = 0; r < 100; r++) {
    const t0 = performance.now();
    for (let k = 0; k < 20; k++) f(k);
    t = Math.min(t, (performance.now() - t0) / 20);
  }
  return t * 1000;
};
console.log('bytes      SAB->plain: set  memmove   plain->SAB: set  memmove   plain->plain: set (us)');
for (const n of [1024, 2048, 4096, 16384, 65536, 262144, 1048576]) {
  const shared = new Uint8Array(new SharedArrayBuffer(n * 4)).fill(1);
  const plain = new Uint8Array(n * 4).fill(2);
  const plain2 = new Uint8Array(n * 4);
  const at = (k) => (k & 3) * n;
  const row = [
    best((k) => plain.set(shared.subarray(at(k), at(k) + n), at(k + 1))),
    addon?.copy ? best((k) => addon.copy(plain, at(k + 1), shared, at(k), n)) : NaN,
    best((k) => shared.set(plain.subarray(at(k), at(k) + n), at(k + 1))),
    addon?.copy ? best((k) => addon.copy(shared, at(k + 1), plain, at(k), n)) : NaN,
    best((k) => plain2.set(plain.subarray(at(k), at(k) + n), at(k + 1))),
  ];
  console.log(`${String(n).padEnd(10)} ${row.map((x) => x.toFixed(2).padStart(9)).join(' ')}`);
}
