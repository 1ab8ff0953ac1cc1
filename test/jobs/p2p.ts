/**
 * Point-to-point scenarios, one per mode (args[0]). Each rank checks what it received against
 * values computed independently from ranks and indices, throws on any mismatch, and returns a
 * small summary that the test inspects too.
 */
import assert from 'node:assert/strict';
import { errorCodes } from './common.ts';
import {
  ANY_SOURCE, ANY_TAG, PROC_NULL, NbcError, testAll, testAny, waitAll, waitAny, type Communicator,
  type Request, type TypedArray,
} from 'nbcoll';

/** Deterministic content for (src, dst, i). */
const val = (src: number, dst: number, i: number): number => ((src * 7919 + dst * 104729 + i * 31) % 251);

function fill(a: Uint8Array, src: number, dst: number): Uint8Array {
  for (let i = 0; i < a.length; i++) a[i] = val(src, dst, i);
  return a;
}

function check(a: Uint8Array, src: number, dst: number): void {
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== val(src, dst, i)) assert.fail(`byte ${i} from ${src} to ${dst}: got ${a[i]}, expected ${val(src, dst, i)}`);
  }
}

const modes: Record<string, (w: Communicator, args: string[]) => unknown> = {
  transport(w) {
    // Which path reached the other nodes, and that it carried this rank's messages.
    const peer = (w.rank + w.size / 2) % w.size;
    const got = new Int32Array(1);
    const r = w.irecv(got, (w.rank - w.size / 2 + w.size) % w.size, 5);
    w.send(Int32Array.of(w.rank), peer, 5);
    r.wait();
    // Then a large message (rendezvous) to the same peer and one to the neighbour of its own
    // node: 2 peers used, whatever each message's protocol.
    const big = new Uint8Array(100_000);
    const rb = w.irecv(new Uint8Array(big.length), (w.rank - w.size / 2 + w.size) % w.size, 6);
    w.send(big, peer, 6);
    rb.wait();
    const mate = w.rank ^ 1;
    const rm = w.irecv(new Int32Array(1), mate, 7);
    w.send(Int32Array.of(w.rank), mate, 7);
    rm.wait();
    const s = w.stats();
    return {
      interNode: s.interNode, ucxErrMode: s.ucxErrMode, interNodeMessages: s.host.interNodeMessages, got: got[0],
      peers: [s.host.intraNodePeers, s.host.interNodePeers],
    };
  },

  ring(w, args) {
    const bytes = Number(args[1] ?? 8);
    const right = (w.rank + 1) % w.size;
    const left = (w.rank - 1 + w.size) % w.size;
    const out = fill(new Uint8Array(bytes), w.rank, right);
    const inb = new Uint8Array(bytes);
    const r = w.irecv(inb, left, 5);
    w.send(out, right, 5);
    const st = r.wait();
    assert.deepEqual([st.source, st.tag, st.count], [left, 5, bytes]);
    check(inb, left, w.rank);
    return { from: st.source };
  },

  allpairs(w, args) {
    const bytes = Number(args[1] ?? 64);
    const reqs: Request[] = [];
    const inbox: Uint8Array[] = [];
    for (let p = 0; p < w.size; p++) {
      inbox.push(new Uint8Array(bytes));
      reqs.push(w.irecv(inbox[p]!, p, 9));
    }
    for (let p = 0; p < w.size; p++) reqs.push(w.isend(fill(new Uint8Array(bytes), w.rank, p), p, 9));
    waitAll(reqs);
    for (let p = 0; p < w.size; p++) check(inbox[p]!, p, w.rank);
    return { peers: w.size };
  },

  anysource(w) {
    if (w.rank === 0) {
      const seen: Array<[number, number]> = [];
      const buf = new Int32Array(2);
      for (let k = 1; k < w.size; k++) {
        const st = w.recv(buf, ANY_SOURCE, ANY_TAG);
        assert.equal(buf[0], st.source, 'payload names its sender');
        assert.equal(st.tag, 100 + st.source);
        assert.equal(st.count, 2);
        seen.push([st.source, st.tag]);
      }
      return seen.map(([s]) => s).sort((a, b) => a - b);
    }
    w.send(Int32Array.of(w.rank, 42), 0, 100 + w.rank);
    return null;
  },

  order(w) {
    // Rank 1 sends 2,000 numbered messages alternating between tags 1 and 2. Rank 0 first
    // receives all tag-2 ones (tag matching must skip tag 1), then the tag-1 ones, then a final
    // batch with ANY_TAG: every stream must arrive in send order.
    const n = 2000;
    if (w.rank === 1) {
      for (let i = 0; i < n; i++) w.send(Float64Array.of(i), 0, 1 + (i % 2));
      for (let i = 0; i < 100; i++) w.send(Float64Array.of(n + i), 0, 7 + (i % 3));
      return null;
    }
    if (w.rank !== 0) return null;
    const b = new Float64Array(1);
    for (let i = 1; i < n; i += 2) { w.recv(b, 1, 2); assert.equal(b[0], i); }
    for (let i = 0; i < n; i += 2) { w.recv(b, 1, 1); assert.equal(b[0], i); }
    for (let i = 0; i < 100; i++) {
      const st = w.recv(b, 1, ANY_TAG);
      assert.equal(b[0], n + i);
      assert.equal(st.tag, 7 + (i % 3));
    }
    return 'ordered';
  },

  credit(w, args) {
    // Run with NBC_EAGER_CREDIT_KB=4: rank 1 holds 4096 bytes of eager credit toward rank 0,
    // 12 messages of 64 bytes (64 + EAGER_MESSAGE_COST each). Twice, rank 1 isends 100 of
    // them while rank 0 receives none (it waits in a barrier): the first 12 go eagerly, the
    // other 88 by rendezvous, and stay pending. Rank 0 then receives all, which gives the
    // credit back (in batches, before its barrier messages on the same path), so the second
    // round spends as much again: the credit came back, and nothing was lost. (The barriers'
    // own eager messages spend 256 bytes each too, owed back only once a batch has gathered:
    // the second round may find one message's worth less.)
    const n = 100;
    const expect = Number(args[1]);
    const rounds: number[] = [];
    for (let round = 0; round < 2; round++) {
      if (w.rank === 1) {
        const before = w.stats().host.creditRendezvous;
        const reqs: Request[] = [];
        for (let i = 0; i < n; i++) reqs.push(w.isend(new Int32Array(16).fill(round * n + i), 0, 5));
        rounds.push(w.stats().host.creditRendezvous - before);
        w.barrier();
        waitAll(reqs);
      } else if (w.rank === 0) {
        w.barrier();
        const b = new Int32Array(16);
        for (let i = 0; i < n; i++) {
          w.recv(b, 1, 5);
          assert.ok(b.every((x) => x === round * n + i), `round ${round}: message ${i} holds ${b[0]}`);
        }
      } else {
        w.barrier();
      }
      w.barrier();
    }
    if (w.rank === 1) {
      assert.equal(rounds[0], expect, 'sends by rendezvous for want of credit, first round');
      assert.ok(rounds[1] === expect || rounds[1] === expect + 1, `second round: ${rounds[1]} sends by rendezvous, expected ${expect} (+1): the credit did not come back`);
    }
    return rounds;
  },

  truncate(w, args) {
    const bytes = Number(args[1] ?? 16);
    if (w.rank === 1) {
      w.send(new Uint8Array(bytes), 0, 3);
      w.send(Uint8Array.of(1, 2, 3), 0, 4); // the link still works afterwards
      return null;
    }
    if (w.rank !== 0) return null;
    let code = 'none';
    try {
      w.recv(new Uint8Array(bytes - 1), 1, 3);
    } catch (err) {
      assert.ok(err instanceof NbcError);
      code = err.code;
      assert.match(err.message, new RegExp(`${bytes}-byte message`));
    }
    const after = new Uint8Array(3);
    w.recv(after, 1, 4);
    assert.deepEqual([...after], [1, 2, 3]);
    return code;
  },

  dtypes(w) {
    const makers: Array<[string, () => TypedArray]> = [
      ['Int8Array', () => Int8Array.from({ length: 37 }, (_, i) => (i * 5) - 90)],
      ['Uint8Array', () => Uint8Array.from({ length: 37 }, (_, i) => i * 7)],
      ['Uint8ClampedArray', () => Uint8ClampedArray.from({ length: 37 }, (_, i) => i * 6)],
      ['Int16Array', () => Int16Array.from({ length: 37 }, (_, i) => i * 1000 - 20000)],
      ['Uint16Array', () => Uint16Array.from({ length: 37 }, (_, i) => i * 1700)],
      ['Int32Array', () => Int32Array.from({ length: 37 }, (_, i) => i * 99991 - 2e9)],
      ['Uint32Array', () => Uint32Array.from({ length: 37 }, (_, i) => i * 100000007)],
      ['Float32Array', () => Float32Array.from({ length: 37 }, (_, i) => i / 3 - 5)],
      ['Float64Array', () => Float64Array.from({ length: 37 }, (_, i) => Math.PI * i - 1e300)],
      ['BigInt64Array', () => BigInt64Array.from({ length: 37 }, (_, i) => BigInt(i) * 123456789012345n - 9n ** 19n)],
      ['BigUint64Array', () => BigUint64Array.from({ length: 37 }, (_, i) => BigInt(i) * 498765432109876543n)],
      ['Buffer', () => Buffer.from('nbcoll moves every typed array intact')],
    ];
    const peer = w.size - 1 - w.rank;
    for (const [name, make] of makers) {
      const out = make();
      const inb = new (out.constructor as new (n: number) => TypedArray)(out.length);
      const r = w.irecv(inb, peer, 1);
      w.send(out, peer, 1);
      const st = r.wait();
      assert.equal(st.count, out.length, `${name} count`);
      assert.deepEqual(inb, out, `${name} content`);
      // registered memory too
      const reg = w.alloc(out.constructor as Float64ArrayConstructor, out.length) as unknown as TypedArray;
      const r2 = w.irecv(reg, peer, 2);
      w.send(out, peer, 2);
      r2.wait();
      assert.deepEqual(Array.from(reg as ArrayLike<unknown>), Array.from(out as ArrayLike<unknown>), `${name} into registered memory`);
    }
    return makers.length;
  },

  big(w, args) {
    // One 64 MiB message each way between rank 0 and the last rank, from plain and from
    // registered memory, checked with a position-dependent pattern.
    const bytes = Number(args[1] ?? 64 * 1024 * 1024);
    const peer = w.rank === 0 ? w.size - 1 : 0;
    if (w.rank !== 0 && w.rank !== w.size - 1) return null;
    const pattern = (a: Float64Array, seed: number): Float64Array => {
      for (let i = 0; i < a.length; i++) a[i] = seed * 1e9 + i;
      return a;
    };
    const n = bytes / 8;
    for (const registered of [false, true]) {
      const out = registered ? w.alloc(Float64Array, n) : new Float64Array(n);
      pattern(out, w.rank + (registered ? 10 : 0));
      const inb = new Float64Array(n);
      const r = w.irecv(inb, peer, 64);
      w.send(out, peer, 64);
      const st = r.wait();
      assert.equal(st.bytes, bytes);
      const seed = peer + (registered ? 10 : 0);
      for (let i = 0; i < n; i += 4099) assert.equal(inb[i], seed * 1e9 + i);
      assert.equal(inb[n - 1], seed * 1e9 + n - 1);
      if (registered) w.freeMem(out);
    }
    return bytes;
  },

  many(w) {
    // 10,000 outstanding requests on each side between rank 0 and rank 1.
    const n = 10_000;
    if (w.rank > 1) return null;
    const peer = 1 - w.rank;
    const inb = new Int32Array(n);
    const reqs: Request[] = [];
    for (let i = 0; i < n; i++) reqs.push(w.irecv(inb.subarray(i, i + 1), peer, i % 17));
    for (let i = 0; i < n; i++) reqs.push(w.isend(Int32Array.of(i * 3 + w.rank), peer, i % 17));
    waitAll(reqs);
    for (let i = 0; i < n; i++) assert.equal(inb[i], i * 3 + peer);
    return reqs.length;
  },

  isolation(w) {
    // The same (source, tag) on world, a dup and a split must never cross.
    const dup = w.dup();
    const half = w.split(w.rank % 2, -w.rank)!;
    assert.equal(half.size, Math.ceil((w.size - (w.rank % 2)) / 2));
    // split orders by key (here descending world rank)
    const members = [];
    for (let r = 0; r < w.size; r++) if (r % 2 === w.rank % 2) members.push(r);
    members.reverse();
    assert.equal(half.rank, members.indexOf(w.rank));
    const right = (w.rank + 1) % w.size;
    const left = (w.rank - 1 + w.size) % w.size;
    const a = new Int32Array(1);
    const b = new Int32Array(1);
    // Receive on dup first, world second, while the sender sent on world first.
    const rd = dup.irecv(b, left, 1);
    const rw = w.irecv(a, left, 1);
    w.send(Int32Array.of(1000 + w.rank), right, 1);
    dup.send(Int32Array.of(2000 + w.rank), right, 1);
    rd.wait();
    rw.wait();
    assert.equal(a[0], 1000 + left);
    assert.equal(b[0], 2000 + left);
    // split: ring inside each half
    const hr = (half.rank + 1) % half.size;
    const hl = (half.rank - 1 + half.size) % half.size;
    const c = new Int32Array(1);
    const rh = half.irecv(c, hl, 1);
    half.send(Int32Array.of(3000 + w.rank), hr, 1);
    rh.wait();
    assert.equal(c[0], 3000 + members[hl]!);
    const shared = w.splitShared();
    const dupOfDup = dup.dup();
    assert.equal(dupOfDup.size, w.size);
    const ctxs = new Set([w.ctx, dup.ctx, half.ctx, shared.ctx, dupOfDup.ctx]);
    assert.equal(ctxs.size, 5, 'every communicator has its own context');
    dupOfDup.free();
    return { half: half.size, shared: shared.size };
  },

  cart(w) {
    // 2-D periodic grid: each rank sends its coords to its +1 neighbour in each dimension and
    // checks it hears from its -1 neighbour.
    const dims = [0, 0];
    const cart = w.cartCreate(dimsCreateLocal(w.size), [true, false])!;
    void dims;
    const out: Record<string, unknown> = {};
    for (let d = 0; d < 2; d++) {
      const { source, dest } = cart.shift(d, 1);
      const got = Int32Array.of(-9, -9);
      const r = cart.irecv(got, source, d);
      cart.send(Int32Array.from(cart.coords()), dest, d);
      const st = r.wait();
      if (source === PROC_NULL) {
        assert.equal(st.source, PROC_NULL);
        assert.deepEqual([...got], [-9, -9]);
      } else {
        assert.deepEqual([...got], cart.coords(source));
        const expect = cart.coords();
        expect[d] = (expect[d]! - 1 + cart.dims[d]!) % cart.dims[d]!;
        assert.equal(cart.rankOf(expect), source);
      }
      out[`dim${d}`] = source;
    }
    return { dims: cart.dims, coords: cart.coords(), ...out };
  },

  async requests(w) {
    // waitAny, testAny, testAll and `await req`, between rank 0 and rank 1.
    if (w.rank > 1) return null;
    const peer = 1 - w.rank;
    const bufs = [new Int32Array(1), new Int32Array(1), new Int32Array(1)];
    const recvs = bufs.map((b, i) => w.irecv(b, peer, 20 + i));
    // The peer sends tag 22 first: waitAny must return index 2 before the others arrive.
    // Rank 1 sends tag 22 first, then waits for a go-ahead (tag 40) before tags 20 and 21,
    // so rank 0's waitAny can only see tag 22 complete.
    if (w.rank === 0) {
      const first = waitAny(recvs);
      assert.equal(first, 2);
      assert.equal(recvs[0]!.done || recvs[1]!.done, false, 'tags 20 and 21 have not been sent yet');
      assert.equal(bufs[2]![0], 12, 'the peer sent 12 on tag 22');
      w.send(Int32Array.of(0), peer, 40);
      w.send(Int32Array.of(10), peer, 20);
      w.send(Int32Array.of(11), peer, 21);
      w.send(Int32Array.of(12), peer, 22);
    } else {
      w.send(Int32Array.of(12), peer, 22);
      w.recv(new Int32Array(1), peer, 40);
      w.send(Int32Array.of(10), peer, 20);
      w.send(Int32Array.of(11), peer, 21);
    }
    if (w.rank === 1) assert.ok(waitAny(recvs) >= 0);
    while (!testAll(recvs)) { /* each call progresses */ }
    assert.deepEqual(bufs.map((b) => b[0]), [10, 11, 12]);
    assert.ok(testAny(recvs) >= 0);
    // await: a request is a PromiseLike that progresses without blocking the thread
    const r = w.irecv(new Float64Array(1), peer, 30);
    w.send(Float64Array.of(3.5), peer, 30);
    const st = await r;
    assert.deepEqual([st.source, st.tag, st.count], [peer, 30, 1]);
    // probe/iprobe see a message without receiving it
    w.send(Uint8Array.of(1, 2, 3, 4, 5), peer, 31);
    const p = w.probe(peer, 31);
    assert.deepEqual([p.source, p.tag, p.bytes], [peer, 31, 5]);
    assert.notEqual(w.iprobe(peer, 31), null);
    w.recv(new Uint8Array(5), peer, 31);
    assert.equal(w.iprobe(peer, 31), null);
    return 'ok';
  },

  groups(w) {
    // create(group): the even ranks get a communicator, the odd ones null; excl/incl compose.
    const evens = w.group().incl(Array.from({ length: Math.ceil(w.size / 2) }, (_, i) => 2 * i));
    const c = w.create(evens);
    if (w.rank % 2 === 1) {
      assert.equal(c, null);
      return null;
    }
    assert.ok(c !== null);
    assert.equal(c.size, evens.size);
    assert.equal(c.rank, w.rank / 2);
    const sum = new Int32Array(1);
    c.allreduce(Int32Array.of(w.rank), sum, 'sum');
    assert.equal(c.group().excl([0]).size, c.size - 1);
    return sum[0];
  },

  errors(w) {
    const b = new Float64Array(1);
    const d = w.dup();
    d.free();
    // periods may be left out: none periodic, as mpi4py's Create_cart.
    const line = w.cartCreate([w.size])!;
    assert.deepEqual([line.periods, line.shift(0, 1).dest], [[false], w.rank === w.size - 1 ? PROC_NULL : w.rank + 1]);
    line.free();
    return errorCodes({
      'rank': () => w.send(b, w.size, 0),
      'negative rank': () => w.isend(b, -5, 0),
      'source': () => w.irecv(b, w.size + 3, 0),
      'tag': () => w.isend(b, 0, -1),
      'float tag': () => w.isend(b, 0, 1.5),
      'buffer': () => w.isend([1, 2, 3] as unknown as Float64Array, 0, 0),
      'dataview': () => w.isend(new DataView(new ArrayBuffer(8)) as unknown as Float64Array, 0, 0),
      'freed comm': () => d.isend(b, 0, 0),
      'free world': () => w.free(),
      'split color': () => w.split(-3),
      'cart too big': () => w.cartCreate([w.size + 1], [false]),
      // Checked collectively: every rank raises, none is left waiting for the others.
      'cart grids disagree': () => w.cartCreate(w.rank === 0 ? [w.size] : [1, w.size]),
      'cart periods disagree': () => w.cartCreate([w.size], [w.rank === 1]),
      'cart invalid on one rank': () => w.cartCreate(w.rank === 0 ? [0] : [w.size]),
      'cart periods not an array': () => w.cartCreate([w.size], true as never),
      'rankOf null': () => w.cartCreate([w.size])!.rankOf(null as never),
    });
  },
};

function dimsCreateLocal(n: number): number[] {
  let a = Math.floor(Math.sqrt(n));
  while (n % a !== 0) a--;
  return [n / a, a];
}

export default function main(world: Communicator, args: string[]): unknown {
  const mode = modes[args[0] ?? ''];
  if (mode === undefined) throw new Error(`unknown mode ${args[0]}; expected one of ${Object.keys(modes).join(', ')}`);
  return mode(world, args);
}
