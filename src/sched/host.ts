/**
 * The host executor (LibNBC): the calling rank runs its own schedule. Round 0 starts inside
 * the initiating call; every later step happens when one of its messages completes, which the
 * transport notices inside progress, run by any test() or wait() of any request. So
 * outstanding collectives on any communicators advance together and complete in any order.
 *
 * This file is the host's port of the schedule interpreter (interpreter.ts): sends and
 * receives go to the rank's transport, reductions and copies run on views of the call's
 * buffers, and a transport request that completes later tells the run through its listener.
 * It also owns the buffers a start runs on (scratch from the arena or a pool, and the buffer
 * sets that remembered and persistent plans keep between starts).
 *
 * Matching: every collective instance on a communicator takes the next sequence number, and
 * all its messages travel on the communicator's collective context with that number as tag.
 * Messages between one pair of ranks inside one instance keep their order (FIFO per source),
 * so (context, sequence, order) identifies every message: concurrent collectives never cross.
 */
import type { TypedArray } from '../comm/validate.js';
import { NbcCountError, NbcInternalError, NbcTruncateError } from '../errors.js';
import { bytesPerElement, ctorOf, type DType } from '../ops/dtype.js';
import { registerFoldMemories, wasmFold, WASM_FOLD_MIN_BYTES, type WasmFold } from '../ops/folds.js';
import { kernelFor, reduceRegions } from '../ops/regions.js';
import { TAG_INVALID } from '../p2p/constants.js';
import { Request } from '../p2p/request.js';
import type { Transport } from '../p2p/transport.js';
import { copyBytes, copyRegion } from '../shm/copy.js';
import type { CollTarget, Executor, ExecutorStats, Plan } from './executor.js';
import { Interpreter, Run, type Port } from './interpreter.js';
import { A_RECV, A_REDUCE, A_SEND, RECV, SEND, TMP, type Schedule } from './schedule.js';

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
  /** Per reduction, its WebAssembly loop where both regions lie in one slice (ops/folds.ts), else null. */
  folds?: Array<WasmFold | null | undefined>;
}

/** The request of a collective run by the host executor. */
export class CollRequest extends Request {
  /** Called once when the collective completes (recycling its buffers). */
  onDone: ((err: Error | null) => void) | null = null;

  override complete(error: Error | null = null): void {
    super.complete(error);
    this.onDone?.(error);
  }
}

/** One start of a schedule on this rank. */
class HostRun extends Run {
  /**
   * The regions from which a send of this run went out without a staging copy, so that a
   * peer's core may hold their cache lines: (buffer, start, end) byte triples, or null while
   * there are none. Reductions into them fold privately (HostExecutor.reduce).
   */
  lent: number[] | null = null;

  /** Whether bytes [start, end) of `buf` overlap a lent region. */
  lends(buf: number, start: number, end: number): boolean {
    const l = this.lent;
    if (l === null) return false;
    for (let j = 0; j < l.length; j += 3) if (l[j] === buf && l[j + 1]! < end && start < l[j + 2]!) return true;
    return false;
  }

  /**
   * The peers (communicator ranks) a receive of this run found disagreeing on a count, or
   * null while none has. Such a peer may have built another schedule entirely (a lean path,
   * another algorithm), so the run waits for nothing more from it (`HostExecutor.recv`).
   */
  disagreeing: number[] | null = null;

  constructor(sched: Schedule, readonly target: CollTarget, readonly bufs: CollBuffers, readonly tag: number, readonly req: CollRequest | null) {
    super(sched);
  }

  override settled(i: number, error: Error | null): void {
    if (error !== null) this.noteDisagreement(i, error);
    super.settled(i, error);
  }

  /** A receive of action i failed with `error`: a count error names its peer as disagreeing. */
  noteDisagreement(i: number, error: Error): void {
    if (this.sched.kind[i] === A_RECV && (error instanceof NbcCountError || error instanceof NbcTruncateError)) {
      (this.disagreeing ??= []).push(this.sched.peer[i]!);
    }
  }
}

const EMPTY = new Uint8Array(0);

/** Below this, a fold into lent memory touches too few lines for the private route to pay. */
const PRIVATE_FOLD_BYTES = 4096;

export class HostExecutor implements Executor, Port<HostRun> {
  readonly name = 'host';
  private readonly interp = new Interpreter<HostRun>(this);
  /** Recycled scratch buffers of finished collectives. */
  private readonly tmpPool: Uint8Array[] = [];
  /** Where reductions into lent memory fold (reduce), grown on demand. */
  private foldBuffer = new ArrayBuffer(0);

  /** @param stats where its calls are counted (executors.ts, comm.stats()) */
  constructor(readonly transport: Transport, private readonly stats: ExecutorStats = { calls: 0 }) {
    registerFoldMemories(transport.shared.memories);
  }

  /** Starts a planned collective; round 0 (or the DAG's roots) is posted before this returns. */
  start(plan: Plan, target: CollTarget, tag: number): Request {
    this.stats.calls++;
    const { bufs, release } = this.buffersFor(plan);
    const req = this.run(plan.sched, target, bufs, tag);
    if (release !== null) {
      if (req.done) release(req.error);
      else req.onDone = release;
    }
    return req;
  }

  /**
   * A blocking start: where the schedule runs in rounds and every message of it travels
   * eagerly, it runs here to its end straight on the transport, as the lean paths do
   * (coll/lean.ts): per round its sends (Transport.sendLean, which never waits), copies and
   * reductions in the builder's order, then its receives in order, each read out of the ring
   * (Transport.recvEagerInto). The same actions, messages, tags and fold order as `start`,
   * whose interpreter would issue the round's receives before they complete, without the run's
   * requests and listeners. Check and continue holds too: a failed action records the first
   * error, later sends go flagged, and no receive waits on a peer that disagreed on a count.
   * Otherwise: `start`, then wait.
   */
  runNow(plan: Plan, target: CollTarget, tag: number): void {
    if (!(plan.direct ??= this.directly(plan.sched))) {
      this.start(plan, target, tag).wait();
      return;
    }
    this.stats.calls++;
    const t = this.transport;
    if (t.trace !== null) {
      t.trace.schedules++;
      if (t.trace.direct !== undefined) t.trace.direct++;
    }
    const { bufs, release } = this.buffersFor(plan);
    const run = new HostRun(plan.sched, target, bufs, tag, null);
    try {
      this.runRounds(run);
      t.finishLean();
    } catch (err) {
      t.dropLean();
      run.failure ??= err as Error;
    }
    release?.(run.failure);
    if (run.failure !== null) throw run.failure;
  }

  /** Whether `runNow` may run `sched` straight on the transport: rounds, and no message past the eager limit. */
  private directly(sched: Schedule): boolean {
    if (sched.isDag) return false;
    const limit = this.transport.eagerLimit;
    for (let i = 0; i < sched.nActions; i++) {
      const k = sched.kind[i]!;
      if ((k === A_SEND || k === A_RECV) && sched.bytesA[i]! > limit) return false;
    }
    return true;
  }

  /** `runNow`'s loop: every round, its local actions and sends first, then its receives. */
  private runRounds(run: HostRun): void {
    const s = run.sched;
    const t = this.transport;
    const { collCtx, rank, worldRanks } = run.target;
    for (let r = 0; r < s.nRounds; r++) {
      const end = s.rounds[r + 1]!;
      let recvs = 0;
      for (let i = s.rounds[r]!; i < end; i++) {
        const kind = s.kind[i]!;
        if (kind === A_RECV) {
          recvs++;
          continue;
        }
        try {
          if (kind === A_SEND) {
            const tag = (run.tag + s.sub[i]!) | (run.failure === null ? 0 : TAG_INVALID);
            t.sendLean(this.region(run, i, 0), s.bytesA[i]!, worldRanks[s.peer[i]!]!, collCtx, rank, tag);
          } else if (kind === A_REDUCE) {
            this.reduce(run, i);
          } else {
            this.copy(run, i);
          }
        } catch (err) {
          run.failure ??= err as Error; // check and continue, as the interpreter's issue()
        }
      }
      for (let i = s.rounds[r]!; recvs > 0 && i < end; i++) {
        if (s.kind[i] !== A_RECV) continue;
        recvs--;
        const peer = s.peer[i]!;
        const tag = run.tag + s.sub[i]!;
        if (run.disagreeing !== null && run.disagreeing.includes(peer)) {
          t.irecv(EMPTY, 1, peer, collCtx, tag); // as in recv(): take what it still sends
          continue;
        }
        try {
          t.recvEagerInto(worldRanks[peer]!, collCtx, peer, tag, this.region(run, i, 0), 0, s.bytesA[i]!);
        } catch (err) {
          run.failure ??= err as Error;
          run.noteDisagreement(i, err as Error);
        }
      }
    }
  }

  /**
   * The buffers one start runs on: scratch from the arena or a pool, a working RECV where the
   * plan has none, or a remembered plan's idle set; and what gives them back once it is done.
   */
  private buffersFor(plan: Plan): { bufs: CollBuffers; release: ((err: Error | null) => void) | null } {
    const sched = plan.sched;
    const t = this.transport;
    let bufs = plan.idle?.pop();
    if (bufs !== undefined) return { bufs, release: idleAgain(plan, bufs) };
    // Recycles the start's buffers once it completes. A collective that failed may leave
    // receives posted into them, so its buffers are never reused (the scratch leaks instead).
    let release: ((err: Error | null) => void) | null = null;
    let tmp = plan.tmp ?? EMPTY;
    let arenaOffset = -1;
    let pooledTmp: Uint8Array | null = null;
    if (sched.tmpBytes > 0 && plan.tmp === undefined) {
      // Large scratch comes from the arena, so messages sent from it need no staging copy;
      // small scratch is recycled through a pool rather than allocated per call.
      arenaOffset = sched.tmpBytes > t.eagerLimit ? t.allocator.alloc(sched.tmpBytes) : -1;
      if (arenaOffset >= 0) {
        tmp = new Uint8Array(t.shared.slices[t.ep]!, arenaOffset, sched.tmpBytes);
      } else {
        pooledTmp = this.takeTmp(sched.tmpBytes);
        tmp = pooledTmp.subarray(0, sched.tmpBytes);
      }
    }
    // Two starts running at once must not share working space (a non-root's reduce works in
    // a RECV of its own): from the pool as well, since a fresh buffer per call costs its
    // zeroing and page faults (a 2-rank reduce of 64 KiB took 205-270 us instead of 27; of
    // 1 MiB, 3.5-4.6 ms instead of 0.19, in calls too large to be remembered).
    let recv = plan.recv;
    let pooledRecv: Uint8Array | null = null;
    const bytes = plan.workRecvBytes;
    if (bytes !== undefined) {
      pooledRecv = this.takeTmp(bytes);
      recv = pooledRecv.subarray(0, bytes);
    }
    bufs = { send: plan.send, recv, tmp };
    if (plan.reuse && arenaOffset < 0) {
      release = idleAgain(plan, bufs); // the plan keeps the whole set, pooled parts included
    } else if (arenaOffset >= 0 || pooledTmp !== null || pooledRecv !== null) {
      release = (err) => {
        if (err !== null) return;
        if (arenaOffset >= 0) t.allocator.free(arenaOffset);
        if (pooledTmp !== null) this.tmpPool.push(pooledTmp);
        if (pooledRecv !== null) this.tmpPool.push(pooledRecv);
      };
    }
    return { bufs, release };
  }

  /** Runs a schedule on given buffers (checked against its extents once per start). */
  run(sched: Schedule, target: CollTarget, bufs: CollBuffers, tag: number): CollRequest {
    const ends = sched.extents();
    if (ends[SEND]! > bufs.send.byteLength || ends[RECV]! > bufs.recv.byteLength || ends[TMP]! > bufs.tmp.byteLength) {
      throw new NbcInternalError(`schedule ${sched.algorithm} addresses ${ends[SEND]}/${ends[RECV]}/${ends[TMP]} bytes of send/recv/tmp, which have ${bufs.send.byteLength}/${bufs.recv.byteLength}/${bufs.tmp.byteLength}`);
    }
    const req = new CollRequest(this.transport);
    if (this.transport.trace !== null) this.transport.trace.schedules++;
    this.interp.start(new HostRun(sched, target, bufs, tag, req));
    return req;
  }

  private takeTmp(bytes: number): Uint8Array {
    const pool = this.tmpPool;
    for (let i = pool.length - 1; i >= 0; i--) {
      const b = pool[i]!;
      if (b.byteLength >= bytes) {
        pool[i] = pool[pool.length - 1]!;
        pool.pop();
        return b;
      }
    }
    if (pool.length > 32) pool.length = 0; // only too-small buffers left: let them go
    return new Uint8Array(Math.max(64, 1 << Math.ceil(Math.log2(bytes))));
  }

  // ---- the port --------------------------------------------------------------------------

  send(run: HostRun, i: number): boolean {
    const s = run.sched;
    const t = run.target;
    const a = this.region(run, i, 0);
    const dst = t.worldRanks[s.peer[i]!]!;
    // After a failure the run still sends (nobody hangs), flagged so the data is not taken as valid.
    const tag = (run.tag + s.sub[i]!) | (run.failure === null ? 0 : TAG_INVALID);
    if (this.transport.trySendEager(a, s.bytesA[i]!, dst, t.collCtx, t.rank, tag)) return true;
    const r = this.transport.isend(a, dst, t.collCtx, t.rank, tag);
    if (r.fromOwnBuffer) (run.lent ??= []).push(s.bufA[i]!, s.offA[i]!, s.offA[i]! + s.bytesA[i]!);
    return watch(run, i, r);
  }

  recv(run: HostRun, i: number): boolean {
    const s = run.sched;
    const peer = s.peer[i]!;
    const tag = run.tag + s.sub[i]!;
    if (run.disagreeing !== null && run.disagreeing.includes(peer)) {
      // The peer passed another count, so it may run another schedule and never send this
      // (a 2-rank allreduce of 16 KiB against one of 8 B: Rabenseifner against the lean
      // path). The run already failed; it waits for nothing more from that peer, and a
      // receive into no bytes takes (and refuses) what the peer does send, so it completes.
      this.transport.irecv(EMPTY, 1, peer, run.target.collCtx, tag);
      return true;
    }
    const r = this.transport.irecvExact(this.region(run, i, 0), peer, run.target.collCtx, tag);
    if (r.done && r.error !== null) run.noteDisagreement(i, r.error);
    return watch(run, i, r);
  }

  /**
   * inout = input ⊕ inout. Typed views of both regions are made once per buffer set; regions
   * a typed view cannot cover (misaligned, overlapping) go through the byte-level reduction.
   */
  reduce(run: HostRun, i: number): void {
    const s = run.sched;
    const typed = (run.bufs.typed ??= []);
    let inout = typed[2 * i];
    const dt = s.dtype[i]! as DType;
    if (inout === undefined) {
      const a = this.region(run, i, 0);
      const b = this.region(run, i, 1);
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
      reduceRegions(s.peer[i]!, dt, this.region(run, i, 0), this.region(run, i, 1));
      return;
    }
    const kernel = kernelFor(s.peer[i]!, dt);
    if (inout.byteLength >= PRIVATE_FOLD_BYTES && run.lends(s.bufB[i]!, s.offB[i]!, s.offB[i]! + inout.byteLength)) {
      // The inout region was sent from in place, and the receiver's core read it: an element
      // loop that loads and then stores each line would wait for every line to come back
      // (6-8x slower than a private fold on the 2-core VM, bench/HISTORY.md "Folding into lent
      // memory"). Fold into private memory instead and write the result back in one memmove,
      // which takes the lines back with the copy's own store stream.
      const lent = this.region(run, i, 1);
      const bytes = new Uint8Array(this.privateFold(lent.byteLength), 0, lent.byteLength);
      copyBytes(lent, bytes, 0, lent.byteLength);
      const Ctor = ctorOf(dt) as unknown as new (buf: ArrayBufferLike, off: number, len: number) => TypedArray;
      kernel(new Ctor(bytes.buffer, 0, inout.length), 0, typed[2 * i + 1]!, 0, inout.length);
      copyBytes(bytes, lent, 0, bytes.byteLength);
      return;
    }
    const input = typed[2 * i + 1]!;
    const folds = (run.bufs.folds ??= []);
    let fold = folds[i];
    if (fold === undefined) {
      fold = input.buffer === inout.buffer && inout.byteLength >= WASM_FOLD_MIN_BYTES ? wasmFold(inout.buffer, s.peer[i]!, dt) : null;
      folds[i] = fold;
    }
    if (fold !== null) fold(inout.byteOffset, input.byteOffset, inout.byteLength);
    else kernel(inout, 0, input, 0, inout.length);
  }

  /** This executor's private fold buffer, at least `bytes` long. */
  private privateFold(bytes: number): ArrayBuffer {
    if (this.foldBuffer.byteLength < bytes) this.foldBuffer = new ArrayBuffer(Math.max(bytes, 2 * this.foldBuffer.byteLength));
    return this.foldBuffer;
  }

  copy(run: HostRun, i: number): void {
    const from = this.region(run, i, 0);
    const to = this.region(run, i, 1);
    copyRegion(from, to);
  }

  finished(run: HostRun, error: Error | null): void {
    run.req!.complete(error); // only started runs finish through the interpreter
  }

  /**
   * Region A (`b` = 0) or B (`b` = 1) of action i, as a view of the run's buffers, made once
   * per buffer set (in bounds: `run` checked the schedule's extents).
   */
  private region(run: HostRun, i: number, b: 0 | 1): Uint8Array {
    const views = (run.bufs.views ??= []);
    let v = views[2 * i + b];
    if (v === undefined) {
      const s = run.sched;
      const buf = b === 0 ? s.bufA[i]! : s.bufB[i]!;
      const off = b === 0 ? s.offA[i]! : s.offB[i]!;
      const whole = buf === SEND ? run.bufs.send : buf === RECV ? run.bufs.recv : run.bufs.tmp;
      v = whole.subarray(off, off + s.bytesA[i]!);
      views[2 * i + b] = v;
    }
    return v;
  }
}

/** A posted send or receive: done now (true; its error thrown), or the run is told later. */
function watch(run: HostRun, i: number, r: Request): boolean {
  if (r.done) {
    if (r.error !== null) throw r.error;
    return true;
  }
  r.listener = run;
  r.listenerToken = i;
  return false;
}

/** The completion hook that hands a finished start's buffer set back to its plan. */
function idleAgain(plan: Plan, bufs: CollBuffers): (err: Error | null) => void {
  return (err) => {
    if (err === null) (plan.idle ??= []).push(bufs);
  };
}
