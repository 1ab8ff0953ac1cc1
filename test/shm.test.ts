import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { allocationBytes, SliceAllocator } from '../src/shm/arena.ts';
import { align8, H_KIND, H_LEN, HEADER_BYTES, KIND_EAGER, RING_HEADER_BYTES } from '../src/shm/layout.ts';
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
