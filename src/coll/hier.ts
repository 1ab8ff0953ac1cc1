/**
 * Hierarchical collectives (seed 004; MPICH `*_intra_smp`, UCC `cl/hier`): a node phase in
 * shared memory, one leader per node running a flat algorithm among the leaders, then a node
 * phase again. Each phase is an existing flat builder, built for the ranks that take part and
 * spliced in through a rank map (ScheduleBuilder.splice); nothing here sends a message of its
 * own, it only arranges phases and the copies that pack and unpack node blocks.
 *
 * - The leader of a node is its lowest rank, except on the root's node of a rooted collective,
 *   which the root leads (so the root's data needs no extra hop).
 * - The leaders' algorithm is whatever select.ts picks for a communicator of `nodes` ranks
 *   (the shape's `leader`); the node phases are binomial trees.
 * - Reductions need a commutative op: a node's ranks need not be contiguous in rank order.
 *   Every rank still gets the same bits: the leaders compute the result once (their algorithm
 *   gives identical bits everywhere) and the node phase copies it.
 * - Packing (seed 004): gathered and alltoall blocks travel between nodes as one message per
 *   node pair, packed by node on the leader and unpacked there.
 */
import { RECV, ScheduleBuilder, SEND, TMP, type Place, type Schedule } from '../sched/schedule.js';
import { nodePairCounts } from '../sched/two-level.js';
import * as bcast from './bcast.js';
import * as gather from './gather.js';
import * as reduce from './reduce.js';
import type { CollShape, Topology } from './shape.js';

/** One rank's view of the communicator's nodes. */
interface Layout {
  /** Every node's ranks, its leader first, then ascending. */
  members: Int32Array[];
  /** Each node's leader, in node order. */
  leaders: Int32Array;
  /** My node, its ranks (leader first), and my index in them (0: I lead). */
  node: number;
  local: Int32Array;
  me: number;
}

function layout(s: CollShape, rooted: boolean): Layout {
  const t = topology(s);
  const rootNode = rooted ? t.nodeOf[s.root]! : -1;
  const members = t.members.map((m, k) => {
    if (k !== rootNode || m[0] === s.root) return m;
    return Int32Array.from([s.root, ...Array.from(m).filter((r) => r !== s.root)]);
  });
  const node = t.nodeOf[s.rank]!;
  const local = members[node]!;
  return { members, leaders: Int32Array.from(members, (m) => m[0]!), node, local, me: local.indexOf(s.rank) };
}

function topology(s: CollShape): Topology {
  if (s.topo === undefined) throw new Error(`a hierarchical ${s.bytes}-byte collective was built without the communicator's topology`);
  return s.topo;
}

/**
 * The shape of a phase among `size` ranks in which this rank is `rank`. A phase is spliced
 * onto other buffers (the leaders' reduce runs from RECV into RECV), so it may not take SEND
 * and RECV as apart.
 */
function phase(s: CollShape, rank: number, size: number, extra: Partial<CollShape> = {}): CollShape {
  return {
    ...s, rank, size, root: 0, counts: undefined, displs: undefined, rcounts: undefined, rdispls: undefined,
    topo: undefined, leader: undefined, radix: 2, distinct: undefined, ...extra,
  };
}

/** The leaders' flat algorithm, among `nodes` ranks. */
function leaders(s: CollShape, l: Layout, extra: Partial<CollShape> = {}): Schedule {
  const inner = s.leader;
  if (inner === undefined) throw new Error('a hierarchical collective was built without its leaders\' algorithm');
  return inner.build(phase(s, l.node, l.leaders.length, { radix: inner.radix, ...extra }));
}

const at = (buf: typeof SEND | typeof RECV | typeof TMP, offset = 0): Place => ({ buf, offset });

/** Node block layout of packed data: node k's ranks' blocks of `B` bytes start at displs[k]. */
function packed(l: Layout, B: number): { counts: Int32Array; displs: Int32Array; total: number } {
  const n = l.members.length;
  const counts = new Int32Array(n);
  const displs = new Int32Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    counts[k] = l.members[k]!.length * B;
    displs[k] = total;
    total += counts[k]!;
  }
  return { counts, displs, total };
}

export function barrier(s: CollShape): Schedule {
  const b = new ScheduleBuilder('barrier/hier');
  const l = layout(s, false);
  const nl = l.local.length;
  b.splice(gather.gatherBinomial(phase(s, l.me, nl, { bytes: 0 })), l.local, at(SEND), at(RECV));
  if (l.me === 0) b.splice(leaders(s, l), l.leaders, at(SEND), at(RECV));
  b.splice(bcast.binomial(phase(s, l.me, nl, { bytes: 0 })), l.local, at(RECV), at(RECV));
  return b.build();
}

export function broadcast(s: CollShape): Schedule {
  const b = new ScheduleBuilder('bcast/hier');
  const l = layout(s, true);
  if (l.me === 0) b.splice(leaders(s, l, { root: topology(s).nodeOf[s.root]! }), l.leaders, at(RECV), at(RECV));
  b.splice(bcast.binomial(phase(s, l.me, l.local.length)), l.local, at(RECV), at(RECV));
  return b.build();
}

/** Node phase of the reductions: this node's contributions folded into its leader's RECV. */
function reduceToLeader(b: ScheduleBuilder, s: CollShape, l: Layout): void {
  b.splice(reduce.binomial(phase(s, l.me, l.local.length)), l.local, at(SEND), at(RECV));
}

export function reduceTo(s: CollShape): Schedule {
  const b = new ScheduleBuilder('reduce/hier');
  const l = layout(s, true);
  reduceToLeader(b, s, l);
  if (l.me === 0) b.splice(leaders(s, l, { root: topology(s).nodeOf[s.root]! }), l.leaders, at(RECV), at(RECV));
  return b.build();
}

export function allreduce(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allreduce/hier');
  const l = layout(s, false);
  reduceToLeader(b, s, l);
  if (l.me === 0) b.splice(leaders(s, l), l.leaders, at(RECV), at(RECV));
  b.splice(bcast.binomial(phase(s, l.me, l.local.length)), l.local, at(RECV), at(RECV));
  return b.build();
}

/** Node phase of gather and allgather: the node's blocks packed, in node order, at the leader's TMP `pack`. */
function gatherToLeader(b: ScheduleBuilder, s: CollShape, l: Layout, pack: number): void {
  b.splice(gather.gatherBinomial(phase(s, l.me, l.local.length)), l.local, at(SEND), at(TMP, pack));
}

/** Copies packed blocks (node order, TMP `from`) to their ranks' places in RECV. */
function unpack(b: ScheduleBuilder, l: Layout, B: number, from: number, displs: Int32Array): void {
  l.members.forEach((m, k) => m.forEach((r, j) => b.copy({ buf: TMP, offset: from + displs[k]! + j * B, bytes: B }, { buf: RECV, offset: r * B })));
}

export function gatherTo(s: CollShape): Schedule {
  const b = new ScheduleBuilder('gather/hier');
  const l = layout(s, true);
  const B = s.bytes;
  const { counts, displs, total } = packed(l, B);
  const pack = l.me === 0 ? b.tmpAlloc(l.local.length * B) : 0;
  const all = s.rank === s.root ? b.tmpAlloc(total) : 0;
  gatherToLeader(b, s, l, pack);
  if (l.me === 0) {
    const rootNode = topology(s).nodeOf[s.root]!;
    b.splice(leaders(s, l, { root: rootNode, bytes: counts[l.node]!, counts, displs }), l.leaders, at(TMP, pack), at(TMP, all));
  }
  if (s.rank === s.root) {
    b.round();
    unpack(b, l, B, all, displs);
  }
  return b.build();
}

export function scatterFrom(s: CollShape): Schedule {
  const b = new ScheduleBuilder('scatter/hier');
  const l = layout(s, true);
  const B = s.bytes;
  const { counts, displs, total } = packed(l, B);
  const pack = l.me === 0 ? b.tmpAlloc(l.local.length * B) : 0;
  if (s.rank === s.root) {
    const all = b.tmpAlloc(total);
    l.members.forEach((m, k) => m.forEach((r, j) => b.copy({ buf: SEND, offset: r * B, bytes: B }, { buf: TMP, offset: all + displs[k]! + j * B })));
    b.splice(leaders(s, l, { root: l.node, bytes: counts[l.node]!, counts, displs }), l.leaders, at(TMP, all), at(TMP, pack));
  } else if (l.me === 0) {
    b.splice(leaders(s, l, { root: topology(s).nodeOf[s.root]!, bytes: counts[l.node]!, counts, displs }), l.leaders, at(TMP, 0), at(TMP, pack));
  }
  b.splice(gather.scatterBinomial(phase(s, l.me, l.local.length)), l.local, at(TMP, pack), at(RECV));
  return b.build();
}

export function allgather(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allgather/hier');
  const l = layout(s, false);
  const B = s.bytes;
  const p = s.size;
  const { counts, displs, total } = packed(l, B);
  const lead = l.me === 0;
  const pack = lead ? b.tmpAlloc(l.local.length * B) : 0;
  const all = lead ? b.tmpAlloc(total) : 0;
  gatherToLeader(b, s, l, pack);
  if (lead) {
    b.splice(leaders(s, l, { bytes: counts[l.node]!, counts, displs }), l.leaders, at(TMP, pack), at(TMP, all));
    b.round();
    unpack(b, l, B, all, displs);
  }
  b.splice(bcast.binomial(phase(s, l.me, l.local.length, { bytes: p * B })), l.local, at(RECV), at(RECV));
  return b.build();
}

/**
 * Alltoall with packing (seed 004): the leader gathers its node's send buffers, packs, for
 * every other node, the blocks its ranks send to that node's ranks into one message, the
 * leaders exchange one message per node pair, and the leader builds and scatters every local
 * rank's receive buffer. When every node holds the same number of ranks, the node-pair messages
 * are equal and the leaders run an alltoall (scattered destinations, or Bruck, as select.ts
 * picks; the own node's block travels through it too); otherwise an alltoallv with nothing for
 * the own node, whose blocks the leader copies directly.
 */
export function alltoall(s: CollShape): Schedule {
  const b = new ScheduleBuilder('alltoall/hier');
  const l = layout(s, false);
  const B = s.bytes;
  const row = s.size * B;
  const nl = l.local.length;
  const lead = l.me === 0;
  const nodes = l.members.length;
  const uniform = s.leader?.coll === 'alltoall';
  // Where the message to (from) node k starts in the packed send (receive) area.
  let sendAt: (k: number) => number;
  let recvAt: (k: number) => number;
  let out: number;
  let inn: number;
  let exchange: Partial<CollShape>;
  if (uniform) {
    const pair = nl * nl * B;
    sendAt = recvAt = (k) => k * pair;
    out = inn = nodes * pair;
    exchange = { bytes: pair };
  } else {
    const x = nodePairCounts(l.members.map((m) => m.length), l.node, B);
    sendAt = (k) => x.displs[k]!;
    recvAt = (k) => x.rdispls[k]!;
    out = x.sendTotal;
    inn = x.recvTotal;
    exchange = { bytes: 0, counts: x.counts, displs: x.displs, rcounts: x.rcounts, rdispls: x.rdispls };
  }
  const through = (k: number): boolean => uniform || k !== l.node; // node k's blocks travel through the exchange
  const gathered = lead ? b.tmpAlloc(nl * row) : 0;
  const outgoing = lead ? b.tmpAlloc(out) : 0;
  const incoming = lead ? b.tmpAlloc(inn) : 0;
  const scattered = lead ? b.tmpAlloc(nl * row) : 0;
  b.splice(gather.gatherBinomial(phase(s, l.me, nl, { bytes: row })), l.local, at(SEND), at(TMP, gathered));
  if (lead) {
    // block (local source j -> rank d) lies at gathered + j*row + d*B
    for (let k = 0; k < nodes; k++) {
      if (!through(k)) continue;
      const to = l.members[k]!;
      for (let j = 0; j < nl; j++) {
        for (let d = 0; d < to.length; d++) {
          b.copy({ buf: TMP, offset: gathered + j * row + to[d]! * B, bytes: B }, { buf: TMP, offset: outgoing + sendAt(k) + (j * to.length + d) * B });
        }
      }
    }
    b.splice(leaders(s, l, exchange), l.leaders, at(TMP, outgoing), at(TMP, incoming));
    b.round();
    // local rank d's receive buffer, block by source rank, at scattered + d*row
    for (let d = 0; d < nl; d++) {
      if (!uniform) {
        for (let j = 0; j < nl; j++) {
          b.copy({ buf: TMP, offset: gathered + j * row + l.local[d]! * B, bytes: B }, { buf: TMP, offset: scattered + d * row + l.local[j]! * B });
        }
      }
      for (let k = 0; k < nodes; k++) {
        if (!through(k)) continue;
        const from = l.members[k]!;
        for (let j = 0; j < from.length; j++) {
          b.copy({ buf: TMP, offset: incoming + recvAt(k) + (j * nl + d) * B, bytes: B }, { buf: TMP, offset: scattered + d * row + from[j]! * B });
        }
      }
    }
  }
  b.splice(gather.scatterBinomial(phase(s, l.me, nl, { bytes: row })), l.local, at(TMP, scattered), at(RECV));
  return b.build();
}
