/**
 * Collective property checks, run on every rank of a job. Every rank generates every rank's
 * inputs (deterministic in rank, index and case), so each can compute the expected result
 * with the sequential reference (nbcoll/testing) and compare. Inputs are small integers, so
 * every algorithm's fold order must give the reference's exact result, floats included.
 *
 * Modes (args[0]):
 *   props [filter]   every collective x algorithm x root x dtype/op x in-place variant
 *   scrambled        many outstanding collectives on world, dup and split, completed in
 *                    a different order on different ranks
 *   persistent N     one persistent allreduce restarted N times with fresh data
 *   persistentall E  persistent collectives (executor E) in waitAll, testAll, waitAny and
 *                    testAny beside plain requests; inactive ones count as complete
 *   determinism      allreduce of random floats: every rank holds the same bits, run after run
 *   badinput         invalid calls raise their NbcError code before any message is sent
 *   reuse            a remembered plan started again while earlier starts still run
 *   lean             the lean blocking paths' receives: early, behind a user message, counts
 *                    that disagree (2 ranks)
 *   aggnb            the agg executor's non-blocking and persistent forms, several in flight
 *   aggbits          random floats summed by the fabric: a digest of the result's bits
 *   aggwire N        N agg allreduces, each timed from its call to its return: the shortest,
 *                    and how many the fabric reduced (under an emulated link)
 *   aggfault         agg allreduce in a loop until the fabric fails under it, then a dup'ed
 *                    communicator recovers
 *   lent             reductions over comm.alloc buffers past the eager limit (sent from in
 *                    place, then folded privately) give the bits of the same calls on plain
 *                    arrays and the reference's result
 */
import assert from 'node:assert/strict';
import {
  ALGORITHMS, ANY_SOURCE, ANY_TAG, IN_PLACE, NbcError, Op, UNDEFINED, dimsCreate, testAll, testAny, waitAll, waitAny,
  type AnyRequest, type Communicator, type OpLike, type TypedArray,
} from 'nbcoll';
import { DType, ctorOf, dtypeOf, isBigInt, referenceReduce } from 'nbcoll/testing';
import { errorCodes, matmul } from './common.ts';

type DT = (typeof DType)[keyof typeof DType];
type OpSpec = { name: string; op: OpLike; item: number; commutative: boolean };


const COMBOS: Array<[DT, OpSpec]> = [
  [DType.Float64, { name: 'sum', op: 'sum', item: 1, commutative: true }],
  [DType.Int32, { name: 'prod', op: 'prod', item: 1, commutative: true }],
  [DType.Float64, { name: 'matmul', op: matmul, item: 4, commutative: false }],
  [DType.Uint8, { name: 'max', op: 'max', item: 1, commutative: true }],
  [DType.Int16, { name: 'min', op: 'min', item: 1, commutative: true }],
  [DType.Float32, { name: 'sum', op: 'sum', item: 1, commutative: true }],
  [DType.BigInt64, { name: 'sum', op: 'sum', item: 1, commutative: true }],
  [DType.Float64, { name: 'minloc', op: 'minloc', item: 2, commutative: true }],
  [DType.BigUint64, { name: 'band', op: 'band', item: 1, commutative: true }],
  [DType.Int8, { name: 'bxor', op: 'bxor', item: 1, commutative: true }],
  [DType.Int32, { name: 'maxloc', op: 'maxloc', item: 2, commutative: true }],
  [DType.Uint16, { name: 'lor', op: 'lor', item: 1, commutative: true }],
  [DType.Uint32, { name: 'land', op: 'land', item: 1, commutative: true }],
  [DType.Int32, { name: 'lxor', op: 'lxor', item: 1, commutative: true }],
  [DType.Uint8Clamped, { name: 'sum', op: 'sum', item: 1, commutative: true }],
  [DType.Int32, { name: 'bor', op: 'bor', item: 1, commutative: true }],
  [DType.Float64, { name: 'prod', op: 'prod', item: 1, commutative: true }],
];

/** Input element i of `rank` for case `salt`: small integers so every fold order is exact. */
function gen(dt: DT, op: string, rank: number, n: number, salt: number): TypedArray {
  const a = new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
  const unsigned = dt === DType.Uint8 || dt === DType.Uint16 || dt === DType.Uint32 || dt === DType.BigUint64 || dt === DType.Uint8Clamped;
  for (let i = 0; i < n; i++) {
    const h = (rank * 7919 + i * 104729 + salt * 31) % 1009;
    let v: number;
    if (op === 'prod' || op === 'matmul') v = (h % 4) - 1; // -1..2
    else if (op === 'minloc' || op === 'maxloc') v = i % 2 === 1 ? rank : (h % 5) - 2; // (value, index) pairs
    else if (op === 'sum') v = (h % 21) - 10;
    else v = (h % 9) - 4;
    if (unsigned) v = Math.abs(v) + (op === 'minloc' || op === 'maxloc' ? 0 : (h % 3));
    (a as unknown as Array<number | bigint>)[i] = isBigInt(dt) ? BigInt(v) : v;
  }
  return a;
}

function eq(what: string, got: ArrayLike<unknown>, want: ArrayLike<unknown>): void {
  if (got.length !== want.length) assert.fail(`${what}: length ${got.length}, expected ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) {
      assert.fail(`${what}: element ${i} is ${String(got[i])}, expected ${String(want[i])} (got [${Array.from(got).slice(0, 12).join(', ')}], want [${Array.from(want).slice(0, 12).join(', ')}])`);
    }
  }
}

const like = (a: TypedArray, n = a.length): TypedArray => new (a.constructor as new (n: number) => TypedArray)(n);
const poison = (a: TypedArray): TypedArray => {
  (a as unknown as { fill(v: unknown): void }).fill(isBigInt(dtypeOf(a)) ? 77n : 77);
  return a;
};

type AlgorithmRow = { commutativeOnly?: boolean; executors?: readonly string[] };
const table = ALGORITHMS as Record<string, Record<string, AlgorithmRow>>;

/**
 * Every algorithm of a collective that `executor` runs, forced one by one with degree variants,
 * and undefined: the selection table's choice (and the lean blocking paths).
 */
function algorithms(coll: string, executor = 'host'): Array<string | undefined> {
  const names = Object.keys(table[coll]!).filter((n) => table[coll]![n]!.executors?.includes(executor) ?? true);
  const out: Array<string | undefined> = [undefined];
  for (const n of names) {
    if (n === 'knomial' || n === 'reduce-scatterv') out.push(`${n}:2`, `${n}:3`, `${n}:8`);
    else if (n === 'dissemination') out.push('dissemination:1', 'dissemination:2', 'dissemination:3');
    else out.push(n);
  }
  return out;
}

/** Whether an algorithm of any collective is only for commutative ops (from the exported table). */
const commutativeOnly = (alg: string): boolean => Object.values(table).some((algs) => algs[alg]?.commutativeOnly === true);

/**
 * What the aggregation fabric reduces (issue 13, SwitchIB-2's set): every predefined op but
 * prod, on 32- and 64-bit integers and floats. Stated here independently of the library.
 */
const FABRIC_DTYPES: readonly DT[] = [DType.Int32, DType.Uint32, DType.Float32, DType.Float64, DType.BigInt64, DType.BigUint64];
const fabricTakes = (dt: DT, o: OpSpec): boolean => typeof o.op === 'string' && o.op !== 'prod' && FABRIC_DTYPES.includes(dt);

type Executor = 'host' | 'offload' | 'agg';

function props(w: Communicator, filter: string | undefined, executor: Executor = 'host'): number {
  const ex = { executor };
  const p = w.size;
  const roots = p <= 9 ? Array.from({ length: p }, (_, i) => i) : [0, 5, p - 1];
  const counts = [0, 1, 3, 8, 33];
  let checks = 0;
  let salt = 0;
  const want = (coll: string): boolean => filter === undefined || filter.split(',').includes(coll);
  // User ops run only in the thread that created them: the offload executor refuses them.
  const usable = COMBOS.filter(([, o]) => executor !== 'offload' || typeof o.op === 'string');
  // The fabric's own algorithm takes only what it reduces (other calls on agg select a host one).
  const combosFor = (alg: string | undefined): Array<[DT, OpSpec]> =>
    usable.filter(([dt, o]) => (o.commutative || alg === undefined || !commutativeOnly(alg.split(':')[0]!)) &&
      (alg !== 'agg' || fabricTakes(dt, o)));

  // -- barrier
  if (want('barrier')) for (const alg of algorithms('barrier', executor)) { w.barrier({ algorithm: alg, ...ex }); checks++; }

  // -- bcast
  if (want('bcast')) for (const alg of algorithms('bcast', executor)) for (const root of roots) {
    for (const dt of [DType.Float64, DType.Int8, DType.BigUint64]) {
      const n = counts[++salt % counts.length]! * 3;
      const ref = gen(dt, 'x', root, n, salt);
      const buf = w.rank === root ? gen(dt, 'x', root, n, salt) : poison(like(ref));
      w.bcast(buf, root, { algorithm: alg, ...ex });
      eq(`bcast/${alg} root ${root} ${n} elements`, buf, ref);
      checks++;
    }
  }

  // -- reduce and allreduce
  for (const coll of ['reduce', 'allreduce'] as const) {
    if (!want(coll)) continue;
    for (const alg of algorithms(coll, executor)) {
      for (const root of coll === 'reduce' ? roots : [0]) {
        const combos = combosFor(alg);
        for (let c = 0; c < 3; c++) {
          const [dt, o] = combos[(++salt) % combos.length]!;
          const n = counts[salt % counts.length]! * o.item * (salt % 4 === 0 ? 40 : 1);
          const all = Array.from({ length: p }, (_, r) => gen(dt, o.name, r, n, salt));
          const ref = referenceReduce(o.op as never, dt, all);
          const inPlace = salt % 3 === 0;
          const mine = gen(dt, o.name, w.rank, n, salt);
          const what = `${coll}/${alg} ${o.name}/${dt} root ${root} n ${n}${inPlace ? ' in place' : ''}`;
          if (coll === 'allreduce') {
            if (inPlace) {
              w.allreduce(IN_PLACE, mine, o.op, { algorithm: alg, ...ex });
              eq(what, mine, ref);
            } else {
              const out = poison(like(mine));
              w.allreduce(mine, out, o.op, { algorithm: alg, ...ex });
              eq(what, out, ref);
              eq(`${what} (send untouched)`, mine, all[w.rank]!);
            }
          } else if (w.rank === root) {
            if (inPlace) {
              w.reduce(IN_PLACE, mine, o.op, root, { algorithm: alg, ...ex });
              eq(what, mine, ref);
            } else {
              const out = poison(like(mine));
              w.reduce(mine, out, o.op, root, { algorithm: alg, ...ex });
              eq(what, out, ref);
            }
          } else {
            w.reduce(mine, null, o.op, root, { algorithm: alg, ...ex });
          }
          checks++;
        }
      }
    }
  }

  // -- gather, scatter, allgather, alltoall (and v-variants)
  const dts = [DType.Float64, DType.Int32, DType.Uint8, DType.BigInt64];
  if (want('gather')) for (const alg of algorithms('gather', executor)) for (const root of roots) {
    const dt = dts[++salt % dts.length]!;
    const n = counts[salt % counts.length]!;
    const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, n, salt));
    const inPlace = salt % 2 === 0;
    const what = `gather/${alg} root ${root} n ${n}${inPlace ? ' in place' : ''}`;
    if (w.rank === root) {
      const out = poison(like(blocks[0]!, n * p));
      if (inPlace) {
        (out as Float64Array).set(blocks[root] as Float64Array, root * n);
        w.gather(IN_PLACE, out, root, { algorithm: alg, ...ex });
      } else {
        w.gather(blocks[w.rank]!, out, root, { algorithm: alg, ...ex });
      }
      for (let r = 0; r < p; r++) eq(`${what} block ${r}`, out.subarray(r * n, (r + 1) * n), blocks[r]!);
    } else {
      w.gather(blocks[w.rank]!, null, root, { algorithm: alg, ...ex });
    }
    checks++;
  }
  if (want('scatter')) for (const alg of algorithms('scatter', executor)) for (const root of roots) {
    const dt = dts[++salt % dts.length]!;
    const n = counts[salt % counts.length]!;
    const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, n, salt));
    const full = like(blocks[0]!, n * p);
    blocks.forEach((b, r) => (full as Float64Array).set(b as Float64Array, r * n));
    const inPlace = salt % 2 === 0;
    const what = `scatter/${alg} root ${root} n ${n}${inPlace ? ' in place' : ''}`;
    if (w.rank === root && inPlace) {
      w.scatter(full, IN_PLACE, root, { algorithm: alg, ...ex });
      eq(what, full.subarray(root * n, (root + 1) * n), blocks[root]!);
    } else {
      const out = poison(like(blocks[0]!));
      w.scatter(w.rank === root ? full : null, out, root, { algorithm: alg, ...ex });
      eq(what, out, blocks[w.rank]!);
    }
    checks++;
  }
  if (want('gatherv') || want('scatterv')) for (const root of roots) {
    const dt = dts[++salt % dts.length]!;
    const cnt = Array.from({ length: p }, (_, r) => (r * 3 + salt) % 4);
    const dsp: number[] = [];
    let at = 0;
    for (let r = 0; r < p; r++) { dsp.push(at + 1); at += cnt[r]! + 1; }
    const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, cnt[r]!, salt));
    if (want('gatherv')) {
      const out = w.rank === root ? poison(like(blocks[0]!, at)) : null;
      w.gatherv(blocks[w.rank]!, out, cnt, dsp, root, ex);
      if (out) for (let r = 0; r < p; r++) eq(`gatherv root ${root} block ${r}`, out.subarray(dsp[r]!, dsp[r]! + cnt[r]!), blocks[r]!);
      checks++;
    }
    if (want('scatterv')) {
      const full = poison(like(blocks[0]!, at));
      blocks.forEach((b, r) => (full as Float64Array).set(b as Float64Array, dsp[r]!));
      const out = poison(like(blocks[0]!, cnt[w.rank]!));
      w.scatterv(w.rank === root ? full : null, cnt, dsp, out, root, ex);
      eq(`scatterv root ${root}`, out, blocks[w.rank]!);
      checks++;
    }
  }
  if (want('allgather')) for (const alg of algorithms('allgather', executor)) for (let k = 0; k < 4; k++) {
    const dt = dts[++salt % dts.length]!;
    const n = counts[salt % counts.length]!;
    const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, n, salt));
    const out = poison(like(blocks[0]!, n * p));
    const inPlace = k % 2 === 1;
    if (inPlace) {
      (out as Float64Array).set(blocks[w.rank] as Float64Array, w.rank * n);
      w.allgather(IN_PLACE, out, { algorithm: alg, ...ex });
    } else {
      w.allgather(blocks[w.rank]!, out, { algorithm: alg, ...ex });
    }
    for (let r = 0; r < p; r++) eq(`allgather/${alg} n ${n}${inPlace ? ' in place' : ''} block ${r}`, out.subarray(r * n, (r + 1) * n), blocks[r]!);
    checks++;
  }
  if (want('allgatherv')) for (let k = 0; k < 3; k++) {
    const dt = dts[++salt % dts.length]!;
    const cnt = Array.from({ length: p }, (_, r) => (r + salt) % 3);
    const dsp: number[] = [];
    let at = 0;
    for (let r = 0; r < p; r++) { dsp.push(at); at += cnt[r]! + (r % 2); }
    const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, cnt[r]!, salt));
    const out = poison(like(blocks[0]!, at));
    w.allgatherv(blocks[w.rank]!, out, cnt, dsp, ex);
    for (let r = 0; r < p; r++) eq(`allgatherv block ${r}`, out.subarray(dsp[r]!, dsp[r]! + cnt[r]!), blocks[r]!);
    checks++;
  }
  if (want('alltoall')) for (const alg of algorithms('alltoall', executor)) for (let k = 0; k < 4; k++) {
    const dt = dts[++salt % dts.length]!;
    const n = counts[salt % counts.length]!;
    // rank r's block j: gen(r*p + j)
    const block = (r: number, j: number): TypedArray => gen(dt, 'x', r * p + j, n, salt);
    const send = like(block(0, 0), n * p);
    for (let j = 0; j < p; j++) (send as Float64Array).set(block(w.rank, j) as Float64Array, j * n);
    const inPlace = k === 3;
    let out: TypedArray;
    if (inPlace) {
      out = send;
      w.alltoall(IN_PLACE, out, { algorithm: alg, ...ex });
    } else {
      out = poison(like(send));
      w.alltoall(send, out, { algorithm: alg, ...ex });
    }
    for (let i = 0; i < p; i++) eq(`alltoall/${alg} n ${n}${inPlace ? ' in place' : ''} block ${i}`, out.subarray(i * n, (i + 1) * n), block(i, w.rank));
    checks++;
  }
  if (want('alltoallv')) for (let k = 0; k < 3; k++) {
    const dt = dts[++salt % dts.length]!;
    const c = (from: number, to: number): number => (from + 2 * to + salt) % 3;
    const block = (from: number, to: number): TypedArray => gen(dt, 'x', from * p + to, c(from, to), salt);
    const sc = Array.from({ length: p }, (_, j) => c(w.rank, j));
    const rc = Array.from({ length: p }, (_, i) => c(i, w.rank));
    const sd: number[] = [];
    const rd: number[] = [];
    let sa = 0;
    let ra = 0;
    for (let j = 0; j < p; j++) { sd.push(sa); sa += sc[j]!; rd.push(ra + 1); ra += rc[j]! + 1; }
    const send = like(block(0, 0), sa);
    for (let j = 0; j < p; j++) (send as Float64Array).set(block(w.rank, j) as Float64Array, sd[j]!);
    const out = poison(like(send, ra + 1));
    w.alltoallv(send, sc, sd, out, rc, rd, ex);
    for (let i = 0; i < p; i++) eq(`alltoallv from ${i}`, out.subarray(rd[i]!, rd[i]! + rc[i]!), block(i, w.rank));
    checks++;
  }

  // -- reduce-scatter, scan, exscan
  for (const coll of ['reduceScatterBlock', 'reduceScatter'] as const) {
    if (!want(coll)) continue;
    for (const alg of algorithms(coll, executor)) for (let k = 0; k < 4; k++) {
      const combos = combosFor(alg);
      const [dt, o] = combos[(++salt) % combos.length]!;
      const cnt = Array.from({ length: p }, (_, r) => (coll === 'reduceScatterBlock' ? counts[salt % counts.length]! : (r + salt) % 3) * o.item);
      const total = cnt.reduce((a, b) => a + b, 0);
      const all = Array.from({ length: p }, (_, r) => gen(dt, o.name, r, total, salt));
      const ref = referenceReduce(o.op as never, dt, all);
      const start = cnt.slice(0, w.rank).reduce((a, b) => a + b, 0);
      const out = poison(like(all[0]!, cnt[w.rank]!));
      const mine = gen(dt, o.name, w.rank, total, salt);
      if (coll === 'reduceScatterBlock') w.reduceScatterBlock(mine, out, o.op, { algorithm: alg, ...ex });
      else w.reduceScatter(mine, out, cnt, o.op, { algorithm: alg, ...ex });
      eq(`${coll}/${alg} ${o.name}/${dt} counts [${cnt.join(',')}]`, out, ref.subarray(start, start + cnt[w.rank]!));
      checks++;
    }
  }
  for (const coll of ['scan', 'exscan'] as const) {
    if (!want(coll)) continue;
    for (let k = 0; k < usable.length; k++) {
      const [dt, o] = usable[k]!;
      const n = counts[(++salt) % counts.length]! * o.item;
      const all = Array.from({ length: p }, (_, r) => gen(dt, o.name, r, n, salt));
      const inPlace = k % 3 === 2;
      const mine = gen(dt, o.name, w.rank, n, salt);
      const out = inPlace ? mine : poison(like(mine));
      const before = Array.from(out as ArrayLike<unknown>);
      if (coll === 'scan') w.scan(inPlace ? IN_PLACE : mine, out, o.op, ex);
      else w.exscan(inPlace ? IN_PLACE : mine, out, o.op, ex);
      const upto = coll === 'scan' ? w.rank + 1 : w.rank;
      const what = `${coll} ${o.name}/${dt} n ${n}${inPlace ? ' in place' : ''}`;
      if (upto === 0) eq(`${what} (rank 0 untouched)`, out, before);
      else eq(what, out, referenceReduce(o.op as never, dt, all.slice(0, upto)));
      checks++;
    }
  }

  // -- neighbour collectives on Cartesian grids (2-D periodic x non-periodic, 1-D periodic)
  if (want('neighbor')) {
    for (const [dims, periods] of [[dimsCreate(p, 2), [true, false]], [[p], [true]], [dimsCreate(p, 2), [true, true]]] as Array<[number[], boolean[]]>) {
      const cart = w.cartCreate(dims, periods)!;
      const slots: number[] = [];
      for (let d = 0; d < dims.length; d++) {
        const { source, dest } = cart.shift(d, 1);
        slots.push(source, dest);
      }
      const m = slots.length;
      const n = 2 + (salt++ % 3);
      const out = poison(new Float64Array(n * m));
      const fresh = poison(new Float64Array(n * m));
      cart.neighborAllgather(gen(DType.Float64, 'x', cart.rank, n, salt) as Float64Array, out, ex);
      slots.forEach((nb, i) => eq(`neighborAllgather ${dims.join('x')} slot ${i}`, out.subarray(i * n, (i + 1) * n),
        nb < 0 ? fresh.subarray(0, n) : gen(DType.Float64, 'x', nb, n, salt)));
      // alltoall: rank r's block j is gen(r*m + j); slot i receives neighbour i's block i^1
      const send = new Float64Array(n * m);
      for (let j = 0; j < m; j++) send.set(gen(DType.Float64, 'x', cart.rank * m + j, n, salt) as Float64Array, j * n);
      const out2 = poison(new Float64Array(n * m));
      cart.neighborAlltoall(send, out2, ex);
      slots.forEach((nb, i) => eq(`neighborAlltoall ${dims.join('x')} periods ${periods.join(',')} slot ${i}`, out2.subarray(i * n, (i + 1) * n),
        nb < 0 ? fresh.subarray(0, n) : gen(DType.Float64, 'x', nb * m + (i ^ 1), n, salt)));
      const sc = Array.from({ length: m }, () => n);
      const sd = Array.from({ length: m }, (_, j) => j * n);
      const out3 = poison(new Float64Array(n * m));
      const r = cart.ineighborAlltoallv(send, sc, sd, out3, sc, sd, ex);
      r.wait();
      eq('neighborAlltoallv equals neighborAlltoall', out3, out2);
      checks += 3;
    }
  }
  return checks;
}

function scrambled(w: Communicator, executor: 'host' | 'offload' = 'host'): number {
  const ex = { executor };
  const dup = w.dup();
  const half = w.split(w.rank % 2)!;
  const comms = [w, dup, half, w, dup, half];
  const reqs = [];
  const outs: Float64Array[] = [];
  const expect: number[] = [];
  for (let k = 0; k < 24; k++) {
    const c = comms[k % comms.length]!;
    const n = 1 + (k * 37) % 300;
    const send = new Float64Array(n).fill(c.rank + k);
    const out = new Float64Array(n);
    reqs.push(k % 4 === 3 ? c.ibcast(out.fill(c.rank === 0 ? k : -1), 0, ex) : c.iallreduce(send, out, 'sum', ex));
    outs.push(out);
    expect.push(k % 4 === 3 ? k : (c.size * (c.size - 1)) / 2 + c.size * k);
  }
  // Complete in a rank-dependent order: reversed on odd ranks, rotated on even ones.
  const order = reqs.map((_, i) => i);
  if (w.rank % 2 === 1) order.reverse();
  else order.push(...order.splice(0, w.rank % reqs.length));
  for (const i of order) reqs[i]!.wait();
  outs.forEach((o, k) => eq(`scrambled collective ${k}`, [o[0]], [expect[k]]));
  return reqs.length;
}

/**
 * One remembered plan started again while its earlier starts are still running: ireduce's
 * send buffer may be shared by concurrent calls (it is only read), and a non-root passes no
 * recv, so every call below is the same plan on the non-roots; each start must get buffers
 * of its own (its scratch, its views). Then the same calls again, reusing the idle sets.
 */
function reuse(w: Communicator): number {
  const n = 5;
  const send = Float64Array.from({ length: n }, (_, i) => w.rank * 10 + i);
  const expect = Array.from({ length: n }, (_, i) => 10 * (w.size * (w.size - 1)) / 2 + w.size * i);
  let checks = 0;
  for (let round = 0; round < 3; round++) {
    const outs = [0, 1, 2, 3].map(() => new Float64Array(n));
    // binomial keeps partial sums in scratch; reduce-scatter-gather in a non-root's working recv
    const alg = round === 1 ? 'reduce-scatter-gather' : 'binomial';
    const reqs = outs.map((o) => w.ireduce(send, w.rank === 0 ? o : null, 'sum', 0, { algorithm: alg }));
    for (let k = reqs.length - 1; k >= 0; k--) reqs[k]!.wait();
    if (w.rank === 0) outs.forEach((o, k) => eq(`round ${round} (${alg}), concurrent ireduce ${k}`, Array.from(o), expect));
    const all = new Float64Array(n);
    for (let k = 0; k < 3; k++) {
      w.allreduce(send, all, 'sum', { algorithm: 'recursive-doubling' }); // a fresh options object each time
      eq(`round ${round}, allreduce ${k}`, Array.from(all), expect);
      checks++;
    }
    checks += reqs.length;
  }
  // Calls too large to be remembered (320 KB) plan anew each time, and a non-root's working
  // recv then comes from the executor's pool at every start: concurrent starts must not share it.
  const big = 40_000;
  const bigSend = Float64Array.from({ length: big }, (_, i) => w.rank + i);
  const bigOuts = [0, 1, 2].map(() => new Float64Array(big));
  const bigReqs = bigOuts.map((o) => w.ireduce(bigSend, w.rank === 0 ? o : null, 'sum', 0, { algorithm: 'reduce-scatter-gather' }));
  for (let k = bigReqs.length - 1; k >= 0; k--) bigReqs[k]!.wait();
  const base = (w.size * (w.size - 1)) / 2;
  if (w.rank === 0) {
    bigOuts.forEach((o, k) => {
      let wrong = 0;
      for (let i = 0; i < big; i++) if (o[i] !== base + w.size * i) wrong++;
      eq(`unremembered concurrent ireduce ${k}: elements off`, [wrong], [0]);
    });
  }
  checks += bigReqs.length;
  // a remembered call is keyed by the options' values: changing the caller's object counts
  const o: { algorithm?: string } = {};
  const all = new Float64Array(n);
  w.allreduce(send, all, 'sum', o);
  o.algorithm = 'no-such-algorithm';
  const codes = errorCodes({ changed: () => w.allreduce(send, all, 'sum', o) });
  eq('options changed in place', [codes.changed], ['NBC_ERR_ARG']);
  return checks + 1 + reuseCounts(w);
}

/**
 * A v collective's count arrays are compared by value: the same buffers with displacements
 * changed in place between calls must land where the new values say (a plan kept from the
 * first call would put them where the old ones did), and values made bad in place are refused.
 */
function reuseCounts(w: Communicator): number {
  const p = w.size;
  const ones = Array.from({ length: p }, () => 1);
  const displs = Array.from({ length: p }, (_, r) => r);
  const mine = Float64Array.of(w.rank + 1);
  const got = new Float64Array(p);
  const send = Float64Array.from({ length: p }, (_, r) => 100 * w.rank + r);
  const recv = new Float64Array(p);
  let checks = 0;
  for (const reversed of [false, true, false]) {
    for (let r = 0; r < p; r++) displs[r] = reversed ? p - 1 - r : r;
    w.allgatherv(mine, got, ones, displs);
    eq(`allgatherv, displacements ${reversed ? 'reversed' : 'in order'} in place`, Array.from(got), Array.from({ length: p }, (_, i) => (reversed ? p - i : i + 1)));
    w.alltoallv(send, ones, displs, recv, ones, displs);
    // block r of send goes to rank r; with reversed displacements, send's element p-1-r does.
    eq(`alltoallv, displacements ${reversed ? 'reversed' : 'in order'} in place`, Array.from(recv),
      Array.from({ length: p }, (_, i) => { const from = reversed ? p - 1 - i : i; return 100 * from + (reversed ? p - 1 - w.rank : w.rank); }));
    checks += 2;
  }
  displs[p - 1] = p;
  const codes = errorCodes({ bad: () => w.allgatherv(mine, got, ones, displs) });
  eq('displacement made bad in place', [codes.bad], ['NBC_ERR_COUNT']);
  return checks + 1;
}

function persistent(w: Communicator, times: number, executor: 'host' | 'offload' = 'host', algorithm?: string): number {
  const n = 17;
  const send = new Int32Array(n);
  const recv = new Int32Array(n);
  const req = w.allreduceInit(send, recv, 'sum', { executor, algorithm });
  for (let t = 0; t < times; t++) {
    for (let i = 0; i < n; i++) send[i] = w.rank * t + i;
    req.start();
    req.wait();
    const want = (w.size * (w.size - 1) / 2) * t;
    for (let i = 0; i < n; i++) if (recv[i] !== want + w.size * i) assert.fail(`start ${t}: element ${i} is ${recv[i]}, expected ${want + w.size * i}`);
  }
  req.free();
  return times;
}

/**
 * Persistent collectives where MPI allows them, in the request-set calls beside plain requests:
 * before the first start and after free they are inactive (complete, with an empty status);
 * started, they complete with the right data. testAll and testAny are polled in loops, which
 * only end if they progress the persistent collectives' current starts.
 */
function persistentInSets(w: Communicator, executor: 'host' | 'offload'): number {
  const n = 5;
  const send = new Int32Array(n);
  const sum = new Int32Array(n);
  const bc = new Int32Array(n);
  const ar = w.allreduceInit(send, sum, 'sum', { executor });
  const bcast = w.bcastInit(bc, 0, { executor });
  const empty = { source: ANY_SOURCE, tag: ANY_TAG, count: 0, bytes: 0 };
  assert.deepEqual(waitAll([ar, bcast]), [empty, empty], 'inactive waitAll statuses');
  eq('inactive testAll', [testAll([ar, bcast])], [true]);
  eq('inactive testAny, waitAny', [testAny([ar]), waitAny([bcast])], [0, 0]);
  assert.deepEqual(ar.wait(), empty, 'inactive wait');
  let checks = 0;
  for (let t = 0; t < 20; t++) {
    for (let i = 0; i < n; i++) send[i] = w.rank * (t + 1) + i;
    for (let i = 0; i < n; i++) bc[i] = w.rank === 0 ? 1000 * t + i : -1;
    const want = (i: number): number => ((w.size * (w.size - 1)) / 2) * (t + 1) + w.size * i;
    ar.start();
    bcast.start();
    const plain = w.ibarrier();
    const set: AnyRequest[] = [ar, plain, bcast];
    switch (t % 4) {
      case 0: waitAll(set); break;
      case 1: while (!testAll(set)) { /* each call progresses */ } break;
      case 2: {
        const left = [...set];
        while (left.length > 0) left.splice(waitAny(left), 1);
        break;
      }
      default: while (testAny([ar]) < 0) { /* each call progresses */ } waitAll(set);
    }
    for (let i = 0; i < n; i++) {
      if (sum[i] !== want(i)) assert.fail(`start ${t}: allreduce element ${i} is ${sum[i]}, expected ${want(i)}`);
      if (bc[i] !== 1000 * t + i) assert.fail(`start ${t}: bcast element ${i} is ${bc[i]}, expected ${1000 * t + i}`);
    }
    checks++;
  }
  ar.free();
  bcast.free();
  assert.deepEqual(waitAll([ar, bcast]), [empty, empty], 'freed waitAll statuses');
  return checks;
}

function determinism(w: Communicator): string {
  // random floats: tree orders round differently from the reference, but every rank must
  // hold the same bits, and the same algorithm must give the same bits every time
  const n = 1000;
  const digests: string[] = [];
  for (const alg of ['recursive-doubling', 'knomial:3', 'rabenseifner', 'ring']) {
    let x = 1234567 + w.rank * 7;
    const send = new Float64Array(n).map(() => ((x = (x * 48271) % 2147483647) / 2147483647 - 0.5) * 1e3);
    const a = new Float64Array(n);
    const b = new Float64Array(n);
    w.allreduce(send, a, 'sum', { algorithm: alg });
    w.allreduce(send, b, 'sum', { algorithm: alg });
    eq(`${alg} run twice`, new Uint8Array(b.buffer), new Uint8Array(a.buffer));
    const all = new Float64Array(n * w.size);
    w.allgather(a, all);
    for (let r = 0; r < w.size; r++) eq(`${alg} rank ${r} holds rank 0's bits`, new Uint8Array(all.buffer, r * n * 8, n * 8), new Uint8Array(all.buffer, 0, n * 8));
    digests.push(`${alg}:${a[0]}`);
  }
  return digests.join(' ');
}

/**
 * The agg executor's non-blocking and persistent forms: several iallreduce, ireduce and
 * ibarrier in flight on world and on a split communicator, completed in reverse order, and a
 * persistent allreduce restarted; fabric-sized data (many fragments) and small. Returns checks.
 */
/**
 * comm.stats().executors: the calls each executor ran, counted from a known mix of calls (on 2
 * or more nodes): the differences before and after, and whether every result was right.
 */
function executorCounts(w: Communicator): Record<string, number> {
  const before = w.stats().executors;
  const a = Float64Array.from({ length: 16 }, (_, i) => w.rank + i);
  const b = new Float64Array(16);
  const want = (op: 'sum' | 'max' | 'prod') => Float64Array.from({ length: 16 }, (_, i) => {
    const xs = Array.from({ length: w.size }, (_, r) => r + i);
    return op === 'sum' ? xs.reduce((s, x) => s + x, 0) : op === 'max' ? Math.max(...xs) : xs.reduce((s, x) => s * x, 1);
  });
  let wrong = 0;
  const check = (op: 'sum' | 'max' | 'prod') => { if (b.some((x, i) => x !== want(op)[i])) wrong++; b.fill(-1); };
  // host: two blocking (lean path), one non-blocking, two starts of a persistent request
  w.allreduce(a, b, 'sum'); check('sum');
  w.allreduce(a, b, 'sum'); check('sum');
  w.iallreduce(a, b, 'sum').wait(); check('sum');
  const p = w.allreduceInit(a, b, 'sum');
  for (let k = 0; k < 2; k++) { p.start(); p.wait(); check('sum'); }
  p.free();
  // offload: flat non-blocking and blocking, and two-level
  w.iallreduce(a, b, 'sum', { executor: 'offload' }).wait(); check('sum');
  w.allreduce(a, b, 'sum', { executor: 'offload' }); check('sum');
  w.iallreduce(a, b, 'sum', { executor: 'offload', algorithm: 'two-level' }).wait(); check('sum');
  // agg: two calls the fabric takes; a product it does not take runs a host algorithm
  w.allreduce(a, b, 'sum', { executor: 'agg' }); check('sum');
  w.iallreduce(a, b, 'max', { executor: 'agg' }).wait(); check('max');
  w.allreduce(a, b, 'prod', { executor: 'agg' }); check('prod');
  const after = w.stats().executors;
  return {
    host: after.host.calls - before.host.calls, offload: after.offload.calls - before.offload.calls,
    agg: after.agg.calls - before.agg.calls, onFabric: after.agg.onFabric - before.agg.onFabric,
    amongEngines: after.agg.amongEngines - before.agg.amongEngines, wrong,
  };
}

/**
 * User ops cannot be offloaded: every reduction refuses one with NBC_ERR_OP on every rank,
 * including ranks whose schedule holds no reduction of their own (a 3-rank tree's leaves).
 */
function offloadedUserOps(w: Communicator): Record<string, string> {
  const ex = { executor: 'offload' as const };
  const times = Op.create((inout: Float64Array, input: Float64Array) => {
    for (let i = 0; i < inout.length; i++) inout[i]! *= input[i]!;
  }, { commutative: true });
  const a = () => new Float64Array(4 * w.size);
  return errorCodes({
    'allreduce, matmul': () => w.allreduce(a(), a(), matmul, ex),
    'allreduce, commutative': () => w.allreduce(a(), a(), times, ex),
    'iallreduce two-level': () => w.iallreduce(a(), a(), times, { ...ex, algorithm: 'two-level' }).wait(),
    'reduce': () => w.reduce(a(), a(), times, 0, ex),
    'scan': () => w.scan(a(), a(), matmul, ex),
    'reduceScatterBlock': () => w.reduceScatterBlock(a(), new Float64Array(4), times, ex),
    'allreduceInit': () => w.allreduceInit(a(), a(), times, ex),
  });
}

function aggNonblocking(w: Communicator): number {
  const ex = { executor: 'agg' as const };
  const p = w.size;
  if (w.splitShared().size < w.size) {
    // What a call would run (algorithmFor) says the fabric where it takes the call, and a host
    // algorithm for a reduction it does not (prod on doubles).
    eq('algorithmFor on agg', [w.algorithmFor('allreduce', 8, ex), w.algorithmFor('allreduce', 8, { ...ex, op: 'sum', type: Float64Array }),
      w.algorithmFor('barrier', 0, ex)], ['agg', 'agg', 'agg']);
    assert.notEqual(w.algorithmFor('allreduce', 8, { ...ex, op: 'prod', type: Float64Array }), 'agg');
  }
  const half = w.split(w.rank % 2)!; // a colour, never undefined: every rank gets a communicator
  let checks = 0;
  for (const comm of [w, half]) {
    const reqs: Array<{ req: { wait(): unknown }; check: () => void }> = [];
    for (let k = 0; k < 6; k++) {
      const n = k % 2 === 0 ? 3 : 700; // 700 doubles: 22 fragments of 256 B
      const all = Array.from({ length: comm.size }, (_, r) => gen(DType.Float64, 'sum', r, n, 100 + k));
      const mine = gen(DType.Float64, 'sum', comm.rank, n, 100 + k);
      const out = poison(like(mine));
      if (k % 3 === 2) {
        const root = k % comm.size;
        const req = comm.ireduce(mine, comm.rank === root ? out : null, 'max', root, ex);
        reqs.push({ req, check: () => { if (comm.rank === root) eq(`ireduce ${k}`, out, referenceReduce('max', DType.Float64, all)); } });
      } else {
        reqs.push({ req: comm.iallreduce(mine, out, 'sum', ex), check: () => eq(`iallreduce ${k}`, out, referenceReduce('sum', DType.Float64, all)) });
      }
      if (k === 3) reqs.push({ req: comm.ibarrier(ex), check: () => {} });
    }
    for (const r of reqs.reverse()) {
      r.req.wait();
      r.check();
      checks++;
    }
    const send = new Int32Array(40);
    const recv = new Int32Array(40);
    const pr = comm.allreduceInit(send, recv, 'bxor', ex);
    for (let round = 0; round < 5; round++) {
      const all = Array.from({ length: comm.size }, (_, r) => gen(DType.Int32, 'bxor', r, 40, 200 + round));
      send.set(all[comm.rank] as Int32Array);
      pr.start();
      pr.wait();
      eq(`persistent bxor round ${round}`, recv, referenceReduce('bxor', DType.Int32, all));
      checks++;
    }
    pr.free();
  }
  half.free();
  if (p < 2) throw new Error('aggnb needs at least 2 ranks');
  return checks;
}

/**
 * Allreduce through the fabric in a loop until a call fails (the test kills a daemon, the
 * manager or a node meanwhile), then recovers on a fresh communicator (`dup`): a new group,
 * or host algorithms where the fabric refuses it, collectively. Returns the failure's code,
 * when it was seen (ms since the epoch) and whether the recovered call was right.
 */
function aggFault(w: Communicator): { code: string; errAt: number; calls: number; recovered: boolean } {
  const send = new Float64Array(4).fill(w.rank + 1);
  const recv = new Float64Array(4);
  const deadline = Date.now() + 60_000;
  let code = 'none';
  let errAt = 0;
  let calls = 0;
  while (Date.now() < deadline) {
    try {
      w.allreduce(send, recv, 'sum', { executor: 'agg' });
      calls++;
    } catch (err) {
      code = (err as NbcError).code;
      errAt = Date.now();
      break;
    }
  }
  const fresh = w.dup();
  const out = new Float64Array(4);
  fresh.allreduce(send, out, 'sum', { executor: 'agg' });
  fresh.free();
  return { code, errAt, calls, recovered: out[0] === (w.size * (w.size + 1)) / 2 };
}

/** Random floats summed by the fabric: a digest of the result's bits, equal on every rank. */
function aggBits(w: Communicator): string {
  const n = 1000;
  let x = 987654 + w.rank * 13;
  const send = new Float64Array(n).map(() => ((x = (x * 48271) % 2147483647) / 2147483647 - 0.5) * 1e6);
  const a = new Float64Array(n);
  w.allreduce(send, a, 'sum', { executor: 'agg' });
  const all = new Float64Array(n * w.size);
  w.allgather(a, all);
  for (let r = 0; r < w.size; r++) eq(`rank ${r} holds rank 0's bits`, new Uint8Array(all.buffer, r * n * 8, n * 8), new Uint8Array(all.buffer, 0, n * 8));
  let h = 2166136261;
  for (const b of new Uint8Array(a.buffer)) h = Math.imul(h ^ b, 16777619) >>> 0;
  return h.toString(16);
}

function aggWire(w: Communicator, iters: number): { minMs: number; onFabric: number } {
  const before = w.stats().executors.agg.onFabric;
  let minMs = Infinity;
  for (let i = 0; i < iters; i++) {
    const send = Float64Array.from([w.rank + i, 1, -w.rank, i]);
    const out = new Float64Array(4);
    const t0 = performance.now();
    w.allreduce(send, out, 'sum', { executor: 'agg' });
    minMs = Math.min(minMs, performance.now() - t0);
    const p = w.size;
    eq(`allreduce ${i}`, Array.from(out), [(p * (p - 1)) / 2 + p * i, p, -(p * (p - 1)) / 2, p * i]);
  }
  return { minMs, onFabric: w.stats().executors.agg.onFabric - before };
}

function badinput(w: Communicator): Record<string, string> {
  const before = w.stats().host.messagesSent;
  const f8 = new Float64Array(8);
  const codes = errorCodes({
    'allreduce length mismatch': () => w.allreduce(f8, new Float64Array(16), 'sum'),
    'allreduce type mismatch': () => w.allreduce(f8, new Int32Array(8), 'sum'),
    'bad root': () => w.bcast(f8, w.size),
    'negative root': () => w.reduce(f8, f8, 'sum', -1),
    'band on Float64Array': () => w.allreduce(f8, new Float64Array(8), 'band'),
    'unknown op': () => w.allreduce(f8, new Float64Array(8), 'avg' as never),
    'minloc odd count': () => w.allreduce(new Float64Array(3), new Float64Array(3), 'minloc'),
    'allgatherv counts short': () => w.allgatherv(f8, new Float64Array(64), [1], [0]),
    'allgatherv counts overflow': () => w.allgatherv(f8, new Float64Array(4), new Array(w.size).fill(8), new Array(w.size).fill(0)),
    'reduceScatter counts do not add up': () => w.reduceScatter(f8, new Float64Array(1), new Array(w.size).fill(1000), 'sum'),
    'unknown algorithm': () => w.allreduce(f8, new Float64Array(8), 'sum', { algorithm: 'quantum' }),
    'ring with non-commutative op': () => w.allreduce(new Float64Array(8), new Float64Array(8), matmul, { algorithm: 'ring' }),
    'unknown executor': () => w.allreduce(f8, new Float64Array(8), 'sum', { executor: 'quantum' }),
    'neighbor on a plain communicator': () => w.neighborAllgather(f8, new Float64Array(8)),
    'alltoall indivisible': () => w.alltoall(new Float64Array(w.size * 2 + 1), new Float64Array(w.size * 2 + 1)),
    'alloc negative': () => w.alloc(Float64Array, -1),
    'alloc fraction': () => w.alloc(Float64Array, 1.5),
    'alloc 2 GiB': () => w.alloc(Float64Array, 2 ** 28),
    'alloc 8 GB': () => w.alloc(Uint8Array, 8e9),
    'freeMem of a plain array': () => w.freeMem(f8),
    'alloc of no typed array class': () => w.alloc(Array as never, 3),
    'alloc of undefined': () => w.alloc(undefined as never, 8),
    'waitAll of undefined': () => waitAll(undefined as never),
    'waitAll with a null entry': () => waitAll([null as never]),
    'testAny with a plain object': () => testAny([{} as never]),
    'create from a plain object': () => w.create({} as never),
    'algorithmFor a bogus collective': () => w.algorithmFor('bogus' as never, 8),
    'persistent started after free': () => {
      const p = w.barrierInit();
      p.free();
      p.start();
    },
  });
  codes.messagesSentMeanwhile = String(w.stats().host.messagesSent - before);
  codes['persistent started twice'] = startedTwice(w);
  // Off the root, gatherv's and scatterv's counts and displacements are not significant:
  // null there is fine (as in MPI and mpi4py), twice to go through the remembered call too.
  const root = w.size - 1;
  const counts = w.rank === root ? new Array<number>(w.size).fill(1) : null;
  const displs = w.rank === root ? Array.from({ length: w.size }, (_, i) => w.size - 1 - i) : null;
  const all = new Float64Array(w.size);
  const mine = new Float64Array(1);
  let right = true;
  for (let k = 0; k < 2; k++) {
    w.gatherv(Float64Array.of(w.rank + k), w.rank === root ? all : null, counts, displs, root);
    if (w.rank === root) right &&= all.every((x, i) => x === w.size - 1 - i + k);
    w.scatterv(w.rank === root ? all : null, counts, displs, mine, root);
    right &&= mine[0] === w.rank + k;
  }
  codes['gatherv and scatterv, null counts off the root'] = right ? 'right' : 'wrong';
  return codes;
}

/**
 * A persistent barrier started again while its first start is active: NBC_ERR_REQUEST. The
 * start cannot have completed, since one rank (`late`) starts only after the others' second
 * start (a barrier on world between); each rank reports the round in which it was not late.
 */
function startedTwice(w: Communicator): string {
  let code = 'not checked';
  for (const late of [0, 1]) {
    const d = w.dup();
    const p = d.barrierInit();
    if (w.rank === late) {
      w.barrier();
      p.start();
    } else {
      p.start();
      try {
        p.start();
        code = 'started twice without an error';
      } catch (err) {
        code = err instanceof NbcError ? err.code : String(err);
      }
      w.barrier();
    }
    p.wait();
    p.free();
    d.free();
  }
  return code;
}

/** Ranks that disagree on a bcast's size: the short receiver fails with NBC_ERR_TRUNCATE, nobody hangs. */
function mismatch(w: Communicator): string {
  const n = w.rank === 0 ? 64 : 16;
  try {
    w.bcast(new Float64Array(n), 0);
    return 'ok';
  } catch (err) {
    return err instanceof NbcError ? err.code : String(err);
  }
}

/**
 * Ranks that disagree on a ring allgather's count (rank 1 passes one element more). Rank 2's
 * first receive, from rank 1, is too long: NBC_ERR_TRUNCATE; rank 1's, from rank 0, too short:
 * NBC_ERR_COUNT (a collective's receives take exactly their length). Their schedules go on
 * (check and continue) and forward blocks that never arrived; the forwarded data is flagged,
 * so rank 3 and then rank 0 fail with NBC_ERR_PEER_FAILED instead of completing with it.
 */
function invalidForwarded(w: Communicator, executor: Executor): string {
  const n = w.rank === 1 ? 9 : 8;
  const recv = new Int32Array(n * w.size).fill(-1);
  try {
    w.allgather(new Int32Array(n).fill(w.rank + 1), recv, { algorithm: 'ring', executor });
    return 'completed';
  } catch (err) {
    if (!(err instanceof NbcError)) return String(err);
    return err.code + (/not valid/.test(err.message) ? ' (not valid)' : '');
  }
}

/**
 * The lean blocking allreduce and barrier (2 ranks) read their partner's message where it lies
 * in the ring; these cases force the other ways a message can be found.
 * - early: rank 0's message was taken off the ring before rank 1's allreduce began (rank 1
 *   probed for a message rank 0 sent after it), so it is matched from the unexpected list;
 * - behind: a user message sits ahead of the collective's in the ring;
 * - disagree: ranks pass different counts: the longer side NBC_ERR_COUNT, the shorter
 *   NBC_ERR_TRUNCATE, and the next collective on the communicator still works;
 * - rendezvous: the longer side's message is past the eager limit, so that side runs the
 *   schedule executor and sends by rendezvous: the lean side fails with NBC_ERR_TRUNCATE
 *   instead of waiting for an eager message, and both go on.
 */
function leanPaths(w: Communicator): Record<string, unknown> {
  const peer = 1 - w.rank;
  const out: Record<string, unknown> = {};
  const x = Float64Array.of(w.rank + 1, 10 * (w.rank + 1));
  const y = new Float64Array(2);
  // early: rank 0 runs the same recursive-doubling messages through the schedule executor
  if (w.rank === 0) {
    const req = w.iallreduce(x, y, 'sum', { algorithm: 'recursive-doubling' });
    w.send(Int32Array.of(7), peer, 5);
    req.wait();
  } else {
    w.probe(peer, 5);
    w.allreduce(x, y, 'sum');
    w.recv(new Int32Array(1), peer, 5);
  }
  out.early = Array.from(y);
  // behind: a user message ahead of the allreduce's and the barrier's
  const z = new Float64Array(2);
  w.send(Int32Array.of(w.rank), peer, 6);
  w.allreduce(x, z, 'max');
  w.send(Int32Array.of(w.rank), peer, 7);
  w.barrier();
  const got = [new Int32Array(1), new Int32Array(1)];
  w.recv(got[0]!, peer, 6);
  w.recv(got[1]!, peer, 7);
  out.behind = [...z, got[0]![0], got[1]![0]];
  // disagree
  try {
    w.allreduce(new Float64Array(w.rank === 0 ? 2 : 1), new Float64Array(w.rank === 0 ? 2 : 1), 'sum');
    out.disagree = 'no error';
  } catch (err) {
    out.disagree = err instanceof NbcError ? err.code : String(err);
  }
  const after = new Float64Array(1);
  w.allreduce(Float64Array.of(w.rank + 1), after, 'sum');
  out.after = after[0];
  // disagree across the eager limit: rank 0's 16 KiB travel by rendezvous to a lean receive
  try {
    w.allreduce(new Float64Array(w.rank === 0 ? 2048 : 1), new Float64Array(w.rank === 0 ? 2048 : 1), 'sum');
    out.rendezvous = 'no error';
  } catch (err) {
    out.rendezvous = err instanceof NbcError ? err.code : String(err);
  }
  w.allreduce(Float64Array.of(w.rank + 1), after, 'sum');
  out.afterRendezvous = after[0];
  return out;
}

/** Offloaded and host-executed allreduce of random floats give the same bits, per algorithm. */
function offloadBits(w: Communicator): string[] {
  const n = 1000;
  const out: string[] = [];
  for (const alg of ['recursive-doubling', 'knomial:3', 'rabenseifner', 'ring', 'hier']) {
    let x = 7654321 + w.rank * 13;
    const send = new Float64Array(n).map(() => ((x = (x * 48271) % 2147483647) / 2147483647 - 0.5) * 1e3);
    const host = new Float64Array(n);
    const off = new Float64Array(n);
    w.allreduce(send, host, 'sum', { algorithm: alg, executor: 'host' });
    w.allreduce(send, off, 'sum', { algorithm: alg, executor: 'offload' });
    eq(`${alg}: offload gives the host's bits`, new Uint8Array(off.buffer), new Uint8Array(host.buffer));
    out.push(alg);
  }
  return out;
}

/**
 * Buffers from comm.alloc are sent from in place (no staging copy), and the host executor folds
 * into such a region through private memory (HostExecutor.reduce). For every reducing
 * collective's algorithms, with a commutative float sum of random values and a non-commutative
 * op where the algorithm takes one, the results must be bitwise those of plain arrays, and equal
 * the reference on exact inputs. 6,000 doubles: past the 8 KiB eager limit, and in blocks of
 * more than 4 KiB for every rank count the tests use.
 */
function lentBuffers(w: Communicator): number {
  const n = 6000;
  let checks = 0;
  const fill = (a: Float64Array, r: number, exact: boolean): Float64Array => {
    let x = 7654321 + r * 13;
    for (let i = 0; i < a.length; i++) {
      x = (x * 48271) % 2147483647;
      a[i] = exact ? (x % 4) - 1 : (x / 2147483647 - 0.5) * 1e3;
    }
    return a;
  };
  const reg = (k: number): Float64Array => w.alloc(Float64Array, k);
  for (const [coll, ops] of [['allreduce', ['sum', 'matmul']], ['reduce', ['sum', 'matmul']], ['reduceScatterBlock', ['sum']]] as const) {
    for (const alg of Object.keys(ALGORITHMS[coll])) {
      if (ALGORITHMS[coll][alg]!.executors !== undefined || (alg === 'hier' && w.size === 1)) continue;
      for (const opName of ops) {
        const op = opName === 'matmul' ? matmul : opName;
        const exact = opName === 'matmul';
        if (exact && ALGORITHMS[coll][alg]!.commutativeOnly === true) continue;
        const run = (send: Float64Array, recv: Float64Array): void => {
          const o = { algorithm: alg };
          if (coll === 'allreduce') w.allreduce(send, recv, op, o);
          else if (coll === 'reduce') w.reduce(send, recv, op, 0, o);
          else w.reduceScatterBlock(send, recv, op, o);
        };
        const inLen = coll === 'reduceScatterBlock' ? n * w.size : n;
        const plainIn = fill(new Float64Array(inLen), w.rank, exact);
        const plainOut = new Float64Array(n);
        run(plainIn, plainOut);
        const lentIn = reg(inLen);
        lentIn.set(plainIn);
        const lentOut = reg(n);
        for (let t = 0; t < 3; t++) { // again on the same buffers: their lines were lent last time
          lentOut.fill(NaN);
          run(lentIn, lentOut);
          if (coll !== 'reduce' || w.rank === 0) {
            eq(`${coll}/${alg}/${opName} start ${t}: comm.alloc buffers give plain arrays' bits`,
              new Uint8Array(lentOut.buffer, lentOut.byteOffset, lentOut.byteLength), new Uint8Array(plainOut.buffer));
          }
        }
        if (exact && (coll !== 'reduce' || w.rank === 0)) {
          const want = referenceReduce(op, DType.Float64,
            Array.from({ length: w.size }, (_, r) => fill(new Float64Array(n), r, true)));
          eq(`${coll}/${alg}/${opName}: the reference`, lentOut, want);
        }
        w.freeMem(lentIn);
        w.freeMem(lentOut);
        checks++;
      }
    }
  }
  return checks;
}

/**
 * Inter-node messages of one call, summed over the communicator's ranks (from stats(): a
 * message to another node leaves through the engine).
 */
function interNodeMessages(c: Communicator, call: () => void): number {
  c.barrier();
  const before = c.stats().host.interNodeMessages;
  call();
  const mine = c.stats().host.interNodeMessages - before;
  const all = new Float64Array(1);
  c.allreduce(Float64Array.of(mine), all, 'sum');
  return all[0]!;
}

/**
 * What hierarchy buys, counted: on m nodes the packed alltoall sends exactly one inter-node
 * message per ordered node pair, and hier barrier and allreduce send O(log m) per node (the
 * leaders' dissemination and recursive doubling), where flat ones send per rank. Also on a
 * communicator whose nodes hold different numbers of ranks.
 */
function hierMessageCounts(w: Communicator): Record<string, number> {
  const out: Record<string, number> = {};
  const hier = { algorithm: 'hier' } as const;
  const shapes: Array<[string, Communicator]> = [['world', w]];
  // without the last rank, the last node holds one rank fewer than the others
  const uneven = w.split(w.rank === w.size - 1 ? UNDEFINED : 0, w.rank);
  if (uneven !== null) shapes.push(['uneven', uneven]);
  for (const [name, c] of shapes) {
    const send = new Float64Array(c.size).map((_, i) => c.rank * 1000 + i);
    const recv = new Float64Array(c.size);
    out[`${name} alltoall hier`] = interNodeMessages(c, () => c.alltoall(send, recv, hier));
    for (let i = 0; i < c.size; i++) eq(`${name} hier alltoall block ${i}`, [recv[i]], [i * 1000 + c.rank]);
    out[`${name} alltoall flat`] = interNodeMessages(c, () => c.alltoall(send, recv, { algorithm: 'scattered' }));
    out[`${name} barrier hier`] = interNodeMessages(c, () => c.barrier(hier));
    out[`${name} barrier flat`] = interNodeMessages(c, () => c.barrier({ algorithm: 'dissemination:1' }));
    const x = new Float64Array(1);
    out[`${name} allreduce hier`] = interNodeMessages(c, () => c.allreduce(Float64Array.of(c.rank), x, 'sum', hier));
    eq(`${name} hier allreduce`, [x[0]], [(c.size * (c.size - 1)) / 2]);
    out[`${name} allreduce flat`] = interNodeMessages(c, () => c.allreduce(Float64Array.of(c.rank), x, 'sum', { algorithm: 'recursive-doubling' }));
  }
  return out;
}

/**
 * A rank computes for 200 ms without calling into nbcoll. Offloaded, the collective is found
 * finished (ready(), which makes no progress) before wait(); host-executed, it cannot be.
 * Rank 0 starts 5 ms after the others (busy, without calling into nbcoll), so the others'
 * results depend on a contribution that arrives after their initiating call returned: a
 * host-executed collective cannot complete on them without a call into nbcoll. Whether it did
 * arrive after is checked, not assumed: every rank notes on the host's clock (timeOrigin +
 * now(), one clock for the processes of a host) when its initiating call returned and rank 0
 * when it made its call, and a host-executed attempt counts only where the rank's call returned
 * first (on a crowded host a rank can leave the barrier more than 5 ms late, find rank 0's
 * contribution waiting, and complete inside its initiating call). `hostChecked`: how many did.
 * Rank 0 itself may find its partners' messages waiting and complete inside its call.
 */
function completesWhileComputing(w: Communicator): { offload: boolean; host: boolean; hostChecked: number } {
  const x = Float64Array.of(w.rank);
  const busy = (ms: number): void => {
    const t0 = performance.now();
    while (performance.now() - t0 < ms) { /* compute, no calls into nbcoll */ }
  };
  const clock = (): number => performance.timeOrigin + performance.now();
  const ATTEMPTS = 3;
  const returned = new Float64Array(ATTEMPTS); // host-executed: when this rank's call returned
  const readyHost: boolean[] = [];
  const result = { offload: false, host: false, hostChecked: 0 };
  // Warm-up: the engines open their links to each other on first use (with the UCX
  // transport the barrier does not go through them), which must not fall in the window.
  w.iallreduce(x, new Float64Array(1), 'sum', { executor: 'offload' }).wait();
  // Three attempts each (every rank makes every call): on 2 shared cores an engine can miss
  // one 200 ms window to the scheduler; the offloaded collective must complete in some
  // window, the host-executed one (nobody calls into nbcoll) in none.
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    for (const executor of ['offload', 'host'] as const) {
      const y = new Float64Array(1);
      w.barrier();
      // Rank 0 starts late: by more than a scheduler time slice (4 ms here), since on 2 shared
      // cores another rank may wait out one before its own call.
      if (w.rank === 0) busy(20);
      const called = clock();
      const r = w.iallreduce(x, y, 'sum', { executor });
      if (executor === 'host') returned[attempt] = w.rank === 0 ? called : clock();
      busy(200);
      if (executor === 'offload') result.offload ||= r.ready();
      else readyHost.push(r.ready());
      r.wait();
      eq(`${executor} sum`, [y[0]], [(w.size * (w.size - 1)) / 2]);
    }
  }
  // Rank 0's call times, to every rank.
  const rootCalled = w.rank === 0 ? returned.slice() : new Float64Array(ATTEMPTS);
  w.bcast(rootCalled, 0);
  for (let a = 0; a < ATTEMPTS; a++) {
    if (w.rank !== 0 && returned[a]! >= rootCalled[a]!) continue;
    result.hostChecked++;
    result.host ||= readyHost[a]!;
  }
  return result;
}

/**
 * The two-level collectives (the engines combine their node's members, then exchange among
 * nodes, packed) against independent references: allreduce, reduce, bcast, allgather,
 * alltoall and barrier, on the world and on an odd/even split (whose nodes' members are not
 * contiguous in rank order), blocking, non-blocking in flight together, and persistent.
 */
function twoLevel(w: Communicator): number {
  const opts = { executor: 'offload', algorithm: 'two-level' } as const;
  let checks = 0;
  const split = w.split(w.rank % 2, w.rank)!;
  for (const c of [w, split]) {
    const me = c.worldRankOf(c.rank);
    for (const [dt, op, n] of [[DType.Float64, 'sum', 0], [DType.Float64, 'sum', 257], [DType.Int32, 'max', 33],
      [DType.BigInt64, 'sum', 5], [DType.Uint8, 'bor', 64], [DType.Float64, 'sum', 1 << 18], [DType.Int32, 'minloc', 10]] as Array<[DT, string, number]>) {
      const all = Array.from({ length: c.size }, (_, r) => gen(dt, op, c.worldRankOf(r), n, n));
      const ref = referenceReduce(op as never, dt, all);
      const out = poison(like(all[0]!));
      c.allreduce(gen(dt, op, me, n, n), out, op as never, opts);
      eq(`two-level allreduce ${op}/${dt} n ${n} on a ${c.size}-rank communicator`, out, ref);
      for (const root of new Set([0, c.size - 1, c.size >> 1])) {
        const red = poison(like(all[0]!));
        c.reduce(gen(dt, op, me, n, n), red, op as never, root, opts);
        if (c.rank === root) eq(`two-level reduce ${op}/${dt} n ${n} root ${root}`, red, ref);
        const b = c.rank === root ? gen(dt, op, root + 100, n, n) : poison(like(all[0]!));
        c.bcast(b, root, opts);
        eq(`two-level bcast ${dt} n ${n} root ${root}`, b, gen(dt, op, root + 100, n, n));
      }
      checks += 2;
    }
    for (const n of [0, 1, 7, 3000]) {
      // allgather: block r of every recv is rank r's block
      const block = (r: number): Int32Array => Int32Array.from({ length: n }, (_, i) => c.worldRankOf(r) * 100_000 + i);
      const ag = new Int32Array(n * c.size).fill(-1);
      c.allgather(block(c.rank), ag, opts);
      const agRef = new Int32Array(n * c.size);
      for (let r = 0; r < c.size; r++) agRef.set(block(r), r * n);
      eq(`two-level allgather n ${n}`, ag, agRef);
      // alltoall: block d of rank s's send lands at block s of rank d's recv
      const cell = (s: number, d: number, i: number): number => s * 1_000_000 + d * 1000 + (i % 1000);
      const send = Float64Array.from({ length: n * c.size }, (_, k) => cell(c.rank, Math.floor(k / Math.max(n, 1)), k % Math.max(n, 1)));
      const a2a = new Float64Array(n * c.size).fill(-1);
      c.alltoall(send, a2a, opts);
      const a2aRef = Float64Array.from({ length: n * c.size }, (_, k) => cell(Math.floor(k / Math.max(n, 1)), c.rank, k % Math.max(n, 1)));
      eq(`two-level alltoall n ${n}`, a2a, a2aRef);
      // in place: the input is the receive buffer
      const inPlace = Float64Array.from(send);
      c.alltoall(IN_PLACE, inPlace, opts);
      eq(`two-level alltoall IN_PLACE n ${n}`, inPlace, a2aRef);
      checks += 3;
    }
    c.barrier(opts);
    checks++;
  }
  // several non-blocking two-level collectives in flight at once, waited in reverse order
  const x = new Float64Array(16).fill(w.rank);
  const sum = new Float64Array(16);
  const bc = new Int32Array(8).fill(w.rank === 0 ? 42 : -1);
  const gathered = new Int32Array(w.size);
  const reqs = [
    w.iallreduce(x, sum, 'sum', opts), w.ibarrier(opts), w.ibcast(bc, 0, opts), w.iallgather(Int32Array.of(w.rank), gathered, opts),
  ];
  for (let i = reqs.length - 1; i >= 0; i--) reqs[i]!.wait();
  eq('in flight: iallreduce', sum, new Float64Array(16).fill((w.size * (w.size - 1)) / 2));
  eq('in flight: ibcast', bc, new Int32Array(8).fill(42));
  eq('in flight: iallgather', gathered, Int32Array.from({ length: w.size }, (_, r) => r));
  checks++;
  // persistent, restarted
  const send = new Int32Array(9);
  const recv = new Int32Array(9);
  const p = w.allreduceInit(send, recv, 'sum', opts);
  const pb = w.bcastInit(send, w.size - 1, opts);
  for (let t = 0; t < 50; t++) {
    send.fill(w.rank + t);
    p.start();
    p.wait();
    eq(`two-level persistent start ${t}`, [recv[0]], [(w.size * (w.size - 1)) / 2 + w.size * t]);
    pb.start();
    pb.wait();
    eq(`two-level persistent bcast start ${t}`, [send[8]], [w.size - 1 + t]);
  }
  checks++;
  const codes = errorCodes({
    'non-commutative op': () => w.allreduce(new Float64Array(4), new Float64Array(4), matmul, opts),
    'non-commutative reduce': () => w.reduce(new Float64Array(4), new Float64Array(4), matmul, 0, opts),
    'host executor': () => w.allreduce(new Float64Array(4), new Float64Array(4), 'sum', { algorithm: 'two-level' }),
    'host executor barrier': () => w.barrier({ algorithm: 'two-level' }),
    'no two-level gather': () => w.gather(new Float64Array(4), new Float64Array(4 * w.size), 0, opts),
  });
  eq('two-level refusals', Object.values(codes), ['NBC_ERR_OP', 'NBC_ERR_OP', 'NBC_ERR_ARG', 'NBC_ERR_ARG', 'NBC_ERR_ARG']);
  return checks;
}

export default function main(w: Communicator, args: string[]): unknown {
  switch (args[0]) {
    case 'props': return props(w, args[1] === '-' ? undefined : args[1], (args[2] ?? 'host') as Executor);
    case 'aggnb': return aggNonblocking(w);
    case 'execstats': return executorCounts(w);
    case 'aggbits': return aggBits(w);
    case 'aggwire': return aggWire(w, Number(args[1] ?? 10));
    case 'aggfault': return aggFault(w);
    case 'scrambled': return scrambled(w, (args[1] ?? 'host') as 'host' | 'offload');
    case 'persistent': return persistent(w, Number(args[1] ?? 1000), (args[2] ?? 'host') as 'host' | 'offload', args[3]);
    case 'persistentall': return persistentInSets(w, (args[1] ?? 'host') as 'host' | 'offload');
    case 'hiercount': return hierMessageCounts(w);
    case 'determinism': return determinism(w);
    case 'badinput': return badinput(w);
    case 'mismatch': return mismatch(w);
    case 'twolevelmismatch': { // node 0's members disagree on the op of a two-level offloaded allreduce
      const op = w.rank === 1 ? 'max' : 'sum';
      try {
        w.iallreduce(new Float64Array(4).fill(w.rank + 1), new Float64Array(4), op, { executor: 'offload', algorithm: 'two-level' }).wait();
        return 'completed';
      } catch (err) {
        return err instanceof NbcError ? err.code : String(err);
      }
    }
    case 'countmismatch': { // rank 0 passes twice the others' count to a blocking allreduce: the job fails
      const n = w.rank === 0 ? 8 : 4;
      w.allreduce(new Float64Array(n).fill(1), new Float64Array(n), 'sum');
      return 'completed';
    }
    case 'invalid': return invalidForwarded(w, (args[1] ?? 'host') as Executor);
    case 'lean': return leanPaths(w);
    case 'reuse': return reuse(w);
    case 'offloadbits': return offloadBits(w);
    case 'lent': return lentBuffers(w);
    case 'twolevel': return twoLevel(w);
    case 'completes': return completesWhileComputing(w);
    case 'offloaduserop': return offloadedUserOps(w);
    default: throw new Error(`unknown mode ${args[0]}`);
  }
}
