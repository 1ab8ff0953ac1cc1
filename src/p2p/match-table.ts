/**
 * Exact matching for an executor that matches on behalf of several ranks (the offload engine,
 * sched/offload.ts): entries filed by (destination world rank, context), then taken by
 * (source, tag) in arrival order, one unexpected.ts queue per pair. Keys are small integers
 * (Smis), never strings built per message.
 *
 *   byDst: dst -> ctx -> UnexpectedQueue (per source a FIFO)
 *
 * Empty queues and maps are forgotten, so a table holds only what waits.
 */
import { UnexpectedQueue, type Arrived } from './unexpected.js';

export class MatchTable<T extends Arrived> {
  private readonly byDst = new Map<number, Map<number, UnexpectedQueue<T>>>();
  private count = 0;

  /** Entries waiting, in all. */
  get size(): number {
    return this.count;
  }

  /** Files `m` (its source and tag) for destination `dst` on context `ctx`, behind what came before. */
  push(dst: number, ctx: number, m: T): void {
    let byCtx = this.byDst.get(dst);
    if (byCtx === undefined) {
      byCtx = new Map();
      this.byDst.set(dst, byCtx);
    }
    let q = byCtx.get(ctx);
    if (q === undefined) {
      q = new UnexpectedQueue();
      byCtx.set(ctx, q);
    }
    q.push(m);
    this.count++;
  }

  /** Takes the earliest entry for (dst, ctx) from `src` with `tag`, or null. */
  take(dst: number, ctx: number, src: number, tag: number): T | null {
    const byCtx = this.byDst.get(dst);
    if (byCtx === undefined) return null;
    const q = byCtx.get(ctx);
    if (q === undefined) return null;
    const m = q.take(src, tag);
    if (m === null) return null;
    this.count--;
    if (q.size === 0) {
      byCtx.delete(ctx);
      if (byCtx.size === 0) this.byDst.delete(dst);
    }
    return m;
  }

  /** Removes every entry `drop` picks (a finished peer's), returning them. Not for hot paths. */
  removeWhere(drop: (m: T) => boolean): T[] {
    const out: T[] = [];
    for (const [dst, byCtx] of this.byDst) {
      for (const [ctx, q] of byCtx) {
        q.removeWhere(drop, out);
        if (q.size === 0) byCtx.delete(ctx);
      }
      if (byCtx.size === 0) this.byDst.delete(dst);
    }
    this.count -= out.length;
    return out;
  }
}
