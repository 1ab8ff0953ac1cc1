/**
 * Neighbour collectives on Cartesian communicators. Neighbours are listed per dimension, the
 * -1 neighbour then the +1 neighbour (PROC_NULL where a non-periodic edge has none). The block
 * a rank sends to its neighbour in slot i lands in that neighbour's slot i ^ 1: a message
 * carries sub-tag i ^ 1 and slot i receives sub-tag i. So on a periodic dimension of size 1 or
 * 2, where both neighbours are the same rank, block s still lands in block s ^ 1 (MPI-4.1).
 */
import { RECV, SEND, ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

export interface NeighborShape extends CollShape {
  /** Neighbour ranks in slot order (-1 = none). */
  neighbors: Int32Array;
}

export function allgather(s: NeighborShape): Schedule {
  const b = new ScheduleBuilder('neighbor-allgather/direct');
  const B = s.bytes;
  s.neighbors.forEach((nb, i) => {
    if (nb < 0) return;
    b.recv(nb, { buf: RECV, offset: i * B, bytes: B }, undefined, i);
  });
  s.neighbors.forEach((nb, i) => {
    if (nb < 0) return;
    b.send(nb, { buf: SEND, offset: 0, bytes: B }, undefined, i ^ 1);
  });
  b.round();
  return b.build();
}

/** counts/displs: send side; rcounts/rdispls: receive side; bytes, per slot. */
export function alltoallv(s: NeighborShape): Schedule {
  const b = new ScheduleBuilder('neighbor-alltoallv/direct');
  s.neighbors.forEach((nb, i) => {
    if (nb < 0) return;
    b.recv(nb, { buf: RECV, offset: s.rdispls![i]!, bytes: s.rcounts![i]! }, undefined, i);
  });
  s.neighbors.forEach((nb, i) => {
    if (nb < 0) return;
    b.send(nb, { buf: SEND, offset: s.displs![i]!, bytes: s.counts![i]! }, undefined, i ^ 1);
  });
  b.round();
  return b.build();
}
