/**
 * The UCX path: a rank's messages to ranks of other nodes, straight from its UCP worker to the
 * peer's (ucx.ts keeps the worker and the addon binding; the protocol is drawn there). Headers
 * are shm/record.ts records: EAGER with its payload, RTS alone (the payload follows as a UCX
 * data message, or on KIND_UCX_PULL when held), EAGER_CREDIT, UCX_PULL and FIN. What they
 * carry feeds the same match core as the rings (match.ts).
 */
import { NbcInternalError } from '../errors.js';
import { copyAt, copyBytes } from '../shm/copy.js';
import { HEADER_BYTES, KIND_EAGER, KIND_EAGER_CREDIT, KIND_FIN, KIND_RTS, KIND_UCX_PULL } from '../shm/layout.js';
import {
  eagerCreditBytes, encodeEager, encodeEagerCredit, encodeFin, encodeUcxPull, encodeUcxRts, finRank, msgBytes, msgCtx,
  msgSrc, msgTag, recFrom, recKind, rtsHeld, rtsToken, setRecArrive, setUcxRtsPayloadArrive, ucxPullToken,
  ucxRtsPayloadArrive,
} from '../shm/record.js';
import { TAG_BITS } from './constants.js';
import type { Unexpected } from './match.js';
import { countSend, receiverFinished, senderFinished, type RecvRequest, type SendRequest } from './messages.js';
import type { Path, PathHost } from './path.js';
import { Request } from './request.js';
import type { Waitable } from './wait.js';
import { UCX_HEADERS_IN_FLIGHT, UCX_HELD, type UcxPath } from './ucx.js';
import { UcxHold } from './ucx-hold.js';
import type { Wire } from './wire.js';

export class UcxRoute implements Path {
  /** Operations UCX finished through a callback (counted so progress reports them as work). */
  private reaped = 0;
  /** UCX sends held until their receiver asks for the payload (KIND_UCX_PULL), by token. */
  private readonly held = new Map<number, SendRequest>();
  private nextToken = 1;
  /** The stamp of the pull `payloadArrive` reckoned last, for `ask` to send (emulated network). */
  private pullStamp = 0;
  /** This rank has returned from its job: payloads offered to it are taken and dropped. */
  private finishing = false;
  private readonly eagerWait: UcxEagerWait;
  /**
   * The emulated network (wire.ts), or null. Under it every header to another node carries
   * its modelled arrival, and `hold` keeps what has not arrived yet (ucx-hold.ts).
   */
  private readonly wire: Wire | null;
  private readonly hold: UcxHold | null;
  private readonly nodeOfRank: Int32Array;

  constructor(private readonly host: PathHost, readonly ucx: UcxPath) {
    this.eagerWait = new UcxEagerWait(host);
    this.wire = host.wire;
    this.hold = host.wire === null ? null : new UcxHold(host.wire, (u8, i32, len) => this.handle(u8, i32, len));
    this.nodeOfRank = host.placement.nodeOfRank;
  }

  // ---- sending -----------------------------------------------------------------------

  trySendEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): boolean {
    this.host.credit.take(dstWorld, bytes);
    this.eager(view, bytes, dstWorld, ctx, src, tag);
    return true;
  }

  /**
   * Sends an eager message: header and payload in one message, staged, so the caller's
   * buffer is free on return. `req` (isend) completes once UCX has finished the send (at once
   * when it could), so a window of isends is held back by a peer that does not take them, and
   * the isend itself never waits. Without `req` (blocking sends, schedules) the send is
   * complete on return; past UCX_HEADERS_IN_FLIGHT unfinished sends (a peer that does not take
   * them) it waits, progressing (so this rank still receives), until half have left. Not from
   * inside progress() (a schedule's next send): those are bounded by the schedule.
   */
  private eager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number, req?: SendRequest): void {
    const ucx = this.ucx;
    const h = this.host;
    const len = HEADER_BYTES + bytes;
    encodeEager(ucx.stage32, 0, len, ctx, src, tag, bytes, dstWorld, h.placement.worldRank);
    copyBytes(view, ucx.stage, HEADER_BYTES, bytes);
    if (this.wire !== null) this.stampOut(dstWorld, len);
    countSend(h.stats, h.peerUsed, dstWorld, bytes, true);
    if (req !== undefined) {
      const done = (err: Error | null): void => {
        this.reaped++;
        req.complete(err ?? undefined);
      };
      if (ucx.sendHeader(dstWorld, len, done)) req.complete();
      return;
    }
    ucx.sendHeader(dstWorld, len);
    if (ucx.headersInFlight > UCX_HEADERS_IN_FLIGHT && !h.inProgress) {
      h.waitFor(() => ucx.headersInFlight <= UCX_HEADERS_IN_FLIGHT >> 1);
    }
  }

  /**
   * A send: eager (complete at once), or a rendezvous header and the payload sent from the
   * caller's buffer in place, complete once UCX has moved it.
   */
  send(req: SendRequest): void {
    const bytes = req.view.byteLength;
    const h = this.host;
    const small = bytes <= h.eagerLimit;
    if (small && h.credit.spend(req.dstWorld, bytes)) {
      this.eager(req.view, bytes, req.dstWorld, req.ctx, req.src, req.tag, req);
      return;
    }
    const ucx = this.ucx;
    const token = this.nextToken++;
    // A large payload goes at once: UCX's own rendezvous (from 8 KiB over tcp) keeps it here
    // until the receive is posted. A small one UCX would send eagerly, into the receiver's
    // memory, which is what the missing credit forbids: it waits for KIND_UCX_PULL.
    encodeUcxRts(ucx.stage32, 0, req.ctx, req.src, req.tag, bytes, req.dstWorld, token, small ? UCX_HELD : 0, h.placement.worldRank);
    if (this.wire !== null) this.stampRts(req.dstWorld, bytes, small);
    ucx.sendHeader(req.dstWorld, HEADER_BYTES);
    countSend(h.stats, h.peerUsed, req.dstWorld, bytes, true);
    if (small) {
      this.held.set(token, req);
      return;
    }
    this.sendData(req, token);
  }

  private sendData(req: SendRequest, token: number): void {
    this.ucx.sendData(req.dstWorld, token, req.view, (err) => {
      this.reaped++;
      req.complete(err ?? undefined);
    });
  }

  /** Under an emulated network: stamps the header in the stage, `len` bytes on the wire to `dstWorld`'s node. */
  private stampOut(dstWorld: number, len: number): void {
    setRecArrive(this.ucx.stage32, 0, this.wire!.stamp(this.nodeOfRank[dstWorld]!, len));
  }

  /**
   * `stampOut` for an RTS. A payload sent with it (not held) takes the adapter right behind
   * it, and the RTS carries the tick its last byte arrives at (the receive completes no
   * earlier). A held payload leaves once asked: its receiver reckons its arrival (ask).
   */
  private stampRts(dstWorld: number, bytes: number, held: boolean): void {
    const node = this.nodeOfRank[dstWorld]!;
    const wire = this.wire!;
    setRecArrive(this.ucx.stage32, 0, wire.stamp(node, HEADER_BYTES));
    if (!held) setUcxRtsPayloadArrive(this.ucx.stage32, 0, wire.stamp(node, bytes));
  }

  /** A receive took an eager message of `bytes` from `from`: its credit is owed back, in batches. */
  private owe(from: number, bytes: number): void {
    const n = this.host.credit.owe(from, bytes);
    if (n === 0) return;
    encodeEagerCredit(this.ucx.stage32, 0, from, n, this.host.placement.worldRank);
    if (this.wire !== null) this.stampOut(from, HEADER_BYTES);
    this.ucx.sendHeader(from, HEADER_BYTES);
  }

  // ---- receiving ---------------------------------------------------------------------

  /** Handles what the worker brought. True when anything happened (a header, a finished operation). */
  poll(): boolean {
    if (this.hold !== null) return this.pollOnWire(this.hold);
    const reaped = this.reaped;
    const ucx = this.ucx;
    let any = false;
    // One progress of the worker, then what it brought without another (ucx.ts, poll).
    let len = ucx.poll();
    while (len >= 0) {
      this.handle(ucx.inbox, ucx.inbox32, len);
      any = true;
      // The header a lean receive waits for stays in the inbox, which the next poll refills.
      if (this.eagerWait.found) break;
      len = ucx.poll(false);
    }
    return any || this.reaped !== reaped;
  }

  /**
   * `poll` under an emulated network: first what the wire has delivered since the last look
   * (kept headers, payloads), then the worker's headers, each handled if it has arrived and
   * nothing from its sender waits before it, else kept (ucx-hold.ts).
   */
  private pollOnWire(hold: UcxHold): boolean {
    const reaped = this.reaped;
    const ucx = this.ucx;
    let any = hold.releaseDue();
    if (hold.release()) any = true;
    let len = ucx.poll();
    while (len >= 0) {
      if (!hold.keep(recFrom(ucx.inbox32, 0), ucx.inbox, ucx.inbox32, len)) {
        this.handle(ucx.inbox, ucx.inbox32, len);
        any = true;
      }
      len = ucx.poll(false);
    }
    return any || this.reaped !== reaped;
  }

  /** Handles a UCX header of `len` bytes: `u8` (the inbox, or a copy the wire held), `i32` the same bytes. */
  private handle(u8: Uint8Array, i32: Int32Array, len: number): void {
    const kind = recKind(i32, 0);
    const from = recFrom(i32, 0);
    if (kind === KIND_EAGER_CREDIT) {
      this.host.credit.credited(from, eagerCreditBytes(i32, 0));
      return;
    }
    if (kind === KIND_FIN) {
      this.host.peerFinished(finRank(i32, 0));
      return;
    }
    if (kind === KIND_UCX_PULL) {
      const token = ucxPullToken(i32, 0);
      const held = this.held.get(token);
      if (held === undefined || held.dstWorld !== from) throw new NbcInternalError(`rank ${from} asked over UCX for the payload of send ${token}, which this rank does not hold for it`);
      this.held.delete(token);
      // The payload takes this node's adapter now (the pull has arrived); its receiver reckons its arrival itself (ask).
      if (this.wire !== null) this.wire.take(this.wire.now(), held.view.byteLength);
      this.sendData(held, token);
      return;
    }
    if (kind !== KIND_EAGER && kind !== KIND_RTS) throw new NbcInternalError(`unknown UCX message kind ${kind} from rank ${from}`);
    const ctx = msgCtx(i32, 0);
    const src = msgSrc(i32, 0);
    const rawTag = msgTag(i32, 0);
    const tag = rawTag & TAG_BITS;
    const invalid = rawTag < 0;
    const bytes = msgBytes(i32, 0);
    const core = this.host.core;
    const req = core.match(ctx, src, tag);
    if (kind === KIND_EAGER) {
      if (len !== HEADER_BYTES + bytes) throw new NbcInternalError(`a ${len}-byte UCX eager message from rank ${from} announces ${bytes} payload bytes`);
      if (req !== null) {
        this.owe(from, bytes);
        if (core.finishRecv(req, src, tag, bytes, invalid)) copyAt(u8, HEADER_BYTES, req.view, 0, bytes);
        if (!req.done) req.complete();
        return;
      }
      const w = this.eagerWait;
      if (w.wanting && tag === w.tag && src === w.src && ctx === w.ctx) {
        if (bytes === w.bytes && !invalid && u8 === this.ucx.inbox) {
          // What `recvEager` waits for, and no earlier message of its (ctx, src, tag) is kept
          // (Transport.recvEager took those before the wait): read where it lies, in the inbox.
          this.owe(from, bytes);
          if (w.view.byteLength !== bytes) w.view = u8.subarray(HEADER_BYTES, HEADER_BYTES + bytes);
          this.host.tookEager(ctx, src, tag, w.view);
          w.found = true;
          return;
        }
        // Its match, but not one to read in place (another size, a failed sender's data): kept
        // as unexpected below, where the wait takes it, and no later header may pass it.
        w.wanting = false;
      }
      const data = u8.slice(HEADER_BYTES, HEADER_BYTES + bytes);
      core.arrive(ctx, { kind, src, tag, bytes, data, slice: -1, offset: 0, token: 0, from, invalid, held: false, path: this });
      return;
    }
    const token = rtsToken(i32, 0);
    const held = rtsHeld(i32, 0) === UCX_HELD;
    if (req === null && this.finishing) {
      this.dropRts(from, bytes, token, held);
      return;
    }
    // The payload's modelled arrival (0 without an emulated network) rides in `offset` while unexpected.
    const arrive = ucxRtsPayloadArrive(i32, 0);
    if (req !== null) this.receiveRts(req, from, src, tag, bytes, token, invalid, held, arrive);
    else core.arrive(ctx, { kind, src, tag, bytes, data: null, slice: -1, offset: arrive, token, from, invalid, held, path: this });
  }

  /** PayloadSource: an unexpected UCX message matched `req`. */
  receive(req: RecvRequest, m: Unexpected): void {
    if (m.kind === KIND_RTS) {
      this.receiveRts(req, m.from, m.src, m.tag, m.bytes, m.token, m.invalid, m.held, m.offset);
      return;
    }
    this.owe(m.from, m.bytes);
    if (this.host.core.finishRecv(req, m.src, m.tag, m.bytes, m.invalid)) req.view.set(m.data!);
    if (!req.done) req.complete();
  }

  /** PayloadSource: an unexpected UCX message's payload, now, as a private copy. */
  fetch(m: Unexpected): Uint8Array {
    if (m.kind === KIND_EAGER) {
      this.owe(m.from, m.bytes);
      return m.data!;
    }
    const into = new Uint8Array(m.bytes);
    const req = new Request(this.host);
    const arrive = this.wire === null ? 0 : this.payloadArrive(m.from, m.bytes, m.held, m.offset);
    this.ucx.recvData(m.from, m.token, into, this.hold === null ? (err) => req.complete(err ?? undefined)
      : (err) => this.hold!.complete(req, arrive, err));
    if (m.held) this.ask(m.from, m.token, arrive);
    this.host.waitUntil(req);
    if (req.error) throw req.error;
    return into;
  }

  /** PayloadSource: a finishing rank drops an unexpected RTS (its sender completes or fails). */
  drop(m: Unexpected): void {
    if (m.kind === KIND_RTS) this.dropRts(m.from, m.bytes, m.token, m.held);
  }

  /**
   * Receives the payload of a matched UCX rendezvous straight into the receive buffer. A
   * payload longer than the buffer is still taken (into scratch memory, then dropped), so the
   * sender completes, and the receive fails with NBC_ERR_TRUNCATE.
   */
  private receiveRts(req: RecvRequest, from: number, src: number, tag: number, bytes: number, token: number,
    invalid: boolean, held: boolean, sentArrive: number): void {
    const fits = this.host.core.finishRecv(req, src, tag, bytes, invalid);
    const into = fits ? req.view.subarray(0, bytes) : new Uint8Array(bytes);
    if (this.hold !== null) {
      this.receiveRtsOnWire(req, from, bytes, token, held, sentArrive, into, this.hold);
      return;
    }
    this.ucx.recvData(from, token, into, (err) => {
      this.reaped++;
      if (!req.done) req.complete(err ?? undefined);
    });
    if (held) this.ask(from, token, 0);
  }

  /** `receiveRts` under an emulated network: the receive completes no earlier than the payload's modelled arrival. */
  private receiveRtsOnWire(req: RecvRequest, from: number, bytes: number, token: number, held: boolean, sentArrive: number,
    into: Uint8Array, hold: UcxHold): void {
    const arrive = this.payloadArrive(from, bytes, held, sentArrive);
    this.ucx.recvData(from, token, into, (err) => {
      this.reaped++;
      hold.complete(req, arrive, err);
    });
    if (held) this.ask(from, token, arrive);
  }

  /**
   * The tick a rendezvous payload of `bytes` from `from` arrives at on the emulated wire. Sent
   * with its RTS: the sender's stamp (`sentArrive`). Held: it leaves when this rank's pull
   * reaches the sender, so it arrives a path latency and its serialisation after that: this
   * rank reckons it from its own Wire (path latencies are symmetric and every rank knows the
   * model), stamping the pull now, which `ask` then carries. That leaves out the sender's
   * adapter queue at that moment (other sends of its node ahead of the payload): an
   * approximation, since the data message carries no stamp of its own.
   */
  private payloadArrive(from: number, bytes: number, held: boolean, sentArrive: number): number {
    if (!held) return sentArrive;
    const wire = this.wire!;
    const node = this.nodeOfRank[from]!;
    this.pullStamp = wire.stamp(node, HEADER_BYTES);
    return (this.pullStamp + wire.serialTicks(bytes) + wire.latencyTo(node)) | 0 || 1;
  }

  /**
   * Takes and drops the payload of a UCX rendezvous that no receive will match, this rank
   * having returned from its job: its sender's send completes (as an eager message that nobody
   * receives does) instead of waiting for ever. A held one its sender fails on this rank's FIN.
   */
  private dropRts(from: number, bytes: number, token: number, held: boolean): void {
    if (held) return;
    this.ucx.recvData(from, token, new Uint8Array(bytes), () => { this.reaped++; });
  }

  /**
   * Asks `from` for the payload of its held send `token`; the receive for it is posted first.
   * Under an emulated network the pull carries the stamp `payloadArrive` gave it.
   */
  private ask(from: number, token: number, arrive: number): void {
    encodeUcxPull(this.ucx.stage32, 0, from, token, this.host.placement.worldRank);
    if (arrive !== 0) setRecArrive(this.ucx.stage32, 0, this.pullStamp);
    this.ucx.sendHeader(from, HEADER_BYTES);
  }

  /**
   * `recvEager` from a rank reached over UCX: always -1, its payload then `takeEarly`'s. The
   * message is read where it lies in the inbox when it is the next header polled (`handle`),
   * valid until the next poll, so the caller uses it before any other call on the transport
   * (as it releases a ring record); one that came before the wait is taken from the
   * unexpected list, a private copy.
   */
  recvEager(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number {
    const w = this.eagerWait;
    w.fromWorld = fromWorld;
    w.ctx = ctx;
    w.src = src;
    w.tag = tag;
    w.bytes = bytes;
    w.found = false;
    // Under an emulated network headers go through the hold (ucx-hold.ts): the unexpected list as before.
    w.wanting = this.hold === null;
    try {
      this.host.waiter.run(w, this.host.waiter.spinMs, true);
    } finally {
      w.wanting = false;
      w.found = false;
    }
    return -1;
  }

  // ---- finished peers ------------------------------------------------------------------

  /** World rank `world` has finished: sends held until it asked for the payload (it would have before its FIN) fail. */
  peerFinished(world: number): void {
    const me = this.host.placement.worldRank;
    for (const [token, req] of this.held) {
      if (req.dstWorld !== world) continue;
      this.held.delete(token);
      req.complete(receiverFinished(me, req));
    }
  }

  /** This rank has returned from its job: unexpected payloads are dropped, and every rank of the other nodes hears its FIN. */
  announceFinished(): void {
    const h = this.host;
    const p = h.placement;
    const ucx = this.ucx;
    this.finishing = true;
    h.core.dropAll();
    for (let w = 0; w < p.worldSize; w++) {
      if (p.nodeOfRank[w] === p.nodeId) continue;
      encodeFin(ucx.stage32, 0, w, p.worldRank);
      // After a job that succeeded here: a peer that cannot be reached is no news (a lost
      // node is reported by its links and the rendezvous).
      ucx.sendHeader(w, HEADER_BYTES, IGNORE);
      if (ucx.headersInFlight > UCX_HEADERS_IN_FLIGHT) h.waitFor(() => ucx.headersInFlight <= UCX_HEADERS_IN_FLIGHT >> 1);
    }
  }

  /**
   * UCX payloads live in the rank's own memory, and eager sends may still sit in the worker:
   * both must have left before the thread (and with it the worker's progress) ends.
   */
  drain(): void {
    const ucx = this.ucx;
    let flushed = false;
    ucx.flush(() => { flushed = true; });
    this.host.waitFor(() => flushed && !ucx.busy);
  }
}

const IGNORE = (): void => {};

/** The wait of a UCX `recvEager`, one per path (lean receives do not nest). */
class UcxEagerWait implements Waitable {
  readonly done = false;
  readonly progressMask = 0;
  fromWorld = 0;
  ctx = 0;
  src = 0;
  tag = 0;
  bytes = 0;
  /** While the wait runs: `handle` may take its message straight from the inbox. */
  wanting = false;
  /** `handle` took it (the transport's early payload is `view`). */
  found = false;
  /** The inbox's payload bytes, kept while the size repeats. */
  view: Uint8Array = new Uint8Array(0);

  constructor(private readonly host: PathHost) {}

  ready(): boolean {
    return false;
  }

  settled(): boolean {
    const h = this.host;
    if (this.found) return true;
    if (h.takeUnexpected(this.ctx, this.src, this.tag, this.bytes)) return true;
    if (h.core.isFinished(this.fromWorld)) throw senderFinished(h.placement.worldRank, this.fromWorld, this.ctx, this.src, this.tag);
    return false;
  }
}
