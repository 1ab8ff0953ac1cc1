/**
 * The host executor (LibNBC): the calling rank runs its own schedule. Round 0 starts inside
 * the initiating call; every later step happens inside progress, which the transport runs on
 * any test() or wait() of any request, so outstanding collectives on any communicators advance
 * together and complete in any order.
 *
 * Matching: every collective instance on a communicator takes the next sequence number, and
 * all its messages travel on the communicator's collective context with that number as tag.
 * Messages between one pair of ranks inside one instance keep their order (FIFO per source),
 * so (context, sequence, order) identifies every message: concurrent collectives never cross.
 */
import type { TypedArray } from '../comm/validate.js';
import { NbcInternalError } from '../errors.js';
import { bytesPerElement, ctorOf, type DType } from '../ops/dtype.js';
import { kernelFor } from '../ops/regions.js';
import { Request } from '../p2p/request.js';
import type { Transport } from '../p2p/transport.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, RECV, SEND, TMP, type Schedule } from './schedule.js';

/** Applies inout = in ⊕ inout for a schedule's (op id, dtype id) over two byte views. */
export type ReduceFn = (op: number, dtype: number, input: Uint8Array, inout: Uint8Array) => void;

/** Who runs the schedule: communicator identity as the executor needs it. */
export interface CollTarget {
  collCtx: number;
  rank: number;
  /** World rank of each member. */
  worldRanks: Int32Array;
}

export interface CollBuffers {
  send: Uint8Array;
  recv: Uint8Array;
  tmp: Uint8Array;
  /**
   * The views of this buffer set that actions address, made on first use and kept: two per
   * action (region A, region B), and for reductions two typed views (inout, input), or null
   * where the bytes do not suit a typed view. A caller that starts one plan many times
   * hands the same set back (once its last start completed) and no view is made again.
   */
  views?: Array<Uint8Array | undefined>;
  typed?: Array<TypedArray | null | undefined>;
}

/** DAG action states (0 = not started). */
const STARTED = 1;
const DONE = 2;

export class CollRequest extends Request {
  /** Rounds mode: next round to start. */
  round = 0;
  /** Rounds mode: the current round's posted sends/receives, inflight[0 .. nInflight). */
  inflight: Array<Request | null> = [];
  nInflight = 0;
  /** DAG mode: per-action state. */
  state: Int8Array | null = null;
  actionReq: Array<Request | null> | null = null;
  remaining = 0;
  /** Called once when the collective completes (unstaging, freeing scratch). */
  onDone: ((err: Error | null) => void) | null = null;

  constructor(
    readonly exec: HostExecutor,
    readonly sched: Schedule,
    readonly target: CollTarget,
    readonly bufs: CollBuffers,
    readonly tag: number,
  ) {
    super(exec.transport);
  }

  override complete(error: Error | null = null): void {
    super.complete(error);
    this.onDone?.(error);
  }
}

export class HostExecutor {
  private active: CollRequest[] = [];

  constructor(readonly transport: Transport, private readonly reduce: ReduceFn) {
    transport.addProgressHook(() => this.progressAll());
  }

  /** Starts a schedule; round 0 (or the DAG's roots) is posted before this returns. */
  start(sched: Schedule, target: CollTarget, bufs: CollBuffers, tag: number): CollRequest {
    const ends = sched.extents();
    if (ends[SEND]! > bufs.send.byteLength || ends[RECV]! > bufs.recv.byteLength || ends[TMP]! > bufs.tmp.byteLength) {
      throw new NbcInternalError(`schedule ${sched.algorithm} addresses ${ends[SEND]}/${ends[RECV]}/${ends[TMP]} bytes of send/recv/tmp, which have ${bufs.send.byteLength}/${bufs.recv.byteLength}/${bufs.tmp.byteLength}`);
    }
    const req = new CollRequest(this, sched, target, bufs, tag);
    if (sched.isDag) {
      req.state = new Int8Array(sched.nActions);
      req.actionReq = new Array(sched.nActions).fill(null);
      req.remaining = sched.nActions;
    }
    if (this.advance(req)) return req;
    this.active.push(req);
    return req;
  }

  /** Advances every active collective. True when any made progress. */
  progressAll(): boolean {
    if (this.active.length === 0) return false;
    let any = false;
    let w = 0;
    for (let i = 0; i < this.active.length; i++) {
      const req = this.active[i]!;
      const before = req.round + req.remaining;
      const finished = this.advance(req);
      if (finished || req.round + req.remaining !== before) any = true;
      if (!finished) this.active[w++] = req;
    }
    if (w !== this.active.length) this.active.length = w;
    return any;
  }

  /** Runs what can run now. True when the collective is complete (successfully or not). */
  private advance(req: CollRequest): boolean {
    try {
      return req.sched.isDag ? this.advanceDag(req) : this.advanceRounds(req);
    } catch (err) {
      if (!req.done) req.complete(err as Error);
      return true;
    }
  }

  private advanceRounds(req: CollRequest): boolean {
    const s = req.sched;
    const inflight = req.inflight;
    for (;;) {
      const n = req.nInflight;
      if (n > 0) {
        for (let i = 0; i < n; i++) {
          const r = inflight[i]!;
          if (!r.done) return false;
          if (r.error) throw r.error;
        }
        for (let i = 0; i < n; i++) inflight[i] = null;
        req.nInflight = 0;
      }
      if (req.round >= s.nRounds) {
        req.complete();
        return true;
      }
      const r = req.round++;
      for (let i = s.rounds[r]!; i < s.rounds[r + 1]!; i++) {
        const p = this.startAction(req, i);
        if (p !== null && !p.done) inflight[req.nInflight++] = p;
        else if (p !== null && p.error) throw p.error;
      }
    }
  }

  private advanceDag(req: CollRequest): boolean {
    const s = req.sched;
    const state = req.state!;
    const reqs = req.actionReq!;
    const depStart = s.depStart!;
    const deps = s.deps!;
    let changed = true;
    while (changed) {
      changed = false;
      for (let i = 0; i < s.nActions; i++) {
        const st = state[i]!;
        if (st === DONE) continue;
        if (st === STARTED) {
          const p = reqs[i]!;
          if (!p.done) continue;
          if (p.error) throw p.error;
          state[i] = DONE;
          reqs[i] = null;
          req.remaining--;
          changed = true;
          continue;
        }
        let ready = true;
        for (let d = depStart[i]!; d < depStart[i + 1]!; d++) {
          if (state[deps[d]!] !== DONE) {
            ready = false;
            break;
          }
        }
        if (!ready) continue;
        const p = this.startAction(req, i);
        changed = true;
        if (p === null || p.done) {
          if (p !== null && p.error) throw p.error;
          state[i] = DONE;
          req.remaining--;
        } else {
          state[i] = STARTED;
          reqs[i] = p;
        }
      }
    }
    if (req.remaining === 0) {
      req.complete();
      return true;
    }
    return false;
  }

  /**
   * Region A (`b` = 0) or B (`b` = 1) of action i, as a view of the request's buffers, made
   * once per buffer set (in bounds: `start` checked the schedule's extents).
   */
  private region(req: CollRequest, i: number, b: 0 | 1): Uint8Array {
    const views = (req.bufs.views ??= []);
    let v = views[2 * i + b];
    if (v === undefined) {
      const s = req.sched;
      const buf = b === 0 ? s.bufA[i]! : s.bufB[i]!;
      const off = b === 0 ? s.offA[i]! : s.offB[i]!;
      const whole = buf === SEND ? req.bufs.send : buf === RECV ? req.bufs.recv : req.bufs.tmp;
      v = whole.subarray(off, off + s.bytesA[i]!);
      views[2 * i + b] = v;
    }
    return v;
  }

  /**
   * Reduce action i: inout = input ⊕ inout. Typed views of both regions are made once per
   * buffer set; regions a typed view cannot cover (misaligned, overlapping) go through the
   * byte-level reduction.
   */
  private reduceAction(req: CollRequest, i: number): void {
    const s = req.sched;
    const typed = (req.bufs.typed ??= []);
    let inout = typed[2 * i];
    const dt = s.dtype[i]! as DType;
    if (inout === undefined) {
      const a = this.region(req, i, 0);
      const b = this.region(req, i, 1);
      const bpe = bytesPerElement(dt);
      const overlap = a.buffer === b.buffer &&
        a.byteOffset < b.byteOffset + b.byteLength && b.byteOffset < a.byteOffset + a.byteLength;
      if (a.byteOffset % bpe !== 0 || b.byteOffset % bpe !== 0 || overlap) {
        inout = null;
      } else {
        const Ctor = ctorOf(dt) as unknown as new (buf: ArrayBufferLike, off: number, len: number) => TypedArray;
        inout = new Ctor(b.buffer, b.byteOffset, b.byteLength / bpe);
        typed[2 * i + 1] = new Ctor(a.buffer, a.byteOffset, a.byteLength / bpe);
      }
      typed[2 * i] = inout;
    }
    if (inout === null) {
      this.reduce(s.peer[i]!, dt, this.region(req, i, 0), this.region(req, i, 1));
      return;
    }
    kernelFor(s.peer[i]!, dt)(inout, 0, typed[2 * i + 1]!, 0, inout.length);
  }

  /** Starts action i: posts a send or receive (returned), or runs a local action (null). */
  private startAction(req: CollRequest, i: number): Request | null {
    const s = req.sched;
    const kind = s.kind[i]!;
    const t = req.target;
    switch (kind) {
      case A_SEND: {
        const a = this.region(req, i, 0);
        const dst = t.worldRanks[s.peer[i]!]!;
        const tag = req.tag + s.sub[i]!;
        if (this.transport.trySendEager(a, s.bytesA[i]!, dst, t.collCtx, t.rank, tag)) return null;
        return this.transport.isend(a, dst, t.collCtx, t.rank, tag);
      }
      case A_RECV:
        return this.transport.irecv(this.region(req, i, 0), 1, s.peer[i]!, t.collCtx, req.tag + s.sub[i]!);
      case A_REDUCE:
        this.reduceAction(req, i);
        return null;
      case A_COPY: {
        this.region(req, i, 1).set(this.region(req, i, 0));
        return null;
      }
      default:
        throw new NbcInternalError(`unknown action kind ${kind} in schedule ${s.algorithm}`);
    }
  }
}
