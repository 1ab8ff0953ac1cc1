/**
 * Reduction operations: the twelve predefined ops and user ops made with `Op.create`.
 *
 * ## The one rule every algorithm depends on
 *
 * Every reduction in nbcoll is the in-place, two-operand step
 *
 *     inout[i] = input[i] ⊕ inout[i]          input is the LEFT operand
 *
 * exactly as MPI_User_function(invec, inoutvec) computes `inoutvec[i] = invec[i] op
 * inoutvec[i]`. A user op receives the arguments in the order `(inout, input)` (the array it
 * must overwrite first) and must store `input ⊕ inout` into `inout`. In a rank-ordered
 * reduction the left operand comes from the lower ranks: a rank that holds c2 and receives the
 * partial result c0 ⊕ c1 calls `fn(inout = c2, input = c0 ⊕ c1)` and ends up with
 * (c0 ⊕ c1) ⊕ c2. Non-commutative ops are only correct if every algorithm keeps this order.
 *
 * Core code: no `node:*` imports.
 */
import { NbcArgError, NbcCountError, NbcOpError, NbcTypeError } from '../errors.js';
import type { TypedArray } from '../comm/validate.js';
import { DTYPE_COUNT, DType, dtypeName, isDType } from './dtype.js';
import { OpCode, builtinKernel, type ReduceKernel } from './loops.js';
import { describeValue } from '../describe.js';

export { OpCode } from './loops.js';
export type { ReduceKernel } from './loops.js';

export type BuiltinOpName = keyof typeof OpCode;

/** The predefined ops, in OpCode order (`BUILTIN_OP_NAMES[OpCode.max] === 'max'`). */
export const BUILTIN_OP_NAMES: readonly BuiltinOpName[] = [
  'sum', 'prod', 'min', 'max', 'land', 'lor', 'lxor', 'band', 'bor', 'bxor', 'minloc', 'maxloc',
];

/**
 * A user reduction: store `input[i] ⊕ inout[i]` into `inout[i]` for every i (input is the
 * left operand). Both arrays have the same type and length; they may be views of scratch
 * memory valid only during the call, so do not keep them.
 */
export type UserOpFunction<T extends TypedArray = TypedArray> = (inout: T, input: T) => void;

export interface OpOptions {
  /**
   * True when `a ⊕ b = b ⊕ a` for all inputs. Collectives may then combine contributions in
   * any fixed order (ring, Rabenseifner). Default false: always correct, possibly slower.
   */
  commutative?: boolean;
  /**
   * Consecutive elements that form one item (4 for a 2x2 matrix stored flat). Counts must be
   * multiples of it and algorithms split buffers only at its multiples. Default 1.
   */
  itemLength?: number;
  /** Shown in error messages and schedule dumps. Default `user#<id>`. */
  name?: string;
}

/** Anything `resolveOp` accepts. */
export type OpLike = BuiltinOpName | Op;

/** Ids of user ops start here; predefined ops use their OpCode (0..11) as id. */
export const USER_OP_ID_BASE = 256;

const ALL_TYPES = (1 << DTYPE_COUNT) - 1;
const FLOAT_TYPES = (1 << DType.Float32) | (1 << DType.Float64);
const INTEGER_TYPES = ALL_TYPES & ~FLOAT_TYPES;

const INTEGER_NAMES = 'Int8, Uint8, Uint8Clamped, Int16, Uint16, Int32, Uint32, BigInt64, BigUint64';

/** Indexed by OpCode: bit `dt` set when the op is defined for datatype `dt`. */
const ALLOWED: readonly number[] = BUILTIN_OP_NAMES.map((name) =>
  name === 'band' || name === 'bor' || name === 'bxor' ? INTEGER_TYPES : ALL_TYPES);

let nextUserId = USER_OP_ID_BASE;

/** Indexed by OpCode; filled by Op's static block, the only code that may call its constructor. */
const BUILTINS: Op[] = [];

export class Op {
  /** 'sum', ..., or the user op's name. */
  readonly name: string;
  /** OpCode for predefined ops; USER_OP_ID_BASE and up for user ops (unique in this thread). */
  readonly id: number;
  readonly commutative: boolean;
  readonly isBuiltin: boolean;
  /** Elements per item: 2 for minloc/maxloc (value, index), options.itemLength for user ops. */
  readonly itemLength: number;
  /** The user function; undefined for predefined ops. */
  readonly fn: UserOpFunction | undefined;
  readonly #userKernel: ReduceKernel | undefined;

  private constructor(name: string, id: number, commutative: boolean, itemLength: number,
    fn: UserOpFunction | undefined) {
    this.name = name;
    this.id = id;
    this.commutative = commutative;
    this.isBuiltin = fn === undefined;
    this.itemLength = itemLength;
    this.fn = fn;
    this.#userKernel = fn === undefined ? undefined : userKernel(fn);
    Object.freeze(this);
  }

  static {
    BUILTIN_OP_NAMES.forEach((name, code) => {
      BUILTINS.push(new Op(name, code, true, name === 'minloc' || name === 'maxloc' ? 2 : 1, undefined));
    });
  }

  /**
   * A user op. `fn(inout, input)` must store `input[i] ⊕ inout[i]` into `inout[i]`: the
   * second argument is the LEFT operand (see the top of this file and docs/ops.md).
   *
   *     // 2x2 matrices, row-major, input × inout (not commutative)
   *     const matmul = Op.create((inout: Float64Array, input: Float64Array) => {
   *       for (let i = 0; i < inout.length; i += 4) {
   *         const [a, b, c, d] = input.subarray(i, i + 4), [e, f, g, h] = inout.subarray(i, i + 4);
   *         inout.set([a*e + b*g, a*f + b*h, c*e + d*g, c*f + d*h], i);
   *       }
   *     }, { commutative: false, itemLength: 4 });
   *
   * The function runs in the thread that created the op; executors that run schedules
   * elsewhere (offload, agg) cannot take user ops.
   */
  static create<T extends TypedArray>(fn: UserOpFunction<T>, options: OpOptions = {}): Op {
    if (typeof fn !== 'function') {
      throw new NbcOpError(
        `Cannot create a user op: the function is ${describeValue(fn)}; expected (inout, input) => void`);
    }
    const { commutative = false, itemLength = 1, name } = options;
    if (typeof commutative !== 'boolean') {
      throw new NbcArgError(`Cannot create a user op: commutative is ${describeValue(commutative)}; expected a boolean`);
    }
    if (!Number.isInteger(itemLength) || itemLength < 1) {
      throw new NbcArgError(`Cannot create a user op: itemLength is ${describeValue(itemLength)}; expected an integer >= 1`);
    }
    if (name !== undefined && typeof name !== 'string') {
      throw new NbcArgError(`Cannot create a user op: name is ${describeValue(name)}; expected a string`);
    }
    const id = nextUserId++;
    return new Op(name ?? `user#${id}`, id, commutative, itemLength, fn as UserOpFunction);
  }

  /** The predefined op of that name (one shared instance per name). */
  static builtin(name: BuiltinOpName): Op {
    return resolveOp(name);
  }

  /** True when this op is defined for elements of type `dt`. */
  accepts(dt: DType): boolean {
    if (!isDType(dt)) return false;
    return this.fn !== undefined || (((ALLOWED[this.id] ?? 0) >> dt) & 1) === 1;
  }

  /**
   * Throws unless this op can reduce `count` elements of type `dt`. `what` completes the
   * message "Cannot <what>: ..." (e.g. 'allreduce on communicator 3').
   * @throws NbcTypeError for an unknown datatype id; NbcOpError when the op is not defined
   *   for the type; NbcCountError when count is negative, fractional, or not a multiple of
   *   itemLength (odd for minloc/maxloc).
   */
  check(dt: DType, count?: number, what = 'reduce'): void {
    if (!isDType(dt)) {
      throw new NbcTypeError(`Cannot ${what}: unknown datatype id ${String(dt)}; expected 0..${DTYPE_COUNT - 1}`);
    }
    if (!this.accepts(dt)) {
      throw new NbcOpError(
        `Cannot ${what}: op '${this.name}' is not defined for ${dtypeName(dt)} elements; ` +
        `band, bor and bxor accept integer types only (${INTEGER_NAMES})`);
    }
    if (count === undefined) return;
    if (!Number.isInteger(count) || count < 0) {
      throw new NbcCountError(`Cannot ${what}: count is ${describeValue(count)}; expected an integer >= 0`);
    }
    if (count % this.itemLength !== 0) {
      throw new NbcCountError(this.isBuiltin
        ? `Cannot ${what}: op '${this.name}' reduces (value, index) pairs stored interleaved, ` +
          `so the element count must be even; got ${count}`
        : `Cannot ${what}: op '${this.name}' combines items of ${this.itemLength} elements; ` +
          `the element count ${count} is not a multiple of ${this.itemLength}`);
    }
  }

  /**
   * The kernel of this op for `dt`, for callers that reduce many times with one pair (the
   * schedule engine resolves it once per schedule). The kernel checks nothing.
   * @throws as `check(dt)`.
   */
  kernel(dt: DType, what = 'reduce'): ReduceKernel {
    this.check(dt, undefined, what);
    return this.#userKernel ?? builtinKernel(this.id as OpCode, dt);
  }

  toString(): string {
    return this.isBuiltin ? this.name : `${this.name} (user op, ${this.commutative ? '' : 'non-'}commutative)`;
  }
}

/** Calls fn on exactly the `count` elements, with views only when they are needed. */
function userKernel(fn: UserOpFunction): ReduceKernel {
  return (a, io, b, ii, n) => {
    if (n === 0) return;
    fn(io === 0 && n === a.length ? a : a.subarray(io, io + n),
      ii === 0 && n === b.length ? b : b.subarray(ii, ii + n));
  };
}

const BY_NAME: ReadonlyMap<string, Op> = new Map(BUILTINS.map((op) => [op.name, op]));

/**
 * The Op for a name or an Op.
 * @throws NbcOpError for an unknown name or a value that is neither; the message lists the names.
 */
export function resolveOp(op: unknown, what = 'reduce'): Op {
  if (typeof op === 'string') {
    const found = BY_NAME.get(op);
    if (found !== undefined) return found;
  } else if (op instanceof Op) {
    return op;
  }
  throw new NbcOpError(
    `Cannot ${what}: ${typeof op === 'string' ? `unknown op '${op}'` : `op is ${describeValue(op)}`}; ` +
    `expected one of ${BUILTIN_OP_NAMES.map((n) => `'${n}'`).join(', ')} or an Op from Op.create()`);
}

/** The predefined op with this id (OpCode), for decoding stored schedules. */
export function builtinOpById(id: number): Op {
  const op = BUILTINS[id];
  if (op === undefined) {
    throw new NbcOpError(`Unknown predefined op id ${id}; expected 0..${BUILTINS.length - 1}`);
  }
  return op;
}

