import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { allocationBytes, SliceAllocator } from '../src/shm/arena.ts';
import fc from 'fast-check';
import {
  align8, H_KIND, H_LEN, HEADER_BYTES, HEADER_WORDS, KIND_ACK, KIND_CREDIT, KIND_DATA, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN,
  KIND_FRAG, KIND_POST, KIND_PULL, KIND_RTS, KIND_UCX_PULL, RING_HEADER_BYTES,
} from '../src/shm/layout.ts';
import * as rec from '../src/shm/record.ts';
import { Ring, slotBytes } from '../src/shm/ring.ts';

function ringPair(capacity: number): { p: Ring; c: Ring } {
  const sab = new SharedArrayBuffer(RING_HEADER_BYTES + capacity);
  return { p: new Ring(sab, 0, capacity, 0, 1), c: new Ring(sab, 0, capacity, 0, 1) };
}

/** Writes a record whose payload is `n` bytes of `seed + i`. */
function put(p: Ring, n: number, seed: number): boolean {
  const len = align8(HEADER_BYTES + n);
  const at = p.reserve(len);
  if (at < 0) return false;
  p.i32[(at >> 2) + H_KIND] = KIND_EAGER;
  p.i32[(at >> 2) + H_LEN] = len;
  p.i32[(at >> 2) + 2] = n;
  for (let i = 0; i < n; i++) p.u8[at + HEADER_BYTES + i] = (seed + i) & 255;
  p.publish(len);
  return true;
}

function take(c: Ring): { n: number; bytes: number[] } | null {
  const at = c.peek();
  if (at < 0) return null;
  const n = c.i32[(at >> 2) + 2]!;
  const bytes = Array.from(c.u8.subarray(at + HEADER_BYTES, at + HEADER_BYTES + n));
  c.release(c.i32[(at >> 2) + H_LEN]!);
  return { n, bytes };
}

describe('shared-memory ring', () => {
  test('records of every size survive many wrap-arounds in FIFO order', () => {
    const { p, c } = ringPair(1024);
    let seed = 0;
    const expected: Array<{ n: number; seed: number }> = [];
    let got = 0;
    for (let round = 0; round < 5000; round++) {
      const n = (round * 37) % 300;
      if (put(p, n, seed)) expected.push({ n, seed: seed++ });
      if (round % 3 !== 0) {
        const r = take(c);
        if (r !== null) {
          const e = expected.shift()!;
          assert.equal(r.n, e.n);
          assert.deepEqual(r.bytes, Array.from({ length: e.n }, (_, i) => (e.seed + i) & 255));
          got++;
        }
      }
    }
    assert.ok(got > 1000, `consumed ${got} records`);
  });

  test('a full ring refuses a record, raises producer-waiting, and the consumer reports it once', () => {
    const { p, c } = ringPair(1024);
    let n = 0;
    while (put(p, 100, n)) n++;
    // each 152-byte record takes a 192-byte slot, and one line stays free for the next stamp
    assert.equal(slotBytes(align8(HEADER_BYTES + 100)), 192);
    assert.equal(n, Math.floor((1024 - 64) / 192), `${n} records of 152 bytes fit in 1 KiB`);
    const at = c.peek();
    assert.ok(at >= 0);
    assert.equal(c.release(c.i32[(at >> 2) + H_LEN]!), true, 'the first release wakes the waiting producer');
    const at2 = c.peek();
    assert.equal(c.release(c.i32[(at2 >> 2) + H_LEN]!), false, 'the flag was cleared');
    assert.ok(put(p, 100, 99), 'space is available again');
  });

  test('two threads: 100000 records of random sizes arrive whole and in order through a small, often full ring', { timeout: 60_000 }, async () => {
    // A 4 KiB ring wraps every few dozen records and fills whenever the consumer falls behind,
    // so PAD stamps, the zeroed next stamp and the producer-waiting flag are all exercised
    // across threads, where a publication-order bug would show as a torn or stale record.
    const capacity = 4096;
    const count = 100_000;
    const sab = new SharedArrayBuffer(RING_HEADER_BYTES + capacity);
    const control = new SharedArrayBuffer(8);
    const ctl = new Int32Array(control);
    const c = new Ring(sab, 0, capacity, 0, 1);
    // workers do not inherit the tsx loader: register it, then load the TypeScript producer
    const producer = new URL('./fixtures/ring-producer.ts', import.meta.url).href;
    const tsx = import.meta.resolve('tsx/esm/api');
    const boot = `(await import(${JSON.stringify(tsx)})).register(); await import(${JSON.stringify(producer)});`;
    const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`),
      { workerData: { sab, base: 0, capacity, control, count, maxPayload: 600 } });
    const failed = new Promise<never>((_, reject) => worker.once('error', reject));
    const consume = async (): Promise<number> => {
      let got = 0;
      while (got < count) {
        const seen = Atomics.load(ctl, 0);
        const at = c.peek();
        if (at < 0) {
          // wait without blocking the event loop, so a worker error or the deadline can act
          const r = Atomics.waitAsync(ctl, 0, seen, 1000);
          if (r.async) await r.value;
          continue;
        }
        const seq = c.i32[at >> 2]!;
        const payload = c.i32[(at >> 2) + 1]!;
        if (seq !== got) throw new Error(`record ${got} expected, got ${seq}`);
        for (let i = 0; i < payload; i++) {
          const b = c.u8[at + 8 + i]!;
          if (b !== ((seq * 31 + i) & 255)) throw new Error(`record ${seq}, byte ${i} of ${payload}: ${b}`);
        }
        if (c.release((8 + payload + 7) & ~7)) {
          Atomics.add(ctl, 1, 1);
          Atomics.notify(ctl, 1);
        }
        got++;
      }
      return got;
    };
    const got = await Promise.race([consume(), failed]);
    assert.equal(got, count);
    await worker.terminate();
  });

  test('an empty ring peeks -1 and capacities must be powers of two', () => {
    const { c } = ringPair(2048);
    assert.equal(c.peek(), -1);
    assert.equal(c.hasData(), false);
    assert.throws(() => ringPair(3000), RangeError);
  });
});

describe('arena slice allocator', () => {
  test('never hands out overlapping blocks and coalesces everything back (random ops vs a model)', () => {
    const size = 1 << 20;
    const a = new SliceAllocator(size);
    const live = new Map<number, number>();
    let x = 12345;
    const rnd = (m: number): number => {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      return x % m;
    };
    for (let i = 0; i < 20000; i++) {
      if (live.size > 0 && rnd(3) === 0) {
        const keys = [...live.keys()];
        const off = keys[rnd(keys.length)]!;
        a.free(off);
        live.delete(off);
      } else {
        const bytes = 1 + rnd(20000);
        const off = a.alloc(bytes);
        if (off < 0) continue;
        assert.equal(off % 64, 0, 'aligned');
        assert.ok(off + bytes <= size);
        for (const [o, n] of live) assert.ok(off + bytes <= o || o + n <= off, `block ${off}+${bytes} overlaps ${o}+${n}`);
        live.set(off, bytes);
      }
    }
    for (const off of live.keys()) a.free(off);
    assert.equal(a.available, size);
    assert.equal(a.alloc(size), 0, 'fully coalesced: the whole slice is one block again');
  });

  test('a request of 2 GiB or more is refused, not wrapped to a small block', () => {
    const a = new SliceAllocator(1 << 20);
    for (const bytes of [2 ** 31, 2 ** 31 + 64, 2 ** 32, 2 ** 32 + 8, 8e9]) assert.equal(a.alloc(bytes), -1, `${bytes} bytes`);
    assert.equal(a.available, 1 << 20, 'nothing was taken');
    assert.equal(allocationBytes(2 ** 32 + 1), 2 ** 32 + 64);
  });

  test('freeing an unknown offset is an internal error', () => {
    const a = new SliceAllocator(4096);
    assert.throws(() => a.free(64), { code: 'NBC_ERR_INTERNAL' });
  });
});

describe('records (shm/record.ts)', () => {
  const GARBAGE = 0x5a5a5a5a;
  const i32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).filter((x) => x !== GARBAGE);
  /** A header at word 4 of a buffer of garbage, so an encoder that leaves a word unwritten shows. */
  const fresh = (): Int32Array => new Int32Array(4 + HEADER_WORDS + 4).fill(GARBAGE);
  const W = 4;
  const allWritten = (b: Int32Array): void => {
    for (let k = 0; k < HEADER_WORDS; k++) assert.notEqual(b[W + k], GARBAGE, `header word ${k} left unwritten`);
    assert.equal(b[W - 1], GARBAGE, 'nothing written before the record');
    assert.equal(b[W + HEADER_WORDS], GARBAGE, 'nothing written past the header');
  };

  test('every kind decodes what it encoded, and its encoder writes every header word and no other', () => {
    fc.assert(fc.property(fc.array(i32, { minLength: 11, maxLength: 11 }), (f) => {
      const [a, b, c, d, e, g, h, k, l, m, n] = f as [number, number, number, number, number, number, number, number, number, number, number];
      let r = fresh();
      rec.encodeEager(r, W, a, b, c, d, e, g, h);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recLen(r, W), rec.msgCtx(r, W), rec.msgSrc(r, W), rec.msgTag(r, W), rec.msgBytes(r, W), rec.recDst(r, W), rec.recFrom(r, W)],
        [KIND_EAGER, a, b, c, d, e, g, h]);
      r = fresh();
      rec.encodeRts(r, W, a, b, c, d, e, g, h, k, l);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recLen(r, W), rec.msgCtx(r, W), rec.msgSrc(r, W), rec.msgTag(r, W), rec.msgBytes(r, W), rec.recDst(r, W),
        rec.rtsToken(r, W), rec.rtsSlice(r, W), rec.rtsOffset(r, W), rec.recFrom(r, W)], [KIND_RTS, HEADER_BYTES, a, b, c, d, e, g, h, k, l]);
      rec.setRtsRemote(r, W, m, n);
      assert.deepEqual([rec.rtsSlice(r, W), rec.rtsNode(r, W), rec.rtsMessage(r, W), rec.msgCtx(r, W), rec.recFrom(r, W)], [-1, m, n, a, l], 'readdressed, envelope kept');
      rec.setRtsLocal(r, W, e, g, h, k);
      assert.deepEqual([rec.recKind(r, W), rec.msgBytes(r, W), rec.rtsToken(r, W), rec.rtsSlice(r, W), rec.rtsOffset(r, W), rec.msgTag(r, W)], [KIND_RTS, e, g, h, k, c]);
      rec.encodeFrag(r, W, a, b, c, 1);
      assert.deepEqual([rec.recKind(r, W), rec.recLen(r, W), rec.fragMessage(r, W), rec.fragOffset(r, W), rec.fragPushed(r, W), rec.msgBytes(r, W)], [KIND_FRAG, a, b, c, 1, e]);
      r = fresh();
      rec.encodeUcxRts(r, W, a, b, c, d, e, g, 1, h);
      allWritten(r);
      assert.deepEqual([rec.msgCtx(r, W), rec.rtsToken(r, W), rec.rtsHeld(r, W), rec.recFrom(r, W), rec.ucxRtsPayloadArrive(r, W), rec.recArrive(r, W)],
        [a, g, 1, h, 0, 0], 'unstamped until the wire stamps it');
      rec.setUcxRtsPayloadArrive(r, W, k);
      rec.setRecArrive(r, W, l);
      assert.deepEqual([rec.ucxRtsPayloadArrive(r, W), rec.recArrive(r, W), rec.rtsHeld(r, W)], [k || 1, l || 1, 1], 'stamps never read as 0 (unstamped)');
      r = fresh();
      rec.encodeAck(r, W, a, b);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.ackToken(r, W), rec.ackSlice(r, W)], [KIND_ACK, a, b]);
      r = fresh();
      rec.encodePull(r, W, a, b, c, d, e, g);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.pullBytes(r, W), rec.pullSender(r, W), rec.pullMessage(r, W), rec.pullId(r, W), rec.pullNode(r, W), rec.recFrom(r, W)],
        [KIND_PULL, a, b, c, d, e, g]);
      r = fresh();
      rec.encodeData(r, W, a, b, c, d, e);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.dataPull(r, W), rec.dataBytes(r, W), rec.dataToken(r, W), rec.dataSlice(r, W), rec.dataOffset(r, W)], [KIND_DATA, a, b, c, d, e]);
      r = fresh();
      rec.encodeEagerCredit(r, W, a, b, c);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recDst(r, W), rec.eagerCreditBytes(r, W), rec.recFrom(r, W)], [KIND_EAGER_CREDIT, a, b, c]);
      r = fresh();
      rec.encodeCredit(r, W, a);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.creditBytes(r, W)], [KIND_CREDIT, a]);
      r = fresh();
      rec.encodeUcxPull(r, W, a, b, c);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recDst(r, W), rec.ucxPullToken(r, W), rec.recFrom(r, W)], [KIND_UCX_PULL, a, b, c]);
      r = fresh();
      rec.encodeFin(r, W, a, b);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recDst(r, W), rec.finRank(r, W), rec.recLen(r, W)], [KIND_FIN, a, b, HEADER_BYTES]);
      r = fresh();
      rec.encodeOffload(r, W, KIND_POST, a, b, c, d, e, g, h, k, l);
      allWritten(r);
      assert.deepEqual([rec.recKind(r, W), rec.recLen(r, W), rec.offCtx(r, W), rec.offRank(r, W), rec.offTag(r, W), rec.offId(r, W), rec.postSlot(r, W),
        rec.postSlotOffset(r, W), rec.offBytes(r, W), rec.recFrom(r, W)], [KIND_POST, a, b, c, d, e, g, h, k, l]);
    }));
  });
});
