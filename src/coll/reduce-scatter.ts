/**
 * Reduce-scatter: the element-wise reduction of every rank's SEND vector is split into blocks
 * (counts[i] bytes for rank i; equal blocks for reduceScatterBlock) and rank i gets block i.
 *
 * - reduceScatterv: k-nomial reduce to rank 0 (rank order, any op) into TMP, then rank 0 sends
 *   each rank its block.
 * - ring (commutative): ring reduce-scatter on the p blocks; each block's final value is
 *   computed once, by its owner.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import { knomialReduceInto } from './reduce.js';
import type { CollShape } from './shape.js';

function layout(s: CollShape): { off: Int32Array; total: number } {
  const c = s.counts!;
  const off = new Int32Array(s.size + 1);
  for (let i = 0; i < s.size; i++) off[i + 1] = off[i]! + c[i]!;
  return { off, total: off[s.size]! };
}

export function reduceThenScatter(s: CollShape): Schedule {
  const b = new ScheduleBuilder(`reduce-scatter/reduce-scatterv(k=${s.radix})`);
  const { off, total } = layout(s);
  const c = s.counts!;
  const full = b.tmpAlloc(total);
  knomialReduceInto(b, { ...s, root: 0, bytes: total }, s.radix, { buf: TMP, offset: full });
  if (s.rank === 0) {
    for (let r = 1; r < s.size; r++) if (c[r]! > 0) b.send(r, { buf: TMP, offset: full + off[r]!, bytes: c[r]! });
    b.copy({ buf: TMP, offset: full, bytes: c[0]! }, { buf: RECV, offset: 0 });
  } else if (c[s.rank]! > 0) {
    b.recv(0, { buf: RECV, offset: 0, bytes: c[s.rank]! });
  }
  b.round();
  return b.build();
}

export function ring(s: CollShape): Schedule {
  const b = new ScheduleBuilder('reduce-scatter/ring');
  const p = s.size;
  const { off, total } = layout(s);
  const c = s.counts!;
  const acc = b.tmpAlloc(total);
  let maxLen = 0;
  for (let i = 0; i < p; i++) maxLen = Math.max(maxLen, c[i]!);
  const got = b.tmpAlloc(maxLen);
  b.copy({ buf: SEND, offset: 0, bytes: total }, { buf: TMP, offset: acc });
  b.round();
  const mod = (x: number) => ((x % p) + p) % p;
  const right = (s.rank + 1) % p;
  const left = (s.rank - 1 + p) % p;
  // At step k send block rank-k-1 and receive block rank-k-2; after p-1 steps block rank is done.
  for (let k = 0; k < p - 1; k++) {
    if (k > 0) {
      const prev = mod(s.rank - k - 1);
      b.reduce(s.op, s.dtype, { buf: TMP, offset: got, bytes: c[prev]! }, { buf: TMP, offset: acc + off[prev]! });
    }
    const out = mod(s.rank - k - 1);
    const inn = mod(s.rank - k - 2);
    if (c[out]! > 0) b.send(right, { buf: TMP, offset: acc + off[out]!, bytes: c[out]! });
    if (c[inn]! > 0) b.recv(left, { buf: TMP, offset: got, bytes: c[inn]! });
    b.round();
  }
  if (p > 1) b.reduce(s.op, s.dtype, { buf: TMP, offset: got, bytes: c[s.rank]! }, { buf: TMP, offset: acc + off[s.rank]! });
  b.copy({ buf: TMP, offset: acc + off[s.rank]!, bytes: c[s.rank]! }, { buf: RECV, offset: 0 });
  b.round();
  return b.build();
}
