/**
 * The rank side of point-to-point messaging: one instance per rank worker.
 *
 * Paths:
 * - to a rank of the same node: straight into the (me -> peer) ring; no engine hop.
 * - to a rank of another node: into the (me -> engine) ring; the engine forwards over TCP.
 *   With the UCX transport (ucx.ts), straight from this rank's UCP worker to the peer's.
 *
 * Protocols:
 * - eager (payload <= eagerLimit): the payload travels inline in the ring record; the send
 *   completes as soon as the record is published.
 * - rendezvous (larger): the payload sits in an arena slice (the sender's own registered
 *   buffer, zero-copy, or a staging copy for plain typed arrays); an RTS record names it; the
 *   receiver copies it straight into the receive buffer and answers ACK; the send completes
 *   on ACK. So message size is bounded by the arena, never by the ring.
 *
 * Eager credit (back-pressure): an eager message is buffered by its receiver until a receive
 * takes it, so a receiver that does not receive would otherwise let its senders fill its memory
 * without limit. Each rank holds EAGER_CREDIT_BYTES of credit toward each other rank; an eager
 * send spends its payload plus EAGER_MESSAGE_COST, and the receiver gives the credit back
 * (KIND_EAGER_CREDIT, in batches of a quarter) as its receives take the messages. A small send
 * without credit goes by rendezvous instead: its RTS still travels, so it can be matched in
 * any order (a legal MPI program never deadlocks on credit), but its payload waits at the
 * sender until a receive matches it, and the send completes only then (MPI's standard mode
 * allows exactly that). What a non-receiving rank holds is thus bounded: the credit per
 * sender, plus one RTS per send its senders have outstanding.
 *
 * Matching: per communicator context, posted receives and unexpected messages in arrival
 * order; a message matches the first posted receive whose source and tag fit (wildcards
 * included). Each (source -> destination) pair has one FIFO path, so messages from one source
 * on one communicator are never overtaken.
 *
 * A rank that returns from its job says so (KIND_FIN, `announceFinished`) on every path it
 * sent on, behind its last message: from then on, a receive only it could match, or a send
 * only it could take, fails with NBC_ERR_PEER_FAILED instead of waiting for ever.
 */
import {
  NbcCountError, NbcInternalError, NbcNoMemError, NbcPeerFailedError, NbcTruncateError,
} from '../errors.js';
import {
  align8, endpointWord, H_BYTES, H_CTX, H_DST, H_KIND, H_LEN, H_OFFSET, H_SLICE, H_SRC,
  H_AUX, H_SRC_WORLD, H_TAG, H_TOKEN, HEADER_BYTES, HEADER_WORDS, kAbortWord, kDoorbell, kFinished, kSleeping, kWaiting, kWakeFd,
  KIND_ACK, KIND_DATA, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN, KIND_PULL, KIND_RTS, KIND_UCX_PULL,
} from '../shm/layout.js';
import { SliceAllocator } from '../shm/arena.js';
import type { HostBoard } from '../shm/host-board.js';
import { ringOffset, wake, type NodeShared } from '../shm/node-shared.js';
import { Ring } from '../shm/ring.js';
import { copyAt, copyBytes } from '../shm/copy.js';
import { ANY_SOURCE, ANY_TAG, REPORTED_ELSEWHERE, TAG_BITS } from './constants.js';
import { Request, type Progressor, type Status } from './request.js';
import { UCX_HEADERS_IN_FLIGHT, UCX_HELD, type UcxPath } from './ucx.js';
import { UnexpectedQueue } from './unexpected.js';

/** `route` of a rank on another node when the UCX path carries inter-node traffic. */
export const UCX_ROUTE = -1;

/**
 * Eager credit each rank holds toward each other rank, bytes (NBC_EAGER_CREDIT_KB): what one
 * sender can make a receiver buffer at most, in messages no receive has taken yet. 4 MiB is
 * 500 messages at the 8 KiB eager limit, about 16,000 of 8 bytes: programs that send a few
 * thousand small messages before their peer receives any (unsafe in MPI's terms, but they run
 * on every MPI) still run, while a receiver that never receives holds at most this per sender.
 */
export const EAGER_CREDIT_BYTES = 4 * 1024 * 1024;
/**
 * What an eager message costs its sender's credit besides its payload: the receiver's record
 * of it while it waits unexpected (an object and a copy, ~200 bytes of heap).
 */
export const EAGER_MESSAGE_COST = 256;
/** An unexpected UCX rendezvous header: the payload waits at the sender until asked for. */
const KIND_UCX_RTS = -KIND_RTS;

export interface Placement {
  worldRank: number;
  worldSize: number;
  nodeId: number;
  /** node id of every world rank */
  nodeOfRank: Int32Array;
  /** endpoint index inside its node of every world rank */
  localOfRank: Int32Array;
}

export interface TransportOptions {
  /** Largest payload sent inline; larger messages use rendezvous. */
  eagerLimit?: number;
  /** Spin this long (us) before parking in a blocking wait. */
  spinUs?: number;
  /**
   * sched_yield (the native addon's), given where this host runs more ranks than cores: after
   * spinning, a waiting rank hands its core over between polls for `yieldUs` before it parks,
   * so the rank it waits for runs at once instead of after a futex round trip (Open MPI's
   * mpi_yield_when_idle). Null: no yield phase.
   */
  yieldFn?: (() => void) | null;
  /** How long the yield phase lasts (us). */
  yieldUs?: number;
  /** The UCX path for ranks of other nodes (the UCX transport), or null: through the engine. */
  ucx?: UcxPath | null;
  /**
   * The job's host board, this rank's word (shm/host-board.ts), where the job's nodes share
   * this host: the rank marks its blocking waits there, so that the nodes' engines and wires
   * yield their cores only while no rank computes. The rank's own yield does not look at it:
   * parking beside a computing rank instead cost more (BENCHMARKS.md, "Yields beside a
   * computing rank").
   */
  board?: HostBoard | null;
  /** Eager credit toward each other rank, bytes (default EAGER_CREDIT_BYTES; 0: every send by rendezvous). */
  eagerCredit?: number;
}

export class SendRequest extends Request {
  view!: Uint8Array;
  ep = 0;
  dstWorld = 0;
  ctx = 0;
  src = 0;
  tag = 0;
  token = 0;
  /** Offset in the own slice when the payload was staged (to free on ACK), else -1. */
  staged = -1;
  slice = -1;
  offset = 0;

  /**
   * Whether the receiver copies the payload straight out of the sender's own registered
   * buffer (a rendezvous send from comm.alloc memory, not staged): the receiver's core then
   * holds those cache lines, and the sender's next write to them pays for taking them back.
   */
  get fromOwnBuffer(): boolean {
    return this.slice >= 0 && this.staged < 0;
  }
}

export class RecvRequest extends Request {
  view!: Uint8Array;
  elementBytes = 1;
  ctx = 0;
  src = 0;
  tag = 0;
}

interface Unexpected {
  kind: number;
  src: number;
  tag: number;
  bytes: number;
  /** EAGER: a private copy of the payload. */
  data: Uint8Array | null;
  /** RTS: where the payload waits and whom to ACK (UCX: whom to ask, by world rank). */
  slice: number;
  offset: number;
  token: number;
  /** RTS: the endpoint (or, over UCX, the world rank) to answer; EAGER: the sender's world rank, owed the credit. */
  from: number;
  /** Sent by a collective that had already failed on its sender (constants.ts TAG_INVALID). */
  invalid: boolean;
  /** UCX RTS: the payload is sent only once asked for (KIND_UCX_PULL), not with the RTS. */
  held?: boolean;
}

/** Queued for a full ring: a send, an ACK, or a control record for the engine (whole record words). */
type Outgoing = SendRequest | { ack: number; slice: number } | { record: Int32Array };

export interface TransportStats {
  messagesSent: number;
  bytesSent: number;
  intraNodeMessages: number;
  interNodeMessages: number;
  messagesReceived: number;
  bytesReceived: number;
  /**
   * The connections this rank has used: how many distinct ranks of its node, and of other
   * nodes, it has sent to (a UCX endpoint each between nodes with UCX; over TCP every message
   * between nodes goes through the node engine's one link per node pair).
   */
  intraNodePeers: number;
  interNodePeers: number;
  /**
   * UCX only: the most eager sends UCX held unfinished at once (0 without UCX). Bounded by
   * UCX_HEADERS_IN_FLIGHT + 1: past it a blocking send waits for the peer (back-pressure).
   */
  ucxPeakInFlight: number;
  /**
   * Sends of at most the eager limit that went by rendezvous because their receiver held back
   * this rank's eager credit (it had not received enough of the earlier ones).
   */
  creditRendezvous: number;
}

/**
 * What a rank did while traced (`Transport.trace`), for tests that prove which messages a
 * collective sends. Messages are four numbers each, in order: sends as they are posted
 * (destination's world rank, context, tag, bytes), receives as they match (source's rank in
 * its communicator, context, tag, bytes); `schedules` counts the schedules the host executor
 * started.
 */
export interface MessageTrace {
  sends: number[];
  recvs: number[];
  schedules: number;
}

export class Transport implements Progressor {
  readonly ep: number;
  readonly engineEp: number;
  readonly endpoints: number;
  readonly control: Int32Array;
  readonly slices: Uint8Array[];
  readonly allocator: SliceAllocator;
  readonly eagerLimit: number;
  /** The UCX path to ranks of other nodes, or null (they are reached through the engine). */
  readonly ucx: UcxPath | null;
  private ucxReaped = 0;
  readonly stats: TransportStats = {
    messagesSent: 0, bytesSent: 0, intraNodeMessages: 0, interNodeMessages: 0,
    messagesReceived: 0, bytesReceived: 0, ucxPeakInFlight: 0, creditRendezvous: 0, intraNodePeers: 0, interNodePeers: 0,
  };
  /** Per world rank: 1 once this rank has sent to it (TransportStats' peers). */
  private readonly peerUsed: Uint8Array;
  private readonly outRings: Ring[] = [];
  private readonly inRings: Ring[] = [];
  private readonly outQueues: Outgoing[][] = [];
  private queuedEndpoints = 0;
  private readonly posted = new Map<number, RecvRequest[]>();
  /** World rank of each member, by context (registerContext): whom a receive's source names. */
  private readonly members = new Map<number, Int32Array>();
  /** Per world rank: 1 once its KIND_FIN arrived (it has returned from its job). */
  private readonly finished: Uint8Array;
  private finishedCount = 0;
  /** This rank has returned from its job (announceFinished): UCX payloads offered to it are taken and dropped. */
  private finishing = false;
  private readonly unexpected = new Map<number, UnexpectedQueue<Unexpected>>();
  private readonly awaitingAck = new Map<number, SendRequest>();
  /** Sends of the current lean collective not finished at once (sendLean). */
  private leanSends: SendRequest[] = [];
  /** UCX sends held until their receiver asks for the payload (KIND_UCX_PULL), by token. */
  private readonly ucxHeld = new Map<number, SendRequest>();
  /** Eager credit toward each world rank (bytes), and credit owed to each, not yet returned. */
  private readonly credit: Int32Array;
  private readonly owed: Int32Array;
  private readonly creditMax: number;
  private readonly creditBatch: number;
  /**
   * Inter-node rendezvous payloads this rank has pulled (shm/layout.ts KIND_PULL), by pull id:
   * where the payload goes (null: dropped, the receive already failed) and what completes.
   */
  private readonly pulls = new Map<number, { into: Uint8Array | null; req: Request }>();
  private nextPull = 1;
  private readonly ownSlice: SharedArrayBuffer;
  private nextToken = 1;
  private inProgress = false;
  private readonly spinMs: number;
  private readonly yieldFn: (() => void) | null;
  private readonly yieldMs: number;
  private readonly sleepIdx: number;
  private readonly doorbellIdx: number;
  private readonly waitingIdx: number;
  private readonly board: HostBoard | null;
  private asyncWaiters: Array<() => void> = [];
  private asyncArmed = false;
  private failure: Error | null = null;
  /** The early message's payload, for `takeEarly`. */
  private early: Uint8Array = EMPTY_BYTES;
  /** The ring whose head record `recvEager` handed out in place, and that record's length. */
  private held: Ring | null = null;
  private heldLen = 0;
  /** The message `recvEager` is waiting for: its ring, and its (ctx, src, tag). */
  private wantRing: Ring | null = null;
  private wantCtx = 0;
  private wantSrc = 0;
  private wantTag = 0;
  /** The node's ring memory: where `recvEager` payloads lie. */
  readonly ringMemory: Uint8Array;
  /** Where to record messages, or null (the default: one null check per message). */
  trace: MessageTrace | null = null;
  /**
   * Progress hooks (the collective executor): run after every drain, so every outstanding
   * collective advances whichever request the rank happens to wait on. Without this, two
   * ranks waiting on two collectives in opposite orders would deadlock.
   */
  private readonly hooks: Array<() => boolean> = [];
  private readonly readyChecks: Array<() => boolean> = [];

  constructor(readonly shared: NodeShared, readonly placement: Placement, opts: TransportOptions = {}) {
    const { ranks, ringBytes } = shared.layout;
    this.ep = placement.localOfRank[placement.worldRank]!;
    this.engineEp = ranks;
    this.endpoints = ranks + 1;
    this.control = new Int32Array(shared.control);
    this.slices = shared.slices.map((s) => new Uint8Array(s));
    this.ringMemory = new Uint8Array(shared.rings);
    this.ownSlice = shared.slices[this.ep]!;
    this.allocator = new SliceAllocator(shared.layout.sliceBytes);
    for (let e = 0; e < this.endpoints; e++) {
      this.outRings.push(new Ring(shared.rings, ringOffset(shared, this.ep, e), ringBytes, this.ep, e));
      this.inRings.push(new Ring(shared.rings, ringOffset(shared, e, this.ep), ringBytes, e, this.ep));
      this.outQueues.push([]);
    }
    const maxEager = (ringBytes >> 2) - HEADER_BYTES;
    this.eagerLimit = Math.min(opts.eagerLimit ?? 8192, maxEager);
    this.spinMs = (opts.spinUs ?? 20) / 1000;
    this.yieldFn = opts.yieldFn ?? null;
    this.yieldMs = this.yieldFn === null ? 0 : (opts.yieldUs ?? 0) / 1000;
    this.sleepIdx = endpointWord(this.ep, kSleeping);
    this.doorbellIdx = endpointWord(this.ep, kDoorbell);
    this.waitingIdx = endpointWord(this.ep, kWaiting);
    this.board = opts.board ?? null;
    this.ucx = opts.ucx ?? null;
    this.creditMax = opts.eagerCredit ?? EAGER_CREDIT_BYTES;
    this.creditBatch = Math.max(1, this.creditMax >> 2);
    this.credit = new Int32Array(placement.nodeOfRank.length).fill(this.creditMax);
    this.peerUsed = new Uint8Array(placement.nodeOfRank.length);
    this.finished = new Uint8Array(placement.nodeOfRank.length);
    this.owed = new Int32Array(placement.nodeOfRank.length);
    // A rank that sleeps in poll(2) on its UCX worker is woken through its eventfd (wake()).
    if (this.ucx !== null) Atomics.store(this.control, endpointWord(this.ep, kWakeFd), this.ucx.wakeFd);
  }

  /**
   * Registers a function run on every progress call; it returns true when it did something.
   * `ready`, where given, tells without side effects whether the hook has work that no ring
   * record announces (an offloaded collective's completion word, which the engine sets before
   * it rings a sleeping rank): a rank about to park checks it after raising its sleeping flag,
   * so a completion that landed between its last poll and the flag is not slept through.
   */
  addProgressHook(hook: () => boolean, ready?: () => boolean): void {
    this.hooks.push(hook);
    if (ready !== undefined) this.readyChecks.push(ready);
  }

  /** True when a progress hook has work waiting (see addProgressHook). */
  private hookReady(): boolean {
    for (let i = 0; i < this.readyChecks.length; i++) if (this.readyChecks[i]!()) return true;
    return false;
  }

  /** Endpoint a message for `dstWorld` leaves through. */
  route(dstWorld: number): number {
    const p = this.placement;
    if (p.nodeOfRank[dstWorld] === p.nodeId) return p.localOfRank[dstWorld]!;
    return this.ucx === null ? this.engineEp : UCX_ROUTE;
  }

  isRegistered(view: ArrayBufferView): boolean {
    return view.buffer === this.ownSlice;
  }

  // ---- sending -----------------------------------------------------------------------

  isend(view: Uint8Array, dstWorld: number, ctx: number, src: number, tag: number): SendRequest {
    const req = new SendRequest(this);
    req.view = view;
    req.dstWorld = dstWorld;
    req.ctx = ctx;
    req.src = src;
    req.tag = tag;
    req.ep = this.route(dstWorld);
    req.status.bytes = view.byteLength;
    if (this.trace !== null) this.trace.sends.push(dstWorld, ctx, tag, view.byteLength);
    if (this.finishedCount > 0 && this.finished[dstWorld] === 1) {
      this.sendToFinished(req);
      return req;
    }
    if (req.ep === UCX_ROUTE) {
      this.ucxSend(req);
      return req;
    }
    if (view.byteLength > this.eagerLimit || !this.spendCredit(dstWorld, view.byteLength)) this.prepareRendezvous(req);
    const q = this.outQueues[req.ep]!;
    if (q.length > 0 || !this.writeSend(req)) {
      if (q.length === 0) this.queuedEndpoints++;
      q.push(req);
    }
    return req;
  }

  /**
   * Blocking send. Small messages with nothing queued ahead go straight into the ring with no
   * request object at all (the common case, and the latency-critical one).
   */
  send(view: Uint8Array, dstWorld: number, ctx: number, src: number, tag: number): void {
    if (this.trySendEager(view, view.byteLength, dstWorld, ctx, src, tag)) return;
    const req = this.isend(view, dstWorld, ctx, src, tag);
    this.waitUntil(req);
    if (req.error) throw req.error;
  }

  /**
   * A send of the lean blocking collectives (coll/lean.ts), whose exchanges send before they
   * receive, so their sends must not wait for the peer's receive: eager when it can be (the
   * common case: nothing allocated); else (no eager credit left, or the ring is full) from a
   * private copy, by rendezvous if need be, and collected by `finishLean` once the caller's
   * own receives are done.
   */
  sendLean(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): void {
    if (this.trySendEager(view, bytes, dstWorld, ctx, src, tag)) return;
    this.leanSends.push(this.isend(view.slice(0, bytes), dstWorld, ctx, src, tag));
  }

  /** Waits for the sends `sendLean` could not finish at once; throws the first one's error. */
  finishLean(): void {
    if (this.leanSends.length === 0) return;
    const reqs = this.leanSends;
    this.leanSends = [];
    for (const r of reqs) this.waitUntil(r);
    for (const r of reqs) if (r.error) throw r.error;
  }

  /** Forgets the lean sends of a call that failed (they still complete, or fail, on their own). */
  dropLean(): void {
    this.leanSends = [];
  }

  /**
   * Sends an eager message straight into its ring, complete on return, when it can: it is
   * at most the eager limit, nothing is queued ahead of it, and the ring has room. False
   * (nothing sent) otherwise.
   */
  trySendEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): boolean {
    if (bytes > this.eagerLimit || this.credit[dstWorld]! < bytes + EAGER_MESSAGE_COST) return false;
    const ep = this.route(dstWorld);
    if (ep === UCX_ROUTE) {
      this.credit[dstWorld]! -= bytes + EAGER_MESSAGE_COST;
      this.ucxEager(view, bytes, dstWorld, ctx, src, tag);
      if (this.trace !== null) this.trace.sends.push(dstWorld, ctx, tag, bytes);
      return true;
    }
    if (this.outQueues[ep]!.length !== 0) return false;
    const ring = this.outRings[ep]!;
    const len = align8(HEADER_BYTES + bytes);
    const at = ring.reserve(len);
    if (at < 0) return false;
    this.credit[dstWorld]! -= bytes + EAGER_MESSAGE_COST;
    this.putHeader(ring.i32, at >> 2, KIND_EAGER, len, ctx, src, tag, bytes, dstWorld, 0, -1, 0);
    copyBytes(view, ring.u8, at + HEADER_BYTES, bytes);
    ring.publish(len);
    wake(this.control, ep);
    this.countSend(dstWorld, bytes, ep === this.engineEp);
    if (this.trace !== null) this.trace.sends.push(dstWorld, ctx, tag, bytes);
    return true;
  }

  /**
   * Sends an eager message over UCX: header and payload in one message, staged, so the caller's
   * buffer is free on return. `req` (isend) completes once UCX has finished the send (at once
   * when it could), so a window of isends is held back by a peer that does not take them, and
   * the isend itself never waits. Without `req` (blocking sends, schedules) the send is
   * complete on return; past UCX_HEADERS_IN_FLIGHT unfinished sends (a peer that does not take
   * them) it waits, progressing (so this rank still receives), until half have left. Not from
   * inside progress() (a schedule's next send): those are bounded by the schedule.
   */
  private ucxEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number, req?: SendRequest): void {
    const ucx = this.ucx!;
    const len = HEADER_BYTES + bytes;
    this.putHeader(ucx.stage32, 0, KIND_EAGER, len, ctx, src, tag, bytes, dstWorld, 0, -1, 0);
    copyBytes(view, ucx.stage, HEADER_BYTES, bytes);
    this.countSend(dstWorld, bytes, true);
    if (req !== undefined) {
      const done = (err: Error | null): void => {
        this.ucxReaped++;
        req.complete(err ?? undefined);
      };
      if (ucx.sendHeader(dstWorld, len, done)) req.complete();
      return;
    }
    ucx.sendHeader(dstWorld, len);
    if (ucx.headersInFlight > UCX_HEADERS_IN_FLIGHT && !this.inProgress) {
      this.spinThenPark(() => ucx.headersInFlight <= UCX_HEADERS_IN_FLIGHT >> 1);
    }
  }

  /** Counts a message sent to `dstWorld` (TransportStats), and the peer the first time. */
  private countSend(dstWorld: number, bytes: number, interNode: boolean): void {
    const s = this.stats;
    s.messagesSent++;
    s.bytesSent += bytes;
    if (interNode) s.interNodeMessages++;
    else s.intraNodeMessages++;
    if (this.peerUsed[dstWorld] === 0) {
      this.peerUsed[dstWorld] = 1;
      if (interNode) s.interNodePeers++;
      else s.intraNodePeers++;
    }
  }

  /**
   * A send over UCX: eager (complete at once), or a rendezvous header and the payload sent
   * from the caller's buffer in place, complete once UCX has moved it.
   */
  private ucxSend(req: SendRequest): void {
    const bytes = req.view.byteLength;
    const small = bytes <= this.eagerLimit;
    if (small && this.spendCredit(req.dstWorld, bytes)) {
      this.ucxEager(req.view, bytes, req.dstWorld, req.ctx, req.src, req.tag, req);
      return;
    }
    const ucx = this.ucx!;
    const token = this.nextToken++;
    this.putHeader(ucx.stage32, 0, KIND_RTS, HEADER_BYTES, req.ctx, req.src, req.tag, bytes, req.dstWorld, token, -1, 0);
    // A large payload goes at once: UCX's own rendezvous (from 8 KiB over tcp) keeps it here
    // until the receive is posted. A small one UCX would send eagerly, into the receiver's
    // memory, which is what the missing credit forbids: it waits for KIND_UCX_PULL.
    ucx.stage32[H_AUX] = small ? UCX_HELD : 0;
    ucx.sendHeader(req.dstWorld, HEADER_BYTES);
    this.countSend(req.dstWorld, bytes, true);
    if (small) {
      this.ucxHeld.set(token, req);
      return;
    }
    this.ucxSendData(req, token);
  }

  private ucxSendData(req: SendRequest, token: number): void {
    this.ucx!.sendData(req.dstWorld, token, req.view, (err) => {
      this.ucxReaped++;
      req.complete(err ?? undefined);
    });
  }

  /**
   * Spends the credit an eager message of `bytes` to `dst` costs; false (nothing spent, the
   * message goes by rendezvous) when the receiver has not given enough back yet.
   */
  private spendCredit(dst: number, bytes: number): boolean {
    const cost = bytes + EAGER_MESSAGE_COST;
    const c = this.credit[dst]!;
    if (c < cost) {
      this.stats.creditRendezvous++;
      return false;
    }
    this.credit[dst] = c - cost;
    return true;
  }

  /**
   * A receive took an eager message of `bytes` from world rank `from`: its credit is owed back,
   * and returned once a batch has gathered (one record per quarter of the credit). Never
   * progresses, so it may run while a record is held in place.
   */
  private owe(from: number, bytes: number): void {
    const n = this.owed[from]! + bytes + EAGER_MESSAGE_COST;
    if (n < this.creditBatch) {
      this.owed[from] = n;
      return;
    }
    this.owed[from] = 0;
    const ep = this.route(from);
    if (ep === UCX_ROUTE) {
      const ucx = this.ucx!;
      this.putHeader(ucx.stage32, 0, KIND_EAGER_CREDIT, HEADER_BYTES, -1, -1, -1, 0, from, n, -1, 0);
      ucx.sendHeader(from, HEADER_BYTES);
      return;
    }
    const record = new Int32Array(HEADER_WORDS);
    record[H_KIND] = KIND_EAGER_CREDIT;
    record[H_LEN] = HEADER_BYTES;
    record[H_CTX] = -1;
    record[H_SRC] = -1;
    record[H_TAG] = -1;
    record[H_DST] = from;
    record[H_TOKEN] = n;
    record[H_SLICE] = -1;
    record[H_SRC_WORLD] = this.placement.worldRank;
    this.queueRecord(ep, record);
  }

  /** Credit given back by world rank `from` (a KIND_EAGER_CREDIT record or header). */
  private credited(from: number, n: number): void {
    if (!(from >= 0 && from < this.credit.length) || !(n > 0)) {
      throw new NbcInternalError(`malformed eager credit (${n} bytes from rank ${from})`);
    }
    this.credit[from] = Math.min(this.creditMax, this.credit[from]! + n);
  }

  private prepareRendezvous(req: SendRequest): void {
    const view = req.view;
    req.token = this.nextToken++;
    if (this.isRegistered(view)) {
      req.slice = this.ep;
      req.offset = view.byteOffset;
      return;
    }
    const off = this.allocator.alloc(view.byteLength);
    if (off < 0) {
      throw new NbcNoMemError(
        `Cannot send ${view.byteLength} bytes to rank ${req.dstWorld}: the arena slice has ` +
        `${this.allocator.available} bytes free for staging; expected a smaller message, fewer ` +
        `large sends in flight, a larger NBC_ARENA_MB, or a buffer from comm.alloc (sent without staging)`);
    }
    copyBytes(view, this.slices[this.ep]!, off, view.byteLength);
    req.slice = this.ep;
    req.offset = off;
    req.staged = off;
  }

  /** Writes a send's record into its ring. False when the ring is full. */
  private writeSend(req: SendRequest): boolean {
    const ring = this.outRings[req.ep]!;
    const rendezvous = req.slice >= 0;
    const bytes = req.view.byteLength;
    const len = align8(HEADER_BYTES + (rendezvous ? 0 : bytes));
    const at = ring.reserve(len);
    if (at < 0) return false;
    this.putHeader(ring.i32, at >> 2, rendezvous ? KIND_RTS : KIND_EAGER, len, req.ctx, req.src, req.tag, bytes,
      req.dstWorld, req.token, req.slice, req.offset);
    if (!rendezvous) copyBytes(req.view, ring.u8, at + HEADER_BYTES, bytes);
    ring.publish(len);
    wake(this.control, req.ep);
    this.countSend(req.dstWorld, bytes, req.ep === this.engineEp);
    if (rendezvous) this.awaitingAck.set(req.token, req);
    else req.complete();
    return true;
  }

  /** Writes a record header at Int32 index `w` (every field, so no stale word survives). */
  private putHeader(i32: Int32Array, w: number, kind: number, len: number, ctx: number, src: number, tag: number,
    bytes: number, dst: number, token: number, slice: number, offset: number): void {
    i32[w + H_KIND] = kind;
    i32[w + H_LEN] = len;
    i32[w + H_CTX] = ctx;
    i32[w + H_SRC] = src;
    i32[w + H_TAG] = tag;
    i32[w + H_BYTES] = bytes;
    i32[w + H_DST] = dst;
    i32[w + H_TOKEN] = token;
    i32[w + H_SLICE] = slice;
    i32[w + H_OFFSET] = offset;
    i32[w + H_SRC_WORLD] = this.placement.worldRank;
  }

  private writeAck(ep: number, token: number, slice: number): boolean {
    const ring = this.outRings[ep]!;
    const len = HEADER_BYTES;
    const at = ring.reserve(len);
    if (at < 0) return false;
    const w = at >> 2;
    ring.i32[w + H_KIND] = KIND_ACK;
    ring.i32[w + H_LEN] = len;
    ring.i32[w + H_TOKEN] = token;
    ring.i32[w + H_SLICE] = slice;
    ring.publish(len);
    wake(this.control, ep);
    return true;
  }

  /**
   * Sends a control record to this node's engine (offload executor: schedules, communicators,
   * posts): header fields, then `payload` words. Ordered with everything else this rank sends
   * to the engine; queued when the ring is full.
   */
  toEngine(kind: number, ctx: number, src: number, tag: number, dst: number, token: number, slice: number,
    offset: number, payload: Int32Array): void {
    const len = align8(HEADER_BYTES + payload.byteLength);
    const record = new Int32Array(len >> 2);
    record[H_KIND] = kind;
    record[H_LEN] = len;
    record[H_CTX] = ctx;
    record[H_SRC] = src;
    record[H_TAG] = tag;
    record[H_BYTES] = payload.byteLength;
    record[H_DST] = dst;
    record[H_TOKEN] = token;
    record[H_SLICE] = slice;
    record[H_OFFSET] = offset;
    record[H_SRC_WORLD] = this.placement.worldRank;
    record.set(payload, HEADER_BYTES >> 2);
    this.queueToEngine(record);
  }

  /** Writes a whole record into the ring to the engine, or queues it behind what waits there. */
  private queueToEngine(record: Int32Array): void {
    this.queueRecord(this.engineEp, record);
  }

  /** Writes a whole record into the ring to endpoint `ep`, or queues it behind what waits there. */
  private queueRecord(ep: number, record: Int32Array): void {
    const q = this.outQueues[ep]!;
    if (q.length > 0 || !this.writeRecord(ep, record)) {
      if (q.length === 0) this.queuedEndpoints++;
      q.push({ record });
    }
  }

  private writeRecord(ep: number, record: Int32Array): boolean {
    const ring = this.outRings[ep]!;
    if (record.byteLength > ring.maxRecord) {
      throw new NbcInternalError(`a ${record.byteLength}-byte control record does not fit the ring (at most ${ring.maxRecord}); raise NBC_RING_KB`);
    }
    const at = ring.reserve(record.byteLength);
    if (at < 0) return false;
    ring.i32.set(record, at >> 2);
    ring.publish(record.byteLength);
    wake(this.control, ep);
    return true;
  }

  private sendAck(ep: number, token: number, slice: number): void {
    const q = this.outQueues[ep]!;
    if (q.length > 0 || !this.writeAck(ep, token, slice)) {
      if (q.length === 0) this.queuedEndpoints++;
      q.push({ ack: token, slice });
    }
  }

  private flushQueues(): boolean {
    let moved = false;
    for (let e = 0; e < this.endpoints; e++) {
      const q = this.outQueues[e]!;
      if (q.length === 0) continue;
      let n = 0;
      while (n < q.length) {
        const item = q[n]!;
        const ok = item instanceof SendRequest ? this.writeSend(item)
          : 'record' in item ? this.writeRecord(e, item.record) : this.writeAck(e, item.ack, item.slice);
        if (!ok) break;
        n++;
      }
      if (n > 0) {
        moved = true;
        q.splice(0, n);
        if (q.length === 0) this.queuedEndpoints--;
      }
    }
    return moved;
  }

  // ---- receiving ---------------------------------------------------------------------

  /**
   * Blocking receive of one eager message with no request and no copy: the lean blocking
   * collectives read the payload where it lies in the ring. Returns the payload's byte offset
   * in `ringMemory`, valid until `releaseEager()`, which the caller must call before any other
   * call on this transport. Returns -1 when the message had been taken off its ring before
   * this call (while something else was progressed): `takeEarly()` then hands out a private
   * copy of its payload, and there is nothing to release.
   *
   * Matching is MPI's: the earliest message with this (ctx, src, tag); the caller guarantees
   * no posted receive could match it too (a tag private to one collective instance). A
   * message that is not exactly `bytes` long is consumed and raises NBC_ERR_TRUNCATE (longer)
   * or NBC_ERR_COUNT (shorter).
   */
  recvEager(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number {
    if (this.takeUnexpected(ctx, src, tag, bytes)) return -1;
    const route = this.route(fromWorld);
    if (route === UCX_ROUTE) return this.recvEagerUcx(fromWorld, ctx, src, tag, bytes);
    const ring = this.inRings[route]!;
    const i32 = ring.i32;
    // Read the clock only once the message is late (it costs as much as a poll), unless waits
    // take an idle step from the first empty poll (see idleFromFirstPoll).
    let n = this.idleFromFirstPoll();
    let start = n < 0 ? performance.now() : 0;
    // While we wait, progress leaves the message where it is (see progress), so it can only be
    // found at the head of its ring: never copied out to the unexpected list halfway.
    this.wantRing = ring;
    this.wantCtx = ctx;
    this.wantSrc = src;
    this.wantTag = tag;
    try {
      for (;;) {
        const at = ring.peek();
        if (at >= 0 && this.wanted(i32, at >> 2)) {
          const w = at >> 2;
          if (i32[w + H_KIND] !== KIND_EAGER) {
            // A rendezvous message where an eager one was expected: the ranks disagree on
            // the size. Take it the general way (its sender gets its ACK), then fail.
            this.handle(ring, at);
            if (ring.release(i32[w + H_LEN]!)) wake(this.control, ring.from);
            if (this.takeUnexpected(ctx, src, tag, bytes)) return -1;
            continue;
          }
          const got = i32[w + H_BYTES]!;
          this.owe(i32[w + H_SRC_WORLD]!, got);
          this.held = ring;
          this.heldLen = i32[w + H_LEN]!;
          this.stats.messagesReceived++;
          this.stats.bytesReceived += got;
          if (this.trace !== null) this.trace.recvs.push(src, ctx, tag, got);
          if (got !== bytes) {
            this.releaseEager();
            throw lengthMismatch(got, bytes, src, tag);
          }
          return at + HEADER_BYTES;
        }
        this.progress();
        // Its sender's KIND_FIN follows its last message in this ring: once it has been
        // read, the message is not coming (progress leaves a wanted record at the head).
        if (this.finishedCount > 0 && this.finished[fromWorld] === 1) throw this.senderFinished(fromWorld, ctx, src, tag);
        if (n < 0) {
          if (this.idle(start, this.spinMs, NOT_DONE)) n = -1;
        } else if ((++n & 15) === 0) {
          if (start === 0) start = performance.now();
          else if (this.idle(start, this.spinMs, NOT_DONE)) n = -1;
        }
      }
    } finally {
      this.wantRing = null;
      this.board?.leave();
    }
  }

  /** `recvEager` from a rank reached over UCX: its message arrives in the unexpected list. */
  private recvEagerUcx(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number {
    let n = this.idleFromFirstPoll();
    let start = n < 0 ? performance.now() : 0;
    try {
      for (;;) {
        this.progress();
        if (this.takeUnexpected(ctx, src, tag, bytes)) return -1;
        if (this.finishedCount > 0 && this.finished[fromWorld] === 1) throw this.senderFinished(fromWorld, ctx, src, tag);
        if (n < 0) {
          if (this.idle(start, this.spinMs, NOT_DONE)) n = -1;
        } else if ((++n & 15) === 0) {
          if (start === 0) start = performance.now();
          else if (this.idle(start, this.spinMs, NOT_DONE)) n = -1;
        }
      }
    } finally {
      this.board?.leave();
    }
  }

  /** Whether the record at Int32 index `w` is the message `recvEager` waits for. */
  private wanted(i32: Int32Array, w: number): boolean {
    if (i32[w + H_TAG] !== this.wantTag || i32[w + H_SRC] !== this.wantSrc || i32[w + H_CTX] !== this.wantCtx) return false;
    // Only a message: an ACK's other words are stale, a DATA record's are its RTS's.
    const kind = i32[w + H_KIND];
    return kind === KIND_EAGER || kind === KIND_RTS;
  }

  /** `recvEager`, then its payload copied into `into` at byte `at`, and the record released. */
  recvEagerInto(fromWorld: number, ctx: number, src: number, tag: number, into: Uint8Array, at: number, bytes: number): void {
    const off = this.recvEager(fromWorld, ctx, src, tag, bytes);
    if (off < 0) {
      copyAt(this.takeEarly(), 0, into, at, bytes);
      return;
    }
    copyAt(this.ringMemory, off, into, at, bytes);
    this.releaseEager();
  }

  /** Frees the record `recvEager` left in place. */
  releaseEager(): void {
    const ring = this.held;
    if (ring === null) return;
    this.held = null;
    if (ring.release(this.heldLen)) wake(this.control, ring.from);
  }

  /** The payload of the message `recvEager` found early (it returned -1); a private copy. */
  takeEarly(): Uint8Array {
    const d = this.early;
    this.early = EMPTY_BYTES;
    return d;
  }

  /** Takes the earliest unexpected message (ctx, src, tag) as the early one; false when none. */
  private takeUnexpected(ctx: number, src: number, tag: number, bytes: number): boolean {
    const m = this.unexpected.get(ctx)?.take(src, tag);
    if (m === undefined || m === null) return false;
    this.stats.messagesReceived++;
    this.stats.bytesReceived += m.bytes;
    if (this.trace !== null) this.trace.recvs.push(src, ctx, tag, m.bytes);
    if (m.kind === KIND_EAGER) {
      this.owe(m.from, m.bytes);
      this.early = m.data!;
    } else if (m.kind === KIND_UCX_RTS) {
      this.early = this.ucxFetch(m);
    } else if (m.slice < 0) {
      this.early = this.pullNow(m);
    } else {
      this.early = this.slices[m.slice]!.slice(m.offset, m.offset + m.bytes);
      this.sendAck(m.from, m.token, m.slice);
    }
    if (m.invalid) {
      this.early = EMPTY_BYTES;
      throw invalidData(this.placement.worldRank, src, tag);
    }
    if (m.bytes !== bytes) {
      this.early = EMPTY_BYTES;
      throw lengthMismatch(m.bytes, bytes, src, tag);
    }
    return true;
  }

  irecv(view: Uint8Array, elementBytes: number, src: number, ctx: number, tag: number, reuse?: RecvRequest): RecvRequest {
    let req: RecvRequest;
    if (reuse !== undefined && reuse.done) {
      // A caller-owned request that is complete may be posted again (lean blocking paths).
      req = reuse;
      req.done = false;
      req.error = null;
    } else {
      req = new RecvRequest(this);
    }
    req.view = view;
    req.elementBytes = elementBytes;
    req.src = src;
    req.ctx = ctx;
    req.tag = tag;
    const m = this.unexpected.get(ctx)?.take(src, tag);
    if (m !== undefined && m !== null) {
      this.deliverUnexpected(req, m);
      return req;
    }
    if (this.finishedCount > 0) {
      const gone = this.senderGone(ctx, src);
      if (gone >= 0) {
        req.complete(this.senderFinished(gone, ctx, src, tag));
        return req;
      }
    }
    let q = this.posted.get(ctx);
    if (q === undefined) {
      q = [];
      this.posted.set(ctx, q);
    }
    q.push(req);
    return req;
  }

  /**
   * Forgets context `ctx`'s matching lists (a freed communicator's) where nothing waits in
   * them: without it every communicator ever created left two entries behind (~0.5 KB a
   * communicator per rank in the soak). Lists with posted receives or unexpected messages stay.
   */
  releaseContext(ctx: number): void {
    if (this.posted.get(ctx)?.length === 0) this.posted.delete(ctx);
    if (this.unexpected.get(ctx)?.size === 0) this.unexpected.delete(ctx);
    if (!this.posted.has(ctx)) this.members.delete(ctx);
  }

  /**
   * Names the members (world ranks, by communicator rank) of context `ctx`, so that a receive
   * whose only possible senders have returned from their jobs fails instead of hanging.
   */
  registerContext(ctx: number, worldRanks: Int32Array): void {
    this.members.set(ctx, worldRanks);
  }

  /** Non-blocking probe: the status of the first matching message not yet received, or null. */
  iprobe(ctx: number, src: number, tag: number): Status | null {
    this.progress();
    const m = this.unexpected.get(ctx)?.peek(src, tag);
    return m === undefined || m === null ? null : { source: m.src, tag: m.tag, count: m.bytes, bytes: m.bytes };
  }

  /** Blocking probe. */
  probe(ctx: number, src: number, tag: number): Status {
    let found: Status | null = null;
    const probeReq = new Request(this);
    const check = (): boolean => (found = this.iprobe(ctx, src, tag)) !== null;
    while (!check()) {
      if (this.finishedCount > 0) {
        const gone = this.senderGone(ctx, src);
        if (gone >= 0) throw this.senderFinished(gone, ctx, src, tag);
      }
      this.parkOnce(probeReq);
    }
    return found!;
  }

  private takePosted(ctx: number, src: number, tag: number): RecvRequest | null {
    const q = this.posted.get(ctx);
    if (q === undefined) return null;
    for (let i = 0; i < q.length; i++) {
      const r = q[i]!;
      if ((r.src === ANY_SOURCE || r.src === src) && (r.tag === ANY_TAG || r.tag === tag)) {
        if (i === 0) q.shift();
        else q.splice(i, 1);
        return r;
      }
    }
    return null;
  }

  /**
   * Fills a matched receive's status. False when the payload must not land in its buffer (the
   * message is too long, or not valid: its sender's collective had failed); the request has
   * then failed, and the caller still consumes the message so the sender completes.
   */
  private finishRecv(req: RecvRequest, src: number, tag: number, bytes: number, invalid: boolean): boolean {
    req.status.source = src;
    req.status.tag = tag;
    req.status.bytes = bytes;
    req.status.count = Math.floor(bytes / req.elementBytes);
    this.stats.messagesReceived++;
    this.stats.bytesReceived += bytes;
    if (this.trace !== null) this.trace.recvs.push(src, req.ctx, tag, bytes);
    if (invalid) {
      req.complete(invalidData(this.placement.worldRank, src, tag));
      return false;
    }
    if (bytes > req.view.byteLength) {
      req.complete(new NbcTruncateError(
        `Cannot receive a ${bytes}-byte message from rank ${src} (tag ${tag}) into a ` +
        `${req.view.byteLength}-byte buffer: the message is longer than the receive buffer; ` +
        `expected a buffer of at least ${bytes} bytes`));
      return false;
    }
    return true;
  }

  private deliverUnexpected(req: RecvRequest, m: Unexpected): void {
    if (m.kind === KIND_UCX_RTS) {
      this.ucxReceive(req, m.from, m.src, m.tag, m.bytes, m.token, m.invalid, m.held === true);
      return;
    }
    if (m.kind === KIND_RTS && m.slice < 0) {
      this.pullInto(req, m.src, m.tag, m.bytes, m.offset, m.token, m.from, m.invalid);
      return;
    }
    if (m.kind === KIND_EAGER) {
      this.owe(m.from, m.bytes);
      if (this.finishRecv(req, m.src, m.tag, m.bytes, m.invalid)) req.view.set(m.data!);
      if (!req.done) req.complete();
      return;
    }
    if (this.finishRecv(req, m.src, m.tag, m.bytes, m.invalid)) {
      copyAt(this.slices[m.slice]!, m.offset, req.view, 0, m.bytes);
    }
    this.sendAck(m.from, m.token, m.slice);
    if (!req.done) req.complete();
  }

  /** Handles one incoming record at byte offset `at` of `ring`. */
  private handle(ring: Ring, at: number): void {
    const i32 = ring.i32;
    const w = at >> 2;
    const kind = i32[w + H_KIND]!;
    if (kind === KIND_DATA) {
      this.pulled(i32[w + H_AUX]!, i32[w + H_SLICE]!, i32[w + H_OFFSET]!, i32[w + H_BYTES]!, i32[w + H_TOKEN]!);
      return;
    }
    if (kind === KIND_EAGER_CREDIT) {
      this.credited(i32[w + H_SRC_WORLD]!, i32[w + H_TOKEN]!);
      return;
    }
    if (kind === KIND_ACK) {
      const token = i32[w + H_TOKEN]!;
      const req = this.awaitingAck.get(token);
      if (req === undefined) throw new NbcInternalError(`ACK for unknown send token ${token}`);
      this.awaitingAck.delete(token);
      if (req.staged >= 0) this.allocator.free(req.staged);
      req.complete();
      return;
    }
    const ctx = i32[w + H_CTX]!;
    const src = i32[w + H_SRC]!;
    const rawTag = i32[w + H_TAG]!;
    const tag = rawTag & TAG_BITS;
    const invalid = rawTag < 0;
    const bytes = i32[w + H_BYTES]!;
    // Only messages match receives: a record of another kind must never take one.
    if (kind === KIND_EAGER) {
      const req = this.takePosted(ctx, src, tag);
      const from = i32[w + H_SRC_WORLD]!;
      if (req !== null) {
        this.owe(from, bytes);
        if (this.finishRecv(req, src, tag, bytes, invalid)) copyAt(ring.u8, at + HEADER_BYTES, req.view, 0, bytes);
        if (!req.done) req.complete();
        return;
      }
      const data = ring.u8.slice(at + HEADER_BYTES, at + HEADER_BYTES + bytes);
      this.pushUnexpected(ctx, { kind, src, tag, bytes, data, slice: -1, offset: 0, token: 0, from, invalid });
      return;
    }
    if (kind === KIND_RTS) {
      const req = this.takePosted(ctx, src, tag);
      const slice = i32[w + H_SLICE]!;
      const offset = i32[w + H_OFFSET]!;
      const token = i32[w + H_TOKEN]!;
      if (slice < 0) {
        // From another node: the payload waits there until a receive matches and pulls it.
        const from = i32[w + H_SRC_WORLD]!;
        if (req !== null) this.pullInto(req, src, tag, bytes, offset, token, from, invalid);
        else this.pushUnexpected(ctx, { kind, src, tag, bytes, data: null, slice, offset, token, from, invalid });
        return;
      }
      if (req !== null) {
        if (this.finishRecv(req, src, tag, bytes, invalid)) {
          copyAt(this.slices[slice]!, offset, req.view, 0, bytes);
        }
        this.sendAck(ring.from, token, slice);
        if (!req.done) req.complete();
        return;
      }
      this.pushUnexpected(ctx, { kind, src, tag, bytes, data: null, slice, offset, token, from: ring.from, invalid });
      return;
    }
    if (kind === KIND_FIN) {
      // Once per peer and job: last, off the messages' path.
      this.peerFinished(i32[w + H_SRC_WORLD]!);
      return;
    }
    throw new NbcInternalError(`unknown record kind ${kind} in ring ${ring.from} -> ${ring.to}`);
  }

  /**
   * World rank `world` has returned from its job, and everything it sent this rank has been
   * handled (its KIND_FIN comes behind its last message on the same path). What only it could
   * complete fails now: posted receives naming it, and sends it never took. Receives from
   * ANY_SOURCE are left alone (this rank may still send to itself).
   */
  private peerFinished(world: number): void {
    if (this.finished[world] === 1) return;
    this.finished[world] = 1;
    this.finishedCount++;
    for (const [ctx, q] of this.posted) {
      const members = this.members.get(ctx);
      if (members === undefined) continue;
      for (let i = 0; i < q.length;) {
        const r = q[i]!;
        if (r.src !== ANY_SOURCE && members[r.src] === world) {
          q.splice(i, 1);
          if (!r.done) r.complete(this.senderFinished(world, ctx, r.src, r.tag));
        } else {
          i++;
        }
      }
    }
    const ep = this.route(world);
    if (ep === UCX_ROUTE) {
      // Held until it asked for the payload, which it would have done before its FIN.
      for (const [token, req] of this.ucxHeld) {
        if (req.dstWorld !== world) continue;
        this.ucxHeld.delete(token);
        req.complete(receiverFinished(this.placement.worldRank, req));
      }
      return;
    }
    // Through the engine a send completes when the payload has left this node, not on the
    // receiver's word, so only sends to this node's ranks can be judged here.
    if (ep === this.engineEp) return;
    for (const [token, req] of this.awaitingAck) {
      if (req.dstWorld !== world) continue;
      this.awaitingAck.delete(token);
      if (req.staged >= 0) this.allocator.free(req.staged);
      req.complete(receiverFinished(this.placement.worldRank, req));
    }
    this.dropQueue(ep);
  }

  /** Forgets what waits for room in the ring to endpoint `ep`, whose rank has finished: its sends fail. */
  private dropQueue(ep: number): void {
    const q = this.outQueues[ep]!;
    if (q.length === 0) return;
    for (const item of q) if (item instanceof SendRequest && !item.done) item.complete(receiverFinished(this.placement.worldRank, item));
    q.length = 0;
    this.queuedEndpoints--;
  }

  /**
   * A send to a rank that has returned from its job: an eager one completes, its message
   * dropped (as one that nobody receives); a larger one, which would wait for the receiver,
   * fails.
   */
  private sendToFinished(req: SendRequest): void {
    if (req.view.byteLength <= this.eagerLimit) req.complete();
    else req.complete(receiverFinished(this.placement.worldRank, req));
  }

  /**
   * The finished rank that is the only possible sender of a receive from `src` on context
   * `ctx`, or -1 (not finished, ANY_SOURCE, or a context this transport cannot resolve).
   */
  private senderGone(ctx: number, src: number): number {
    if (src === ANY_SOURCE) return -1;
    const w = this.members.get(ctx)?.[src];
    return w !== undefined && this.finished[w] === 1 ? w : -1;
  }

  private senderFinished(world: number, ctx: number, src: number, tag: number): NbcPeerFailedError {
    const who = src === world ? `rank ${world}` : `rank ${src} (world rank ${world})`;
    return new NbcPeerFailedError(
      `Rank ${this.placement.worldRank} cannot receive from ${who} (context ${ctx}, tag ${tag}): that rank returned ` +
      `from its job without sending the message; expected every rank to make the same calls (a collective or ` +
      `receive it skipped, or a send it never made)`);
  }

  /** Handles the UCX header of `len` bytes now in the UCX path's inbox. */
  private handleUcx(len: number): void {
    const ucx = this.ucx!;
    const i32 = ucx.inbox32;
    const kind = i32[H_KIND]!;
    const ctx = i32[H_CTX]!;
    const src = i32[H_SRC]!;
    const rawTag = i32[H_TAG]!;
    const tag = rawTag & TAG_BITS;
    const invalid = rawTag < 0;
    const bytes = i32[H_BYTES]!;
    const from = i32[H_SRC_WORLD]!;
    if (kind === KIND_EAGER_CREDIT) {
      this.credited(from, i32[H_TOKEN]!);
      return;
    }
    if (kind === KIND_FIN) {
      this.peerFinished(from);
      return;
    }
    if (kind === KIND_UCX_PULL) {
      const token = i32[H_TOKEN]!;
      const held = this.ucxHeld.get(token);
      if (held === undefined || held.dstWorld !== from) throw new NbcInternalError(`rank ${from} asked over UCX for the payload of send ${token}, which this rank does not hold for it`);
      this.ucxHeld.delete(token);
      this.ucxSendData(held, token);
      return;
    }
    const req = this.takePosted(ctx, src, tag);
    if (kind === KIND_EAGER) {
      if (len !== HEADER_BYTES + bytes) throw new NbcInternalError(`a ${len}-byte UCX eager message from rank ${from} announces ${bytes} payload bytes`);
      if (req !== null) {
        this.owe(from, bytes);
        if (this.finishRecv(req, src, tag, bytes, invalid)) copyAt(ucx.inbox, HEADER_BYTES, req.view, 0, bytes);
        if (!req.done) req.complete();
        return;
      }
      const data = ucx.inbox.slice(HEADER_BYTES, HEADER_BYTES + bytes);
      this.pushUnexpected(ctx, { kind, src, tag, bytes, data, slice: -1, offset: 0, token: 0, from, invalid });
      return;
    }
    if (kind === KIND_RTS) {
      const token = i32[H_TOKEN]!;
      const held = i32[H_AUX] === UCX_HELD;
      if (req === null && this.finishing) {
        this.dropUcx(from, bytes, token, held);
        return;
      }
      if (req !== null) this.ucxReceive(req, from, src, tag, bytes, token, invalid, held);
      else this.pushUnexpected(ctx, { kind: KIND_UCX_RTS, src, tag, bytes, data: null, slice: -1, offset: 0, token, from, invalid, held });
      return;
    }
    throw new NbcInternalError(`unknown UCX message kind ${kind} from rank ${from}`);
  }

  /**
   * Receives the payload of a matched UCX rendezvous straight into the receive buffer. A
   * payload longer than the buffer is still taken (into scratch memory, then dropped), so the
   * sender completes, and the receive fails with NBC_ERR_TRUNCATE.
   */
  private ucxReceive(req: RecvRequest, from: number, src: number, tag: number, bytes: number, token: number,
    invalid: boolean, held: boolean): void {
    const fits = this.finishRecv(req, src, tag, bytes, invalid);
    const into = fits ? req.view.subarray(0, bytes) : new Uint8Array(bytes);
    this.ucx!.recvData(from, token, into, (err) => {
      this.ucxReaped++;
      if (!req.done) req.complete(err ?? undefined);
    });
    if (held) this.askUcx(from, token);
  }

  /**
   * Takes and drops the payload of a UCX rendezvous that no receive will match, this rank
   * having returned from its job: its sender's send completes (as an eager message that nobody
   * receives does) instead of waiting for ever. A held one its sender fails on this rank's FIN.
   */
  private dropUcx(from: number, bytes: number, token: number, held: boolean): void {
    if (held) return;
    this.ucx!.recvData(from, token, new Uint8Array(bytes), () => { this.ucxReaped++; });
  }

  /** Asks `from` for the payload of its held send `token`; the receive for it is posted first. */
  private askUcx(from: number, token: number): void {
    const ucx = this.ucx!;
    this.putHeader(ucx.stage32, 0, KIND_UCX_PULL, HEADER_BYTES, -1, -1, -1, 0, from, token, -1, 0);
    ucx.sendHeader(from, HEADER_BYTES);
  }

  /**
   * A matched receive of a message whose payload waits on another node: asks this node's
   * engine to pull it (the engine reserves room in its slice, in order, as ACKs free it); the
   * receive completes when the DATA record arrives (`pulled`). A payload that cannot land in
   * the buffer is still pulled and dropped, so the sender completes.
   */
  private pullInto(req: RecvRequest, src: number, tag: number, bytes: number, node: number, id: number, from: number, invalid: boolean): void {
    const fits = this.finishRecv(req, src, tag, bytes, invalid);
    this.pull(fits ? req.view : null, req, node, id, bytes, from);
  }

  private pull(into: Uint8Array | null, req: Request, node: number, id: number, bytes: number, from: number): void {
    const pull = this.nextPull++;
    this.pulls.set(pull, { into, req });
    const record = new Int32Array(HEADER_WORDS);
    record[H_KIND] = KIND_PULL;
    record[H_LEN] = HEADER_BYTES;
    record[H_BYTES] = bytes;
    record[H_DST] = from;
    record[H_TOKEN] = id;
    record[H_SLICE] = pull;
    record[H_OFFSET] = node;
    record[H_SRC_WORLD] = this.placement.worldRank;
    this.queueToEngine(record);
  }

  /** The engine's DATA record: pull `pull`'s payload lies in `slice` at `offset` until ACKed. */
  private pulled(pull: number, slice: number, offset: number, bytes: number, token: number): void {
    const p = this.pulls.get(pull);
    if (p === undefined) throw new NbcInternalError(`DATA for unknown pull ${pull}`);
    this.pulls.delete(pull);
    if (p.into !== null) copyAt(this.slices[slice]!, offset, p.into, 0, bytes);
    this.sendAck(this.engineEp, token, slice);
    if (!p.req.done) p.req.complete();
  }

  /** The payload of an unexpected message waiting on another node, pulled now into a private buffer. */
  private pullNow(m: Unexpected): Uint8Array {
    const into = new Uint8Array(m.bytes);
    const req = new Request(this);
    this.pull(into, req, m.offset, m.token, m.bytes, m.from);
    this.waitUntil(req);
    return into;
  }

  /** The payload of an unexpected UCX rendezvous, fetched now into a private buffer. */
  private ucxFetch(m: Unexpected): Uint8Array {
    const into = new Uint8Array(m.bytes);
    const req = new Request(this);
    this.ucx!.recvData(m.from, m.token, into, (err) => req.complete(err ?? undefined));
    if (m.held === true) this.askUcx(m.from, m.token);
    this.waitUntil(req);
    if (req.error) throw req.error;
    return into;
  }

  private pushUnexpected(ctx: number, m: Unexpected): void {
    let q = this.unexpected.get(ctx);
    if (q === undefined) {
      q = new UnexpectedQueue();
      this.unexpected.set(ctx, q);
    }
    q.push(m);
  }

  // ---- progress and waiting -----------------------------------------------------------

  /** Drains every incoming ring and retries queued sends. True when anything happened. */
  progress(): boolean {
    if (this.inProgress) return false; // re-entered from a callback: the outer call finishes
    if (this.held !== null) throw new NbcInternalError('the transport was progressed while a received record was held in place (recvEager without releaseEager)');
    this.inProgress = true;
    let any = false;
    try {
      for (let e = 0; e < this.endpoints; e++) {
        const ring = this.inRings[e]!;
        let at: number;
        while ((at = ring.peek()) >= 0) {
          if (ring === this.wantRing && this.wanted(ring.i32, at >> 2)) break; // recvEager takes it
          this.handle(ring, at);
          any = true;
          if (ring.release(ring.i32[(at >> 2) + H_LEN]!)) wake(this.control, e);
        }
      }
      if (this.ucx !== null) {
        const reaped = this.ucxReaped;
        // One progress of the worker, then what it brought without another (ucx.ts, poll).
        let len = this.ucx.poll();
        while (len >= 0) {
          this.handleUcx(len);
          any = true;
          len = this.ucx.poll(false);
        }
        if (this.ucxReaped !== reaped) any = true;
      }
      if (this.queuedEndpoints > 0 && this.flushQueues()) any = true;
      for (let h = 0; h < this.hooks.length; h++) if (this.hooks[h]!()) any = true;
    } finally {
      this.inProgress = false;
    }
    const code = Atomics.load(this.control, kAbortWord);
    if (code !== 0) this.fail(code);
    return any;
  }

  private fail(code: number): never {
    this.failure ??= new NbcPeerFailedError(
      `The job is aborting (exit code ${code}): another rank or node failed; see the launcher's message; ${REPORTED_ELSEWHERE}`);
    throw this.failure;
  }

  private hasIncoming(): boolean {
    for (let e = 0; e < this.endpoints; e++) if (this.inRings[e]!.hasData()) return true;
    return false;
  }

  /**
   * Parks once (until a doorbell or 100 ms) unless there is already something to do. Queued
   * sends are retried, and the progress hooks' completion words read, after the sleeping flag
   * is up: a consumer that freed ring space, or an engine that completed an offloaded
   * collective, just before saw the flag down and rang no doorbell, so either the check sees
   * its work or its next look at the flag (sequential consistency) sees it up and rings.
   */
  private parkOnce(req: { done: boolean }): void {
    const c = this.control;
    Atomics.store(c, this.sleepIdx, 1);
    const seen = Atomics.load(c, this.doorbellIdx);
    const moved = this.queuedEndpoints > 0 && !this.inProgress && this.flushQueues();
    if (!moved && !req.done && !this.hasIncoming() && !this.hookReady() && Atomics.load(c, kAbortWord) === 0) {
      // With UCX, sleep in poll(2) on the worker's events and this rank's eventfd doorbell,
      // which wake() rings for a sleeping UCX rank besides the futex.
      if (this.ucx !== null) {
        if (Atomics.load(c, this.doorbellIdx) === seen) this.ucx.sleep(100);
      } else {
        Atomics.wait(c, this.doorbellIdx, seen, 100);
      }
    }
    Atomics.store(c, this.sleepIdx, 0);
  }

  /**
   * One idle step of a wait that began at `start` (ms) and found nothing to do: within the
   * spin budget, nothing (the caller polls again); then, with a yield function, sched_yield
   * until the yield budget is spent; then park once. True once past the spin budget, from
   * when the caller takes an idle step after every poll rather than every 16th. A yielding
   * step also counts in the rank's waiting word, which tells an engine that shares the rank's
   * core that a rank is waiting (so polling on pays off) rather than computing (engine.ts).
   * From the first idle step until the wait returns, the rank shows as waiting on the host
   * board, for the engines and wires of the other nodes on this host.
   */
  private idle(start: number, spinMs: number, req: { done: boolean }): boolean {
    const waited = performance.now() - start;
    if (waited <= spinMs) return false;
    this.board?.enter();
    if (this.yieldFn !== null && waited <= spinMs + this.yieldMs) {
      Atomics.add(this.control, this.waitingIdx, 1);
      this.yieldFn();
    } else {
      this.parkOnce(req);
    }
    return true;
  }

  /**
   * How a wait loop starts counting its empty polls: 0 to spin, checking the clock every 16th
   * poll; -1 to take an idle step (sched_yield, or park) after every empty poll from the first,
   * where the spin budget is zero (a crowded host). Over UCX a poll is a system call (the
   * worker's progress), so 16-32 empty polls before the first yield kept the core from the
   * rank being waited for for about 80 us on this VM (BENCHMARKS.md, "Yield from the first
   * empty poll").
   */
  private idleFromFirstPoll(spinMs = this.spinMs): number {
    return spinMs === 0 ? -1 : 0;
  }

  private spinThenPark(done: () => boolean): void {
    const start = performance.now();
    const probe = { get done() { return done(); } };
    let n = this.idleFromFirstPoll();
    try {
      for (;;) {
        this.progress();
        if (done()) return;
        if (n < 0 || (++n & 15) === 0) {
          if (this.idle(start, this.spinMs, probe)) n = -1;
        }
      }
    } finally {
      this.board?.leave();
    }
  }

  waitUntil(req: Request): void {
    if (req.done) return;
    this.progress();
    if (req.done) return;
    const start = performance.now();
    const spinMs = req.spinUs === undefined ? this.spinMs : req.spinUs / 1000;
    let n = this.idleFromFirstPoll(spinMs);
    try {
      for (;;) {
        this.progress();
        if (req.done) return;
        if (n < 0 || (++n & 15) === 0) {
          if (this.idle(start, spinMs, req)) n = -1;
        }
      }
    } finally {
      this.board?.leave();
    }
  }

  waitUntilAny(reqs: readonly Request[]): void {
    this.spinThenPark(() => reqs.some((r) => r.done));
  }

  /**
   * Calls `callback` after the next doorbell (or 50 ms), without blocking the thread. A timer
   * backs the Atomics.waitAsync up: a pending waitAsync does not keep Node's event loop alive,
   * so without a ref'd handle `await req` at a job's top level would let the worker exit.
   */
  parkAsync(callback: () => void): void {
    this.asyncWaiters.push(callback);
    if (this.asyncArmed) return;
    this.asyncArmed = true;
    const c = this.control;
    Atomics.store(c, this.sleepIdx, 1);
    const seen = Atomics.load(c, this.doorbellIdx);
    let fired = false;
    let timer: NodeJS.Timeout | undefined = undefined;
    const fire = (): void => {
      if (fired) return;
      fired = true;
      if (timer !== undefined) clearTimeout(timer);
      Atomics.store(c, this.sleepIdx, 0);
      this.asyncArmed = false;
      const waiters = this.asyncWaiters;
      this.asyncWaiters = [];
      for (const w of waiters) w();
    };
    if (this.hasIncoming() || this.queuedEndpoints > 0 || this.hookReady()) {
      setImmediate(fire);
      return;
    }
    timer = setTimeout(fire, 50);
    this.ucx?.watch(fire);
    const r = Atomics.waitAsync(c, this.doorbellIdx, seen, 50);
    if (r.async) void r.value.then(fire);
    else setImmediate(fire);
  }

  /**
   * Blocks until every queued record (sends, ACKs owed to peers) is in its ring: called before
   * a rank's thread ends. Payloads still awaiting an ACK live in the node's arena, which
   * outlives the thread, so they need not be waited for.
   */
  drain(): void {
    if (this.queuedEndpoints > 0) {
      // A rank of this node that has finished reads nothing more: what waits for room in
      // its ring is dropped rather than waited for.
      const c = this.control;
      this.spinThenPark(() => {
        for (let e = 0; e < this.engineEp; e++) {
          if (this.outQueues[e]!.length > 0 && Atomics.load(c, endpointWord(e, kFinished)) === 1) this.dropQueue(e);
        }
        return this.queuedEndpoints === 0;
      });
    }
    const ucx = this.ucx;
    if (ucx !== null) {
      // UCX payloads live in the rank's own memory, and eager sends may still sit in the
      // worker: both must have left before the thread (and with it the worker's progress) ends.
      let flushed = false;
      ucx.flush(() => { flushed = true; });
      this.spinThenPark(() => flushed && !ucx.busy);
    }
  }

  /**
   * Called once this rank's job has returned: tells every other rank so (KIND_FIN), on each
   * path this rank sent on and behind its last message there, then drains. The ranks of this
   * node get it through their rings; those of other nodes through the engine, which passes it
   * on to every node, or, with UCX, as a header message each. The engine also fails the
   * offloaded collectives that wait for this rank. A rank already finished gets
   * none (shm/layout.ts kFinished), and this rank, once marked, is sent nothing more.
   */
  announceFinished(): void {
    const c = this.control;
    Atomics.store(c, endpointWord(this.ep, kFinished), 1);
    const fin = new Int32Array(HEADER_WORDS);
    this.putHeader(fin, 0, KIND_FIN, HEADER_BYTES, -1, -1, -1, 0, -1, 0, -1, 0);
    for (let e = 0; e < this.engineEp; e++) {
      if (e !== this.ep && Atomics.load(c, endpointWord(e, kFinished)) === 0) this.queueRecord(e, fin);
    }
    const p = this.placement;
    const ucx = this.ucx;
    if (ucx !== null) {
      this.finishing = true;
      for (const q of this.unexpected.values()) {
        for (let m = q.take(ANY_SOURCE, ANY_TAG); m !== null; m = q.take(ANY_SOURCE, ANY_TAG)) {
          if (m.kind === KIND_UCX_RTS) this.dropUcx(m.from, m.bytes, m.token, m.held === true);
        }
      }
      for (let w = 0; w < p.worldSize; w++) {
        if (p.nodeOfRank[w] === p.nodeId) continue;
        this.putHeader(ucx.stage32, 0, KIND_FIN, HEADER_BYTES, -1, -1, -1, 0, w, 0, -1, 0);
        // After a job that succeeded here: a peer that cannot be reached is no news (a lost
        // node is reported by its links and the rendezvous).
        ucx.sendHeader(w, HEADER_BYTES, IGNORE);
        if (ucx.headersInFlight > UCX_HEADERS_IN_FLIGHT) this.spinThenPark(() => ucx.headersInFlight <= UCX_HEADERS_IN_FLIGHT >> 1);
      }
    }
    // The engine runs this rank's offloaded collectives' peers too (sched/offload.ts).
    this.queueToEngine(fin);
    this.drain();
  }

  /**
   * After `drain`, with UCX: keeps this rank's worker progressing until the node stops the
   * job (the abort word, set to 1 on a clean shutdown). A sent message can still need its
   * sender's worker (a connection being set up, a socket buffer still full), so no worker may
   * go quiet before every rank of the job is done: the node's DONE/SHUTDOWN exchange is the
   * job-wide fence, as MPI_Finalize's is. Sleeps between events.
   */
  linger(): void {
    if (this.ucx === null) return;
    const c = this.control;
    while (Atomics.load(c, kAbortWord) === 0) {
      try {
        this.progress();
      } catch {
        return; // the job is ending; nothing more to deliver
      }
      this.parkOnce(NOT_DONE);
    }
  }
}

const EMPTY_BYTES: Uint8Array = new Uint8Array(0);

/** For parkOnce from loops that check their own condition. */
const NOT_DONE = { done: false };

const IGNORE = (): void => {};

/** The error of a receive that matched data sent by a collective that had failed on its sender. */
function invalidData(me: number, src: number, tag: number): Error {
  return new NbcPeerFailedError(
    `rank ${me} received a message from communicator rank ${src} (tag ${tag}) that is not valid: the collective it ` +
    `belongs to had already failed there, and it was sent only so that nobody waits; ${REPORTED_ELSEWHERE}`);
}

/** The error of a send whose receiver returned from its job without taking it. */
function receiverFinished(me: number, req: SendRequest): NbcPeerFailedError {
  return new NbcPeerFailedError(
    `Rank ${me} cannot send ${req.view.byteLength} bytes to rank ${req.dstWorld} (context ${req.ctx}, tag ${req.tag}): ` +
    `that rank returned from its job without receiving them; expected every rank to make the same calls`);
}

function lengthMismatch(got: number, expected: number, src: number, tag: number): Error {
  const what = `a ${got}-byte message from rank ${src} (tag ${tag}) where ${expected} bytes were expected: the ranks disagree on the count`;
  return got > expected
    ? new NbcTruncateError(`Cannot receive ${what}; expected every rank to pass the same count`)
    : new NbcCountError(`Received ${what}; expected every rank to pass the same count`);
}
