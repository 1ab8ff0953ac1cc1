/**
 * Gather and scatter. Block i belongs to rank i; blocks are `bytes` long (v-variants use
 * counts/displs in bytes).
 *
 * - linear: the root exchanges with every rank directly (all posted at once).
 * - binomial: over relative ranks a subtree is a contiguous range of relative ranks, so each
 *   rank gathers (or scatters) its subtree's blocks as one contiguous TMP run in relative order;
 *   the root rotates relative order into rank order at the end (or beginning, for scatter).
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';
import { knomialNode, toActual, toRelative } from './patterns.js';

export function gatherLinear(s: CollShape): Schedule {
  const b = new ScheduleBuilder('gather/linear');
  const B = s.bytes;
  if (s.rank === s.root) {
    b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: RECV, offset: s.rank * B });
    for (let r = 0; r < s.size; r++) if (r !== s.root) b.recv(r, { buf: RECV, offset: r * B, bytes: B });
  } else {
    b.send(s.root, { buf: SEND, offset: 0, bytes: B });
  }
  b.round();
  return b.build();
}

export function gatherBinomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder('gather/binomial');
  const p = s.size;
  const B = s.bytes;
  const vr = toRelative(s.rank, s.root, p);
  const node = knomialNode(vr, p, 2);
  const tmp = b.tmpAlloc(node.size * B);
  // TMP holds blocks of relative ranks vr .. vr+size-1
  b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: TMP, offset: tmp });
  node.children.forEach((c, i) => b.recv(toActual(c, s.root, p), { buf: TMP, offset: tmp + (c - vr) * B, bytes: node.subtree[i]! * B }));
  b.round();
  if (node.parent >= 0) {
    b.send(toActual(node.parent, s.root, p), { buf: TMP, offset: tmp, bytes: node.size * B });
  } else {
    // relative block j is rank (root + j) mod p
    const head = p - s.root;
    b.copy({ buf: TMP, offset: tmp, bytes: head * B }, { buf: RECV, offset: s.root * B });
    b.copy({ buf: TMP, offset: tmp + head * B, bytes: s.root * B }, { buf: RECV, offset: 0 });
  }
  b.round();
  return b.build();
}

export function scatterLinear(s: CollShape): Schedule {
  const b = new ScheduleBuilder('scatter/linear');
  const B = s.bytes;
  if (s.rank === s.root) {
    b.copy({ buf: SEND, offset: s.rank * B, bytes: B }, { buf: RECV, offset: 0 });
    for (let r = 0; r < s.size; r++) if (r !== s.root) b.send(r, { buf: SEND, offset: r * B, bytes: B });
  } else {
    b.recv(s.root, { buf: RECV, offset: 0, bytes: B });
  }
  b.round();
  return b.build();
}

export function scatterBinomial(s: CollShape): Schedule {
  const b = new ScheduleBuilder('scatter/binomial');
  const p = s.size;
  const B = s.bytes;
  const vr = toRelative(s.rank, s.root, p);
  const node = knomialNode(vr, p, 2);
  const tmp = b.tmpAlloc(node.size * B);
  if (node.parent >= 0) {
    b.recv(toActual(node.parent, s.root, p), { buf: TMP, offset: tmp, bytes: node.size * B });
  } else {
    const head = p - s.root;
    b.copy({ buf: SEND, offset: s.root * B, bytes: head * B }, { buf: TMP, offset: tmp });
    b.copy({ buf: SEND, offset: 0, bytes: s.root * B }, { buf: TMP, offset: tmp + head * B });
  }
  b.round();
  for (let i = node.children.length - 1; i >= 0; i--) {
    const c = node.children[i]!;
    b.send(toActual(c, s.root, p), { buf: TMP, offset: tmp + (c - vr) * B, bytes: node.subtree[i]! * B });
  }
  b.copy({ buf: TMP, offset: tmp, bytes: B }, { buf: RECV, offset: 0 });
  b.round();
  return b.build();
}

/** Gatherv, linear: counts/displs in bytes, significant at the root; `bytes` is this rank's block. */
export function gathervLinear(s: CollShape): Schedule {
  const b = new ScheduleBuilder('gatherv/linear');
  if (s.rank === s.root) {
    const c = s.counts!;
    const d = s.displs!;
    b.copy({ buf: SEND, offset: 0, bytes: c[s.rank]! }, { buf: RECV, offset: d[s.rank]! });
    for (let r = 0; r < s.size; r++) if (r !== s.root && c[r]! > 0) b.recv(r, { buf: RECV, offset: d[r]!, bytes: c[r]! });
  } else if (s.bytes > 0) {
    b.send(s.root, { buf: SEND, offset: 0, bytes: s.bytes });
  }
  b.round();
  return b.build();
}

/** Scatterv, linear: counts/displs in bytes, significant at the root; `bytes` is this rank's block. */
export function scattervLinear(s: CollShape): Schedule {
  const b = new ScheduleBuilder('scatterv/linear');
  if (s.rank === s.root) {
    const c = s.counts!;
    const d = s.displs!;
    b.copy({ buf: SEND, offset: d[s.rank]!, bytes: c[s.rank]! }, { buf: RECV, offset: 0 });
    for (let r = 0; r < s.size; r++) if (r !== s.root && c[r]! > 0) b.send(r, { buf: SEND, offset: d[r]!, bytes: c[r]! });
  } else if (s.bytes > 0) {
    b.recv(s.root, { buf: RECV, offset: 0, bytes: s.bytes });
  }
  b.round();
  return b.build();
}
