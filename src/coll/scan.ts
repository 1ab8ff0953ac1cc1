/**
 * Inclusive and exclusive prefix reductions by recursive doubling (any op, rank order kept).
 * `partial` holds the fold of the contiguous rank range this rank has heard of so far;
 * `result` folds only lower ranks (and, for scan, the own contribution). At distance `mask`
 * the partner is rank ^ mask; a lower partner's partial goes to the left of both.
 *
 * Only what a partner uses travels: a higher partner always needs the lower one's partial (for
 * its result), a lower partner only where it still sends its partial on later (`sendsLater`);
 * a partial nobody will ask for is not updated. On 2 ranks an exscan is then one message, and a
 * scan one message and a fold. The partial stays the send buffer until it first changes, and a
 * rank's first lower contribution lands in recv directly.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Place, type Schedule } from '../sched/schedule.js';
import type { CollShape } from './shape.js';

/**
 * Whether rank x, after its exchange at distance `mask`, still sends its partial to a partner
 * that uses it. Every rank computes the same answer for every other, so sends and receives
 * pair up. `memo` holds the answers for one schedule.
 */
function sendsLater(x: number, mask: number, size: number, memo: Map<number, boolean>): boolean {
  const key = x * 64 + Math.log2(mask);
  const known = memo.get(key);
  if (known !== undefined) return known;
  let later = false;
  for (let m = mask * 2; m < size && !later; m *= 2) {
    const q = x ^ m;
    if (q < size) later = uses(q, x, m, size, memo);
  }
  memo.set(key, later);
  return later;
}

/** Whether rank q uses the partial rank x sends it at distance `mask`. */
function uses(q: number, x: number, mask: number, size: number, memo: Map<number, boolean>): boolean {
  return x < q || sendsLater(q, mask, size, memo);
}

function prefix(s: CollShape, inclusive: boolean): Schedule {
  const b = new ScheduleBuilder(`${inclusive ? 'scan' : 'exscan'}/recursive-doubling`);
  const B = s.bytes;
  const memo = new Map<number, boolean>();
  let partial: Place = { buf: SEND, offset: 0 };
  let got = -1;
  const gotAt = (): number => (got >= 0 ? got : (got = b.tmpAlloc(B)));
  /** The partial as a TMP region of its own, copied from send the first time. */
  const ownPartial = (): Place => {
    if (partial.buf === SEND) {
      const at = b.tmpAlloc(B);
      b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: TMP, offset: at });
      partial = { buf: TMP, offset: at };
    }
    return partial;
  };
  if (inclusive) b.copy({ buf: SEND, offset: 0, bytes: B }, { buf: RECV, offset: 0 });
  let haveResult = inclusive;
  for (let mask = 1; mask < s.size; mask <<= 1) {
    const partner = s.rank ^ mask;
    if (partner >= s.size) continue;
    const keep = sendsLater(s.rank, mask, s.size, memo);
    const sendIt = uses(partner, s.rank, mask, s.size, memo);
    const recvIt = partner < s.rank || keep;
    if (!sendIt && !recvIt) continue;
    if (sendIt) b.send(partner, { ...partial, bytes: B });
    let into: Place = { buf: RECV, offset: 0 };
    if (recvIt) {
      if (partner > s.rank || haveResult) into = { buf: TMP, offset: gotAt() };
      b.recv(partner, { ...into, bytes: B });
    }
    b.round();
    if (!recvIt) continue;
    if (partner < s.rank) {
      // got ⊕ result (got may already be the result), then got ⊕ partial where it is sent on
      if (into.buf !== RECV) b.reduce(s.op, s.dtype, { ...into, bytes: B }, { buf: RECV, offset: 0 });
      haveResult = true;
      if (keep) b.reduce(s.op, s.dtype, { ...into, bytes: B }, ownPartial());
    } else {
      // partial ⊕ got, computed into got and kept as the partial
      b.reduce(s.op, s.dtype, { ...partial, bytes: B }, into);
      if (partial.buf === SEND) {
        partial = into;
        got = -1;
      } else {
        b.copy({ ...into, bytes: B }, partial);
      }
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
