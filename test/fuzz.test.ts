/**
 * In-process fuzzing of every parser that reads bytes from outside a process (test/fuzz/targets.ts
 * says what each one is checked for). FUZZ_RUNS sets the runs per target (default 500: the whole
 * file in well under 40 s on two cores), FUZZ_SEED the seed (default: random, printed, and
 * printed again by fast-check with the counterexample's path when a property fails, so
 * `FUZZ_SEED=<seed> node --import tsx --test test/fuzz.test.ts` replays it).
 * The long runs are `npm run fuzz` (docs/reliability.md, "Fuzzing").
 */
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { test } from 'node:test';
import fc from 'fast-check';
import { Daemon } from '../src/agg/daemon.ts';
import { FrameType } from '../src/agg/wire.ts';
import { NbcArgError, NbcError } from '../src/errors.ts';
import { RejectLog } from '../src/net/reject-log.ts';
import { DType } from '../src/ops/dtype.ts';
import { decodeControlBody, parseAbort } from '../src/runtime/rendezvous.ts';
import { DONE_ERROR } from '../src/sched/offload.ts';
import { RECV, ScheduleBuilder, SEND, TMP } from '../src/sched/schedule.ts';
import { decodeSchedule, encodeSchedule } from '../src/sched/wire.ts';
import { KIND_COMM, KIND_POST, KIND_SCHED } from '../src/shm/layout.ts';
import { offloadNode, TARGETS } from './fuzz/targets.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 500);
const seed = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 0x7fff_ffff);
console.log(`fuzz: ${runs} runs per target, FUZZ_SEED=${seed}`);

for (const t of TARGETS) {
  test(`fuzz: ${t.name}`, { timeout: 60_000 }, async () => {
    await fc.assert(t.property() as fc.IAsyncProperty<never>, { numRuns: runs, seed });
  });
}

// ---------------------------------------------------------------------------------------------
// Regressions: each bug the fuzzers found, as the scenario that found it.

const schedWords = (): Int32Array => {
  const b = new ScheduleBuilder('regression');
  b.send(1, { buf: SEND, offset: 0, bytes: 8 });
  b.recv(1, { buf: RECV, offset: 0, bytes: 8 }, [0]);
  b.reduce(0, DType.Float64, { buf: RECV, offset: 0, bytes: 8 }, { buf: TMP, offset: 0 }, [1]);
  return encodeSchedule(b.build());
};
const argError = (re: RegExp) => (err: unknown): boolean => err instanceof NbcArgError && err.code === 'NBC_ERR_ARG' && re.test(err.message);

test('fuzz: a schedule record with a negative action count is refused', () => {
  const w = schedWords();
  w[0] = -1;
  assert.throws(() => decodeSchedule(w), argError(/action count -1 is negative/));
});

test('fuzz: a schedule whose action depends on a later one (a cycle: a run that never finishes) is refused', () => {
  const w = schedWords();
  const s = decodeSchedule(w);
  assert.ok(s.isDag);
  // deps are the last words before the name: make action 1 depend on action 2
  const depsAt = w.length - s.algorithm.length - s.deps!.length;
  const i = s.depStart![1]!;
  w[depsAt + i] = 2;
  assert.throws(() => decodeSchedule(w), argError(/action 1 depends on action 2; expected an earlier action/));
});

test('fuzz: a schedule whose kind word is 257 is refused, not narrowed to a send', () => {
  const w = schedWords();
  w[6 + 2] = 257; // rounds are [0, 3]: the kind array starts after them
  assert.throws(() => decodeSchedule(w), argError(/action 0 has kind 257/));
});

test('fuzz: a schedule with a 200000-character name is refused, not a stack overflow', () => {
  const w = schedWords();
  const big = new Int32Array(w.length - 'regression'.length + 200_000).fill(65);
  big.set(w.subarray(0, w.length - 'regression'.length));
  big[5] = 200_000;
  assert.throws(() => decodeSchedule(big), argError(/algorithm name length 200000/));
});

test('fuzz: an offloaded post whose schedule reduces past its recv region completes with DONE_ERROR and leaves the rest of the arena untouched', () => {
  const { engine, rank, shared, fatal, logs } = offloadNode();
  const b = new ScheduleBuilder('overrun');
  b.reduce(0, DType.Float64, { buf: SEND, offset: 0, bytes: 64 }, { buf: RECV, offset: 0 });
  const slice = new Uint8Array(shared.slices[0]!);
  slice.fill(0x5a);
  rank.toEngine(KIND_COMM, 1, 0, 0, 0, 0, 0, 0, Int32Array.of(0, 1));
  rank.toEngine(KIND_SCHED, 1, 0, 0, 1, 0, 0, 0, encodeSchedule(b.build()));
  // send: 64 bytes at 0; recv: only 8 bytes at 1024; the word at 4096
  rank.toEngine(KIND_POST, 1, 0, 5, 1, 0, 0, 4096, Int32Array.of(0, 0, 64, 0, 1024, 8, 0, 2048, 0));
  engine.poll();
  assert.deepEqual(fatal, []);
  assert.equal(new Int32Array(shared.slices[0]!)[4096 >> 2], DONE_ERROR);
  assert.ok(slice.subarray(1024, 1024 + 64).every((x) => x === 0x5a), 'nothing written past (or in) the 8-byte recv region');
  assert.equal(logs.length, 1);
  assert.match(logs[0]!, /refused an offload record of rank 0: schedule overrun addresses 64 bytes of its recv buffer; the post gave 8/);
  engine.stop();
});

test('fuzz: a KIND_COMM record naming world rank 99 is refused, and posts on it complete with DONE_ERROR', () => {
  const { engine, rank, shared, fatal, logs } = offloadNode();
  rank.toEngine(KIND_COMM, 1, 0, 0, 0, 0, 0, 0, Int32Array.of(0, 99));
  rank.toEngine(KIND_SCHED, 1, 0, 0, 1, 0, 0, 0, schedWords());
  rank.toEngine(KIND_POST, 1, 0, 5, 1, 0, 0, 4096, Int32Array.of(0, 0, 8, 0, 64, 8, 0, 128, 8));
  engine.poll();
  assert.deepEqual(fatal, []);
  assert.equal(new Int32Array(shared.slices[0]!)[4096 >> 2], DONE_ERROR);
  assert.equal(logs.length, 2, logs.join('\n'));
  assert.match(logs[0]!, /member 1 is world rank 99; expected 0\.\.3/);
  engine.stop();
});

test('fuzz: an offload post whose completion word lies outside the rank\'s slice fails the node with a clear error, not a TypeError', () => {
  const { engine, rank, fatal } = offloadNode();
  rank.toEngine(KIND_POST, 1, 0, 5, 1, 0, 3, 0, Int32Array.of(0, 0, 8, 0, 64, 8, 0, 128, 8));
  (engine as unknown as { guard(fn: () => void): void }).guard(() => engine.poll());
  assert.equal(fatal.length, 1);
  assert.ok(fatal[0] instanceof NbcError && fatal[0].code === 'NBC_ERR_INTERNAL');
  assert.match(fatal[0].message, /completion word \(slice 3, offset 0\) is not in its own arena slice/);
});

test('fuzz: a rendezvous body that is not JSON is NbcArgError, not a SyntaxError', () => {
  assert.throws(() => decodeControlBody(1, Buffer.from('{"nodeId":')), argError(/control message of type 1: its 10-byte body is not JSON/));
});

test('fuzz: an ABORT with exit code 0, 256 or 1e300 is refused (0 and 256 read as success, 1e300 made process.exitCode throw)', () => {
  for (const exitCode of [0, 256, 1e300, -1, 1.5]) {
    assert.throws(() => parseAbort({ reason: 'x', exitCode }, 0), argError(/exitCode in 1\.\.255/), String(exitCode));
  }
  assert.deepEqual(parseAbort({ reason: 'x', exitCode: 255, origin: 2 }, 0), { reason: 'x', exitCode: 255, origin: 2 });
});

test('fuzz: a daemon\'s welcome whose jobs list holds null is refused with a deliberate error, not a TypeError', () => {
  const d = new Daemon({
    id: 0, radix: 2, levels: 2, payloadPerSlot: 64, manager: { host: '127.0.0.1', port: 9 }, secret: Buffer.alloc(32, 1),
    listenHost: '127.0.0.1', orphanSeconds: 30, log: () => {},
  }) as unknown as { onManagerFrame(type: number, body: Buffer): void };
  assert.throws(() => d.onManagerFrame(FrameType.Ctrl, Buffer.from('{"t":"welcome","jobs":[null]}')),
    (err: unknown) => err instanceof Error && err.constructor === Error && /job entry null is not an object/.test(err.message));
});

test('fuzz: a flood of rejections is logged one line each for the first 20 of a window, then one summary line per window naming the listener, the count and the reasons', () => {
  const lines: string[] = [];
  const r = new RejectLog((l) => lines.push(l), 'nbc: node 3: ');
  r.listener = '127.0.0.1:4000';
  for (let i = 0; i < 25; i++) r.reject(`127.0.0.1:${5000 + i}`, i % 2 === 0 ? 'bad HMAC' : `short handshake (connection closed after ${i} of 72 bytes)`);
  assert.equal(lines.length, 20);
  assert.equal(lines[0], 'nbc: node 3: rejected connection from 127.0.0.1:5000: bad HMAC');
  r.close();
  assert.equal(lines.length, 21);
  assert.match(lines[20]!, /^nbc: node 3: 5 more connections to 127\.0\.0\.1:4000 rejected in the last \d+\.\d s \(reasons: (bad HMAC x3, short handshake \(connection closed after N of N bytes\) x2)\)$/);
  assert.equal(r.total, 25);
  r.close();
  assert.equal(lines.length, 21, 'nothing more to summarise');
});

test('fuzz: a two-level offload post on a communicator with no member on this node completes with DONE_ERROR instead of a TypeError in the engine', () => {
  const { engine, rank, shared, fatal, logs } = offloadNode();
  rank.toEngine(KIND_COMM, 1, 0, 0, 0, 0, 0, 0, Int32Array.of(2, 3)); // world ranks 2 and 3 live on node 1
  rank.toEngine(KIND_POST, 1, 0, 5, 0, 0, 0, 4096, Int32Array.of(0, 0, 8, 0, 64, 8, 0, 0, 0, 0, DType.Float64, 8, 1, 0));
  (engine as unknown as { guard(fn: () => void): void }).guard(() => engine.poll());
  assert.deepEqual(fatal, []);
  assert.equal(new Int32Array(shared.slices[0]!)[4096 >> 2], DONE_ERROR);
  assert.match(logs.join('\n'), /rank 0 of communicator 1 is world rank 2, which is not on node 0/);
  engine.stop();
});
