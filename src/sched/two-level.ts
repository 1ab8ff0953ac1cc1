/**
 * Two-level collectives (seed 000's design, with seed 004's packing): the node engine, not a
 * leader rank, combines its node's members, runs one exchange among the engines (one
 * participant per node), and writes every member's result. This module is the pure part:
 * given the node layout of a communicator and every local member's buffers, it says which
 * schedule the engines run among themselves, on which buffers, and how results are written
 * back. The engine (sched/offload.ts) runs it. Core code: no node:* imports.
 *
 * One plan, two users: `engineSteps` says, in sizes alone, what each node's engine does (the
 * exchange among the engines, its copies and reductions before and after); `planTwoLevel`
 * runs those steps on the members' buffers, and the simulator (sim/program.ts) prices them,
 * so a change to a two-level form is made here once.
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
 * An engine's own work around the exchange, in sizes: `copies` copies of `copyBytes` bytes
 * each and `reductions` reductions of `reduceBytes` (the simulator prices it: sim/program.ts).
 */
export interface EngineWork {
  copies: number;
  copyBytes: number;
  reductions: number;
  reduceBytes: number;
}

/**
 * What one node's engine does in a two-level call, in sizes alone (no buffers): the engines'
 * exchange, its work before it (fold, pack) and after it (write back). The one plan of the
 * two-level forms: planTwoLevel() runs it on the members' buffers, the simulator prices it.
 */
export interface EngineStep {
  coll: InterNodeColl;
  shape: InterNodeShape;
  before: EngineWork;
  after: EngineWork;
}

/** The layout a step needs: the members of each node (counts will do) and every rank's node. */
export interface StepLayout {
  members: ArrayLike<ArrayLike<number>>;
  nodeOf: Int32Array;
}

const work = (copies: number, copyBytes: number, reductions = 0, reduceBytes = 0): EngineWork => ({ copies, copyBytes, reductions, reduceBytes });
const NO_WORK = work(0, 0);

/**
 * The steps of every node's engine for one call (`bytes`: the lowest member's bytes per block,
 * a reduction's or bcast's whole buffer, an allgather's or alltoall's block), asked per node;
 * what all nodes share (an allgather's counts) is computed once, so a simulation of 10^5 nodes
 * stays linear. Null for a kind that is not a two-level form.
 */
export function engineSteps(call: TwoLevelCall, layout: StepLayout, bytes: number): ((me: number) => EngineStep) | null {
  const nodes = layout.members.length;
  const size = layout.nodeOf.length;
  const sizeOf = (k: number): number => layout.members[k]!.length;
  const base = (me: number): InterNodeShape => ({ rank: me, size: nodes, root: 0, bytes: 0, esize: 1, dtype: 0, op: 0 });
  const rootNode = layout.nodeOf[call.root] ?? 0;
  switch (call.kind) {
    case TL_BARRIER:
      return (me) => ({ coll: 'barrier', shape: base(me), before: NO_WORK, after: NO_WORK });
    case TL_ALLREDUCE:
    case TL_REDUCE: {
      const reduce = call.kind === TL_REDUCE;
      // The fold: acc = the last member, then one reduction per other member (fold()).
      return (me) => ({
        coll: reduce ? 'reduce' : 'allreduce',
        shape: { ...base(me), root: reduce ? rootNode : 0, bytes, esize: call.esize, dtype: call.dtype, op: call.op },
        before: work(1, bytes, sizeOf(me) - 1, bytes),
        after: work(reduce ? (me === rootNode ? 1 : 0) : sizeOf(me), bytes),
      });
    }
    case TL_BCAST:
      return (me) => ({ coll: 'bcast', shape: { ...base(me), root: rootNode, bytes }, before: NO_WORK, after: work(sizeOf(me) - 1, bytes) });
    case TL_ALLGATHER: {
      const counts = new Int32Array(nodes);
      const displs = new Int32Array(nodes);
      for (let k = 0, at = 0; k < nodes; k++) {
        counts[k] = sizeOf(k) * bytes;
        displs[k] = at;
        at += counts[k]!;
      }
      return (me) => ({
        coll: 'allgatherv', shape: { ...base(me), bytes: counts[me]!, counts, displs },
        before: work(sizeOf(me), bytes), after: work(sizeOf(me) * size, bytes),
      });
    }
    case TL_ALLTOALL: {
      const sizes = Array.from({ length: nodes }, (_, k) => sizeOf(k));
      return (me) => {
        const c = nodePairCounts(sizes, me, bytes);
        const m = sizes[me]!;
        return {
          coll: 'alltoallv', shape: { ...base(me), counts: c.counts, displs: c.displs, rcounts: c.rcounts, rdispls: c.rdispls },
          before: work(1, c.sendTotal), after: work(1, m * m * bytes + c.recvTotal),
        };
      };
    }
    default:
      return null;
  }
}

/**
 * Plans a two-level collective from every local member's post (`local` sorted by rank). Even
 * when the members disagree, the plan exchanges messages of the sizes the lowest member
 * implies, so the other nodes' engines are not left waiting.
 */
export function planTwoLevel(layout: NodeLayout, local: Member[]): TwoLevelPlan {
  const c = local[0]!.call;
  const consistent = local.every((m) => m.call.kind === c.kind && m.call.root === c.root && m.call.op === c.op &&
    m.call.dtype === c.dtype && m.call.esize === c.esize);
  const single = layout.reps.length === 1;
  const planned = planLocal(layout, local, consistent);
  if (planned === null) {
    const shape = { rank: layout.me, size: layout.reps.length, root: 0, bytes: 0, esize: 1, dtype: 0, op: 0 };
    return { ok: false, inter: single ? null : { coll: 'barrier', shape, send: EMPTY, recv: EMPTY }, finish: () => {} };
  }
  const { ok, step, send, recv, finish } = planned;
  return { ok, inter: single ? null : { coll: step.coll, shape: step.shape, send, recv }, finish };
}

/** A plan before it knows whether an exchange takes place: the step, its buffers, the write-back. */
interface LocalPlan {
  ok: boolean;
  step: EngineStep;
  send: Uint8Array;
  recv: Uint8Array;
  finish(): void;
}

/** The step of this node for the members' call, with the buffers it runs on; null for an unknown kind. */
function planLocal(layout: NodeLayout, local: Member[], consistent: boolean): LocalPlan | null {
  const c = local[0]!.call;
  const me = layout.me;
  const steps = (bytes: number): EngineStep => engineSteps(c, layout, bytes)!(me);
  switch (c.kind) {
    case TL_BARRIER: return { ok: consistent, step: steps(0), send: EMPTY, recv: EMPTY, finish: () => {} };
    case TL_ALLREDUCE: case TL_REDUCE: return planReduction(layout, local, consistent, steps(local[0]!.send.byteLength));
    case TL_BCAST: return planBcast(layout, local, consistent, steps);
    case TL_ALLGATHER: return planAllgather(layout, local, consistent, steps(local[0]!.send.byteLength));
    case TL_ALLTOALL: return planAlltoall(layout, local, consistent, steps);
    default: return null;
  }
}

/** Allreduce, reduce: fold the members into one buffer, exchange it, write the result back (to the root alone for reduce). */
function planReduction(layout: NodeLayout, local: Member[], consistent: boolean, step: EngineStep): LocalPlan {
  const c = local[0]!.call;
  const bytes = step.shape.bytes;
  const rootMember = local.find((m) => m.rank === c.root);
  const ok = consistent && local.every((m) => m.send.byteLength === bytes) &&
    (c.kind === TL_REDUCE ? rootMember === undefined || rootMember.recv.byteLength === bytes : local.every((m) => m.recv.byteLength === bytes));
  const acc = new Uint8Array(bytes);
  if (ok) fold(c, local, acc);
  const result = layout.reps.length === 1 ? acc : new Uint8Array(bytes);
  const targets = c.kind === TL_REDUCE ? (rootMember === undefined ? [] : [rootMember]) : local;
  return {
    ok, step, send: acc, recv: result,
    finish: () => {
      for (const m of targets) m.recv.set(result);
    },
  };
}

/** Bcast: the data travels straight into (or out of) one member's buffer, then is copied to the others. */
function planBcast(layout: NodeLayout, local: Member[], consistent: boolean, steps: (bytes: number) => EngineStep): LocalPlan {
  const c = local[0]!.call;
  const rootNode = layout.nodeOf[c.root]!;
  const ref = layout.me === rootNode ? local.find((m) => m.rank === c.root) ?? local[0]! : local[0]!;
  const bytes = ref.recv.byteLength;
  const ok = consistent && local.every((m) => m.recv.byteLength === bytes);
  const buf = ok || layout.me === rootNode ? ref.recv : new Uint8Array(bytes);
  return {
    ok, step: steps(bytes), send: buf, recv: buf,
    finish: () => {
      for (const m of local) if (m.recv !== buf) m.recv.set(buf);
    },
  };
}

/** Allgather: pack the members' blocks, exchange the node blocks, unpack every block to every member in rank order. */
function planAllgather(layout: NodeLayout, local: Member[], consistent: boolean, step: EngineStep): LocalPlan {
  const size = layout.nodeOf.length;
  const block = local[0]!.send.byteLength;
  const ok = consistent && local.every((m) => m.send.byteLength === block && m.recv.byteLength === size * block);
  const { counts, displs } = step.shape as Required<InterNodeShape>;
  const me = layout.me;
  const packed = new Uint8Array(size * block);
  if (ok) for (let j = 0; j < local.length; j++) packed.set(local[j]!.send, displs[me]! + j * block);
  return {
    ok, step, send: packed.subarray(displs[me]!, displs[me]! + counts[me]!), recv: packed,
    finish: () => {
      for (let k = 0; k < layout.members.length; k++) {
        const ms = layout.members[k]!;
        for (let j = 0; j < ms.length; j++) {
          const from = packed.subarray(displs[k]! + j * block, displs[k]! + (j + 1) * block);
          for (const m of local) m.recv.set(from, ms[j]! * block);
        }
      }
    },
  };
}

/**
 * Alltoall: one message per node pair, for every local source in rank order its blocks for
 * that node's members in rank order; blocks between members of this node are copied directly.
 */
function planAlltoall(layout: NodeLayout, local: Member[], consistent: boolean, steps: (bytes: number) => EngineStep): LocalPlan {
  const size = layout.nodeOf.length;
  const nodes = layout.members.length;
  const me = layout.me;
  const block = local[0]!.send.byteLength / size;
  const ok = consistent && Number.isInteger(block) &&
    local.every((m) => m.send.byteLength === size * block && m.recv.byteLength === size * block);
  const b = ok ? block : Math.floor(block);
  const step = steps(b);
  const { counts, displs, rcounts, rdispls } = step.shape as Required<InterNodeShape>;
  const out = new Uint8Array(displs[nodes - 1]! + counts[nodes - 1]!);
  const inn = new Uint8Array(rdispls[nodes - 1]! + rcounts[nodes - 1]!);
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
    ok, step, send: out, recv: inn,
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
