// Exercises every function of the native addon in one process, for a leak and memory-error
// check under valgrind (docs/p2p.md, "Checking the addon"):
//   valgrind --leak-check=full --show-leak-kinds=definite node scripts/check-native-leaks.mjs
// and look for "definitely lost" records whose stack names nbc_native.node (Node's own
// allocations at exit are not ours). Prints "ok" when every exchange arrived intact.
import { createRequire } from 'node:module';

const a = createRequire(import.meta.url)('../native/build/Release/nbc_native.node');
for (let i = 0; i < 10; i++) a.schedYield();
{
  const src = new Uint8Array(new SharedArrayBuffer(1 << 20)).fill(7);
  const dst = new Uint8Array(1 << 20);
  for (let i = 0; i < 10; i++) a.copy(dst, i, src, 0, (1 << 20) - 16);
  if (dst[5] !== 7) throw new Error('copy: the bytes did not arrive');
  try { a.copy(dst, 1, src, 0, 1 << 20); throw new Error('copy: an oversized range was accepted'); } catch (e) { if (!(e instanceof RangeError)) throw e; }
}
if (a.ucxPoll === undefined) {
  console.log('ok (no UCX in this build: only schedYield and copy checked)');
  process.exit(0);
}
const ctx = a.ucxInit();
const w1 = a.ucxWorker(ctx);
const w2 = a.ucxWorker(ctx);
const ep = a.ucxConnect(w1, new Uint8Array(a.ucxAddress(w2)));
const stage = new Uint8Array(8192);
let cur = stage;
const info = new BigUint64Array(2);
const rounds = Number(process.argv[2] ?? 200);
const wait = (id) => {
  if (id < 0) return 2;
  let s;
  while ((s = a.ucxTest(id, info)) === 1) { a.ucxProgress(w1); a.ucxProgress(w2); }
  return s;
};
for (let i = 0; i < rounds; i++) {
  // a header message (probe + receive into the stage), then a tagged payload
  const head = new Uint8Array(64).fill(i & 255);
  wait(a.ucxSend(ep, BigInt(i), head, 56));
  let n;
  // the long form every 50th header, with a new stage every other time (the addon then keeps
  // that one), else the short one
  if (i % 50 === 0) cur = i % 100 === 0 ? stage : new Uint8Array(8192);
  while ((n = (i % 50 === 0 ? a.ucxPoll(w2, cur, info) : a.ucxPoll(w2))) < 0) a.ucxProgress(w1);
  if (n !== 56 || cur[0] !== (i & 255)) throw new Error(`header ${i}: ${n} bytes`);
  const bytes = i % 10 === 0 ? 1 << 20 : 100;
  const src = new Uint8Array(bytes).fill(i & 255);
  const dst = new Uint8Array(bytes);
  const tag = (1n << 63n) | BigInt(i);
  const r = a.ucxRecv(w2, tag, (1n << 64n) - 1n, dst);
  const s = a.ucxSend(ep, tag, src);
  if (wait(s) !== 2 || wait(r) !== 2 || dst[bytes - 1] !== (i & 255)) throw new Error(`payload ${i} failed`);
}
wait(a.ucxFlush(w1));
if (a.ucxFailed(ep) !== null) throw new Error('endpoint failed');
// waiting primitives
const fd = a.wakeFd();
a.signalFd(fd);
a.ucxArm(w2);
if (!a.pollFds(a.ucxEventFd(w2), fd, 1000)) throw new Error('pollFds missed the eventfd');
await new Promise((resolve, reject) => {
  // the watch does not keep the loop alive (as in Transport.parkAsync, a timer does)
  const t = setTimeout(() => reject(new Error('watchFd never fired')), 5000);
  a.signalFd(fd);
  a.watchFd(fd, () => { clearTimeout(t); resolve(); });
});
console.log('ok');
