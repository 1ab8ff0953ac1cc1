import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { AggClient } from '../src/agg/client.ts';
import { fabricFromEnv, readFabricState } from '../src/agg/fabric.ts';
import { isRunning, waitGone } from '../src/agg/manager.ts';
import { DType } from '../src/ops/dtype.ts';
import { OpCode } from '../src/ops/loops.ts';
import { reduceAll, within } from './agg-helpers.ts';

const T = { timeout: 60_000 };
const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));

function nbc(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : (typeof err.code === 'number' ? err.code : 1), stdout, stderr });
    });
  });
}

describe('nbc agg', () => {
  test('start writes a 0600 state file and prints NBC_AGG_MANAGER; a job joins through fabricFromEnv; status shows it; stop leaves nothing', T, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-agg-'));
    const env = { NBC_AGG_STATE: join(dir, 'agg.json'), NBC_AGG_SECRET: '', NBC_AGG_MANAGER: '' };
    let pids: number[] = [];
    try {
      const r = await nbc(['agg', 'start', '--radix', '2', '--levels', '2', '--slots', '32', '--link', 'latency=10us'], env);
      assert.equal(r.code, 0, r.stderr);
      const m = /^NBC_AGG_MANAGER=(\S+)$/m.exec(r.stdout);
      assert.ok(m, r.stdout);
      assert.equal(statSync(env.NBC_AGG_STATE).mode & 0o777, 0o600);
      const state = readFabricState(env.NBC_AGG_STATE)!;
      pids = state.pids;
      assert.equal(pids.length, 4);
      assert.ok(pids.every(isRunning), 'the fabric outlives the CLI');

      const again = await nbc(['agg', 'start', '--radix', '2', '--levels', '2'], env);
      assert.equal(again.code, 2);
      assert.match(again.stderr, /one runs already/);

      const found = fabricFromEnv({ NBC_AGG_MANAGER: m[1], NBC_AGG_STATE: env.NBC_AGG_STATE });
      assert.ok(found !== null);
      const key = Buffer.alloc(32, 7);
      const clients = await Promise.all([0, 1, 2].map((nodeId) => AggClient.connect({
        manager: found.manager, fabricSecret: found.secret, jobId: 'cli-job', jobKey: key, nodeId,
      })));
      try {
        const groups = await within(Promise.all(clients.map((c, i) => c.join('w', i, 3))), 10_000, 'join');
        const g = groups.map((x) => {
          assert.ok(!('refused' in x));
          return x;
        });
        const outs = await within(reduceAll(g, g.map(() => new Uint8Array(Int32Array.of(1, 2, 3).buffer)), OpCode.sum, DType.Int32), 10_000, 'allreduce');
        for (const o of outs) assert.deepEqual([...new Int32Array((o as Uint8Array).buffer)], [3, 6, 9]);

        const s = await nbc(['agg', 'status', '--json'], env);
        assert.equal(s.code, 0, s.stderr);
        const st = JSON.parse(s.stdout) as { ans: { alive: boolean; slotsTotal: number }[]; groups: { job: string; members: number }[]; jobs: { id: string }[] };
        assert.equal(st.ans.length, 3);
        assert.ok(st.ans.every((a) => a.alive && a.slotsTotal === 32));
        assert.deepEqual(st.groups.map((x) => [x.job, x.members]), [['cli-job', 3]]);
        const text = await nbc(['agg', 'status'], env);
        assert.equal(text.code, 0, text.stderr);
        assert.match(text.stdout, /cli-job/);
      } finally {
        for (const c of clients) c.close();
      }

      const stop = await nbc(['agg', 'stop'], env);
      assert.equal(stop.code, 0, stop.stderr);
      assert.ok(!existsSync(env.NBC_AGG_STATE), 'stop removes the state file');
      assert.ok(await waitGone(pids, 5000), `left running: ${pids.filter(isRunning).join(', ')}`);
      const none = await nbc(['agg', 'status'], env);
      assert.equal(none.code, 2);
      assert.match(none.stderr, /no state file/);
    } finally {
      for (const p of pids) if (isRunning(p)) process.kill(p, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('fabricFromEnv: unset is null; a malformed address or secret is NBC_ERR_ARG', () => {
    assert.equal(fabricFromEnv({}), null);
    const secret = 'ab'.repeat(32);
    assert.deepEqual(fabricFromEnv({ NBC_AGG_MANAGER: '10.0.0.1:7400', NBC_AGG_SECRET: secret }),
      { manager: { host: '10.0.0.1', port: 7400 }, secret: Buffer.from(secret, 'hex') });
    assert.throws(() => fabricFromEnv({ NBC_AGG_MANAGER: 'nohost', NBC_AGG_SECRET: secret }), { code: 'NBC_ERR_ARG' });
    assert.throws(() => fabricFromEnv({ NBC_AGG_MANAGER: 'h:99999', NBC_AGG_SECRET: secret }), { code: 'NBC_ERR_ARG' });
    assert.throws(() => fabricFromEnv({ NBC_AGG_MANAGER: 'h:1', NBC_AGG_SECRET: 'xyz' }), { code: 'NBC_ERR_ARG' });
    const dir = mkdtempSync(join(tmpdir(), 'nbc-agg-'));
    try {
      assert.throws(() => fabricFromEnv({ NBC_AGG_MANAGER: 'h:1', NBC_AGG_STATE: join(dir, 'none.json') }), /no NBC_AGG_SECRET and no state file/);
      writeFileSync(join(dir, 'bad.json'), '{"secret": 1}');
      assert.throws(() => fabricFromEnv({ NBC_AGG_MANAGER: 'h:1', NBC_AGG_STATE: join(dir, 'bad.json') }), { code: 'NBC_ERR_ARG' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
