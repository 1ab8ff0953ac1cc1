import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { copyAt, copyBytes, NATIVE_COPY_MIN, setNativeCopy } from '../src/shm/copy.ts';
import { nativeAddon, type NativeAddon } from '../src/runtime/native.ts';
import { jobPath } from './job-path.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const nbc = (args: string[], env: NodeJS.ProcessEnv = {}): string =>
  execFileSync(process.execPath, ['dist/cli/nbc.js', ...args], { cwd: root, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 150_000 });

type Info = Array<{ what: string; available: boolean; detail: string }>;

test('the native addon build skips with one line and exit 0 when told to (or when the toolchain is missing)', () => {
  const out = execFileSync(process.execPath, ['scripts/build-native.mjs'], { cwd: root, encoding: 'utf8', env: { ...process.env, NBC_NO_NATIVE: '1' }, timeout: 60_000 });
  assert.equal(out.trim().split('\n').length, 1);
  assert.match(out, /native addon skipped \(NBC_NO_NATIVE=1\); the pure-JS paths are used/);
});

test('nbc build-native, asked for the addon, exits 1 with the same one line where it is not built', () => {
  const r = spawnSync(process.execPath, ['dist/cli/nbc.js', 'build-native'], { cwd: root, encoding: 'utf8', env: { ...process.env, NBC_NO_NATIVE: '1' }, timeout: 60_000 });
  assert.equal(r.status, 1, `${r.stdout}${r.stderr}`);
  assert.equal(r.stdout, 'nbcoll: native addon not built (NBC_NO_NATIVE=1); the pure-JS paths are used\n');
});

test('nbc info says whether sched_yield is available and why not, and lists the transports and executors', () => {
  const withAddon = JSON.parse(nbc(['info', '--json'])) as Info;
  const yieldLine = withAddon.find((l) => l.what === 'wait: sched_yield')!;
  const cc = (() => { try { execFileSync('cc', ['--version'], { stdio: 'ignore' }); return true; } catch { return false; } })();
  // where a C compiler exists, npm run build built the addon, and it loads
  if (cc) assert.equal(yieldLine.available, true, yieldLine.detail);
  const without = JSON.parse(nbc(['info', '--json'], { NBC_NO_NATIVE: '1' })) as Info;
  assert.deepEqual(without.find((l) => l.what === 'wait: sched_yield'), { what: 'wait: sched_yield', available: false, detail: 'native addon disabled by NBC_NO_NATIVE=1' });
  if (cc) assert.equal(withAddon.find((l) => l.what === 'copy: memmove')!.available, true);
  if (cc) assert.match(withAddon.find((l) => l.what === 'native addon')!.detail, /nbc_native\.node: sched_yield, memmove/);
  assert.deepEqual(without.find((l) => l.what === 'native addon'), { what: 'native addon', available: false, detail: 'disabled by NBC_NO_NATIVE=1' });
  assert.deepEqual(without.find((l) => l.what === 'copy: memmove'), {
    what: 'copy: memmove', available: false, detail: 'native addon disabled by NBC_NO_NATIVE=1; payloads to and from shared memory are copied by TypedArray.set',
  });
  // the flag board needs no addon; NBC_FLAT=0 turns it off
  assert.equal(without.find((l) => l.what === 'flag board')!.available, true);
  const off = JSON.parse(nbc(['info', '--json'], { NBC_FLAT: '0' })) as Info;
  assert.equal(off.find((l) => l.what === 'flag board')!.available, false);
  assert.deepEqual(withAddon.filter((l) => l.what.startsWith('executor ')).map((l) => l.what), ['executor host', 'executor offload', 'executor agg']);
  assert.equal(withAddon.find((l) => l.what === 'transport tcp')!.available, true);
  assert.match(nbc(['info']), /^yes {2}transport tcp/m);
});

test('timerSlack sets the calling thread\'s timer slack and refuses a non-positive value', () => {
  const { addon, why } = nativeAddon();
  if (addon === null) {
    // without the addon a rank keeps the kernel's default slack; the loader says why
    assert.match(why, /NBC_NO_NATIVE|not built|could not be loaded/);
    return;
  }
  assert.equal(typeof addon.timerSlack, 'function', 'the addon built here has timerSlack');
  if (addon.timerSlack === undefined) return;
  // /proc/<pid>/timerslack_ns is the slack of the process's main thread, which runs this test
  const slackNs = (): number => Number(readFileSync(`/proc/${process.pid}/timerslack_ns`, 'utf8'));
  const before = slackNs();
  try {
    assert.equal(addon.timerSlack(1000), true);
    assert.equal(slackNs(), 1000);
    assert.throws(() => addon.timerSlack!(0), /timerSlack: expected a positive number of nanoseconds/);
    assert.throws(() => addon.timerSlack!(-5), /timerSlack: expected a positive number of nanoseconds/);
    assert.equal(slackNs(), 1000, 'a refused value changes nothing');
  } finally {
    addon.timerSlack(before);
  }
});

test('8 ranks on one node of 2 cores pass the allreduce and barrier property checks with yielding waits and with plain ones', () => {
  for (const env of [{}, { NBC_NO_NATIVE: '1' }]) {
    for (const coll of ['allreduce', 'barrier']) {
      // the job throws (non-zero exit, execFileSync throws) on any result that differs from the reference
      nbc(['run', '-n', '8', '--ppn', '8', '--timeout', '120', jobPath('coll.ts'), 'props', coll], env);
    }
  }
});

/** Bytes 0, 1, 2, ... (mod 251) in a plain or a shared buffer of `n` bytes. */
function pattern(n: number, shared: boolean): Uint8Array {
  const a = new Uint8Array(shared ? new SharedArrayBuffer(n) : new ArrayBuffer(n));
  for (let i = 0; i < n; i++) a[i] = i % 251;
  return a;
}

function copyMissing(): string | false {
  const { addon, why } = nativeAddon();
  if (addon === null) return `no native addon (${why})`;
  return false;
}

test('the addon\'s copy moves the bytes TypedArray.set moves, between shared and plain memory, overlapping too, and refuses what does not fit', { skip: copyMissing() }, () => {
  const copy = nativeAddon().addon!.copy;
  assert.ok(copy !== undefined, 'the native addon lacks copy(): it predates it, and npm run build rebuilds it');
  for (const [srcShared, dstShared] of [[false, false], [true, false], [false, true], [true, true]] as const) {
    for (const n of [0, 1, NATIVE_COPY_MIN - 1, NATIVE_COPY_MIN, 65_536 + 3]) {
      const src = pattern(n + 10, srcShared);
      const got = new Uint8Array(dstShared ? new SharedArrayBuffer(n + 20) : new ArrayBuffer(n + 20));
      const want = new Uint8Array(n + 20);
      copy(got, 7, src.subarray(3), 2, n); // a view with an offset of its own: bytes 5 .. 5 + n of src
      want.set(src.subarray(5, 5 + n), 7);
      assert.deepEqual(got, want, `${n} B from ${srcShared ? 'shared' : 'plain'} to ${dstShared ? 'shared' : 'plain'}`);
    }
  }
  // Overlapping ranges of one buffer, both ways, as memmove (and copyWithin) has them.
  for (const [to, from] of [[100, 0], [0, 100]] as const) {
    const buf = pattern(5000, true);
    const want = pattern(5000, false).copyWithin(to, from, from + 4000);
    copy(buf, to, buf, from, 4000);
    assert.deepEqual(new Uint8Array(buf), want, `overlap ${from} -> ${to}`);
  }
  const a = new Uint8Array(100);
  assert.throws(() => copy(a, 50, new Uint8Array(100), 0, 51), { name: 'RangeError', message: 'copy: a range does not fit its array' });
  assert.throws(() => copy(a, 0, new Uint8Array(100), 60, 41), { name: 'RangeError' });
  assert.throws(() => copy(a, -1, new Uint8Array(100), 0, 1), { name: 'RangeError' });
  assert.throws(() => copy(a, 0, new Float64Array(4) as unknown as Uint8Array, 0, 8), { name: 'TypeError', message: 'copy: expected Uint8Arrays' });
});

test('the transport\'s copies (copyAt, copyBytes) give TypedArray.set\'s bytes at every size, shared or plain, with the JavaScript copy and the addon\'s where built', () => {
  const native = nativeAddon().addon?.copy ?? null;
  try {
    for (const copy of native === null ? [null] : [null, native]) {
      setNativeCopy(copy);
      const how = copy === null ? 'JavaScript' : 'native';
      for (const shared of [false, true]) {
        for (const n of [0, 5, 64, 65, NATIVE_COPY_MIN - 1, NATIVE_COPY_MIN, 100_003]) {
          const src = pattern(n + 9, shared);
          const a = new Uint8Array(new SharedArrayBuffer(n + 16));
          const b = new Uint8Array(n + 16);
          copyAt(src, 9, a, 4, n);
          b.set(src.subarray(9, 9 + n), 4);
          assert.deepEqual(new Uint8Array(a), b, `${how} copyAt ${n} B from ${shared ? 'shared' : 'plain'}`);
          const c = new Uint8Array(n + 16);
          copyBytes(src.subarray(9), c, 4, n);
          assert.deepEqual(c, b, `${how} copyBytes ${n} B from ${shared ? 'shared' : 'plain'}`);
        }
      }
    }
  } finally {
    setNativeCopy(null);
  }
});

/** Why the UCX test cannot run here, or false when it can. */
function ucxMissing(): string | false {
  const { addon, why } = nativeAddon();
  if (addon === null) return `no native addon (${why})`;
  if (addon.ucxInit === undefined) return 'the native addon was built without UCX: install Debian package libucx-dev (.ci/run does) and npm run build';
  return false;
}

for (const handleErrors of [true, false]) {
  test(`the native addon's UCX primitives move tagged messages between two workers over tcp on loopback (8 B eager to 4 MiB rendezvous), ${handleErrors ? 'with' : 'without'} peer error handling`, { skip: ucxMissing() }, () => {
    const a = nativeAddon().addon as Required<NativeAddon>;
    const ctx = a.ucxInit();
    const w1 = a.ucxWorker(ctx);
    const w2 = a.ucxWorker(ctx);
    const ep = a.ucxConnect(w1, new Uint8Array(a.ucxAddress(w2)), handleErrors);
    const info = new BigUint64Array(2);
    for (const [n, tag] of [[8, 7n], [100_000, 1n << 40n], [4 << 20, 0xfeedn]] as const) {
      const src = new Uint8Array(n).map((_, i) => (i * 31) & 255);
      const dst = new Uint8Array(n);
      const r = a.ucxRecv(w2, tag, 0xffffffffffffffffn, dst);
      const s = a.ucxSend(ep, tag, src);
      let rs = 1;
      let ss = s < 0 ? 2 : 1; // -1: the send completed inside the call
      const deadline = performance.now() + 10_000;
      while (rs === 1 || ss === 1) {
        a.ucxProgress(w1);
        a.ucxProgress(w2);
        if (ss === 1) ss = a.ucxTest(s, new BigUint64Array(2));
        if (rs === 1) rs = a.ucxTest(r, info);
        assert.ok(performance.now() < deadline, `${n} bytes: no completion within 10 s`);
      }
      assert.deepEqual([ss, rs], [2, 2], `${n} bytes: send and receive completed`);
      assert.deepEqual([info[0], info[1]], [BigInt(n), tag], 'the receive reports the length and the sender tag');
      assert.ok(Buffer.from(src).equals(Buffer.from(dst)), `${n} bytes arrived intact`);
    }
    assert.equal(a.ucxFailed(ep), null, 'the endpoint is healthy');
  });
}

test('ucxPoll\'s short form polls into the stage and out of the worker\'s last long call, and is refused before one', { skip: ucxMissing() }, () => {
  const a = nativeAddon().addon as Required<NativeAddon>;
  const ctx = a.ucxInit();
  const w1 = a.ucxWorker(ctx);
  const w2 = a.ucxWorker(ctx);
  assert.throws(() => a.ucxPoll(w2, true), /ucxPoll\(worker, progress\) before ucxPoll\(worker, stage, out\)/);
  const ep = a.ucxConnect(w1, new Uint8Array(a.ucxAddress(w2)), true);
  const stage = new Uint8Array(256);
  const out = new BigUint64Array(3);
  // Headers 0..5: the first polled with the long form, the rest with the short one.
  for (let i = 0; i < 6; i++) {
    const head = new Uint8Array(40 + i).fill(i + 1);
    const s = a.ucxSend(ep, BigInt(100 + i), head);
    let n = -1;
    const deadline = performance.now() + 10_000;
    while (n < 0) {
      a.ucxProgress(w1);
      n = i === 0 ? a.ucxPoll(w2, stage, out, true) : a.ucxPoll(w2, true);
      assert.ok(performance.now() < deadline, `header ${i}: none within 10 s`);
    }
    assert.equal(n, 40 + i, `header ${i}: its length`);
    assert.deepEqual([out[0], out[1]], [BigInt(40 + i), BigInt(100 + i)], `header ${i}: length and sender tag in out`);
    assert.ok(stage.subarray(0, n).every((b) => b === i + 1), `header ${i}: its bytes in the stage`);
    if (s >= 0) while (a.ucxTest(s, new BigUint64Array(2)) === 1) a.ucxProgress(w1);
  }
});

test('UCX tcp segment sizes: nbcoll sets its own unless the user did, and hands UCX\'s tools the user\'s environment', { skip: ucxMissing() }, () => {
  const probe = `const m = await import('./src/runtime/native.ts'); m.nativeAddon();
    console.log(JSON.stringify({ rx: process.env.UCX_TCP_RX_SEG_SIZE ?? null, tx: process.env.UCX_TCP_TX_SEG_SIZE,
      tool: m.withoutUcxTuning(process.env).UCX_TCP_TX_SEG_SIZE ?? null }));`;
  const run = (env: NodeJS.ProcessEnv): unknown => {
    const clean = { ...process.env, ...env };
    for (const k of ['UCX_TCP_RX_SEG_SIZE', 'UCX_TCP_TX_SEG_SIZE']) if (env[k] === undefined) delete clean[k];
    return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8', env: clean, timeout: 30_000 }));
  };
  // Send segments of 64 KiB; the receive segments stay UCX's own.
  assert.deepEqual(run({}), { rx: null, tx: '64k', tool: null });
  assert.deepEqual(run({ UCX_TCP_TX_SEG_SIZE: '1m' }), { rx: null, tx: '1m', tool: '1m' });
  assert.deepEqual(run({ UCX_TCP_RX_SEG_SIZE: '512k' }), { rx: '512k', tx: '64k', tool: null });
});
