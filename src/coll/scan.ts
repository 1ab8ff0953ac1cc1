/**
 * Inclusive and exclusive prefix reductions by recursive doubling (any op, rank order kept).
 * `partial` holds the fold of the contiguous rank range this rank has heard of so far;
 * `result` folds only lower ranks (and, for scan, the own contribution). At distance `mask`
 * the partner is rank ^ mask; a lower partner's partial goes to the left of both.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

function prefix(s: CollShape, inclusive: boolean): Schedule {
  const b = new ScheduleBuilder(`${inclusive ? 'scan' : 'exscan'}/recursive-doubling`);
  const B = s.bytes;
  const partial = b.tmpAlloc(B);
  const got = b.tmpAlloc(B);
  b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: TMP, offset: partial });
  if (inclusive) b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: RECV, offset: 0 });
  b.round();
  let haveResult = inclusive;
  for (let mask = 1; mask < s.size; mask <<= 1) {
    const partner = s.rank ^ mask;
    if (partner >= s.size) continue;
    b.send(partner, { buf: TMP, offset: partial, bytes: B });
    b.recv(partner, { buf: TMP, offset: got, bytes: B });
    b.round();
    if (partner < s.rank) {
      // got ⊕ result, got ⊕ partial
      if (haveResult) b.reduce(s.op, s.dtype, { buf: TMP, offset: got, bytes: B }, { buf: RECV, offset: 0 });
      else b.copy({ buf: TMP, offset: got, bytes: B }, { buf: RECV, offset: 0 });
      haveResult = true;
      b.reduce(s.op, s.dtype, { buf: TMP, offset: got, bytes: B }, { buf: TMP, offset: partial });
    } else {
      // partial ⊕ got, computed into got and moved back
      b.reduce(s.op, s.dtype, { buf: TMP, offset: partial, bytes: B }, { buf: TMP, offset: got });
      b.copy({ buf: TMP, offset: got, bytes: B }, { buf: TMP, offset: partial });
    }
  }
  b.round();
  return b.build();
}

export function scanRecursiveDoubling(s: CollShape): Schedule {
  return prefix(s, true);
}

export function exscanRecursiveDoubling(s: CollShape): Schedule {
  return prefix(s, false);
}
