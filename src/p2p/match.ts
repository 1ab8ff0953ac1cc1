/**
 * The match core: MPI's matching of messages to receives, for every path alike (rings within a
 * node and through the engine, UCX between nodes). It never asks which path a message came by:
 * a path that reads a message asks `match` for the posted receive it fits, and files it with
 * `arrive` when none does, naming itself as the message's `path`, which later takes the
 * payload into the receive that matches it (`PayloadSource`).
 *
 * Per communicator context:
 *
 *   posted      [r0, r1, r2, ...]  receives in posting order; a message takes the first whose
 *                                  source and tag fit (ANY_SOURCE, ANY_TAG included)
 *   unexpected  per source a FIFO, stamped with arrival numbers (unexpected.ts): a receive
 *               takes the earliest arrival it fits
 *
 * Non-overtaking: each (source -> destination) pair has one FIFO path, which feeds the core in
 * order, and both lists keep order, so messages from one source on one context are matched in
 * the order they were sent.
 *
 * Finished peers (KIND_FIN): a rank that has returned from its job sends its FIN behind its
 * last message on every path. Once it is read, a posted receive that only that rank could match
 * fails (NBC_ERR_PEER_FAILED), and so does one posted later; receives from ANY_SOURCE are left
 * alone. `members` (registerContext) says which world rank a context's source names.
 */
import { NbcTruncateError } from '../errors.js';
import { ANY_SOURCE, ANY_TAG } from './constants.js';
import { invalidData, lengthMismatch, senderFinished, traceMessage, type MessageTrace, type RecvRequest, type TransportStats } from './messages.js';
import { UnexpectedQueue } from './unexpected.js';

/** Takes the payload of a message the core filed unexpected: implemented by each path. */
export interface PayloadSource {
  /** Takes `m`'s payload into `req`, which matched it, and completes `req` when it has landed. */
  receive(req: RecvRequest, m: Unexpected): void;
  /** `m`'s payload as a private copy, now (the lean receives); may wait. */
  fetch(m: Unexpected): Uint8Array;
  /** Forgets `m`, which no receive will take (this rank has returned from its job). */
  drop(m: Unexpected): void;
}

/** A message that arrived before a receive matched it. */
export interface Unexpected {
  /** The path's own kind of message (its record kind, or another of its own). */
  kind: number;
  src: number;
  tag: number;
  bytes: number;
  /** EAGER: a private copy of the payload. */
  data: Uint8Array | null;
  /** RTS: where the payload waits and whom to ACK (UCX: whom to ask, by world rank; `offset`: the payload's modelled arrival on an emulated wire, or 0). */
  slice: number;
  offset: number;
  token: number;
  /** RTS: the endpoint (or, over UCX, the world rank) to answer; EAGER: the sender's world rank, owed the credit. */
  from: number;
  /** Sent by a collective that had already failed on its sender (constants.ts TAG_INVALID). */
  invalid: boolean;
  /** UCX RTS: the payload is sent only once asked for (KIND_UCX_PULL), not with the RTS. */
  held: boolean;
  /** The path holding the payload. */
  path: PayloadSource;
}

export class MatchCore {
  private readonly posted = new Map<number, RecvRequest[]>();
  private readonly unexpected = new Map<number, UnexpectedQueue<Unexpected>>();
  /** World rank of each member, by context (registerContext): whom a receive's source names. */
  private readonly members = new Map<number, Int32Array>();
  /** Per world rank: 1 once its KIND_FIN arrived (it has returned from its job). */
  private readonly finished: Uint8Array;
  finishedCount = 0;
  /**
   * Unexpected messages held, all contexts together: while 0 (the common case) a receive
   * looks up no context's list at all.
   */
  unexpectedCount = 0;
  /** Where to record messages, or null (the default: one null check per message). */
  trace: MessageTrace | null = null;

  /** `me`: this rank's world rank; `ranks`: the world size. */
  constructor(readonly me: number, ranks: number, private readonly stats: TransportStats) {
    this.finished = new Uint8Array(ranks);
  }

  /** A message (ctx, src, tag) arrived: the first posted receive it fits, taken off its list, or null. */
  match(ctx: number, src: number, tag: number): RecvRequest | null {
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

  /** Files a message no posted receive matched, behind those that came before it. */
  arrive(ctx: number, m: Unexpected): void {
    let q = this.unexpected.get(ctx);
    if (q === undefined) {
      q = new UnexpectedQueue();
      this.unexpected.set(ctx, q);
    }
    q.push(m);
    this.unexpectedCount++;
  }

  /** Takes the earliest unexpected message a receive (ctx, src, tag) fits, or null. */
  take(ctx: number, src: number, tag: number): Unexpected | null {
    if (this.unexpectedCount === 0) return null;
    const m = this.unexpected.get(ctx)?.take(src, tag) ?? null;
    if (m !== null) this.unexpectedCount--;
    return m;
  }

  /** The earliest unexpected message a receive (ctx, src, tag) fits, left in place, or null. */
  peek(ctx: number, src: number, tag: number): Unexpected | null {
    return this.unexpected.get(ctx)?.peek(src, tag) ?? null;
  }

  /**
   * A receive: takes the earliest unexpected message it fits (its path delivers the payload),
   * else fails it when its only possible sender has finished, else posts it.
   */
  post(req: RecvRequest): void {
    const ctx = req.ctx;
    const m = this.take(ctx, req.src, req.tag);
    if (m !== null) {
      m.path.receive(req, m);
      return;
    }
    if (this.finishedCount > 0) {
      const gone = this.senderGone(ctx, req.src);
      if (gone >= 0) {
        req.complete(senderFinished(this.me, gone, ctx, req.src, req.tag));
        return;
      }
    }
    let q = this.posted.get(ctx);
    if (q === undefined) {
      q = [];
      this.posted.set(ctx, q);
    }
    q.push(req);
  }

  /**
   * Fills a matched receive's status. False when the payload must not land in its buffer (the
   * message is too long, or, for an exact receive, too short; or not valid: its sender's
   * collective had failed); the request has
   * then failed, and the caller still consumes the message so the sender completes.
   */
  finishRecv(req: RecvRequest, src: number, tag: number, bytes: number, invalid: boolean): boolean {
    req.status.source = src;
    req.status.tag = tag;
    req.status.bytes = bytes;
    req.status.count = Math.floor(bytes / req.elementBytes);
    this.stats.messagesReceived++;
    this.stats.bytesReceived += bytes;
    if (this.trace !== null) traceMessage(this.trace.recvs, src, req.ctx, tag, bytes);
    if (invalid || bytes > req.view.byteLength || (req.exact && bytes !== req.view.byteLength)) return this.refuse(req, src, tag, bytes);
    return true;
  }

  /** `finishRecv`'s rare case, out of line (the hot receive inlines finishRecv): fails `req`, whose message is too long or short, or else not valid. */
  private refuse(req: RecvRequest, src: number, tag: number, bytes: number): false {
    // A wrong size names the cause (the ranks disagree on a count) even where the sender's
    // collective had failed already and flagged the data.
    const fits = req.exact ? bytes === req.view.byteLength : bytes <= req.view.byteLength;
    if (fits) {
      req.complete(invalidData(this.me, src, tag));
      return false;
    }
    if (req.exact) { // a collective's receive: the ranks disagree on a count
      req.complete(lengthMismatch(bytes, req.view.byteLength, src, tag));
      return false;
    }
    req.complete(new NbcTruncateError(
      `Cannot receive a ${bytes}-byte message from rank ${src} (tag ${tag}) into a ` +
      `${req.view.byteLength}-byte buffer: the message is longer than the receive buffer; ` +
      `expected a buffer of at least ${bytes} bytes`));
    return false;
  }

  /** Whether world rank `world` has finished (its FIN was read). */
  isFinished(world: number): boolean {
    return this.finishedCount > 0 && this.finished[world] === 1;
  }

  /**
   * World rank `world` has returned from its job, and everything it sent this rank has been
   * handled: posted receives naming it fail. False when it was known already.
   */
  peerFinished(world: number): boolean {
    if (this.finished[world] === 1) return false;
    this.finished[world] = 1;
    this.finishedCount++;
    for (const [ctx, q] of this.posted) {
      const members = this.members.get(ctx);
      if (members === undefined) continue;
      for (let i = 0; i < q.length;) {
        const r = q[i]!;
        if (r.src !== ANY_SOURCE && members[r.src] === world) {
          q.splice(i, 1);
          if (!r.done) r.complete(senderFinished(this.me, world, ctx, r.src, r.tag));
        } else {
          i++;
        }
      }
    }
    return true;
  }

  /**
   * The finished rank that is the only possible sender of a receive from `src` on context
   * `ctx`, or -1 (not finished, ANY_SOURCE, or a context this core cannot resolve).
   */
  senderGone(ctx: number, src: number): number {
    if (src === ANY_SOURCE) return -1;
    const w = this.members.get(ctx)?.[src];
    return w !== undefined && this.finished[w] === 1 ? w : -1;
  }

  /**
   * Names the members (world ranks, by communicator rank) of context `ctx`, so that a receive
   * whose only possible senders have returned from their jobs fails instead of hanging.
   */
  registerContext(ctx: number, worldRanks: Int32Array): void {
    this.members.set(ctx, worldRanks);
  }

  /**
   * Forgets context `ctx`'s lists (a freed communicator's) where nothing waits in them: without
   * it every communicator ever created left two entries behind (~0.5 KB a communicator per
   * rank in the soak). Lists with posted receives or unexpected messages stay.
   */
  releaseContext(ctx: number): void {
    if (this.posted.get(ctx)?.length === 0) this.posted.delete(ctx);
    if (this.unexpected.get(ctx)?.size === 0) this.unexpected.delete(ctx);
    if (!this.posted.has(ctx)) this.members.delete(ctx);
  }

  /** Takes every unexpected message, of every context, and lets its path drop it (a finishing rank). */
  dropAll(): void {
    for (const q of this.unexpected.values()) {
      for (let m = q.take(ANY_SOURCE, ANY_TAG); m !== null; m = q.take(ANY_SOURCE, ANY_TAG)) m.path.drop(m);
    }
    this.unexpectedCount = 0;
  }
}
