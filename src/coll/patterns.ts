/**
 * The pieces algorithms share (MPICH's and UCC's "patterns"): k-nomial trees, the fold of
 * non-powers of two, and recursive halving. Builders of several collectives use them, so they
 * live here and no collective's file imports another's.
 *
 * k-nomial trees over relative ranks (vr = (rank - root) mod p). A node's parent clears the
 * lowest non-zero base-k digit of vr; its children add j * k^i (j = 1..k-1) for every digit
 * position i below that digit. The subtree of child c = vr + j*k^i is the contiguous range
 * [c, min(c + k^i, p)): this is what lets reductions keep rank order and gathers keep blocks
 * contiguous. k = 2 is the binomial tree.
 *
 * The non-power-of-two fold (recursive doubling, Rabenseifner): with p' the largest power of
 * two <= p and r = p - p', ranks 0..2r-1 pair up; each even rank hands its vector to the odd
 * rank above it, which folds it in (lower rank as left operand) and takes part in the main
 * phase with newrank = rank / 2; ranks >= 2r take part as newrank = rank - r. Newranks keep
 * rank order, so contiguous newrank ranges are contiguous rank ranges and non-commutative
 * folds stay in order. At the end the odd ranks return the result to their even partners.
 */
import { RECV, SEND, TMP, type ScheduleBuilder } from '../sched/schedule.js';
import { blocks, pow2Floor, type CollShape } from './shape.js';

export interface TreeNode {
  /** Parent's relative rank, -1 at the root. */
  parent: number;
  /** Children's relative ranks, ascending, and the size of each child's subtree. */
  children: number[];
  subtree: number[];
  /** Size of this node's own subtree. */
  size: number;
}

export function knomialNode(vr: number, p: number, k: number): TreeNode {
  let parent = -1;
  let limit = 1;
  // find the lowest non-zero digit: its weight bounds the children
  while (limit < p) {
    if (Math.floor(vr / limit) % k !== 0) {
      parent = vr - (Math.floor(vr / limit) % k) * limit;
      break;
    }
    limit *= k;
  }
  const children: number[] = [];
  const subtree: number[] = [];
  for (let w = 1; w < limit && w < p; w *= k) {
    for (let j = 1; j < k; j++) {
      const c = vr + j * w;
      if (c >= p) break;
      children.push(c);
      subtree.push(Math.min(w, p - c));
    }
  }
  // ascending order of relative rank
  const order = children.map((c, i) => [c, subtree[i]!] as const).sort((a, b) => a[0] - b[0]);
  const size = Math.min(vr === 0 ? p : limit, p - vr);
  return { parent, children: order.map((x) => x[0]), subtree: order.map((x) => x[1]), size };
}

export const toActual = (vr: number, root: number, p: number): number => (vr + root) % p;
export const toRelative = (rank: number, root: number, p: number): number => (rank - root + p) % p;

export interface Fold {
  pp: number;
  r: number;
  /** This rank's newrank, or -1 when it sits the main phase out. */
  newrank: number;
  realOf: (nr: number) => number;
}

/** The non-power-of-two fold: afterwards RECV of every participant holds its pair's fold. */
export function foldInto(b: ScheduleBuilder, s: CollShape, tmp: number): Fold {
  const p = s.size;
  const pp = pow2Floor(p);
  const r = p - pp;
  const all = s.bytes;
  let newrank: number;
  if (s.rank < 2 * r) {
    if (s.rank % 2 === 0) {
      b.send(s.rank + 1, { buf: RECV, offset: 0, bytes: all });
      newrank = -1;
    } else {
      b.recv(s.rank - 1, { buf: TMP, offset: tmp, bytes: all });
      b.round();
      b.reduce(s.op, s.dtype, { buf: TMP, offset: tmp, bytes: all }, { buf: RECV, offset: 0 });
      newrank = s.rank >> 1;
    }
    b.round();
  } else {
    newrank = s.rank - r;
  }
  return { pp, r, newrank, realOf: (nr) => (nr < r ? nr * 2 + 1 : nr + r) };
}

/** Odd ranks of the fold return the result to their even partners. */
export function unfoldInto(b: ScheduleBuilder, s: CollShape, f: Fold): void {
  if (s.rank >= 2 * f.r) return;
  if (s.rank % 2 === 1) b.send(s.rank - 1, { buf: RECV, offset: 0, bytes: s.bytes });
  else b.recv(s.rank + 1, { buf: RECV, offset: 0, bytes: s.bytes });
  b.round();
}

export function copyIn(b: ScheduleBuilder, s: CollShape): void {
  b.copy({ buf: SEND, offset: 0, bytes: s.bytes }, { buf: RECV, offset: 0 });
  b.round();
}

export interface HalvingLayout extends Fold {
  /** Block i (of p') starts at element blockStart[i]; after the halving newrank i owns block i. */
  blockStart: Int32Array;
  E: number;
}

/**
 * Recursive-halving reduce-scatter (commutative ops): after it, participant newrank i holds the
 * fully reduced block i of p' blocks in RECV (other parts of RECV are partial).
 */
export function reduceScatterHalvingInto(b: ScheduleBuilder, s: CollShape): HalvingLayout {
  copyIn(b, s);
  const E = s.esize;
  const count = s.bytes / E;
  const tmp = b.tmpAlloc(s.bytes);
  const f = foldInto(b, s, tmp);
  const { start } = blocks(count, f.pp);
  const span = (from: number, to: number) => ({ offset: start[from]! * E, bytes: (start[to]! - start[from]!) * E });
  if (f.newrank >= 0) {
    let lo = 0;
    let hi = f.pp;
    for (let mask = f.pp >> 1; mask >= 1; mask >>= 1) {
      const partner = f.realOf(f.newrank ^ mask);
      const mid = lo + mask;
      const [keepLo, keepHi, giveLo, giveHi] = (f.newrank & mask) === 0 ? [lo, mid, mid, hi] : [mid, hi, lo, mid];
      const give = span(giveLo, giveHi);
      const keep = span(keepLo, keepHi);
      if (give.bytes > 0) b.send(partner, { buf: RECV, ...give });
      if (keep.bytes > 0) b.recv(partner, { buf: TMP, offset: tmp + keep.offset, bytes: keep.bytes });
      b.round();
      b.reduce(s.op, s.dtype, { buf: TMP, offset: tmp + keep.offset, bytes: keep.bytes }, { buf: RECV, offset: keep.offset });
      lo = keepLo;
      hi = keepHi;
    }
    b.round();
  }
  return { ...f, blockStart: start, E };
}

