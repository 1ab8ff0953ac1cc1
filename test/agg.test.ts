/**
 * The agg executor end to end (issue 13): jobs launched with a private aggregation fabric
 * (`launch(..., { agg })`, as `nbc run --agg`), checked against the sequential reference, on
 * several node counts, ranks per node and tree shapes. The node logs say when a communicator
 * falls back to host algorithms; here the fabric must serve every call it can take.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch, type LaunchResult } from 'nbcoll';
import { fatTreeMismatch } from '../src/agg/placement.ts';
import { jobPath } from './helpers.ts';

const T = { timeout: 240_000 };

async function runAgg(ranks: number, ppn: number, agg: string, args: string[], env?: Record<string, string>, link?: string): Promise<LaunchResult> {
  const r = await launch(jobPath('coll.ts'), { ranks, ppn, args, agg, link, output: 'pipe', timeoutMs: 180_000, env });
  assert.equal(r.exitCode, 0, `${args.join(' ')} on ${ranks} ranks (ppn ${ppn}), fabric ${agg}: ${r.failure}\n${r.stderr}\n${r.stdout}`);
  assert.doesNotMatch(r.stderr, /uses host algorithms/, 'the fabric served every communicator');
  // The private fabric's teardown after a successful job is routine: no daemon's "lost the
  // link to parent" when the daemons stop in some order.
  assert.doesNotMatch(r.stderr, /\[agg .*(lost|died|fail)/i, 'no fabric failure line after a successful job');
  return r;
}

describe('agg executor against the sequential reference', () => {
  // [ranks, ppn, fabric]: 1..16 nodes, 1..4 ranks per node, radix 2..8, 1..3 levels
  const shapes: Array<[number, number, string]> = [
    [4, 1, 'radix=2,levels=2'],
    [6, 2, 'radix=8,levels=1,payload=64'],
    [8, 4, 'radix=2,levels=3'],
    [16, 1, 'radix=4,levels=2'],
  ];
  for (const [n, ppn, agg] of shapes) {
    test(`barrier, reduce and allreduce (every fabric op and type, and host fallbacks) match on ${n} ranks over ${Math.ceil(n / ppn)} nodes, fabric ${agg}`, T, async () => {
      const r = await runAgg(n, ppn, agg, ['props', 'barrier,reduce,allreduce', 'agg']);
      const checks = r.ranks.map((x) => x.result as number);
      assert.ok(checks.every((c) => c === checks[0] && c > 20), `checks per rank: ${checks.join(', ')}`);
    });
  }

  test('non-blocking and persistent agg calls, several in flight on two communicators, complete with the reference result', T, async () => {
    const r = await runAgg(6, 2, 'radix=2,levels=2', ['aggnb']);
    assert.ok(r.ranks.every((x) => (x.result as number) === 24), JSON.stringify(r.ranks.map((x) => x.result)));
  });

  test('a float sum through the fabric is bitwise identical run after run, with random delays at the daemons', T, async () => {
    const digests: string[] = [];
    for (const delay of ['0', '300', '300']) {
      const r = await runAgg(8, 2, 'radix=2,levels=2', ['aggbits'], { NBC_AGG_TEST_DELAY_US: delay });
      digests.push(...r.ranks.map((x) => x.result as string));
    }
    assert.equal(new Set(digests).size, 1, `digests: ${[...new Set(digests)].join(', ')}`);
  });

  test('without a fabric, agg calls fall back to host algorithms collectively, with the reason logged, and stay correct', T, async () => {
    const r = await launch(jobPath('coll.ts'), { ranks: 4, ppn: 2, args: ['props', 'allreduce', 'agg'], output: 'pipe', timeoutMs: 120_000, env: { NBC_AGG_MANAGER: '' } });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    assert.match(r.stderr, /uses host algorithms among the nodes' engines: no aggregation fabric is configured/);
  });

  // The job's mix: 6 calls on host algorithms (2 lean blocking, 1 non-blocking, 2 persistent
  // starts, and agg's product, which the fabric does not take), 3 offloaded, 2 posted for agg.
  const mix = { host: 6, offload: 3, agg: 2, wrong: 0 };
  test('comm.stats().executors counts the calls each executor ran, and the fabric reduced every agg call it took', T, async () => {
    const r = await runAgg(4, 2, 'radix=2,levels=1', ['execstats']);
    for (const x of r.ranks) assert.deepEqual(x.result, { ...mix, onFabric: 2, amongEngines: 0 }, `rank ${x.rank}`);
  });

  test('comm.stats().executors: without a fabric, the engines exchanged the agg calls among themselves', T, async () => {
    const r = await launch(jobPath('coll.ts'), { ranks: 4, ppn: 2, args: ['execstats'], output: 'pipe', timeoutMs: 120_000, env: { NBC_AGG_MANAGER: '' } });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    for (const x of r.ranks) assert.deepEqual(x.result, { ...mix, onFabric: 0, amongEngines: 2 }, `rank ${x.rank}`);
  });
});

describe('agg executor under the emulated network as time', () => {
  // Flat, latency=1ms: a node's contribution reaches the one daemon (at the switch) half a
  // host-to-host hop later, 0.5 ms, and the result comes back as far: no allreduce returns
  // within 1 ms of its call, whatever the host's speed (the ranks wait out the stamp; the
  // daemons and engines never wait).
  test('an agg allreduce on 2 nodes under --link latency=1ms returns no sooner than up and down the tree (1 ms), with the reference result', T, async () => {
    const r = await runAgg(2, 1, 'radix=2,levels=1', ['aggwire', '10'], { NBC_WIRE: 'stamp' }, 'latency=1ms');
    for (const x of r.ranks) {
      const got = x.result as { minMs: number; onFabric: number };
      assert.equal(got.onFabric, 10, `rank ${x.rank}: the fabric reduced every call`);
      // 0.002 ms: the ranks' and daemons' reads of the host clock agree to well under a microsecond
      assert.ok(got.minMs >= 1 - 0.002, `rank ${x.rank}: an allreduce returned after ${got.minMs.toFixed(3)} ms; expected at least 1 ms`);
    }
  });

  test('with a fat-tree topology the fabric must have its radix and a leaf daemon for every leaf switch', () => {
    assert.equal(fatTreeMismatch({ radix: 4, levels: 2 }, 4, 16), null);
    assert.match(fatTreeMismatch({ radix: 2, levels: 3 }, 4, 16)!, /radix 2 is not the fat tree's 4; expected radix=4/);
    assert.match(fatTreeMismatch({ radix: 4, levels: 1 }, 4, 8)!, /8 nodes sit under 2 leaf switches.*expected levels=2/);
  });
});
