/**
 * Planning the neighbourhood collectives of Cartesian and distributed-graph communicators:
 * validation against the communicator's neighbourhood (in-degree = sources, out-degree =
 * destinations; equal on Cartesian grids), the call's shape, and the plan from the
 * communicator's planner.
 */
import { NbcCountError } from '../errors.js';
import { bytesPerElement, dtypeOf } from '../ops/index.js';
import type { Plan } from '../sched/executor.js';
import { buf, count, sameType, type Buf, type Counts, type Planner } from './args.js';
import type { CollOptions } from './options.js';

/** neighborAllgather: the send buffer goes to every destination; recv block i comes from source i. */
export function planNeighborAllgather(comm: Planner, send: Buf, recv: Buf, opts?: CollOptions): Plan {
  const hood = comm.neighbors('neighborAllgather');
  const sv = buf(comm, 'neighborAllgather', send, 'send');
  const rv = buf(comm, 'neighborAllgather', recv, 'recv');
  sameType(comm, 'neighborAllgather', send, recv);
  count(comm, 'neighborAllgather', 'recv', recv.length, send.length * hood.sources.length);
  const s = { ...comm.base(), bytes: sv.byteLength, ...hood };
  return comm.plan('neighborAllgather', s, opts, false, sv, rv);
}

/** neighborAlltoall: send block j goes to destination j, recv block i comes from source i; all blocks equal. */
export function planNeighborAlltoall(comm: Planner, send: Buf, recv: Buf, opts?: CollOptions): Plan {
  const hood = comm.neighbors('neighborAlltoall');
  const outdeg = hood.destinations.length;
  const indeg = hood.sources.length;
  sameType(comm, 'neighborAlltoall', send, recv);
  const sv = buf(comm, 'neighborAlltoall', send, 'send');
  const rv = buf(comm, 'neighborAlltoall', recv, 'recv');
  // The block size comes from whichever side has blocks (a rank may have no out- or in-edges).
  const blockElems = outdeg > 0 ? send.length / outdeg : indeg > 0 ? recv.length / indeg : 0;
  if (!Number.isInteger(blockElems) || (outdeg > 0 && send.length % outdeg !== 0)) {
    throw new NbcCountError(`Cannot neighborAlltoall on communicator ${comm.ctx}: send has ${send.length} elements; expected equal blocks for ${outdeg} destinations`);
  }
  count(comm, 'neighborAlltoall', 'recv', recv.length, blockElems * indeg);
  if (outdeg === 0) count(comm, 'neighborAlltoall', 'send', send.length, 0);
  const B = blockElems * bytesPerElement(dtypeOf(send));
  const sc = new Int32Array(outdeg).fill(B);
  const sd = Int32Array.from({ length: outdeg }, (_, j) => j * B);
  const rc = new Int32Array(indeg).fill(B);
  const rd = Int32Array.from({ length: indeg }, (_, i) => i * B);
  const s = { ...comm.base(), ...hood, counts: sc, displs: sd, rcounts: rc, rdispls: rd };
  return comm.plan('neighborAlltoall', s, opts, false, sv, rv);
}

/** neighborAlltoallv: scounts/sdispls per destination, rcounts/rdispls per source, in elements. */
export function planNeighborAlltoallv(comm: Planner, send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
  const hood = comm.neighbors('neighborAlltoallv');
  sameType(comm, 'neighborAlltoallv', send, recv);
  const sv = buf(comm, 'neighborAlltoallv', send, 'send');
  const rv = buf(comm, 'neighborAlltoallv', recv, 'recv');
  const bpe = bytesPerElement(dtypeOf(send));
  const vec = (counts: Counts, displs: Counts, degree: number, len: number, what: string, per: string): { c: Int32Array; d: Int32Array } => {
    if (counts?.length !== degree || displs?.length !== degree) {
      throw new NbcCountError(`Cannot neighborAlltoallv on communicator ${comm.ctx}: ${what} counts and displacements must have ${degree} entries (one per ${per})`);
    }
    const c = new Int32Array(degree);
    const d = new Int32Array(degree);
    for (let i = 0; i < degree; i++) {
      const n = counts[i]!;
      const at = displs[i]!;
      if (!Number.isInteger(n) || n < 0 || !Number.isInteger(at) || at < 0 || at + n > len) {
        throw new NbcCountError(`Cannot neighborAlltoallv on communicator ${comm.ctx}: ${what} entry ${i} (count ${String(n)} at ${String(at)}) does not fit a buffer of ${len} elements; expected count + displacement <= ${len}`);
      }
      c[i] = n * bpe;
      d[i] = at * bpe;
    }
    return { c, d };
  };
  const sx = vec(scounts, sdispls, hood.destinations.length, send.length, 'send', 'destination');
  const rx = vec(rcounts, rdispls, hood.sources.length, recv.length, 'recv', 'source');
  const s = { ...comm.base(), ...hood, counts: sx.c, displs: sx.d, rcounts: rx.c, rdispls: rx.d };
  return comm.plan('neighborAlltoallv', s, opts, false, sv, rv);
}
