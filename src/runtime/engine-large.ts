/**
 * Large point-to-point messages between node engines: the push credit and the pull protocol
 * (docs/protocol.md). A rank's RTS for another node either pushes the payload's fragments at
 * once, within PUSH_CREDIT_BYTES per node pair, or crosses alone, its payload left in the
 * sending rank's arena slice until the receiving engine PULLs it. Fragments (net/fragment.ts)
 * are views of the sender's slice, reassembled in the receiving engine's slice and handed to
 * the rank: pushed, as an RTS naming them (its ACK returns the credit, KIND_CREDIT); pulled,
 * as the DATA the rank's pull waits for.
 *
 *   sender engine                                  receiver engine
 *   RTS (rank) -- credit left --> FRAG ... FRAG  -->  reassembly --> RTS (rank) .. ACK --> CREDIT
 *              -- no credit ----> RTS alone      -->  RTS (rank) .. PULL (rank)
 *                  outgoing <----------------------- PULL (room reserved, waitingPulls in order)
 *                  FRAG ... FRAG ------------------>  reassembly --> DATA (rank) .. ACK
 *
 * So a receiver that computes holds at most the credit per sending node, and its senders wait
 * (their sends complete when pulled) instead of filling its memory.
 */
import type { Buffer } from 'node:buffer';
import { NbcInternalError, NbcNoMemError } from '../errors.js';
import { forEachFragment } from '../net/fragment.js';
import type { Placement } from '../p2p/transport.js';
import { copyAt } from '../shm/copy.js';
import { allocationBytes, type SliceAllocator } from '../shm/arena.js';
import { HEADER_BYTES, HEADER_WORDS } from '../shm/layout.js';
import {
  creditBytes, encodeAck, encodeCredit, encodeData, encodeFrag, encodePull, fragMessage, fragOffset, fragPushed, msgBytes, pullMessage,
  recArrive, recDst, rtsOffset, rtsSlice, rtsToken, setRecArrive, setRtsLocal, setRtsRemote,
} from '../shm/record.js';
import { isAfter, type Wire } from '../p2p/wire.js';

/**
 * Bytes of large messages a sending engine may push to one other node before the receiver has
 * taken them (at most an eighth of the arena slice per node): within it a large message costs
 * no round trip more than before the pull protocol; past it the receiver pulls, so a receiver
 * that does not take its messages holds at most this much per sending node in its arena.
 */
export const PUSH_CREDIT_BYTES = 8 << 20;
/**
 * What a pushed message costs the push credit: its room in the receiving arena, plus what the
 * receiving rank keeps of it while no receive takes it (its RTS record, ~200 bytes of heap),
 * so that many tiny pushed payloads (small sends that ran out of eager credit) are bounded in
 * number as well as in bytes.
 */
export const PUSH_MESSAGE_COST = 256;
function pushCost(bytes: number): number {
  return allocationBytes(bytes) + PUSH_MESSAGE_COST;
}
/** A fragment pushed within the sender's credit (not pulled): its `pushed` (shm/record.ts encodeFrag). */
const PUSHED = 1;

/** A payload arriving in the engine's slice: pulled for a matched receive, or pushed. */
interface Reassembly {
  rank: number;
  /** The rank's pull id (its DATA record names it); -1: pushed, handed over as an RTS. */
  pull: number;
  header: Int32Array | null;
  bytes: number;
  offset: number;
  received: number;
}

/** A rank's pull waiting for room in the engine's slice. */
interface WaitingPull {
  rank: number;
  pull: number;
  node: number;
  id: number;
  bytes: number;
  srcWorld: number;
  /** The rank's stamp of its PULL (emulated network), or 0: stamp it when it leaves. */
  stamp: number;
}

/** An RTS sent to another node whose payload waits in the sending rank's slice until pulled. */
interface Outgoing {
  rank: number;
  /** The rank's RTS (its destination: the receiver), the template of the fragments. */
  header: Int32Array;
  node: number;
}

/** What the protocol needs of its engine. */
export interface LargeHost {
  readonly placement: Placement;
  /** The engine's endpoint: its arena slice holds what arrives. */
  readonly ep: number;
  readonly slices: Buffer[];
  readonly allocator: SliceAllocator;
  /** Sends one FRAME_MSG to another node's engine; `onWritten` once the socket took it. */
  sendMsg(node: number, parts: readonly Uint8Array[], onWritten?: () => void): void;
  /** Hands a record to a rank of this node (engine-deliver.ts). */
  deliver(rank: number, header: Int32Array, payload: Uint8Array | null): void;
  /** Runs a callback from the links, failing the node on a throw. */
  guard(fn: () => void): void;
  /**
   * The emulated network (p2p/wire.ts), or null. Under it the engine never waits for the
   * wire: it stamps what it sends with the modelled arrival (a payload leaves no earlier than
   * the PULL that asked for it arrived), and the ranks hold what it hands them until then.
   */
  readonly wire: Wire | null;
}

export class LargeMessages {
  /** Payloads arriving (pulled or pushed), by `arrivalKey` (sender node, message id); pulls waiting for arena room, in order. */
  private readonly reassembly = new Map<number, Reassembly>();
  private readonly waitingPulls: WaitingPull[] = [];
  /** Sent RTSs whose payload waits for the receiving node's PULL, by message id. */
  private readonly outgoing = new Map<number, Outgoing>();
  /** Engine-held payloads waiting for the rank's ACK: token -> slice offset, and the node owed credit for it (-1: none). */
  private readonly held = new Map<number, { offset: number; bytes: number; creditTo: number }>();
  /** Push credit left towards each node (PUSH_CREDIT_BYTES at most). */
  private readonly pushCredit: number[] = [];
  private readonly pushCreditMax: number;
  private nextToken = 1;
  private nextMessageId = 1;

  constructor(private readonly host: LargeHost, nodes: number) {
    this.pushCreditMax = Math.min(PUSH_CREDIT_BYTES, Math.floor(host.allocator.size / 8 / nodes));
    for (let n = 0; n < nodes; n++) this.pushCredit.push(this.pushCreditMax);
  }

  // ---- records from this node's ranks ---------------------------------------------------

  /**
   * A rank's RTS for node `node`: within credit the fragments go now; else the RTS crosses
   * alone and the payload stays in the rank's slice until the receiving node pulls it
   * (`onPull`). Either way the rank's send completes once the socket has taken the last fragment.
   */
  rts(rank: number, rts: Int32Array, node: number): void {
    const id = this.nextMessageId++;
    const out = { rank, header: rts, node };
    const room = pushCost(msgBytes(rts, 0));
    if (room <= this.pushCredit[node]!) {
      this.pushCredit[node]! -= room;
      this.stream(id, out, PUSHED);
      return;
    }
    this.outgoing.set(id, out);
    const header = new Int32Array(rts);
    setRtsRemote(header, 0, this.host.placement.nodeId, id);
    this.host.sendMsg(node, [new Uint8Array(header.buffer)]);
  }

  /** A rank's ACK of a payload this engine held for it: the room is freed, credit returned. */
  ack(token: number): void {
    const h = this.held.get(token);
    if (h === undefined) throw new NbcInternalError(`engine got ACK for unknown token ${token}`);
    this.held.delete(token);
    this.host.allocator.free(h.offset);
    if (h.creditTo >= 0) this.returnCredit(h.creditTo, pushCost(h.bytes));
    if (this.waitingPulls.length > 0) this.startWaitingPulls();
  }

  /**
   * Rank `rank` of this node matched a receive to message `id` of node `node` (`bytes` long,
   * from world rank `srcWorld`): reserve room for it in this engine's slice and ask for it, or
   * wait, in order, for room that ACKs free. A payload larger than the whole slice never fits.
   */
  pull(rank: number, pull: number, node: number, id: number, bytes: number, srcWorld: number, stamp = 0): void {
    const p = this.host.placement;
    const allocator = this.host.allocator;
    if (!(srcWorld >= 0 && srcWorld < p.worldSize) || p.nodeOfRank[srcWorld] !== node || node === p.nodeId || !(bytes >= 0)) {
      throw new NbcInternalError(`rank ${rank} of node ${p.nodeId} pulled message ${id} of node ${node} (rank ${srcWorld}, ${bytes} bytes), which no node offered`);
    }
    if (bytes > allocator.size) {
      throw new NbcNoMemError(
        `Cannot receive a ${bytes}-byte message from rank ${srcWorld} on node ${p.nodeId}: the engine's arena slice holds ` +
        `${allocator.size} bytes in all; expected a larger NBC_ARENA_MB`);
    }
    const w: WaitingPull = { rank, pull, node, id, bytes, srcWorld, stamp };
    if (this.waitingPulls.length > 0 || !this.startPull(w)) this.waitingPulls.push(w);
  }

  private startPull(w: WaitingPull): boolean {
    const off = this.host.allocator.alloc(w.bytes);
    if (off < 0) return false;
    this.reassembly.set(this.arrivalKey(w.node, w.id), { rank: w.rank, pull: w.pull, header: null, bytes: w.bytes, offset: off, received: 0 });
    // Engine to engine: only the sender, the message id and the size count.
    const header = new Int32Array(HEADER_WORDS);
    encodePull(header, 0, w.bytes, w.srcWorld, w.id, -1, -1, -1);
    const wire = this.host.wire;
    if (wire !== null) setRecArrive(header, 0, w.stamp !== 0 ? w.stamp : wire.stamp(w.node, HEADER_BYTES));
    this.host.sendMsg(w.node, [new Uint8Array(header.buffer)]);
    return true;
  }

  /** A number per (sending node, its message id): ids are Int32 words, so the product stays exact. */
  private arrivalKey(node: number, id: number): number {
    return id * this.pushCredit.length + node;
  }

  private startWaitingPulls(): void {
    const q = this.waitingPulls;
    let n = 0;
    // A pull that waited for room leaves now: stamped now, not when the rank asked.
    while (n < q.length && ((q[n]!.stamp = 0), this.startPull(q[n]!))) n++;
    if (n > 0) q.splice(0, n);
  }

  // ---- frames from other engines --------------------------------------------------------

  /** Node `from` gives back push credit (KIND_CREDIT). */
  onCredit(from: number, header: Int32Array, frameBytes: number): void {
    const n = creditBytes(header, 0);
    if (!(n > 0) || frameBytes !== HEADER_BYTES || !(from >= 0 && from < this.pushCredit.length)) throw new NbcInternalError(`malformed credit frame from node ${from}`);
    this.pushCredit[from] = Math.min(this.pushCreditMax, this.pushCredit[from]! + n);
  }

  /** Node `from` pulls message `id` of a rank of this node: stream its payload there. */
  onPull(from: number, header: Int32Array, frameBytes: number): void {
    const id = pullMessage(header, 0);
    const out = this.outgoing.get(id);
    if (out === undefined || out.node !== from || frameBytes !== HEADER_BYTES) {
      throw new NbcInternalError(`node ${from} pulled message ${id}, which this node did not offer it`);
    }
    this.outgoing.delete(id);
    this.stream(id, out, 0, recArrive(header, 0));
  }

  /** A fragment from node `from` for rank `local` of this node: into its reassembly, handed over when whole. */
  onFragment(from: number, local: number, header: Int32Array, body: Buffer): void {
    const key = this.arrivalKey(from, fragMessage(header, 0));
    const at = fragOffset(header, 0);
    const bytes = msgBytes(header, 0);
    const n = body.byteLength - HEADER_BYTES;
    let r = this.reassembly.get(key);
    if (r === undefined && fragPushed(header, 0) === PUSHED && at === 0 && bytes >= 0) {
      r = this.pushed(from, local, header, bytes);
      this.reassembly.set(key, r);
    }
    if (r === undefined) throw new NbcInternalError(`fragment at ${at} of a message from node ${from} that nobody pulled`);
    if (at !== r.received || r.received + n > r.bytes || bytes !== r.bytes || local !== r.rank) {
      throw new NbcInternalError(`out-of-order or mismatched fragment from node ${from}`);
    }
    copyAt(body, HEADER_BYTES, this.host.slices[this.host.ep]!, r.offset + at, n);
    r.received += n;
    if (r.received < r.bytes) return;
    // Pushed: handed to the rank as an RTS naming it, whose ACK returns the credit.
    // Pulled: handed over as the DATA the rank's pull waits for.
    this.reassembly.delete(key);
    const token = this.nextToken++;
    let record = r.header;
    if (record !== null) {
      setRtsLocal(record, 0, r.bytes, token, this.host.ep, r.offset);
    } else {
      record = new Int32Array(HEADER_WORDS);
      encodeData(record, 0, r.pull, r.bytes, token, this.host.ep, r.offset);
    }
    this.held.set(token, { offset: r.offset, bytes: r.bytes, creditTo: r.header !== null ? from : -1 });
    // The rank takes it when the wire delivers its last byte (the last fragment's stamp).
    if (this.host.wire !== null) setRecArrive(record, 0, recArrive(header, 0));
    this.host.deliver(r.rank, record, null);
  }

  /** Room for a message pushed within the sender's credit: promised, so no room is a fatal error. */
  private pushed(from: number, local: number, header: Int32Array, bytes: number): Reassembly {
    const allocator = this.host.allocator;
    const off = allocator.alloc(bytes);
    if (off < 0) {
      throw new NbcNoMemError(
        `Cannot receive a ${bytes}-byte message for rank ${recDst(header, 0)} from node ${from}: the engine's arena slice has ` +
        `${allocator.available} bytes free; expected a larger NBC_ARENA_MB`);
    }
    return { rank: local, pull: -1, header, bytes, offset: off, received: 0 };
  }

  /**
   * Streams a pulled (or pushed) payload: fragments are views of the sending rank's slice (no
   * copy), which stays untouched until the rank's ACK, sent once the socket has taken the last
   * fragment. Under an emulated network the payload leaves the node's adapter no earlier than
   * tick `after` (the PULL's arrival); every fragment carries the tick its last byte arrives,
   * and the ACK the tick the adapter has sent it (a send completes when the wire has taken it).
   */
  private stream(id: number, out: Outgoing, aux = 0, after = 0): void {
    const rts = out.header;
    const bytes = msgBytes(rts, 0);
    const slice = rtsSlice(rts, 0);
    const offset = rtsOffset(rts, 0);
    const token = rtsToken(rts, 0);
    const data = this.host.slices[slice]!;
    const wire = this.host.wire;
    let sent = 0;
    let arrive = 0;
    if (wire !== null) {
      const now = wire.now();
      sent = wire.take(after !== 0 && isAfter(after, now) ? after : now, bytes + HEADER_BYTES);
      arrive = (sent + wire.latencyTo(out.node)) | 0 || 1;
    }
    const acked = (): void => this.host.guard(() => this.deliverAck(out.rank, token, slice, sent));
    forEachFragment(bytes, (done, n, last) => {
      const header = new Int32Array(rts);
      encodeFrag(header, 0, HEADER_BYTES + n, id, done, aux);
      if (arrive !== 0) setRecArrive(header, 0, arrive);
      this.host.sendMsg(out.node, [new Uint8Array(header.buffer), data.subarray(offset + done, offset + done + n)], last ? acked : undefined);
    });
  }

  /** Gives `bytes` of push credit back to `node` (a pushed payload's room was freed). */
  private returnCredit(node: number, bytes: number): void {
    const header = new Int32Array(HEADER_WORDS);
    encodeCredit(header, 0, bytes);
    this.host.sendMsg(node, [new Uint8Array(header.buffer)]);
  }

  private deliverAck(rank: number, token: number, slice: number, sent: number): void {
    const header = new Int32Array(HEADER_WORDS);
    encodeAck(header, 0, token, slice);
    if (sent !== 0) setRecArrive(header, 0, sent);
    this.host.deliver(rank, header, null);
  }
}
