import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
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

test('nbc info says whether sched_yield is available and why not, and lists the transports and executors', () => {
  const withAddon = JSON.parse(nbc(['info', '--json'])) as Info;
  const yieldLine = withAddon.find((l) => l.what === 'wait: sched_yield')!;
  const cc = (() => { try { execFileSync('cc', ['--version'], { stdio: 'ignore' }); return true; } catch { return false; } })();
  // where a C compiler exists, npm run build built the addon, and it loads
  if (cc) assert.equal(yieldLine.available, true, yieldLine.detail);
  const without = JSON.parse(nbc(['info', '--json'], { NBC_NO_NATIVE: '1' })) as Info;
  assert.deepEqual(without.find((l) => l.what === 'wait: sched_yield'), { what: 'wait: sched_yield', available: false, detail: 'native addon disabled by NBC_NO_NATIVE=1' });
  assert.deepEqual(withAddon.filter((l) => l.what.startsWith('executor ')).map((l) => l.what), ['executor host', 'executor offload', 'executor agg']);
  assert.equal(withAddon.find((l) => l.what === 'transport tcp')!.available, true);
  assert.match(nbc(['info']), /^yes {2}transport tcp/m);
});

test('8 ranks on one node of 2 cores pass the allreduce and barrier property checks with yielding waits and with plain ones', () => {
  for (const env of [{}, { NBC_NO_NATIVE: '1' }]) {
    for (const coll of ['allreduce', 'barrier']) {
      // the job throws (non-zero exit, execFileSync throws) on any result that differs from the reference
      nbc(['run', '-n', '8', '--ppn', '8', '--timeout', '120', jobPath('coll.ts'), 'props', coll], env);
    }
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

test('UCX tcp segment sizes: nbcoll sets its own unless the user did, and hands UCX\'s tools the user\'s environment', { skip: ucxMissing() }, () => {
  const probe = `const m = await import('./src/runtime/native.ts'); m.nativeAddon();
    console.log(JSON.stringify({ rx: process.env.UCX_TCP_RX_SEG_SIZE, tx: process.env.UCX_TCP_TX_SEG_SIZE,
      tool: m.withoutUcxTuning(process.env).UCX_TCP_RX_SEG_SIZE ?? null }));`;
  const run = (env: NodeJS.ProcessEnv): unknown => {
    const clean = { ...process.env, ...env };
    for (const k of ['UCX_TCP_RX_SEG_SIZE', 'UCX_TCP_TX_SEG_SIZE']) if (env[k] === undefined) delete clean[k];
    return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', probe], { cwd: root, encoding: 'utf8', env: clean, timeout: 30_000 }));
  };
  assert.deepEqual(run({}), { rx: '512k', tx: '64k', tool: null });
  assert.deepEqual(run({ UCX_TCP_RX_SEG_SIZE: '1m' }), { rx: '1m', tx: '64k', tool: '1m' });
});
