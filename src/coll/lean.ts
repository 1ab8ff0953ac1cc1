/**
 * The lean paths: a blocking allreduce, barrier, bcast or alltoall whose algorithm the
 * selection table marks `lean` (recursive doubling, dissemination n = 1, binomial, scattered
 * destinations), with messages that travel eagerly, runs here by hand straight on the
 * transport: the same messages, tags and fold order as its schedule (test/lean.test.ts proves
 * it on 1..9 ranks), without building requests and rounds. Receives read the data where it
 * lies in the ring (Transport.recvEager); a send that cannot go eagerly (no eager credit, a
 * full ring) goes from a private copy and is waited for at the end (Transport.sendLean), since
 * both sides of an exchange send first. A call is resolved once (views, kernel, tree) and
 * kept in the communicator's recent-call list.
 */
import type { TypedArray } from '../comm/validate.js';
import { bytesPerElement, ctorOf, type DType, type ReduceKernel } from '../ops/index.js';
import { kernelFor } from '../ops/regions.js';
import type { Transport } from '../p2p/transport.js';
import { copyAt, copyBytes } from '../shm/copy.js';
import type { ExecutorStats } from '../sched/executor.js';
import { EMPTY } from './args.js';
import { knomialNode, toActual, toRelative } from './patterns.js';
import { pow2Floor } from './shape.js';

/** The communicator as the lean paths address it. */
export interface LeanTarget {
  readonly worldRanks: Int32Array;
  readonly collCtx: number;
  readonly rank: number;
  readonly size: number;
}

/** A blocking allreduce the lean path runs, resolved once per call shape. */
export interface LeanAllreduce {
  sv: Uint8Array;
  rv: Uint8Array;
  /** The recv buffer, typed. */
  mine: TypedArray;
  kernel: ReduceKernel;
  dt: DType;
  esize: number;
  bytes: number;
  count: number;
  /** Whether send must be copied into recv first (not IN_PLACE). */
  copyIn: boolean;
}

/**
 * One step of a lean allreduce: mine = theirs ⊕ mine when `theirsFirst`; else mine ⊕ theirs,
 * computed into their buffer (a ring record stays ours until released, an early copy is
 * private) and copied into recv.
 */
function fold(a: LeanAllreduce, theirs: TypedArray, at: number, theirsFirst: boolean, theirBytes: Uint8Array, byteAt: number): void {
  if (theirsFirst) {
    a.kernel(a.mine, 0, theirs, at, a.count);
  } else {
    a.kernel(theirs, at, a.mine, 0, a.count);
    copyAt(theirBytes, byteAt, a.rv, 0, a.bytes);
  }
}

/** A blocking bcast the lean path runs (binomial tree), resolved once per call shape. */
export interface LeanBcast {
  v: Uint8Array;
  bytes: number;
  /** Parent's rank, or -1 at the root. */
  parent: number;
  /** Children's ranks, in the order the schedule sends to them (largest subtree first). */
  children: number[];
}

/** A blocking alltoall the lean path runs (scattered destinations), resolved once per call shape. */
export interface LeanAlltoall {
  sv: Uint8Array;
  rv: Uint8Array;
  /** Bytes per block. */
  block: number;
  /** The send buffer's block for each rank. */
  blocks: Uint8Array[];
}

/** A blocking allreduce resolved for the lean path (recursive doubling). */
export function leanAllreduceOf(sv: Uint8Array, rv: Uint8Array, mine: TypedArray, op: number, dt: DType): LeanAllreduce {
  const bytes = sv.byteLength;
  return {
    sv, rv, mine, kernel: kernelFor(op, dt), dt, esize: bytesPerElement(dt), bytes, count: mine.length,
    copyIn: sv.buffer !== rv.buffer || sv.byteOffset !== rv.byteOffset,
  };
}

/** A blocking bcast resolved for the lean path: this rank's place in the binomial tree. */
export function leanBcastOf(v: Uint8Array, bytes: number, rank: number, root: number, p: number): LeanBcast {
  const node = knomialNode(toRelative(rank, root, p), p, 2);
  const children = node.children.map((c) => toActual(c, root, p)).reverse();
  return { v, bytes, parent: node.parent < 0 ? -1 : toActual(node.parent, root, p), children };
}

/** A blocking alltoall resolved for the lean path: a view of each destination's block. */
export function leanAlltoallOf(sv: Uint8Array, rv: Uint8Array, block: number, p: number): LeanAlltoall {
  const blocks = Array.from({ length: p }, (_, r) => sv.subarray(r * block, (r + 1) * block));
  return { sv, rv, block, blocks };
}

/** One communicator's lean paths. */
export class LeanPaths {
  private readonly worldRanks: Int32Array;
  private readonly collCtx: number;
  private readonly rank: number;
  private readonly size: number;

  /** @param stats the host executor's counters (sched/executors.ts): a lean call runs host algorithms */
  constructor(private readonly t: Transport, c: LeanTarget, private readonly stats: ExecutorStats = { calls: 0 }) {
    this.worldRanks = c.worldRanks;
    this.collCtx = c.collCtx;
    this.rank = c.rank;
    this.size = c.size;
  }

  barrier(tag: number): void {
    this.collected(this.barrierRun, null, tag);
  }

  bcast(l: LeanBcast, tag: number): void {
    this.collected(this.bcastRun, l, tag);
  }

  allreduce(a: LeanAllreduce, tag: number): void {
    this.collected(this.allreduceRun, a, tag);
  }

  alltoall(l: LeanAlltoall, tag: number): void {
    this.collected(this.alltoallRun, l, tag);
  }

  /**
   * Runs an algorithm, then collects the sends that could not go eagerly (sendLean); a call
   * that fails forgets them. The method is passed unbound (no closure per call).
   */
  private collected<A>(run: (this: this, arg: A, tag: number) => void, arg: A, tag: number): void {
    this.stats.calls++;
    try {
      run.call(this, arg, tag);
    } catch (e) {
      this.t.dropLean();
      throw e;
    }
    this.t.finishLean();
  }

  /** Blocking dissemination barrier (n = 1) straight on the transport; same messages as its schedule. */
  private barrierRun(_none: null, tag: number): void {
    const t = this.t;
    const p = this.size;
    for (let dist = 1; dist < p; dist *= 2) {
      t.sendLean(EMPTY, 0, this.worldRanks[(this.rank + dist) % p]!, this.collCtx, this.rank, tag);
      const from = (this.rank - dist + p) % p;
      if (t.recvEager(this.worldRanks[from]!, this.collCtx, from, tag, 0) >= 0) t.releaseEager();
      else t.takeEarly();
    }
  }

  /** Blocking binomial bcast straight on the transport; the same messages as its schedule. */
  private bcastRun(l: LeanBcast, tag: number): void {
    const t = this.t;
    if (l.parent >= 0) t.recvEagerInto(this.worldRanks[l.parent]!, this.collCtx, l.parent, tag, l.v, 0, l.bytes);
    for (let i = 0; i < l.children.length; i++) {
      t.sendLean(l.v, l.bytes, this.worldRanks[l.children[i]!]!, this.collCtx, this.rank, tag);
    }
  }

  /**
   * Blocking small allreduce without the schedule machinery: exactly the recursive-doubling
   * schedule (allreduce.ts) — same messages, same tags, same fold order, so the same bits —
   * run straight on the transport. Per call it saves the plan, the request and the rounds,
   * which is most of the cost of an 8-byte allreduce.
   */
  private allreduceRun(a: LeanAllreduce, tag: number): void {
    const t = this.t;
    const rv = a.rv;
    if (a.copyIn) copyBytes(a.sv, rv, 0, a.bytes);
    const p = this.size;
    const rank = this.rank;
    const pp = pow2Floor(p);
    const r = p - pp;
    let newrank = rank - r;
    if (rank < 2 * r) {
      if (rank % 2 === 0) {
        t.sendLean(rv, a.bytes, this.worldRanks[rank + 1]!, this.collCtx, rank, tag);
        newrank = -1;
      } else {
        this.foldFrom(a, rank - 1, tag, true);
        newrank = rank >> 1;
      }
    }
    if (newrank >= 0) {
      for (let mask = 1; mask < pp; mask <<= 1) {
        const pnr = newrank ^ mask;
        const partner = pnr < r ? pnr * 2 + 1 : pnr + r;
        t.sendLean(rv, a.bytes, this.worldRanks[partner]!, this.collCtx, rank, tag);
        this.foldFrom(a, partner, tag, pnr < newrank);
      }
    }
    if (rank < 2 * r) {
      if (rank % 2 === 1) {
        t.sendLean(rv, a.bytes, this.worldRanks[rank - 1]!, this.collCtx, rank, tag);
      } else {
        t.recvEagerInto(this.worldRanks[rank + 1]!, this.collCtx, rank + 1, tag, rv, 0, a.bytes);
      }
    }
  }

  /**
   * Receives `peer`'s partial result and folds it into mine, in rank order: theirs ⊕ mine when
   * `theirsFirst`, else mine ⊕ theirs. The payload is read where it lies in the ring (ring
   * payloads are 8-byte aligned, so a typed view of any dtype reaches it); only a message that
   * arrived early comes as a private copy.
   */
  private foldFrom(a: LeanAllreduce, peer: number, tag: number, theirsFirst: boolean): void {
    const t = this.t;
    const off = t.recvEager(this.worldRanks[peer]!, this.collCtx, peer, tag, a.bytes);
    if (off < 0) {
      const early = t.takeEarly();
      fold(a, this.earlyView(early, a), 0, theirsFirst, early, 0);
      return;
    }
    try {
      fold(a, this.ringView(a.dt), off / a.esize, theirsFirst, t.ringMemory, off);
    } finally {
      t.releaseEager();
    }
  }


  /**
   * Blocking alltoall with scattered destinations straight on the transport: every block sent
   * ((rank + k) mod p, k = 1..p-1), then every block received; the same messages as its
   * schedule.
   */
  private alltoallRun(l: LeanAlltoall, tag: number): void {
    const t = this.t;
    const p = this.size;
    const rank = this.rank;
    const B = l.block;
    copyAt(l.sv, rank * B, l.rv, rank * B, B);
    for (let k = 1; k < p; k++) {
      const to = (rank + k) % p;
      t.sendLean(l.blocks[to]!, B, this.worldRanks[to]!, this.collCtx, rank, tag);
    }
    for (let k = 1; k < p; k++) {
      const from = (rank - k + p) % p;
      t.recvEagerInto(this.worldRanks[from]!, this.collCtx, from, tag, l.rv, from * B, B);
    }
  }

  /**
   * `early`'s payload typed as `a`'s elements. Over UCX the early payload is the same inbox view
   * call after call (path-ucx.ts, recvEager), so its typed view is kept while it repeats.
   */
  private earlyView(early: Uint8Array, a: LeanAllreduce): TypedArray {
    if (early === this.lastEarly && a.dt === this.lastEarlyDt && this.lastEarlyTyped!.length === a.count) return this.lastEarlyTyped!;
    const Ctor = ctorOf(a.dt) as unknown as new (b: ArrayBufferLike, off: number, len: number) => TypedArray;
    const v = new Ctor(early.buffer, early.byteOffset, a.count);
    this.lastEarly = early;
    this.lastEarlyDt = a.dt;
    this.lastEarlyTyped = v;
    return v;
  }
  private lastEarly: Uint8Array | null = null;
  private lastEarlyDt: DType | -1 = -1;
  private lastEarlyTyped: TypedArray | null = null;

  /** One view per dtype over the node's ring memory, where lean receives read payloads in place. */
  private ringViews: Array<TypedArray | undefined> = [];

  private ringView(dt: DType): TypedArray {
    let v = this.ringViews[dt];
    if (v === undefined) {
      const Ctor = ctorOf(dt) as unknown as new (b: ArrayBufferLike) => TypedArray;
      v = new Ctor(this.t.ringMemory.buffer);
      this.ringViews[dt] = v;
    }
    return v;
  }
}
