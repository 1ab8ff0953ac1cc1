/**
 * Planning the rooted collectives (bcast, reduce, gather, scatter and their v-forms): each
 * function validates a call's arguments (typed errors before any message), describes the
 * call as a shape and hands it to the communicator's planner, which selects, builds or
 * fetches the schedule and names the executor. The Communicator facade calls these.
 */
import { NbcArgError } from '../errors.js';
import { bytesPerElement, dtypeOf, type OpLike } from '../ops/index.js';
import { IN_PLACE } from '../p2p/constants.js';
import type { Plan } from '../sched/executor.js';
import { apart, buf, checkRoot, count, reduction, sameType, vector, EMPTY, type Buf, type BufOrInPlace, type Counts, type Planner } from './args.js';
import type { CollOptions } from './options.js';

export function planBcast(comm: Planner, data: Buf, root: number, opts?: CollOptions): Plan {
  const v = buf(comm, 'bcast', data, 'buffer');
  checkRoot(comm, root, 'bcast');
  const s = { ...comm.base(root), bytes: v.byteLength, esize: bytesPerElement(dtypeOf(data)) };
  return comm.plan('bcast', s, opts, true, v, v);
}

/**
 * reduce: `send` from every rank, the result in `recv` at the root (ignored elsewhere; may be
 * null). At the root, `send` may be IN_PLACE (the input is taken from recv) or `recv` may be
 * IN_PLACE (the result overwrites send).
 */
export function planReduce(comm: Planner, send: BufOrInPlace, recv: BufOrInPlace | null | undefined, op: OpLike, root: number, opts?: CollOptions): Plan {
  checkRoot(comm, root, 'reduce');
  const isRoot = comm.rank === root;
  if (send === IN_PLACE && !isRoot) {
    throw new NbcArgError(`Cannot reduce on communicator ${comm.ctx}: only the root may pass IN_PLACE; rank ${comm.rank} is not root ${root}`);
  }
  let input: Buf;
  let output: Buf | null;
  if (send === IN_PLACE) {
    input = output = recv as Buf;
  } else if (isRoot && recv === IN_PLACE) {
    input = output = send;
  } else {
    input = send;
    output = isRoot ? (recv as Buf) : null;
  }
  const sv = buf(comm, 'reduce', input, 'send');
  const red = reduction(comm, 'reduce', op, input);
  const s = { ...comm.base(root), ...red, bytes: sv.byteLength };
  if (output === null) {
    // Working space for algorithms that use RECV everywhere: the executor provides it (Plan.workRecvBytes).
    return comm.plan('reduce', s, opts, true, sv, EMPTY, { workRecvBytes: sv.byteLength });
  }
  const rv = buf(comm, 'reduce', output, 'recv');
  sameType(comm, 'reduce', input, output);
  count(comm, 'reduce', 'recv', output.length, input.length);
  return comm.plan('reduce', { ...s, distinct: apart(sv, rv) }, opts, true, sv, rv);
}

/** gather: block i of the root's recv comes from rank i. At the root send may be IN_PLACE (its block is already in recv). */
export function planGather(comm: Planner, send: BufOrInPlace, recv: Buf | null | undefined, root: number, opts?: CollOptions): Plan {
  checkRoot(comm, root, 'gather');
  const isRoot = comm.rank === root;
  if (send === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot gather on communicator ${comm.ctx}: only the root may pass IN_PLACE`);
  let sv: Uint8Array;
  let rv = EMPTY;
  if (isRoot) {
    rv = buf(comm, 'gather', recv, 'recv');
    const n = send === IN_PLACE ? (recv as Buf).length / comm.size : send.length;
    if (send !== IN_PLACE) sameType(comm, 'gather', send, recv as Buf);
    count(comm, 'gather', 'recv', (recv as Buf).length, n * comm.size);
    sv = send === IN_PLACE ? rv.subarray(root * (rv.byteLength / comm.size), (root + 1) * (rv.byteLength / comm.size)) : buf(comm, 'gather', send, 'send');
  } else {
    sv = buf(comm, 'gather', send, 'send');
  }
  const s = { ...comm.base(root), bytes: sv.byteLength };
  return comm.plan('gather', s, opts, true, sv, rv);
}

/** scatter: block i of the root's send goes to rank i. At the root recv may be IN_PLACE (it keeps its block in send). */
export function planScatter(comm: Planner, send: Buf | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
  checkRoot(comm, root, 'scatter');
  const isRoot = comm.rank === root;
  if (recv === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot scatter on communicator ${comm.ctx}: only the root may pass IN_PLACE`);
  let sv = EMPTY;
  let rv: Uint8Array;
  if (isRoot) {
    sv = buf(comm, 'scatter', send, 'send');
    const n = recv === IN_PLACE ? (send as Buf).length / comm.size : recv.length;
    if (recv !== IN_PLACE) sameType(comm, 'scatter', send as Buf, recv);
    count(comm, 'scatter', 'send', (send as Buf).length, n * comm.size);
    const B = sv.byteLength / comm.size;
    rv = recv === IN_PLACE ? sv.subarray(root * B, (root + 1) * B) : buf(comm, 'scatter', recv, 'recv');
  } else {
    rv = buf(comm, 'scatter', recv, 'recv');
  }
  const s = { ...comm.base(root), bytes: rv.byteLength };
  return comm.plan('scatter', s, opts, true, sv, rv);
}

/**
 * The v-forms of gather and scatter share their checks: at the root, `whole` holds a block per
 * rank (`counts[i]` elements at `displs[i]`) and `one` is the root's own block, or IN_PLACE
 * (the root's block stays where it is in `whole`); elsewhere only `one` matters.
 */
function rootedV(comm: Planner, coll: 'gatherv' | 'scatterv', whole: Buf | null | undefined, one: BufOrInPlace, counts: Counts | null | undefined,
  displs: Counts | null | undefined, root: number, names: { whole: string; one: string }) {
  checkRoot(comm, root, coll);
  const isRoot = comm.rank === root;
  if (one === IN_PLACE && !isRoot) throw new NbcArgError(`Cannot ${coll} on communicator ${comm.ctx}: only the root may pass IN_PLACE`);
  const s = comm.base(root);
  let wv = EMPTY;
  let ov: Uint8Array;
  if (isRoot) {
    wv = buf(comm, coll, whole, names.whole);
    const w = whole as Buf;
    const bpe = bytesPerElement(dtypeOf(w));
    // At the root both arrays are required (a null displs would mean contiguous to vector()).
    const { c, d } = vector(comm, coll, counts, displs ?? undefined, bpe, w.length, names.whole);
    if (one !== IN_PLACE) {
      sameType(comm, coll, coll === 'gatherv' ? one : w, coll === 'gatherv' ? w : one);
      count(comm, coll, names.one, one.length, c[root]! / bpe);
    }
    ov = one === IN_PLACE ? wv.subarray(d[root]!, d[root]! + c[root]!) : buf(comm, coll, one, names.one);
    s.counts = c;
    s.displs = d;
  } else {
    ov = buf(comm, coll, one, names.one);
  }
  s.bytes = ov.byteLength;
  return { s, wv, ov };
}

/** gatherv: `counts[i]` elements from rank i land at `displs[i]` of the root's recv (both significant at the root). */
export function planGatherv(comm: Planner, send: BufOrInPlace, recv: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, root: number, opts?: CollOptions): Plan {
  const { s, wv, ov } = rootedV(comm, 'gatherv', recv, send, counts, displs, root, { whole: 'recv', one: 'send' });
  return comm.plan('gatherv', s, opts, false, ov, wv);
}

/** scatterv: `counts[i]` elements at `displs[i]` of the root's send go to rank i. */
export function planScatterv(comm: Planner, send: Buf | null | undefined, counts: Counts | null | undefined, displs: Counts | null | undefined, recv: BufOrInPlace, root: number, opts?: CollOptions): Plan {
  const { s, wv, ov } = rootedV(comm, 'scatterv', send, recv, counts, displs, root, { whole: 'send', one: 'recv' });
  return comm.plan('scatterv', s, opts, false, wv, ov);
}
