import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { AggGroup } from '../src/agg/client.ts';
import { fabricStatus, parseAggSpec, startFabric, type FabricHandle } from '../src/agg/fabric.ts';
import { isRunning } from '../src/agg/manager.ts';
import { aggSupports } from '../src/agg/wire.ts';
import { DType } from '../src/ops/dtype.ts';
import { OpCode } from '../src/ops/loops.ts';
import {
  bigints, closeJob, connectJob, floats, ints, joinAll, locPairs, reduceAll, reference, trimmed, within, type Job,
} from './agg-helpers.ts';

const T = { timeout: 60_000 };

describe('aggregation fabric: radix 2, 2 levels, 4 member nodes', () => {
  const shape = { radix: 2, levels: 2 };
  const nodes = [0, 1, 2, 3];
  let f: FabricHandle;
  let job: Job;
  let groups: AggGroup[];

  before(async () => {
    f = await startFabric({ ...shape, slotsPerAn: 64, jobQuotaSlots: 24, log: () => {} });
    job = await connectJob(f, nodes);
    groups = await joinAll(job, 'world');
  });
  after(async () => {
    closeJob(job);
    await f.stop();
    assert.deepEqual(f.pids.filter(isRunning), [], 'no fabric process is left after stop()');
  });

  test('the group spans the whole tree: root AN 0, ANs 0,1,2', () => {
    assert.deepEqual([...groups[0]!.ans], trimmed(shape, nodes).ans);
    assert.deepEqual([...groups[0]!.ans], [0, 1, 2]);
    assert.equal(groups[0]!.slots, 8);
    assert.equal(groups[0]!.payloadPerSlot, 256);
  });

  for (const bytes of [0, 8, 1000, 4096]) {
    test(`allreduce sum of Float64 (${bytes} B) is bitwise the reference in fixed child order`, T, async () => {
      const data = nodes.map(() => floats(bytes / 8));
      const outs = await within(reduceAll(groups, data, OpCode.sum, DType.Float64), 10_000, 'allreduce');
      const ref = reference(shape, nodes, data, OpCode.sum, DType.Float64);
      for (const o of outs) assert.deepEqual(o, ref);
    });
  }

  const cases: [string, number, number, (m: number) => Uint8Array][] = [
    ['sum Int32', OpCode.sum, DType.Int32, () => ints(250)],
    ['min Float64', OpCode.min, DType.Float64, () => floats(125)],
    ['max Int32', OpCode.max, DType.Int32, () => ints(1024)],
    ['sum BigInt64', OpCode.sum, DType.BigInt64, () => bigints(512)],
    ['bor BigInt64', OpCode.bor, DType.BigInt64, () => bigints(40)],
    ['band Int32', OpCode.band, DType.Int32, () => ints(300, 2 ** 30)],
    ['bxor Int32', OpCode.bxor, DType.Int32, () => ints(300, 2 ** 30)],
    ['lxor Int32', OpCode.lxor, DType.Int32, () => ints(300, 2)],
    ['land Int32', OpCode.land, DType.Int32, () => ints(300, 2)],
    ['minloc Float64 pairs', OpCode.minloc, DType.Float64, (m) => locPairs(200, m)],
    ['maxloc Float64 pairs', OpCode.maxloc, DType.Float64, (m) => locPairs(200, m)],
  ];
  for (const [name, op, dtype, make] of cases) {
    test(`allreduce ${name} equals the reference`, T, async () => {
      const data = nodes.map((_, m) => make(m));
      const outs = await within(reduceAll(groups, data, op, dtype), 10_000, name);
      const ref = reference(shape, nodes, data, op, dtype);
      for (const o of outs) assert.deepEqual(o, ref);
    });
  }

  test('minloc picks the lowest index on ties, whatever the arrival order', T, async () => {
    const data = nodes.map((_, m) => new Uint8Array(Float64Array.of(1, m, 5 - m, m).buffer));
    const outs = await within(reduceAll(groups, data, OpCode.minloc, DType.Float64), 10_000, 'minloc');
    for (const o of outs) assert.deepEqual([...new Float64Array((o as Uint8Array).buffer)], [1, 0, 2, 3]);
  });

  test('reduce to root 2: only member 2 gets the result, the others complete without it', T, async () => {
    const data = nodes.map(() => floats(300));
    const outs = await within(reduceAll(groups, data, OpCode.sum, DType.Float64, 2), 10_000, 'reduce');
    assert.deepEqual(outs[2], reference(shape, nodes, data, OpCode.sum, DType.Float64));
    assert.deepEqual([outs[0], outs[1], outs[3]], [null, null, null]);
  });

  test('40 operations in flight at once complete in issue order, each correct', T, async () => {
    const n = 40;
    const data = Array.from({ length: n }, () => {
      const len = 64 + Math.floor(Math.random() * 200);
      return nodes.map(() => floats(len));
    });
    const order: number[][] = nodes.map(() => []);
    const outs = await within(Promise.all(groups.flatMap((g, m) => data.map((d, k) => new Promise<Uint8Array>((resolve, reject) => {
      const out = new Uint8Array(d[m]!.byteLength);
      g.reduce(d[m]!, out, OpCode.sum, DType.Float64, -1, (err) => {
        order[m]!.push(k);
        if (err) reject(err);
        else resolve(out);
      });
    })))), 20_000, 'pipelined allreduce');
    for (let m = 0; m < nodes.length; m++) {
      assert.deepEqual(order[m], data.map((_, k) => k), `member ${m} completes in issue order`);
      for (let k = 0; k < n; k++) assert.deepEqual(outs[m * n + k], reference(shape, nodes, data[k]!, OpCode.sum, DType.Float64));
    }
  });

  test('members all under one leaf get a group trimmed to that leaf', T, async () => {
    const j = await connectJob(f, [0, 1]);
    try {
      const g = await joinAll(j, 'pair');
      assert.deepEqual([...g[0]!.ans], [1]);
      const data = [floats(100), floats(100)];
      const outs = await within(reduceAll(g, data, OpCode.sum, DType.Float64), 10_000, 'allreduce');
      for (const o of outs) assert.deepEqual(o, reference(shape, [0, 1], data, OpCode.sum, DType.Float64));
    } finally {
      closeJob(j);
    }
  });

  test('two jobs at once on one fabric both get correct results', T, async () => {
    const other = await connectJob(f, [0, 1, 2, 3, 4, 5]);
    try {
      const g2 = await joinAll(other, 'world');
      const d1 = nodes.map(() => floats(512));
      const d2 = other.clients.map(() => floats(700));
      const [o1, o2] = await within(Promise.all([
        reduceAll(groups, d1, OpCode.sum, DType.Float64), reduceAll(g2, d2, OpCode.sum, DType.Float64),
      ]), 15_000, 'two jobs');
      for (const o of o1) assert.deepEqual(o, reference(shape, nodes, d1, OpCode.sum, DType.Float64));
      for (const o of o2) assert.deepEqual(o, reference(shape, [0, 1, 2, 3, 4, 5], d2, OpCode.sum, DType.Float64));
    } finally {
      closeJob(other);
    }
  });

  test('a job over its quota is refused at every member, naming the AN, while another job works', T, async () => {
    // Quota 24 slots per AN per job: 'world' holds 8; 'big' wants 20.
    const answers = await within(Promise.all(job.clients.map((c, i) => c.join('big', i, 4, { slots: 20 }))), 10_000, 'join big');
    const reasons = answers.map((a) => ('refused' in a ? a.refused : 'granted'));
    assert.equal(new Set(reasons).size, 1, `the same answer everywhere: ${reasons.join(' | ')}`);
    assert.match(reasons[0]!, /job quota exceeded at AN \d+/);
    const other = await connectJob(f, [0, 1, 2, 3]);
    try {
      const g = await joinAll(other, 'big', { slots: 20 });
      const d = nodes.map(() => ints(1000));
      const outs = await within(reduceAll(g, d, OpCode.sum, DType.Int32), 10_000, 'other job');
      for (const o of outs) assert.deepEqual(o, reference(shape, nodes, d, OpCode.sum, DType.Int32));
      // The first job's group still works.
      const d1 = nodes.map(() => ints(10));
      const o1 = await within(reduceAll(groups, d1, OpCode.sum, DType.Int32), 10_000, 'first job');
      for (const o of o1) assert.deepEqual(o, reference(shape, nodes, d1, OpCode.sum, DType.Int32));
    } finally {
      closeJob(other);
    }
  });

  test('a member that never joins gets every other member refused, naming it', T, async () => {
    const j = await connectJob(f, [0, 1, 2, 3], undefined, { joinTimeoutMs: 400 });
    try {
      const answers = await within(Promise.all(j.clients.slice(0, 3).map((c, i) => c.join('lonely', i, 4))), 10_000, 'join');
      const reasons = answers.map((a) => ('refused' in a ? a.refused : 'granted'));
      assert.equal(new Set(reasons).size, 1, reasons.join(' | '));
      assert.match(reasons[0]!, /member 3 of 4 did not join/);
      // The late member gets the same answer, not a new round.
      const late = await within(j.clients[3]!.join('lonely', 3, 4), 10_000, 'late join');
      assert.deepEqual(late, { refused: reasons[0] });
    } finally {
      closeJob(j);
    }
  });

  test('status shows the tree, the groups and the jobs with their reservations', T, async () => {
    const s = await fabricStatus(f.manager, f.secret) as {
      ans: { id: number; alive: boolean; slotsUsed: number; slotsTotal: number }[];
      groups: { id: number; ans: number[]; slots: number }[]; jobs: { id: string; reservations: Record<string, number> }[];
    };
    assert.equal(s.ans.length, 3);
    assert.ok(s.ans.every((a) => a.alive && a.slotsTotal === 64));
    const g = s.groups.find((x) => x.id === groups[0]!.id);
    assert.ok(g !== undefined);
    assert.deepEqual(g.ans, [0, 1, 2]);
    assert.deepEqual(s.jobs.find((x) => x.id === job.id)?.reservations, { 0: 8, 1: 8, 2: 8 });
  });

  test('prod and floating-point bitwise ops are not supported, with a reason', () => {
    assert.match(aggSupports(OpCode.prod, DType.Float64)!, /op prod is not reduced/);
    assert.match(aggSupports(OpCode.band, DType.Float32)!, /not defined for floating-point/);
    assert.match(aggSupports(OpCode.sum, DType.Int16)!, /type Int16 is not reduced/);
    assert.equal(aggSupports(OpCode.maxloc, DType.Int32), null);
  });
});

describe('aggregation fabric: tree shapes', () => {
  const shapes: [number, number, number][] = [[2, 1, 3], [2, 3, 8], [3, 2, 9], [8, 2, 20], [3, 3, 12]];
  for (const [radix, levels, n] of shapes) {
    test(`radix ${radix}, ${levels} level(s), ${n} nodes: allreduce is the reference, bitwise the same over repeated runs with random AN delays`, T, async () => {
      const shape = { radix, levels };
      const f = await startFabric({ ...shape, testDelayUs: 2000, log: () => {} });
      const nodes = Array.from({ length: n }, (_, i) => i);
      const job = await connectJob(f, nodes);
      try {
        const groups = await joinAll(job, 'world');
        assert.deepEqual([...groups[0]!.ans], trimmed(shape, nodes).ans);
        const data = nodes.map(() => floats(128));
        const ref = reference(shape, nodes, data, OpCode.sum, DType.Float64);
        for (let run = 0; run < 3; run++) {
          const outs = await within(reduceAll(groups, data, OpCode.sum, DType.Float64), 15_000, `run ${run}`);
          for (const o of outs) assert.deepEqual(o, ref, `run ${run}`);
        }
        const d = nodes.map(() => ints(100));
        const outs = await within(reduceAll(groups, d, OpCode.max, DType.Int32, n - 1), 15_000, 'reduce max');
        assert.deepEqual(outs[n - 1], reference(shape, nodes, d, OpCode.max, DType.Int32));
      } finally {
        closeJob(job);
        await f.stop();
      }
      assert.deepEqual(f.pids.filter(isRunning), []);
    });
  }
});

describe('parseAggSpec', () => {
  test('reads radix, levels, payload, slots and quota', () => {
    assert.deepEqual(parseAggSpec('radix=4,levels=2,payload=128,slots=64,quota=16'),
      { radix: 4, levels: 2, payloadPerSlot: 128, slotsPerAn: 64, jobQuotaSlots: 16 });
    assert.deepEqual(parseAggSpec('radix=4,levels=2,link=latency:20us'), { radix: 4, levels: 2, link: { latencyUs: 20 } });
  });
  test('refuses bad specs with NBC_ERR_ARG', () => {
    for (const bad of ['radix=4', 'radix=1,levels=2', 'radix=4,levels=2,payload=7', 'radix=4,levels=2,colour=red', 'radix=x,levels=2']) {
      assert.throws(() => parseAggSpec(bad), { code: 'NBC_ERR_ARG' }, bad);
    }
  });
});
