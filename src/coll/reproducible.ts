/**
 * `{ reproducible: true }`: sums of Float64 or Float32 whose bits do not depend on the rank
 * count, the algorithm or the order of the contributions (ops/binned.ts). Each rank turns its
 * elements into binned items (2 + 2K doubles each, K = `folds`, 2 by default), the items are
 * reduced by the binned merge, a user op over whole items (exactly associative and
 * commutative, so every algorithm gives the same bits), and each item is turned back into the
 * double nearest it (a Float32 result rounded once more).
 *
 * What runs it: the host executor, with every host algorithm the selection or `algorithm`
 * names (hier included). The offload and agg executors run schedules away from the rank's
 * thread, where a user op cannot go, and are refused (docs/ops.md).
 *
 * Core code: no node:* imports.
 */
import type { TypedArray } from '../comm/validate.js';
import { NbcArgError } from '../errors.js';
import { binnedItemLength, checkFolds, depositFresh, finish, merge } from '../ops/binned.js';
import { Op, resolveOp, type OpLike } from '../ops/op.js';
import { IN_PLACE } from '../p2p/constants.js';
import { Request, type RequestListener } from '../p2p/request.js';
import type { BufOrInPlace } from './args.js';
import type { CollOptions } from './options.js';

/** What the reproducible calls need of a communicator. */
export interface ReproducibleTarget {
  readonly rank: number;
  readonly size: number;
  allreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): void;
  reduceScatter(send: BufOrInPlace, recv: Float64Array, counts: ArrayLike<number>, op: OpLike, opts?: CollOptions): void;
  allgatherv(send: BufOrInPlace, recv: Float64Array | Float32Array, counts: ArrayLike<number>, displs: ArrayLike<number>, opts?: CollOptions): void;
  iallreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Request;
  ireduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Request;
}

const ops: Array<Op | undefined> = [];

/** From this many elements a blocking reproducible allreduce reduce-scatters the items and gathers the results. */
const SPLIT_ELEMENTS = 4096;

/** The binned merge of K folds as a user op over whole items (commutative). */
export function binnedSumOp(folds: 2 | 3): Op {
  checkFolds(folds, 'make the binned sum op');
  return (ops[folds] ??= Op.create((inout: Float64Array, input: Float64Array) => {
    const L = binnedItemLength(folds);
    for (let i = 0; i < inout.length; i += L) merge(inout, i, input, i, folds);
  }, { commutative: true, itemLength: binnedItemLength(folds), name: `binned-sum/${folds}` }));
}

/**
 * Whether a call takes the reproducible path: asked for by the call, or by NBC_REPRODUCIBLE=1
 * for the calls it fits (a sum of Float64 or Float32 on the host executor, no `{ reproducible:
 * false }`).
 */
export function wantsReproducible(byDefault: boolean, send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, opts: CollOptions | undefined, executor: string): boolean {
  const asked = opts?.reproducible;
  if (asked !== undefined || !byDefault) return asked === true;
  if (op !== 'sum' && !(op instanceof Op && op.name === 'sum' && op.isBuiltin)) return false;
  if ((opts?.executor ?? executor) !== 'host') return false;
  const b = send === IN_PLACE ? recv : send;
  return b instanceof Float64Array || b instanceof Float32Array;
}

/** The options of the inner reduction: the caller's algorithm and executor, host only. */
function innerOptions(opts: CollOptions, what: string): CollOptions {
  if (opts.executor !== undefined && opts.executor !== 'host') {
    throw new NbcArgError(`Cannot ${what} with { reproducible: true } on executor '${opts.executor}': reproducible sums run on the host executor (the binned merge is a user op, which the node engines cannot run); expected executor 'host' or none`);
  }
  return opts.algorithm === undefined ? { executor: 'host' } : { executor: 'host', algorithm: opts.algorithm };
}

/** Checks the call: sum over Float64Array or Float32Array; returns its input, output and fold count. */
function checkCall(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, opts: CollOptions, what: string):
  { input: Float64Array | Float32Array; output: Float64Array | Float32Array | null; folds: 2 | 3 } {
  const folds = checkFolds(opts.folds ?? 2, `${what} with { reproducible: true }`) as 2 | 3;
  const o = resolveOp(op, what);
  const input = (send === IN_PLACE ? recv : send) as TypedArray | null | undefined;
  const output = (recv === IN_PLACE ? send : recv) as TypedArray | null | undefined;
  const floats = (x: unknown): x is Float64Array | Float32Array => x instanceof Float64Array || x instanceof Float32Array;
  if (o.name !== 'sum' || !floats(input)) {
    throw new NbcArgError(`Cannot ${what} with { reproducible: true }: it applies to op 'sum' over Float64Array or Float32Array, got op '${o.name}' over ${input?.constructor.name ?? String(input)}; min, max, the bitwise and the logical ops give the same bits in any order already`);
  }
  return { input, output: output === null || output === undefined ? null : (output as Float64Array | Float32Array), folds };
}

/** Each element of `input` as a binned item, into `items` (new where not given). */
function binnedItems(input: Float64Array | Float32Array, folds: 2 | 3, items: Float64Array = new Float64Array(input.length * binnedItemLength(folds))): Float64Array {
  const L = binnedItemLength(folds);
  for (let i = 0; i < input.length; i++) depositFresh(items, i * L, input[i]!, folds);
  return items;
}

/** The reduction of the items, then each turned back into `output` once it completes. */
class ReproducibleRequest extends Request implements RequestListener {
  constructor(private readonly inner: Request, private readonly items: Float64Array, private readonly output: Float64Array | Float32Array | null,
    private readonly folds: 2 | 3) {
    super((inner as unknown as { progressor: ConstructorParameters<typeof Request>[0] }).progressor);
    if (inner.done) this.settled(0, inner.error);
    else {
      inner.listener = this;
      inner.listenerToken = 0;
    }
  }

  settled(_token: number, error: Error | null): void {
    if (error === null && this.output !== null) {
      const L = binnedItemLength(this.folds);
      const out = this.output;
      for (let i = 0; i < out.length; i++) out[i] = finish(this.items, i * L, this.folds);
    }
    this.status = this.inner.status;
    this.complete(error);
  }
}

/**
 * The blocking calls' items, kept per communicator and fold count while the length stays the
 * same: a loop of calls then passes the same buffer each time, which the blocking allreduce's
 * recent-call list (and its lean path) recognises.
 */
const kept = new WeakMap<object, Array<Float64Array | undefined>>();

function keptItems(c: object, n: number, folds: 2 | 3): Float64Array {
  let list = kept.get(c);
  if (list === undefined) kept.set(c, (list = []));
  const len = n * binnedItemLength(folds);
  let a = list[folds];
  if (a === undefined || a.length !== len) list[folds] = a = new Float64Array(len);
  return a; // every item is written whole (depositFresh)
}

/** allreduce with { reproducible: true }. */
export function reproducibleAllreduce(c: ReproducibleTarget, send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts: CollOptions): void {
  const { input, output, folds } = checkCall(send, recv, op, opts, 'allreduce');
  const items = binnedItems(input, folds, keptItems(c, input.length, folds));
  const inner = innerOptions(opts, 'allreduce');
  const L = binnedItemLength(folds);
  const out = output!;
  const n = out.length;
  const p = c.size;
  if (p > 1 && n >= SPLIT_ELEMENTS && opts.algorithm === undefined) {
    // Large: each rank reduces and finishes its block of the items, then the finished
    // doubles are gathered (the binned bytes cross once, the plain ones once).
    const counts = new Array<number>(p);
    const displs = new Array<number>(p);
    for (let r = 0, at = 0; r < p; r++) {
      counts[r] = Math.floor(n / p) + (r < n % p ? 1 : 0);
      displs[r] = at;
      at += counts[r]!;
    }
    const mine = counts[c.rank]!;
    const block = new Float64Array(mine * L);
    c.reduceScatter(items, block, counts.map((k) => k * L), binnedSumOp(folds), inner);
    const at = displs[c.rank]!;
    for (let i = 0; i < mine; i++) out[at + i] = finish(block, i * L, folds);
    c.allgatherv(IN_PLACE, out, counts, displs, { executor: 'host' });
    return;
  }
  c.allreduce(IN_PLACE, items, binnedSumOp(folds), inner);
  for (let i = 0; i < n; i++) out[i] = finish(items, i * L, folds);
}

/** iallreduce with { reproducible: true }. */
export function reproducibleIallreduce(c: ReproducibleTarget, send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts: CollOptions): Request {
  const { input, output, folds } = checkCall(send, recv, op, opts, 'allreduce');
  const items = binnedItems(input, folds);
  const inner = c.iallreduce(IN_PLACE, items, binnedSumOp(folds), innerOptions(opts, 'allreduce'));
  return new ReproducibleRequest(inner, items, output, folds);
}

/** ireduce with { reproducible: true }: the root's recv gets the sum. */
export function reproducibleIreduce(c: ReproducibleTarget, send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number,
  opts: CollOptions): Request {
  const { input, output, folds } = checkCall(send, c.rank === root ? recv : send, op, opts, 'reduce');
  const items = binnedItems(input, folds);
  const inner = c.ireduce(c.rank === root ? IN_PLACE : items, c.rank === root ? items : null, binnedSumOp(folds), root, innerOptions(opts, 'reduce'));
  return new ReproducibleRequest(inner, items, c.rank === root ? output : null, folds);
}

