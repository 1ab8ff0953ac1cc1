import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import type { AggGroup } from '../src/agg/client.ts';
import { fabricStatus, startFabric, type FabricHandle } from '../src/agg/fabric.ts';
import { isRunning, waitGone } from '../src/agg/manager.ts';
import { authenticateAsConnector } from '../src/net/auth.ts';
import { encodeFrame } from '../src/net/frame.ts';
import { DType } from '../src/ops/dtype.ts';
import { OpCode } from '../src/ops/loops.ts';
import { closeJob, connectJob, floats, foldRight, joinAll, reduceAll, reference, within } from './agg-helpers.ts';

const T = { timeout: 60_000 };
const STATUS_POLL_MS = 100;
const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/**
 * Issues `n` allreduces of `bytes` at every member. `results`: each call's error (or null) and
 * when it came; `moving`: resolves when the first call completes, i.e. data is flowing through
 * the tree (the later calls, held back by the credit window, are still pending then).
 */
function issueMany(groups: AggGroup[], n: number, bytes: number): { results: Promise<{ err: Error | null; at: number }[]>; moving: Promise<void> } {
  const all: Promise<{ err: Error | null; at: number }>[] = [];
  let flowing!: () => void;
  const moving = new Promise<void>((resolve) => { flowing = resolve; });
  for (const g of groups) {
    for (let k = 0; k < n; k++) {
      all.push(new Promise((resolve) => {
        const out = new Uint8Array(bytes);
        g.reduce(floats(bytes / 8), out, OpCode.sum, DType.Float64, -1, (err) => {
          flowing();
          resolve({ err, at: performance.now() });
        });
      }));
    }
  }
  return { results: Promise.all(all), moving };
}

/**
 * Resolves once the fabric status satisfies `ok`, asking the AM every STATUS_POLL_MS (it has no
 * way to push its state; some counters reach it only with heartbeats); fails at the deadline.
 */
async function statusUntil(f: FabricHandle, ok: (s: Status) => boolean, what: string, ms = 5000): Promise<Status> {
  const end = performance.now() + ms;
  for (;;) {
    const s = await fabricStatus(f.manager, f.secret) as unknown as Status;
    if (ok(s)) return s;
    if (performance.now() > end) assert.fail(`the fabric status did not show ${what} within ${ms} ms: ${JSON.stringify(s)}`);
    await pause(STATUS_POLL_MS);
  }
}
interface Status {
  ans: { id: number; host: string; port: number; alive: boolean; counters: Record<string, number> }[];
  groups: { id: number; job: string }[];
  jobs: { id: string; reservations: Record<string, number> }[];
  counters: Record<string, number>;
}

/** Resolves when the server closes `socket` (or after `ms`, with false). */
function closedBy(socket: Socket, ms = 6000): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.resume();
  });
}

describe('aggregation fabric faults', () => {
  // These tests need hops that take real time, to kill something while operations are in
  // flight: the fabric's timer queue (wireMode 'queue'), not stamps that only the ranks wait out.
  test('SIGKILL of an AN mid-operation fails every pending reduce with NBC_ERR_PEER_FAILED within 5 s, naming it; a new join gets a fresh group around it', T, async () => {
    const shape = { radix: 2, levels: 2 };
    const f = await startFabric({ ...shape, link: { latencyUs: 1000 }, wireMode: 'queue', log: () => {} });
    const job = await connectJob(f, [0, 1, 2, 3]);
    try {
      const groups = await joinAll(job, 'world');
      const { results, moving } = issueMany(groups, 30, 4096);
      // Once data is flowing through the tree (a first call completed; later ones are held by
      // the credit window), kill.
      await within(moving, 10_000, 'the first operation through the fabric');
      const killedAt = performance.now();
      process.kill(f.pids[1 + 2]!, 'SIGKILL');
      const rs = await within(results, 10_000, 'pending reduces after the kill');
      const failed = rs.filter((r) => r.err !== null);
      assert.ok(failed.length > 0, 'some operations were pending when the AN died');
      for (const r of failed) {
        assert.equal((r.err as Error & { code?: string }).code, 'NBC_ERR_PEER_FAILED', r.err!.message);
        assert.match(r.err!.message, /AN 2/);
        assert.ok(r.at - killedAt < 5000, `failed ${Math.round(r.at - killedAt)} ms after the kill`);
      }
      assert.ok(groups.every((g) => g.failed !== null));
      // The AM knows AN 2 is dead: members 2 and 3 move to the next live leaf (AN 1).
      await statusUntil(f, (s) => s.ans[2]!.alive === false, 'AN 2 dead');
      const again = await within(Promise.all(job.clients.map((c, i) => c.join('world', i, 4))), 10_000, 'join after the kill');
      const kinds = again.map((a) => ('refused' in a ? `refused: ${a.refused}` : `group ${a.id}`));
      assert.equal(new Set(kinds).size, 1, kinds.join(' | '));
      const g2 = again as AggGroup[];
      assert.ok(!('refused' in again[0]!), kinds[0]);
      assert.notEqual(g2[0]!.id, groups[0]!.id);
      assert.deepEqual([...g2[0]!.ans], [1]);
      assert.ok(g2[0]!.epoch > groups[0]!.epoch, 'a fresh group of the same key has a higher epoch');
      const data = g2.map(() => floats(300));
      const outs = await within(reduceAll(g2, data, OpCode.sum, DType.Float64), 10_000, 'allreduce on the fresh group');
      for (const o of outs) assert.deepEqual(o, foldRight(data, OpCode.sum, DType.Float64));
    } finally {
      closeJob(job);
      await f.stop();
    }
    assert.deepEqual(f.pids.filter(isRunning), []);
  });

  test('SIGKILL of a member node fails the others\' pending reduces within 5 s and releases its reservations', T, async () => {
    // Emulated hops keep the 200 operations going long after the kill, even on a fast machine.
    const f = await startFabric({ radix: 2, levels: 2, link: { latencyUs: 500 }, wireMode: 'queue', log: () => {} });
    const job = await connectJob(f, [0, 1, 2], 'job-member-kill');
    const child = spawn(process.execPath, ['--import', 'tsx', fixture('agg-member.ts'), `${f.manager.host}:${f.manager.port}`,
      f.secret.toString('hex'), job.id, job.key.toString('hex'), '3', '3', '4'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const joined = new Promise<void>((resolve, reject) => {
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (s: string) => (s.includes('JOINED') ? resolve() : reject(new Error(s))));
      });
      const [groups] = await within(Promise.all([
        Promise.all(job.clients.map((c, i) => c.join('world', i, 4))), joined]), 20_000, 'join with a member process');
      assert.ok(groups.every((g) => !('refused' in g)));
      // The member process loops; ours run a few operations with it, then it dies mid-stream.
      const { results, moving } = issueMany(groups as AggGroup[], 200, 4096);
      // Once data is flowing through the tree (a first call completed; later ones are held by
      // the credit window), kill.
      await within(moving, 10_000, 'the first operation through the fabric');
      const killedAt = performance.now();
      child.kill('SIGKILL');
      const rs = await within(results, 10_000, 'pending reduces after the member died');
      const failed = rs.filter((r) => r.err !== null);
      assert.ok(failed.length > 0);
      for (const r of failed) {
        assert.equal((r.err as Error & { code?: string }).code, 'NBC_ERR_PEER_FAILED', r.err!.message);
        assert.match(r.err!.message, /member 3|node 3/);
        assert.ok(r.at - killedAt < 5000);
      }
      const s = await statusUntil(f, (st) => st.groups.length === 0 && st.jobs.every((j) => Object.keys(j.reservations).length === 0), 'no groups or reservations left');
      assert.deepEqual(s.groups, [], 'the group is gone');
      assert.deepEqual(s.jobs.find((j) => j.id === job.id)?.reservations, {}, 'its slots are released');
    } finally {
      child.kill('SIGKILL');
      closeJob(job);
      await f.stop();
    }
    assert.deepEqual(f.pids.filter(isRunning), []);
  });

  test('killing the AM fails pending reduces; the daemons survive and a restarted AM (same port and secret) adopts them', T, async () => {
    const shape = { radix: 2, levels: 2 };
    const f = await startFabric({ ...shape, link: { latencyUs: 500 }, wireMode: 'queue', log: () => {} });
    let f2: FabricHandle | null = null;
    const job = await connectJob(f, [0, 1, 2, 3]);
    try {
      const groups = await joinAll(job, 'world');
      const { results, moving } = issueMany(groups, 30, 4096);
      // Once data is flowing through the tree (a first call completed; later ones are held by
      // the credit window), kill.
      await within(moving, 10_000, 'the first operation through the fabric');
      const killedAt = performance.now();
      process.kill(f.pids[0]!, 'SIGKILL');
      const rs = await within(results, 10_000, 'pending reduces after the AM died');
      // A node that loses the AM fails its groups (agg/client.ts), so the calls still held by
      // the credit window fail.
      const failed = rs.filter((x) => x.err !== null);
      assert.ok(failed.length > 0, 'some operations were pending when the AM died');
      for (const r of failed) {
        assert.equal((r.err as Error & { code?: string }).code, 'NBC_ERR_PEER_FAILED', r.err!.message);
        assert.ok(r.at - killedAt < 5000);
      }
      assert.ok(await waitGone([f.pids[0]!], 2000));
      assert.deepEqual(f.pids.slice(1).filter((p) => !isRunning(p)), [], 'every AN survives the AM');
      f2 = await startFabric({ ...shape, port: f.manager.port, secret: f.secret, adopt: true, link: { latencyUs: 500 }, wireMode: 'queue', log: () => {} });
      assert.deepEqual(f2.pids.slice(1), f.pids.slice(1), 'the new AM adopted the same daemons');
      const j2 = await connectJob(f2, [0, 1, 2, 3]);
      try {
        const g = await joinAll(j2, 'world');
        const data = g.map(() => floats(1000));
        const outs = await within(reduceAll(g, data, OpCode.sum, DType.Float64), 10_000, 'allreduce after the restart');
        for (const o of outs) assert.deepEqual(o, reference(shape, [0, 1, 2, 3], data, OpCode.sum, DType.Float64));
      } finally {
        closeJob(j2);
      }
    } finally {
      closeJob(job);
      await f2?.stop();
      await f.stop();
    }
    assert.deepEqual([...f.pids, ...(f2?.pids ?? [])].filter(isRunning), []);
  });

  test('a private fabric dies with the process that started it', T, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture('agg-private.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const pids = await within(new Promise<number[]>((resolve) => {
      let out = '';
      child.stdout.setEncoding('utf8');
      child.stdout.on('data', (s: string) => {
        out += s;
        const m = /PIDS (\[.*\])/.exec(out);
        if (m) resolve(JSON.parse(m[1]!) as number[]);
      });
    }), 20_000, 'private fabric start');
    assert.equal(pids.length, 4);
    child.kill('SIGKILL');
    assert.ok(await waitGone(pids, 8000), `left running: ${pids.filter(isRunning).join(', ')}`);
  });
});

describe('aggregation fabric authentication', () => {
  test('garbage, wrong-secret, replayed and bad-frame connections to the AM and an AN are rejected, counted and logged; the fabric keeps serving', T, async () => {
    const lines: string[] = [];
    const shape = { radix: 2, levels: 2 };
    const f = await startFabric({ ...shape, log: (l) => lines.push(l) });
    try {
      const st = await fabricStatus(f.manager, f.secret) as unknown as Status;
      const an = st.ans[0]!; // the root: connector id 1 (its child) selects the fabric secret there
      const targets = [{ name: 'AM', host: f.manager.host, port: f.manager.port }, { name: 'AN 0', host: an.host, port: an.port }];
      for (const t of targets) {
        // Garbage instead of a handshake.
        const g = connect({ host: t.host, port: t.port });
        g.on('connect', () => g.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n' + 'x'.repeat(200)));
        assert.ok(await closedBy(g), `${t.name} closes a garbage connection`);
        // The wrong secret.
        const w = connect({ host: t.host, port: t.port });
        w.on('error', () => {});
        await assert.rejects(authenticateAsConnector(w, randomBytes(32), 1), { code: 'NBC_ERR_AUTH' });
        // A response that was valid for another challenge (a replay of recorded traffic).
        const r = connect({ host: t.host, port: t.port });
        r.once('data', () => {
          const resp = Buffer.alloc(72);
          resp.write('NBC1', 0, 'latin1');
          resp.writeUInt32LE(1, 4);
          randomBytes(32).copy(resp, 8);
          const oldChallenge = randomBytes(32);
          createHmac('sha256', f.secret).update('nbc-auth-v1|connector|').update(oldChallenge).update(resp.subarray(4, 8))
            .digest().copy(resp, 40);
          r.write(resp);
        });
        assert.ok(await closedBy(r), `${t.name} closes a replayed handshake`);
      }
      // An authenticated connection that sends a bad frame is dropped with one logged reason.
      const b = connect({ host: f.manager.host, port: f.manager.port });
      b.on('error', () => {});
      await authenticateAsConnector(b, f.secret, 0);
      b.write(encodeFrame(9, Buffer.from('nonsense')));
      assert.ok(await closedBy(b), 'the AM drops a connection with a bad frame');

      const s = await statusUntil(f, (x) => (x.ans[0]!.counters.authRejections ?? 0) >= 3 && (x.counters.badFrames ?? 0) >= 1, '3 authentication rejections and a bad frame');
      assert.ok(s.counters.authRejections! >= 3, `AM auth rejections ${s.counters.authRejections}`);
      assert.ok(s.ans[0]!.counters.authRejections! >= 3, `AN 0 auth rejections ${s.ans[0]!.counters.authRejections}`);
      assert.equal(s.counters.badFrames, 1);
      assert.ok(lines.some((l) => /AM .*rejected connection from .*garbage handshake/.test(l)), lines.join('\n'));
      assert.ok(lines.some((l) => /AN 0 .*rejected connection from .*bad HMAC/.test(l)), lines.join('\n'));
      assert.ok(lines.some((l) => /dropped connection from .*bad frame/.test(l)));

      // Still serving.
      const job = await connectJob(f, [0, 1, 2, 3]);
      try {
        const g = await joinAll(job, 'world');
        const data = g.map(() => floats(64));
        const outs = await within(reduceAll(g, data, OpCode.sum, DType.Float64), 10_000, 'allreduce after the attacks');
        for (const o of outs) assert.deepEqual(o, reference(shape, [0, 1, 2, 3], data, OpCode.sum, DType.Float64));
      } finally {
        closeJob(job);
      }
    } finally {
      await f.stop();
    }
  });

  test('registering a job id with a second key is refused; two jobs on one AN stay apart', T, async () => {
    const f = await startFabric({ radix: 2, levels: 1, log: () => {} });
    try {
      const a = await connectJob(f, [0, 1]);
      const b = await connectJob(f, [0, 1]);
      await assert.rejects(connectJob(f, [2], a.id), /different key/);
      const ga = await joinAll(a, 'world');
      const gb = await joinAll(b, 'world');
      // Different data per job: cross-talk between them would show as a wrong sum in either.
      const da = [floats(32), floats(32)];
      const db = [floats(32), floats(32)];
      const [oa, ob] = await within(Promise.all([reduceAll(ga, da, OpCode.sum, DType.Float64), reduceAll(gb, db, OpCode.sum, DType.Float64)]), 10_000, 'two jobs');
      const shape = { radix: 2, levels: 1 };
      for (const o of oa) assert.deepEqual(o, reference(shape, [0, 1], da, OpCode.sum, DType.Float64), 'job a');
      for (const o of ob) assert.deepEqual(o, reference(shape, [0, 1], db, OpCode.sum, DType.Float64), 'job b');
      closeJob(a);
      closeJob(b);
    } finally {
      await f.stop();
    }
  });
});
