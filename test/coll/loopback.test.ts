import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mulberry32 } from '../../src/bench/prng.ts';
import { LoopbackWorld } from '../../src/coll/loopback.ts';
import { NbcArgError, NbcCommError, NbcCountError, NbcInternalError } from '../../src/errors.ts';
import { Op } from '../../src/ops/op.ts';
import { LoopbackPort, type LoopbackOptions } from '../../src/sched/loopback.ts';
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../../src/sched/schedule.ts';

const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const bufs = (send: Uint8Array, recv: Uint8Array, tmp = new Uint8Array(0)) => ({ send, recv, tmp });

/** Every way the port may deliver: rendezvous or eager, completions in order or shuffled. */
const MODES: Array<[string, LoopbackOptions]> = [
  ['by rendezvous', {}],
  ['eagerly', { eagerBytes: Infinity }],
  ['by rendezvous, shuffled', { random: mulberry32(7) }],
  ['eagerly, shuffled', { eagerBytes: Infinity, random: mulberry32(9) }],
];

/** Starts `scheds[r]` as rank r on `bufsOf(r)`, in the rank order given, and verifies. */
function runAll(port: LoopbackPort, scheds: Schedule[], bufsOf: (r: number) => ReturnType<typeof bufs>, order = scheds.map((_, r) => r), tag = 0): void {
  for (const r of order) port.start(scheds[r]!, r, 1, tag, bufsOf(r));
  port.verify();
}

test('the loopback port pairs messages between two ranks with one tag in the order they were posted, whoever posts first, eagerly or by rendezvous', () => {
  const sender = new ScheduleBuilder('two sends');
  sender.send(1, { buf: SEND, offset: 0, bytes: 2 });
  sender.send(1, { buf: SEND, offset: 2, bytes: 2 });
  const receiver = new ScheduleBuilder('two receives');
  receiver.recv(0, { buf: RECV, offset: 0, bytes: 2 });
  receiver.recv(0, { buf: RECV, offset: 2, bytes: 2 });
  for (const [mode, opts] of MODES) {
    for (const order of [[0, 1], [1, 0]]) {
      const recv = new Uint8Array(4);
      runAll(new LoopbackPort(2, opts), [sender.build(), receiver.build()], (r) => (r === 0 ? bufs(bytes(1, 2, 3, 4), new Uint8Array(0)) : bufs(new Uint8Array(0), recv)), order);
      assert.deepEqual(Array.from(recv), [1, 2, 3, 4], `${mode}, rank ${order[0]} first`);
    }
  }
});

test('the loopback port matches by sub-tag and by sequence number, not by arrival: instances in flight together never cross', () => {
  // Rank 0 sends sub-tag 1 first; rank 1 receives sub-tag 0 first.
  const sender = new ScheduleBuilder('sub-tags');
  sender.send(1, { buf: SEND, offset: 0, bytes: 1 }, undefined, 1);
  sender.send(1, { buf: SEND, offset: 1, bytes: 1 }, undefined, 0);
  const receiver = new ScheduleBuilder('sub-tags');
  receiver.recv(0, { buf: RECV, offset: 0, bytes: 1 }, undefined, 0);
  receiver.recv(0, { buf: RECV, offset: 1, bytes: 1 }, undefined, 1);
  for (const [mode, opts] of MODES) {
    const port = new LoopbackPort(2, opts);
    // Two instances (tags 0 and 16), started in opposite orders on the two ranks.
    const recvs = [new Uint8Array(2), new Uint8Array(2)];
    port.start(sender.build(), 0, 1, 0, bufs(bytes(10, 11), new Uint8Array(0)));
    port.start(sender.build(), 0, 1, 16, bufs(bytes(20, 21), new Uint8Array(0)));
    port.start(receiver.build(), 1, 1, 16, bufs(new Uint8Array(0), recvs[1]!));
    port.start(receiver.build(), 1, 1, 0, bufs(new Uint8Array(0), recvs[0]!));
    port.verify();
    assert.deepEqual(recvs.map((r) => Array.from(r)), [[11, 10], [21, 20]], mode);
  }
});

test('the loopback port reports a deadlock naming what each stuck rank waits for', () => {
  const b = new ScheduleBuilder('recv first');
  b.recv(1, { buf: RECV, offset: 0, bytes: 4 });
  b.round();
  b.send(1, { buf: SEND, offset: 0, bytes: 4 });
  const port = new LoopbackPort(2);
  port.start(b.build(), 0, 1, 0, bufs(new Uint8Array(4), new Uint8Array(4)));
  const c = new ScheduleBuilder('recv first');
  c.recv(0, { buf: RECV, offset: 0, bytes: 4 });
  c.round();
  c.send(0, { buf: SEND, offset: 0, bytes: 4 });
  port.start(c.build(), 1, 1, 0, bufs(new Uint8Array(4), new Uint8Array(4)));
  assert.throws(() => port.verify(), (e: Error) => e instanceof NbcInternalError &&
    /rank 0 recv first never finished: 2 actions left, in flight: rank 0 recv first #0 recv RECV\[0:\+4\] <- rank 1/.test(e.message) &&
    /rank 1 recv first never finished/.test(e.message));
});

test('the loopback port reports a message that does not fill its receive exactly, and one nobody receives', () => {
  const s = new ScheduleBuilder('sends');
  s.send(1, { buf: SEND, offset: 0, bytes: 4 });
  s.send(1, { buf: SEND, offset: 0, bytes: 2 }, undefined, 3);
  const r = new ScheduleBuilder('receives');
  r.recv(0, { buf: RECV, offset: 0, bytes: 8 });
  const port = new LoopbackPort(2, { eagerBytes: Infinity });
  assert.throws(() => runAll(port, [s.build(), r.build()], () => bufs(new Uint8Array(4), new Uint8Array(8))), (e: Error) =>
    /rank 1 receives #0 recv RECV\[0:\+8\] <- rank 0 \(tag 0\) matched rank 0 sends #0 send SEND\[0:\+4\] -> rank 1 \(tag 0\): 4 B into a receive of 8 B/.test(e.message) &&
    /message ctx 1 0->1 tag 3 from rank 0 sends #1 .* was never received/.test(e.message));
});

test('the loopback port reports a region written while a rendezvous send from it is in flight (not an eager one, already copied), and one read while a receive into it is', () => {
  // A DAG whose copy into RECV does not wait for the send out of RECV.
  const racy = new ScheduleBuilder('racy');
  racy.send(1, { buf: RECV, offset: 0, bytes: 8 }, []);
  racy.copy({ buf: SEND, offset: 0, bytes: 8 }, { buf: RECV, offset: 0 }, []);
  const recv = new ScheduleBuilder('recv');
  recv.recv(0, { buf: RECV, offset: 0, bytes: 8 });
  const sched = [racy.build(), recv.build()];
  const mem = () => bufs(new Uint8Array(8), new Uint8Array(8));
  assert.throws(() => runAll(new LoopbackPort(2), sched, mem),
    /rank 0 racy #1 copy SEND\[0:\+8\] -> RECV\[0:\+8\] writes RECV\[0:\+8\] while rank 0 racy #0 send RECV\[0:\+8\] -> rank 1 \(tag 0\) is in flight/);
  runAll(new LoopbackPort(2, { eagerBytes: 8 }), sched, mem);
  // IN_PLACE: SEND and RECV are one memory, so a reduction reading SEND races a receive into RECV.
  const early = new ScheduleBuilder('early');
  early.recv(1, { buf: RECV, offset: 8, bytes: 8 }, []);
  early.reduce(0, 8, { buf: SEND, offset: 12, bytes: 8 }, { buf: TMP, offset: 0 }, []);
  const send = new ScheduleBuilder('send');
  send.send(0, { buf: SEND, offset: 0, bytes: 8 });
  const shared = new Uint8Array(24);
  assert.throws(() => runAll(new LoopbackPort(2, { eagerBytes: Infinity }), [early.build(), send.build()],
    (r) => (r === 0 ? bufs(shared, shared, new Uint8Array(8)) : bufs(new Uint8Array(8), new Uint8Array(0))), [0, 1]),
  /rank 0 early #1 reduce SEND\[12:\+8\] into TMP\[0:\+8\] reads SEND\[12:\+8\] while rank 0 early #0 recv RECV\[8:\+8\] <- rank 1 \(tag 0\) is in flight/);
});

test('the loopback port reports a peer out of range and a schedule addressing more than its buffers', () => {
  const b = new ScheduleBuilder('far');
  b.send(5, { buf: SEND, offset: 0, bytes: 0 });
  assert.throws(() => runAll(new LoopbackPort(2), [b.build()], () => bufs(new Uint8Array(0), new Uint8Array(0))), /#0 send SEND\[0:\+0\] -> rank 5 \(tag 0\): peer out of range 0..1/);
  const c = new ScheduleBuilder('big');
  c.copy({ buf: SEND, offset: 0, bytes: 8 }, { buf: RECV, offset: 0 });
  assert.throws(() => new LoopbackPort(1).start(c.build(), 0, 1, 0, bufs(new Uint8Array(8), new Uint8Array(4))), /addresses 8\/8\/0 bytes of send\/recv\/tmp, which have 8\/4\/0/);
});

test('a loopback world plans calls as a communicator does: the same typed errors, no engine compositions, neighbour collectives only with a neighbourhood', () => {
  const w = new LoopbackWorld(3);
  assert.throws(() => w.run((c) => c.allreduce(new Float64Array(2), new Float64Array(3), 'sum')), NbcCountError);
  assert.throws(() => w.run((c) => c.allreduce(new Float64Array(2), new Float64Array(2), 'sum', { algorithm: 'nope' })), NbcArgError);
  assert.throws(() => w.run((c) => c.allreduce(new Float64Array(2), new Float64Array(2), 'sum', { algorithm: 'two-level', executor: 'offload' })),
    (e: Error) => e instanceof NbcArgError && /the node engines compose it/.test(e.message));
  assert.throws(() => new LoopbackWorld(2).run((c) => c.neighborAllgather(new Float64Array(1), new Float64Array(2))), NbcCommError);
});

test('a loopback world runs collectives started back to back on every rank, each with its own sequence number, and reports a failed op', () => {
  for (const [mode, opts] of MODES) {
    const p = 5;
    const w = new LoopbackWorld(p, opts);
    const sums = Array.from({ length: p }, () => new Float64Array(3));
    const bc = Array.from({ length: p }, (_, r) => Int32Array.of(r === 2 ? 42 : 0, r === 2 ? 43 : 0));
    const a2a = Array.from({ length: p }, () => new Int16Array(p));
    w.run((c) => {
      c.allreduce(Float64Array.of(c.rank, 1, -c.rank), sums[c.rank]!, 'sum', { algorithm: 'ring' });
      c.bcast(bc[c.rank]!, 2, { algorithm: 'scatter-allgather' });
      c.alltoall(Int16Array.from({ length: p }, (_, j) => c.rank * 10 + j), a2a[c.rank]!, { algorithm: 'pairwise' });
    });
    for (let r = 0; r < p; r++) {
      assert.deepEqual(Array.from(sums[r]!), [10, 5, -10], `${mode}: rank ${r}'s allreduce`);
      assert.deepEqual(Array.from(bc[r]!), [42, 43], `${mode}: rank ${r}'s bcast`);
      assert.deepEqual(Array.from(a2a[r]!), Array.from({ length: p }, (_, i) => i * 10 + r), `${mode}: rank ${r}'s alltoall`);
    }
  }
  const failing = Op.create(() => {
    throw new Error('op failed on purpose');
  }, { commutative: true, name: 'failing' });
  assert.throws(() => new LoopbackWorld(2).run((c) => c.allreduce(new Float64Array(1), new Float64Array(1), failing)),
    /rank [01] allreduce\/recursive-doubling failed: op failed on purpose/);
});
