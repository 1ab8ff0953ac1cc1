/**
 * `{ reproducible: true }`: reductions whose bits do not depend on the rank count, the
 * algorithm, the executor or the order of the contributions.
 *
 * Sums of Float64 or Float32 are binned (ops/binned.ts) in one of two ways, which give the same
 * bits for the same contributions:
 *
 * - **One pass** (host executor, fewer than 512 elements): each element becomes one item, its
 *   top bin and K counts (packed into K doubles below 2^8 ranks), and the items are reduced by
 *   a merge that aligns their tops, a user op over whole items (exactly associative and
 *   commutative, so any algorithm gives the same bits).
 * - **Two phases** (512 elements and more, every call on the offload and agg executors, scan
 *   and exscan): the elements' bins are agreed first (an allreduce of one byte per element by
 *   `max`), then every rank splits its elements on them into K counts, exact integers, reduced
 *   by a plain `sum` of doubles: exact in any order, so the node engines and the fabric run
 *   it. A non-blocking call chains its second phase on a companion communicator (a dup made at
 *   the first such call), started in call order.
 * - **Exchange** (blocking allreduce from 4096 elements, any executor): the values of each
 *   rank's block go to it (an alltoallv, a plain reduce-scatter's bytes); it bins each element
 *   on the largest contribution, sums the counts and converts them chunk by chunk, and the
 *   doubles are gathered: a plain allreduce's bytes.
 *
 * Products of Float64 or Float32 (`op 'prod'`) take a canonical form: every rank's
 * contribution is gathered and multiplied in a fixed tree over rank indices, the same bits for
 * any algorithm and executor at a given rank count.
 *
 * Core code: no node:* imports.
 */
import type { Comm } from '../comm/comm.js';
import type { TypedArray } from '../comm/validate.js';
import { NbcArgError, NbcCountError } from '../errors.js';
import {
  binnedItemLength, checkFolds, COMPACT_MAX_TERMS, compactFinish, compactFresh, compactItemLength, compactMerge, depositFresh, finish, finishBlock, merge,
  maxCodesInto, PACKED_MAX_TERMS, packedFinish, packedFresh, packedMerge, splitAddBlock, splitBlock, topCodes,
} from '../ops/binned.js';
import { Op, resolveOp, type OpLike } from '../ops/op.js';
import { IN_PLACE } from '../p2p/constants.js';
import { Request, type RequestListener } from '../p2p/request.js';
import type { BufOrInPlace } from './args.js';
import { ownOptionsOf, type CollOptions } from './options.js';
import { PersistentRequest } from './persistent.js';

/** What the reproducible calls need of a communicator (a Communicator). */
export interface ReproducibleTarget extends Comm {
  allreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): void;
  allgatherv(send: BufOrInPlace, recv: Float64Array | Float32Array, counts: ArrayLike<number>, displs: ArrayLike<number>, opts?: CollOptions): void;
  alltoallv(send: Float64Array | Float32Array, scounts: ArrayLike<number>, sdispls: ArrayLike<number>, recv: Float64Array | Float32Array,
    rcounts: ArrayLike<number>, rdispls: ArrayLike<number>, opts?: CollOptions): void;
  iallreduce(send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions): Request;
  ireduce(send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Request;
  ireduceScatter(send: BufOrInPlace, recv: Float64Array, counts: ArrayLike<number>, op: OpLike, opts?: CollOptions): Request;
  iscan(send: BufOrInPlace, recv: Float64Array, op: OpLike, opts?: CollOptions): Request;
  iexscan(send: BufOrInPlace, recv: Float64Array, op: OpLike, opts?: CollOptions): Request;
  iallgather(send: BufOrInPlace, recv: Float64Array | Float32Array, opts?: CollOptions): Request;
  igather(send: BufOrInPlace, recv: Float64Array | Float32Array | null | undefined, root: number, opts?: CollOptions): Request;
  dup(): this;
}

/** The reductions that take `{ reproducible: true }`. */
export type ReproducibleColl = 'allreduce' | 'reduce' | 'reduceScatter' | 'reduceScatterBlock' | 'scan' | 'exscan';

/** One reproducible call, as the communicator hands it over. */
export interface ReproducibleCall {
  coll: ReproducibleColl;
  send: BufOrInPlace;
  recv: BufOrInPlace | null | undefined;
  op: OpLike;
  opts: CollOptions;
  /** The executor the call runs on (its option, else the communicator's default). */
  executor: string;
  /** reduce: the root. */
  root?: number;
  /** reduceScatter: the per-rank element counts; reduceScatterBlock: every rank's count, all equal. */
  counts?: ArrayLike<number>;
}

const binnedOps: Array<Op | undefined> = [];

/**
 * Below this many elements a call on the host executor takes the one pass (one collective
 * of compact items); from it, the two phases, whose per-element work is a third (measured
 * crossing on 2 ranks of a node: 256 to 1024 elements).
 */
const ONE_PASS_BELOW = 512;
/** From this many elements a blocking allreduce (more than one rank, no algorithm named) takes the exchange form. */
const SPLIT_ELEMENTS = 4096;

/**
 * The binned merge of K folds as a user op over whole items of `BinnedSum` (commutative):
 * what a user's own accumulators are reduced with.
 */
export function binnedSumOp(folds: 2 | 3): Op {
  checkFolds(folds, 'make the binned sum op');
  return (binnedOps[folds] ??= Op.create((inout: Float64Array, input: Float64Array) => {
    const L = binnedItemLength(folds);
    for (let i = 0; i < inout.length; i += L) merge(inout, i, input, i, folds);
  }, { commutative: true, itemLength: binnedItemLength(folds), name: `binned-sum/${folds}` }));
}

/**
 * The one pass's items on a communicator of `size` ranks: packed (K doubles, ops/binned.ts)
 * below 2^8 ranks, else compact (1 + K).
 */
interface ItemForm {
  readonly length: number;
  readonly op: Op;
  fresh(a: Float64Array, at: number, x: number, K: number): void;
  finish(a: Float64Array, at: number, K: number, single: boolean): number;
}

const forms: Array<ItemForm | undefined> = [];

function itemForm(size: number, folds: 2 | 3): ItemForm {
  const packed = size <= PACKED_MAX_TERMS;
  const key = folds * 2 + (packed ? 1 : 0);
  const existing = forms[key];
  if (existing !== undefined) return existing;
  const length = packed ? folds : compactItemLength(folds);
  const mergeItem = packed ? packedMerge : compactMerge;
  const op = Op.create((inout: Float64Array, input: Float64Array) => {
    for (let i = 0; i < inout.length; i += length) mergeItem(inout, i, input, i, folds);
  }, { commutative: true, itemLength: length, name: `binned-${packed ? 'packed' : 'compact'}/${folds}` });
  const form: ItemForm = packed
    ? { length, op, fresh: packedFresh, finish: packedFinish }
    : { length, op, fresh: compactFresh, finish: (a, at, K, single) => compactFinish(a, at + 1, 1, a[at]!, K, single) };
  return (forms[key] = form);
}

/**
 * Whether a call takes the reproducible path: asked for by the call, or by NBC_REPRODUCIBLE=1
 * for the calls it fits (a sum of Float64 or Float32, no `{ reproducible: false }`).
 */
export function wantsReproducible(byDefault: boolean, send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, opts: CollOptions | undefined): boolean {
  const asked = opts?.reproducible;
  if (asked !== undefined || !byDefault) return asked === true;
  if (op !== 'sum' && !(op instanceof Op && op.name === 'sum' && op.isBuiltin)) return false;
  const b = send === IN_PLACE ? recv : send;
  return b instanceof Float64Array || b instanceof Float32Array;
}

type Floats = Float64Array | Float32Array;

/** A checked call: its input and output (null where the rank gets none), op and fold count. */
interface Checked {
  input: Floats;
  output: Floats | null;
  prod: boolean;
  folds: 2 | 3;
  /** The inner calls' options: the caller's executor and algorithm. */
  inner: CollOptions;
  host: boolean;
  /** reduceScatter(Block): each rank's element count, checked; else null. */
  blocks: number[] | null;
}

const innerKept = new Map<string, Map<string | undefined, CollOptions>>();

/**
 * The inner calls' options, one object per (executor, algorithm): the recent-call lists match
 * them at once. `reproducible: false`, or under NBC_REPRODUCIBLE=1 the counts' plain sum would
 * come back here.
 */
function innerOptions(executor: string, algorithm: string | undefined): CollOptions {
  let byAlgorithm = innerKept.get(executor);
  if (byAlgorithm === undefined) innerKept.set(executor, (byAlgorithm = new Map()));
  let o = byAlgorithm.get(algorithm);
  if (o === undefined) byAlgorithm.set(algorithm, (o = ownOptionsOf(algorithm === undefined ? { executor, reproducible: false } : { executor, algorithm, reproducible: false })));
  return o;
}

const floats = (x: unknown): x is Floats => x instanceof Float64Array || x instanceof Float32Array;

function checkCall(c: ReproducibleTarget, call: ReproducibleCall): Checked {
  const what = call.coll;
  const folds = checkFolds(call.opts.folds ?? 2, `${what} with { reproducible: true }`) as 2 | 3;
  const o = resolveOp(call.op, what);
  const rooted = call.coll === 'reduce' && c.rank !== call.root;
  const input = (call.send === IN_PLACE ? call.recv : call.send) as TypedArray | null | undefined;
  const output = rooted ? null : (call.recv === IN_PLACE ? call.send : call.recv) as TypedArray | null | undefined;
  if ((o.name !== 'sum' && o.name !== 'prod') || !o.isBuiltin || !floats(input) || (output !== null && output !== undefined && !floats(output))) {
    throw new NbcArgError(`Cannot ${what} with { reproducible: true }: it applies to op 'sum' or 'prod' over Float64Array or Float32Array, got op '${o.name}' over ${input?.constructor.name ?? String(input)}; min, max, the bitwise and the logical ops give the same bits in any order already (docs/ops.md)`);
  }
  if (o.name === 'prod' && (what === 'scan' || what === 'exscan' || what === 'reduceScatter' || what === 'reduceScatterBlock')) {
    throw new NbcArgError(`Cannot ${what} with { reproducible: true } and op 'prod': the canonical product is made for allreduce and reduce; expected op 'sum', or allreduce or reduce`);
  }
  if (output === undefined || (output !== null && output.constructor !== input.constructor)) {
    throw new NbcArgError(`Cannot ${what} with { reproducible: true }: the output is ${output?.constructor.name ?? String(output)}; expected a ${input.constructor.name} like the input`);
  }
  const counted = (buffer: string, got: number, expected: number): void => {
    if (got !== expected) throw new NbcCountError(`Cannot ${what} on communicator ${c.ctx} with { reproducible: true }: ${buffer} has ${got} elements; expected ${expected}`);
  };
  let blocks: number[] | null = null;
  if (what === 'reduceScatterBlock') {
    // As the plain call: each rank's block is recv's length (in place, recv holds all of them).
    const n = call.send === IN_PLACE ? output!.length / c.size : output!.length;
    counted('send', input.length, Number.isInteger(n) ? n * c.size : NaN);
    blocks = new Array<number>(c.size).fill(n);
  } else if (what === 'reduceScatter') {
    const cs = call.counts;
    if (cs === undefined || cs.length !== c.size || !Array.from(cs).every((k) => Number.isInteger(k) && k >= 0)) {
      throw new NbcCountError(`Cannot ${what} on communicator ${c.ctx} with { reproducible: true }: counts must have ${c.size} non-negative integer entries (one per rank)`);
    }
    blocks = Array.from(cs, Number);
    counted('send', input.length, blocks.reduce((a, b) => a + b, 0));
    if (call.send !== IN_PLACE) counted('recv', output!.length, blocks[c.rank]!);
  } else if (output !== null) {
    counted('recv', output.length, input.length);
  }
  return { input, output, prod: o.name === 'prod', folds, inner: innerOptions(call.executor, call.opts.algorithm), host: call.executor === 'host', blocks };
}

function scaled(counts: readonly number[], by: number): number[] {
  return counts.map((k) => k * by);
}

function offsets(counts: readonly number[]): number[] {
  const d = new Array<number>(counts.length);
  for (let r = 0, at = 0; r < counts.length; r++) {
    d[r] = at;
    at += counts[r]!;
  }
  return d;
}

// ---- One pass: compact items through a user op (host) -----------------------------------

/** Each element of `input` as an item of `form`. */
function itemsOf(input: Floats, folds: 2 | 3, form: ItemForm, items: Float64Array = new Float64Array(input.length * form.length)): Float64Array {
  const L = form.length;
  for (let i = 0; i < input.length; i++) form.fresh(items, i * L, input[i]!, folds);
  return items;
}

/** out[from + i] = item i of `items` finished, for i < n. */
function finishItems(items: Float64Array, out: Floats, from: number, n: number, folds: 2 | 3, form: ItemForm): void {
  const L = form.length;
  const single = out instanceof Float32Array;
  for (let i = 0; i < n; i++) out[from + i] = form.finish(items, i * L, folds, single);
}

/**
 * A request that completes when `inner` does, after running `after` (the conversion into the
 * user's buffer); an error from either completes it with that error.
 */
class ThenRequest extends Request implements RequestListener {
  constructor(private readonly inner: Request, private readonly after: () => void) {
    super(progressorOf(inner));
    listen(inner, this);
  }

  settled(_token: number, error: Error | null): void {
    this.status = this.inner.status;
    this.complete(error ?? attempt(this.after));
  }
}

/** `l` is told when `r` completes: now, if it already has. */
function listen(r: Request, l: RequestListener): void {
  if (r.done) l.settled(0, r.error);
  else {
    r.listener = l;
    r.listenerToken = 0;
  }
}

function progressorOf(r: Request): ConstructorParameters<typeof Request>[0] {
  return (r as unknown as { progressor: ConstructorParameters<typeof Request>[0] }).progressor;
}

/** Runs f; its error, or null. */
function attempt(f: () => void): Error | null {
  try {
    f();
    return null;
  } catch (err) {
    return err as Error;
  }
}

/** The one-pass form of a non-blocking allreduce, reduce or reduce-scatter on the host executor. */
function onePass(c: ReproducibleTarget, call: ReproducibleCall, k: Checked): Request {
  const { input, output, folds, inner } = k;
  if (c.size > COMPACT_MAX_TERMS) return wideOnePass(c, call, k);
  const form = itemForm(c.size, folds);
  const L = form.length;
  const op = form.op;
  const items = itemsOf(input, folds, form);
  switch (call.coll) {
    case 'allreduce':
      return new ThenRequest(c.iallreduce(IN_PLACE, items, op, inner), () => finishItems(items, output!, 0, output!.length, folds, form));
    case 'reduce': {
      const root = call.root!;
      const r = c.ireduce(c.rank === root ? IN_PLACE : items, c.rank === root ? items : null, op, root, inner);
      return new ThenRequest(r, () => { if (output !== null) finishItems(items, output, 0, output.length, folds, form); });
    }
    default: { // reduceScatter, reduceScatterBlock
      const counts = k.blocks!;
      const mine = counts[c.rank]!;
      const block = new Float64Array(mine * L);
      const r = c.ireduceScatter(items, block, scaled(counts, L), op, inner);
      return new ThenRequest(r, () => finishItems(block, output!, 0, mine, folds, form));
    }
  }
}

/** The one pass on BinnedSum's (C, S) items, whose counts carry: communicators of 2^13 ranks or more. */
function wideOnePass(c: ReproducibleTarget, call: ReproducibleCall, k: Checked): Request {
  const { input, output, folds, inner } = k;
  if (call.coll !== 'allreduce' && call.coll !== 'reduce') {
    throw new NbcArgError(`Cannot ${call.coll} with { reproducible: true } on ${c.size} ranks: from ${COMPACT_MAX_TERMS + 1} ranks only allreduce and reduce on the host executor take it; expected fewer ranks`);
  }
  const L = binnedItemLength(folds);
  const items = new Float64Array(input.length * L);
  for (let i = 0; i < input.length; i++) depositFresh(items, i * L, input[i]!, folds);
  const fin = (): void => {
    const single = output instanceof Float32Array;
    if (output !== null) for (let i = 0; i < output.length; i++) output[i] = finish(items, i * L, folds, single);
  };
  if (call.coll === 'allreduce') return new ThenRequest(c.iallreduce(IN_PLACE, items, binnedSumOp(folds), inner), fin);
  const root = call.root!;
  return new ThenRequest(c.ireduce(c.rank === root ? IN_PLACE : items, c.rank === root ? items : null, binnedSumOp(folds), root, inner), fin);
}

// ---- Two phases: the bins agreed by max, the counts summed (any executor) -------------------

/**
 * A communicator's companion for the second phases of non-blocking calls, and the calls
 * waiting for their first: second phases start in call order, the same on every rank,
 * whatever order the first phases complete in.
 */
class Companion {
  readonly waiting: TwoPhaseRequest[] = [];
  /**
   * Why the companion stopped: a first phase failed on this rank, so the second phases here no
   * longer pair with the other ranks'; every call queued or made since fails with it.
   */
  broken: Error | null = null;
  private pumping = false;
  constructor(readonly comm: ReproducibleTarget) {}

  /**
   * Starts every second phase whose turn has come, in call order. Not re-entered: a start can
   * complete another call's first phase (and, with NBC_CHECK_CALLS, block on an exchange),
   * whose own pump would otherwise start its second phase ahead of this one.
   */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiting.length > 0 && (this.broken !== null || this.waiting[0]!.firstDone)) {
        const next = this.waiting.shift()!;
        if (this.broken !== null) next.fail(this.broken);
        else next.second(this.comm);
      }
    } finally {
      this.pumping = false;
    }
  }
}

const companions = new WeakMap<object, Companion>();

/** Frees `c`'s companion communicator, if it has one (Communicator.free). */
export function releaseReproducible(c: object): void {
  const k = companions.get(c);
  if (k === undefined) return;
  companions.delete(c);
  k.comm.free();
}

function companionOf(c: ReproducibleTarget): Companion {
  let k = companions.get(c);
  if (k === undefined) companions.set(c, (k = new Companion(c.dup())));
  return k;
}

/** What a second phase does on the companion, and how its result is read back. */
interface SecondPhase {
  /** The per-rank blocks of elements whose counts lie planar each (reduce-scatter); else the whole. */
  blocks?: number[];
  start(comm: ReproducibleTarget, counts: Float64Array): Request;
  finish(counts: Float64Array, codes: Uint8Array): void;
}

/** Splits the elements into counts, planar over the whole or per block of `blocks` (splitBlock). */
function splitInto(input: Floats, codes: Uint8Array, counts: Float64Array, folds: 2 | 3, blocks: number[] | undefined): void {
  if (blocks === undefined) {
    splitBlock(input, codes, 0, input.length, counts, 0, folds);
    return;
  }
  for (let r = 0, from = 0; r < blocks.length; from += blocks[r]!, r++) splitBlock(input, codes, from, blocks[r]!, counts, folds * from, folds);
}

/** A non-blocking call in two phases: the bins' max on the communicator, then the counts' sum on its companion. */
class TwoPhaseRequest extends Request implements RequestListener {
  firstDone = false;
  private inSecond = false;
  private readonly counts: Float64Array;

  constructor(first: Request, private readonly companion: Companion, private readonly input: Floats, private readonly codes: Uint8Array,
    private readonly folds: 2 | 3, private readonly phase: SecondPhase) {
    super(progressorOf(first));
    this.counts = new Float64Array(input.length * folds);
    companion.waiting.push(this);
    listen(first, this);
  }

  /** Starts the second phase on the companion (its turn has come). */
  second(comm: ReproducibleTarget): void {
    this.inSecond = true;
    let r: Request;
    try {
      r = this.phase.start(comm, this.counts);
    } catch (err) {
      this.complete(err as Error);
      return;
    }
    listen(r, this);
  }

  /** Fails the call without its second phase (its companion broke). */
  fail(error: Error): void {
    this.inSecond = true;
    this.complete(error);
  }

  settled(_token: number, error: Error | null): void {
    if (!this.inSecond) {
      if (error !== null) {
        // The first phase failed here (under a lost peer): this rank's second phases would no
        // longer pair with the others', so this call and every one queued behind it fail.
        this.companion.broken ??= error;
        this.companion.waiting.splice(this.companion.waiting.indexOf(this), 1);
        this.complete(error);
      } else {
        splitInto(this.input, this.codes, this.counts, this.folds, this.phase.blocks);
        this.firstDone = true;
      }
      this.companion.pump();
      return;
    }
    this.complete(error ?? attempt(() => this.phase.finish(this.counts, this.codes)));
  }
}

/** Elements [from, from + n), their counts planar in `counts`, finished into out[at ..]. */
function finishCounts(counts: Float64Array, codes: Uint8Array, from: number, n: number, out: Floats, at: number, folds: 2 | 3): void {
  finishBlock(counts, 0, codes, from, n, out, at, folds);
}

/** The second phase of each collective. */
function secondPhase(c: ReproducibleTarget, call: ReproducibleCall, k: Checked): SecondPhase {
  const { input, output, folds, inner } = k;
  const n = input.length;
  switch (call.coll) {
    case 'allreduce':
    case 'scan':
      return {
        start: (comm, counts) => call.coll === 'scan' ? comm.iscan(IN_PLACE, counts, 'sum', inner) : comm.iallreduce(IN_PLACE, counts, 'sum', inner),
        finish: (counts, codes) => finishCounts(counts, codes, 0, n, output!, 0, folds),
      };
    case 'exscan':
      return {
        start: (comm, counts) => comm.iexscan(IN_PLACE, counts, 'sum', inner),
        // Rank 0's exscan result is undefined (MPI): its output is left as it was.
        finish: (counts, codes) => { if (c.rank !== 0) finishCounts(counts, codes, 0, n, output!, 0, folds); },
      };
    case 'reduce': {
      const root = call.root!;
      return {
        start: (comm, counts) => comm.ireduce(c.rank === root ? IN_PLACE : counts, c.rank === root ? counts : null, 'sum', root, inner),
        finish: (counts, codes) => { if (output !== null) finishCounts(counts, codes, 0, n, output, 0, folds); },
      };
    }
    default: { // reduceScatter, reduceScatterBlock
      const per = k.blocks!;
      const mine = per[c.rank]!;
      const from = offsets(per)[c.rank]!;
      const block = new Float64Array(mine * folds);
      return {
        blocks: per,
        start: (comm, counts) => comm.ireduceScatter(counts, block, scaled(per, folds), 'sum', inner),
        finish: (_counts, codes) => finishCounts(block, codes, from, mine, output!, 0, folds),
      };
    }
  }
}

/** The two-phase form of a non-blocking call: starts its first phase and returns its request. */
function twoPhase(c: ReproducibleTarget, call: ReproducibleCall, k: Checked): Request {
  if (c.size > COMPACT_MAX_TERMS) {
    throw new NbcArgError(`Cannot ${call.coll} with { reproducible: true } on ${c.size} ranks and executor '${call.executor}': from ${COMPACT_MAX_TERMS + 1} ranks only allreduce and reduce on the host executor take it; expected fewer ranks or executor 'host'`);
  }
  const phase = secondPhase(c, call, k);
  const companion = companionOf(c);
  if (companion.broken !== null) throw companion.broken;
  const codes = new Uint8Array(k.input.length);
  topCodes(k.input, codes);
  const first = c.iallreduce(IN_PLACE, codes, 'max', innerOptions(k.inner.executor!, undefined));
  return new TwoPhaseRequest(first, companion, k.input, codes, k.folds, phase);
}

// ---- Products: a fixed tree over rank indices ------------------------------------------------

/** out[i] = the product of all[r n + i] over the ranks r, in a fixed tree over r. */
function treeProducts(all: Floats, p: number, out: Floats): void {
  const n = out.length;
  const v = new Float64Array(p);
  const single = all instanceof Float32Array;
  for (let i = 0; i < n; i++) {
    for (let r = 0; r < p; r++) v[r] = all[r * n + i]!;
    for (let m = p; m > 1; m = (m + 1) >> 1) {
      for (let j = 0; 2 * j + 1 < m; j++) v[j] = single ? Math.fround(v[2 * j]! * v[2 * j + 1]!) : v[2 * j]! * v[2 * j + 1]!;
      if (m % 2 === 1) v[m >> 1] = v[m - 1]!;
    }
    out[i] = v[0]!;
  }
}

/** A product gathered whole, then multiplied in the fixed tree. */
function canonicalProduct(c: ReproducibleTarget, call: ReproducibleCall, k: Checked): Request {
  const { input, output } = k;
  const n = input.length;
  const exec = innerOptions(k.inner.executor!, undefined);
  const Ctor = input.constructor as Float64ArrayConstructor | Float32ArrayConstructor;
  const send = (input === output ? input.slice() : input) as Floats; // in place: the output is overwritten below
  if (call.coll === 'allreduce') {
    const all = new Ctor(n * c.size);
    return new ThenRequest(c.iallgather(send, all, exec), () => treeProducts(all, c.size, output!));
  }
  const root = call.root!;
  const all = c.rank === root ? new Ctor(n * c.size) : null;
  return new ThenRequest(c.igather(send, all, root, exec), () => { if (all !== null) treeProducts(all, c.size, output!); });
}

// ---- The calls ----------------------------------------------------------------------------------

/** A non-blocking reproducible call: its request. */
export function startReproducible(c: ReproducibleTarget, call: ReproducibleCall): Request {
  const k = checkCall(c, call);
  if (k.prod) return canonicalProduct(c, call, k);
  if (k.host && (c.size > COMPACT_MAX_TERMS || (k.input.length < ONE_PASS_BELOW && call.coll !== 'scan' && call.coll !== 'exscan'))) return onePass(c, call, k);
  return twoPhase(c, call, k);
}

/** A persistent reproducible call: each start() runs the non-blocking call on the same buffers. */
export function reproducibleInit(c: ReproducibleTarget, call: ReproducibleCall): PersistentRequest {
  checkCall(c, call); // refused now, not at the first start
  return new PersistentRequest(() => startReproducible(c, call), call.coll, null);
}

/**
 * The last blocking allreduce, checked: a loop passes the same buffers and options again, and
 * the checks would otherwise be a third of a small call's cost. The option values are kept,
 * not the object: the caller may change it between calls.
 */
interface LastCall {
  /** The call as first checked (its options object's values may have changed since, but not folds or algorithm). */
  call: ReproducibleCall;
  send: BufOrInPlace;
  recv: BufOrInPlace | null | undefined;
  op: OpLike;
  executor: string;
  folds: unknown;
  algorithm: unknown;
  checked: Checked;
}

/**
 * Per communicator and fold count, the blocking calls' last call and buffers, kept while the
 * length stays the same: a loop of calls then passes the same buffers to the inner calls,
 * which their recent-call lists (and the lean path) recognise.
 */
interface Kept {
  last?: LastCall;
  items?: Float64Array;
  codes?: Uint8Array;
  counts?: Float64Array;
  /** The large path's values of this rank's block, from every rank. */
  parts?: Float64Array | Float32Array;
}
const kept = new WeakMap<object, [Kept, Kept]>();

/** What is kept for `c` and K folds (an unchecked fold count shares K = 2's: it never matches a checked call). */
function keptOf(c: object, folds: unknown): Kept {
  let k = kept.get(c);
  if (k === undefined) kept.set(c, (k = [{}, {}]));
  return k[folds === 3 ? 1 : 0];
}

/** Elements per chunk of the large path: a chunk's values (32 KiB from each rank) and counts stay in the cache between its passes. */
const CHUNK = 4096;
const chunkCodes = new Uint8Array(CHUNK);
let chunkCounts = new Float64Array(3 * CHUNK);

/**
 * out[at + i] = the reproducible sum of element i of this rank's block, for i < mine: rank q's
 * value of it at parts[q mine + i], this rank's own at mine[from + i]; per chunk, the bins
 * (the max over the contributions'), the counts (exact sums, from -0), the conversion.
 */
function sumBlock(parts: Floats, own: Floats, me: number, from: number, p: number, mine: number, out: Floats, at: number, folds: 2 | 3): void {
  if (chunkCounts.length < folds * CHUNK) chunkCounts = new Float64Array(folds * CHUNK);
  const src = (q: number): Floats => (q === me ? own : parts);
  const base = (q: number): number => (q === me ? from : q * mine);
  for (let c0 = 0; c0 < mine; c0 += CHUNK) {
    const len = Math.min(CHUNK, mine - c0);
    chunkCodes.fill(0, 0, len);
    for (let q = 0; q < p; q++) maxCodesInto(src(q), base(q) + c0, len, chunkCodes);
    chunkCounts.fill(-0, 0, folds * len);
    for (let q = 0; q < p; q++) splitAddBlock(src(q).subarray(base(q) + c0, base(q) + c0 + len), chunkCodes, 0, len, chunkCounts, 0, folds);
    finishBlock(chunkCounts, 0, chunkCodes, 0, len, out, at + c0, folds);
  }
}

/** A blocking reproducible call. */
export function runReproducible(c: ReproducibleTarget, call: ReproducibleCall): void {
  if (call.coll !== 'allreduce') {
    startReproducible(c, call).wait();
    return;
  }
  const k = checkCall(c, call);
  const keep = keptOf(c, k.folds);
  keep.last = { call, send: call.send, recv: call.recv, op: call.op, executor: call.executor, folds: call.opts.folds, algorithm: call.opts.algorithm, checked: k };
  allreduceChecked(c, call, k, keep);
}

/**
 * A blocking allreduce with { reproducible: true }, its options checked by the caller: the
 * last call's checks when the buffers, op and options are the same, else runReproducible.
 */
export function allreduceReproducible(c: ReproducibleTarget, send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts: CollOptions, executor: string): void {
  const keep = keptOf(c, opts.folds);
  const l = keep.last;
  if (l !== undefined && l.send === send && l.recv === recv && l.op === op && l.executor === executor && l.folds === opts.folds &&
    l.algorithm === opts.algorithm && l.checked.input.length === (send === IN_PLACE ? recv as Floats : send as Floats).length) {
    allreduceChecked(c, l.call, l.checked, keep);
    return;
  }
  runReproducible(c, { coll: 'allreduce', send, recv, op, opts, executor });
}

function allreduceChecked(c: ReproducibleTarget, call: ReproducibleCall, k: Checked, keep: Kept): void {
  const { input, folds, inner } = k;
  const output = k.output!;
  const n = input.length;
  if (k.prod || (k.host && c.size > COMPACT_MAX_TERMS)) {
    startReproducible(c, call).wait();
    return;
  }
  if (k.host && (n < ONE_PASS_BELOW || c.size === 1)) {
    // One pass. The same items buffer every call: the blocking allreduce's recent-call list
    // (and its lean path) then recognises a loop of calls.
    const form = itemForm(c.size, folds);
    const len = n * form.length;
    const items = keep.items?.length === len ? keep.items : (keep.items = new Float64Array(len));
    itemsOf(input, folds, form, items);
    c.allreduce(IN_PLACE, items, form.op, inner);
    finishItems(items, output, 0, n, folds, form);
    return;
  }
  if (c.size > COMPACT_MAX_TERMS) {
    throw new NbcArgError(`Cannot allreduce with { reproducible: true } on ${c.size} ranks and executor '${call.executor}': from ${COMPACT_MAX_TERMS + 1} ranks only the host executor takes it; expected executor 'host'`);
  }
  const p = c.size;
  if (p === 1 || n < SPLIT_ELEMENTS || inner.algorithm !== undefined) {
    // Two phases: the bins, then the counts.
    const codes = keep.codes?.length === n ? keep.codes : (keep.codes = new Uint8Array(n));
    topCodes(input, codes);
    c.allreduce(IN_PLACE, codes, 'max', innerOptions(inner.executor!, undefined));
    const counts = keep.counts?.length === n * folds ? keep.counts : (keep.counts = new Float64Array(n * folds));
    splitInto(input, codes, counts, folds, undefined);
    c.allreduce(IN_PLACE, counts, 'sum', inner);
    finishCounts(counts, codes, 0, n, output, 0, folds);
    return;
  }
  // Large: every rank sends each rank the values of its block (an alltoallv: the bytes of a
  // plain reduce-scatter). A rank then holds every contribution to its block, so it finds each
  // element's bin itself (the largest contribution's, as the max of the two phases would) and
  // sums the counts: chunk by chunk, each chunk's values read once from memory and again from
  // the cache. Then the doubles are gathered.
  const per = new Array<number>(p);
  for (let r = 0; r < p; r++) per[r] = Math.floor(n / p) + (r < n % p ? 1 : 0);
  const displs = offsets(per);
  const mine = per[c.rank]!;
  const from = displs[c.rank]!;
  const Ctor = input.constructor as Float64ArrayConstructor | Float32ArrayConstructor;
  const parts = keep.parts?.length === mine * p && keep.parts.constructor === Ctor ? keep.parts : (keep.parts = new Ctor(mine * p));
  // Its own values stay where they are (no count to itself).
  const sendCounts = per.map((k, q) => (q === c.rank ? 0 : k));
  const recvCounts = per.map((_, q) => (q === c.rank ? 0 : mine));
  c.alltoallv(input, sendCounts, displs, parts, recvCounts, per.map((_, q) => q * mine), innerOptions(inner.executor!, undefined));
  sumBlock(parts, input, c.rank, from, p, mine, output, from, folds);
  c.allgatherv(IN_PLACE, output, per, displs, innerOptions(inner.executor!, undefined));
}
