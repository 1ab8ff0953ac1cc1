/**
 * The flag board (coll/flat.ts): the world communicator's blocking barrier and small allreduce
 * on a one-node job, with NBC_FLAT=1 (the board) or 0 (the rings). Argument `bits` returns,
 * per rank:
 *   same      for each case, whether the default allreduce gave the bits of the recursive-doubling
 *             schedule forced by { algorithm } (which never takes the board): random doubles
 *             summed (1, 8 and 128 elements: 1 KiB, the most the board takes), Int32 max, and
 *             2x2 matrix products (not commutative)
 *   sums      how many of 300 Int32 sums, interleaved with barriers, a bcast, an iallreduce, a
 *             ring of messages and a barrier and allreduce on a duplicate, were exact
 *   large     a 2 KiB allreduce (past the board: it arrives there, then runs on the rings): exact
 *   sent      messages this rank sent during 200 barriers and 200 8 B allreduces
 *   sentBy    the same for 50 of each on more communicators: all ranks in reverse order
 *             (split), three duplicates of the world, and a half (split by parity)
 *   reversedSame  whether the reversed communicator's allreduce gave the forced schedule's bits
 * Argument `mismatch` (board on) returns each disagreement's error code, then the sum of an
 * allreduce after it:
 *   count     rank 0 passes 2 doubles, the others 1
 *   large     rank 0 passes 2048 doubles (its call runs on the rings), the others 1
 *   kind      rank 0 calls barrier, the others allreduce
 *   type      rank 0 passes 2 floats, the others 1 double (8 bytes each)
 */
import type { Communicator, OpLike } from 'nbcoll';
import { matmul, mulberry32, outcome } from './common.ts';

const hex = (a: ArrayBufferView): string => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex');

function bits(w: Communicator): Record<string, unknown> {
  const rnd = mulberry32(1000 + w.rank);
  const same: Record<string, boolean> = {};
  const cases: Array<[string, () => ArrayBufferView, OpLike]> = [
    ['sum f64 x1', () => Float64Array.from({ length: 1 }, () => (rnd() - 0.5) * 1e6), 'sum'],
    ['sum f64 x8', () => Float64Array.from({ length: 8 }, () => (rnd() - 0.5) * 1e6), 'sum'],
    ['sum f64 x128', () => Float64Array.from({ length: 128 }, () => (rnd() - 0.5) * 1e6), 'sum'],
    ['max i32 x4', () => Int32Array.from({ length: 4 }, () => Math.floor(rnd() * 2e9) - 1e9), 'max'],
    ['matmul x2', () => Float64Array.from({ length: 8 }, () => rnd() * 2 - 1), matmul],
  ];
  for (const [name, make, op] of cases) {
    let ok = true;
    for (let i = 0; i < 20; i++) {
      const x = make() as Float64Array;
      const a = new (x.constructor as Float64ArrayConstructor)(x.length);
      const b = new (x.constructor as Float64ArrayConstructor)(x.length);
      w.allreduce(x, a, op);
      w.allreduce(x, b, op, { algorithm: 'recursive-doubling' });
      if (hex(a) !== hex(b)) ok = false;
    }
    same[name] = ok;
  }
  // Types alternating call by call: the board's typed view of its scratch follows each call.
  let alternating = true;
  for (let i = 0; i < 20; i++) {
    const x = i % 2 === 0 ? Float64Array.of((rnd() - 0.5) * 1e6, rnd()) : Int32Array.of(Math.floor(rnd() * 2e9) - 1e9, w.rank);
    const a = new (x.constructor as Float64ArrayConstructor)(2);
    const b = new (x.constructor as Float64ArrayConstructor)(2);
    const op = i % 2 === 0 ? 'sum' : 'max';
    w.allreduce(x, a, op);
    w.allreduce(x, b, op, { algorithm: 'recursive-doubling' });
    if (hex(a) !== hex(b)) alternating = false;
  }
  same['f64 and i32 alternating'] = alternating;
  // Interleaved with other traffic: the board's calls keep their order among the rest.
  const dup = w.dup();
  const right = (w.rank + 1) % w.size;
  const left = (w.rank - 1 + w.size) % w.size;
  const x = new Int32Array(1);
  const y = new Int32Array(1);
  const total = (w.size * (w.size + 1)) / 2;
  let sums = 0;
  for (let i = 0; i < 300; i++) {
    x[0] = (w.rank + 1) * (i + 1);
    if (i % 3 === 0) w.barrier();
    if (i % 5 === 0) {
      const v = Int32Array.of(w.rank === i % w.size ? i : -1);
      w.bcast(v, i % w.size);
      if (v[0] !== i) throw new Error(`bcast ${i} gave ${v[0]}`);
    }
    const req = i % 7 === 0 ? w.iallreduce(Int32Array.of(1), new Int32Array(1), 'sum') : null;
    if (i % 11 === 0) w.sendrecv(Int32Array.of(w.rank), right, 9, new Int32Array(1), left, 9);
    if (i % 13 === 0) {
      dup.barrier();
      dup.allreduce(x, new Int32Array(1), 'sum');
    }
    w.allreduce(x, y, 'sum');
    req?.wait();
    if (y[0] === total * (i + 1)) sums++;
  }
  dup.free();
  const big = new Float64Array(256).map((_, k) => w.rank + k);
  const bigSum = new Float64Array(256);
  w.allreduce(big, bigSum, 'sum');
  const large = bigSum.every((v, k) => v === total - w.size + w.size * k);
  const before = w.stats().host.messagesSent;
  const one = new Float64Array(1);
  for (let i = 0; i < 200; i++) {
    w.barrier();
    w.allreduce(one, one.slice(), 'sum');
  }
  const sent = w.stats().host.messagesSent - before;
  // More communicators of every rank: the node's boards (4) go to the first ones created, the
  // world and `dup` above included; a split into halves has none.
  const reversed = w.split(0, w.size - w.rank)!;
  const extra = [w.dup(), w.dup(), w.dup()];
  const half = w.split(w.rank % 2, w.rank)!;
  const sentOn = (c: typeof w): number => {
    const at = c.stats().host.messagesSent;
    for (let i = 0; i < 50; i++) {
      c.barrier();
      c.allreduce(one, one.slice(), 'sum');
    }
    return c.stats().host.messagesSent - at;
  };
  const sentBy = { reversed: sentOn(reversed), extra: extra.map(sentOn), half: sentOn(half), halfSize: half.size };
  let reversedSame = true;
  for (let i = 0; i < 20; i++) {
    const v = Float64Array.from({ length: 3 }, () => (rnd() - 0.5) * 1e6);
    const a = new Float64Array(3);
    const b = new Float64Array(3);
    reversed.allreduce(v, a, 'sum');
    reversed.allreduce(v, b, 'sum', { algorithm: 'recursive-doubling' });
    if (hex(a) !== hex(b)) reversedSame = false;
  }
  for (const c of [reversed, ...extra, half]) c.free();
  return { same, sums, large, sent, sentBy, reversedSame };
}

function mismatch(w: Communicator): Record<string, unknown> {
  const out: Record<string, string | number> = {};
  const after = (name: string): void => {
    const s = new Float64Array(1);
    w.allreduce(Float64Array.of(w.rank + 1), s, 'sum');
    out[`${name} after`] = s[0]!;
  };
  const code = (fn: () => void): string => outcome(fn).split(':')[0]!;
  const zero = w.rank === 0;
  out.count = code(() => w.allreduce(new Float64Array(zero ? 2 : 1), new Float64Array(zero ? 2 : 1), 'sum'));
  after('count');
  out.large = code(() => w.allreduce(new Float64Array(zero ? 2048 : 1), new Float64Array(zero ? 2048 : 1), 'sum'));
  after('large');
  out.kind = code(() => (zero ? w.barrier() : w.allreduce(new Float64Array(1), new Float64Array(1), 'sum')));
  after('kind');
  out.type = code(() => (zero
    ? w.allreduce(new Float32Array(2), new Float32Array(2), 'sum')
    : w.allreduce(new Float64Array(1), new Float64Array(1), 'sum')));
  after('type');
  return out;
}

export default function flatBoard(w: Communicator, args: string[]): Record<string, unknown> {
  return args[0] === 'mismatch' ? mismatch(w) : bits(w);
}
