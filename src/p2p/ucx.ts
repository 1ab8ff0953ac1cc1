/**
 * The UCX path of a rank's transport: messages to ranks of other nodes go straight from this
 * rank's UCP worker to the peer's, with no engine hop (issue 12). The match core (match.ts)
 * matches for rings and UCX alike, so ANY_SOURCE and probe see both; path-ucx.ts speaks the
 * protocol below; this class owns the worker, the endpoints and the operations in flight.
 *
 * Protocol, in UCX tags (bit 63 tells the two kinds apart):
 * - a header message per send (tag bit 63 clear): the ring record header (shm/layout.ts,
 *   HEADER_BYTES) with KIND_EAGER and the payload after it, or KIND_RTS alone, naming a token;
 * - for RTS, the payload as a second message tagged DATA_BIT | sender's world rank << 32 |
 *   token, which the receiver asks for with an exact-tag receive straight into the matched
 *   receive buffer once it matched the header. UCX moves it by its own rendezvous protocol, so
 *   the payload is never staged and any size goes. A small payload (sent by rendezvous for
 *   want of eager credit) UCX would push eagerly, so its RTS says UCX_HELD, and the sender
 *   sends it only when the receiver, its receive posted, asks with a KIND_UCX_PULL header;
 * - KIND_EAGER_CREDIT headers give eager credit back (credit.ts).
 * Headers from one sender arrive in the order they were sent (one endpoint, one tag space,
 * one header receive posted at a time), so messages are never overtaken.
 *
 * Wire-up: every rank's worker address travels through the job's authenticated rendezvous
 * (node-main); an endpoint is created the first time a rank sends to a peer.
 */
import { NbcPeerFailedError } from '../errors.js';
import type { NativeAddon, UcxHandle } from '../runtime/native.js';
import { HEADER_BYTES } from '../shm/layout.js';

/** The addon functions the UCX path uses (present where the addon was built with UCX). */
export type UcxAddon = Required<Pick<NativeAddon,
  'ucxInit' | 'ucxWorker' | 'ucxAddress' | 'ucxConnect' | 'ucxFailed' | 'ucxSend' | 'ucxRecv' | 'ucxPoll' |
  'ucxFlush' | 'ucxProgress' | 'ucxTest' | 'ucxEventFd' | 'ucxArm' | 'wakeFd' | 'signalFd' | 'pollFds' | 'watchFd'>>;

/** Whether `addon` carries everything the UCX path needs. */
export function isUcxAddon(addon: NativeAddon | null): addon is NativeAddon & UcxAddon {
  return addon !== null && addon.ucxPoll !== undefined && addon.pollFds !== undefined;
}

/**
 * How a rank's UCX endpoints treat a failed peer (NBC_UCX_ERR_MODE, job-wide):
 * - `peer` (default): UCP_ERR_HANDLING_MODE_PEER. Operations on a peer that died or whose
 *   link broke fail with NBC_ERR_PEER_FAILED naming it. UCX 1.13 then moves rendezvous
 *   payloads over tcp as active-message fragments copied on arrival.
 * - `none`: UCP_ERR_HANDLING_MODE_NONE, as MPI libraries run UCX unless asked for fault
 *   tolerance. Rendezvous payloads go by put_zcopy straight into the receive buffer: streams of
 *   0.5-1 MiB messages move 1.3-2.5x faster over tcp, single messages of 128 KiB or 4 MiB
 *   slower (put's acknowledgement; BENCHMARKS.md). A link that breaks while both ends live
 *   then aborts the process (UCX's own message) or goes unnoticed. A dead node still stops the job: the
 *   launcher and the engines' links see it.
 */
export type UcxErrMode = 'peer' | 'none';

/**
 * `held` (H_OFFSET) of an RTS header whose payload the sender holds until asked (KIND_UCX_PULL): a small
 * message sent without eager credit (path-ucx.ts), which UCX would otherwise deliver eagerly.
 */
export const UCX_HELD = 1;

const DATA_BIT = 1n << 63n;
const ALL_BITS = (1n << 64n) - 1n;
const PENDING = 1;
const FAILED = 3;

/** Tag of the payload message of rendezvous `token` from world rank `src`. */
export function dataTag(src: number, token: number): bigint {
  return DATA_BIT | (BigInt(src) << 32n) | BigInt(token >>> 0);
}

/** An operation in flight: completes `onDone` (or fails it) when UCX finishes it. */
interface InFlight {
  id: number;
  peer: number;
  what: string;
  onDone: ((err: Error | null) => void) | null;
  /** A header send's own stage buffer, reused once UCX is done with it. */
  stage: Uint8Array | null;
}

/**
 * Header sends UCX has not finished that a rank may have before its next send waits
 * (path-ucx.ts, eager): an eager send completes on return, so without a bound a sender facing
 * a receiver that does not progress would keep one staged copy per message, growing without
 * limit (measured ~10 MB/s with 64-byte sends before the bound; docs/reliability.md, "Load").
 * 256 stages of a 16 KiB eager limit are 4 MiB.
 */
export const UCX_HEADERS_IN_FLIGHT = 256;

export class UcxPath {
  readonly worker: UcxHandle;
  /** This rank's worker address (for the wire-up). */
  readonly address: Uint8Array;
  /** The worker's event fd and this rank's eventfd doorbell (see `sleep`). */
  readonly eventFd: number;
  readonly wakeFd: number;
  /** Where the next header lands: a header and up to `maxEager` payload bytes. */
  readonly inbox: Uint8Array;
  readonly inbox32: Int32Array;
  private out: Uint8Array;
  private out32: Int32Array;
  /** ucxPoll's [length, sender tag, operations completed so far]. */
  private readonly info = new BigUint64Array(3);
  private reapedAt = 0n;
  /** How long the next idle wait may last before looking again (ms): see idleDelayMs. */
  private idleMs = 1;
  private readonly scratch = new BigUint64Array(2);
  private readonly eps: Array<UcxHandle | undefined> = [];
  private addresses: ReadonlyArray<Uint8Array | null> = [];
  private readonly headerTag: bigint;
  private inFlight: InFlight[] = [];
  /** Header sends in `inFlight`, and stage buffers UCX has given back. */
  headersInFlight = 0;
  peakHeadersInFlight = 0;
  private spare: Uint8Array[] = [];

  /**
   * `worldRank` names this worker in error messages and is the tag of its header messages
   * (a node engine passes its own id); `maxEager` bounds the payload of a header message;
   * `errMode` is how its endpoints treat a failed peer.
   */
  constructor(private readonly addon: UcxAddon, readonly worldRank: number, readonly maxEager: number,
    private readonly kind: 'rank' | 'engine' = 'rank', readonly errMode: UcxErrMode = 'peer') {
    const context = addon.ucxInit();
    this.worker = addon.ucxWorker(context);
    this.address = new Uint8Array(addon.ucxAddress(this.worker));
    this.eventFd = addon.ucxEventFd(this.worker);
    this.wakeFd = addon.wakeFd();
    this.inbox = new Uint8Array(HEADER_BYTES + maxEager);
    this.inbox32 = new Int32Array(this.inbox.buffer);
    this.out = new Uint8Array(HEADER_BYTES + maxEager);
    this.out32 = new Int32Array(this.out.buffer);
    this.headerTag = BigInt(worldRank);
  }

  /** The worker addresses of every world rank (null for this node's ranks), from the wire-up. */
  setAddresses(addresses: ReadonlyArray<Uint8Array | null>): void {
    this.addresses = addresses;
  }

  private endpoint(peer: number): UcxHandle {
    let ep = this.eps[peer];
    if (ep === undefined) {
      const address = this.addresses[peer];
      if (address === null || address === undefined) {
        throw new NbcPeerFailedError(`${this.name(this.worldRank)} has no UCX address for ${this.name(peer)}; expected the wire-up to have exchanged every worker address`);
      }
      ep = this.addon.ucxConnect(this.worker, address, this.errMode === 'peer');
      this.eps[peer] = ep;
    }
    return ep;
  }

  /**
   * The header buffer to fill for the next `sendHeader`: a header of HEADER_BYTES, then
   * room for `maxEager` payload bytes. Valid until `sendHeader`.
   */
  get stage(): Uint8Array {
    return this.out;
  }

  get stage32(): Int32Array {
    return this.out32;
  }

  /**
   * Sends the first `length` bytes of the stage to `peer` as a header message; the stage may
   * be refilled at once (a send still in flight keeps its own buffer). True when UCX finished
   * it at once; otherwise `onDone`, if given, runs when it does (or fails).
   */
  sendHeader(peer: number, length: number, onDone: ((err: Error | null) => void) | null = null): boolean {
    const id = this.addon.ucxSend(this.endpoint(peer), this.headerTag, this.out, length);
    if (id < 0) return true;
    // UCX holds on to this buffer until the send completes: the next header gets another one.
    this.inFlight.push({ id, peer, what: 'send a message header', onDone, stage: this.out });
    if (++this.headersInFlight > this.peakHeadersInFlight) this.peakHeadersInFlight = this.headersInFlight;
    this.out = this.spare.pop() ?? new Uint8Array(this.out.byteLength);
    this.out32 = new Int32Array(this.out.buffer);
    return false;
  }

  /**
   * Sends `view` to `peer` as one header message (tag bit 63 clear), the way the engine sends
   * its frames; `onDone` runs once UCX is done with `view` (at once when it copied it).
   */
  sendMessage(peer: number, view: Uint8Array, onDone: (err: Error | null) => void): void {
    const id = this.addon.ucxSend(this.endpoint(peer), this.headerTag, view);
    if (id < 0) onDone(null);
    else this.inFlight.push({ id, peer, what: `send a ${view.byteLength}-byte message`, onDone, stage: null });
  }

  /** The sender tag of the header `poll` returned last (the sender's id, see the constructor). */
  get lastSender(): number {
    return Number(this.info[1]!);
  }

  /** Sends a rendezvous payload; `onDone` runs when it has left `view` (or failed). */
  sendData(peer: number, token: number, view: Uint8Array, onDone: (err: Error | null) => void): void {
    const id = this.addon.ucxSend(this.endpoint(peer), dataTag(this.worldRank, token), view);
    if (id < 0) onDone(null);
    else this.inFlight.push({ id, peer, what: `send ${view.byteLength} bytes`, onDone, stage: null });
  }

  /** Receives the payload of rendezvous `token` from `peer` into `view` (exactly its length). */
  recvData(peer: number, token: number, view: Uint8Array, onDone: (err: Error | null) => void): void {
    const id = this.addon.ucxRecv(this.worker, dataTag(peer, token), ALL_BITS, view);
    this.inFlight.push({ id, peer, what: `receive ${view.byteLength} bytes`, onDone, stage: null });
  }

  /**
   * Progresses the worker and returns the length of the next header, now in `inbox`, or -1.
   * Finished operations are completed first. With `progress` false the worker is not
   * progressed: only a header UCX already holds is returned. Drain loops pass false after a
   * header, so a receive does not pay an idle progress (a system call) before its caller
   * sees it complete.
   */
  poll(progress = true): number {
    // The inbox and info never change: after the first poll the addon keeps them (the short form).
    const n = this.stageGiven ? this.addon.ucxPoll(this.worker, progress) : this.firstPoll(progress);
    if (n >= 0) this.idleMs = 1;
    // Test the operations in flight only when UCX finished some since the last look (an
    // operation that completes inside its start call has no id and is never in the list).
    if (this.inFlight.length > 0 && this.info[2] !== this.reapedAt) {
      this.reapedAt = this.info[2]!;
      this.reap();
    }
    if (n === -2) {
      throw new NbcPeerFailedError(`${this.name(this.worldRank)} received a UCX message longer than ${this.inbox.byteLength} bytes; expected a peer of the same nbcoll build`);
    }
    return n;
  }

  private stageGiven = false;

  private firstPoll(progress: boolean): number {
    const n = this.addon.ucxPoll(this.worker, this.inbox, this.info, progress);
    this.stageGiven = true;
    return n;
  }

  /** Whether operations are in flight (sends not yet out, payloads not yet in). */
  get busy(): boolean {
    return this.inFlight.length > 0;
  }

  private reap(): void {
    const list = this.inFlight;
    let kept = 0;
    for (let i = 0; i < list.length; i++) {
      const op = list[i]!;
      const state = this.addon.ucxTest(op.id, this.scratch);
      if (state === PENDING) {
        list[kept++] = op;
        continue;
      }
      const err = state === FAILED ? this.failure(op) : null;
      if (op.stage !== null) {
        this.headersInFlight--;
        if (this.spare.length < UCX_HEADERS_IN_FLIGHT) this.spare.push(op.stage);
      }
      if (op.onDone !== null) op.onDone(err);
      else if (err !== null) throw err;
    }
    list.length = kept;
  }

  private failure(op: InFlight): Error {
    const ep = this.eps[op.peer];
    const why = ep === undefined ? null : this.addon.ucxFailed(ep);
    return new NbcPeerFailedError(
      `${this.name(this.worldRank)} could not ${op.what} over UCX with ${this.name(op.peer)}: ${why ?? 'the operation failed'}; the peer or its node is gone`);
  }

  /** A worker by id, as messages name it: rank R, or node N's engine. */
  private name(id: number): string {
    return this.kind === 'rank' ? `rank ${id}` : `node ${id}'s engine`;
  }

  /**
   * Sleeps until a UCX event, a ring of this rank's eventfd doorbell (node-shared's `wake`
   * rings it while this rank sleeps), or `timeoutMs`. Returns at once when UCX events are
   * already waiting. The length of the sleep (ms) when it ran out its time, else -1.
   */
  sleep(timeoutMs: number): number {
    if (!this.addon.ucxArm(this.worker)) return -1;
    const ms = Math.min(timeoutMs, this.idleDelayMs());
    return this.addon.pollFds(this.eventFd, this.wakeFd, ms) ? -1 : ms;
  }

  /**
   * The longest an idle wait should trust the event fd alone: UCX's event fd does not report
   * every event (a rendezvous between three workers over tcp was seen to stall without a
   * second look), so waits look again after 1 ms following activity, doubling while nothing
   * arrives, up to 100 ms.
   */
  idleDelayMs(): number {
    const ms = this.idleMs;
    this.idleMs = Math.min(100, ms * 2);
    return ms;
  }

  /**
   * Calls `callback` from the event loop on the next UCX event (async waits); at once (next
   * tick of the loop) when events are already waiting.
   */
  watch(callback: () => void): void {
    if (this.addon.ucxArm(this.worker)) this.addon.watchFd(this.eventFd, callback);
    else setImmediate(callback);
  }

  /** Starts a flush of every send of the worker; `onDone` when all have left. */
  flush(onDone: (err: Error | null) => void): void {
    const id = this.addon.ucxFlush(this.worker);
    if (id < 0) onDone(null);
    else this.inFlight.push({ id, peer: this.worldRank, what: 'flush its sends', onDone, stage: null });
  }
}
