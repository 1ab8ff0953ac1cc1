/**
 * The simulator's event queue: a binary min-heap of (time, sequence) keys with two integer
 * arguments and a kind, stored struct-of-arrays in typed arrays, so millions of pending events
 * cost no objects. Events with equal times pop in the order they were pushed (the sequence
 * number breaks ties), which is what makes a run deterministic.
 */
export class EventHeap {
  private time: Float64Array = new Float64Array(1024);
  private seq: Float64Array = new Float64Array(1024);
  private kind: Int32Array = new Int32Array(1024);
  private a: Int32Array = new Int32Array(1024);
  private b: Int32Array = new Int32Array(1024);
  private n = 0;
  private counter = 0;
  /** The popped event's fields (valid after pop()). */
  t = 0;
  k = 0;
  x = 0;
  y = 0;

  get size(): number {
    return this.n;
  }

  push(time: number, kind: number, a: number, b: number): void {
    if (this.n === this.time.length) this.grow();
    let i = this.n++;
    const s = this.counter++;
    // Sift up: move parents down until the new key fits.
    while (i > 0) {
      const p = (i - 1) >> 1;
      const pt = this.time[p]!;
      if (pt < time || (pt === time && this.seq[p]! < s)) break;
      this.move(p, i);
      i = p;
    }
    this.time[i] = time;
    this.seq[i] = s;
    this.kind[i] = kind;
    this.a[i] = a;
    this.b[i] = b;
  }

  /** Removes the earliest event into t, k, x, y; false when empty. */
  pop(): boolean {
    if (this.n === 0) return false;
    this.t = this.time[0]!;
    this.k = this.kind[0]!;
    this.x = this.a[0]!;
    this.y = this.b[0]!;
    const last = --this.n;
    if (last === 0) return true;
    const time = this.time[last]!;
    const s = this.seq[last]!;
    const kind = this.kind[last]!;
    const a = this.a[last]!;
    const b = this.b[last]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= last) break;
      const r = c + 1;
      if (r < last && (this.time[r]! < this.time[c]! || (this.time[r] === this.time[c] && this.seq[r]! < this.seq[c]!))) c = r;
      const ct = this.time[c]!;
      if (time < ct || (time === ct && s < this.seq[c]!)) break;
      this.move(c, i);
      i = c;
    }
    this.time[i] = time;
    this.seq[i] = s;
    this.kind[i] = kind;
    this.a[i] = a;
    this.b[i] = b;
    return true;
  }

  private move(from: number, to: number): void {
    this.time[to] = this.time[from]!;
    this.seq[to] = this.seq[from]!;
    this.kind[to] = this.kind[from]!;
    this.a[to] = this.a[from]!;
    this.b[to] = this.b[from]!;
  }

  private grow(): void {
    const cap = this.time.length * 2;
    const f = (x: Float64Array): Float64Array => { const y = new Float64Array(cap); y.set(x); return y; };
    const i = (x: Int32Array): Int32Array => { const y = new Int32Array(cap); y.set(x); return y; };
    this.time = f(this.time);
    this.seq = f(this.seq);
    this.kind = i(this.kind);
    this.a = i(this.a);
    this.b = i(this.b);
  }
}
