/**
 * Selection for the `agg` executor (coll/select.ts): the fabric takes barrier, reduce and
 * allreduce across nodes when it reduces the call's op and type; everything else on `agg` runs
 * a host algorithm, and only `agg` may run the fabric's algorithm.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { select, type SelectInput } from '../src/coll/select.ts';
import { DEFAULT_CONFIG } from '../src/config.ts';
import { fabricReduces } from '../src/sched/agg-executor.ts';
import { OpCode } from '../src/ops/loops.ts';
import { DType } from '../src/ops/dtype.ts';

const across: SelectInput = { size: 16, bytes: 8, commutative: true, executor: 'agg', nodes: 16, ppn: 1, uniform: true, fabricFits: true };

test('on agg, barrier, reduce and allreduce across nodes go to the fabric when it reduces the op and type', () => {
  for (const coll of ['barrier', 'reduce', 'allreduce'] as const) {
    const c = select(coll, across, undefined, DEFAULT_CONFIG);
    assert.equal(c.name, 'agg', coll);
    assert.notEqual(c.composite, undefined, `${coll} is composed by the engines`);
  }
  // 2 KiB too: the fabric pipelines fragments, so no size limit applies
  assert.equal(select('allreduce', { ...across, bytes: 1 << 20 }, undefined, DEFAULT_CONFIG).name, 'agg');
});

test('on agg, an op or type the fabric does not reduce, one node, or another collective runs a host algorithm', () => {
  assert.equal(select('allreduce', { ...across, fabricFits: false }, undefined, DEFAULT_CONFIG).name, 'recursive-doubling');
  assert.equal(select('allreduce', { ...across, commutative: false }, undefined, DEFAULT_CONFIG).name, 'recursive-doubling');
  assert.equal(select('allreduce', { ...across, nodes: 1, ppn: 16 }, undefined, DEFAULT_CONFIG).composite, undefined);
  assert.equal(select('bcast', across, undefined, DEFAULT_CONFIG).name, 'binomial');
});

test('the fabric algorithm runs only on agg, and an explicit agg call with prod is refused with NBC_ERR_OP', () => {
  for (const executor of ['host', 'offload']) {
    assert.notEqual(select('allreduce', { ...across, executor }, undefined, DEFAULT_CONFIG).name, 'agg');
    assert.throws(() => select('allreduce', { ...across, executor }, 'agg', DEFAULT_CONFIG), { code: 'NBC_ERR_ARG' });
  }
  assert.throws(() => select('allreduce', { ...across, fabricFits: false }, 'agg', DEFAULT_CONFIG),
    (e: Error & { code?: string }) => e.code === 'NBC_ERR_OP' && /sum, min, max, minloc, maxloc/.test(e.message));
});

test('fabricReduces() takes every predefined op but prod on 32/64-bit integers and floats only', () => {
  for (const op of Object.values(OpCode)) {
    for (const dt of [DType.Int32, DType.Uint32, DType.Float32, DType.Float64, DType.BigInt64, DType.BigUint64]) {
      assert.equal(fabricReduces(op, dt), op !== OpCode.prod, `op ${op} dtype ${dt}`);
    }
    for (const dt of [DType.Int8, DType.Uint8, DType.Uint8Clamped, DType.Int16, DType.Uint16]) assert.equal(fabricReduces(op, dt), false);
  }
  assert.equal(fabricReduces(256, DType.Float64), false, 'user-defined ops run only in their thread');
});
