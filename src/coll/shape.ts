/**
 * What a schedule builder knows about a call: everything every rank shares (size, root, byte
 * counts, op commutativity) plus this rank's number. Builders are pure functions of it, which
 * is what makes schedules cacheable and identical across executors.
 */
import type { Schedule } from '../sched/schedule.js';

export interface CollShape {
  rank: number;
  size: number;
  /** Root of rooted collectives (0 otherwise). */
  root: number;
  /** Bytes of one rank's block (count * element size). */
  bytes: number;
  /** Element size in bytes; reductions only split on element boundaries. */
  esize: number;
  /** dtype id and op id for reductions (0 otherwise). */
  dtype: number;
  op: number;
  commutative: boolean;
  /**
   * Reductions: SEND and RECV are apart (no IN_PLACE), so the root may receive a child's
   * partial straight into RECV before it has read SEND. Unset where not known: builders then
   * assume they may alias.
   */
  distinct?: boolean;
  /**
   * The call is non-blocking or persistent: the rank may compute between its start and its
   * wait, and only a test() or wait() advances the host executor's later rounds. Selection
   * reads it (select.ts); builders do not.
   */
  nonblocking?: boolean;
  /** k-nomial degree (2..8) where the algorithm takes one. */
  radix: number;
  /** Per-rank byte counts and displacements for v-variants (and reduceScatter). */
  counts?: Int32Array;
  displs?: Int32Array;
  /** alltoallv: receive side counts and displacements (send side in counts/displs). */
  rcounts?: Int32Array;
  rdispls?: Int32Array;
  /** The communicator's nodes, for hierarchical algorithms (hier.ts). */
  topo?: Topology;
  /** Hierarchical algorithms: the flat algorithm the node leaders run among themselves. */
  leader?: { coll: string; build: (s: CollShape) => Schedule; radix: number };
}

/** Which ranks of a communicator share a node: what hierarchical algorithms and selection see. */
export interface Topology {
  nodes: number;
  /** Node index of every rank (nodes numbered in order of their lowest rank). */
  nodeOf: Int32Array;
  /** Each node's ranks, ascending. */
  members: Int32Array[];
  /** The most ranks any node holds. */
  ppn: number;
  /** Every node holds the same number of ranks. */
  uniform: boolean;
}

/** The topology of a communicator whose rank i lives on node id `nodeIdOf(i)`. */
export function topologyOf(size: number, nodeIdOf: (rank: number) => number): Topology {
  const index = new Map<number, number>();
  const nodeOf = new Int32Array(size);
  const lists: number[][] = [];
  for (let r = 0; r < size; r++) {
    const id = nodeIdOf(r);
    let k = index.get(id);
    if (k === undefined) {
      k = lists.length;
      index.set(id, k);
      lists.push([]);
    }
    nodeOf[r] = k;
    lists[k]!.push(r);
  }
  const ppn = Math.max(0, ...lists.map((m) => m.length));
  return { nodes: lists.length, nodeOf, members: lists.map((m) => Int32Array.from(m)), ppn, uniform: lists.every((m) => m.length === ppn) };
}

export function shape(partial: Partial<CollShape> & Pick<CollShape, 'rank' | 'size'>): CollShape {
  return { root: 0, bytes: 0, esize: 1, dtype: 0, op: 0, commutative: true, radix: 2, ...partial };
}

/** Largest power of two <= n (n >= 1). */
export function pow2Floor(n: number): number {
  let p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

/** Splits `count` elements into `parts` blocks, the first `count % parts` one element larger. */
export function blocks(count: number, parts: number): { start: Int32Array; len: Int32Array } {
  const start = new Int32Array(parts + 1);
  const len = new Int32Array(parts);
  const q = Math.floor(count / parts);
  const r = count % parts;
  for (let i = 0; i < parts; i++) {
    len[i] = q + (i < r ? 1 : 0);
    start[i + 1] = start[i]! + len[i]!;
  }
  return { start, len };
}
