/**
 * The offload executor (seed 000, CORE-Direct): the node engine runs ranks' schedules by
 * itself, so a rank that computes without calling into nbcoll still finds its collective
 * complete. It runs the very schedules the host executor runs, with the same rounds, DAG
 * dependencies, fold order and tags, so results are bitwise identical.
 *
 * Messages of offloaded schedules never touch the ranks' rings:
 * - both ends on this node: the engine matches the send with the receive and copies the bytes
 *   from one rank's region into the other's (both live in the node's shared memory);
 * - the receiver on another node: an engine-to-engine frame, matched there the same way.
 * Matching is by (destination world rank, context, tag + sub-tag, source rank in the
 * communicator), first in first out, exactly as the transport matches: so offloaded and
 * host-executed schedules exchange the same messages.
 *
 * Completion: the engine stores 1 (or 2 on error) into the request's completion word in the
 * rank's arena slice and rings the rank's doorbell.
 *
 * Its inputs, dispatched to it by the engine (runtime/engine.ts): the ranks' records
 * (`onRecord`) and other engines' frames (`onFrame`), both laid out in offload-records.ts; a
 * message to another node leaves as one frame per fragment (net/fragment.ts). Core code: no
 * node:* imports.
 */
import { NbcArgError, NbcError, NbcInternalError, NbcPeerFailedError, NbcTruncateError } from '../errors.js';
import { DTYPE_COUNT, type DType } from '../ops/dtype.js';
import { OpCode } from '../ops/loops.js';
import { reduceRegions } from '../ops/regions.js';
import { REPORTED_ELSEWHERE, TAG_BITS, TAG_INVALID } from '../p2p/constants.js';
import { MatchTable } from '../p2p/match-table.js';
import { copyBytes, copyRegion } from '../shm/copy.js';
import { forEachFragment, fragmentCount } from '../net/fragment.js';
import { KIND_POST, KIND_SCHED } from '../shm/layout.js';
import {
  COMM_RELEASE, decodeOffloadRecord, decodePost, OF_CTX, OF_DST, OF_ID, OF_OFFSET, OF_SRC, OF_TAG, OF_TOTAL, offloadHeader, POST_TWO_LEVEL_WORDS,
  POST_WORDS, recordRoom, type OffloadRecord, type RegionRef,
} from './offload-records.js';
import { decodeSchedule } from './wire.js';
import { Interpreter, Run, type Port } from './interpreter.js';
import { A_RECV, A_REDUCE, A_SEND, RECV, SEND, TMP, type Schedule } from './schedule.js';
import { nodeLayout, planTwoLevel, TL_AGG, type InterNodeColl, type InterNodeShape, type Member, type NodeLayout, type TwoLevelCall } from './two-level.js';

/** Completion word values. */
export const DONE_OK = 1;
export const DONE_ERROR = 2;
/** The aggregation fabric failed under the collective (a daemon, link or member node died). */
export const DONE_PEER_FAILED = 3;
/**
 * The collective received data that is not valid: it had already failed on the rank that sent
 * it (a disagreeing count or a lost peer there), which sent it only so that nobody waits.
 */
export const DONE_INVALID = 4;
/** Completed, reduced by the aggregation fabric (an `agg` call; DONE_OK where the engines exchanged it). */
export const DONE_FABRIC = 5;
/**
 * DONE_PEER_GONE + w: the collective waited for world rank w, which returned from its job
 * without taking part (peerFinished).
 */
export const DONE_PEER_GONE = 1 << 16;

/** What the offload executor needs of its engine. */
export interface OffloadHost {
  nodeId: number;
  nodeOfRank: Int32Array;
  /** Byte views of every arena slice of this node. */
  slices: Uint8Array[];
  /** Sends one frame (header + payload) to another node's engine; `onWritten` once it left. */
  sendFrame(node: number, header: Int32Array, payload: Uint8Array, onWritten: () => void): void;
  /** The schedule the engines of a two-level collective run among themselves (one per node). */
  interNode(coll: InterNodeColl, s: InterNodeShape): Schedule;
  /**
   * Stores `value` into the completion word at (slice, offset) and wakes rank endpoint `ep`;
   * first `arrive`, when given and not 0, into the word after it: the tick the emulated network
   * delivers the result at, which the rank waits out (offload-client.ts).
   */
  complete(ep: number, slice: number, offset: number, value: number, arrive?: number): void;
  /**
   * Runs the engines' exchange of an `agg` call (barrier, reduce, allreduce) through the
   * aggregation fabric; `fallback` runs it among the engines instead (the fabric refused the
   * communicator, collectively). Calls `done` with DONE_FABRIC (the fabric reduced it), DONE_OK
   * (the engines did, through `fallback`'s schedule), DONE_ERROR or DONE_PEER_FAILED.
   * Absent when the node has no fabric: the exchange then runs among the engines.
   */
  aggregate?(key: string, layout: NodeLayout, inter: AggExchange, fallback: () => void, done: (value: number, arrive?: number) => void): void;
}

/** What the fabric reduces for one `agg` call: the node's folded data and where the result goes. */
export interface AggExchange {
  coll: 'allreduce' | 'reduce' | 'barrier';
  /** The root's node index (reduce), else 0. */
  rootNode: number;
  op: number;
  dtype: number;
  send: Uint8Array;
  recv: Uint8Array;
}

/** Predefined op ids are 0 .. OP_COUNT - 1; the engine runs no other (user ops stay in their thread). */
const OP_COUNT = Object.keys(OpCode).length;

/**
 * What a post needs of its communicator, per schedule, computed once: the highest peer its
 * sends and receives name and the highest op id its reductions use (-1 when none).
 */
interface ScheduleNeeds {
  maxPeer: number;
  maxOp: number;
}

function needsOf(s: Schedule): ScheduleNeeds {
  let maxPeer = -1;
  let maxOp = -1;
  for (let i = 0; i < s.nActions; i++) {
    const k = s.kind[i]!;
    if (k === A_SEND || k === A_RECV) maxPeer = Math.max(maxPeer, s.peer[i]!);
    else if (k === A_REDUCE) maxOp = Math.max(maxOp, s.peer[i]!);
  }
  return { maxPeer, maxOp };
}

/** One execution of a schedule by the engine: a rank's offloaded collective, or an engines' exchange. */
class OffloadRun extends Run {
  constructor(
    sched: Schedule,
    readonly ep: number,
    readonly worldRanks: Int32Array,
    readonly rank: number,
    readonly ctx: number,
    readonly tag: number,
    readonly bufs: readonly [Uint8Array, Uint8Array, Uint8Array],
    readonly slotSlice: number,
    readonly slotOffset: number,
    /** Engine-level schedules (two-level designs) report here instead of a completion word. */
    readonly onDone?: (ok: boolean) => void,
  ) {
    super(sched);
  }
}

interface TwoLevelPost extends Member {
  ep: number;
  slotSlice: number;
  slotOffset: number;
}

/**
 * A posted receive, or a local send waiting for its receive: filed by (destination world rank,
 * context), matched by `src` (the sender's rank in the communicator) and `tag`.
 */
interface Waiting {
  src: number;
  tag: number;
  run: OffloadRun;
  action: number;
  view: Uint8Array;
  /** A local send of a run that had already failed: its data is not valid (constants.ts TAG_INVALID). */
  invalid: boolean;
}

/** A message from another node's engine that no receive was posted for yet. */
interface Arrival {
  src: number;
  tag: number;
  data: Uint8Array;
  /** Sent by a run that had already failed (its frames' tag carried TAG_INVALID). */
  invalid: boolean;
}

/**
 * How many schedules an engine keeps registered per rank, oldest registration out. Without a
 * bound every schedule a rank ever offloaded stayed in its engine: each call with per-rank
 * counts (gatherv, alltoallv, ...: not cached, a new schedule each time) and each cached
 * schedule of every communicator since freed; the soak (`npm run soak`) measured ~425 MB an
 * hour per node. The rank's client mirrors the window: both drop the oldest registration,
 * and registrations reach the engine in the order the client made them (one FIFO ring).
 */
export const REGISTERED_SCHEDULES = 256;

export class OffloadEngine implements Port<OffloadRun> {
  private readonly interp = new Interpreter<OffloadRun>(this);
  /** Per rank endpoint: its registered schedules by id, oldest registration first. */
  private readonly schedules = new Map<number, Map<number, Schedule>>();
  /** Schedules and communicators whose registration was refused: why, for the post that names them. */
  private readonly refused = new Map<string, string>();
  private readonly needs = new WeakMap<Schedule, ScheduleNeeds>();
  private readonly comms = new Map<string, Int32Array>();
  /** Exact matching (p2p/match-table.ts): posted receives, local sends, and arrived remote messages. */
  private readonly posted = new MatchTable<Waiting>();
  private readonly localSends = new MatchTable<Waiting>();
  private readonly arrived = new MatchTable<Arrival>();
  private readonly assembling = new Map<string, { data: Uint8Array; got: number }>();
  /** Two-level collectives waiting for the rest of their node's members. */
  private readonly groups = new Map<string, TwoLevelPost[]>();
  private readonly layouts = new WeakMap<Int32Array, NodeLayout>();
  private nextFrameId = 1;
  /** World ranks that have returned from their jobs (peerFinished). */
  private readonly finishedRanks = new Set<number>();

  constructor(private readonly host: OffloadHost) {}

  /**
   * Rank endpoint `ep`'s offload record at word `w` of its ring (KIND_POST, KIND_SCHED,
   * KIND_COMM; offload-records.ts). Nothing in it is trusted: a schedule that does not decode,
   * a communicator naming ranks that do not exist, a post whose regions lie outside the arena
   * or that the schedule overruns, all complete the post with DONE_ERROR (the rank's collective
   * fails with an NbcError); the reason is returned (null: taken) for the engine to log. Only
   * a completion word outside the rank's arena slice, which leaves no way to answer, throws.
   */
  onRecord(ep: number, i32: Int32Array, w: number): string | null {
    const rec = decodeOffloadRecord(i32, w);
    if (rec.kind === KIND_POST) return this.onPost(ep, rec, i32);
    const room = recordRoom(rec.len);
    if (rec.bytes < 0 || rec.bytes % 4 !== 0 || rec.bytes > room) {
      const what = rec.kind === KIND_SCHED ? `schedule ${rec.id}` : `communicator ${rec.ctx}`;
      const why = `its ${what} record declares ${rec.bytes} bytes in a ${rec.len}-byte record`;
      if (rec.kind === KIND_SCHED) this.refuseSchedule(ep, rec.id, why);
      else this.refuseComm(ep, rec.ctx, why);
      return why;
    }
    const words = i32.slice(rec.words, rec.words + (rec.bytes >> 2));
    try {
      if (rec.kind === KIND_SCHED) {
        try {
          this.registerSchedule(ep, rec.id, decodeSchedule(words));
        } catch (err) {
          this.refuseSchedule(ep, rec.id, (err as Error).message);
          throw err;
        }
      } else if (rec.tag === COMM_RELEASE && words.length === 0) {
        this.releaseComm(ep, rec.ctx);
      } else {
        this.registerComm(ep, rec.ctx, words);
      }
    } catch (err) {
      if (!(err instanceof NbcError)) throw err;
      return err.message;
    }
    return null;
  }

  /** A KIND_POST record: its completion word checked, then its arguments (onRecord). */
  private onPost(ep: number, rec: OffloadRecord, i32: Int32Array): string | null {
    const { slotSlice: slot, slotOffset } = rec;
    const slices = this.host.slices;
    const slotBytes = slices[slot]?.byteLength ?? 0;
    if (slot !== ep || slotOffset < 0 || slotOffset % 4 !== 0 || slotOffset + 4 > slotBytes) {
      throw new NbcInternalError(`rank ${ep} posted an offloaded collective whose completion word (slice ${slot}, ` +
        `offset ${slotOffset}) is not in its own arena slice of ${slices[ep]!.byteLength} bytes`);
    }
    // Schedule id 0: a two-level post, with its call after the regions (offload-records.ts, decodePost).
    const twoLevel = rec.id === 0;
    const need = (twoLevel ? POST_TWO_LEVEL_WORDS : POST_WORDS) * 4;
    if (rec.bytes < need || rec.bytes > recordRoom(rec.len)) {
      this.host.complete(ep, slot, slotOffset, DONE_ERROR);
      return `its post record declares ${rec.bytes} bytes of arguments in a ${rec.len}-byte record; expected ${need}`;
    }
    const p = decodePost(i32, rec.words, twoLevel);
    return p.call !== null
      ? this.postTwoLevel(ep, rec.ctx, rec.rank, rec.tag, p.send, p.recv, p.call, slot, slotOffset)
      : this.post(ep, rec.id, rec.ctx, rec.rank, rec.tag, p.send, p.recv, p.tmp, slot, slotOffset);
  }

  /**
   * Registers rank endpoint `ep`'s schedule `id`, forgetting its oldest registration beyond
   * REGISTERED_SCHEDULES; the rank's client forgets the same one (offload-client.ts), so it
   * registers that schedule again before posting it. A run already started keeps its schedule.
   */
  registerSchedule(ep: number, id: number, sched: Schedule): void {
    let mine = this.schedules.get(ep);
    if (mine === undefined) {
      mine = new Map();
      this.schedules.set(ep, mine);
    }
    mine.set(id, sched);
    if (mine.size > REGISTERED_SCHEDULES) mine.delete(mine.keys().next().value!);
    this.refused.delete(`s${ep}:${id}`);
  }

  /**
   * A schedule record that did not decode (sched/wire.ts): the posts that name `id` complete
   * with DONE_ERROR, and `why` is what the engine logs for each.
   */
  refuseSchedule(ep: number, id: number, why: string): void {
    this.schedules.get(ep)?.delete(id);
    this.refused.set(`s${ep}:${id}`, why);
  }

  /**
   * Registers a communicator's members (world ranks). Throws NbcArgError, registering nothing,
   * when a member is not a world rank; the posts on `ctx` then complete with DONE_ERROR.
   */
  registerComm(ep: number, ctx: number, worldRanks: Int32Array): void {
    const world = this.host.nodeOfRank.length;
    let why: string | null = worldRanks.length === 0 ? 'it has no members' : null;
    for (let i = 0; i < worldRanks.length && why === null; i++) {
      const w = worldRanks[i]!;
      if (!(w >= 0 && w < world)) why = `member ${i} is world rank ${w}; expected 0..${world - 1}`;
    }
    if (why !== null) {
      why = `Cannot register communicator ${ctx} of endpoint ${ep}: ${why}`;
      this.refuseComm(ep, ctx, why);
      throw new NbcArgError(why);
    }
    this.comms.set(`${ep}:${ctx}`, worldRanks);
    this.refused.delete(`c${ep}:${ctx}`);
  }

  /** Communicators registered, over every endpoint (for tests and diagnostics). */
  get registeredComms(): number {
    return this.comms.size;
  }

  /** A freed communicator: forget its members (runs already started keep theirs). */
  releaseComm(ep: number, ctx: number): void {
    this.comms.delete(`${ep}:${ctx}`);
    this.refused.delete(`c${ep}:${ctx}`);
  }

  /** A communicator record that was refused: the posts on `ctx` complete with DONE_ERROR. */
  refuseComm(ep: number, ctx: number, why: string): void {
    this.comms.delete(`${ep}:${ctx}`);
    this.refused.set(`c${ep}:${ctx}`, why);
  }

  /**
   * Why a region descriptor from a rank is unusable, or null: it must lie inside one of this
   * node's arena slices (a view past it would be silently clamped, and a reduction over it
   * would run past the region into other ranks' memory).
   */
  private badRegion(r: RegionRef, what: string): string | null {
    const slices = this.host.slices;
    if (!Number.isInteger(r.slice) || r.slice < 0 || r.slice >= slices.length) {
      return `its ${what} region names arena slice ${r.slice}; expected 0..${slices.length - 1}`;
    }
    const size = slices[r.slice]!.byteLength;
    if (r.offset < 0 || r.bytes < 0 || r.offset + r.bytes > size) {
      return `its ${what} region [${r.offset}, +${r.bytes}) lies outside arena slice ${r.slice} (${size} bytes)`;
    }
    return null;
  }

  /** Why `rank` cannot post on a communicator of `worldRanks`: out of range, or a rank of another node. */
  private rankRefusal(ctx: number, worldRanks: Int32Array, rank: number): string | null {
    if (!(rank >= 0 && rank < worldRanks.length)) return `rank ${rank} is out of range for communicator ${ctx} of ${worldRanks.length}`;
    const world = worldRanks[rank]!;
    if (this.host.nodeOfRank[world] !== this.host.nodeId) {
      return `rank ${rank} of communicator ${ctx} is world rank ${world}, which is not on node ${this.host.nodeId}`;
    }
    return null;
  }

  /**
   * Why this post cannot run, or null: the schedule or communicator was not registered (or was
   * refused), a region lies outside the arena, the schedule addresses more of a buffer than the
   * post gave it, names a peer outside the communicator or an op the engine does not run.
   */
  private refusal(ep: number, id: number, ctx: number, rank: number, regions: readonly RegionRef[]): string | null {
    const sched = this.schedules.get(ep)?.get(id);
    if (sched === undefined) return this.refused.get(`s${ep}:${id}`) ?? `schedule ${id} was never registered`;
    const worldRanks = this.comms.get(`${ep}:${ctx}`);
    if (worldRanks === undefined) return this.refused.get(`c${ep}:${ctx}`) ?? `communicator ${ctx} was never registered`;
    const why = this.rankRefusal(ctx, worldRanks, rank);
    if (why !== null) return why;
    const names = ['send', 'recv', 'scratch'];
    for (let b = 0; b < regions.length; b++) {
      const why = this.badRegion(regions[b]!, names[b]!);
      if (why !== null) return why;
    }
    const ext = sched.extents();
    for (let b = SEND; b <= TMP; b++) {
      if (ext[b]! > regions[b]!.bytes) {
        return `schedule ${sched.algorithm} addresses ${ext[b]} bytes of its ${names[b]} buffer; the post gave ${regions[b]!.bytes}`;
      }
    }
    let needs = this.needs.get(sched);
    if (needs === undefined) {
      needs = needsOf(sched);
      this.needs.set(sched, needs);
    }
    if (needs.maxPeer >= worldRanks.length) {
      return `schedule ${sched.algorithm} names peer ${needs.maxPeer}; communicator ${ctx} has ${worldRanks.length} ranks`;
    }
    if (needs.maxOp >= OP_COUNT) return `schedule ${sched.algorithm} reduces with op ${needs.maxOp}; expected a predefined op (0..${OP_COUNT - 1})`;
    return null;
  }

  /**
   * Starts rank endpoint `ep`'s schedule `id` on its communicator `ctx`. A post that cannot run
   * (see `refusal`) completes with DONE_ERROR at once; the reason is returned (null when it
   * started) so the engine can log it.
   */
  post(ep: number, id: number, ctx: number, rank: number, tag: number, send: RegionRef, recv: RegionRef, tmp: RegionRef,
    slotSlice: number, slotOffset: number): string | null {
    const why = this.refusal(ep, id, ctx, rank, [send, recv, tmp]);
    if (why !== null) {
      this.host.complete(ep, slotSlice, slotOffset, DONE_ERROR);
      return why;
    }
    const sched = this.schedules.get(ep)!.get(id)!;
    const worldRanks = this.comms.get(`${ep}:${ctx}`)!;
    const view = (r: RegionRef): Uint8Array => this.host.slices[r.slice]!.subarray(r.offset, r.offset + r.bytes);
    this.interp.start(new OffloadRun(sched, ep, worldRanks, rank, ctx, tag, [view(send), view(recv), view(tmp)], slotSlice, slotOffset));
    return null;
  }

  /**
   * A two-level collective (sched/two-level.ts): each member of the node posts its buffers;
   * once every member of the communicator on this node has posted, the engine plans the call,
   * runs the engines' exchange (one participant per node, on the context -ctx-1, addressed to
   * each node's lowest member) and writes every local member's result. No rank does leader
   * work.
   */
  postTwoLevel(ep: number, ctx: number, rank: number, tag: number, send: RegionRef, recv: RegionRef,
    call: TwoLevelCall, slotSlice: number, slotOffset: number): string | null {
    const worldRanks = this.comms.get(`${ep}:${ctx}`);
    const why = worldRanks === undefined ? this.refused.get(`c${ep}:${ctx}`) ?? `communicator ${ctx} was never registered`
      : this.twoLevelRefusal(ctx, worldRanks, rank, send, recv, call);
    if (why !== null || worldRanks === undefined) {
      this.host.complete(ep, slotSlice, slotOffset, DONE_ERROR);
      return why;
    }
    let layout = this.layouts.get(worldRanks);
    if (layout === undefined) {
      layout = nodeLayout(worldRanks, this.host.nodeOfRank, this.host.nodeId);
      this.layouts.set(worldRanks, layout);
    }
    // Disjoint communicators from one split share a context id: the first member tells them apart.
    const key = `${ctx}:${tag}:${worldRanks[0]}`;
    let g = this.groups.get(key);
    if (g === undefined) {
      g = [];
      this.groups.set(key, g);
    }
    const view = (r: RegionRef): Uint8Array => this.host.slices[r.slice]!.subarray(r.offset, r.offset + r.bytes);
    const agg = (call.kind & TL_AGG) !== 0;
    g.push({ ep, rank, call: agg ? { ...call, kind: call.kind & ~TL_AGG } : call, send: view(send), recv: view(recv), slotSlice, slotOffset });
    if (g.length < layout.members[layout.me]!.length) return null;
    this.groups.delete(key);
    const posts = g.sort((a, b) => a.rank - b.rank);
    const plan = planTwoLevel(layout, posts);
    const complete = (value: number, arrive = 0): void => {
      const ok = value === DONE_OK || value === DONE_FABRIC;
      const v = ok && !plan.ok ? DONE_ERROR : value;
      if (v === DONE_OK || v === DONE_FABRIC) plan.finish();
      for (const p of posts) this.host.complete(p.ep, p.slotSlice, p.slotOffset, v, arrive);
    };
    const finish = (ok: boolean): void => complete(ok ? DONE_OK : DONE_ERROR);
    const inter = plan.inter;
    if (inter === null) {
      finish(true);
      return null;
    }
    const engines = (): void => {
      const sched = this.host.interNode(inter.coll, inter.shape);
      const run = new OffloadRun(sched, -1, layout.reps, layout.me, -ctx - 1, tag,
        [inter.send, inter.recv, new Uint8Array(sched.tmpBytes)], -1, -1, finish);
      // Members that disagree still take part in the exchange, so that no engine waits, but as
      // a run that has failed: what it sends is flagged invalid, and the other nodes' members
      // fail too instead of completing with this node's unfolded data.
      if (!plan.ok) run.failure = new NbcArgError(`The members of node ${this.host.nodeId} disagree on a two-level collective (kind, root, op, type or size)`);
      this.interp.start(run);
    };
    const coll = inter.coll;
    if (agg && this.host.aggregate !== undefined && (coll === 'allreduce' || coll === 'reduce' || coll === 'barrier')) {
      this.host.aggregate(`${ctx}:${worldRanks[0]}`, layout,
        { coll, rootNode: inter.shape.root, op: inter.shape.op, dtype: inter.shape.dtype, send: inter.send, recv: inter.recv },
        engines, complete);
      return null;
    }
    engines();
    return null;
  }

  /** Why a two-level post on a communicator of `size` ranks cannot run, or null. */
  private twoLevelRefusal(ctx: number, worldRanks: Int32Array, rank: number, send: RegionRef, recv: RegionRef, call: TwoLevelCall): string | null {
    const size = worldRanks.length;
    const why = this.rankRefusal(ctx, worldRanks, rank);
    if (why !== null) return why;
    if (!(call.root >= 0 && call.root < size)) return `root ${call.root} is out of range for communicator ${ctx} of ${size}`;
    if (!(call.op >= 0 && call.op < OP_COUNT)) return `op ${call.op} is not a predefined op (0..${OP_COUNT - 1})`;
    if (!(call.dtype >= 0 && call.dtype < DTYPE_COUNT)) return `dtype ${call.dtype} is not a datatype (0..${DTYPE_COUNT - 1})`;
    return this.badRegion(send, 'send') ?? this.badRegion(recv, 'recv');
  }

  /** A frame of an offloaded message from another node's engine. */
  onFrame(from: number, header: Int32Array, payload: Uint8Array): void {
    const total = header[OF_TOTAL]!;
    const rawTag = header[OF_TAG]!;
    let data: Uint8Array;
    if (total === payload.byteLength && header[OF_OFFSET] === 0) {
      data = payload;
    } else {
      const id = `${from}:${header[OF_ID]}`;
      let a = this.assembling.get(id);
      if (a === undefined) {
        a = { data: new Uint8Array(total), got: 0 };
        this.assembling.set(id, a);
      }
      a.data.set(payload, header[OF_OFFSET]!);
      a.got += payload.byteLength;
      if (a.got < total) return;
      this.assembling.delete(id);
      data = a.data;
    }
    const dst = header[OF_DST]!;
    const ctx = header[OF_CTX]!;
    const src = header[OF_SRC]!;
    const tag = rawTag & TAG_BITS;
    const w = this.posted.take(dst, ctx, src, tag);
    if (w !== null) {
      this.interp.settle(w.run, w.action, this.fill(w, data, rawTag < 0));
    } else {
      this.arrived.push(dst, ctx, { src, tag, data: data === payload ? payload.slice() : data, invalid: rawTag < 0 });
    }
  }

  /**
   * Copies a message into a posted receive; a size that differs, or data that is not valid
   * (`invalid`: its sender's run had failed), fails the receive (the run goes on).
   */
  private fill(w: Waiting, data: Uint8Array, invalid: boolean): Error | null {
    if (invalid) {
      return new NbcPeerFailedError(`An offloaded collective received data that is not valid: the collective had already failed on its sender, which sent it only so that nobody waits; ${REPORTED_ELSEWHERE}`);
    }
    if (data.byteLength !== w.view.byteLength) {
      return new NbcTruncateError(`An offloaded collective received ${data.byteLength} bytes where its schedule expects ${w.view.byteLength}: its ranks disagree on message sizes`);
    }
    copyBytes(data, w.view, 0, data.byteLength);
    return null;
  }

  private region(r: OffloadRun, buf: number, off: number, bytes: number): Uint8Array {
    const b = buf === SEND ? r.bufs[0] : buf === RECV ? r.bufs[1] : r.bufs[2];
    return b.subarray(off, off + bytes);
  }

  // ---- the port --------------------------------------------------------------------------

  /**
   * A send to a rank of this node meets its receive inside the engine (one copy between the
   * two ranks' regions); a send to another node becomes frames to that node's engine.
   */
  send(r: OffloadRun, i: number): boolean {
    const s = r.sched;
    const a = this.region(r, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!);
    const dstWorld = r.worldRanks[s.peer[i]!]!;
    const tag = r.tag + s.sub[i]!;
    // After a failure the run still sends (nobody hangs), flagged so the data is not taken as valid.
    const invalid = r.failure !== null;
    if (this.host.nodeOfRank[dstWorld] !== this.host.nodeId) {
      this.sendRemote(r, i, dstWorld, invalid ? tag | TAG_INVALID : tag, a);
      return false;
    }
    const w = this.posted.take(dstWorld, r.ctx, r.rank, tag);
    if (w === null) {
      if (this.finishedRanks.has(dstWorld)) throw peerGone(dstWorld, false);
      this.localSends.push(dstWorld, r.ctx, { src: r.rank, tag, run: r, action: i, view: a, invalid });
      return false;
    }
    this.interp.settle(w.run, w.action, this.fill(w, a, invalid));
    return true;
  }

  /**
   * World rank `world` has returned from its job, and every frame its node sent this engine
   * before has been handled (runtime/engine.ts): what waits for it fails, as on the host
   * (p2p/transport.ts peerFinished): receives from it, and sends on this node to it.
   */
  peerFinished(world: number): void {
    if (this.finishedRanks.has(world)) return;
    this.finishedRanks.add(world);
    const waitsFor = (w: Waiting): boolean => w.run.worldRanks[w.run.sched.peer[w.action]!] === world;
    for (const m of [this.posted, this.localSends]) {
      for (const w of m.removeWhere(waitsFor)) this.interp.settle(w.run, w.action, peerGone(world, m === this.posted));
    }
  }

  recv(r: OffloadRun, i: number): boolean {
    const s = r.sched;
    const myWorld = r.worldRanks[r.rank]!;
    const src = s.peer[i]!;
    const tag = r.tag + s.sub[i]!;
    const waiting: Waiting = { src, tag, run: r, action: i, view: this.region(r, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!), invalid: false };
    const sender = this.localSends.take(myWorld, r.ctx, src, tag);
    if (sender !== null) {
      const err = this.fill(waiting, sender.view, sender.invalid);
      this.interp.settle(sender.run, sender.action, null);
      if (err !== null) throw err;
      return true;
    }
    const got = this.arrived.take(myWorld, r.ctx, src, tag);
    if (got !== null) {
      const err = this.fill(waiting, got.data, got.invalid);
      if (err !== null) throw err;
      return true;
    }
    const srcWorld = r.worldRanks[s.peer[i]!]!;
    if (this.finishedRanks.has(srcWorld)) throw peerGone(srcWorld, true);
    this.posted.push(myWorld, r.ctx, waiting);
    return false;
  }

  reduce(r: OffloadRun, i: number): void {
    const s = r.sched;
    reduceRegions(s.peer[i]!, s.dtype[i]! as DType, this.region(r, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!),
      this.region(r, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!));
  }

  copy(r: OffloadRun, i: number): void {
    const s = r.sched;
    const from = this.region(r, s.bufA[i]!, s.offA[i]!, s.bytesA[i]!);
    const to = this.region(r, s.bufB[i]!, s.offB[i]!, s.bytesA[i]!);
    copyRegion(from, to); // as the host port copies: memmove where built, nothing in place
  }

  finished(r: OffloadRun, error: Error | null): void {
    if (r.onDone !== undefined) r.onDone(error === null);
    else {
      const v = error === null ? DONE_OK : error instanceof PeerGoneError ? DONE_PEER_GONE + error.world
        : error instanceof NbcPeerFailedError ? DONE_INVALID : DONE_ERROR;
      this.host.complete(r.ep, r.slotSlice, r.slotOffset, v);
    }
  }

  /** A message to another node: one frame per fragment (net/fragment.ts); the send settles once all left. */
  private sendRemote(r: OffloadRun, i: number, dstWorld: number, tag: number, data: Uint8Array): void {
    const node = this.host.nodeOfRank[dstWorld]!;
    const id = this.nextFrameId++;
    const total = data.byteLength;
    let left = fragmentCount(total);
    const written = (): void => {
      if (--left === 0) this.interp.settle(r, i, null);
    };
    // The region stays untouched until the send action finishes, which is after the last write.
    forEachFragment(total, (off, n) => {
      this.host.sendFrame(node, offloadHeader(dstWorld, r.ctx, tag, r.rank, total, off, id), data.subarray(off, off + n), written);
    });
  }
}

/** An offloaded receive from (or local send to) a rank that returned from its job. */
class PeerGoneError extends NbcPeerFailedError {
  constructor(readonly world: number, message: string) {
    super(message);
  }
}

function peerGone(world: number, receive: boolean): PeerGoneError {
  return new PeerGoneError(world, offloadPeerGoneMessage(world, receive ? 'sending' : 'receiving'));
}

/** What the rank's offloaded request fails with (offload-client.ts, DONE_PEER_GONE). */
export function offloadPeerGoneMessage(world: number, without = 'taking part'): string {
  return `An offloaded collective cannot complete: rank ${world}, which it waits for, returned from its job without ${without}; expected every rank to make the same calls`;
}
