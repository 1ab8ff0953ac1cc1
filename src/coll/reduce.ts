/**
 * Reduce algorithms. Contribution in SEND, result in RECV at the root.
 *
 * Order: every rank applies the same fixed order, never arrival order. For a non-commutative
 * op the tree is rooted at rank 0 (so every subtree is a contiguous, ascending rank range and
 * the fold is mine ⊕ sub(c1) ⊕ sub(c2) ⊕ ... in rank order), and rank 0 forwards the result
 * to the root. Reductions are written inout = in ⊕ inout, so a node folds from its highest
 * child down: acc = sub(c_m); acc = sub(c_{m-1}) ⊕ acc; ...; acc = mine ⊕ acc.
 *
 * - binomial / knomial(k = 2..8): the tree above.
 * - reduceScatterGather (large, commutative): recursive-halving reduce-scatter, then a binomial
 *   gather of the blocks to the root.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type BufId, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';
import { knomialNode, reduceScatterHalvingInto, toActual, toRelative } from './patterns.js';

/**
 * Appends a k-nomial reduce of SEND towards `root`, leaving the result at `dst` (RECV by
 * default) on the root; non-roots keep their partial results in TMP.
 */
export function knomialReduceInto(b: ScheduleBuilder, s: CollShape, k: number,
  dst: { buf: BufId; offset: number } = { buf: RECV, offset: 0 }): void {
  const p = s.size;
  const all = s.bytes;
  if (p === 1) {
    b.copy({ buf: SEND, offset: 0, bytes: all }, dst);
    b.round();
    return;
  }
  // Non-commutative: reduce to rank 0 in rank order, then hand the result to the root.
  const treeRoot = s.commutative ? s.root : 0;
  const vr = toRelative(s.rank, treeRoot, p);
  const node = knomialNode(vr, p, k);
  const m = node.children.length;
  // The root that keeps the result where it is meant to end may take its last child's partial
  // there and fold into it, saving the copy out of scratch: where dst is scratch, or RECV apart
  // from SEND (without IN_PLACE a reduce of 64 KiB on 2 ranks took 12-13 us, with 10.4-11.2).
  const direct = m > 0 && node.parent < 0 && treeRoot === s.root && (dst.buf === TMP || s.distinct === true);
  const slots: number[] = [];
  for (let i = 0; i < (direct ? m - 1 : m); i++) slots.push(b.tmpAlloc(all));
  for (let i = 0; i < m; i++) {
    const into: { buf: BufId; offset: number } = direct && i === m - 1 ? dst : { buf: TMP, offset: slots[i]! };
    b.recv(toActual(node.children[i]!, treeRoot, p), { ...into, bytes: all });
  }
  if (m > 0) b.round();
  // acc lives in the last child's slot; fold downwards, then fold in our own contribution.
  let acc: { buf: BufId; offset: number } = { buf: SEND, offset: 0 };
  if (m > 0) {
    const last: { buf: BufId; offset: number } = direct ? dst : { buf: TMP, offset: slots[m - 1]! };
    for (let i = m - 2; i >= 0; i--) b.reduce(s.op, s.dtype, { buf: TMP, offset: slots[i]!, bytes: all }, last);
    b.reduce(s.op, s.dtype, { buf: SEND, offset: 0, bytes: all }, last);
    acc = last;
  }
  if (node.parent >= 0) {
    b.send(toActual(node.parent, treeRoot, p), { ...acc, bytes: all });
    b.round();
  } else if (treeRoot === s.root) {
    if (!direct) {
      b.copy({ ...acc, bytes: all }, dst);
      b.round();
    }
  } else {
    b.send(s.root, { ...acc, bytes: all }); // rank 0 hands the rank-ordered result to the root
    b.round();
  }
  if (s.rank === s.root && treeRoot !== s.root) {
    b.recv(treeRoot, { ...dst, bytes: all });
    b.round();
  }
}

export function binomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder('reduce/binomial');
  knomialReduceInto(b, s, 2);
  return b.build();
}

export function knomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder(`reduce/knomial(k=${s.radix})`);
  knomialReduceInto(b, s, s.radix);
  return b.build();
}

export function reduceScatterGather(s: CollShape): Schedule {
  const b = new ScheduleBuilder('reduce/reduce-scatter-gather');
  const layout = reduceScatterHalvingInto(b, s);
  // Gather the reduced blocks to the root: the participants (newrank 0..p'-1) each own the
  // block range [lo, hi) of layout; a binomial gather over newranks collects them at newrank 0
  // (whose real rank is layout.realOf(0)), which forwards to the root if needed.
  const { pp, newrank, realOf, blockStart, E } = layout;
  const bytesOfBlocks = (from: number, to: number) => (blockStart[to]! - blockStart[from]!) * E;
  if (newrank >= 0) {
    const node = knomialNode(newrank, pp, 2);
    for (const c of node.children) {
      // child c's subtree owns blocks [c, c + subtree) (newrank i owns block i)
      const i = node.children.indexOf(c);
      const to = c + node.subtree[i]!;
      b.recv(realOf(c), { buf: RECV, offset: blockStart[c]! * E, bytes: bytesOfBlocks(c, to) });
    }
    b.round();
    if (node.parent >= 0) {
      b.send(realOf(node.parent), { buf: RECV, offset: blockStart[newrank]! * E, bytes: bytesOfBlocks(newrank, newrank + node.size) });
      b.round();
    }
  }
  const holder = realOf(0);
  if (holder !== s.root) {
    if (s.rank === holder) b.send(s.root, { buf: RECV, offset: 0, bytes: s.bytes });
    if (s.rank === s.root) b.recv(holder, { buf: RECV, offset: 0, bytes: s.bytes });
    b.round();
  }
  return b.build();
}
