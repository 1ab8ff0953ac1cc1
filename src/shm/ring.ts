/**
 * Single-producer / single-consumer byte rings over a SharedArrayBuffer.
 *
 * Head and tail are free-running Int32 byte counters (wrapping is fine: the capacity is a
 * power of two below 2^31, so `(tail - head) | 0` is always the bytes in use). A record is
 * contiguous; when it does not fit before the end of the data area the producer fills the
 * rest with a PAD record and starts at offset 0.
 *
 * Ordering argument (publish, then notify): the producer writes the record with plain stores,
 * then `Atomics.store`s the tail. Atomics are sequentially consistent and synchronise-with the
 * consumer's `Atomics.load` of the tail, so every byte of the record is visible once the new
 * tail is. Symmetrically the consumer copies the record out before it stores the new head, so
 * the producer never overwrites bytes still being read.
 */
import {
  H_KIND, H_LEN, KIND_PAD, RING_HEADER_BYTES, kRingHead, kRingProducerWaiting, kRingTail,
} from './layout.js';

export class Ring {
  readonly i32: Int32Array;
  readonly u8: Uint8Array;
  /** Byte offset of the data area in the buffer. */
  readonly data: number;
  readonly capacity: number;
  readonly mask: number;
  private readonly headIdx: number;
  private readonly tailIdx: number;
  private readonly waitIdx: number;
  /** Producer's private copy of the tail; consumer's private copy of the head. */
  private pos = 0;

  constructor(buffer: SharedArrayBuffer, base: number, capacity: number,
    readonly from: number, readonly to: number) {
    if ((capacity & (capacity - 1)) !== 0 || capacity < 1024) {
      throw new RangeError(`ring capacity must be a power of two >= 1024, got ${capacity}`);
    }
    this.i32 = new Int32Array(buffer);
    this.u8 = new Uint8Array(buffer);
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.data = base + RING_HEADER_BYTES;
    const w = base >> 2;
    this.headIdx = w + kRingHead;
    this.tailIdx = w + kRingTail;
    this.waitIdx = w + kRingProducerWaiting;
  }

  // ---- producer side ---------------------------------------------------------------

  /** Largest record that can ever fit. */
  get maxRecord(): number {
    return this.capacity >> 1;
  }

  /**
   * Reserves `len` contiguous bytes (a multiple of 8). Returns the absolute byte offset to
   * write the record at, or -1 when the ring is full; in that case the producer-waiting flag
   * is raised so the consumer rings the producer's doorbell when it frees space.
   */
  reserve(len: number): number {
    const tail = this.pos;
    const at = tail & this.mask;
    const toEnd = this.capacity - at;
    const need = toEnd < len ? toEnd + len : len;
    if (this.capacity - ((tail - Atomics.load(this.i32, this.headIdx)) | 0) < need) {
      // Raise the flag, then look again: either we see the consumer's new head, or the
      // consumer sees the flag after storing it (sequential consistency), never neither.
      Atomics.store(this.i32, this.waitIdx, 1);
      if (this.capacity - ((tail - Atomics.load(this.i32, this.headIdx)) | 0) < need) return -1;
      Atomics.store(this.i32, this.waitIdx, 0);
    }
    if (toEnd < len) {
      const w = (this.data + at) >> 2;
      this.i32[w + H_KIND] = KIND_PAD;
      this.i32[w + H_LEN] = toEnd;
      this.pos = (tail + toEnd) | 0;
      return this.data;
    }
    return this.data + at;
  }

  /** Publishes the record written at the reserved offset. */
  publish(len: number): void {
    this.pos = (this.pos + len) | 0;
    Atomics.store(this.i32, this.tailIdx, this.pos);
  }

  // ---- consumer side ---------------------------------------------------------------

  /** Absolute byte offset of the next record, or -1 when the ring is empty. PADs are skipped. */
  peek(): number {
    for (;;) {
      const head = this.pos;
      if (Atomics.load(this.i32, this.tailIdx) === head) return -1;
      const off = this.data + (head & this.mask);
      const w = off >> 2;
      if (this.i32[w + H_KIND] !== KIND_PAD) return off;
      this.pos = (head + this.i32[w + H_LEN]!) | 0;
      Atomics.store(this.i32, this.headIdx, this.pos);
    }
  }

  /** True when the ring has at least one record (cheap; for wait loops). */
  hasData(): boolean {
    return Atomics.load(this.i32, this.tailIdx) !== this.pos;
  }

  /**
   * Frees the record just consumed. Returns true when the producer was waiting for space and
   * must be woken by the caller.
   */
  release(len: number): boolean {
    this.pos = (this.pos + len) | 0;
    Atomics.store(this.i32, this.headIdx, this.pos);
    if (Atomics.load(this.i32, this.waitIdx) !== 0) {
      Atomics.store(this.i32, this.waitIdx, 0);
      return true;
    }
    return false;
  }
}
