/**
 * The reference reduction that tests of every collective compare against: the sequential
 * rank-order fold
 *
 *     ((c0 ⊕ c1) ⊕ c2) ⊕ ... ⊕ c(P-1)
 *
 * written in the most obvious scalar way and sharing no code with the kernels (loops.ts,
 * kernels.ts). Integer results are computed exactly with BigInt and then cast to the element
 * type explicitly (wrap modulo 2^bits; saturate for Uint8Clamped), so the reference does not
 * lean on typed-array store semantics the kernels rely on. Slow by design; for tests.
 *
 * A collective whose algorithm folds in another order (trees, rings) matches this bit for bit
 * only for ops that are exactly associative and commutative on the data: integer ops always;
 * float sum/prod only when no rounding happens (e.g. small integers); min/max/minloc/maxloc
 * when there are no NaNs and no ±0 ties (see docs/ops.md).
 *
 * Core code: no `node:*` imports.
 */
import { NbcCountError, NbcTypeError } from '../errors.js';
import type { TypedArray } from '../comm/validate.js';
import { DType, ctorOf, dtypeName, isBigInt, isFloat, tryDtypeOf } from './dtype.js';
import { resolveOp, type OpLike } from './op.js';
import { withArticle } from '../describe.js';

/**
 * The fold of `contributions` (rank order: contributions[0] is rank 0's) under `op`, as a new
 * array of type `dt`. A user op is called as `fn(inout = copy of c_k, input = partial result)`.
 * @throws NbcOpError, NbcTypeError (a contribution is not of type dt), NbcCountError (no
 *   contributions, lengths differ, or a length is not a multiple of op.itemLength).
 */
export function referenceReduce(op: OpLike, dt: DType, contributions: readonly TypedArray[]): TypedArray {
  const what = 'compute the reference reduction';
  const o = resolveOp(op, what);
  const first = contributions[0];
  if (first === undefined) throw new NbcCountError(`Cannot ${what}: no contributions; expected at least one`);
  const n = first.length;
  o.check(dt, n, what);
  contributions.forEach((c, rank) => {
    if (tryDtypeOf(c) !== dt) {
      throw new NbcTypeError(`Cannot ${what}: contribution ${rank} is not ${withArticle(`${dtypeName(dt)}Array`)}`);
    }
    if (c.length !== n) {
      throw new NbcCountError(`Cannot ${what}: contribution ${rank} has ${c.length} elements but contribution 0 has ${n}`);
    }
  });

  let acc = copy(dt, first);
  for (let rank = 1; rank < contributions.length; rank++) {
    const right = copy(dt, contributions[rank]!);
    if (o.fn !== undefined) {
      o.fn(right, acc); // inout = right operand, input = left operand
    } else if (o.name === 'minloc' || o.name === 'maxloc') {
      combinePairs(o.name, acc, right);
    } else {
      for (let i = 0; i < n; i++) set(right, i, combine(o.name, dt, get(acc, i), get(right, i)));
    }
    acc = right;
  }
  return acc;
}

/** left ⊕ right for one element of type dt, as MPI defines it (C semantics of the type). */
function combine(name: string, dt: DType, left: number | bigint, right: number | bigint): number | bigint {
  if (isFloat(dt)) {
    const l = left as number, r = right as number;
    const round = dt === DType.Float32 ? Math.fround : (x: number): number => x;
    switch (name) {
      case 'sum': return round(l + r);
      case 'prod': return round(l * r);
      // MPI implementations (Open MPI, MPICH) compute `out = (out < in) ? out : in` with
      // out = right, in = left: a tie or a NaN on either side gives the left operand.
      case 'min': return r < l ? r : l;
      case 'max': return r > l ? r : l;
      case 'land': return l !== 0 && r !== 0 ? 1 : 0;
      case 'lor': return l !== 0 || r !== 0 ? 1 : 0;
      case 'lxor': return (l !== 0) !== (r !== 0) ? 1 : 0;
    }
    throw new Error(`reference: op ${name} on ${dtypeName(dt)}`);
  }
  // Integers: exact arithmetic on BigInt, then an explicit cast to the element type.
  const l = BigInt(left), r = BigInt(right);
  let exact: bigint;
  switch (name) {
    case 'sum': exact = l + r; break;
    case 'prod': exact = l * r; break;
    case 'min': exact = r < l ? r : l; break;
    case 'max': exact = r > l ? r : l; break;
    case 'land': exact = l !== 0n && r !== 0n ? 1n : 0n; break;
    case 'lor': exact = l !== 0n || r !== 0n ? 1n : 0n; break;
    case 'lxor': exact = (l !== 0n) !== (r !== 0n) ? 1n : 0n; break;
    case 'band': exact = l & r; break;
    case 'bor': exact = l | r; break;
    case 'bxor': exact = l ^ r; break;
    default: throw new Error(`reference: op ${name} on ${dtypeName(dt)}`);
  }
  const cast = castInteger(dt, exact);
  return isBigInt(dt) ? cast : Number(cast);
}

function castInteger(dt: DType, x: bigint): bigint {
  switch (dt) {
    case DType.Int8: return BigInt.asIntN(8, x);
    case DType.Uint8: return BigInt.asUintN(8, x);
    case DType.Uint8Clamped: return x < 0n ? 0n : x > 255n ? 255n : x;
    case DType.Int16: return BigInt.asIntN(16, x);
    case DType.Uint16: return BigInt.asUintN(16, x);
    case DType.Int32: return BigInt.asIntN(32, x);
    case DType.Uint32: return BigInt.asUintN(32, x);
    case DType.BigInt64: return BigInt.asIntN(64, x);
    case DType.BigUint64: return BigInt.asUintN(64, x);
  }
  throw new Error(`reference: ${dtypeName(dt)} is not an integer type`);
}

/**
 * minloc/maxloc on interleaved (value, index) pairs, as MPI defines them: the pair with the
 * smaller (larger) value; on equal values, that value with the smaller index. If the values
 * do not compare (NaN), the right pair stays (what Open MPI and MPICH do).
 */
function combinePairs(name: 'minloc' | 'maxloc', left: TypedArray, right: TypedArray): void {
  for (let i = 0; i < right.length; i += 2) {
    const lv = get(left, i), lk = get(left, i + 1), rv = get(right, i), rk = get(right, i + 1);
    const leftWins = name === 'minloc' ? lv < rv : lv > rv;
    if (leftWins) {
      set(right, i, lv);
      set(right, i + 1, lk);
    } else if (lv === rv) {
      set(right, i + 1, rk < lk ? rk : lk);
    }
  }
}

function copy(dt: DType, src: TypedArray): TypedArray {
  const out = new (ctorOf(dt) as unknown as new (len: number) => TypedArray)(src.length);
  for (let i = 0; i < src.length; i++) set(out, i, get(src, i));
  return out;
}

function get(a: TypedArray, i: number): number | bigint {
  return (a as ArrayLike<number | bigint>)[i]!;
}

function set(a: TypedArray, i: number, v: number | bigint): void {
  (a as unknown as { [i: number]: number | bigint })[i] = v;
}
