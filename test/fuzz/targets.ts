/**
 * In-process fuzz targets: one fast-check property per parser that reads bytes from outside a
 * process (or from another thread, for the offload records). Shared by test/fuzz.test.ts (a
 * short run in CI) and scripts/fuzz.ts (`npm run fuzz`, the long runs of docs/reliability.md).
 *
 * Every target states what the parser must do with any input: either accept it and hand out a
 * value that satisfies the format's invariants (checked here independently), or refuse it with
 * the typed error its contract names. Nothing else: no TypeError or RangeError from a field
 * read past the end, no hang, no allocation beyond the declared bound, no write outside the
 * regions a post names.
 */
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { createHmac, randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import fc from 'fast-check';
import { NbcArgError, NbcAuthError, NbcError } from '../../src/errors.ts';
import { AUTH_MAGIC, authenticateAsAcceptor, authenticateAsConnector, NbcHandshakeError, RESPONSE_BYTES } from '../../src/net/auth.ts';
import { encodeFrame, FrameDecoder, MAX_FRAME_BODY } from '../../src/net/frame.ts';
import { decodeControlBody, parseAbort, parseHello, parseTable } from '../../src/runtime/rendezvous.ts';
import { ALGORITHMS } from '../../src/coll/select.ts';
import { shape } from '../../src/coll/shape.ts';
import { decodeSchedule, encodeSchedule } from '../../src/sched/wire.ts';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, type Schedule } from '../../src/sched/schedule.ts';
import { Interpreter, Run, type Port } from '../../src/sched/interpreter.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { Transport } from '../../src/p2p/transport.ts';
import { Engine } from '../../src/runtime/engine.ts';
import { KIND_COMM, KIND_POST, KIND_SCHED } from '../../src/shm/layout.ts';
import { createNodeShared } from '../../src/shm/node-shared.ts';
import { DONE_ERROR } from '../../src/sched/offload.ts';
import { COMPLETION_BYTES } from '../../src/sched/offload-records.ts';
import {
  decodeCtrl, FRAG_HEADER_BYTES, FrameType, num, numArray, readFragHeader, str, writeFragHeader, type FragHeader,
} from '../../src/agg/wire.ts';
import { Daemon } from '../../src/agg/daemon.ts';
import { Manager } from '../../src/agg/manager.ts';

/** One fuzz target: a name for reports, what it checks, and its property. */
export interface FuzzTarget {
  name: string;
  checks: string;
  property: () => fc.IRawProperty<any, boolean>; // eslint-disable-line @typescript-eslint/no-explicit-any -- each target its own argument tuple
}

// ---------------------------------------------------------------------------------------------
// Mutations: the same byte-level edits for every format.

type Mutation =
  | { op: 'set'; at: number; value: number }
  | { op: 'flip'; at: number; bit: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'delete'; at: number; n: number }
  | { op: 'truncate'; at: number }
  | { op: 'duplicate'; at: number; n: number };

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ op: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ op: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), n: fc.integer({ min: 1, max: 16 }) }),
);

export const mutationsArb = fc.array(mutationArb, { minLength: 1, maxLength: 4 });

/** Applies byte edits (positions taken modulo the current length). */
export function mutate(input: Uint8Array, edits: readonly Mutation[]): Buffer {
  let b = Buffer.from(input);
  for (const e of edits) {
    const at = b.length === 0 ? 0 : e.at % (b.length + (e.op === 'insert' ? 1 : 0));
    switch (e.op) {
      case 'set': if (b.length > 0) b[at] = e.value; break;
      case 'flip': if (b.length > 0) b[at]! ^= 1 << e.bit; break;
      case 'insert': b = Buffer.concat([b.subarray(0, at), e.bytes, b.subarray(at)]); break;
      case 'delete': b = Buffer.concat([b.subarray(0, at), b.subarray(at + e.n)]); break;
      case 'truncate': b = b.subarray(0, at); break;
      case 'duplicate': b = Buffer.concat([b.subarray(0, at + e.n), b.subarray(at)]); break;
    }
  }
  return b;
}

/** Cuts `b` into chunks at `cuts` (positions modulo the length); `everyByte` gives one-byte chunks. */
export function chunk(b: Buffer, cuts: readonly number[], everyByte = false): Buffer[] {
  if (everyByte) return Array.from({ length: b.length }, (_, i) => b.subarray(i, i + 1));
  const at = [...new Set(cuts.map((c) => (b.length === 0 ? 0 : c % b.length)))].sort((x, y) => x - y);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of at) {
    if (c > prev) out.push(b.subarray(prev, c));
    prev = Math.max(prev, c);
  }
  out.push(b.subarray(prev));
  return out;
}

const cutsArb = fc.array(fc.nat(), { maxLength: 12 });

/** Fails unless `err` is the typed error the parser's contract names. */
function expectTyped(err: unknown, ctor: abstract new (...args: never[]) => NbcError, code: string, what: string): void {
  if (!(err instanceof ctor) || (err as NbcError).code !== code) {
    throw new Error(`${what} threw ${(err as Error)?.name}: ${(err as Error)?.message}; expected ${ctor.name} (${code})`, { cause: err });
  }
}

/**
 * Fails unless `err` is a deliberate refusal: an Error (plain, as the agg handlers throw, or an
 * NbcError) and not a TypeError, RangeError or SyntaxError escaping from a field read that was
 * never checked.
 */
function expectRefusal(err: unknown, what: string): void {
  if (err instanceof NbcError) return;
  if (!(err instanceof Error) || err.constructor !== Error) {
    throw new Error(`${what} threw ${(err as Error)?.name}: ${(err as Error)?.message}; expected a deliberate refusal`, { cause: err });
  }
}

// ---------------------------------------------------------------------------------------------
// Frame decoder (net/frame.ts).

const frameArb = fc.record({ type: fc.integer({ min: 0, max: 255 }), body: fc.uint8Array({ maxLength: 300 }) });

function decodeAll(chunks: readonly Buffer[], maxBody = MAX_FRAME_BODY): { frames: Array<[number, Buffer]>; error: unknown } {
  const frames: Array<[number, Buffer]> = [];
  const d = new FrameDecoder((type, body) => {
    assert.ok(body.length <= maxBody, `a body of ${body.length} bytes passed the bound of ${maxBody}`);
    frames.push([type, Buffer.from(body)]);
  }, maxBody);
  try {
    for (const c of chunks) d.push(c);
  } catch (err) {
    assert.ok(d.failed, 'a decoder that threw reports failed');
    assert.throws(() => d.push(Buffer.of(1)), (e) => e === err, 'a failed decoder throws the same error again');
    return { frames, error: err };
  }
  return { frames, error: null };
}

const frameRoundTrip: FuzzTarget = {
  name: 'frame decoder: valid streams, any chunking',
  checks: 'frames of random types and bodies, concatenated and cut at random points or at every byte, decode to exactly the frames sent',
  property: () => fc.property(fc.array(frameArb, { maxLength: 12 }), cutsArb, fc.boolean(), (frames, cuts, everyByte) => {
    const stream = Buffer.concat(frames.map((f) => encodeFrame(f.type, f.body)));
    const { frames: got, error } = decodeAll(chunk(stream, cuts, everyByte));
    assert.equal(error, null);
    assert.deepEqual(got.map(([t, b]) => [t, [...b]]), frames.map((f) => [f.type, [...f.body]]));
  }),
};

/** A header whose declared length is wrong: 0, just past the bound, huge, or off by a few. */
const badHeaderArb = fc.record({
  length: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 0xffff_ffff }), fc.constantFrom(0xffff_ffff, 0x8000_0000, 2, 1)),
  type: fc.integer({ min: 0, max: 255 }),
  tail: fc.uint8Array({ maxLength: 64 }),
});

const frameMutated: FuzzTarget = {
  name: 'frame decoder: mutated streams and wrong lengths',
  checks: 'mutated streams, headers declaring 0, huge or wrong lengths, truncated frames, any chunking, any bound: every frame delivered stays within the bound, anything else is NbcArgError (NBC_ERR_ARG), and a failed decoder stays failed',
  property: () => fc.property(
    fc.array(frameArb, { maxLength: 6 }), mutationsArb, badHeaderArb, fc.boolean(), cutsArb, fc.boolean(),
    fc.integer({ min: 0, max: 512 }),
    (frames, edits, header, withBadHeader, cuts, everyByte, maxBody) => {
      let stream = mutate(Buffer.concat(frames.map((f) => encodeFrame(f.type, f.body))), edits);
      if (withBadHeader) {
        const h = Buffer.alloc(5);
        h.writeUInt32LE(header.length, 0);
        h[4] = header.type;
        stream = Buffer.concat([stream, h, header.tail]);
      }
      const { error } = decodeAll(chunk(stream, cuts, everyByte), maxBody);
      if (error !== null) expectTyped(error, NbcArgError, 'NBC_ERR_ARG', 'FrameDecoder.push');
    }),
};

// ---------------------------------------------------------------------------------------------
// Handshake (net/auth.ts), over an in-memory socket.

/** The part of a net.Socket the handshake uses, in memory: what it writes is kept. */
export class FakeSocket extends EventEmitter {
  readonly written: Buffer[] = [];
  destroyed = false;
  paused = true;
  remoteAddress = '127.0.0.1';
  remotePort = 4242;
  write(b: Uint8Array): boolean {
    this.written.push(Buffer.from(b));
    return true;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  /** Chunks that arrived while the socket was paused (after the handshake): the caller's to read. */
  readonly unread: Buffer[] = [];
  /** Delivers chunks as a socket would: none once destroyed, none while paused. */
  feed(chunks: readonly Buffer[]): void {
    for (const c of chunks) {
      if (this.destroyed) return;
      if (this.paused) this.unread.push(c);
      else this.emit('data', c);
    }
  }
  handshakeListeners(): number {
    return ['data', 'end', 'close', 'error'].reduce((n, e) => n + this.listenerCount(e), 0);
  }
}

const SECRET = Buffer.alloc(32, 7);
const OTHER_SECRET = Buffer.alloc(32, 9);
const CONNECTOR_LABEL = Buffer.from('nbc-auth-v1|connector|', 'latin1');
const ACCEPTOR_LABEL = Buffer.from('nbc-auth-v1|acceptor|', 'latin1');

function hmac(secret: Uint8Array, label: Buffer, ...parts: Uint8Array[]): Buffer {
  const h = createHmac('sha256', secret).update(label);
  for (const p of parts) h.update(p);
  return h.digest();
}

/** The RESPONSE a connector with `secret` and `nodeId` sends for `challenge` (spec of auth.ts). */
function responseFor(challenge: Buffer, secret: Buffer, nodeId: number): Buffer {
  const r = Buffer.alloc(RESPONSE_BYTES);
  AUTH_MAGIC.copy(r, 0);
  r.writeUInt32LE(nodeId, 4);
  randomBytes(32).copy(r, 8);
  hmac(secret, CONNECTOR_LABEL, challenge.subarray(4, 36), r.subarray(4, 8)).copy(r, 40);
  return r;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown } | { pending: true };

/** What `p` came to once every callback queued so far has run. */
async function settledSoon(p: Promise<unknown>): Promise<Settled> {
  let result: Settled = { pending: true };
  p.then((value) => { result = { ok: true, value }; }, (error) => { result = { ok: false, error }; });
  await new Promise((r) => setImmediate(r));
  return result;
}

/** Bytes a fuzzer could send where a handshake message is expected. */
const sourceArb = fc.constantFrom('valid', 'mutated', 'replayed', 'wrong-secret', 'random', 'truncated', 'reflected');

const handshakeAcceptor: FuzzTarget = {
  name: 'handshake: acceptor',
  checks: 'random, mutated, truncated, replayed (another challenge), reflected (its own challenge) and wrong-secret responses, in any chunking, with trailing bytes: only the exact valid response resolves (with the claimed id and the trailing bytes); everything else rejects with NbcHandshakeError (NBC_ERR_AUTH) and destroys the socket; never a synchronous throw, never left pending, no listener or timer left behind',
  property: () => fc.asyncProperty(
    sourceArb, fc.integer({ min: 0, max: 0xffff_ffff }), mutationsArb, fc.uint8Array({ maxLength: 100 }),
    fc.uint8Array({ maxLength: 16 }), cutsArb, fc.boolean(), fc.constantFrom('key', 'lookup', 'lookup-missing', 'lookup-short'),
    async (source, nodeId, edits, random, trailing, cuts, everyByte, keying) => {
      const s = new FakeSocket();
      const secret = keying === 'key' ? SECRET
        : (id: number): Buffer | null => (keying === 'lookup-missing' && id % 2 === 1 ? null
          : keying === 'lookup-short' && id % 3 === 0 ? Buffer.alloc(16) : SECRET);
      let p: Promise<{ peerNodeId: number; leftover: Buffer }>;
      try {
        p = authenticateAsAcceptor(s as unknown as Socket, secret, { timeoutMs: 60_000, remote: 'fuzz:1' });
      } catch (err) {
        throw new Error(`authenticateAsAcceptor threw synchronously: ${(err as Error).message}`);
      }
      const challenge = s.written[0]!;
      assert.equal(challenge.length, 36);
      const valid = responseFor(challenge, SECRET, nodeId);
      const message = source === 'valid' ? valid
        : source === 'mutated' ? mutate(valid, edits)
          : source === 'replayed' ? responseFor(Buffer.concat([AUTH_MAGIC, randomBytes(32)]), SECRET, nodeId)
            : source === 'wrong-secret' ? responseFor(challenge, OTHER_SECRET, nodeId)
              : source === 'truncated' ? valid.subarray(0, edits[0]!.at % RESPONSE_BYTES)
                : source === 'reflected' ? Buffer.concat([challenge, challenge])
                  : Buffer.from(random);
      const stream = Buffer.concat([message, trailing]);
      s.feed(chunk(stream, cuts, everyByte));
      if (!s.destroyed && s.handshakeListeners() > 0) s.emit('end');
      const r = await settledSoon(p);
      assert.ok(!('pending' in r), 'the handshake settled once the stream ended');
      assert.equal(s.handshakeListeners(), 0, 'no handshake listener (or its timer) left behind');
      // The spec: the magic, then a MAC over the acceptor's nonce and the claimed id made with the
      // key that id selects. (The connector's nonce is not covered: it is the challenge for the
      // acceptor's own proof, which a connector checks.)
      const claimed = stream.length >= 8 ? stream.readUInt32LE(4) : -1;
      const keyOk = keying === 'key' || (keying === 'lookup-missing' ? claimed % 2 === 0 : keying === 'lookup-short' ? claimed % 3 !== 0 : true);
      const shouldPass = stream.length >= RESPONSE_BYTES && stream.subarray(0, 4).equals(AUTH_MAGIC) && keyOk
        && stream.subarray(40, 72).equals(hmac(SECRET, CONNECTOR_LABEL, challenge.subarray(4), stream.subarray(4, 8)));
      if ('ok' in r && r.ok) {
        assert.ok(shouldPass, `accepted a ${source} response`);
        const v = r.value as { peerNodeId: number; leftover: Buffer };
        assert.equal(v.peerNodeId, claimed);
        assert.ok(s.written[1]?.equals(hmac(SECRET, ACCEPTOR_LABEL, stream.subarray(8, 40))), 'the acceptor proves the secret over the connector\'s nonce');
        assert.deepEqual([...v.leftover, ...Buffer.concat(s.unread)], [...stream.subarray(RESPONSE_BYTES)]);
        assert.ok(s.paused && !s.destroyed);
      } else if ('ok' in r) {
        assert.ok(!shouldPass, `refused the valid response: ${(r.error as Error).message}`);
        expectTyped(r.error, NbcAuthError, 'NBC_ERR_AUTH', 'authenticateAsAcceptor');
        assert.ok(r.error instanceof NbcHandshakeError && r.error.remote === 'fuzz:1' && r.error.reason.length > 0);
        assert.ok(s.destroyed, 'a failed handshake destroys the socket');
      }
    }),
};

const handshakeConnector: FuzzTarget = {
  name: 'handshake: connector',
  checks: 'random, mutated and truncated challenges, then random, mutated, replayed (for another nonce), wrong-secret and truncated confirmations, in any chunking: only a challenge with the magic followed by the exact confirmation resolves; everything else rejects with NbcHandshakeError; never a synchronous throw, never pending, nothing left behind',
  property: () => fc.asyncProperty(
    fc.constantFrom('valid', 'mutated', 'random', 'truncated'), sourceArb, mutationsArb, mutationsArb,
    fc.uint8Array({ maxLength: 80 }), fc.uint8Array({ maxLength: 16 }), cutsArb, fc.boolean(),
    async (challengeSource, confirmSource, edits1, edits2, random, trailing, cuts, everyByte) => {
      const s = new FakeSocket();
      let p: Promise<{ leftover: Buffer }>;
      try {
        p = authenticateAsConnector(s as unknown as Socket, SECRET, 3, { timeoutMs: 60_000, remote: 'fuzz:2' });
      } catch (err) {
        throw new Error(`authenticateAsConnector threw synchronously: ${(err as Error).message}`);
      }
      const validChallenge = Buffer.concat([AUTH_MAGIC, randomBytes(32)]);
      const challenge = challengeSource === 'valid' ? validChallenge
        : challengeSource === 'mutated' ? mutate(validChallenge, edits1)
          : challengeSource === 'truncated' ? validChallenge.subarray(0, edits1[0]!.at % 36)
            : Buffer.from(random.subarray(0, 36));
      s.feed(chunk(challenge, cuts, everyByte));
      const response = s.written[0];
      const nonce = response?.subarray(8, 40) ?? Buffer.alloc(32);
      const valid = hmac(SECRET, ACCEPTOR_LABEL, nonce);
      const confirm = confirmSource === 'valid' ? valid
        : confirmSource === 'mutated' ? mutate(valid, edits2)
          : confirmSource === 'replayed' ? hmac(SECRET, ACCEPTOR_LABEL, randomBytes(32))
            : confirmSource === 'wrong-secret' ? hmac(OTHER_SECRET, ACCEPTOR_LABEL, nonce)
              : confirmSource === 'truncated' ? valid.subarray(0, edits2[0]!.at % 32)
                : confirmSource === 'reflected' ? (response ?? Buffer.alloc(0))
                  : Buffer.from(random);
      const stream = Buffer.concat([challenge, confirm, trailing]);
      s.feed(chunk(stream.subarray(challenge.length), cuts, everyByte));
      if (!s.destroyed && s.handshakeListeners() > 0) s.emit('end');
      const r = await settledSoon(p);
      assert.ok(!('pending' in r), 'the handshake settled once the stream ended');
      assert.equal(s.handshakeListeners(), 0, 'no handshake listener (or its timer) left behind');
      const answer = s.written[0];
      const magicOk = stream.length >= 36 && stream.subarray(0, 4).equals(AUTH_MAGIC);
      if (magicOk) {
        assert.equal(answer?.length, RESPONSE_BYTES, 'a challenge with the magic is answered');
        assert.ok(answer.subarray(40).equals(hmac(SECRET, CONNECTOR_LABEL, stream.subarray(4, 36), answer.subarray(4, 8))));
      } else {
        assert.equal(answer, undefined, 'nothing is sent for a garbage or short challenge');
      }
      const shouldPass = magicOk && stream.length >= 68
        && stream.subarray(36, 68).equals(hmac(SECRET, ACCEPTOR_LABEL, answer!.subarray(8, 40)));
      if ('ok' in r && r.ok) {
        assert.ok(shouldPass, `accepted a ${confirmSource} confirmation after a ${challengeSource} challenge`);
        assert.deepEqual([...(r.value as { leftover: Buffer }).leftover, ...Buffer.concat(s.unread)], [...stream.subarray(68)]);
      } else if ('ok' in r) {
        assert.ok(!shouldPass, `refused a valid handshake: ${(r.error as Error).message}`);
        expectTyped(r.error, NbcAuthError, 'NBC_ERR_AUTH', 'authenticateAsConnector');
        assert.ok(s.destroyed);
      }
    }),
};

// ---------------------------------------------------------------------------------------------
// Rendezvous control messages (runtime/rendezvous.ts).

const validHello = { nodeId: 1, host: '127.0.0.1', port: 40000, nranks: 2, pid: 1234, hostname: 'h', extra: { ucx: 'x' } };

/** A JSON value near the valid ones: each field kept, dropped or replaced by anything. */
function nearby(valid: Record<string, unknown>): fc.Arbitrary<unknown> {
  const fields = Object.fromEntries(Object.entries(valid).map(([k, v]) => [k, fc.oneof(
    { weight: 3, arbitrary: fc.constant(v) },
    fc.constant(undefined), fc.jsonValue(), fc.integer(), fc.double(), fc.string(),
    fc.constantFrom(-1, 0, 65535, 65536, 2 ** 32, 2 ** 53, 1e300, Number.MAX_SAFE_INTEGER, 256, 255, 1, null, true, [], {}),
  )]));
  return fc.record(fields);
}

const rendezvousBodyArb = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  nearby(validHello).map((v) => Buffer.from(JSON.stringify(v))),
  nearby({ reason: 'x', exitCode: 1, origin: 0 }).map((v) => Buffer.from(JSON.stringify(v))),
  fc.array(nearby(validHello), { maxLength: 4 }).map((nodes) => Buffer.from(JSON.stringify({ nodes }))),
  fc.tuple(nearby(validHello), mutationsArb).map(([v, e]) => mutate(Buffer.from(JSON.stringify(v)), e)),
);

const rendezvousMessages: FuzzTarget = {
  name: 'rendezvous: control messages',
  checks: 'random bytes, random JSON, HELLO/ABORT/TABLE with fields dropped or replaced by anything, mutated JSON text: each body either decodes and parses into a value that meets every field rule (ids, ports, counts, exit codes in range) or is refused with NbcArgError (NBC_ERR_ARG)',
  property: () => fc.property(fc.integer({ min: 0, max: 255 }), rendezvousBodyArb, (type, body) => {
    let value: unknown;
    try {
      value = decodeControlBody(type, body);
    } catch (err) {
      expectTyped(err, NbcArgError, 'NBC_ERR_ARG', 'decodeControlBody');
      return;
    }
    const checkHello = (h: ReturnType<typeof parseHello>): void => {
      assert.ok(Number.isInteger(h.nodeId) && h.nodeId >= 0 && h.nodeId <= 0xffff_ffff);
      assert.ok(typeof h.host === 'string' && h.host.length > 0);
      assert.ok(Number.isInteger(h.port) && h.port >= 1 && h.port <= 65535);
      assert.ok(Number.isInteger(h.nranks) && h.nranks >= 1);
      assert.ok(Number.isInteger(h.pid) && h.pid >= 0);
      assert.equal(typeof h.hostname, 'string');
    };
    const attempt = (what: string, fn: () => void): void => {
      try {
        fn();
      } catch (err) {
        if (err instanceof assert.AssertionError) throw err;
        expectTyped(err, NbcArgError, 'NBC_ERR_ARG', what);
      }
    };
    attempt('parseHello', () => checkHello(parseHello(value, 'fuzzed HELLO')));
    attempt('parseAbort', () => {
      const a = parseAbort(value, 0);
      assert.equal(typeof a.reason, 'string');
      assert.ok(Number.isInteger(a.exitCode) && a.exitCode >= 1 && a.exitCode <= 255, `exit code ${a.exitCode}`);
      assert.ok(Number.isInteger(a.origin) && a.origin >= 0);
    });
    attempt('parseTable', () => {
      const t = parseTable(value);
      t.nodes.forEach((n, i) => {
        checkHello(n);
        assert.equal(n.nodeId, i);
      });
    });
  }),
};

// ---------------------------------------------------------------------------------------------
// Schedules on the wire (sched/wire.ts) and the engine's offload records (runtime/engine.ts).

/** Real schedules from the flat builders, encoded: the seeds that mutations start from. */
let schedulePool: Int32Array[] | null = null;
function realSchedules(): Int32Array[] {
  if (schedulePool !== null) return schedulePool;
  schedulePool = [];
  for (const coll of ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall'] as const) {
    for (const alg of Object.values(ALGORITHMS[coll])) {
      if (alg.composite !== undefined || alg.leaders !== undefined) continue;
      for (const size of [2, 3, 4]) {
        for (const bytes of [0, 16, 48]) {
          const s = alg.build(shape({ rank: 1, size, bytes, esize: 8, dtype: 8, op: 0, commutative: true, radix: alg.radix?.[0] ?? 2 }));
          schedulePool.push(encodeSchedule(s));
        }
      }
    }
  }
  return schedulePool;
}

type WordEdit = { at: number; value: number } | { truncate: number } | { append: number[] };
const wordEditArb: fc.Arbitrary<WordEdit> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ at: fc.nat(), value: fc.oneof(fc.integer({ min: -3, max: 20 }), fc.integer(), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1, 256, 128, -129)) }) },
  fc.record({ truncate: fc.nat() }),
  fc.record({ append: fc.array(fc.integer(), { minLength: 1, maxLength: 4 }) }),
);

function editWords(x: Int32Array, edits: readonly WordEdit[]): Int32Array {
  let w = Array.from(x);
  for (const e of edits) {
    if ('at' in e) { if (w.length > 0) w[e.at % w.length] = e.value; }
    else if ('truncate' in e) w = w.slice(0, w.length === 0 ? 0 : e.truncate % w.length);
    else w = w.concat(e.append);
  }
  return Int32Array.from(w);
}

/** Words of a schedule as a fuzzer would hand them in: real, mutated or random. */
const scheduleWordsArb = fc.oneof(
  fc.tuple(fc.nat(), fc.array(wordEditArb, { minLength: 1, maxLength: 5 })).map(([i, e]) => {
    const pool = realSchedules();
    return editWords(pool[i % pool.length]!, e);
  }),
  fc.nat().map((i) => realSchedules()[i % realSchedules().length]!),
  fc.array(fc.oneof(fc.integer({ min: -2, max: 12 }), fc.integer()), { maxLength: 40 }).map((a) => Int32Array.from(a)),
);

/** The format's rules, checked independently of the decoder. */
function checkSchedule(s: Schedule): void {
  const n = s.nActions;
  assert.ok(n >= 0 && s.nRounds >= 1 && s.tmpBytes >= 0);
  assert.equal(s.rounds[0], 0);
  assert.equal(s.rounds[s.nRounds], n);
  for (let r = 0; r < s.nRounds; r++) assert.ok(s.rounds[r + 1]! >= s.rounds[r]!);
  for (let i = 0; i < n; i++) {
    const k = s.kind[i]!;
    assert.ok(k >= A_SEND && k <= A_COPY);
    assert.ok(s.bufA[i]! >= 0 && s.bufA[i]! <= 2 && s.offA[i]! >= 0 && s.bytesA[i]! >= 0);
    if (k === A_SEND || k === A_RECV) assert.ok(s.peer[i]! >= 0 && s.sub[i]! >= 0 && s.sub[i]! <= 15);
    else assert.ok(s.bufB[i]! >= 0 && s.bufB[i]! <= 2 && s.offB[i]! >= 0);
    if (k === A_REDUCE) assert.ok(s.dtype[i]! >= 0 && s.dtype[i]! <= 10 && s.peer[i]! >= 0);
  }
  const ext = s.extents();
  for (let b = 0; b < 3; b++) assert.ok(ext[b]! >= 0 && ext[b]! <= 0x7fff_ffff);
  if (s.isDag) {
    for (let i = 0; i < n; i++) {
      for (let d = s.depStart![i]!; d < s.depStart![i + 1]!; d++) assert.ok(s.deps![d]! >= 0 && s.deps![d]! < i);
    }
  }
}

const scheduleDecode: FuzzTarget = {
  name: 'schedule wire format (decodeSchedule)',
  checks: 'real schedules of every flat builder, with words replaced (by small, random and boundary values), truncated or extended, and random word arrays: decoding either yields a schedule that meets every rule of the format (rounds partition the actions, kinds, buffers, dtypes and sub-tags in range, offsets and lengths >= 0 and below 2^31, dependencies only on earlier actions), re-encodes to the same words and runs to completion, or throws NbcArgError',
  property: () => fc.property(scheduleWordsArb, (words) => {
    let s: Schedule;
    try {
      s = decodeSchedule(words);
    } catch (err) {
      expectTyped(err, NbcArgError, 'NBC_ERR_ARG', 'decodeSchedule');
      return;
    }
    checkSchedule(s);
    assert.deepEqual(encodeSchedule(s), words, 'an accepted schedule re-encodes to the same words');
    let done = 0;
    const port: Port<Run> = {
      send: () => true, recv: () => true, reduce: () => {}, copy: () => {}, finished: () => { done++; },
    };
    new Interpreter<Run>(port).start(new Run(s));
    assert.equal(done, 1, 'the schedule runs to completion when every action completes at once');
  }),
};

/** A node of two ranks (world ranks 0, 1) and world ranks 2, 3 on node 1; rank 0 writes records. */
export function offloadNode(): { engine: Engine; rank: Transport; shared: ReturnType<typeof createNodeShared>; fatal: Error[]; logs: string[] } {
  const shared = createNodeShared({ ranks: 2, ringBytes: 64 * 1024, sliceBytes: 16 * 1024 });
  const placement = { worldSize: 4, nodeId: 0, nodeOfRank: Int32Array.of(0, 0, 1, 1), localOfRank: Int32Array.of(0, 1, 0, 1) };
  const fatal: Error[] = [];
  const logs: string[] = [];
  const links = Object.assign(new EventEmitter(), {
    send: (_n: number, _t: number, _p: readonly Uint8Array[], onWritten?: () => void) => onWritten?.(),
    writableBytesPending: () => 0, pauseReading: () => {}, resumeReading: () => {}, carries: () => true,
  });
  const engine = new Engine(shared, { ...placement, worldRank: -1 }, links, (err) => fatal.push(err), DEFAULT_CONFIG, {},
    (line) => logs.push(line));
  const rank = new Transport(shared, { ...placement, worldRank: 0 });
  return { engine, rank, shared, fatal, logs };
}

const regionArb = (sliceBytes: number) => fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.integer({ min: 0, max: sliceBytes }), fc.integer({ min: 0, max: 512 }))
    .map(([o, b]) => ({ slice: 0, offset: o, bytes: Math.min(b, sliceBytes - o) })) },
  fc.record({ slice: fc.integer({ min: -2, max: 4 }), offset: fc.integer(), bytes: fc.integer() }),
  fc.record({ slice: fc.constant(0), offset: fc.integer({ min: -8, max: sliceBytes + 8 }), bytes: fc.integer({ min: -8, max: sliceBytes + 8 }) }),
);

const offloadRecords: FuzzTarget = {
  name: 'offload ring records (engine)',
  checks: 'a rank writes KIND_COMM, KIND_SCHED (real, mutated or random schedule words) and KIND_POST records (regions inside, across or outside the arena, random ids, ranks, contexts, two-level calls, completion words) into its ring: the engine never throws and never writes outside the posted regions and the completion (its word and, beside it, its arrival tick); a post it cannot run completes with DONE_ERROR and one log line; only a completion word outside the rank\'s slice fails the node',
  property: () => fc.property(
    scheduleWordsArb, fc.array(fc.integer({ min: -2, max: 5 }), { maxLength: 5 }), fc.boolean(),
    regionArb(16 * 1024), regionArb(16 * 1024), regionArb(16 * 1024),
    fc.record({ rank: fc.integer({ min: -1, max: 5 }), id: fc.integer({ min: 0, max: 3 }), ctx: fc.integer({ min: 0, max: 2 }) }),
    fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 255 }).map((k) => ({ slice: 0, offset: 8192 + 64 * k })) },
      fc.record({ slice: fc.integer({ min: -1, max: 3 }), offset: fc.integer({ min: -8, max: 20_000 }) })),
    fc.record({ op: fc.integer({ min: -1, max: 13 }), dtype: fc.integer({ min: -1, max: 12 }), esize: fc.integer({ min: 0, max: 8 }), kind: fc.integer({ min: 0, max: 8 }), root: fc.integer({ min: -1, max: 4 }) }),
    (words, members, commValid, send, recv, tmp, post, slot, call) => {
      const { engine, rank, shared, fatal, logs } = offloadNode();
      const slice = new Uint8Array(shared.slices[0]!);
      for (let i = 0; i < slice.length; i++) slice[i] = (i * 31 + 7) & 0xff;
      const before = slice.slice();
      const worldRanks = commValid ? Int32Array.of(0, 1, 2, 3).subarray(0, Math.max(1, members.length)) : Int32Array.from(members);
      rank.toEngine(KIND_COMM, 1, 0, 0, 0, 0, 0, 0, worldRanks);
      rank.toEngine(KIND_SCHED, 1, 0, 0, 1, 0, 0, 0, words);
      const twoLevel = post.id === 0;
      const args = twoLevel
        ? Int32Array.of(send.slice, send.offset, send.bytes, recv.slice, recv.offset, recv.bytes, 0, 0, 0, call.op, call.dtype, call.esize, call.kind, call.root)
        : Int32Array.of(send.slice, send.offset, send.bytes, recv.slice, recv.offset, recv.bytes, tmp.slice, tmp.offset, tmp.bytes);
      rank.toEngine(KIND_POST, post.ctx, post.rank, 5, post.id, 0, slot.slice, slot.offset, args);
      // As the engine's event loop does: a throw from poll() fails the node (onFatal).
      (engine as unknown as { guard(fn: () => void): void }).guard(() => engine.poll());
      const slotOk = slot.slice === 0 && slot.offset >= 0 && slot.offset % 4 === 0 && slot.offset + COMPLETION_BYTES <= slice.length;
      if (!slotOk) {
        assert.equal(fatal.length, 1, 'a completion word outside the slice fails the node');
        assert.match(fatal[0]!.message, /completion word/);
      } else {
        assert.deepEqual(fatal, [], 'nothing else fails the node');
      }
      // No byte outside the posted regions and the completion word changed.
      const inside = (i: number): boolean => [send, recv, tmp].some((r) => r.slice === 0 && i >= r.offset && i < r.offset + r.bytes)
        || (slotOk && i >= slot.offset && i < slot.offset + COMPLETION_BYTES);
      for (let i = 0; i < slice.length; i++) {
        if (slice[i] !== before[i] && !inside(i)) assert.fail(`byte ${i} of rank 0's slice changed outside the posted regions`);
      }
      assert.ok(logs.length <= 3 && logs.every((l) => /refused an offload record of rank 0: /.test(l)), logs.join('\n'));
      let schedOk = true;
      try {
        decodeSchedule(words);
      } catch {
        schedOk = false;
      }
      const commOk = worldRanks.length > 0 && worldRanks.every((w) => w >= 0 && w < 4);
      if (slotOk && post.ctx === 1 && ((post.id === 1 && !schedOk) || !commOk)) {
        assert.equal(new Int32Array(shared.slices[0]!)[slot.offset >> 2], DONE_ERROR,
          'a post naming a refused schedule or communicator completes with DONE_ERROR');
      }
      engine.stop();
    }),
};

// ---------------------------------------------------------------------------------------------
// Aggregation protocol (agg/wire.ts, agg/daemon.ts, agg/manager.ts).

const ctrlBodyArb = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.dictionary(fc.constantFrom('t', 'id', 'index', 'key', 'n', 'x'), fc.jsonValue()).map((v) => Buffer.from(JSON.stringify(v))),
);

const aggCtrl: FuzzTarget = {
  name: 'agg: control frames (decodeCtrl and field readers)',
  checks: 'random bytes, random JSON and near-miss control objects: decodeCtrl returns null or an object with a string `t`; num/str/numArray return a value inside the asked range or throw an Error naming the field',
  property: () => fc.property(ctrlBodyArb, fc.constantFrom('id', 'index', 'key', 'n', 'x'), (body, field) => {
    const m = decodeCtrl(body);
    if (m === null) return;
    assert.equal(typeof m.t, 'string');
    assert.ok(typeof m === 'object' && !Array.isArray(m));
    const tryRead = (fn: () => void): void => {
      try {
        fn();
      } catch (err) {
        if (err instanceof assert.AssertionError) throw err;
        expectRefusal(err, 'a field reader');
        assert.match((err as Error).message, new RegExp(`field ${field}`));
      }
    };
    tryRead(() => { const v = num(m, field, 1, 100); assert.ok(Number.isInteger(v) && v >= 1 && v <= 100); });
    tryRead(() => { const v = str(m, field, 10); assert.ok(typeof v === 'string' && v.length <= 10); });
    tryRead(() => { const v = numArray(m, field, 0, 9, 5); assert.ok(v.length <= 5 && v.every((x) => x >= 0 && x <= 9)); });
  }),
};

const fragHeaderArb: fc.Arbitrary<FragHeader> = fc.record({
  group: fc.integer({ min: 0, max: 0xffff_ffff }), epoch: fc.integer({ min: 0, max: 0xffff_ffff }),
  seq: fc.integer({ min: 0, max: 0xffff_ffff }), frag: fc.integer({ min: 0, max: 0xffff_ffff }),
  member: fc.integer({ min: 0, max: 0xffff_ffff }), op: fc.integer({ min: 0, max: 255 }), dtype: fc.integer({ min: 0, max: 255 }),
  root: fc.integer({ min: -32768, max: 32767 }), stamp: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
});

const aggFragHeader: FuzzTarget = {
  name: 'agg: fragment headers',
  checks: 'FRAG headers of any field values round-trip through writeFragHeader/readFragHeader; any 28 bytes read back as in-range fields',
  property: () => fc.property(fragHeaderArb, fc.uint8Array({ minLength: FRAG_HEADER_BYTES, maxLength: FRAG_HEADER_BYTES }), (h, raw) => {
    const b = Buffer.alloc(FRAG_HEADER_BYTES);
    writeFragHeader(b, h);
    assert.deepEqual(readFragHeader(b), { ...h });
    const r = readFragHeader(Buffer.from(raw));
    assert.ok(r.group >= 0 && r.group <= 0xffff_ffff && r.root >= -32768 && r.root <= 32767 && r.op <= 255);
  }),
};

/** The private handlers the fuzzer drives (the daemon's and manager's frame entry points). */
interface DaemonInside {
  onManagerFrame(type: number, body: Buffer): void;
  onChildFrame(peer: unknown, conn: unknown, type: number, body: Buffer): void;
  stop(): void;
  dialParent(): Promise<void>;
  dialManager(): Promise<void>;
  groups: Map<number, { inflight: Map<number, unknown>; slots: number }>;
}

const fakeConn = { send: () => {}, sendCtrl: () => {}, close: () => {}, finish: () => {}, closed: false, remote: 'fuzz:3' };
const JOB_KEY = 'ab'.repeat(32);
const GROUP = {
  t: 'group', id: 5, epoch: 1, job: 1, slots: 4, count: 3, hasParent: false,
  children: [{ t: 'member', member: 0, node: 0 }, { t: 'member', member: 1, node: 1 }, { t: 'member', member: 2, node: 1 }], under: [0, 1, 2],
};

const managerCtrlArb = fc.oneof(
  nearby({ t: 'job', index: 1, key: JOB_KEY }),
  nearby({ t: 'job-gone', index: 1 }),
  nearby(GROUP),
  nearby({ t: 'group-end', id: 5 }),
  nearby({ t: 'ping', n: 1 }),
  nearby({ t: 'welcome', parent: null, jobs: [{ index: 1, key: JOB_KEY }] }),
  nearby({ t: 'parent', host: '127.0.0.1', port: 9 }),
).map((v) => Buffer.from(JSON.stringify(v)));

/** A FRAG for the group above, with fields from near the valid ones or anything. */
const fragArb = fc.record({
  group: fc.constantFrom(5, 5, 5, 6, 0), epoch: fc.constantFrom(1, 1, 2), seq: fc.integer({ min: 0, max: 3 }),
  frag: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom(1 << 20, 0xffff_ffff)),
  member: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom(0xffff_ffff, 1000)),
  op: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 255 })), dtype: fc.oneof(fc.constant(8), fc.integer({ min: 0, max: 255 })),
  root: fc.oneof(fc.constant(-1), fc.integer({ min: -3, max: 4 })),
  stamp: fc.oneof(fc.constant(0), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
}).chain((h) => fc.tuple(fc.constant(h), fc.oneof(fc.constantFrom(0, 8, 16, 64), fc.integer({ min: 0, max: 200 }))));

const childFrameArb = fc.oneof(
  { weight: 5, arbitrary: fragArb.map(([h, n]) => {
    const b = Buffer.alloc(FRAG_HEADER_BYTES + n);
    writeFragHeader(b, h);
    return { type: FrameType.Frag as number, body: b };
  }) },
  fc.tuple(fragArb, mutationsArb).map(([[h, n], e]) => {
    const b = Buffer.alloc(FRAG_HEADER_BYTES + n);
    writeFragHeader(b, h);
    return { type: FrameType.Frag as number, body: mutate(b, e) };
  }),
  fc.uint8Array({ maxLength: 40 }).map((b) => ({ type: FrameType.GroupError as number, body: Buffer.from(b) })),
  fc.record({ type: fc.integer({ min: 0, max: 6 }), body: fc.uint8Array({ maxLength: 40 }).map((b) => Buffer.from(b)) }),
  fc.constant({ type: FrameType.Ctrl as number, body: Buffer.from('{"t":"bye"}') }),
);

const peerArb = fc.oneof(
  fc.record({ kind: fc.constant('member'), job: fc.constantFrom(1, 1, 2), node: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ kind: fc.constant('an'), an: fc.integer({ min: 0, max: 4 }) }),
);

const aggDaemon: FuzzTarget = {
  name: 'agg: daemon frame handlers',
  checks: 'a daemon (AN 0 of radix 2) with one job and one group, fed sequences of near-miss control frames from the manager and FRAG, GERROR, CTRL and unknown frames (valid, mutated, random) from members and child ANs of the right and wrong jobs: every frame is handled or refused with a deliberate Error (the connection is then dropped), never a TypeError/RangeError; the in-flight fragments stay within the group\'s slots',
  property: () => fc.property(
    fc.array(fc.oneof(
      managerCtrlArb.map((body) => ({ from: 'manager' as const, type: FrameType.Ctrl as number, body })),
      fc.tuple(peerArb, childFrameArb).map(([peer, f]) => ({ from: peer, type: f.type, body: f.body })),
    ), { minLength: 1, maxLength: 12 }),
    (frames) => {
      const logs: string[] = [];
      const d = new Daemon({
        id: 0, radix: 2, levels: 2, payloadPerSlot: 64, manager: { host: '127.0.0.1', port: 9 }, secret: SECRET,
        listenHost: '127.0.0.1', orphanSeconds: 30, log: (l) => logs.push(l),
      }) as unknown as DaemonInside;
      // No sockets, no exit: the handlers under test only.
      d.stop = () => {};
      d.dialParent = async () => {};
      d.dialManager = async () => {};
      d.onManagerFrame(FrameType.Ctrl, Buffer.from(JSON.stringify({ t: 'job', index: 1, key: JOB_KEY })));
      d.onManagerFrame(FrameType.Ctrl, Buffer.from(JSON.stringify(GROUP)));
      for (const f of frames) {
        try {
          if (f.from === 'manager') d.onManagerFrame(f.type, f.body);
          else d.onChildFrame(f.from, fakeConn, f.type, f.body);
        } catch (err) {
          expectRefusal(err, `the daemon's handler of a frame of type ${f.type}`);
        }
        for (const g of d.groups.values()) assert.ok(g.inflight.size <= g.slots, 'in-flight fragments within the slots');
      }
    }),
};

interface ManagerInside {
  onAnHello(conn: unknown, m: unknown): unknown;
  onAnFrame(an: unknown, conn: unknown, type: number, body: Buffer): void;
  onJobHello(conn: unknown, m: unknown): unknown;
  onClientFrame(client: unknown, type: number, body: Buffer): void;
  onAdminFrame(conn: unknown, type: number, body: Buffer): void;
  stop(): Promise<void>;
  rounds: Map<string, { timer: NodeJS.Timeout | null }>;
  groups: Map<number, { ackTimer: NodeJS.Timeout | null }>;
}

const managerFirstArb = fc.oneof(
  nearby({ t: 'hello-job', job: 'j', key: JOB_KEY, node: 0 }),
  nearby({ t: 'an-hello', id: 1, radix: 2, levels: 2, payload: 256, host: '127.0.0.1', port: 9, pid: 1, parentLinked: true }),
  nearby({ t: 'hello-admin' }),
  fc.jsonValue(),
).map((v) => Buffer.from(JSON.stringify(v) ?? 'null'));

const managerLaterArb = fc.oneof(
  nearby({ t: 'join', key: 'k', round: 1, index: 0, count: 2, slots: 2, timeoutMs: 1000 }),
  nearby({ t: 'leave', id: 1 }),
  nearby({ t: 'abort', id: 1, reason: 'r' }),
  nearby({ t: 'pong', n: 1, counters: { a: 1 }, rootFragments: { 1: 2 } }),
  nearby({ t: 'group-ok', id: 1 }),
  nearby({ t: 'group-fault', id: 1, epoch: 1, reason: 'r' }),
  nearby({ t: 'rejected', remote: 'x', reason: 'y' }),
  nearby({ t: 'status' }),
  fc.jsonValue(),
).map((v) => Buffer.from(JSON.stringify(v) ?? 'null'));

const aggManager: FuzzTarget = {
  name: 'agg: manager frame handlers',
  checks: 'the manager\'s first-frame dispatch (an-hello, hello-job, hello-admin) and the frames of each role (join, leave, abort, pong, group-ok, group-fault, status...), near-miss, random JSON and random bytes: every frame is handled or refused with a deliberate Error, never a TypeError/RangeError',
  property: () => fc.property(
    fc.oneof(managerFirstArb, fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b))),
    fc.array(fc.oneof(managerLaterArb, fc.uint8Array({ maxLength: 60 }).map((b) => Buffer.from(b))), { maxLength: 8 }),
    (first, later) => {
      const m = new Manager({
        radix: 2, levels: 2, payloadPerSlot: 256, slotsPerAn: 16, jobQuotaSlots: 8, listenHost: '127.0.0.1', port: 0,
        orphanSeconds: 30, private: true, adopt: true, daemonMain: '/nonexistent',
      }, SECRET, () => {}) as unknown as ManagerInside;
      m.stop = async () => {};
      const conn = { ...fakeConn };
      let role: ((type: number, body: Buffer) => void) | null = null;
      const frame = (type: number, body: Buffer): void => {
        if (role !== null) {
          role(type, body);
          return;
        }
        const c = decodeCtrl(body);
        if (c === null) throw new Error('control frame is not a JSON object with a "t" field');
        if (c.t === 'an-hello') {
          const an = m.onAnHello(conn, c);
          role = (t, b) => m.onAnFrame(an, conn, t, b);
        } else if (c.t === 'hello-job') {
          const client = m.onJobHello(conn, c);
          if (client !== null) role = (t, b) => m.onClientFrame(client, t, b);
        } else if (c.t === 'hello-admin') {
          role = (t, b) => {
            // 'stop' would end this process: the admin role's other frames only.
            if (decodeCtrl(b)?.t === 'stop') return;
            m.onAdminFrame(conn, t, b);
          };
        } else {
          throw new Error(`first control message is '${c.t}'`);
        }
      };
      try {
        for (const body of [first, ...later]) {
          try {
            frame(FrameType.Ctrl, body);
          } catch (err) {
            expectRefusal(err, 'the manager\'s frame handler');
            break; // the connection is dropped
          }
        }
      } finally {
        for (const r of m.rounds.values()) if (r.timer !== null) clearTimeout(r.timer);
        for (const g of m.groups.values()) if (g.ackTimer !== null) clearTimeout(g.ackTimer);
      }
    }),
};

/** Every in-process target, in report order. */
export const TARGETS: readonly FuzzTarget[] = [
  frameRoundTrip, frameMutated, handshakeAcceptor, handshakeConnector, rendezvousMessages, scheduleDecode, offloadRecords,
  aggCtrl, aggFragHeader, aggDaemon, aggManager,
];

/** Runs one target `runs` times from `seed`; the report scripts/fuzz.ts writes. */
export async function runTarget(t: FuzzTarget, runs: number, seed: number): Promise<{ runs: number; failures: number; seconds: number; failure?: string }> {
  const start = performance.now();
  const details = await fc.check(t.property(), { numRuns: runs, seed, endOnFailure: true });
  const seconds = (performance.now() - start) / 1000;
  if (details.failed) {
    return { runs: details.numRuns, failures: 1, seconds, failure: `seed ${details.seed}, path ${details.counterexamplePath}: ${String(details.errorInstance)}` };
  }
  return { runs: details.numRuns, failures: 0, seconds };
}
