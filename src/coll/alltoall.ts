/**
 * Alltoall algorithms: block j of rank i's SEND lands at block i of rank j's RECV.
 *
 * - pairwise: p-1 rounds; in round k send to rank+k and receive from rank-k (one exchange in
 *   flight at a time: gentle on memory and links).
 * - scattered (seed 004): everything posted at once, destinations in the order
 *   (rank + i) mod p so ranks do not all hit the same peer first.
 * - bruck: ceil(log2 p) rounds; in round k every block whose index has bit k set moves k-th
 *   power-of-two ranks forward, packed into one message (latency-optimal for small blocks).
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

export function pairwise(s: CollShape): Schedule {
  const b = new ScheduleBuilder('alltoall/pairwise');
  const p = s.size;
  const B = s.bytes;
  b.copy({ buf: SEND, offset: s.rank * B, bytes: B }, { buf: RECV, offset: s.rank * B });
  b.round();
  for (let k = 1; k < p; k++) {
    const to = (s.rank + k) % p;
    const from = (s.rank - k + p) % p;
    b.send(to, { buf: SEND, offset: to * B, bytes: B });
    b.recv(from, { buf: RECV, offset: from * B, bytes: B });
    b.round();
  }
  return b.build();
}

export function scattered(s: CollShape): Schedule {
  const b = new ScheduleBuilder('alltoall/scattered');
  const p = s.size;
  const B = s.bytes;
  b.copy({ buf: SEND, offset: s.rank * B, bytes: B }, { buf: RECV, offset: s.rank * B });
  for (let k = 1; k < p; k++) {
    const from = (s.rank - k + p) % p;
    b.recv(from, { buf: RECV, offset: from * B, bytes: B });
  }
  for (let k = 1; k < p; k++) {
    const to = (s.rank + k) % p;
    b.send(to, { buf: SEND, offset: to * B, bytes: B });
  }
  b.round();
  return b.build();
}

export function bruck(s: CollShape): Schedule {
  const b = new ScheduleBuilder('alltoall/bruck');
  const p = s.size;
  const B = s.bytes;
  // TMP: p blocks, rotated so block j is for rank (rank + j) mod p; then pack/unpack areas
  const rot = b.tmpAlloc(p * B);
  const pack = b.tmpAlloc(p * B);
  const unpack = b.tmpAlloc(p * B);
  const head = p - s.rank;
  b.copy({ buf: SEND, offset: s.rank * B, bytes: head * B }, { buf: TMP, offset: rot });
  b.copy({ buf: SEND, offset: 0, bytes: s.rank * B }, { buf: TMP, offset: rot + head * B });
  b.round();
  for (let dist = 1; dist < p; dist *= 2) {
    const moving: number[] = [];
    for (let j = 1; j < p; j++) if (j & dist) moving.push(j);
    moving.forEach((j, k) => b.copy({ buf: TMP, offset: rot + j * B, bytes: B }, { buf: TMP, offset: pack + k * B }));
    b.send((s.rank + dist) % p, { buf: TMP, offset: pack, bytes: moving.length * B });
    b.recv((s.rank - dist + p) % p, { buf: TMP, offset: unpack, bytes: moving.length * B });
    b.round();
    moving.forEach((j, k) => b.copy({ buf: TMP, offset: unpack + k * B, bytes: B }, { buf: TMP, offset: rot + j * B }));
    b.round();
  }
  // TMP block j now came from rank (rank - j): it belongs at RECV block (rank - j) mod p
  for (let j = 0; j < p; j++) {
    b.copy({ buf: TMP, offset: rot + j * B, bytes: B }, { buf: RECV, offset: ((s.rank - j + p) % p) * B });
  }
  b.round();
  return b.build();
}

/** Alltoallv, scattered: counts/displs (send side) and rcounts/rdispls (receive side) in bytes. */
export function scatteredV(s: CollShape): Schedule {
  const b = new ScheduleBuilder('alltoallv/scattered');
  const p = s.size;
  const sc = s.counts!;
  const sd = s.displs!;
  const rc = s.rcounts!;
  const rd = s.rdispls!;
  b.copy({ buf: SEND, offset: sd[s.rank]!, bytes: sc[s.rank]! }, { buf: RECV, offset: rd[s.rank]! });
  for (let k = 1; k < p; k++) {
    const from = (s.rank - k + p) % p;
    if (rc[from]! > 0) b.recv(from, { buf: RECV, offset: rd[from]!, bytes: rc[from]! });
  }
  for (let k = 1; k < p; k++) {
    const to = (s.rank + k) % p;
    if (sc[to]! > 0) b.send(to, { buf: SEND, offset: sd[to]!, bytes: sc[to]! });
  }
  b.round();
  return b.build();
}
