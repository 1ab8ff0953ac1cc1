/**
 * The flag board: where a communicator of every rank of a crowded one-node job (more ranks than
 * cores) runs its blocking barrier and small allreduce, instead of over the rings: the world,
 * and the next communicators of all its ranks while the node's boards last (shm/layout.ts,
 * BOARDS). Open MPI's
 * coll/sm and UCC's tl/shm do the same: each rank writes its contribution and a call number
 * into its own lines of shared memory, and waits until every rank's call number has come.
 *
 * Why: on a crowded host every round of a ring algorithm is a wait that hands the core over,
 * and the rank that gets it runs a round of sends, receives and matching anew, with the caches
 * another rank's isolate has just used. Here a call is one store of the call number, a look
 * at the others', and the fold, which every rank does itself (4 ranks on 2 cores: a loop of
 * barriers and 8 B allreduces in a third of the rings' time, at Open MPI's; BENCHMARKS.md,
 * "Four ranks on two cores").
 *
 * - **Layout** (shm/layout.ts, "the flag board"): per endpoint a line with the call number and,
 *   per parity of the call number, what it called; 16 lines of data per parity. A call writes
 *   the lines of its parity, so a rank that is a call ahead never overwrites what a slower one
 *   still reads: it can only have started call s + 1 once every rank's number reached s, that
 *   is once every rank had finished call s - 1, the last to read those lines.
 * - **Same bits as recursive doubling.** Every rank folds every contribution itself, in the
 *   tree recursive doubling builds (pairs of the first 2r ranks, then halves of the remaining
 *   power of two, the lower half first), so the result is the lean path's, bit for bit,
 *   whatever the op (commutative or not).
 * - **Disagreeing calls fail on every rank.** Each rank describes its call (barrier, or the
 *   allreduce's bytes and type) beside its number; once all are in, a rank that finds another
 *   description throws, as the rings' exact receives do (the longer side NBC_ERR_COUNT, the
 *   shorter NBC_ERR_TRUNCATE). A blocking allreduce on this communicator that takes another
 *   path (past BOARD_DATA_BYTES, or any other default one) first arrives here with its
 *   description too, so a disagreement between the paths fails instead of hanging.
 * - **Waiting** is the rank's waiter (p2p/wait.ts): yield between polls, then park; a rank that
 *   stores its number rings the doorbell of any rank that has parked. Progress runs at every
 *   8th poll, as for a lean receive; it reads the word (KIND_FIN) of a rank that returned from
 *   its job, and a call still waiting for that rank then fails, naming it. A rank that dies
 *   stops the node, whose abort word ends every wait.
 */
import type { TypedArray } from '../comm/validate.js';
import { NbcArgError, NbcCountError, NbcPeerFailedError, NbcTruncateError, NbcTypeError } from '../errors.js';
import { ctorOf, DType, dtypeName } from '../ops/index.js';
import type { Transport } from '../p2p/transport.js';
import type { Waitable } from '../p2p/wait.js';
import type { ExecutorStats } from '../sched/executor.js';
import { copyAt } from '../shm/copy.js';
import { BOARD_DATA_BYTES, BOARD_DATA_LINES, boardLine, kBoardDesc, kBoardSeq, LINE_WORDS } from '../shm/layout.js';
import { wake } from '../shm/node-shared.js';
import type { LeanAllreduce } from './lean.js';
import { pow2Floor } from './shape.js';

export { BOARD_DATA_BYTES } from '../shm/layout.js';

/** A barrier's description (its bytes word). */
const BARRIER = -1;

/** The collective a call's description (its bytes word) names, for messages. */
const callName = (bytes: number): string => (bytes === BARRIER ? 'barrier' : 'allreduce');

export class FlatBoard implements Waitable {
  readonly progressMask = 7;
  private readonly ctl: Int32Array;
  private readonly board: Uint8Array;
  /** Per rank of the communicator, the first word of its board lines. */
  private readonly line: Int32Array;
  /** Per rank, its endpoint (doorbells) and its world rank. */
  private readonly eps: Int32Array;
  private readonly world: Int32Array;
  private readonly me: number;
  private readonly size: number;
  /** The last call number (wraps; compared by difference). */
  private seq = 0;
  /** The call number a wait waits for, and the first rank not yet seen there. */
  private want = 0;
  private from = 0;
  /** Private copies of every rank's contribution, a line each, folded in place. */
  private readonly scratch: Uint8Array;
  /**
   * `scratch` typed as the last call's type (`viewType`). One view, not one per type in an
   * array: an array that starts empty has another map on each board until its first call, and
   * the fold optimised on one board would deoptimise on the next.
   */
  private typed: TypedArray;
  private viewType: DType = DType.Float64;
  /** Where each leaf's partial result lies in `scratch` (line index). */
  private readonly at: Int32Array;

  /**
   * `ctx`: the communicator's context (for messages); `board`: which of the node's boards
   * (Transport.claimBoard); `eps` and `world`: the endpoint and world rank of each rank of the
   * communicator (its lines). The communicator holds every rank of the node, and no other
   * communicator uses the board.
   */
  constructor(private readonly t: Transport, private readonly ctx: number, board: number, eps: Int32Array, world: Int32Array, rank: number,
    private readonly stats: ExecutorStats) {
    this.ctl = t.control;
    this.board = new Uint8Array(t.control.buffer);
    this.eps = eps;
    this.world = world;
    this.me = rank;
    this.size = eps.length;
    this.line = Int32Array.from(eps, (e) => boardLine(t.boardBase, board, t.endpoints, e));
    this.scratch = new Uint8Array(this.size * BOARD_DATA_BYTES);
    this.at = new Int32Array(pow2Floor(this.size));
    this.typed = new Float64Array(this.scratch.buffer);
  }

  /** Whether every rank's call number has reached the one waited for (Waitable). */
  get done(): boolean {
    return this.allIn();
  }
  ready(): boolean {
    return this.allIn();
  }
  settled(): boolean {
    return this.allIn();
  }

  private allIn(): boolean {
    const ctl = this.ctl;
    const line = this.line;
    const want = this.want;
    let q = this.from;
    while (q < this.size && ((Atomics.load(ctl, line[q]! + kBoardSeq) - want) | 0) >= 0) q++;
    this.from = q;
    if (q === this.size) return true;
    if (this.t.core.finishedCount > 0) this.failIfGone(q);
    return false;
  }

  /**
   * A rank that has returned from its job (its FIN came through the rings, which progress reads)
   * will never arrive: the call fails, naming it, as a receive from it does.
   */
  private failIfGone(from: number): void {
    for (let q = from; q < this.size; q++) {
      if (((Atomics.load(this.ctl, this.line[q]! + kBoardSeq) - this.want) | 0) >= 0) continue;
      if (this.t.core.isFinished(this.world[q]!)) {
        throw new NbcPeerFailedError(`Rank ${this.me} cannot receive from rank ${q} (${callName(this.ctl[this.line[this.me]! + kBoardDesc + 2 * (this.want & 1)]!)} on communicator ${this.ctx}'s flag board): ` +
          'that rank returned from its job without calling it; expected every rank to make the same calls (a collective it skipped)');
      }
    }
  }

  /** Blocking barrier. */
  barrier(): void {
    this.stats.calls++;
    this.arrive(BARRIER, 0, null, 0);
  }

  /**
   * Blocking allreduce of at most BOARD_DATA_BYTES, `a` resolved as for the lean path: the
   * result recursive doubling gives, on every rank.
   */
  allreduce(a: LeanAllreduce): void {
    this.stats.calls++;
    const k = this.arrive(a.bytes, a.dt, a.copyIn ? a.sv : a.rv, a.bytes);
    const p = this.size;
    const n = a.bytes;
    const board = this.board;
    const scratch = this.scratch;
    for (let q = 0; q < p; q++) copyAt(board, this.dataByte(q, k), scratch, q * BOARD_DATA_BYTES, n);
    const v = this.view(a.dt);
    const per = BOARD_DATA_BYTES / a.esize;
    const kernel = a.kernel;
    const count = a.count;
    // Recursive doubling's tree: the first 2r ranks fold in pairs (x[2j] ⊕ x[2j+1]), then the
    // power of two folds halves, the lower first; each fold lands in its right operand's line.
    const at = this.at;
    const pp = at.length;
    const r = p - pp;
    for (let j = 0; j < pp; j++) {
      if (j < r) {
        kernel(v, (2 * j + 1) * per, v, 2 * j * per, count);
        at[j] = 2 * j + 1;
      } else {
        at[j] = j + r;
      }
    }
    for (let w = 1; w < pp; w *= 2) {
      for (let j = 0; j + w < pp; j += 2 * w) {
        kernel(v, at[j + w]! * per, v, at[j]! * per, count);
        at[j] = at[j + w]!;
      }
    }
    copyAt(scratch, at[0]! * BOARD_DATA_BYTES, a.rv, 0, n);
  }

  /**
   * A blocking allreduce of `bytes` and `dt` that runs on another path (rings or schedule):
   * arrives with its description first, so that a rank whose call took the board, or another
   * count or type, fails here with the others instead of leaving them waiting.
   */
  arriveOnly(bytes: number, dt: DType): void {
    this.arrive(bytes, dt, null, 0);
  }

  /**
   * Writes this rank's contribution and description for the next call, its call number, and
   * waits for every rank's; then checks that all described the same call. Returns the call's
   * parity (which lines hold its data).
   */
  private arrive(bytes: number, dt: number, data: Uint8Array | null, n: number): number {
    const ctl = this.ctl;
    const s = (this.seq + 1) | 0;
    this.seq = s;
    const k = s & 1;
    const mine = this.line[this.me]!;
    ctl[mine + kBoardDesc + 2 * k] = bytes;
    ctl[mine + kBoardDesc + 2 * k + 1] = dt;
    if (data !== null) copyAt(data, 0, this.board, this.dataByte(this.me, k), n);
    Atomics.store(ctl, mine + kBoardSeq, s);
    const eps = this.eps;
    for (let q = 0; q < this.size; q++) if (q !== this.me) wake(ctl, eps[q]!);
    this.want = s;
    this.from = 0;
    if (!this.allIn()) this.t.waiter.run(this, this.t.waiter.spinMs, false);
    for (let q = 0; q < this.size; q++) {
      const at = this.line[q]! + kBoardDesc + 2 * k;
      if (ctl[at] !== bytes || ctl[at + 1] !== dt) this.disagree(q, bytes, dt, k);
    }
    return k;
  }

  /** Where rank `q`'s contribution to calls of parity `k` starts, in bytes of the control buffer. */
  private dataByte(q: number, k: number): number {
    return (this.line[q]! + (1 + k * BOARD_DATA_LINES) * LINE_WORDS) * 4;
  }

  /** Throws what rank `q`'s description of call parity `k` disagrees with in this rank's. */
  private disagree(q: number, bytes: number, dt: number, k: number): never {
    const at = this.line[q]! + kBoardDesc + 2 * k;
    const theirs = this.ctl[at]!;
    const theirType = this.ctl[at + 1]!;
    if ((theirs === BARRIER) !== (bytes === BARRIER)) {
      throw new NbcArgError(`Rank ${this.me} called ${callName(bytes)} on communicator ${this.ctx} where rank ${q} called ${callName(theirs)}; ` +
        'expected every rank to call the same collectives in the same order');
    }
    if (theirType !== dt) {
      throw new NbcTypeError(`Cannot allreduce ${dtypeName(dt as DType)} on communicator ${this.ctx}: rank ${q} passed ` +
        `${dtypeName(theirType as DType)}; expected every rank to pass the same type`);
    }
    const why = `rank ${this.me} passed ${bytes} bytes to allreduce on communicator ${this.ctx}, rank ${q} ${theirs}: the ranks disagree on the count`;
    // As the rings' exact receives: the side whose partner sent more cannot take it all.
    if (theirs > bytes) throw new NbcTruncateError(`Cannot allreduce: ${why}; expected every rank to pass the same count`);
    throw new NbcCountError(`Cannot allreduce: ${why}; expected every rank to pass the same count`);
  }

  /** `scratch` typed as `dt`. */
  private view(dt: DType): TypedArray {
    if (this.viewType !== dt) {
      const Ctor = ctorOf(dt) as unknown as new (b: ArrayBufferLike) => TypedArray;
      this.typed = new Ctor(this.scratch.buffer);
      this.viewType = dt;
    }
    return this.typed;
  }
}
