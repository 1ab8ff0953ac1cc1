/**
 * Argument checks of the collectives: every bad call raises its typed NbcError, naming the
 * communicator and what was expected, before any message is sent (docs/errors.md). Also the
 * Planner, what the per-collective planning modules (plan-*.ts) need of a communicator.
 */
import type { Neighborhood } from '../comm/topology.js';
import { bytesOf, type TypedArray } from '../comm/validate.js';
import { describeValue } from '../describe.js';
import { NbcCountError, NbcRootError, NbcTypeError } from '../errors.js';
import { bytesPerElement, dtypeOf, resolveOp, type OpLike } from '../ops/index.js';
import { registerUserOp } from '../ops/regions.js';
import type { InPlace } from '../p2p/constants.js';
import type { Plan } from '../sched/executor.js';
import type { CollOptions } from './options.js';
import type { CollName } from './select.js';
import type { CollShape } from './shape.js';

export type Buf = TypedArray;
export type BufOrInPlace = TypedArray | InPlace;
export type Counts = ArrayLike<number>;

export const EMPTY: Uint8Array = new Uint8Array(0);

/** What planning needs of a communicator. */
export interface Planner {
  readonly rank: number;
  readonly size: number;
  /** The communicator's context id, for messages. */
  readonly ctx: number;
  /** The shape every call starts from (this rank, the size, a root). */
  base(root?: number): CollShape;
  /** Selects, takes the schedule from the cache (or builds it) and names the executor. */
  plan(coll: CollName, s: CollShape, opts: CollOptions | undefined, cacheable: boolean, send: Uint8Array, recv: Uint8Array,
    extra?: Partial<Plan>): Plan;
  /** A Cartesian or distributed-graph communicator's neighbourhood (NBC_ERR_COMM on others). */
  neighbors(coll: string): Neighborhood;
}

/** The bytes of a buffer argument (NBC_ERR_TYPE if it is not a typed array). */
export function buf(c: Planner, coll: string, b: unknown, what: string): Uint8Array {
  return bytesOf(b, coll, c.ctx, what);
}

/** Whether two byte views share no byte (a reduction's SEND and RECV without IN_PLACE). */
export function apart(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer !== b.buffer || a.byteOffset + a.byteLength <= b.byteOffset || b.byteOffset + b.byteLength <= a.byteOffset;
}

export function checkRoot(c: Planner, root: number, coll: string): void {
  if (!Number.isInteger(root) || root < 0 || root >= c.size) {
    const what = typeof root === 'number' ? `root ${String(root)} is out of range` : `root is ${describeValue(root)}`;
    throw new NbcRootError(`Cannot ${coll} on communicator ${c.ctx}: ${what}; expected an integer 0..${c.size - 1}`);
  }
}

export function sameType(c: Planner, coll: string, a: Buf, b: Buf): void {
  if (a.constructor !== b.constructor && !(a instanceof Uint8Array && b instanceof Uint8Array)) {
    throw new NbcTypeError(`Cannot ${coll} on communicator ${c.ctx}: send is ${describeValue(a)} but recv is ${describeValue(b)}; expected the same typed array type`);
  }
}

export function count(c: Planner, coll: string, what: string, got: number, expected: number): void {
  if (got !== expected) {
    throw new NbcCountError(`Cannot ${coll} on communicator ${c.ctx}: ${what} has ${got} elements; expected ${expected}`);
  }
}

/** Validates an op for a buffer; returns the shape fields of a reduction. */
export function reduction(_c: Planner, coll: string, op: OpLike, b: Buf): Pick<CollShape, 'dtype' | 'op' | 'commutative' | 'esize'> {
  const o = resolveOp(op, coll);
  const dt = dtypeOf(b);
  o.check(dt, b.length, coll);
  registerUserOp(o);
  return { dtype: dt, op: o.id, commutative: o.commutative, esize: bytesPerElement(dt) * o.itemLength };
}

/**
 * Element counts and displacements to byte Int32Arrays, validated against a buffer; `displs`
 * null: the blocks lie back to back (a reduceScatter's counts). A missing array is NBC_ERR_COUNT.
 */
export function vector(c: Planner, coll: string, counts: Counts | null | undefined, displs: Counts | null | undefined, bpe: number, bufLen: number, what: string): { c: Int32Array; d: Int32Array } {
  const size = c.size;
  if (counts === null || counts === undefined || counts.length !== size || (displs !== null && (displs === undefined || displs.length !== size))) {
    throw new NbcCountError(`Cannot ${coll} on communicator ${c.ctx}: ${what} counts and displacements must each have ${size} entries (one per rank)`);
  }
  const cs = new Int32Array(size);
  const d = new Int32Array(size);
  let run = 0;
  for (let i = 0; i < size; i++) {
    const n = counts[i]!;
    const at = displs === null ? run : displs[i]!;
    if (!Number.isInteger(n) || n < 0 || !Number.isInteger(at) || at < 0 || at + n > bufLen) {
      throw new NbcCountError(`Cannot ${coll} on communicator ${c.ctx}: ${what} entry ${i} (count ${String(n)} at displacement ${String(at)}) does not fit a buffer of ${bufLen} elements; expected non-negative integers within it`);
    }
    cs[i] = n * bpe;
    d[i] = at * bpe;
    run += n;
  }
  return { c: cs, d };
}
