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
import { NbcInternalError } from '../errors.js';
import { Request } from '../p2p/request.js';
import type { Transport } from '../p2p/transport.js';
import { A_COPY, A_RECV, A_REDUCE, A_SEND, RECV, SEND, type Schedule } from './schedule.js';

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
}

/** DAG action states (0 = not started). */
const STARTED = 1;
const DONE = 2;

export class CollRequest extends Request {
  /** Rounds mode: next round to start. */
  round = 0;
  /** Posted sends/receives not yet complete. */
  inflight: Request[] = [];
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
    for (;;) {
      const inflight = req.inflight;
      if (inflight.length > 0) {
        for (let i = 0; i < inflight.length; i++) {
          const r = inflight[i]!;
          if (!r.done) return false;
          if (r.error) throw r.error;
        }
        inflight.length = 0;
      }
      if (req.round >= s.nRounds) {
        req.complete();
        return true;
      }
      const r = req.round++;
      for (let i = s.rounds[r]!; i < s.rounds[r + 1]!; i++) {
        const p = this.startAction(req, i);
        if (p !== null && !p.done) inflight.push(p);
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

  private region(req: CollRequest, buf: number, off: number, bytes: number): Uint8Array {
    const b = buf === SEND ? req.bufs.send : buf === RECV ? req.bufs.recv : req.bufs.tmp;
    if (off + bytes > b.byteLength) {
      throw new NbcInternalError(`schedule ${req.sched.algorithm} addresses bytes ${off}..${off + bytes} of a ${b.byteLength}-byte buffer`);
    }
    return b.subarray(off, off + bytes);
  }

  /** Starts action i: posts a send or receive (returned), or runs a local action (null). */
  private startAction(req: CollRequest, i: number): Request | null {
    const s = req.sched;
    const kind = s.kind[i]!;
    const a = this.region(req, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!);
    const t = req.target;
    switch (kind) {
      case A_SEND: {
        const dst = t.worldRanks[s.peer[i]!]!;
        const tag = req.tag + s.sub[i]!;
        if (this.transport.trySendEager(a, s.bytesA[i]!, dst, t.collCtx, t.rank, tag)) return null;
        return this.transport.isend(a, dst, t.collCtx, t.rank, tag);
      }
      case A_RECV:
        return this.transport.irecv(a, 1, s.peer[i]!, t.collCtx, req.tag + s.sub[i]!);
      case A_REDUCE:
        this.reduce(s.peer[i]!, s.dtype[i]!, a, this.region(req, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!));
        return null;
      case A_COPY:
        this.region(req, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!).set(a);
        return null;
      default:
        throw new NbcInternalError(`unknown action kind ${kind} in schedule ${s.algorithm}`);
    }
  }
}
