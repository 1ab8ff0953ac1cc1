/**
 * Planning the collectives without a root (barrier, allreduce, allgather(v), alltoall(v),
 * reduce-scatter, scan): validation, the call's shape, and the plan from the communicator's
 * planner. The Communicator facade calls these.
 */
import { NbcArgError, NbcCountError } from '../errors.js';
import { bytesPerElement, dtypeOf, type DType, type OpLike } from '../ops/index.js';
import { IN_PLACE } from '../p2p/constants.js';
import type { Plan } from '../sched/executor.js';
import { apart, buf, count, reduction, sameType, vector, EMPTY, type Buf, type BufOrInPlace, type Counts, type Planner } from './args.js';
import type { CollOptions } from './options.js';

export function planBarrier(comm: Planner, opts?: CollOptions): Plan {
  return comm.plan('barrier', comm.base(), opts, true, EMPTY, EMPTY);
}

/** allreduce: the result in `recv` on every rank. Either buffer may be IN_PLACE (the other is reduced in place). */
export function checkAllreduce(comm: Planner, send: BufOrInPlace, recv: BufOrInPlace, op: OpLike) {
  if (send === IN_PLACE && recv === IN_PLACE) throw new NbcArgError('Cannot allreduce with both buffers IN_PLACE: expected one real buffer');
  const input = (send === IN_PLACE ? recv : send) as Buf;
  const output = (recv === IN_PLACE ? send : recv) as Buf;
  const sv = buf(comm, 'allreduce', input, 'send');
  const rv = buf(comm, 'allreduce', output, 'recv');
  sameType(comm, 'allreduce', input, output);
  count(comm, 'allreduce', 'recv', output.length, input.length);
  const red = reduction(comm, 'allreduce', op, input);
  return { sv, rv, output, red };
}

/** `nonblocking`: for iallreduce and allreduceInit, whose ranks may compute between start and wait. */
export function planAllreduce(comm: Planner, send: BufOrInPlace, recv: BufOrInPlace, op: OpLike, opts?: CollOptions, nonblocking = false): Plan {
  return planCheckedAllreduce(comm, checkAllreduce(comm, send, recv, op), opts, nonblocking);
}

export function planCheckedAllreduce(comm: Planner, c: ReturnType<typeof checkAllreduce>, opts?: CollOptions, nonblocking = false): Plan {
  const { sv, rv, red } = c;
  const s = { ...comm.base(), ...red, bytes: sv.byteLength, distinct: apart(sv, rv), nonblocking };
  return comm.plan('allreduce', s, opts, true, sv, rv);
}

/** allgather: block i of every recv comes from rank i. send may be IN_PLACE (own block already in recv). */
export function planAllgather(comm: Planner, send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan {
  const rv = buf(comm, 'allgather', recv, 'recv');
  const n = send === IN_PLACE ? recv.length / comm.size : send.length;
  if (send !== IN_PLACE) sameType(comm, 'allgather', send, recv);
  count(comm, 'allgather', 'recv', recv.length, n * comm.size);
  const B = rv.byteLength / comm.size;
  const sv = send === IN_PLACE ? rv.subarray(comm.rank * B, (comm.rank + 1) * B) : buf(comm, 'allgather', send, 'send');
  const s = { ...comm.base(), bytes: sv.byteLength };
  return comm.plan('allgather', s, opts, true, sv, rv);
}

export function planAllgatherv(comm: Planner, send: BufOrInPlace, recv: Buf, counts: Counts, displs: Counts, opts?: CollOptions): Plan {
  const rv = buf(comm, 'allgatherv', recv, 'recv');
  const bpe = bytesPerElement(dtypeOf(recv));
  const { c, d } = vector(comm, 'allgatherv', counts, displs, bpe, recv.length, 'recv');
  if (send !== IN_PLACE) {
    sameType(comm, 'allgatherv', send, recv);
    count(comm, 'allgatherv', 'send', send.length, c[comm.rank]! / bpe);
  }
  const sv = send === IN_PLACE ? rv.subarray(d[comm.rank]!, d[comm.rank]! + c[comm.rank]!) : buf(comm, 'allgatherv', send, 'send');
  const s = { ...comm.base(), bytes: sv.byteLength, counts: c, displs: d };
  return comm.plan('allgatherv', s, opts, false, sv, rv);
}

/** alltoall: block j of rank i's send lands at block i of rank j's recv. send may be IN_PLACE (data in recv). */
export function planAlltoall(comm: Planner, send: BufOrInPlace, recv: Buf, opts?: CollOptions): Plan {
  const rv = buf(comm, 'alltoall', recv, 'recv');
  if (send !== IN_PLACE) {
    sameType(comm, 'alltoall', send, recv);
    count(comm, 'alltoall', 'recv', recv.length, send.length);
  }
  if (recv.length % comm.size !== 0) {
    throw new NbcCountError(`Cannot alltoall on communicator ${comm.ctx}: ${recv.length} elements do not split into ${comm.size} equal blocks`);
  }
  let sv: Uint8Array;
  let before: (() => void) | undefined;
  if (send === IN_PLACE) {
    // The input must survive while recv is overwritten: snapshot it at every start.
    const copy = new Uint8Array(rv.byteLength);
    sv = copy;
    before = () => copy.set(rv);
  } else {
    sv = buf(comm, 'alltoall', send, 'send');
  }
  const s = { ...comm.base(), bytes: rv.byteLength / comm.size };
  return comm.plan('alltoall', s, opts, true, sv, rv, { before });
}

export function planAlltoallv(comm: Planner, send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
  const sv = buf(comm, 'alltoallv', send, 'send');
  const rv = buf(comm, 'alltoallv', recv, 'recv');
  sameType(comm, 'alltoallv', send, recv);
  const bpe = bytesPerElement(dtypeOf(send));
  const sx = vector(comm, 'alltoallv', scounts, sdispls, bpe, send.length, 'send');
  const rx = vector(comm, 'alltoallv', rcounts, rdispls, bpe, recv.length, 'recv');
  const s = { ...comm.base(), counts: sx.c, displs: sx.d, rcounts: rx.c, rdispls: rx.d };
  return comm.plan('alltoallv', s, opts, false, sv, rv);
}

/** reduceScatter: rank i gets `counts[i]` elements of the reduced vector. send may be IN_PLACE (input in recv, result at its start). */
export function planReduceScatter(comm: Planner, coll: 'reduceScatter' | 'reduceScatterBlock', send: BufOrInPlace, recv: Buf, counts: Counts | null, op: OpLike, opts?: CollOptions): Plan {
  const rv = buf(comm, coll, recv, 'recv');
  const input = send === IN_PLACE ? recv : send;
  const sv = buf(comm, coll, input, 'send');
  sameType(comm, coll, input, recv);
  const red = reduction(comm, coll, op, input);
  const bpe = bytesPerElement(red.dtype as DType);
  let c: Int32Array;
  if (counts === null) {
    const n = send === IN_PLACE ? recv.length / comm.size : recv.length;
    count(comm, coll, 'send', input.length, n * comm.size);
    c = new Int32Array(comm.size).fill(n * bpe);
  } else {
    c = vector(comm, coll, counts, null, bpe, input.length, 'send').c;
    let total = 0;
    for (let i = 0; i < comm.size; i++) total += c[i]!;
    count(comm, coll, 'send', input.length, total / bpe);
    if (send !== IN_PLACE) count(comm, coll, 'recv', recv.length, c[comm.rank]! / bpe);
  }
  for (let i = 0; i < comm.size; i++) {
    if (c[i]! % red.esize !== 0) {
      throw new NbcCountError(`Cannot ${coll} on communicator ${comm.ctx}: rank ${i}'s block of ${c[i]! / bpe} elements splits an item of the op`);
    }
  }
  const out = send === IN_PLACE ? rv.subarray(0, c[comm.rank]!) : rv;
  const s = { ...comm.base(), ...red, bytes: sv.byteLength, counts: c };
  return comm.plan(coll, s, opts, false, sv, out);
}

/** scan: rank i gets send_0 ⊕ ... ⊕ send_i; exscan: send_0 ⊕ ... ⊕ send_{i-1} (rank 0's recv is untouched). */
export function planScan(comm: Planner, coll: 'scan' | 'exscan', send: BufOrInPlace, recv: Buf, op: OpLike, opts?: CollOptions): Plan {
  const rv = buf(comm, coll, recv, 'recv');
  const input = send === IN_PLACE ? recv : send;
  sameType(comm, coll, input, recv);
  count(comm, coll, 'recv', recv.length, input.length);
  const red = reduction(comm, coll, op, input);
  let sv = buf(comm, coll, input, 'send');
  let before: (() => void) | undefined;
  if (send === IN_PLACE) {
    const copy = new Uint8Array(rv.byteLength);
    sv = copy;
    before = () => copy.set(rv);
  }
  const s = { ...comm.base(), ...red, bytes: rv.byteLength };
  return comm.plan(coll, s, opts, true, sv, rv, { before });
}
