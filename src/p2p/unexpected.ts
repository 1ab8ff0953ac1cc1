/**
 * The unexpected messages of one communicator context: messages that arrived before a receive
 * matched them. One FIFO per source, each message stamped with its arrival number, so
 * - a receive from one source with ANY_TAG takes that source's head in O(1),
 * - a receive with ANY_SOURCE compares the sources' first matches and takes the earliest
 *   arrival (what one list in arrival order would give), in O(sources),
 * - a receive for one tag scans only its source's FIFO.
 * One list for all sources made every receive from a deep backlog splice an array as long as
 * the backlog: quadratic, so a receiver that fell behind by 10^5 messages took minutes to
 * catch up (the slow-receiver load scenario, test/load.test.ts).
 */
import { ANY_SOURCE, ANY_TAG } from './constants.js';

export interface Arrived {
  src: number;
  tag: number;
}

interface Entry<M extends Arrived> {
  m: M;
  /** Arrival number, across sources. */
  seq: number;
}

const tagOf = (e: Entry<Arrived>): number => e.m.tag;

/** A FIFO that also removes from the middle; removing the head is O(1). */
class Fifo<T extends Entry<Arrived>> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(x: T): void {
    this.items.push(x);
  }

  /** Index (from the head) of the first item for `tag`, or -1. */
  findTag(tag: number): number {
    for (let i = this.head; i < this.items.length; i++) if (tagOf(this.items[i]!) === tag) return i - this.head;
    return -1;
  }

  at(i: number): T {
    return this.items[this.head + i]!;
  }

  removeAt(i: number): T {
    const k = this.head + i;
    const x = this.items[k]!;
    if (i === 0) {
      this.items[k] = undefined;
      this.head++;
      if (this.head === this.items.length) {
        this.items = [];
        this.head = 0;
      } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
    } else {
      this.items.splice(k, 1);
    }
    return x;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!;
  }
}

export class UnexpectedQueue<M extends Arrived> {
  private readonly bySource = new Map<number, Fifo<Entry<M>>>();
  private nextSeq = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(m: M): void {
    let f = this.bySource.get(m.src);
    if (f === undefined) {
      f = new Fifo();
      this.bySource.set(m.src, f);
    }
    f.push({ m, seq: this.nextSeq++ });
    this.count++;
  }

  /** The earliest message that a receive for (src, tag) matches, removed; null when none. */
  take(src: number, tag: number): M | null {
    const at = this.locate(src, tag);
    if (at === null) return null;
    this.count--;
    const m = at.fifo.removeAt(at.index).m;
    if (at.fifo.length === 0) this.bySource.delete(m.src);
    return m;
  }

  /** Removes every message `drop` picks, appending them to `into` (per source, in arrival order). */
  removeWhere(drop: (m: M) => boolean, into: M[]): void {
    for (const [src, f] of this.bySource) {
      for (let i = 0; i < f.length;) {
        if (drop(f.at(i).m)) {
          into.push(f.removeAt(i).m);
          this.count--;
        } else {
          i++;
        }
      }
      if (f.length === 0) this.bySource.delete(src);
    }
  }

  /** The earliest message that a receive for (src, tag) would match, left in place; null when none. */
  peek(src: number, tag: number): M | null {
    const at = this.locate(src, tag);
    return at === null ? null : at.fifo.at(at.index).m;
  }

  private locate(src: number, tag: number): { fifo: Fifo<Entry<M>>; index: number } | null {
    if (src !== ANY_SOURCE) {
      const f = this.bySource.get(src);
      if (f === undefined) return null;
      const index = tag === ANY_TAG ? 0 : f.findTag(tag);
      return index < 0 ? null : { fifo: f, index };
    }
    let best: { fifo: Fifo<Entry<M>>; index: number } | null = null;
    let bestSeq = Infinity;
    for (const f of this.bySource.values()) {
      const index = tag === ANY_TAG ? 0 : f.findTag(tag);
      if (index >= 0 && f.at(index).seq < bestSeq) {
        bestSeq = f.at(index).seq;
        best = { fifo: f, index };
      }
    }
    return best;
  }
}
