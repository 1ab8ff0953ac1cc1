/**
 * The ring path: a rank's messages to the ranks of its node, straight into the (me -> peer)
 * ring, and to ranks of other nodes over TCP, into the (me -> engine) ring, which the engine
 * forwards. One single-producer ring per ordered pair (shm/ring.ts) keeps each pair's records
 * in order; what finds a ring full waits in that ring's queue, in order, and is retried on
 * progress.
 *
 * Protocols:
 * - eager (payload <= eagerLimit, within credit): the payload travels inline in the record;
 *   the send completes as soon as the record is published.
 * - rendezvous (larger): the payload sits in an arena slice (the sender's own registered
 *   buffer, zero-copy, or a staging copy for plain typed arrays); an RTS names it; the
 *   receiver copies it straight into the receive buffer and answers ACK; the send completes
 *   on ACK. So message size is bounded by the arena, never by the ring.
 * - from another node (TCP): an RTS naming no slice; the receiving rank asks its engine to
 *   PULL the payload, which arrives as DATA in the engine's slice (shm/layout.ts KIND_PULL).
 *
 * Records are written and read only through shm/record.ts.
 */
import { NbcInternalError, NbcNoMemError } from '../errors.js';
import { copyAt, copyBytes } from '../shm/copy.js';
import {
  align8, endpointWord, HEADER_BYTES, HEADER_WORDS, kFinished, KIND_ACK, KIND_DATA, KIND_EAGER, KIND_EAGER_CREDIT,
  KIND_FIN, KIND_PULL, KIND_RTS,
} from '../shm/layout.js';
import { ringOffset, wake, type NodeShared } from '../shm/node-shared.js';
import {
  ackToken, dataBytes, dataOffset, dataPull, dataSlice, dataToken, eagerCreditBytes, encodeAck, encodeEager,
  encodeEagerCredit, encodeOffload, encodePull, encodeRts, finRank, msgBytes, msgCtx, msgSrc, msgTag, pullNode, recArrive,
  recDst, recFrom, recKind, recLen, rtsNode, rtsOffset, rtsSlice, rtsToken, setRecArrive,
} from '../shm/record.js';
import { Ring } from '../shm/ring.js';
import type { SliceAllocator } from '../shm/arena.js';
import { TAG_BITS } from './constants.js';
import type { EagerCredit } from './credit.js';
import type { MatchCore, Unexpected } from './match.js';
import {
  countSend, lengthMismatch, receiverFinished, RecvRequest, senderFinished, SendRequest, traceMessage, type TransportStats,
} from './messages.js';
import type { Path, PathHost } from './path.js';
import { Request } from './request.js';
import type { Waitable } from './wait.js';
import type { Wire } from './wire.js';

/**
 * A lean receive's wait progresses everything at every 8th poll only, while its ring's head is
 * empty (EagerWait): on 4 ranks of 2 cores, where each poll is followed by a yield, the full
 * progress at every poll took about a quarter of each barrier and allreduce (BENCHMARKS.md,
 * "Collectives next to Open MPI").
 */
const LOOK_ONLY_MASK = 7;

/** Queued for a full ring: a send, an ACK, or a whole record (credit, FIN, the engine's control records). */
type Outgoing = SendRequest | { ack: number; slice: number } | { record: Int32Array };

export class RingPath implements Path {
  readonly ep: number;
  readonly engineEp: number;
  readonly endpoints: number;
  private readonly outRings: Ring[] = [];
  private readonly inRings: Ring[] = [];
  private readonly outQueues: Outgoing[][] = [];
  /** How many rings have records waiting in their queue. */
  queuedEndpoints = 0;
  private readonly awaitingAck = new Map<number, SendRequest>();
  /**
   * Inter-node rendezvous payloads this rank has pulled (shm/layout.ts KIND_PULL), by pull id:
   * where the payload goes (null: dropped, the receive already failed) and what completes.
   */
  private readonly pulls = new Map<number, { into: Uint8Array | null; req: Request }>();
  private nextPull = 1;
  private nextToken = 1;
  private readonly ownSlice: SharedArrayBuffer;
  /** The ring whose head record `recvEager` handed out in place, and that record's length. */
  held: Ring | null = null;
  private heldLen = 0;
  /** The message `recvEager` is waiting for: its ring, and its (ctx, src, tag). */
  private wantRing: Ring | null = null;
  private wantCtx = 0;
  private wantSrc = 0;
  private wantTag = 0;
  private readonly eagerWait: EagerWait;
  /** The host's parts, held here: the hot paths read them without a hop through the host. */
  private readonly core: MatchCore;
  private readonly credit: EagerCredit;
  private readonly stats: TransportStats;
  private readonly peerUsed: Uint8Array;
  private readonly me: number;
  private readonly nodeOfRank: Int32Array;
  private readonly localOfRank: Int32Array;
  private readonly nodeId: number;
  /** The emulated network, or null; under it, the ring from the engine, whose records may not have arrived yet. */
  private readonly wire: Wire | null;
  private readonly holdRing: Ring | null;

  constructor(private readonly host: PathHost, shared: NodeShared, private readonly control: Int32Array,
    private readonly slices: Uint8Array[], private readonly allocator: SliceAllocator) {
    const { ranks, ringBytes } = shared.layout;
    const p = host.placement;
    this.ep = p.localOfRank[p.worldRank]!;
    this.engineEp = ranks;
    this.endpoints = ranks + 1;
    this.ownSlice = shared.slices[this.ep]!;
    for (let e = 0; e < this.endpoints; e++) {
      this.outRings.push(new Ring(shared.rings, ringOffset(shared, this.ep, e), ringBytes, this.ep, e));
      this.inRings.push(new Ring(shared.rings, ringOffset(shared, e, this.ep), ringBytes, e, this.ep));
      this.outQueues.push([]);
    }
    this.eagerWait = new EagerWait(this, host);
    this.core = host.core;
    this.credit = host.credit;
    this.stats = host.stats;
    this.peerUsed = host.peerUsed;
    this.me = p.worldRank;
    this.nodeOfRank = p.nodeOfRank;
    this.localOfRank = p.localOfRank;
    this.nodeId = p.nodeId;
    this.wire = host.wire;
    this.holdRing = host.wire === null ? null : this.inRings[this.engineEp]!;
  }

  /** Endpoint a message for `dstWorld` leaves through: its own ring in this node, else the engine's. */
  private epOf(dstWorld: number): number {
    return this.nodeOfRank[dstWorld] === this.nodeId ? this.localOfRank[dstWorld]! : this.engineEp;
  }

  isRegistered(view: ArrayBufferView): boolean {
    return view.buffer === this.ownSlice;
  }

  // ---- sending -----------------------------------------------------------------------

  trySendEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): boolean {
    const ep = this.epOf(dstWorld);
    if (this.outQueues[ep]!.length !== 0) return false;
    const ring = this.outRings[ep]!;
    const len = align8(HEADER_BYTES + bytes);
    const at = ring.reserve(len);
    if (at < 0) return false;
    this.credit.take(dstWorld, bytes);
    encodeEager(ring.i32, at >> 2, len, ctx, src, tag, bytes, dstWorld, this.me);
    copyBytes(view, ring.u8, at + HEADER_BYTES, bytes);
    if (this.wire !== null) this.stampOut(ring, at, ep, dstWorld, len);
    ring.publish(len);
    wake(this.control, ep);
    countSend(this.stats, this.peerUsed, dstWorld, bytes, ep === this.engineEp);
    return true;
  }

  send(req: SendRequest): void {
    const bytes = req.view.byteLength;
    req.ep = this.epOf(req.dstWorld);
    if (bytes > this.host.eagerLimit || !this.credit.spend(req.dstWorld, bytes)) this.prepareRendezvous(req);
    const q = this.outQueues[req.ep]!;
    if (q.length > 0 || !this.writeSend(req)) {
      if (q.length === 0) this.queuedEndpoints++;
      q.push(req);
    }
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
    const me = this.me;
    if (rendezvous) encodeRts(ring.i32, at >> 2, req.ctx, req.src, req.tag, bytes, req.dstWorld, req.token, req.slice, req.offset, me);
    else encodeEager(ring.i32, at >> 2, len, req.ctx, req.src, req.tag, bytes, req.dstWorld, me);
    if (!rendezvous) copyBytes(req.view, ring.u8, at + HEADER_BYTES, bytes);
    if (this.wire !== null) this.stampOut(ring, at, req.ep, req.dstWorld, len);
    ring.publish(len);
    wake(this.control, req.ep);
    countSend(this.stats, this.peerUsed, req.dstWorld, bytes, req.ep === this.engineEp);
    if (rendezvous) this.awaitingAck.set(req.token, req);
    else req.complete();
    return true;
  }

  private writeAck(ep: number, token: number, slice: number): boolean {
    const ring = this.outRings[ep]!;
    const at = ring.reserve(HEADER_BYTES);
    if (at < 0) return false;
    encodeAck(ring.i32, at >> 2, token, slice);
    ring.publish(HEADER_BYTES);
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

  /** Gives world rank `to` back `n` bytes of eager credit, behind what this rank sent it. */
  private returnCredit(to: number, n: number): void {
    const record = new Int32Array(HEADER_WORDS);
    encodeEagerCredit(record, 0, to, n, this.me);
    this.queueRecord(this.epOf(to), record);
  }

  /** A receive took an eager message of `bytes` from `from`: its credit is owed back, in batches. */
  private owe(from: number, bytes: number): void {
    const n = this.credit.owe(from, bytes);
    if (n > 0) this.returnCredit(from, n);
  }

  /**
   * Sends an offload record to this node's engine (sched/offload-client.ts): header fields,
   * then `payload` words. Ordered with everything else this rank sends to the engine.
   */
  toEngine(kind: number, ctx: number, src: number, tag: number, dst: number, slice: number, offset: number,
    payload: Int32Array): void {
    const len = align8(HEADER_BYTES + payload.byteLength);
    const record = new Int32Array(len >> 2);
    encodeOffload(record, 0, kind, len, ctx, src, tag, dst, slice, offset, payload.byteLength, this.me);
    record.set(payload, HEADER_WORDS);
    this.queueRecord(this.engineEp, record);
  }

  /** Writes a whole record into the ring to endpoint `ep`, or queues it behind what waits there. */
  queueRecord(ep: number, record: Int32Array): void {
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
    if (this.wire !== null) this.stampControl(ring, at, ep);
    ring.publish(record.byteLength);
    wake(this.control, ep);
    return true;
  }

  /**
   * Under an emulated network: stamps a record leaving for another node (into the engine's
   * ring) with the tick the wire delivers it at (wire.ts). `len`: its bytes on the wire.
   */
  private stampOut(ring: Ring, at: number, ep: number, dstWorld: number, len: number): void {
    if (ep === this.engineEp) setRecArrive(ring.i32, at >> 2, this.wire!.stamp(this.nodeOfRank[dstWorld]!, len));
  }

  /** `stampOut` for a control record: eager credit and pulls cross the wire; offload records and FINs (the engine's to stamp) do not. */
  private stampControl(ring: Ring, at: number, ep: number): void {
    if (ep !== this.engineEp) return;
    const w = at >> 2;
    const kind = recKind(ring.i32, w);
    if (kind === KIND_EAGER_CREDIT) setRecArrive(ring.i32, w, this.wire!.stamp(this.nodeOfRank[recDst(ring.i32, w)]!, HEADER_BYTES));
    else if (kind === KIND_PULL) setRecArrive(ring.i32, w, this.wire!.stamp(pullNode(ring.i32, w), HEADER_BYTES));
  }

  /** Retries what waits for ring room, in order. True when anything moved. */
  flush(): boolean {
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

  /** Drains every incoming ring into the match core. True when it handled a record. */
  poll(): boolean {
    let any = false;
    for (let e = 0; e < this.endpoints; e++) {
      const ring = this.inRings[e]!;
      let at: number;
      while ((at = ring.peek()) >= 0) {
        if (ring === this.wantRing && this.wanted(ring.i32, at >> 2)) break; // recvEager takes it
        if (ring === this.holdRing && !this.wire!.arrived(recArrive(ring.i32, at >> 2))) break; // still on the wire
        this.handle(ring, at);
        any = true;
        if (ring.release(recLen(ring.i32, at >> 2))) wake(this.control, e);
      }
    }
    return any;
  }

  hasIncoming(): boolean {
    for (let e = 0; e < this.endpoints; e++) {
      const ring = this.inRings[e]!;
      if (ring === this.holdRing) {
        const at = ring.peek();
        if (at >= 0 && this.wire!.arrived(recArrive(ring.i32, at >> 2))) return true;
      } else if (ring.hasData()) {
        return true;
      }
    }
    return false;
  }

  /** Handles one incoming record at byte offset `at` of `ring`. */
  private handle(ring: Ring, at: number): void {
    const i32 = ring.i32;
    const w = at >> 2;
    const kind = recKind(i32, w);
    if (kind === KIND_DATA) {
      this.pulled(dataPull(i32, w), dataSlice(i32, w), dataOffset(i32, w), dataBytes(i32, w), dataToken(i32, w));
      return;
    }
    if (kind === KIND_EAGER_CREDIT) {
      this.credit.credited(recFrom(i32, w), eagerCreditBytes(i32, w));
      return;
    }
    if (kind === KIND_ACK) {
      const token = ackToken(i32, w);
      const req = this.awaitingAck.get(token);
      if (req === undefined) throw new NbcInternalError(`ACK for unknown send token ${token}`);
      this.awaitingAck.delete(token);
      if (req.staged >= 0) this.allocator.free(req.staged);
      req.complete();
      return;
    }
    if (kind === KIND_FIN) {
      // Once per peer and job: last, off the messages' path.
      this.host.peerFinished(finRank(i32, w));
      return;
    }
    // Only messages match receives: a record of another kind must never take one.
    if (kind !== KIND_EAGER && kind !== KIND_RTS) throw new NbcInternalError(`unknown record kind ${kind} in ring ${ring.from} -> ${ring.to}`);
    const ctx = msgCtx(i32, w);
    const src = msgSrc(i32, w);
    const rawTag = msgTag(i32, w);
    const tag = rawTag & TAG_BITS;
    const invalid = rawTag < 0;
    const bytes = msgBytes(i32, w);
    const core = this.core;
    const req = core.match(ctx, src, tag);
    if (kind === KIND_EAGER) {
      const from = recFrom(i32, w);
      if (req !== null) {
        this.owe(from, bytes);
        if (core.finishRecv(req, src, tag, bytes, invalid)) copyAt(ring.u8, at + HEADER_BYTES, req.view, 0, bytes);
        if (!req.done) req.complete();
        return;
      }
      const data = ring.u8.slice(at + HEADER_BYTES, at + HEADER_BYTES + bytes);
      core.arrive(ctx, { kind, src, tag, bytes, data, slice: -1, offset: 0, token: 0, from, invalid, held: false, path: this });
      return;
    }
    const slice = rtsSlice(i32, w);
    const token = rtsToken(i32, w);
    if (slice < 0) {
      // From another node: the payload waits there until a receive matches and pulls it.
      const from = recFrom(i32, w);
      const node = rtsNode(i32, w);
      if (req !== null) this.pullInto(req, src, tag, bytes, node, token, from, invalid);
      else core.arrive(ctx, { kind, src, tag, bytes, data: null, slice, offset: node, token, from, invalid, held: false, path: this });
      return;
    }
    const offset = rtsOffset(i32, w);
    if (req !== null) {
      if (core.finishRecv(req, src, tag, bytes, invalid)) copyAt(this.slices[slice]!, offset, req.view, 0, bytes);
      this.sendAck(ring.from, token, slice);
      if (!req.done) req.complete();
      return;
    }
    core.arrive(ctx, { kind, src, tag, bytes, data: null, slice, offset, token, from: ring.from, invalid, held: false, path: this });
  }

  /** PayloadSource: an unexpected ring message matched `req`. */
  receive(req: RecvRequest, m: Unexpected): void {
    const core = this.core;
    if (m.kind === KIND_RTS && m.slice < 0) {
      this.pullInto(req, m.src, m.tag, m.bytes, m.offset, m.token, m.from, m.invalid);
      return;
    }
    if (m.kind === KIND_EAGER) {
      this.owe(m.from, m.bytes);
      if (core.finishRecv(req, m.src, m.tag, m.bytes, m.invalid)) req.view.set(m.data!);
      if (!req.done) req.complete();
      return;
    }
    if (core.finishRecv(req, m.src, m.tag, m.bytes, m.invalid)) copyAt(this.slices[m.slice]!, m.offset, req.view, 0, m.bytes);
    this.sendAck(m.from, m.token, m.slice);
    if (!req.done) req.complete();
  }

  /** PayloadSource: an unexpected ring message's payload, now, as a private copy. */
  fetch(m: Unexpected): Uint8Array {
    if (m.kind === KIND_EAGER) {
      this.owe(m.from, m.bytes);
      return m.data!;
    }
    if (m.slice < 0) {
      const into = new Uint8Array(m.bytes);
      const req = new Request(this.host);
      this.pull(into, req, m.offset, m.token, m.bytes, m.from);
      this.host.waitUntil(req);
      return into;
    }
    const data = this.slices[m.slice]!.slice(m.offset, m.offset + m.bytes);
    this.sendAck(m.from, m.token, m.slice);
    return data;
  }

  drop(_m: Unexpected): void {}

  /**
   * A matched receive of a message whose payload waits on another node: asks this node's
   * engine to pull it (the engine reserves room in its slice, in order, as ACKs free it); the
   * receive completes when the DATA record arrives (`pulled`). A payload that cannot land in
   * the buffer is still pulled and dropped, so the sender completes.
   */
  private pullInto(req: RecvRequest, src: number, tag: number, bytes: number, node: number, id: number, from: number, invalid: boolean): void {
    const fits = this.core.finishRecv(req, src, tag, bytes, invalid);
    this.pull(fits ? req.view : null, req, node, id, bytes, from);
  }

  private pull(into: Uint8Array | null, req: Request, node: number, id: number, bytes: number, from: number): void {
    const pull = this.nextPull++;
    this.pulls.set(pull, { into, req });
    const record = new Int32Array(HEADER_WORDS);
    encodePull(record, 0, bytes, from, id, pull, node, this.me);
    this.queueRecord(this.engineEp, record);
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

  // ---- lean receives -------------------------------------------------------------------

  recvEager(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number {
    const ring = this.inRings[this.epOf(fromWorld)]!;
    // While we wait, progress leaves the message where it is (see poll), so it can only be
    // found at the head of its ring: never copied out to the unexpected list halfway.
    this.wantRing = ring;
    this.wantCtx = ctx;
    this.wantSrc = src;
    this.wantTag = tag;
    const w = this.eagerWait;
    w.ring = ring;
    w.fromWorld = fromWorld;
    w.bytes = bytes;
    w.progressMask = this.queuedEndpoints > 0 ? 0 : LOOK_ONLY_MASK;
    // Most often the message is there already (no try/finally on that path: every throw in
    // lookForWanted clears wantRing itself); else wait.
    if (this.lookForWanted(w)) {
      this.wantRing = null;
      return w.found;
    }
    return this.awaitWanted(w);
  }

  /** `recvEager`'s wait, reading the clock only once the message is late (it costs as much as a poll). */
  private awaitWanted(w: EagerWait): number {
    try {
      this.host.waiter.run(w, this.host.waiter.spinMs, true);
      return w.found;
    } finally {
      this.wantRing = null;
    }
  }

  /**
   * One look for the message `recvEager` waits for at the head of its ring: true once found
   * (`eagerWait.found`: its payload's offset, or -1 when it was taken as the early one). Kept
   * small, the rare cases out of line, so the lean receive inlines it.
   */
  lookForWanted(w: EagerWait): boolean {
    const ring = w.ring!;
    const at = ring.peek();
    if (at < 0) return false;
    const i32 = ring.i32;
    const r = at >> 2;
    if (!this.wanted(i32, r)) {
      w.progressMask = 0; // another record first: progress takes it off
      return false;
    }
    if (ring === this.holdRing && !this.wire!.arrived(recArrive(i32, r))) return false;
    if (recKind(i32, r) !== KIND_EAGER || msgTag(i32, r) < 0) return this.wantedOther(w, ring, at);
    const got = msgBytes(i32, r);
    this.owe(recFrom(i32, r), got);
    this.held = ring;
    this.heldLen = recLen(i32, r);
    this.stats.messagesReceived++;
    this.stats.bytesReceived += got;
    if (this.core.trace !== null) traceMessage(this.core.trace.recvs, this.wantSrc, this.wantCtx, this.wantTag, got);
    if (got !== w.bytes) this.wrongSize(got, w.bytes);
    w.found = at + HEADER_BYTES;
    return true;
  }

  /**
   * The wanted message, but not as an eager one of valid data: a rendezvous message (the ranks
   * disagree on the size), or data its sender's failed collective still sent (TAG_INVALID).
   * Take it the general way (its sender gets its ACK), then fail (takeUnexpected throws).
   */
  private wantedOther(w: EagerWait, ring: Ring, at: number): boolean {
    try {
      this.handle(ring, at);
      if (ring.release(recLen(ring.i32, at >> 2))) wake(this.control, ring.from);
      if (this.host.takeUnexpected(this.wantCtx, this.wantSrc, this.wantTag, w.bytes)) {
        w.found = -1;
        return true;
      }
    } catch (e) {
      this.wantRing = null;
      throw e;
    }
    return this.lookForWanted(w);
  }

  /** The wanted message is not the size expected: it is consumed, and the receive fails. */
  private wrongSize(got: number, bytes: number): never {
    this.wantRing = null;
    this.releaseEager();
    throw lengthMismatch(got, bytes, this.wantSrc, this.wantTag);
  }

  /** After a poll found nothing: the wanted message's sender has finished, so it is not coming. */
  checkWantedSender(w: EagerWait): void {
    // Its sender's KIND_FIN follows its last message in this ring: once it has been read, the
    // message is not coming (progress leaves a wanted record at the head).
    if (this.core.isFinished(w.fromWorld)) {
      throw senderFinished(this.me, w.fromWorld, this.wantCtx, this.wantSrc, this.wantTag);
    }
  }

  /** Whether the record at Int32 index `w` is the message `recvEager` waits for. */
  private wanted(i32: Int32Array, w: number): boolean {
    if ((msgTag(i32, w) & TAG_BITS) !== this.wantTag || msgSrc(i32, w) !== this.wantSrc || msgCtx(i32, w) !== this.wantCtx) return false;
    // Only a message: an ACK's other words are stale, a DATA record's are its RTS's.
    const kind = recKind(i32, w);
    return kind === KIND_EAGER || kind === KIND_RTS;
  }

  /** Frees the record `recvEager` left in place. */
  releaseEager(): void {
    const ring = this.held;
    if (ring === null) return;
    this.held = null;
    if (ring.release(this.heldLen)) wake(this.control, ring.from);
  }

  // ---- finished peers ------------------------------------------------------------------

  /**
   * World rank `world` has finished: sends to it that wait for its ACK, or for room in its
   * ring, fail. Through the engine a send completes when the payload has left this node, not
   * on the receiver's word, so only sends to this node's ranks are judged here.
   */
  peerFinished(world: number): void {
    const ep = this.epOf(world);
    if (ep === this.engineEp) return;
    const me = this.me;
    for (const [token, req] of this.awaitingAck) {
      if (req.dstWorld !== world) continue;
      this.awaitingAck.delete(token);
      if (req.staged >= 0) this.allocator.free(req.staged);
      req.complete(receiverFinished(me, req));
    }
    this.dropQueue(ep);
  }

  /** Forgets what waits for room in the ring to endpoint `ep`, whose rank has finished: its sends fail. */
  private dropQueue(ep: number): void {
    const q = this.outQueues[ep]!;
    if (q.length === 0) return;
    const me = this.me;
    for (const item of q) if (item instanceof SendRequest && !item.done) item.complete(receiverFinished(me, item));
    q.length = 0;
    this.queuedEndpoints--;
  }

  /** This rank's FIN (`fin`, a whole record) into the ring of every rank of the node that has not finished. */
  announceFinished(fin: Int32Array): void {
    const c = this.control;
    for (let e = 0; e < this.engineEp; e++) {
      if (e !== this.ep && Atomics.load(c, endpointWord(e, kFinished)) === 0) this.queueRecord(e, fin);
    }
  }

  /**
   * Blocks until every queued record is in its ring. A rank of this node that has finished
   * reads nothing more: what waits for room in its ring is dropped rather than waited for.
   */
  drain(): void {
    if (this.queuedEndpoints === 0) return;
    const c = this.control;
    this.host.waitFor(() => {
      for (let e = 0; e < this.engineEp; e++) {
        if (this.outQueues[e]!.length > 0 && Atomics.load(c, endpointWord(e, kFinished)) === 1) this.dropQueue(e);
      }
      return this.queuedEndpoints === 0;
    });
  }
}

/** The wait of a ring `recvEager`, one per path (lean receives do not nest). */
class EagerWait implements Waitable {
  readonly done = false;
  /**
   * Full progress every 8th poll while the ring's head is empty (the message will be found
   * there); at every poll once it holds another record, which progress must drain first, or
   * while this rank's own sends wait for room.
   */
  progressMask = LOOK_ONLY_MASK;
  ring: Ring | null = null;
  fromWorld = 0;
  bytes = 0;
  found = -1;

  constructor(private readonly path: RingPath, private readonly host: PathHost) {}

  ready(): boolean {
    return this.path.lookForWanted(this);
  }

  settled(): boolean {
    if (this.host.core.finishedCount > 0) this.path.checkWantedSender(this);
    return false;
  }
}
