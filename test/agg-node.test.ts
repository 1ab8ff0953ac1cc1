/**
 * The node's side of the fabric (runtime/agg-node.ts) against a fake fabric in this process:
 * the collective decision to use or refuse the fabric, calls held in order while a join is
 * pending, and a revoked group failing every later call on its communicator.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AggNode, type FabricClient, type FabricGroup } from '../src/runtime/agg-node.ts';
import { DONE_FABRIC, DONE_PEER_FAILED, type AggExchange } from '../src/sched/offload.ts';
import type { NodeLayout } from '../src/sched/two-level.ts';

/** A fake group: records every reduce and completes it when told. */
class FakeGroup implements FabricGroup {
  failed: Error | null = null;
  readonly ans = [0];
  readonly calls: Array<{ data: Uint8Array; out: Uint8Array | null; op: number; dtype: number; root: number; done: (err: Error | null) => void }> = [];
  left = false;
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  reduce(data: Uint8Array, out: Uint8Array | null, op: number, dtype: number, root: number, done: (err: Error | null) => void): void {
    this.calls.push({ data, out, op, dtype, root, done });
    const ready = this.waiters.filter((w) => this.calls.length >= w.n);
    this.waiters = this.waiters.filter((w) => this.calls.length < w.n);
    for (const w of ready) w.resolve();
  }
  /** Resolves once the node has made `n` reduce calls on this group. */
  called(n: number): Promise<void> {
    return this.calls.length >= n ? Promise.resolve() : new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
  leave(): void {
    this.left = true;
  }
}

class FakeClient implements FabricClient {
  readonly joins: Array<{ key: string; index: number; count: number; answer: (a: FabricGroup | { refused: string }) => void }> = [];
  closed = false;
  join(key: string, index: number, count: number): Promise<FabricGroup | { refused: string }> {
    return new Promise((answer) => this.joins.push({ key, index, count, answer }));
  }
  close(): void {
    this.closed = true;
  }
}

const layout: NodeLayout = { reps: Int32Array.of(0, 2, 4), members: [[0, 1], [2, 3], [4, 5]], me: 1, nodeOf: Int32Array.of(0, 0, 1, 1, 2, 2) };

function allreduce(value: number): AggExchange {
  return { coll: 'allreduce', rootNode: 0, op: 0, dtype: 8, send: new Uint8Array(Float64Array.of(value).buffer), recv: new Uint8Array(8) };
}

/** Runs one call through the node; resolves with its completion code or 'fallback'. */
function call(node: AggNode, key: string, x: AggExchange): { result: Promise<number | 'fallback'> } {
  let settle!: (v: number | 'fallback') => void;
  const result = new Promise<number | 'fallback'>((r) => { settle = r; });
  node.aggregate(key, layout, x, () => settle('fallback'), (v) => settle(v));
  return { result };
}

test('calls made while the join is pending wait for it and reach the group in call order', async () => {
  const client = new FakeClient();
  const node = new AggNode(client, '', () => {});
  const a = call(node, '7:0', allreduce(1));
  const b = call(node, '7:0', allreduce(2));
  assert.equal(client.joins.length, 1, 'one join per communicator');
  assert.deepEqual({ key: client.joins[0]!.key, index: client.joins[0]!.index, count: client.joins[0]!.count }, { key: '7:0', index: 1, count: 3 });
  const g = new FakeGroup();
  client.joins[0]!.answer(g);
  await g.called(2);
  assert.deepEqual(g.calls.map((c) => new Float64Array(c.data.buffer)[0]), [1, 2]);
  assert.deepEqual(g.calls.map((c) => c.root), [-1, -1]);
  g.calls[0]!.done(null);
  g.calls[1]!.done(null);
  assert.equal(await a.result, DONE_FABRIC);
  assert.equal(await b.result, DONE_FABRIC);
  assert.equal(node.stats.aggregated, 2);
});

test('a refused communicator falls back to the engines for every call, logging the reason once', async () => {
  const client = new FakeClient();
  const lines: string[] = [];
  const node = new AggNode(client, '', (l) => lines.push(l));
  const a = call(node, '3:0', allreduce(1));
  client.joins[0]!.answer({ refused: 'no free slots at AN 2' });
  assert.equal(await a.result, 'fallback');
  assert.equal(await call(node, '3:0', allreduce(2)).result, 'fallback');
  assert.equal(client.joins.length, 1);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /communicator 3:0 uses host algorithms.*no free slots at AN 2/);
});

test('without a fabric client every communicator falls back, saying why', async () => {
  const lines: string[] = [];
  const node = new AggNode(null, 'the manager at 127.0.0.1:9 refused the connection', (l) => lines.push(l));
  assert.equal(await call(node, '5:0', allreduce(1)).result, 'fallback');
  assert.match(lines[0]!, /refused the connection/);
});

test('a reduce asks for the result only on the root node; a barrier is an empty reduction', async () => {
  const client = new FakeClient();
  const node = new AggNode(client, '', () => {});
  const g = new FakeGroup();
  const r1 = call(node, '9:0', { ...allreduce(1), coll: 'reduce', rootNode: 1 });
  client.joins[0]!.answer(g);
  await g.called(1);
  const r2 = call(node, '9:0', { ...allreduce(1), coll: 'reduce', rootNode: 2 });
  const r3 = call(node, '9:0', { coll: 'barrier', rootNode: 0, op: 0, dtype: 0, send: new Uint8Array(0), recv: new Uint8Array(0) });
  assert.equal(g.calls[0]!.root, 1);
  assert.notEqual(g.calls[0]!.out, null, 'this node (1) is the root: it gets the result');
  assert.equal(g.calls[1]!.root, 2);
  assert.equal(g.calls[1]!.out, null);
  assert.equal(g.calls[2]!.data.byteLength, 0);
  assert.equal(g.calls[2]!.root, -1);
  for (const c of g.calls) c.done(null);
  assert.deepEqual(await Promise.all([r1.result, r2.result, r3.result]), [DONE_FABRIC, DONE_FABRIC, DONE_FABRIC]);
});

test('a revoked group fails its pending call and every later call on the communicator with PEER_FAILED', async () => {
  const client = new FakeClient();
  const lines: string[] = [];
  const node = new AggNode(client, '', (l) => lines.push(l));
  const g = new FakeGroup();
  const a = call(node, '4:0', allreduce(1));
  client.joins[0]!.answer(g);
  await g.called(1);
  g.failed = new Error('AN 3 died (connection lost)');
  g.calls[0]!.done(g.failed);
  assert.equal(await a.result, DONE_PEER_FAILED);
  assert.equal(await call(node, '4:0', allreduce(2)).result, DONE_PEER_FAILED);
  assert.equal(g.calls.length, 1, 'nothing more is sent into the dead group');
  assert.equal(client.joins.length, 1, 'no silent rejoin: peers may still be sending into the old group');
  assert.equal(lines.filter((l) => /lost its fabric group: AN 3 died/.test(l)).length, 1);
  // another communicator is not affected
  const b = call(node, '8:0', allreduce(3));
  assert.equal(client.joins.length, 2);
  const g2 = new FakeGroup();
  client.joins[1]!.answer(g2);
  await g2.called(1);
  g2.calls[0]!.done(null);
  assert.equal(await b.result, DONE_FABRIC);
  node.close();
  assert.ok(g.left && g2.left && client.closed);
});
