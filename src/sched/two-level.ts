/**
 * Two-level collectives (seed 000's design, with seed 004's packing): the node engine, not a
 * leader rank, combines its node's members, runs one exchange among the engines (one
 * participant per node), and writes every member's result. This module is the pure part:
 * given the node layout of a communicator and every local member's buffers, it says which
 * schedule the engines run among themselves, on which buffers, and how results are written
 * back. The engine (sched/offload.ts) runs it. Core code: no node:* imports.
 *
 * Node order: nodes are numbered by their lowest member in the communicator, so every engine
 * derives the same inter-node ranks. Members of a node need not be contiguous in rank order
 * (a split communicator), which is why reductions here require a commutative op.
 *
 * The engines' exchange is whatever coll/select.ts picks for a communicator of one rank per
 * node (`interNodeSchedule`, called by the engine through OffloadHost.interNode):
 * - allreduce / reduce: the engine folds its members (in rank order), then an allreduce or a
 *   reduce to the root's node among the engines.
 * - barrier: a barrier among the engines once every member has arrived.
 * - bcast: a bcast among the engines from the root's node, straight into the lowest local
 *   member's buffer, then copied to the others.
 * - allgather: each engine packs its members' blocks; an allgatherv among the engines moves
 *   the packed node blocks; every member's blocks are unpacked in rank order.
 * - alltoall: for every other node, one packed message carries every block from this node's
 *   members to that node's members (one message per node pair instead of one per rank
 *   pair); blocks between members of one node are copied directly.
 */
import type { DType } from '../ops/dtype.js';
import { reduceRegions } from '../ops/regions.js';

/** The collective of a two-level post (its kind word). */
export const TL_ALLREDUCE = 0;
export const TL_BARRIER = 1;
export const TL_BCAST = 2;
export const TL_REDUCE = 3;
export const TL_ALLGATHER = 4;
export const TL_ALLTOALL = 5;
/**
 * Or-ed into the kind word by the `agg` executor: the engines' exchange of a barrier, reduce or
 * allreduce goes through the aggregation fabric (runtime/agg-node.ts) instead of a schedule
 * among the engines, which stays its fallback.
 */
export const TL_AGG = 0x100;

/** What a member posts besides its buffers; every member of a call posts the same. */
export interface TwoLevelCall {
  kind: number;
  /** Root (rank in the communicator) of bcast and reduce; 0 otherwise. */
  root: number;
  op: number;
  dtype: number;
  esize: number;
}

/** The schedules the engines run among themselves. */
export type InterNodeColl = 'allreduce' | 'barrier' | 'bcast' | 'reduce' | 'allgatherv' | 'alltoallv';

export interface InterNodeShape {
  /** The engine's index among the communicator's nodes, and how many there are. */
  rank: number;
  size: number;
  root: number;
  bytes: number;
  esize: number;
  dtype: number;
  op: number;
  counts?: Int32Array;
  displs?: Int32Array;
  rcounts?: Int32Array;
  rdispls?: Int32Array;
}

/** A communicator seen by one engine: its nodes, their members, and which node is this one. */
export interface NodeLayout {
  /** World rank of each node's lowest member, in node order: the inter-node participants. */
  reps: Int32Array;
  /** Communicator ranks of each node's members, ascending. */
  members: number[][];
  /** This engine's node index. */
  me: number;
  /** Node index of every communicator rank. */
  nodeOf: Int32Array;
}

export function nodeLayout(worldRanks: Int32Array, nodeOfRank: Int32Array, nodeId: number): NodeLayout {
  const index = new Map<number, number>();
  const reps: number[] = [];
  const members: number[][] = [];
  const nodeOf = new Int32Array(worldRanks.length);
  for (let r = 0; r < worldRanks.length; r++) {
    const node = nodeOfRank[worldRanks[r]!]!;
    let k = index.get(node);
    if (k === undefined) {
      k = reps.length;
      index.set(node, k);
      reps.push(worldRanks[r]!);
      members.push([]);
    }
    members[k]!.push(r);
    nodeOf[r] = k;
  }
  return { reps: Int32Array.from(reps), members, me: index.get(nodeId) ?? -1, nodeOf };
}

/** One local member's post: its rank in the communicator and its buffers. */
export interface Member {
  rank: number;
  call: TwoLevelCall;
  send: Uint8Array;
  recv: Uint8Array;
}

export interface TwoLevelPlan {
  /** false: the members disagree (kind, root, op or sizes); every member then gets an error. */
  ok: boolean;
  /** The engines' exchange, or null when the communicator lives on this node alone. */
  inter: { coll: InterNodeColl; shape: InterNodeShape; send: Uint8Array; recv: Uint8Array } | null;
  /** Writes every member's result; runs once the exchange has finished, and only if ok. */
  finish(): void;
}

const EMPTY = new Uint8Array(0);

/**
 * Plans a two-level collective from every local member's post (`local` sorted by rank). Even
 * when the members disagree, the plan exchanges messages of the sizes the lowest member
 * implies, so the other nodes' engines are not left waiting.
 */
export function planTwoLevel(layout: NodeLayout, local: Member[]): TwoLevelPlan {
  const c = local[0]!.call;
  const consistent = local.every((m) => m.call.kind === c.kind && m.call.root === c.root && m.call.op === c.op &&
    m.call.dtype === c.dtype && m.call.esize === c.esize);
  const nodes = layout.reps.length;
  const me = layout.me;
  const single = nodes === 1;
  const base = { rank: me, size: nodes, root: 0, bytes: 0, esize: 1, dtype: 0, op: 0 };
  switch (c.kind) {
    case TL_BARRIER:
      return { ok: consistent, inter: single ? null : { coll: 'barrier', shape: base, send: EMPTY, recv: EMPTY }, finish: () => {} };

    case TL_ALLREDUCE:
    case TL_REDUCE: {
      const bytes = local[0]!.send.byteLength;
      const rootNode = layout.nodeOf[c.root]!;
      const rootMember = local.find((m) => m.rank === c.root);
      const ok = consistent && local.every((m) => m.send.byteLength === bytes) &&
        (c.kind === TL_REDUCE ? rootMember === undefined || rootMember.recv.byteLength === bytes : local.every((m) => m.recv.byteLength === bytes));
      const acc = new Uint8Array(bytes);
      if (ok) fold(c, local, acc);
      const result = single ? acc : new Uint8Array(bytes);
      const targets = c.kind === TL_REDUCE ? (rootMember === undefined ? [] : [rootMember]) : local;
      const shape = { ...base, root: c.kind === TL_REDUCE ? rootNode : 0, bytes, esize: c.esize, dtype: c.dtype, op: c.op };
      return {
        ok,
        inter: single ? null : { coll: c.kind === TL_REDUCE ? 'reduce' : 'allreduce', shape, send: acc, recv: result },
        finish: () => {
          for (const m of targets) m.recv.set(result);
        },
      };
    }

    case TL_BCAST: {
      const rootNode = layout.nodeOf[c.root]!;
      const ref = me === rootNode ? local.find((m) => m.rank === c.root) ?? local[0]! : local[0]!;
      const bytes = ref.recv.byteLength;
      const ok = consistent && local.every((m) => m.recv.byteLength === bytes);
      // The data travels straight into (or out of) one member's buffer.
      const buf = ok || me === rootNode ? ref.recv : new Uint8Array(bytes);
      return {
        ok,
        inter: single ? null : { coll: 'bcast', shape: { ...base, root: rootNode, bytes }, send: buf, recv: buf },
        finish: () => {
          for (const m of local) if (m.recv !== buf) m.recv.set(buf);
        },
      };
    }

    case TL_ALLGATHER: {
      const size = layout.nodeOf.length;
      const block = local[0]!.send.byteLength;
      const ok = consistent && local.every((m) => m.send.byteLength === block && m.recv.byteLength === size * block);
      const counts = new Int32Array(nodes);
      const displs = new Int32Array(nodes);
      for (let k = 0, at = 0; k < nodes; k++) {
        counts[k] = layout.members[k]!.length * block;
        displs[k] = at;
        at += counts[k]!;
      }
      const packed = new Uint8Array(size * block);
      if (ok) for (let j = 0; j < local.length; j++) packed.set(local[j]!.send, displs[me]! + j * block);
      const mine = packed.subarray(displs[me]!, displs[me]! + counts[me]!);
      return {
        ok,
        inter: single ? null : { coll: 'allgatherv', shape: { ...base, bytes: counts[me]!, counts, displs }, send: mine, recv: packed },
        finish: () => {
          for (let k = 0; k < nodes; k++) {
            const ms = layout.members[k]!;
            for (let j = 0; j < ms.length; j++) {
              const from = packed.subarray(displs[k]! + j * block, displs[k]! + (j + 1) * block);
              for (const m of local) m.recv.set(from, ms[j]! * block);
            }
          }
        },
      };
    }

    case TL_ALLTOALL: {
      const size = layout.nodeOf.length;
      const block = local[0]!.send.byteLength / size;
      const ok = consistent && Number.isInteger(block) &&
        local.every((m) => m.send.byteLength === size * block && m.recv.byteLength === size * block);
      const b = ok ? block : Math.floor(block);
      const { counts, displs, rcounts, rdispls, sendTotal, recvTotal } = nodePairCounts(layout.members.map((m) => m.length), me, b);
      // One message per node pair: for every local source in rank order, its blocks for that
      // node's members in rank order.
      const out = new Uint8Array(sendTotal);
      const inn = new Uint8Array(recvTotal);
      if (ok) {
        for (let k = 0; k < nodes; k++) {
          if (k === me) continue;
          let at = displs[k]!;
          for (const s of local) {
            for (const d of layout.members[k]!) {
              out.set(s.send.subarray(d * b, (d + 1) * b), at);
              at += b;
            }
          }
        }
      }
      return {
        ok,
        inter: single ? null : { coll: 'alltoallv', shape: { ...base, counts, displs, rcounts, rdispls }, send: out, recv: inn },
        finish: () => {
          for (const s of local) for (const d of local) d.recv.set(s.send.subarray(d.rank * b, (d.rank + 1) * b), s.rank * b);
          for (let k = 0; k < nodes; k++) {
            if (k === me) continue;
            let at = rdispls[k]!;
            for (const src of layout.members[k]!) {
              for (const d of local) {
                d.recv.set(inn.subarray(at, at + b), src * b);
                at += b;
              }
            }
          }
        },
      };
    }

    default:
      return { ok: false, inter: single ? null : { coll: 'barrier', shape: base, send: EMPTY, recv: EMPTY }, finish: () => {} };
  }
}

/**
 * The exchange of a packed alltoall among one participant per node (seed 004's message
 * aggregation): to every other node k goes one message of this node's `sizes[me]` ranks'
 * blocks of `B` bytes for node k's `sizes[k]` ranks, and one comes back; nothing goes to the
 * own node. Byte counts and displacements per node, for an alltoallv.
 */
export function nodePairCounts(sizes: ArrayLike<number>, me: number, B: number) {
  const nodes = sizes.length;
  const nl = sizes[me]!;
  const counts = new Int32Array(nodes);
  const displs = new Int32Array(nodes);
  const rcounts = new Int32Array(nodes);
  const rdispls = new Int32Array(nodes);
  let sendTotal = 0;
  let recvTotal = 0;
  for (let k = 0; k < nodes; k++) {
    const nk = k === me ? 0 : sizes[k]!;
    counts[k] = nl * nk * B;
    displs[k] = sendTotal;
    sendTotal += counts[k]!;
    rcounts[k] = nk * nl * B;
    rdispls[k] = recvTotal;
    recvTotal += rcounts[k]!;
  }
  return { counts, displs, rcounts, rdispls, sendTotal, recvTotal };
}

/** acc = m0 ⊕ (m1 ⊕ (... ⊕ m_last)), the local members in rank order (commutative ops). */
function fold(c: TwoLevelCall, local: Member[], acc: Uint8Array): void {
  acc.set(local[local.length - 1]!.send);
  for (let i = local.length - 2; i >= 0; i--) reduceRegions(c.op, c.dtype as DType, local[i]!.send, acc);
}
