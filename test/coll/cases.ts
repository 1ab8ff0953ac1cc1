/**
 * What the per-collective loopback tests share: the (type, op) pairs, inputs whose every fold
 * order gives the reference's exact result, the algorithms to force, the node layouts that
 * hierarchical algorithms run over, and the world variants (eager or rendezvous messages,
 * completions in order or shuffled by a seed).
 *
 * Inputs are small integers, so every algorithm must match the sequential reference fold
 * (src/ops/reference.ts) bit for bit, floats included. Expected results are computed here from
 * the inputs, never with the library's kernels.
 */
import assert from 'node:assert/strict';
import { mulberry32 } from '../../src/bench/prng.ts';
import { LoopbackWorld, type LoopbackRank, type LoopbackWorldOptions } from '../../src/coll/loopback.ts';
import { ALGORITHMS, type CollName } from '../../src/coll/select.ts';
import { DEFAULT_CONFIG, type CoreConfig } from '../../src/config.ts';
import type { TypedArray } from '../../src/comm/validate.ts';
import { DType, ctorOf, dtypeOf, isBigInt } from '../../src/ops/dtype.ts';
import { Op, type OpLike } from '../../src/ops/op.ts';
import { referenceReduce } from '../../src/ops/reference.ts';

export type DT = (typeof DType)[keyof typeof DType];
export interface OpSpec {
  name: string;
  op: OpLike;
  /** Elements per item (a count is a multiple of it). */
  item: number;
  commutative: boolean;
}

/** 2x2 matrix product on (a, b, c, d) items: associative, not commutative. */
export const matmul = Op.create((inout: Float64Array, input: Float64Array) => {
  for (let k = 0; k < inout.length; k += 4) {
    const a = input[k]!, b = input[k + 1]!, c = input[k + 2]!, d = input[k + 3]!;
    const e = inout[k]!, f = inout[k + 1]!, g = inout[k + 2]!, h = inout[k + 3]!;
    inout[k] = a * e + b * g;
    inout[k + 1] = a * f + b * h;
    inout[k + 2] = c * e + d * g;
    inout[k + 3] = c * f + d * h;
  }
}, { commutative: false, itemLength: 4, name: 'matmul' });

/**
 * Composition of affine maps t -> a t + b on (a, b) items, left operand first: (a1, b1) ⊕
 * (a2, b2) = (a1 a2, a2 b1 + b2), exact modulo 2^32. Associative, not commutative.
 */
export const affine = Op.create((inout: Int32Array, input: Int32Array) => {
  for (let k = 0; k < inout.length; k += 2) {
    const a1 = input[k]!, b1 = input[k + 1]!, a2 = inout[k]!, b2 = inout[k + 1]!;
    inout[k] = Math.imul(a1, a2);
    inout[k + 1] = (Math.imul(a2, b1) + b2) | 0;
  }
}, { commutative: false, itemLength: 2, name: 'affine' });

const spec = (name: string, item = 1, commutative = true, op: OpLike = name as OpLike): OpSpec => ({ name, op, item, commutative });

/** Every predefined op on some type, and two user ops that do not commute. */
export const COMBOS: ReadonlyArray<readonly [DT, OpSpec]> = [
  [DType.Float64, spec('sum')],
  [DType.Int32, spec('prod')],
  [DType.Float64, spec('matmul', 4, false, matmul)],
  [DType.Uint8, spec('max')],
  [DType.Int16, spec('min')],
  [DType.Float32, spec('sum')],
  [DType.BigInt64, spec('sum')],
  [DType.Int32, spec('affine', 2, false, affine)],
  [DType.Float64, spec('minloc', 2)],
  [DType.BigUint64, spec('band')],
  [DType.Int8, spec('bxor')],
  [DType.Int32, spec('maxloc', 2)],
  [DType.Uint16, spec('lor')],
  [DType.Uint32, spec('land')],
  [DType.Int32, spec('lxor')],
  [DType.Uint8Clamped, spec('sum')],
  [DType.Int32, spec('bor')],
  [DType.Float64, spec('prod')],
  [DType.Float32, spec('max')],
];

/** Element types of every width, for the collectives that only move data. */
export const DATA_TYPES: readonly DT[] = [DType.Float64, DType.Int32, DType.Uint8, DType.BigInt64, DType.Int16, DType.Float32];

/** Element counts per rank (or per block): zero, odd, fewer than the ranks, more. */
export const COUNTS: readonly number[] = [0, 1, 2, 3, 5, 7, 16, 33, 100];

/** Communicator sizes: 1..17. */
export const SIZES: readonly number[] = Array.from({ length: 17 }, (_, i) => i + 1);

/** Input element i of `rank` for case `salt`: small integers, so every fold order is exact. */
export function gen(dt: DT, op: string, rank: number, n: number, salt: number): TypedArray {
  const a = new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
  const unsigned = dt === DType.Uint8 || dt === DType.Uint16 || dt === DType.Uint32 || dt === DType.BigUint64 || dt === DType.Uint8Clamped;
  const pairs = op === 'minloc' || op === 'maxloc';
  for (let i = 0; i < n; i++) {
    const h = (rank * 7919 + i * 104729 + salt * 31) % 1009;
    let v: number;
    if (op === 'prod' || op === 'matmul') v = (h % 4) - 1; // -1..2
    else if (op === 'affine') v = i % 2 === 0 ? [-1, 1, 2][h % 3]! : (h % 21) - 10; // a never 0
    else if (pairs) v = i % 2 === 1 ? rank : (h % 5) - 2; // (value, index) pairs
    else if (op === 'sum') v = (h % 21) - 10;
    else v = (h % 9) - 4;
    if (unsigned) v = Math.abs(v) + (pairs ? 0 : h % 3);
    (a as unknown as Array<number | bigint>)[i] = isBigInt(dt) ? BigInt(v) : v;
  }
  return a;
}

/** Every rank's input for one case. */
export const inputs = (dt: DT, op: string, p: number, n: number, salt: number): TypedArray[] =>
  Array.from({ length: p }, (_, r) => gen(dt, op, r, n, salt));

/** The sequential fold of `all`, in rank order (the reference). */
export const fold = (o: OpSpec, dt: DT, all: readonly TypedArray[]): TypedArray => referenceReduce(o.op, dt, all);

export const like = (a: TypedArray, n = a.length): TypedArray => new (a.constructor as new (n: number) => TypedArray)(n);

/** What output buffers hold before a call: a value no case produces where it lands. */
export function poison(a: TypedArray): TypedArray {
  (a as unknown as { fill(v: unknown): void }).fill(isBigInt(dtypeOf(a)) ? 77n : 77);
  return a;
}

/** A poisoned array of `n` elements of `dt`. */
export const poisoned = (dt: DT, n: number): TypedArray => poison(new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n));

/** A copy. */
export const copyOf = (a: TypedArray): TypedArray => a.slice() as TypedArray;

/** Asserts two arrays hold the same elements, naming the first difference. */
export function same(what: string, got: ArrayLike<unknown>, want: ArrayLike<unknown>): void {
  if (got.length !== want.length) assert.fail(`${what}: length ${got.length}, expected ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (got[i] !== want[i] && !(Number.isNaN(got[i]) && Number.isNaN(want[i]))) {
      assert.fail(`${what}: element ${i} is ${String(got[i])}, expected ${String(want[i])}` +
        ` (got [${Array.from(got).slice(0, 12).join(', ')}], want [${Array.from(want).slice(0, 12).join(', ')}])`);
    }
  }
}

/**
 * Every algorithm of a collective that has a rank schedule (not the engines' compositions),
 * degree variants included, and undefined: the selection table's choice.
 */
export function algorithms(coll: CollName): Array<string | undefined> {
  const out: Array<string | undefined> = [undefined];
  for (const [name, alg] of Object.entries(ALGORITHMS[coll])) {
    if (alg.composite !== undefined) continue;
    if (alg.radix !== undefined) for (let k = alg.radix[0]; k <= alg.radix[1]; k++) out.push(`${name}:${k}`);
    else out.push(name);
  }
  return out;
}

/** Whether an algorithm only takes commutative ops. */
export const commutativeOnly = (coll: CollName, alg: string | undefined): boolean =>
  alg !== undefined && ALGORITHMS[coll][alg.split(':')[0]!]!.commutativeOnly === true;

/** The (type, op) pairs an algorithm takes. */
export const combosFor = (coll: CollName, alg: string | undefined): ReadonlyArray<readonly [DT, OpSpec]> =>
  COMBOS.filter(([, o]) => o.commutative || !commutativeOnly(coll, alg));

/** How a test names an algorithm: "with ring", "with knomial:3", "as selected". */
export const withAlg = (alg: string | undefined): string =>
  alg === undefined ? 'as selected' : alg === 'hier' ? 'with hier (its leaders running each flat algorithm in turn)' : `with ${alg}`;

/**
 * For `hier`, a configuration whose NBC_<COLLECTIVE>_ALGORITHM forces the leaders' phase to
 * the (k mod n)-th flat algorithm of the leaders' collective (overrides reach the leaders,
 * select.ts), so the compositions run over every flat builder; undefined otherwise.
 */
export function leadersConfig(coll: CollName, alg: string | undefined, k: number): CoreConfig | undefined {
  const leaders = ALGORITHMS[coll].hier?.leaders;
  if (alg !== 'hier' || leaders === undefined) return undefined;
  const input = { size: 2, bytes: 0, commutative: true, executor: 'host', nodes: 2, ppn: 1 };
  const colls = typeof leaders === 'string' ? [leaders] : [leaders({ ...input, uniform: true }), leaders({ ...input, uniform: false })];
  const forced: Record<string, string> = {};
  for (const c of new Set(colls)) {
    const flat = algorithms(c).filter((a): a is string => a !== undefined && a !== 'hier');
    forced[c] = flat[k % flat.length]!;
  }
  return { ...DEFAULT_CONFIG, algorithms: forced };
}

export interface Layout {
  name: string;
  nodeOf: (rank: number) => number;
}

/**
 * Node layouts for `p` ranks: one node, nodes of 2 and of 3 consecutive ranks (the last one
 * smaller where p does not divide), and ranks dealt round-robin over 3 nodes (nodes whose
 * ranks are not contiguous, as a split communicator may have).
 */
export function layouts(p: number): Layout[] {
  const out: Layout[] = [{ name: 'one node', nodeOf: () => 0 }];
  if (p >= 2) out.push({ name: 'nodes of 2', nodeOf: (r) => Math.floor(r / 2) });
  if (p >= 4) out.push({ name: 'nodes of 3', nodeOf: (r) => Math.floor(r / 3) });
  if (p >= 4) out.push({ name: 'round-robin over 3 nodes', nodeOf: (r) => r % 3 });
  return out;
}

/** The node layouts a case runs on: all of them for hierarchical algorithms and the selection table's choice, one node otherwise. */
export const layoutsFor = (alg: string | undefined, p: number): Layout[] =>
  alg === undefined || alg === 'hier' ? layouts(p) : layouts(1);

/**
 * A world for case number `k`: messages eager or by rendezvous (or eager up to 24 bytes), and
 * completions delivered in order or in an order drawn from the seed k.
 */
export function world(p: number, k: number, opts: LoopbackWorldOptions = {}): LoopbackWorld {
  const eagerBytes = [0, Infinity, 24][k % 3]!;
  const random = k % 2 === 1 ? mulberry32(k) : undefined;
  return new LoopbackWorld(p, { eagerBytes, random, ...opts });
}

/** Runs `calls` on every rank of `w` and completes them; a loopback failure names the case. */
export function runCase(w: LoopbackWorld, what: string, calls: (comm: LoopbackRank) => void): void {
  try {
    w.run(calls);
  } catch (err) {
    throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
  }
}

/** The algorithm rank `r` of `w` ran last ("allreduce/ring"), for messages. */
export const ran = (w: LoopbackWorld, r = 0): string => w.ranks[r]!.plans.at(-1)?.sched.algorithm ?? 'nothing';

/** The cases of a rooted collective on `p` ranks: every root and every count of COUNTS at least once. */
export function rootedCases(p: number): Array<{ root: number; count: number }> {
  return Array.from({ length: Math.max(p, COUNTS.length) }, (_, j) => ({ root: j % p, count: COUNTS[j % COUNTS.length]! }));
}

/**
 * Per-rank counts for v-collectives of `p` ranks, case `salt`: zeros among them, and
 * displacements that leave gaps and put the blocks in an order other than rank order. Returns
 * the counts, the displacements and the buffer length they need.
 */
export function vLayout(p: number, salt: number, maxCount = 4): { counts: number[]; displs: number[]; length: number } {
  const counts = Array.from({ length: p }, (_, r) => (r * 3 + salt) % (maxCount + 1));
  const order = Array.from({ length: p }, (_, r) => r);
  if (salt % 2 === 1) order.reverse();
  const displs = new Array<number>(p).fill(0);
  let at = salt % 3;
  for (const r of order) {
    displs[r] = at;
    at += counts[r]! + (r % 2);
  }
  return { counts, displs, length: at + 1 };
}
