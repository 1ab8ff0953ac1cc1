/**
 * Broadcast algorithms. The data lives in RECV on every rank (the root's too).
 *
 * - binomial / knomial: receive from the parent, then send to every child (largest subtree
 *   first so the longest path starts earliest).
 * - scatterAllgather (large messages): the root scatters p blocks down a binomial tree, then a
 *   ring allgather completes every rank: about 2x the bytes of one message on the critical
 *   path instead of log(p) times.
 */
import { RECV, ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';
import { blocks } from './shape.js';
import { knomialNode, toActual, toRelative } from './patterns.js';

export function knomialInto(b: ScheduleBuilder, s: CollShape, k: number): void {
  const p = s.size;
  if (p === 1) return;
  const vr = toRelative(s.rank, s.root, p);
  const node = knomialNode(vr, p, k);
  const all = { buf: RECV, offset: 0, bytes: s.bytes } as const;
  if (node.parent >= 0) {
    b.recv(toActual(node.parent, s.root, p), all);
    b.round();
  }
  for (let i = node.children.length - 1; i >= 0; i--) b.send(toActual(node.children[i]!, s.root, p), all);
  b.round();
}

export function binomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder('bcast/binomial');
  knomialInto(b, s, 2);
  return b.build();
}

export function knomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder(`bcast/knomial(k=${s.radix})`);
  knomialInto(b, s, s.radix);
  return b.build();
}

export function scatterAllgather(s: CollShape): Schedule {
  const b = new ScheduleBuilder('bcast/scatter-allgather');
  const p = s.size;
  if (p === 1) return b.build();
  const count = s.bytes / s.esize;
  const { start, len } = blocks(count, p);
  const E = s.esize;
  const range = (from: number, n: number) => ({ buf: RECV, offset: start[from]! * E, bytes: (start[from + n]! - start[from]!) * E }) as const;
  const vr = toRelative(s.rank, s.root, p);
  // binomial scatter: block i (relative) ends up at relative rank i
  const node = knomialNode(vr, p, 2);
  if (node.parent >= 0) {
    b.recv(toActual(node.parent, s.root, p), range(vr, node.size));
    b.round();
  }
  for (let i = node.children.length - 1; i >= 0; i--) {
    b.send(toActual(node.children[i]!, s.root, p), range(node.children[i]!, node.subtree[i]!));
  }
  b.round();
  // ring allgather over relative ranks
  const right = toActual((vr + 1) % p, s.root, p);
  const left = toActual((vr - 1 + p) % p, s.root, p);
  for (let step = 0; step < p - 1; step++) {
    const sendBlock = (vr - step + p) % p;
    const recvBlock = (vr - step - 1 + p) % p;
    // Both ends of a message agree on its block length, so skipping empty blocks is symmetric.
    if (len[sendBlock]! > 0) b.send(right, range(sendBlock, 1));
    if (len[recvBlock]! > 0) b.recv(left, range(recvBlock, 1));
    b.round();
  }
  return b.build();
}
