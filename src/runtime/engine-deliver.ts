/**
 * The node engine's side of the (engine -> rank) rings: records for this node's ranks, written
 * at once or queued, in order, per rank, while its ring is full (runtime/engine.ts delivers
 * through it; `flush` retries on every poll).
 *
 * Back-pressure towards the links: deliveries waiting for room beyond HIGH_WATER pause reading
 * from every link until they fall below LOW_WATER (TCP then holds senders back). A rank that
 * has returned from its job (shm/layout.ts kFinished) reads nothing more: what waits for it is
 * dropped.
 */
import { copyBytes } from '../shm/copy.js';
import { align8, endpointWord, HEADER_BYTES, kFinished } from '../shm/layout.js';
import { setRecLen } from '../shm/record.js';
import { ringOffset, wake, type NodeShared } from '../shm/node-shared.js';
import { Ring } from '../shm/ring.js';

/**
 * Back-pressure, both ways. A link holding more than HIGH_WATER unsent bytes stops the engine
 * from draining the rings of ranks that send to it (their rings fill and their sends queue in
 * the rank, by reference); deliveries waiting for room in rank rings beyond HIGH_WATER pause
 * reading from every link until they fall below LOW_WATER.
 */
export const HIGH_WATER = 16 << 20;
export const LOW_WATER = 4 << 20;

/**
 * What a record waiting in `pending` costs besides its payload, counted against HIGH_WATER: its
 * header, the two typed arrays and their backing stores, the queue entry. Measured: 10^5 queued
 * 64-byte records held ~1.3 KB each (the slow-receiver load scenario, test/load.test.ts).
 * Counting payload bytes alone let 260,000 small records (~400 MB) queue before reading paused,
 * and a stream of empty messages would never have paused it.
 */
export const PENDING_RECORD_COST = 1024;

/** Bytes a pending record counts for against HIGH_WATER. */
const pendingCost = (payload: Uint8Array | null): number => PENDING_RECORD_COST + (payload === null ? 0 : payload.byteLength);

/** A record waiting for room in an (engine -> rank) ring. */
interface Pending {
  header: Int32Array;
  payload: Uint8Array | null;
}

/** What delivery needs of the node's links: reading paused and resumed. */
export interface Readable {
  pauseReading(): void;
  resumeReading(): void;
}

export class RankDelivery {
  private readonly toRanks: Ring[] = [];
  private readonly pending: Pending[][] = [];
  private pendingCount = 0;
  /** What the records waiting in `pending` cost (pendingCost), in bytes. */
  private pendingBytes = 0;
  private readingPaused = false;

  constructor(shared: NodeShared, private readonly control: Int32Array, private readonly links: Readable | null,
    /** Called when a record had to wait: the engine polls again (its `arm`). */
    private readonly waiting: () => void) {
    const { ranks, ringBytes } = shared.layout;
    for (let r = 0; r < ranks; r++) {
      this.toRanks.push(new Ring(shared.rings, ringOffset(shared, ranks, r), ringBytes, ranks, r));
      this.pending.push([]);
    }
  }

  /** Ranks of the node. */
  get ranks(): number {
    return this.toRanks.length;
  }

  /** Whether records wait for room. */
  get hasPending(): boolean {
    return this.pendingCount > 0;
  }

  /** Writes a record into the rank's ring, or queues it (in order) when the ring is full. */
  deliver(rank: number, header: Int32Array, payload: Uint8Array | null): void {
    if (this.finished(rank)) return;
    const q = this.pending[rank]!;
    if (q.length === 0 && this.write(rank, header, payload)) return;
    // Keep a private copy: the frame buffer may be reused by the decoder.
    q.push({ header, payload: payload === null ? null : new Uint8Array(payload) });
    this.pendingCount++;
    this.pendingBytes += pendingCost(payload);
    if (this.pendingBytes > HIGH_WATER && !this.readingPaused && this.links !== null) {
      this.readingPaused = true;
      this.links.pauseReading();
    }
    this.waiting();
  }

  /** The header's words (a record encoded by shm/record.ts), its ring length, then the payload; publish, then wake the rank. */
  private write(rank: number, header: Int32Array, payload: Uint8Array | null): boolean {
    const ring = this.toRanks[rank]!;
    const n = payload === null ? 0 : payload.byteLength;
    const len = align8(HEADER_BYTES + n);
    const at = ring.reserve(len);
    if (at < 0) return false;
    const w = at >> 2;
    ring.i32.set(header, w);
    setRecLen(ring.i32, w, len);
    if (payload !== null && n > 0) copyBytes(payload, ring.u8, at + HEADER_BYTES, n);
    ring.publish(len);
    wake(this.control, rank);
    return true;
  }

  finished(rank: number): boolean {
    return Atomics.load(this.control, endpointWord(rank, kFinished)) === 1;
  }

  /** Retries the records waiting for room, in order; resumes reading below LOW_WATER. */
  flush(): void {
    for (let r = 0; r < this.pending.length; r++) {
      const q = this.pending[r]!;
      if (q.length > 0 && this.finished(r)) {
        for (const p of q) this.pendingBytes -= pendingCost(p.payload);
        this.pendingCount -= q.length;
        q.length = 0;
        continue;
      }
      let n = 0;
      while (n < q.length && this.write(r, q[n]!.header, q[n]!.payload)) {
        this.pendingBytes -= pendingCost(q[n]!.payload);
        n++;
      }
      if (n > 0) {
        q.splice(0, n);
        this.pendingCount -= n;
      }
    }
    if (this.readingPaused && this.pendingBytes < LOW_WATER) {
      this.readingPaused = false;
      this.links?.resumeReading();
    }
  }
}
