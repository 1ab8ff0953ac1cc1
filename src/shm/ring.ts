/**
 * Single-producer / single-consumer record rings over a SharedArrayBuffer.
 *
 * The data area is a sequence of slots, each a whole number of 64-byte cache lines: an
 * 8-byte stamp, then the record. Head and tail are free-running Int32 byte counters
 * (wrapping is fine: the capacity is a power of two below 2^31, so `(tail - head) | 0` is
 * always the bytes in use).
 *
 * Why stamps: the consumer learns that a record is there by reading the record's own first
 * cache line, the line it has to read anyway, instead of a separate tail word. A small
 * message then costs the consumer one cache-line transfer, not two in a row, and the
 * producer touches no line but the slot's own: it keeps a private copy of the consumer's
 * head and reads the shared one only when that copy says the ring is full.
 *
 * The stamp of a slot is 0 while empty, the slot's length once published, or minus the
 * length of a PAD (filler to the end of the data area, skipped). The invariant that makes
 * stale bytes from earlier laps harmless: the stamp at the producer's tail is always 0. The
 * producer keeps it so by zeroing the stamp after a slot (plain store) before publishing the
 * slot (`Atomics.store` of its stamp, sequentially consistent, so whoever sees the stamp also
 * sees the zero and every byte of the record). The consumer copies a record out, or is done
 * reading it in place, before it stores the new head, so the producer never overwrites bytes
 * still being read.
 */
import { RING_HEADER_BYTES, kRingHead, kRingProducerWaiting } from './layout.js';

/** Bytes of a slot before its record. */
export const STAMP_BYTES = 8;
const SLOT_ALIGN = 64;

/** Bytes a record of `len` bytes occupies in a ring, stamp and alignment included. */
export function slotBytes(len: number): number {
  return (len + STAMP_BYTES + SLOT_ALIGN - 1) & ~(SLOT_ALIGN - 1);
}

export class Ring {
  readonly i32: Int32Array;
  readonly u8: Uint8Array;
  /** Byte offset of the data area in the buffer. */
  readonly data: number;
  readonly capacity: number;
  readonly mask: number;
  private readonly headIdx: number;
  private readonly waitIdx: number;
  /** Producer: its tail. Consumer: its head. */
  private pos = 0;
  /** Producer: the consumer's head as last read. */
  private headSeen = 0;

  constructor(buffer: SharedArrayBuffer, base: number, capacity: number,
    readonly from: number, readonly to: number) {
    if ((capacity & (capacity - 1)) !== 0 || capacity < 1024) {
      throw new RangeError(`ring capacity must be a power of two >= 1024, got ${capacity}`);
    }
    if (base % SLOT_ALIGN !== 0) throw new RangeError(`ring base must be ${SLOT_ALIGN}-byte aligned, got ${base}`);
    this.i32 = new Int32Array(buffer);
    this.u8 = new Uint8Array(buffer);
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.data = base + RING_HEADER_BYTES;
    const w = base >> 2;
    this.headIdx = w + kRingHead;
    this.waitIdx = w + kRingProducerWaiting;
  }

  // ---- producer side ---------------------------------------------------------------

  /** Largest record that can ever fit. */
  get maxRecord(): number {
    return (this.capacity >> 1) - SLOT_ALIGN;
  }

  /**
   * Reserves room for a record of `len` bytes. Returns the absolute byte offset to write the
   * record at (8-byte aligned, and its payload after a 48-byte header too), or -1 when the
   * ring is full; in that case the producer-waiting flag is raised so the consumer rings the
   * producer's doorbell when it frees space.
   */
  reserve(len: number): number {
    // The common case first, small enough for the eager send to inline within V8's budget:
    // the slot fits before the end and the head last seen leaves room (as below, without a PAD).
    const slot = slotBytes(len);
    const at = this.pos & this.mask;
    if (this.capacity - at >= slot && this.capacity - ((this.pos - this.headSeen) | 0) >= slot + SLOT_ALIGN) {
      return this.data + at + STAMP_BYTES;
    }
    return this.reserveSlow(slot);
  }

  /** `reserve` when the slot wraps or the head must be read again. */
  private reserveSlow(slot: number): number {
    const tail = this.pos;
    const at = tail & this.mask;
    const toEnd = this.capacity - at;
    // Room for the slot (after a PAD when it does not fit before the end) and for the zero
    // stamp after it.
    const need = (toEnd < slot ? toEnd + slot : slot) + SLOT_ALIGN;
    if (this.capacity - ((tail - this.headSeen) | 0) < need) {
      this.headSeen = Atomics.load(this.i32, this.headIdx);
      if (this.capacity - ((tail - this.headSeen) | 0) < need) {
        // Raise the flag, then look again: either we see the consumer's new head, or the
        // consumer sees the flag after storing it (sequential consistency), never neither.
        Atomics.store(this.i32, this.waitIdx, 1);
        this.headSeen = Atomics.load(this.i32, this.headIdx);
        if (this.capacity - ((tail - this.headSeen) | 0) < need) return -1;
        Atomics.store(this.i32, this.waitIdx, 0);
      }
    }
    if (toEnd < slot) {
      this.i32[this.data >> 2] = 0;
      Atomics.store(this.i32, (this.data + at) >> 2, -toEnd);
      this.pos = (tail + toEnd) | 0;
      return this.data + STAMP_BYTES;
    }
    return this.data + at + STAMP_BYTES;
  }

  /** Publishes the record of `len` bytes written at the reserved offset. */
  publish(len: number): void {
    const slot = slotBytes(len);
    const tail = this.pos;
    const next = (tail + slot) | 0;
    this.i32[(this.data + (next & this.mask)) >> 2] = 0;
    Atomics.store(this.i32, (this.data + (tail & this.mask)) >> 2, slot);
    this.pos = next;
  }

  // ---- consumer side ---------------------------------------------------------------

  /** Absolute byte offset of the next record, or -1 when the ring is empty. PADs are skipped. */
  peek(): number {
    for (;;) {
      const off = this.data + (this.pos & this.mask);
      const stamp = Atomics.load(this.i32, off >> 2);
      if (stamp > 0) return off + STAMP_BYTES;
      if (stamp === 0) return -1;
      this.pos = (this.pos - stamp) | 0;
    }
  }

  /** True when the ring has at least one record (cheap; for wait loops). */
  hasData(): boolean {
    return Atomics.load(this.i32, (this.data + (this.pos & this.mask)) >> 2) !== 0;
  }

  /**
   * Frees the record of `len` bytes just consumed. Returns true when the producer was waiting
   * for space and must be woken by the caller.
   */
  release(len: number): boolean {
    this.pos = (this.pos + slotBytes(len)) | 0;
    Atomics.store(this.i32, this.headIdx, this.pos);
    if (Atomics.load(this.i32, this.waitIdx) !== 0) {
      Atomics.store(this.i32, this.waitIdx, 0);
      return true;
    }
    return false;
  }
}
