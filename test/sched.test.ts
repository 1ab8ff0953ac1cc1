import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as allreduce from '../src/coll/allreduce.ts';
import * as alltoall from '../src/coll/alltoall.ts';
import * as barrier from '../src/coll/barrier.ts';
import * as hier from '../src/coll/hier.ts';
import { shape, topologyOf, type CollShape } from '../src/coll/shape.ts';
import { A_RECV, A_REDUCE, A_SEND, RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../src/sched/schedule.ts';
import { Interpreter, Run, type Port } from '../src/sched/interpreter.ts';
import { TL_ALLGATHER, TL_ALLTOALL, nodeLayout, planTwoLevel } from '../src/sched/two-level.ts';
import { decodePost, encodePost, POST_TWO_LEVEL_WORDS, POST_WORDS } from '../src/sched/offload-records.ts';
import { ALGORITHMS } from '../src/coll/select.ts';
import { splitmix32 } from '../src/sim/engine.ts';
import { buildProgram, callSchedules, SIM_COLLS, type CallSpec, type SimExecutor } from '../src/sim/program.ts';
import { DEFAULT_SIM_PARAMS } from '../src/sim/params.ts';
import { Release } from '../src/sim/release.ts';
import { EXECUTORS, executorStats, executorStatsCopy } from '../src/sched/executors.ts';
import type { Transport } from '../src/p2p/transport.ts';

test('a round-mode schedule stores actions compactly and dumps them readably', () => {
  const b = new ScheduleBuilder('demo');
  const tmp = b.tmpAlloc(16);
  b.copy({ buf: SEND, offset: 0, bytes: 16 }, { buf: RECV, offset: 0 });
  b.round();
  b.send(1, { buf: RECV, offset: 0, bytes: 16 });
  b.recv(1, { buf: TMP, offset: tmp, bytes: 16 });
  b.round();
  b.reduce(0, 8, { buf: TMP, offset: tmp, bytes: 16 }, { buf: RECV, offset: 0 });
  const s = b.build();
  assert.equal(s.nActions, 4);
  assert.equal(s.nRounds, 3);
  assert.deepEqual(Array.from(s.rounds), [0, 1, 3, 4]);
  assert.equal(s.isDag, false);
  assert.equal(s.tmpBytes, 16);
  assert.equal(s.toString((op) => (op === 0 ? 'sum' : String(op))), [
    'schedule demo: 4 actions, 3 rounds, tmp 16 B',
    '  round 0',
    '    #0 copy SEND[0:+16] -> RECV[0:+16]',
    '  round 1',
    '    #1 send RECV[0:+16] -> rank 1',
    '    #2 recv TMP[0:+16] <- rank 1',
    '  round 2',
    '    #3 reduce sum/8 TMP[0:+16] into RECV[0:+16]',
  ].join('\n'));
  assert.deepEqual(Array.from(s.extents()), [16, 16, 16], 'bytes of SEND, RECV and TMP the schedule addresses');
  const c = new ScheduleBuilder('extents');
  c.send(1, { buf: SEND, offset: 8, bytes: 24 });
  c.copy({ buf: TMP, offset: 40, bytes: 8 }, { buf: RECV, offset: 100 });
  assert.deepEqual(Array.from(c.build().extents()), [32, 108, 48]);
});

test('zero-byte local actions are dropped, zero-byte messages are kept (barriers need them)', () => {
  const b = new ScheduleBuilder('empty');
  assert.equal(b.copy({ buf: SEND, offset: 0, bytes: 0 }, { buf: RECV, offset: 0 }), -1);
  assert.equal(b.send(1, { buf: RECV, offset: 0, bytes: 0 }), 0);
  assert.equal(b.build().nActions, 1);
  const d = barrier.dissemination(shape({ rank: 0, size: 5, radix: 1 }));
  assert.equal(d.nRounds, 3, 'ceil(log2 5) rounds');
  assert.equal(d.nActions, 6);
});

test('the pipelined ring is a DAG whose sends wait only for the reduction that produced their block', () => {
  const s = allreduce.ring(shape({ rank: 1, size: 4, bytes: 4 * 8 * 3, esize: 8, dtype: 8, op: 0 }));
  assert.equal(s.isDag, true);
  // 1 copy + 3 steps x (send, recv, reduce) + 3 allgather steps x (send, recv)
  assert.equal(s.nActions, 1 + 9 + 6);
  const kinds = Array.from(s.kind);
  assert.equal(kinds.filter((k) => k === A_SEND).length, 6);
  assert.equal(kinds.filter((k) => k === A_RECV).length, 6);
  assert.equal(kinds.filter((k) => k === A_REDUCE).length, 3);
  // the send of reduce-scatter step 1 waits for the reduction of step 0, and (posting order)
  // for the send of step 0 to the same neighbour: nothing else
  const sendStep1 = 4;
  assert.equal(s.kind[sendStep1], A_SEND);
  const deps = Array.from(s.deps!.subarray(s.depStart![sendStep1]!, s.depStart![sendStep1 + 1]!));
  assert.deepEqual(deps.map((d) => s.kind[d]), [A_REDUCE, A_SEND]);
  assert.match(s.toString(), /#4 send .* after #3/);
});

/** Whether action j waits, directly or not, for action i in a DAG schedule. */
function waitsFor(s: Schedule, j: number, i: number): boolean {
  const seen = new Set<number>();
  const stack = [j];
  while (stack.length > 0) {
    const x = stack.pop()!;
    for (let d = s.depStart![x]!; d < s.depStart![x + 1]!; d++) {
      const y = s.deps![d]!;
      if (y === i) return true;
      if (!seen.has(y)) {
        seen.add(y);
        stack.push(y);
      }
    }
  }
  return false;
}

test('a DAG schedule posts the messages to or from one peer in the order it wrote them, empty blocks or not', () => {
  // Messages with one tag between two ranks match in posting order. The ring allreduce with
  // fewer elements than ranks skips the actions of empty blocks; a receive whose dependency
  // vanished at such a gap was once posted before an earlier one and took its message
  // (9 ranks, 8 elements: blocks 6 and 7 swapped on every rank).
  let checked = 0;
  for (let p = 2; p <= 16; p++) {
    for (const count of [0, 1, p - 1, p + 1, 2 * p + 3]) {
      for (let rank = 0; rank < p; rank++) {
        const s = allreduce.ring(shape({ rank, size: p, bytes: count * 8, esize: 8, dtype: 8, op: 0 }));
        if (!s.isDag) continue;
        const last = new Map<string, number>();
        for (let i = 0; i < s.nActions; i++) {
          if (s.kind[i] !== A_SEND && s.kind[i] !== A_RECV) continue;
          const key = `${s.kind[i]}/${s.peer[i]}/${s.sub[i]}`;
          const prev = last.get(key);
          if (prev !== undefined) assert.ok(waitsFor(s, i, prev), `p ${p}, ${count} elements, rank ${rank}: #${i} may be posted before #${prev}`);
          last.set(key, i);
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 1000, `${checked} messages checked`);
});

test('schedules are pure functions of the call shape', () => {
  const sh = shape({ rank: 2, size: 7, bytes: 7 * 64, esize: 8, dtype: 8, op: 0 });
  const before = JSON.stringify(sh);
  const other = shape({ rank: 3, size: 7, bytes: 7 * 64, esize: 8, dtype: 8, op: 0 });
  for (const build of [allreduce.recursiveDoubling, allreduce.rabenseifner, allreduce.ring, allreduce.knomialReduceBcast]) {
    // The same shape, even as another object built after other calls, gives the same schedule,
    // the shape is left as it was, and another rank's shape gives another schedule.
    const first = build(sh).toString();
    build(other);
    assert.equal(build({ ...sh }).toString(), first, build.name);
    assert.equal(JSON.stringify(sh), before, `${build.name} left the shape unchanged`);
    assert.notEqual(build(other).toString(), first, `${build.name}: rank 3's schedule is not rank 2's`);
  }
});

test('two-level alltoall and allgather pack one message per node pair and unpack every block to its rank', () => {
  // 7 ranks on 3 nodes, interleaved as a split communicator's would be: node of rank r = r % 3
  const P = 7;
  const nodeOfRank = Int32Array.from({ length: P }, (_, r) => r % 3);
  const worldRanks = Int32Array.from({ length: P }, (_, r) => r);
  const block = 3;
  const cell = (s: number, d: number, i: number): number => s * 100 + d * 10 + i;
  for (const kind of [TL_ALLTOALL, TL_ALLGATHER]) {
    const layouts = [0, 1, 2].map((node) => nodeLayout(worldRanks, nodeOfRank, node));
    const members = layouts.map((l) => l.members[l.me]!.map((rank) => ({
      rank,
      call: { kind, root: 0, op: 0, dtype: 0, esize: 1 },
      send: kind === TL_ALLTOALL
        ? Uint8Array.from({ length: P * block }, (_, k) => cell(rank, Math.floor(k / block), k % block))
        : Uint8Array.from({ length: block }, (_, i) => cell(rank, 0, i)),
      recv: new Uint8Array(P * block),
    })));
    const plans = layouts.map((l, k) => planTwoLevel(l, members[k]!));
    // the engines' exchange, done by hand from the shapes: node a's block for node b
    for (let a = 0; a < 3; a++) {
      const pa = plans[a]!;
      assert.ok(pa.ok && pa.inter !== null);
      const sa = pa.inter.shape;
      for (let b = 0; b < 3; b++) {
        const sb = plans[b]!.inter!.shape;
        if (kind === TL_ALLTOALL) {
          if (a === b) continue;
          assert.ok(sa.counts![b]! > 0, 'one message from every node to every other node');
          assert.equal(sa.counts![b], sb.rcounts![a]);
          plans[b]!.inter!.recv.set(pa.inter.send.subarray(sa.displs![b]!, sa.displs![b]! + sa.counts![b]!), sb.rdispls![a]!);
        } else {
          plans[b]!.inter!.recv.set(pa.inter.send, sb.displs![a]!);
        }
      }
    }
    plans.forEach((p) => p.finish());
    for (const ms of members) {
      for (const m of ms) {
        const want = Uint8Array.from({ length: P * block }, (_, k) =>
          kind === TL_ALLTOALL ? cell(Math.floor(k / block), m.rank, k % block) : cell(Math.floor(k / block), 0, k % block));
        assert.deepEqual(m.recv, want, `kind ${kind}, rank ${m.rank}`);
      }
    }
    // the engines' schedule sends one message to each other node
    if (kind === TL_ALLTOALL) {
      const s = plans[0]!.inter!.shape;
      const sched = alltoall.scatteredV(shape({ ...s }));
      assert.equal(Array.from(sched.kind).filter((k) => k === A_SEND).length, 2);
    }
  }
});

test('two-level plans refuse members that disagree, and still exchange what the other nodes expect', () => {
  const layout = nodeLayout(Int32Array.of(0, 1, 2, 3), Int32Array.of(0, 0, 1, 1), 0);
  const call = { kind: TL_ALLGATHER, root: 0, op: 0, dtype: 0, esize: 1 };
  const plan = planTwoLevel(layout, [
    { rank: 0, call, send: new Uint8Array(4), recv: new Uint8Array(16) },
    { rank: 1, call, send: new Uint8Array(5), recv: new Uint8Array(20) },
  ]);
  assert.equal(plan.ok, false);
  assert.deepEqual(Array.from(plan.inter!.shape.counts!), [8, 8]);
});

/** A port that records what the interpreter issues, completes sends and receives when told, and can fail one action. */
class RecordingPort implements Port<Run> {
  issued: number[] = [];
  pending: number[] = [];
  finishedWith: Error | null | undefined = undefined;
  constructor(private readonly failing = -1) {}
  send(_r: Run, i: number): boolean { return this.post(i); }
  recv(_r: Run, i: number): boolean { return this.post(i); }
  reduce(_r: Run, i: number): void { this.issued.push(i); if (i === this.failing) throw new Error(`action ${i} failed`); }
  copy(_r: Run, i: number): void { this.issued.push(i); }
  finished(_r: Run, error: Error | null): void { this.finishedWith = error; }
  private post(i: number): boolean {
    this.issued.push(i);
    this.pending.push(i);
    return false;
  }
}

test('the interpreter issues a round only when the previous one completed, and a DAG action once its dependencies did', () => {
  const rounds = allreduce.recursiveDoubling(shape({ rank: 0, size: 4, bytes: 8, esize: 8, dtype: 8 }));
  const port = new RecordingPort();
  const run = new Run(rounds);
  const interp = new Interpreter(port);
  interp.start(run);
  // round 0 is the copy (done at once); round 1 posts send + recv to rank 1 and waits
  assert.deepEqual(port.issued, [0, 1, 2]);
  interp.settle(run, port.pending.shift()!, null);
  assert.deepEqual(port.issued, [0, 1, 2], 'half a round completed: nothing new');
  interp.settle(run, port.pending.shift()!, null);
  assert.deepEqual(port.issued.slice(0, 6), [0, 1, 2, 3, 4, 5], 'the reduce of round 2 ran, round 3 posted');
  while (port.pending.length > 0) interp.settle(run, port.pending.shift()!, null);
  assert.equal(port.finishedWith, null);
  assert.equal(port.issued.length, rounds.nActions);

  const ring = allreduce.ring(shape({ rank: 1, size: 3, bytes: 24, esize: 8, dtype: 8 }));
  const edges = ring.dependents();
  for (let i = 0; i < ring.nActions; i++) {
    for (let d = ring.depStart![i]!; d < ring.depStart![i + 1]!; d++) {
      const from = ring.deps![d]!;
      assert.ok(edges.list.subarray(edges.start[from]!, edges.start[from + 1]!).includes(i), `#${i} is a dependent of #${from}`);
    }
    assert.equal(edges.count[i], ring.depStart![i + 1]! - ring.depStart![i]!);
  }
  const dag = new RecordingPort();
  const r2 = new Run(ring);
  const i2 = new Interpreter(dag);
  i2.start(r2);
  const done = new Set<number>();
  while (dag.pending.length > 0) {
    const i = dag.pending.shift()!;
    done.add(i);
    i2.settle(r2, i, null);
  }
  for (const i of dag.issued) {
    for (let d = ring.depStart![i]!; d < ring.depStart![i + 1]!; d++) {
      assert.ok(dag.issued.indexOf(ring.deps![d]!) < dag.issued.indexOf(i), `#${i} issued after its dependency #${ring.deps![d]}`);
    }
  }
  assert.equal(dag.issued.length, ring.nActions);
  assert.equal(dag.finishedWith, null);
});

test('a failed action completes the collective with its error, but the schedule goes on and still sends what peers wait for (check and continue)', () => {
  const s = allreduce.recursiveDoubling(shape({ rank: 0, size: 4, bytes: 8, esize: 8, dtype: 8 }));
  const firstReduce = Array.from(s.kind).indexOf(A_REDUCE);
  const port = new RecordingPort(firstReduce);
  const run = new Run(s);
  const interp = new Interpreter(port);
  interp.start(run);
  interp.settle(run, port.pending.shift()!, new Error('the receive failed'));
  while (port.pending.length > 0) interp.settle(run, port.pending.shift()!, null);
  assert.equal(port.issued.length, s.nActions, 'every action was still issued');
  const sends = port.issued.filter((i) => s.kind[i] === A_SEND).length;
  assert.equal(sends, Array.from(s.kind).filter((k) => k === A_SEND).length, 'every send went out');
  assert.equal(port.finishedWith?.message, 'the receive failed', 'the first error is the collective\'s');
});

test('splice() runs a schedule built for a subset of ranks: peers through the rank map, SEND/RECV moved, scratch after the outer, after everything before', () => {
  const b = new ScheduleBuilder('outer');
  const mine = b.tmpAlloc(64);
  b.copy({ buf: SEND, offset: 0, bytes: 8 }, { buf: TMP, offset: mine });
  // rank 2 of a 3-rank ring allreduce among communicator ranks [5, 1, 7], in place on TMP
  const sub = allreduce.ring(shape({ rank: 2, size: 3, bytes: 24, esize: 8, dtype: 8 }));
  b.splice(sub, [5, 1, 7], { buf: TMP, offset: mine }, { buf: TMP, offset: mine });
  b.copy({ buf: TMP, offset: mine, bytes: 8 }, { buf: RECV, offset: 0 });
  const s = b.build();
  assert.equal(s.nActions, sub.nActions + 2);
  const peers = new Set<number>();
  for (let i = 1; i <= sub.nActions; i++) {
    const k = s.kind[i]!;
    assert.equal(k, sub.kind[i - 1]);
    if (k === A_SEND || k === A_RECV) peers.add(s.peer[i]!);
    if (sub.bufA[i - 1] === TMP) assert.equal(s.offA[i], 64 + sub.offA[i - 1]!, 'its scratch comes after the outer scratch');
    else assert.equal(s.bufA[i], TMP, 'its SEND and RECV are moved to the outer TMP');
  }
  assert.deepEqual([...peers].sort(), [1, 5], 'rank 2 of the ring talks to its neighbours, ranks 1 and 0 of the map');
  assert.equal(s.tmpBytes, 64 + sub.tmpBytes);
  // the spliced roots wait for the copy before them, and the last copy for all of the splice
  const first = Array.from(s.deps!.subarray(s.depStart![1]!, s.depStart![2]!));
  assert.deepEqual(first, [0]);
  const last = s.nActions - 1;
  assert.equal(s.depStart![last + 1]! - s.depStart![last]!, sub.nActions);
});

test('hier alltoall on equal nodes hands its leaders an alltoall: Bruck sends log2(nodes) node-pair messages, scattered destinations one per other node', () => {
  const topo = topologyOf(8, (r) => r >> 1); // 4 nodes x 2 ranks
  const leaderSends = (build: (s: CollShape) => Schedule): number[] => {
    const s = hier.alltoall(shape({ rank: 0, size: 8, bytes: 16, esize: 8, topo, leader: { coll: 'alltoall', build, radix: 2 } }));
    const peers: number[] = [];
    for (let i = 0; i < s.nActions; i++) if (s.kind[i] === A_SEND && s.peer[i]! % 2 === 0 && s.peer[i] !== 0) peers.push(s.peer[i]!);
    return peers;
  };
  assert.deepEqual(leaderSends(alltoall.scattered).sort(), [2, 4, 6], 'one message to each other leader');
  assert.equal(leaderSends(alltoall.bruck).length, 2, 'Bruck: ceil(log2 4) messages');
});

test('an offload post record decodes to the regions and call it was encoded from, for a schedule and a two-level call', () => {
  const send = { slice: 1, offset: 64, bytes: 800 };
  const recv = { slice: 1, offset: 1024, bytes: 800 };
  const tmp = { slice: 1, offset: 4096, bytes: 128 };
  const sched = encodePost(send, recv, tmp, null);
  assert.equal(sched.length, POST_WORDS);
  // Behind a header, as the engine reads it from a ring record.
  const ring = new Int32Array(12 + sched.length);
  ring.set(sched, 12);
  assert.deepEqual(decodePost(ring, 12, false), { send, recv, tmp, call: null });
  const call = { op: 3, dtype: 9, esize: 8, kind: 2, root: 5 };
  const two = encodePost(send, recv, null, call);
  assert.equal(two.length, POST_TWO_LEVEL_WORDS);
  assert.deepEqual(decodePost(two, 0, true), { send, recv, tmp: { slice: 0, offset: 0, bytes: 0 }, call });
});

/** The simulator's release rule (sim/release.ts) on a program, recording what it issues for one proc at a time. */
class SimRelease extends Release {
  issued: number[] = [];
  pending: number[] = [];
  private locals: number[] = [];
  finished = false;
  private base = 0;
  /** Proc p starts; its reductions and copies complete at once, after what was issued with them. */
  startProc(p: number): void {
    this.issued = [];
    this.pending = [];
    this.finished = false;
    this.base = this.prog.procAct[p]!;
    this.begin(p);
    this.settleLocals();
  }
  /** Message action `local` (an index in proc p's schedule) completed. */
  settle(local: number): void {
    this.complete(this.base + local);
    this.settleLocals();
  }
  protected issue(i: number): void {
    const k = this.prog.kind[i]!;
    this.issued.push(i - this.base);
    if (k === A_SEND || k === A_RECV) this.pending.push(i - this.base);
    else this.locals.push(i);
  }
  protected finishProc(): void {
    this.finished = true;
  }
  private settleLocals(): void {
    for (let j = 0; j < this.locals.length; j++) this.complete(this.locals[j]!);
    this.locals.length = 0;
  }
}

/**
 * Which pending message completes next: the oldest, the newest, or a seeded draw. Both sides
 * draw from their own generator with one seed, so while their pending lists agree, so do
 * their choices.
 */
type Policy = 'oldest' | 'newest' | number;
const chooser = (policy: Policy): ((n: number) => number) => {
  if (policy === 'oldest') return () => 0;
  if (policy === 'newest') return (n) => n - 1;
  const next = splitmix32(policy);
  return (n) => Math.floor(next() * n);
};

test('the simulator issues every schedule selection can pick in the interpreter\'s order, whatever order its messages complete in', { timeout: 60_000 }, () => {
  const tried = new Set<string>();
  let procs = 0;
  const layouts = [[1, 1], [2, 1], [4, 2], [5, 1], [7, 3], [8, 4], [12, 4]] as const;
  for (const coll of SIM_COLLS) {
    const algs = ALGORITHMS[coll];
    const cases: { algorithm?: string; executor: SimExecutor }[] = [{ executor: 'host' }, { executor: 'offload' }, { executor: 'agg' }];
    for (const [name, a] of Object.entries(algs)) cases.push({ algorithm: name, executor: (a.executors?.[0] as SimExecutor | undefined) ?? 'host' });
    for (const { algorithm, executor } of cases) {
      for (const [ranks, ppn] of layouts) {
        for (const bytes of [8, 1000, 65536]) {
          const spec: CallSpec = { coll, ranks, ppn, bytes, algorithm, executor };
          let cs: ReturnType<typeof callSchedules>;
          try {
            cs = callSchedules(spec);
          } catch (e) {
            if ((e as { code?: string }).code === 'NBC_ERR_ARG') continue; // a call the library refuses
            throw e;
          }
          tried.add(`${coll}/${algorithm ?? 'auto'}`);
          const prog = buildProgram(spec, DEFAULT_SIM_PARAMS);
          for (const policy of ['oldest', 'newest', 7] as const) {
            const sim = new SimRelease(prog);
            for (let p = 0; p < cs.procs; p++) {
              const what = `${coll}/${cs.choice.name} on ${executor}, ${ranks} ranks x ${ppn}, ${bytes} B, proc ${p}, ${policy}`;
              const s = cs.schedule(p);
              const port = new RecordingPort();
              const run = new Run(s);
              const interp = new Interpreter(port);
              const pickI = chooser(policy);
              const pickS = chooser(policy);
              interp.start(run);
              sim.startProc(p);
              assert.deepEqual(sim.issued, port.issued, `${what}: at the start`);
              while (port.pending.length > 0) {
                const i = port.pending.splice(pickI(port.pending.length), 1)[0]!;
                const j = sim.pending.splice(pickS(sim.pending.length), 1)[0]!;
                assert.equal(j, i, `${what}: the same message completes`);
                interp.settle(run, i, null);
                sim.settle(j);
                assert.deepEqual(sim.issued, port.issued, `${what}: after #${i} completed`);
              }
              assert.equal(port.issued.length, s.nActions, what);
              assert.equal(port.finishedWith, null, what);
              assert.equal(sim.finished, true, what);
              procs++;
            }
          }
        }
      }
    }
  }
  for (const coll of SIM_COLLS) {
    for (const name of Object.keys(ALGORITHMS[coll])) assert.ok(tried.has(`${coll}/${name}`), `${coll}/${name} was compared`);
  }
  assert.ok(procs > 10_000, `${procs} schedules compared`);
});

test('every executor\'s counters come from its registry row: comm.stats().executors has one entry per row, copied, not live', () => {
  const t = {} as Transport; // the counters are keyed by the transport object alone
  const live = executorStats(t);
  assert.deepEqual(Object.keys(live), Object.keys(EXECUTORS));
  assert.deepEqual(live, { host: { calls: 0 }, offload: { calls: 0 }, agg: { calls: 0, onFabric: 0, amongEngines: 0 } });
  assert.equal(executorStats(t), live, 'one set of counters per transport');
  live.agg.calls++;
  live.agg.onFabric++;
  const copy = executorStatsCopy(t);
  assert.deepEqual(copy.agg, { calls: 1, onFabric: 1, amongEngines: 0 });
  live.host.calls++;
  assert.equal(copy.host.calls, 0, 'a copy does not go on counting');
  assert.notEqual(copy.agg, live.agg);
});
