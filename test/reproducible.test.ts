import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { exactUnits } from './exact-sum.ts';
import { launch } from 'nbcoll';
import { ucxUnavailable } from '../src/runtime/node-main.ts';
import { jobPath, runOk } from './helpers.ts';
import { dataSet } from './jobs/reproducible.ts';

const T = { timeout: 120_000 };


interface Result {
  partition: Record<string, string>;
  plain: string;
  direct: Record<string, string>;
  refusals: string[];
  expected: string;
  rootedOk: boolean;
  values: string[];
  three: string[];
  float32Same: boolean;
  threeSame: boolean;
  large: { split: string; whole: string; nb: string; offload: string; inPlace: string; expected: string };
  reduceScatter: Record<string, string>;
  blockOk: boolean;
  scans: Record<string, string>;
  scanValues: string[];
  exscanOk: boolean;
  lastScanIsAllreduce: boolean;
  prods: Record<string, string>;
  prodRootedOk: boolean;
  aggOnFabric: number;
}

/** What every rank of a job shares: the result less its rank's own scans and root checks. */
const shared = (r: Result): unknown => ({ ...r, rootedOk: 0, scans: 0, scanValues: 0, exscanOk: 0, lastScanIsAllreduce: 0, prodRootedOk: 0 });

const byP = new Map<number, Result>();
const noUcx = ucxUnavailable();
const data = dataSet();

describe('reproducible sums', () => {
  for (const [p, ppn] of [[1, 1], [2, 2], [3, 2], [4, 2], [7, 4], [8, 4], [16, 8]] as const) {
    test(`${p} ranks over ${Math.ceil(p / ppn)} node(s): every algorithm and call form gives the same bits, within the bound of the exact sum`, T, async () => {
      const run = await runOk('reproducible.ts', p, ppn, [], 90_000);
      const rs = run.ranks.map((x) => x.result as Result);
      for (const r of rs) assert.deepEqual(shared(r), shared(rs[0]!), 'every rank has the same bits');
      const r = rs[0]!;
      byP.set(p, r);
      for (const folds of [2, 3]) {
        const hashes = Object.entries(r.partition).filter(([k]) => k.startsWith(`${folds}/`)).map(([, h]) => h);
        assert.equal(new Set(hashes).size, 1, `partitioned sums, ${folds} folds: one hash for every algorithm (${JSON.stringify(r.partition)})`);
      }
      assert.equal(new Set(Object.values(r.direct)).size, 1, `direct: one hash for every algorithm and form (${JSON.stringify(r.direct)})`);
      assert.equal(Object.values(r.direct)[0], r.expected, 'the direct sums are the sequential binned sum of the same values');
      assert.ok(rs.every((x) => x.rootedOk), 'reduce to the last rank gives the same bits');
      assert.ok(r.float32Same, 'Float32: the same bits under ring, recursive doubling and offload');
      assert.ok(r.threeSame, '3 folds: the same bits on host and offload');
      assert.equal(new Set(Object.values(r.reduceScatter)).size, 1, `reduce-scatter: one hash (${JSON.stringify(r.reduceScatter)})`);
      assert.ok(r.blockOk, 'reduce-scatter blocks: the allreduce\'s bits');
      for (const x of rs) {
        assert.equal(new Set(Object.values(x.scans)).size, 1, `scan: one hash for host, offload and persistent (${JSON.stringify(x.scans)})`);
        assert.ok(x.exscanOk, 'exscan on rank r: rank r - 1\'s scan');
        assert.ok(x.lastScanIsAllreduce, 'the last rank\'s scan: the allreduce');
      }
      assert.equal(new Set(Object.values(r.prods)).size, 1, `prod: the fixed tree's bits under every algorithm and executor (${JSON.stringify(r.prods)})`);
      assert.ok(rs.every((x) => x.prodRootedOk), 'reduce of a product: the same tree');
      assert.equal(r.large.split, r.large.expected, '5000 elements by the exchange of values and the gather: the sequential binned sum');
      assert.equal(r.large.whole, r.large.expected, '5000 elements by ring allreduce of the counts: the same');
      assert.equal(r.large.nb, r.large.expected, '5000 elements by iallreduce (two phases on the host): the same');
      assert.equal(r.large.offload, r.large.expected, '5000 elements on the offload executor (the values exchanged, then summed on the ranks): the same');
      assert.equal(r.large.inPlace, r.large.expected, '5000 elements in place: the same');
      // Against the exact sum of each element's first p values.
      for (let e = 0; e < data.length; e++) {
        const xs = data[e]!.slice(0, p);
        const v = r.values[e]!;
        if (xs.some((x) => Number.isNaN(x))) { assert.equal(v, 'NaN'); continue; }
        if (xs.includes(Infinity)) { assert.equal(v, 'Infinity'); continue; }
        const got = v === '-0' ? -0 : Number(v);
        const maxAbs = xs.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
        const d = exactUnits([got]) - exactUnits(xs);
        const bound = exactUnits([2 * p * maxAbs * 2 ** -40]) + exactUnits([Math.abs(got) * 2 ** -51]) + 1n;
        assert.ok((d < 0n ? -d : d) <= bound, `element ${e}: ${got} against the exact sum of ${p} values`);
        if (xs.every((x) => Object.is(x, -0))) assert.equal(v, '-0', `element ${e}: a sum of -0 alone is -0`);
        // Each rank's scan against the exact sum of values 0..q (on the whole job's bins).
        for (let q = 0; q < p; q++) {
          const ys = xs.slice(0, q + 1);
          const sv = rs[q]!.scanValues[e]!;
          if (xs.includes(Infinity) || sv === 'NaN' || sv === 'Infinity') continue;
          const sd = exactUnits([Number(sv)]) - exactUnits(ys);
          const sb = exactUnits([2 * p * maxAbs * 2 ** -40]) + exactUnits([Math.abs(Number(sv)) * 2 ** -51]) + 1n;
          assert.ok((sd < 0n ? -sd : sd) <= sb, `element ${e}, rank ${q}'s scan: ${sv} against the exact sum of ${q + 1} values`);
        }
      }
      assert.deepEqual(r.refusals, [
        "NBC_ERR_ARG: Cannot use collective option 'reproducable': unknown option; expected one of algorithm, executor, reproducible, folds",
        "NBC_ERR_ARG: Cannot allreduce with { reproducible: true }: it applies to op 'sum' or 'prod' over Float64Array or Float32Array, got op 'max' over Float64Array; min, max, the bitwise and the logical ops give the same bits in any order already (docs/ops.md)",
        "NBC_ERR_ARG: Cannot allreduce with { reproducible: true }: it applies to op 'sum' or 'prod' over Float64Array or Float32Array, got op 'sum' over Int32Array; min, max, the bitwise and the logical ops give the same bits in any order already (docs/ops.md)",
        "NBC_ERR_ARG: Cannot scan with { reproducible: true } and op 'prod': the canonical product is made for allreduce and reduce; expected op 'sum', or allreduce or reduce",
        `NBC_ERR_COUNT: Cannot allreduce on communicator ${r.refusals[4]!.match(/communicator (\d+)/)?.[1]} with { reproducible: true }: recv has 1 elements; expected 2`,
        `NBC_ERR_COUNT: Cannot reduceScatter on communicator ${r.refusals[4]!.match(/communicator (\d+)/)?.[1]} with { reproducible: true }: send has ${p + 1} elements; expected ${p}`,
        `NBC_ERR_ARG: Cannot allgather on communicator ${r.refusals[4]!.match(/communicator (\d+)/)?.[1]} with { reproducible: true }: it applies to the reductions (allreduce, reduce, reduceScatter, reduceScatterBlock, scan, exscan; blocking, non-blocking and persistent); expected one of them`,
        'NBC_ERR_ARG: Cannot use collective option folds number 3 without reproducible: true: the folds are the binned format\'s',
        'NBC_ERR_ARG: Cannot allreduce with { reproducible: true }: folds is number 4; expected 2 or 3',
      ]);
    });
  }

  for (const transport of ['tcp', 'ucx'] as const) {
    test(`4 ranks over 2 nodes over ${transport}: the same bits as over the default transport`,
      { ...T, skip: transport === 'ucx' && noUcx !== null ? `no UCX: ${noUcx}` : false }, async () => {
        const run = await launch(jobPath('reproducible.ts'), { ranks: 4, ppn: 2, transport, output: 'pipe', timeoutMs: 90_000 });
        assert.equal(run.exitCode, 0, `${run.failure}\n${run.stderr}`);
        const r = run.ranks[0]!.result as Result;
        assert.deepEqual(r.partition, byP.get(4)!.partition, 'the partitioned sums');
        assert.deepEqual(r.direct, byP.get(4)!.direct, 'the direct calls');
        assert.equal(Object.values(r.direct)[0], r.expected);
        assert.deepEqual(r.large, byP.get(4)!.large);
      });
  }

  test('4 ranks over 2 nodes with an aggregation fabric: the counts summed in the daemons give the same bits', T, async () => {
    const run = await launch(jobPath('reproducible.ts'), { ranks: 4, ppn: 2, agg: 'radix=2,levels=1', output: 'pipe', timeoutMs: 90_000 });
    assert.equal(run.exitCode, 0, `${run.failure}\n${run.stderr}`);
    assert.doesNotMatch(run.stderr, /uses host algorithms/, 'the fabric served the agg calls');
    const r = run.ranks[0]!.result as Result;
    assert.deepEqual(r.direct, byP.get(4)!.direct, 'the direct calls, agg among them');
    assert.equal(r.direct['allreduce/agg'], r.expected);
    assert.equal(r.aggOnFabric, 2, 'the counts of the blocking and the non-blocking call were summed on the fabric');
  });

  test('the partitioned sums have one hash whatever the rank count', () => {
    assert.ok(byP.size >= 2, 'the rank-count tests ran');
    const first = [...byP.values()][0]!.partition;
    for (const [p, r] of byP) assert.deepEqual(r.partition, first, `${p} ranks`);
    // The control: the same data summed plainly changes bits with the rank count.
    assert.ok(new Set([...byP.values()].map((r) => r.plain)).size > 1, 'plain sums of this data set differ between rank counts');
  });

  test('NBC_REPRODUCIBLE=1 makes plain Float64 sums reproducible; { reproducible: false } and other calls run as before; a bad value is refused', T, async () => {
    const r = await launch(jobPath('reproducible-env.ts'), { ranks: 3, ppn: 2, output: 'pipe', timeoutMs: 60_000, env: { NBC_REPRODUCIBLE: '1' } });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    for (const x of r.ranks) assert.deepEqual(x.result, { same: true, optedOutFinite: true, ints: 6, max: 2, large: [true, true] });
    const bad = await launch(jobPath('reproducible-env.ts'), { ranks: 2, ppn: 2, output: 'pipe', timeoutMs: 60_000, env: { NBC_REPRODUCIBLE: 'yes' } });
    assert.notEqual(bad.exitCode, 0);
    assert.match(`${bad.failure} ${bad.stderr}`, /NBC_REPRODUCIBLE=yes: expected 1 \(sums of Float64 or Float32 by the reductions give the same bits on any rank count, algorithm and executor\) or 0/);
  });
});
