/**
 * Neighbour collectives on Cartesian grids and distributed graphs. Both describe their
 * neighbourhood the same way (comm/topology.ts `Neighborhood`): receive block i comes from
 * `sources[i]` with sub-tag `recvTags[i]`, send block j goes to `destinations[j]` with sub-tag
 * `sendTags[j]`, PROC_NULL entries move nothing. On a Cartesian grid sources and destinations
 * are the same list (per dimension the -1 then the +1 neighbour) and the tags make the block a
 * rank sends to slot i land in that neighbour's slot i ^ 1; on a graph the k-th edge between a
 * pair carries sub-tag k, so repeated edges match in list order.
 */
import type { Neighborhood } from '../comm/topology.js';
import { RECV, SEND, ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

export interface NeighborShape extends CollShape, Neighborhood {}

export function allgather(s: NeighborShape): Schedule {
  const b = new ScheduleBuilder('neighbor-allgather/direct');
  const B = s.bytes;
  s.sources.forEach((nb, i) => {
    if (nb < 0) return;
    b.recv(nb, { buf: RECV, offset: i * B, bytes: B }, undefined, s.recvTags[i]);
  });
  s.destinations.forEach((nb, j) => {
    if (nb < 0) return;
    b.send(nb, { buf: SEND, offset: 0, bytes: B }, undefined, s.sendTags[j]);
  });
  b.round();
  return b.build();
}

/** counts/displs: send side, per destination; rcounts/rdispls: receive side, per source; bytes. */
export function alltoallv(s: NeighborShape): Schedule {
  const b = new ScheduleBuilder('neighbor-alltoallv/direct');
  s.sources.forEach((nb, i) => {
    if (nb < 0) return;
    b.recv(nb, { buf: RECV, offset: s.rdispls![i]!, bytes: s.rcounts![i]! }, undefined, s.recvTags[i]);
  });
  s.destinations.forEach((nb, j) => {
    if (nb < 0) return;
    b.send(nb, { buf: SEND, offset: s.displs![j]!, bytes: s.counts![j]! }, undefined, s.sendTags[j]);
  });
  b.round();
  return b.build();
}
