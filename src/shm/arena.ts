/**
 * Allocator for one endpoint's arena slice. Only the owning endpoint calls alloc and free,
 * so no locking is needed; other endpoints only read and write the bytes it hands out.
 * First fit over an address-ordered free list, coalescing on free, 64-byte alignment
 * (a cache line, and enough for every typed array).
 */
import { NbcInternalError } from '../errors.js';

const ALIGN = 64;

/**
 * The room an allocation of `bytes` takes (at least one 64-byte unit, even for none). In
 * floating point, not 32-bit bit operations: a request of 2 GiB or more must not wrap to a
 * small one.
 */
export function allocationBytes(bytes: number): number {
  return Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
}

export class SliceAllocator {
  /** Free blocks as parallel arrays of offsets and lengths, sorted by offset. */
  private offs: number[];
  private lens: number[];
  private readonly live = new Map<number, number>();
  private freeBytes: number;

  constructor(readonly size: number) {
    this.offs = [0];
    this.lens = [size];
    this.freeBytes = size;
  }

  get available(): number {
    return this.freeBytes;
  }

  /** Returns the byte offset of `bytes` bytes, or -1 when no block fits. */
  alloc(bytes: number): number {
    const len = allocationBytes(bytes);
    for (let i = 0; i < this.offs.length; i++) {
      const blockLen = this.lens[i]!;
      if (blockLen < len) continue;
      const off = this.offs[i]!;
      if (blockLen === len) {
        this.offs.splice(i, 1);
        this.lens.splice(i, 1);
      } else {
        this.offs[i] = off + len;
        this.lens[i] = blockLen - len;
      }
      this.live.set(off, len);
      this.freeBytes -= len;
      return off;
    }
    return -1;
  }

  free(off: number): void {
    const len = this.live.get(off);
    if (len === undefined) throw new NbcInternalError(`arena free of unknown offset ${off}`);
    this.live.delete(off);
    this.freeBytes += len;
    // Binary search for the insertion point.
    let lo = 0;
    let hi = this.offs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.offs[mid]! < off) lo = mid + 1;
      else hi = mid;
    }
    const prev = lo - 1;
    const joinsPrev = prev >= 0 && this.offs[prev]! + this.lens[prev]! === off;
    const joinsNext = lo < this.offs.length && off + len === this.offs[lo];
    if (joinsPrev && joinsNext) {
      this.lens[prev]! += len + this.lens[lo]!;
      this.offs.splice(lo, 1);
      this.lens.splice(lo, 1);
    } else if (joinsPrev) {
      this.lens[prev]! += len;
    } else if (joinsNext) {
      this.offs[lo] = off;
      this.lens[lo]! += len;
    } else {
      this.offs.splice(lo, 0, off);
      this.lens.splice(lo, 0, len);
    }
  }

  /** Size of the live block at `off`, or undefined. */
  sizeOf(off: number): number | undefined {
    return this.live.get(off);
  }
}
