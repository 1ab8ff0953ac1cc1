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
  large: { split: string; whole: string; expected: string };
}

const byP = new Map<number, Result>();
const noUcx = ucxUnavailable();
const data = dataSet();

describe('reproducible sums', () => {
  for (const [p, ppn] of [[1, 1], [2, 2], [3, 2], [4, 2], [7, 4], [8, 4], [16, 8]] as const) {
    test(`${p} ranks over ${Math.ceil(p / ppn)} node(s): every algorithm and call form gives the same bits, within the bound of the exact sum`, T, async () => {
      const run = await runOk('reproducible.ts', p, ppn, [], 90_000);
      const rs = run.ranks.map((x) => x.result as Result);
      for (const r of rs) assert.deepEqual(r, { ...rs[0]!, rootedOk: r.rootedOk }, 'every rank has the same bits');
      const r = rs[0]!;
      byP.set(p, r);
      for (const folds of [2, 3]) {
        const hashes = Object.entries(r.partition).filter(([k]) => k.startsWith(`${folds}/`)).map(([, h]) => h);
        assert.equal(new Set(hashes).size, 1, `partitioned sums, ${folds} folds: one hash for every algorithm (${JSON.stringify(r.partition)})`);
      }
      assert.equal(new Set(Object.values(r.direct)).size, 1, `direct: one hash for every algorithm and form (${JSON.stringify(r.direct)})`);
      assert.equal(Object.values(r.direct)[0], r.expected, 'the direct sums are the sequential binned sum of the same values');
      assert.ok(rs.every((x) => x.rootedOk), 'reduce to the last rank gives the same bits');
      assert.ok(r.float32Same, 'Float32: the same bits under ring and recursive doubling');
      assert.equal(r.large.split, r.large.expected, '5000 elements by reduce-scatter and gather: the sequential binned sum');
      assert.equal(r.large.whole, r.large.expected, '5000 elements by ring allreduce of the items: the same');
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
      }
      assert.deepEqual(r.refusals, [
        "NBC_ERR_ARG: Cannot use collective option 'reproducable': unknown option; expected one of algorithm, executor, reproducible, folds",
        "NBC_ERR_ARG: Cannot allreduce with { reproducible: true }: it applies to op 'sum' over Float64Array or Float32Array, got op 'max' over Float64Array; min, max, the bitwise and the logical ops give the same bits in any order already",
        "NBC_ERR_ARG: Cannot allreduce with { reproducible: true }: it applies to op 'sum' over Float64Array or Float32Array, got op 'sum' over Int32Array; min, max, the bitwise and the logical ops give the same bits in any order already",
        "NBC_ERR_ARG: Cannot allreduce with { reproducible: true } on executor 'offload': reproducible sums run on the host executor (the binned merge is a user op, which the node engines cannot run); expected executor 'host' or none",
        `NBC_ERR_ARG: Cannot allreduce on communicator ${r.refusals[4]!.match(/communicator (\d+)/)?.[1]} with { reproducible: true }: it applies to allreduce, iallreduce, reduce and ireduce (op 'sum' over Float64Array or Float32Array); persistent and other collectives do not take it yet`,
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
    for (const x of r.ranks) assert.deepEqual(x.result, { same: true, optedOutFinite: true, ints: 6, max: 2 });
    const bad = await launch(jobPath('reproducible-env.ts'), { ranks: 2, ppn: 2, output: 'pipe', timeoutMs: 60_000, env: { NBC_REPRODUCIBLE: 'yes' } });
    assert.notEqual(bad.exitCode, 0);
    assert.match(`${bad.failure} ${bad.stderr}`, /NBC_REPRODUCIBLE=yes: expected 1 \(sums of Float64 or Float32 by allreduce and reduce give the same bits on any rank count and algorithm\) or 0/);
  });
});
