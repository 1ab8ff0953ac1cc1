/**
 * The simulator's event queue. Events with equal times pop in the order they were pushed,
 * which is what makes a run deterministic; so the order is (time, push order), exactly.
 *
 * Simulated machines are regular: in a 10^5-rank recursive doubling every rank does the same
 * thing at the same instant, and 5 million events fall on a few thousand distinct times. So
 * the queue keeps one bucket per distinct pending time, a FIFO of its events in push order,
 * and a binary min-heap of the buckets by time (times in the heap are distinct: no tie-break
 * needed). Pushing at a time that already has a bucket is an append; popping takes the head
 * of the earliest bucket. A hash table from a time's bits to its bucket finds the bucket.
 * When every event has a time of its own this is a plain heap plus one table probe.
 *
 * Why this is the same order as a heap of (time, sequence): a bucket holds every pending
 * event of its time, in push order; a bucket that empties is dropped, and an event pushed at
 * that time later (only possible at the current time) starts a new bucket, whose events were
 * all pushed after every popped one.
 *
 * Everything is struct-of-arrays in typed arrays with free lists: no object per event.
 */

/** The bits of a double, for hashing (one shared scratch pair of views). */
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

const EMPTY = -1;

export class EventQueue {
  // Events: kind, two arguments, and the next event of the same bucket (or of the free list).
  private evKind: Int32Array = new Int32Array(1024);
  private evA: Int32Array = new Int32Array(1024);
  private evB: Int32Array = new Int32Array(1024);
  private evNext: Int32Array = new Int32Array(1024);
  private evFree = EMPTY;
  private evUsed = 0;
  // Buckets: time, first and last event (bHead links the free list of buckets).
  private bTime: Float64Array = new Float64Array(256);
  private bHead: Int32Array = new Int32Array(256);
  private bTail: Int32Array = new Int32Array(256);
  private bFree = EMPTY;
  private bUsed = 0;
  // The heap of buckets, by time: hTime[i] is bucket hBucket[i]'s time, kept beside it so
  // sifting compares without an indirection.
  private hTime: Float64Array = new Float64Array(256);
  private hBucket: Int32Array = new Int32Array(256);
  private hN = 0;
  // Time -> bucket: open addressing, linear probing, backward-shift deletion; a power of two.
  private tKey: Float64Array = new Float64Array(512);
  private tVal: Int32Array = new Int32Array(512).fill(EMPTY);
  private tMask = 511;
  private tShift = 32 - 9;
  private n = 0;
  /** The popped event's fields (valid after pop()). */
  t = 0;
  k = 0;
  x = 0;
  y = 0;

  get size(): number {
    return this.n;
  }

  push(time: number, kind: number, a: number, b: number): void {
    time += 0; // -0 becomes +0: one bucket (and one hash) for times that compare equal
    let e = this.evFree;
    if (e !== EMPTY) this.evFree = this.evNext[e]!;
    else {
      if (this.evUsed === this.evKind.length) this.growEvents();
      e = this.evUsed++;
    }
    this.evKind[e] = kind;
    this.evA[e] = a;
    this.evB[e] = b;
    this.evNext[e] = EMPTY;
    this.n++;
    const slot = this.find(time);
    const bk = this.tVal[slot]!;
    if (bk !== EMPTY) {
      this.evNext[this.bTail[bk]!] = e;
      this.bTail[bk] = e;
      return;
    }
    // A new time: a bucket holding this event, in the table and in the heap.
    let nb = this.bFree;
    if (nb !== EMPTY) this.bFree = this.bHead[nb]!;
    else {
      if (this.bUsed === this.bTime.length) this.growBuckets();
      nb = this.bUsed++;
    }
    this.bTime[nb] = time;
    this.bHead[nb] = e;
    this.bTail[nb] = e;
    this.tKey[slot] = time;
    this.tVal[slot] = nb;
    if (2 * this.bUsed > this.tMask) this.growTable();
    this.heapInsert(time, nb);
  }

  /** Removes the earliest event into t, k, x, y; false when empty. */
  pop(): boolean {
    if (this.hN === 0) return false;
    const bk = this.hBucket[0]!;
    const e = this.bHead[bk]!;
    this.t = this.hTime[0]!;
    this.k = this.evKind[e]!;
    this.x = this.evA[e]!;
    this.y = this.evB[e]!;
    const next = this.evNext[e]!;
    this.evNext[e] = this.evFree;
    this.evFree = e;
    this.n--;
    if (next !== EMPTY) {
      this.bHead[bk] = next;
    } else {
      // The bucket is empty: out of the heap and the table, back to the free list.
      this.heapRemoveMin();
      this.tableDelete(this.find(this.t));
      this.bHead[bk] = this.bFree;
      this.bFree = bk;
    }
    return true;
  }

  /** The table slot holding `time`, or the empty slot where it would go. */
  private find(time: number): number {
    f64[0] = time;
    const mask = this.tMask;
    const h = Math.imul(u32[0]! ^ Math.imul(u32[1]!, 0x9e3779b1), 0x85ebca6b);
    let i = (h ^ (h >>> 15)) >>> this.tShift;
    for (;;) {
      if (this.tVal[i] === EMPTY || this.tKey[i] === time) return i;
      i = (i + 1) & mask;
    }
  }

  /** Deletes slot i, moving later entries of its probe run back so no lookup meets a hole. */
  private tableDelete(i: number): void {
    const mask = this.tMask;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const v = this.tVal[j]!;
      if (v === EMPTY) break;
      // Where j's key wants to be; it may move to i unless i lies cyclically in (home, j].
      f64[0] = this.tKey[j]!;
      const h = Math.imul(u32[0]! ^ Math.imul(u32[1]!, 0x9e3779b1), 0x85ebca6b);
      const home = (h ^ (h >>> 15)) >>> this.tShift;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        this.tKey[i] = this.tKey[j]!;
        this.tVal[i] = v;
        i = j;
      }
    }
    this.tVal[i] = EMPTY;
  }

  private heapInsert(time: number, bk: number): void {
    if (this.hN === this.hTime.length) {
      this.hTime = grow64(this.hTime, this.hN * 2);
      this.hBucket = grow32(this.hBucket, this.hN * 2);
    }
    let i = this.hN++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pt = this.hTime[p]!;
      if (pt < time) break;
      this.hTime[i] = pt;
      this.hBucket[i] = this.hBucket[p]!;
      i = p;
    }
    this.hTime[i] = time;
    this.hBucket[i] = bk;
  }

  private heapRemoveMin(): void {
    const last = --this.hN;
    if (last === 0) return;
    const time = this.hTime[last]!;
    const bk = this.hBucket[last]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= last) break;
      let ct = this.hTime[c]!;
      if (c + 1 < last) {
        const rt = this.hTime[c + 1]!;
        if (rt < ct) {
          c++;
          ct = rt;
        }
      }
      if (time < ct) break;
      this.hTime[i] = ct;
      this.hBucket[i] = this.hBucket[c]!;
      i = c;
    }
    this.hTime[i] = time;
    this.hBucket[i] = bk;
  }

  private growEvents(): void {
    const cap = this.evKind.length * 2;
    this.evKind = grow32(this.evKind, cap);
    this.evA = grow32(this.evA, cap);
    this.evB = grow32(this.evB, cap);
    this.evNext = grow32(this.evNext, cap);
  }

  private growBuckets(): void {
    const cap = this.bTime.length * 2;
    this.bTime = grow64(this.bTime, cap);
    this.bHead = grow32(this.bHead, cap);
    this.bTail = grow32(this.bTail, cap);
  }

  /** Doubles the table (kept at most half full: buckets in use <= size / 2) and rehashes. */
  private growTable(): void {
    const oldKey = this.tKey;
    const oldVal = this.tVal;
    const size = oldVal.length * 2;
    this.tKey = new Float64Array(size);
    this.tVal = new Int32Array(size).fill(EMPTY);
    this.tMask = size - 1;
    this.tShift--;
    for (let i = 0; i < oldVal.length; i++) {
      if (oldVal[i] === EMPTY) continue;
      const s = this.find(oldKey[i]!);
      this.tKey[s] = oldKey[i]!;
      this.tVal[s] = oldVal[i]!;
    }
  }
}

function grow32(a: Int32Array, cap: number): Int32Array {
  const b = new Int32Array(cap);
  b.set(a);
  return b;
}

function grow64(a: Float64Array, cap: number): Float64Array {
  const b = new Float64Array(cap);
  b.set(a);
  return b;
}
