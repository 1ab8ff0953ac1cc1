/**
 * The rank transport's shared vocabulary: its send and receive requests, where ranks live
 * (Placement), what it counts (TransportStats, MessageTrace), and the errors a path or the
 * match core raises. Split from transport.ts so the match core and both paths import it
 * without importing the facade.
 */
import { NbcCountError, NbcPeerFailedError, NbcTruncateError } from '../errors.js';
import { REPORTED_ELSEWHERE } from './constants.js';
import { Request } from './request.js';

export interface Placement {
  worldRank: number;
  worldSize: number;
  nodeId: number;
  /** node id of every world rank */
  nodeOfRank: Int32Array;
  /** endpoint index inside its node of every world rank */
  localOfRank: Int32Array;
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
  /**
   * A collective's receive: the message must fill the view exactly (MPI requires the ranks of
   * a collective to pass matching type signatures); a shorter one fails it with NBC_ERR_COUNT.
   */
  exact = false;
  ctx = 0;
  src = 0;
  tag = 0;
}

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
  /**
   * Of those schedules, how many a blocking call ran inside the call (the host executor's
   * rounds of eager messages, HostExecutor.runNow); counted where the field is present.
   */
  direct?: number;
}

/**
 * Records four numbers of one message in `into` (a trace's sends or recvs). Called only while
 * traced: the hot paths test for a trace and call this out of line, so the push is not
 * inlined into them (it would spend V8's inlining budget they need).
 */
export function traceMessage(into: number[], a: number, ctx: number, tag: number, bytes: number): void {
  into.push(a, ctx, tag, bytes);
}

/** Counts a message sent to `dstWorld` (TransportStats), and the peer the first time. */
export function countSend(s: TransportStats, peerUsed: Uint8Array, dstWorld: number, bytes: number, interNode: boolean): void {
  s.messagesSent++;
  s.bytesSent += bytes;
  if (interNode) s.interNodeMessages++;
  else s.intraNodeMessages++;
  if (peerUsed[dstWorld] === 0) firstSend(s, peerUsed, dstWorld, interNode);
}

/** The first message to `dstWorld`: a peer more (kept out of countSend, which the eager send inlines). */
function firstSend(s: TransportStats, peerUsed: Uint8Array, dstWorld: number, interNode: boolean): void {
  peerUsed[dstWorld] = 1;
  if (interNode) s.interNodePeers++;
  else s.intraNodePeers++;
}

export function senderFinished(me: number, world: number, ctx: number, src: number, tag: number): NbcPeerFailedError {
  const who = src === world ? `rank ${world}` : `rank ${src} (world rank ${world})`;
  return new NbcPeerFailedError(
    `Rank ${me} cannot receive from ${who} (context ${ctx}, tag ${tag}): that rank returned ` +
    `from its job without sending the message; expected every rank to make the same calls (a collective or ` +
    `receive it skipped, or a send it never made)`);
}

/** The error of a receive that matched data sent by a collective that had failed on its sender. */
export function invalidData(me: number, src: number, tag: number): Error {
  return new NbcPeerFailedError(
    `rank ${me} received a message from communicator rank ${src} (tag ${tag}) that is not valid: the collective it ` +
    `belongs to had already failed there, and it was sent only so that nobody waits; ${REPORTED_ELSEWHERE}`);
}

/** The error of a send whose receiver returned from its job without taking it. */
export function receiverFinished(me: number, req: SendRequest): NbcPeerFailedError {
  return new NbcPeerFailedError(
    `Rank ${me} cannot send ${req.view.byteLength} bytes to rank ${req.dstWorld} (context ${req.ctx}, tag ${req.tag}): ` +
    `that rank returned from its job without receiving them; expected every rank to make the same calls`);
}

export function lengthMismatch(got: number, expected: number, src: number, tag: number): Error {
  const what = `a ${got}-byte message from rank ${src} (tag ${tag}) where ${expected} bytes were expected: the ranks disagree on the count`;
  return got > expected
    ? new NbcTruncateError(`Cannot receive ${what}; expected every rank to pass the same count`)
    : new NbcCountError(`Received ${what}; expected every rank to pass the same count`);
}
