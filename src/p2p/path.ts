/**
 * What a path is to the rank transport, and what the transport is to a path. The transport
 * (transport.ts) holds one path per peer, the ring path (path-ring.ts: rings within the node,
 * and the ring to the node's engine for other nodes over TCP) or the UCX path (path-ucx.ts),
 * and calls it without asking which it is: sends go to the destination's path, a path's reads
 * feed the one match core (match.ts), and a message filed unexpected names the path that
 * takes its payload.
 */
import type { EagerCredit } from './credit.js';
import type { MatchCore, PayloadSource } from './match.js';
import type { Placement, SendRequest, TransportStats } from './messages.js';
import type { Progressor } from './request.js';
import type { Waiter } from './wait.js';
import type { Wire } from './wire.js';

export interface Path extends PayloadSource {
  /**
   * Sends an eager message at once, complete on return, when it can (nothing queued ahead of
   * it, room for it); the caller checked its size and credit. False: nothing sent or spent.
   */
  trySendEager(view: Uint8Array, bytes: number, dstWorld: number, ctx: number, src: number, tag: number): boolean;
  /** Starts a send (eager within credit, else by rendezvous); `req` completes when it is done. */
  send(req: SendRequest): void;
  /**
   * The lean blocking receive of one eager message (Transport.recvEager) from `fromWorld`, once
   * no unexpected message matched: the payload's offset in the ring memory, or -1 when it was
   * filed unexpected meanwhile and taken as the early one.
   */
  recvEager(fromWorld: number, ctx: number, src: number, tag: number, bytes: number): number;
  /** World rank `world` has finished: what this path holds for it that only it could complete fails. */
  peerFinished(world: number): void;
}

/** What a path asks of the transport that holds it. */
export interface PathHost extends Progressor {
  readonly core: MatchCore;
  readonly credit: EagerCredit;
  readonly stats: TransportStats;
  /** Per world rank: 1 once this rank has sent to it (TransportStats' peers). */
  readonly peerUsed: Uint8Array;
  readonly placement: Placement;
  readonly eagerLimit: number;
  readonly waiter: Waiter;
  /** The emulated network (p2p/wire.ts): stamp what leaves the node, hold what has not arrived; null: none. */
  readonly wire: Wire | null;
  /** True while progress() runs (a path must not wait from inside it). */
  readonly inProgress: boolean;
  /** Progresses until `done()` holds (spin, yield, park). */
  waitFor(done: () => boolean): void;
  /** Takes the earliest unexpected message (ctx, src, tag) as the early one (recvEager); false when none. */
  takeUnexpected(ctx: number, src: number, tag: number, bytes: number): boolean;
  /**
   * A path found the message a `recvEager` waits for and hands its payload over as the early
   * one, where it lies (valid until the path's next poll): counted as received.
   */
  tookEager(ctx: number, src: number, tag: number, payload: Uint8Array): void;
  /** World rank `world`'s FIN was read (on whichever path): the core and its path fail what only it could complete. */
  peerFinished(world: number): void;
}
