/**
 * Allgather algorithms: rank i's block (SEND) lands at block i of RECV on every rank.
 * Every schedule starts by copying the own block into place (with IN_PLACE it is there).
 *
 * - ring: p-1 steps, each passing one block to the right. The first step sends the own block
 *   from SEND, not from its copy in RECV: a send from RECV lends that region to the receiver,
 *   and the next call's copy into it then waits on the lend (2 ranks, 64 KiB: 11.9 against
 *   3.2 us a call).

 * - recursiveDoubling: log2(p') steps doubling the blocks held; for non-powers of two each
 *   rank p'+i first hands its block to rank i, which carries it (so a group of ranks holds two
 *   contiguous runs: its own blocks and its extras'), and gets the full result at the end.
 * - bruck: ceil(log2 p) steps for any p into a rotated scratch buffer, then one local rotation.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import { pow2Floor, type CollShape } from './shape.js';

function own(b: ScheduleBuilder, s: CollShape): void {
  b.copy({ buf: SEND, offset: 0, bytes: s.bytes }, { buf: RECV, offset: s.rank * s.bytes });
  b.round();
}

export function ring(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allgather/ring');
  own(b, s);
  const p = s.size;
  const B = s.bytes;
  for (let k = 0; k < p - 1; k++) {
    const out = (s.rank - k + p) % p;
    const inn = (s.rank - k - 1 + p) % p;
    b.send((s.rank + 1) % p, k === 0 ? { buf: SEND, offset: 0, bytes: B } : { buf: RECV, offset: out * B, bytes: B });
    b.recv((s.rank - 1 + p) % p, { buf: RECV, offset: inn * B, bytes: B });
    b.round();
  }
  return b.build();
}

export function recursiveDoubling(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allgather/recursive-doubling');
  own(b, s);
  const p = s.size;
  const pp = pow2Floor(p);
  const B = s.bytes;
  if (s.rank >= pp) {
    b.send(s.rank - pp, { buf: RECV, offset: s.rank * B, bytes: B });
    b.recv(s.rank - pp, { buf: RECV, offset: 0, bytes: p * B });
    b.round();
    return b.build();
  }
  if (s.rank + pp < p) {
    b.recv(s.rank + pp, { buf: RECV, offset: (s.rank + pp) * B, bytes: B });
    b.round();
  }
  /** The blocks a group [g, g+m) of main ranks holds: its own run and its extras' run. */
  const runs = (g: number, m: number): Array<{ buf: typeof RECV; offset: number; bytes: number }> => {
    const out = [{ buf: RECV, offset: g * B, bytes: m * B } as const];
    const xs = g + pp;
    const xe = Math.min(g + m + pp, p);
    if (xe > xs) out.push({ buf: RECV, offset: xs * B, bytes: (xe - xs) * B });
    return out;
  };
  for (let mask = 1; mask < pp; mask <<= 1) {
    const partner = s.rank ^ mask;
    for (const r of runs(s.rank & ~(mask - 1), mask)) b.send(partner, r);
    for (const r of runs(partner & ~(mask - 1), mask)) b.recv(partner, r);
    b.round();
  }
  if (s.rank + pp < p) {
    b.send(s.rank + pp, { buf: RECV, offset: 0, bytes: p * B });
    b.round();
  }
  return b.build();
}

export function bruck(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allgather/bruck');
  const p = s.size;
  const B = s.bytes;
  const tmp = b.tmpAlloc(p * B);
  // TMP block j holds the block of rank (rank + j) mod p
  b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: TMP, offset: tmp });
  b.round();
  for (let dist = 1; dist < p; dist *= 2) {
    const n = Math.min(dist, p - dist);
    b.send((s.rank - dist + p) % p, { buf: TMP, offset: tmp, bytes: n * B });
    b.recv((s.rank + dist) % p, { buf: TMP, offset: tmp + dist * B, bytes: n * B });
    b.round();
  }
  // rotate into place: blocks 0..p-rank-1 go to rank.., the rest wrap to 0..
  const head = p - s.rank;
  b.copy({ buf: TMP, offset: tmp, bytes: head * B }, { buf: RECV, offset: s.rank * B });
  b.copy({ buf: TMP, offset: tmp + head * B, bytes: s.rank * B }, { buf: RECV, offset: 0 });
  b.round();
  return b.build();
}

/** Allgatherv by ring: counts/displs are per-rank byte counts and byte displacements in RECV. */
export function ringV(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allgatherv/ring');
  const p = s.size;
  const counts = s.counts!;
  const displs = s.displs!;
  b.copy({ buf: SEND, offset: 0, bytes: counts[s.rank]! }, { buf: RECV, offset: displs[s.rank]! });
  b.round();
  for (let k = 0; k < p - 1; k++) {
    const out = (s.rank - k + p) % p;
    const inn = (s.rank - k - 1 + p) % p;
    if (counts[out]! > 0) b.send((s.rank + 1) % p, k === 0 ? { buf: SEND, offset: 0, bytes: counts[out]! } : { buf: RECV, offset: displs[out]!, bytes: counts[out]! });
    if (counts[inn]! > 0) b.recv((s.rank - 1 + p) % p, { buf: RECV, offset: displs[inn]!, bytes: counts[inn]! });
    b.round();
  }
  return b.build();
}
