/**
 * Barrier algorithms.
 *
 * dissemination (seed 001, n-way): in round k every rank sends to the n ranks
 * rank + j*(n+1)^k (j = 1..n) and receives from rank - j*(n+1)^k, so after
 * ceil(log_{n+1} p) rounds every rank has heard, transitively, from every other. n = 1 is the
 * classic dissemination barrier; larger n trades more messages per round for fewer rounds.
 */
import { RECV, ScheduleBuilder, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

export function dissemination(s: CollShape): Schedule {
  const n = Math.max(1, s.radix);
  const b = new ScheduleBuilder(`barrier/dissemination(n=${n})`);
  const empty = { buf: RECV, offset: 0, bytes: 0 } as const;
  for (let dist = 1; dist < s.size; dist *= n + 1) {
    for (let j = 1; j <= n && j * dist < s.size; j++) {
      b.send((s.rank + j * dist) % s.size, empty);
      b.recv((s.rank - j * dist + s.size * (n + 1)) % s.size, empty);
    }
    b.round();
  }
  return b.build();
}
