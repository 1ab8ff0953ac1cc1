/**
 * Planning the neighbourhood collectives of Cartesian communicators: validation against the
 * grid's neighbours, the call's shape, and the plan from the communicator's planner.
 */
import { NbcCountError } from '../errors.js';
import { bytesPerElement, dtypeOf } from '../ops/index.js';
import type { Plan } from '../sched/executor.js';
import { buf, count, sameType, type Buf, type Counts, type Planner } from './args.js';
import type { CollOptions } from './options.js';

/** neighborAllgather: recv block i comes from neighbour i (per dimension: -1 then +1). */
export function planNeighborAllgather(comm: Planner, send: Buf, recv: Buf, opts?: CollOptions): Plan {
  const nb = comm.neighbors('neighborAllgather');
  const sv = buf(comm, 'neighborAllgather', send, 'send');
  const rv = buf(comm, 'neighborAllgather', recv, 'recv');
  sameType(comm, 'neighborAllgather', send, recv);
  count(comm, 'neighborAllgather', 'recv', recv.length, send.length * nb.length);
  const s = { ...comm.base(), bytes: sv.byteLength, neighbors: nb };
  return comm.plan('neighborAllgather', s, opts, false, sv, rv);
}

/** neighborAlltoall: send block i goes to neighbour i, recv block i comes from neighbour i. */
export function planNeighborAlltoall(comm: Planner, send: Buf, recv: Buf, opts?: CollOptions): Plan {
  const nb = comm.neighbors('neighborAlltoall');
  sameType(comm, 'neighborAlltoall', send, recv);
  count(comm, 'neighborAlltoall', 'recv', recv.length, send.length);
  if (send.length % nb.length !== 0) {
    throw new NbcCountError(`Cannot neighborAlltoall: ${send.length} elements do not split into ${nb.length} equal blocks (one per neighbour)`);
  }
  const sv = buf(comm, 'neighborAlltoall', send, 'send');
  const rv = buf(comm, 'neighborAlltoall', recv, 'recv');
  const B = sv.byteLength / nb.length;
  const c = new Int32Array(nb.length).fill(B);
  const d = Int32Array.from({ length: nb.length }, (_, i) => i * B);
  const s = { ...comm.base(), neighbors: nb, counts: c, displs: d, rcounts: c, rdispls: d };
  return comm.plan('neighborAlltoall', s, opts, false, sv, rv);
}

export function planNeighborAlltoallv(comm: Planner, send: Buf, scounts: Counts, sdispls: Counts, recv: Buf, rcounts: Counts, rdispls: Counts, opts?: CollOptions): Plan {
  const nb = comm.neighbors('neighborAlltoallv');
  sameType(comm, 'neighborAlltoallv', send, recv);
  const sv = buf(comm, 'neighborAlltoallv', send, 'send');
  const rv = buf(comm, 'neighborAlltoallv', recv, 'recv');
  const bpe = bytesPerElement(dtypeOf(send));
  const vec = (counts: Counts, displs: Counts, len: number, what: string): { c: Int32Array; d: Int32Array } => {
    if (counts?.length !== nb.length || displs?.length !== nb.length) {
      throw new NbcCountError(`Cannot neighborAlltoallv: ${what} counts and displacements must have ${nb.length} entries (one per neighbour)`);
    }
    const c = new Int32Array(nb.length);
    const d = new Int32Array(nb.length);
    for (let i = 0; i < nb.length; i++) {
      const n = counts[i]!;
      const at = displs[i]!;
      if (!Number.isInteger(n) || n < 0 || !Number.isInteger(at) || at < 0 || at + n > len) {
        throw new NbcCountError(`Cannot neighborAlltoallv: ${what} entry ${i} (count ${String(n)} at ${String(at)}) does not fit a buffer of ${len} elements`);
      }
      c[i] = n * bpe;
      d[i] = at * bpe;
    }
    return { c, d };
  };
  const sx = vec(scounts, sdispls, send.length, 'send');
  const rx = vec(rcounts, rdispls, recv.length, 'recv');
  const s = { ...comm.base(), neighbors: nb, counts: sx.c, displs: sx.d, rcounts: rx.c, rdispls: rx.d };
  return comm.plan('neighborAlltoallv', s, opts, false, sv, rv);
}
