/**
 * A browser-safe property check of every collective of the Communicator API, in its three
 * forms: blocking, non-blocking (`i...` then wait) and persistent (`...Init`, started twice
 * with fresh data, then freed). It imports only nbcoll's core and nbcoll/testing (no `node:*`,
 * no process, no Buffer), so it runs unchanged under `nbc run` on Node, Bun and Deno and in a
 * browser Web Worker:
 *
 *   nbc run -n 4 test/jobs/props-web.ts
 *
 * As in coll.ts ('props'), every rank generates every rank's inputs (deterministic in rank,
 * index and salt) and computes the expected result itself: by construction for data movement,
 * with the sequential reference (referenceReduce) for reductions. Inputs are small integers,
 * so any fold order gives the reference's exact bits, floats included. The first mismatch
 * throws, naming the collective, form, case and element. Every compared result is folded into
 * a 32-bit FNV-1a hash in call order: the rank returns { checks, hash }, the same for a given
 * size on every runtime. Any size from 1 up.
 */
import { IN_PLACE, type BuiltinOpName, type Communicator, type PersistentRequest, type Request, type TypedArray } from 'nbcoll';
import { DType, ctorOf, dtypeOf, isBigInt, referenceReduce } from 'nbcoll/testing';

type Combo = readonly [DType, BuiltinOpName];

/** dtype x op pairs the reductions rotate through: all exact on the inputs gen() makes. */
const COMBOS: readonly Combo[] = [
  [DType.Float64, 'sum'], [DType.Int32, 'prod'], [DType.Float32, 'max'], [DType.BigInt64, 'sum'],
  [DType.Float64, 'min'], [DType.Float32, 'sum'], [DType.Int32, 'max'], [DType.BigInt64, 'prod'],
  [DType.Float64, 'prod'], [DType.Int32, 'sum'], [DType.Float32, 'min'], [DType.BigInt64, 'min'],
];
/** Element types of the data-movement collectives. */
const MOVE: readonly DType[] = [DType.Float64, DType.Int32, DType.Float32, DType.BigInt64];
/** Block lengths the cases rotate through: empty, small, and (8-byte types) past the 8 KiB eager limit. */
const COUNTS = [3, 1, 0, 17, 1200];

const alloc = (dt: DType, n: number): TypedArray => new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
const put = (dst: TypedArray, src: TypedArray, at: number): void => (dst as Float64Array).set(src as Float64Array, at);

/** Writes `rank`'s input for `salt` into `a`: small integers (-1..2 for prod, -10..10 otherwise). */
function fill(a: TypedArray, op: string, rank: number, salt: number): TypedArray {
  const big = isBigInt(dtypeOf(a));
  for (let i = 0; i < a.length; i++) {
    const h = (rank * 7919 + i * 104729 + salt * 31) % 1009;
    const v = op === 'prod' ? (h % 4) - 1 : (h % 21) - 10;
    (a as unknown as Array<number | bigint>)[i] = big ? BigInt(v) : v;
  }
  return a;
}
/** A fresh copy of `rank`'s input. */
const gen = (dt: DType, op: string, rank: number, n: number, salt: number): TypedArray => fill(alloc(dt, n), op, rank, salt);
/** Fills `a` with a value no input has, so an element the call should write and did not shows. */
const poison = (a: TypedArray): void => (a as unknown as { fill(v: unknown): void }).fill(isBigInt(dtypeOf(a)) ? 77n : 77);

export default function propsWeb(w: Communicator, _args: string[]): { checks: number; hash: string } {
  const p = w.size, me = w.rank;
  const roots = p > 1 ? [0, p - 1] : [0];
  const ranks = <T>(f: (r: number) => T): T[] => Array.from({ length: p }, (_, r) => f(r));
  let checks = 0, salt = 0;
  /** Rotations: each case takes the next dtype/op pair, element type, count or count pattern. */
  let nCombo = 0, nType = 0, nCount = 0, nShape = 0;
  let hash = 0x811c9dc5;
  let form = '';

  /** Compares got with want element by element, then folds got's bytes into the hash. */
  const eq = (what: string, got: TypedArray, want: ArrayLike<number | bigint>): void => {
    const g = got as ArrayLike<number | bigint>;
    if (g.length !== want.length) throw new Error(`${what} [${form}] rank ${me}/${p}: ${g.length} elements, expected ${want.length}`);
    for (let i = 0; i < want.length; i++) {
      if (g[i] !== want[i]) {
        throw new Error(`${what} [${form}] rank ${me}/${p}: element ${i} of ${want.length} is ${String(g[i])}, expected ${String(want[i])}`);
      }
    }
    const bytes = new Uint8Array(got.buffer, got.byteOffset, got.byteLength);
    for (let i = 0; i < bytes.length; i++) hash = Math.imul(hash ^ bytes[i]!, 0x01000193) >>> 0;
    checks++;
  };

  /**
   * Runs one case in the three forms on the same buffers. `prepare(salt)` writes the inputs for
   * `salt` into them, poisons the outputs and returns the check of that call's results.
   */
  const three = (prepare: (salt: number) => () => void, blocking: () => void, nonblocking: () => Request,
    persistent: () => PersistentRequest): void => {
    form = 'blocking';
    let check = prepare(++salt);
    blocking(); check();
    form = 'non-blocking';
    check = prepare(++salt);
    nonblocking().wait(); check();
    const req = persistent();
    for (const start of ['first', 'second']) {
      form = `persistent, ${start} start`;
      check = prepare(++salt);
      req.start().wait(); check();
    }
    req.free();
  };
  const nextCombo = (): Combo => COMBOS[nCombo++ % COMBOS.length]!;
  const nextType = (): DType => MOVE[nType++ % MOVE.length]!;
  const nextCount = (): number => COUNTS[nCount++ % COUNTS.length]!;

  // -- barrier: completing in every form is the check (nothing to compare)
  three(() => () => {}, () => w.barrier(), () => w.ibarrier(), () => w.barrierInit());

  // -- bcast
  for (const root of roots) for (let k = 0; k < 2; k++) {
    const dt = nextType(), n = nextCount(), buf = alloc(dt, n);
    const what = `bcast ${n} x ${buf.constructor.name} root ${root}`;
    three((s) => {
      if (me === root) fill(buf, 'x', root, s); else poison(buf);
      return () => eq(what, buf, gen(dt, 'x', root, n, s));
    }, () => w.bcast(buf, root), () => w.ibcast(buf, root), () => w.bcastInit(buf, root));
  }

  // -- reduce (root gets the fold; the others pass no receive buffer)
  for (const root of roots) for (let k = 0; k < 3; k++) {
    const [dt, op] = nextCombo(), n = nextCount();
    const send = alloc(dt, n), recv = me === root ? alloc(dt, n) : null;
    const what = `reduce ${op} ${n} x ${send.constructor.name} root ${root}`;
    three((s) => {
      fill(send, op, me, s);
      if (recv !== null) poison(recv);
      return () => { if (recv !== null) eq(what, recv, referenceReduce(op, dt, ranks((r) => gen(dt, op, r, n, s)))); };
    }, () => w.reduce(send, recv, op, root), () => w.ireduce(send, recv, op, root), () => w.reduceInit(send, recv, op, root));
  }

  // -- allreduce, with a send buffer and IN_PLACE
  for (let k = 0; k < 8; k++) {
    const [dt, op] = nextCombo(), n = nextCount(), inPlace = k % 2 === 1;
    const send = alloc(dt, n), recv = alloc(dt, n), src = inPlace ? IN_PLACE : send;
    const what = `allreduce ${op} ${n} x ${send.constructor.name}${inPlace ? ' in place' : ''}`;
    three((s) => {
      if (inPlace) fill(recv, op, me, s); else { fill(send, op, me, s); poison(recv); }
      return () => {
        eq(what, recv, referenceReduce(op, dt, ranks((r) => gen(dt, op, r, n, s))));
        if (!inPlace) eq(`${what} (send untouched)`, send, gen(dt, op, me, n, s));
      };
    }, () => w.allreduce(src, recv, op), () => w.iallreduce(src, recv, op), () => w.allreduceInit(src, recv, op));
  }

  // -- gather and scatter: block r is rank r's (gen(r))
  for (const root of roots) {
    const dt = nextType(), n = nextCount(), send = alloc(dt, n), recv = me === root ? alloc(dt, n * p) : null;
    const what = `gather ${n} x ${send.constructor.name} root ${root}`;
    three((s) => {
      fill(send, 'x', me, s);
      if (recv !== null) poison(recv);
      return () => { if (recv !== null) for (let r = 0; r < p; r++) eq(`${what} block ${r}`, recv.subarray(r * n, (r + 1) * n), gen(dt, 'x', r, n, s)); };
    }, () => w.gather(send, recv, root), () => w.igather(send, recv, root), () => w.gatherInit(send, recv, root));
  }
  for (const root of roots) {
    const dt = nextType(), n = nextCount(), send = me === root ? alloc(dt, n * p) : null, recv = alloc(dt, n);
    const what = `scatter ${n} x ${recv.constructor.name} root ${root}`;
    three((s) => {
      if (send !== null) for (let r = 0; r < p; r++) put(send, gen(dt, 'x', r, n, s), r * n);
      poison(recv);
      return () => eq(what, recv, gen(dt, 'x', me, n, s));
    }, () => w.scatter(send, recv, root), () => w.iscatter(send, recv, root), () => w.scatterInit(send, recv, root));
  }

  // -- gatherv and scatterv: uneven blocks (some empty) with a gap before each
  for (const root of roots) {
    const dt = nextType(), c0 = nShape++;
    const counts = ranks((r) => (r * 3 + c0) % 4), displs = ranks((r) => r + sum(counts, r) + 1), total = p + sum(counts, p) + 1;
    const send = alloc(dt, counts[me]!), full = alloc(dt, total), recv = me === root ? full : null;
    const what = `gatherv counts [${counts.join(',')}] root ${root}`;
    three((s) => {
      fill(send, 'x', me, s);
      poison(full);
      return () => { if (recv !== null) for (let r = 0; r < p; r++) eq(`${what} block ${r}`, recv.subarray(displs[r]!, displs[r]! + counts[r]!), gen(dt, 'x', r, counts[r]!, s)); };
    }, () => w.gatherv(send, recv, counts, displs, root), () => w.igatherv(send, recv, counts, displs, root),
    () => w.gathervInit(send, recv, counts, displs, root));
    const what2 = `scatterv counts [${counts.join(',')}] root ${root}`;
    const out = alloc(dt, counts[me]!);
    three((s) => {
      poison(full);
      for (let r = 0; r < p; r++) put(full, gen(dt, 'x', r, counts[r]!, s), displs[r]!);
      poison(out);
      return () => eq(what2, out, gen(dt, 'x', me, counts[me]!, s));
    }, () => w.scatterv(recv, counts, displs, out, root), () => w.iscatterv(recv, counts, displs, out, root),
    () => w.scattervInit(recv, counts, displs, out, root));
  }

  // -- allgather and allgatherv
  for (let k = 0; k < 2; k++) {
    const dt = nextType(), n = nextCount(), send = alloc(dt, n), recv = alloc(dt, n * p);
    const what = `allgather ${n} x ${send.constructor.name}`;
    three((s) => {
      fill(send, 'x', me, s);
      poison(recv);
      return () => { for (let r = 0; r < p; r++) eq(`${what} block ${r}`, recv.subarray(r * n, (r + 1) * n), gen(dt, 'x', r, n, s)); };
    }, () => w.allgather(send, recv), () => w.iallgather(send, recv), () => w.allgatherInit(send, recv));
  }
  {
    const dt = nextType(), c0 = nShape++;
    const counts = ranks((r) => (r + c0) % 3), displs = ranks((r) => sum(counts, r) + (r >> 1)), total = sum(counts, p) + (p >> 1);
    const send = alloc(dt, counts[me]!), recv = alloc(dt, total);
    const what = `allgatherv counts [${counts.join(',')}]`;
    three((s) => {
      fill(send, 'x', me, s);
      poison(recv);
      return () => { for (let r = 0; r < p; r++) eq(`${what} block ${r}`, recv.subarray(displs[r]!, displs[r]! + counts[r]!), gen(dt, 'x', r, counts[r]!, s)); };
    }, () => w.allgatherv(send, recv, counts, displs), () => w.iallgatherv(send, recv, counts, displs),
    () => w.allgathervInit(send, recv, counts, displs));
  }

  // -- alltoall and alltoallv: rank i's block for rank j is gen(i * p + j)
  for (let k = 0; k < 2; k++) {
    const dt = nextType(), n = nextCount(), send = alloc(dt, n * p), recv = alloc(dt, n * p);
    const what = `alltoall ${n} x ${send.constructor.name}`;
    three((s) => {
      for (let j = 0; j < p; j++) put(send, gen(dt, 'x', me * p + j, n, s), j * n);
      poison(recv);
      return () => { for (let i = 0; i < p; i++) eq(`${what} from ${i}`, recv.subarray(i * n, (i + 1) * n), gen(dt, 'x', i * p + me, n, s)); };
    }, () => w.alltoall(send, recv), () => w.ialltoall(send, recv), () => w.alltoallInit(send, recv));
  }
  {
    const dt = nextType(), c0 = nShape++;
    const c = (from: number, to: number): number => (from + 2 * to + c0) % 3;
    const sc = ranks((j) => c(me, j)), sd = ranks((j) => sum(sc, j));
    const rc = ranks((i) => c(i, me)), rd = ranks((i) => sum(rc, i) + i + 1);
    const send = alloc(dt, sum(sc, p)), recv = alloc(dt, sum(rc, p) + p + 1);
    const what = `alltoallv`;
    three((s) => {
      for (let j = 0; j < p; j++) put(send, gen(dt, 'x', me * p + j, sc[j]!, s), sd[j]!);
      poison(recv);
      return () => { for (let i = 0; i < p; i++) eq(`${what} from ${i}`, recv.subarray(rd[i]!, rd[i]! + rc[i]!), gen(dt, 'x', i * p + me, rc[i]!, s)); };
    }, () => w.alltoallv(send, sc, sd, recv, rc, rd), () => w.ialltoallv(send, sc, sd, recv, rc, rd),
    () => w.alltoallvInit(send, sc, sd, recv, rc, rd));
  }

  // -- reduceScatterBlock and reduceScatter: rank r gets its slice of the full fold
  for (let k = 0; k < 4; k++) {
    const [dt, op] = nextCombo(), block = k < 2, c0 = nShape++;
    const counts = block ? ranks(() => COUNTS[c0 % COUNTS.length]!) : ranks((r) => (r + c0) % 3);
    const total = sum(counts, p), at = sum(counts, me);
    const send = alloc(dt, total), recv = alloc(dt, counts[me]!);
    const what = `${block ? 'reduceScatterBlock' : 'reduceScatter'} ${op} ${send.constructor.name} counts [${counts.join(',')}]`;
    three((s) => {
      fill(send, op, me, s);
      poison(recv);
      return () => eq(what, recv, referenceReduce(op, dt, ranks((r) => gen(dt, op, r, total, s))).subarray(at, at + counts[me]!));
    }, block ? () => w.reduceScatterBlock(send, recv, op) : () => w.reduceScatter(send, recv, counts, op),
    block ? () => w.ireduceScatterBlock(send, recv, op) : () => w.ireduceScatter(send, recv, counts, op),
    block ? () => w.reduceScatterBlockInit(send, recv, op) : () => w.reduceScatterInit(send, recv, counts, op));
  }

  // -- scan and exscan: rank r gets the fold of ranks 0..r (exscan: 0..r-1; rank 0's is left as it was)
  for (const coll of ['scan', 'exscan'] as const) for (let k = 0; k < 3; k++) {
    const [dt, op] = nextCombo(), n = nextCount(), send = alloc(dt, n), recv = alloc(dt, n);
    const upto = coll === 'scan' ? me + 1 : me;
    const what = `${coll} ${op} ${n} x ${send.constructor.name}`;
    three((s) => {
      fill(send, op, me, s);
      poison(recv);
      return () => {
        if (upto === 0) { const untouched = alloc(dt, n); poison(untouched); eq(`${what} (rank 0 untouched)`, recv, untouched); }
        else eq(what, recv, referenceReduce(op, dt, Array.from({ length: upto }, (_, r) => gen(dt, op, r, n, s))));
      };
    }, coll === 'scan' ? () => w.scan(send, recv, op) : () => w.exscan(send, recv, op),
    coll === 'scan' ? () => w.iscan(send, recv, op) : () => w.iexscan(send, recv, op),
    coll === 'scan' ? () => w.scanInit(send, recv, op) : () => w.exscanInit(send, recv, op));
  }

  return { checks, hash: hash.toString(16).padStart(8, '0') };
}

/** counts[0] + ... + counts[upto - 1]. */
function sum(counts: readonly number[], upto: number): number {
  let s = 0;
  for (let i = 0; i < upto; i++) s += counts[i]!;
  return s;
}
