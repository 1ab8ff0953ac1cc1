/**
 * Allreduce algorithms. Contribution in SEND (or IN_PLACE: SEND is RECV), result in RECV on
 * every rank, bitwise identical everywhere: each partial result is either computed by both
 * partners from the same operands in the same order (recursive doubling), or computed once and
 * then copied (k-nomial, Rabenseifner, ring).
 *
 * Non-powers of two (recursive doubling, Rabenseifner) fold pairs of ranks first
 * (patterns.ts).
 *
 * - recursiveDoubling: log2(p') exchanges of the whole vector; any op.
 * - knomialReduceBcast (seed 000): k-nomial reduce to rank 0, k-nomial bcast back; any op.
 * - rabenseifner: recursive-halving reduce-scatter + recursive-doubling allgather; commutative.
 * - ring: ring reduce-scatter + ring allgather; commutative; bandwidth-optimal for large p.
 * - direct: every rank sends its vector to every other, then folds all p in rank order; any op.
 */
import { RECV, SEND, ScheduleBuilder, TMP, type Schedule } from '../sched/schedule.js';
import { knomialInto } from './bcast.js';
import { copyIn, foldInto, reduceScatterHalvingInto, unfoldInto } from './patterns.js';
import { knomialReduceInto } from './reduce.js';
import { blocks, type CollShape } from './shape.js';

export function recursiveDoubling(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allreduce/recursive-doubling');
  copyIn(b, s);
  if (s.size === 1) return b.build();
  const all = s.bytes;
  const tmp = b.tmpAlloc(all);
  const f = foldInto(b, s, tmp);
  if (f.newrank >= 0) {
    for (let mask = 1; mask < f.pp; mask <<= 1) {
      const partnerNr = f.newrank ^ mask;
      const partner = f.realOf(partnerNr);
      b.send(partner, { buf: RECV, offset: 0, bytes: all });
      b.recv(partner, { buf: TMP, offset: tmp, bytes: all });
      b.round();
      if (partnerNr < f.newrank) {
        b.reduce(s.op, s.dtype, { buf: TMP, offset: tmp, bytes: all }, { buf: RECV, offset: 0 });
      } else {
        // mine ⊕ theirs: fold into the scratch copy, then take it back
        b.reduce(s.op, s.dtype, { buf: RECV, offset: 0, bytes: all }, { buf: TMP, offset: tmp });
        b.copy({ buf: TMP, offset: tmp, bytes: all }, { buf: RECV, offset: 0 });
      }
    }
    b.round();
  }
  unfoldInto(b, s, f);
  return b.build();
}

export function knomialReduceBcast(s: CollShape): Schedule {
  const b = new ScheduleBuilder(`allreduce/knomial-reduce-bcast(k=${s.radix})`);
  const at0 = { ...s, root: 0 };
  knomialReduceInto(b, at0, s.radix);
  knomialInto(b, at0, s.radix);
  return b.build();
}

export function rabenseifner(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allreduce/rabenseifner');
  if (s.size === 1) {
    copyIn(b, s);
    return b.build();
  }
  const layout = reduceScatterHalvingInto(b, s);
  const { blockStart: start, E } = layout;
  const span = (from: number, to: number) => ({ buf: RECV, offset: start[from]! * E, bytes: (start[to]! - start[from]!) * E }) as const;
  if (layout.newrank >= 0) {
    for (let mask = 1; mask < layout.pp; mask <<= 1) {
      const partnerNr = layout.newrank ^ mask;
      const partner = layout.realOf(partnerNr);
      const mine = layout.newrank & ~(mask - 1);
      const theirs = partnerNr & ~(mask - 1);
      const out = span(mine, mine + mask);
      const inn = span(theirs, theirs + mask);
      if (out.bytes > 0) b.send(partner, out);
      if (inn.bytes > 0) b.recv(partner, inn);
      b.round();
    }
  }
  unfoldInto(b, s, layout);
  return b.build();
}

/**
 * Pipelined ring, as a DAG: no artificial rounds. Step k of the reduce-scatter sends block
 * rank-k as soon as it is reduced (it was received at step k-1) and receives block rank-k-1
 * into one of two alternating scratch slots; the allgather forwards each block as soon as it
 * arrives. Every write-after-read hazard is an explicit dependency (noted below), so a send
 * never waits for an unrelated receive.
 */
export function ring(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allreduce/ring');
  const p = s.size;
  const copied = b.copy({ buf: SEND, offset: 0, bytes: s.bytes }, { buf: RECV, offset: 0 }, []);
  if (p === 1) return b.build();
  const E = s.esize;
  const { start, len } = blocks(s.bytes / E, p);
  let maxLen = 0;
  for (let i = 0; i < p; i++) maxLen = Math.max(maxLen, len[i]!);
  const slots = [b.tmpAlloc(maxLen * E), b.tmpAlloc(maxLen * E)];
  const right = (s.rank + 1) % p;
  const left = (s.rank - 1 + p) % p;
  const mod = (x: number) => ((x % p) + p) % p;
  const blk = (i: number) => ({ buf: RECV, offset: start[i]! * E, bytes: len[i]! * E }) as const;
  const dep = (...xs: number[]): number[] => xs.filter((x) => x >= 0);
  // Chains follow the last action that really exists: with fewer elements than ranks some
  // blocks are empty and their actions are skipped (-1), and a dependency on "the previous
  // step" would silently vanish at such a gap.
  let lastReduce = copied; // the end of the reduction chain so far
  const slotReader = [-1, -1]; // the last reduction that read each scratch slot
  const sends: number[] = [];
  const reduces: number[] = [];
  for (let k = 0; k < p - 1; k++) {
    const out = mod(s.rank - k);
    const inn = mod(s.rank - k - 1);
    // block `out` is final for this step once step k-1 folded it in (or, at k = 0, copied)
    sends.push(len[out]! > 0 ? b.send(right, blk(out), dep(k === 0 ? copied : reduces[k - 1]!)) : -1);
    const slot = k % 2;
    let r = -1;
    if (len[inn]! > 0) {
      // the slot is free once the last reduction that read it is done
      const got = b.recv(left, { buf: TMP, offset: slots[slot]!, bytes: len[inn]! * E }, dep(slotReader[slot]!));
      r = b.reduce(s.op, s.dtype, { buf: TMP, offset: slots[slot]!, bytes: len[inn]! * E }, { buf: RECV, offset: start[inn]! * E },
        dep(got, lastReduce));
      lastReduce = r;
      slotReader[slot] = r;
    }
    reduces.push(r);
  }
  // allgather: this rank owns block rank+1 once the whole reduction chain is done
  let prevRecv = -1;
  for (let k = 0; k < p - 1; k++) {
    const out = mod(s.rank + 1 - k);
    const inn = mod(s.rank - k);
    if (len[out]! > 0) b.send(right, blk(out), dep(prevRecv, lastReduce));
    // block `inn` may still be leaving in the reduce-scatter's send of step k
    prevRecv = len[inn]! > 0 ? b.recv(left, blk(inn), dep(sends[k]!, lastReduce)) : -1;
  }
  return b.build();
}

/**
 * Direct: in one round every rank sends its vector to every other rank and receives theirs,
 * then folds all p in rank order, x0 ⊕ (x1 ⊕ (... ⊕ x(p-1))), the same operands in the same
 * order on every rank, so the same bits everywhere, for any op. p - 1 messages each way and
 * p - 1 folds per rank, against recursive doubling's log2 p: for small vectors on few ranks.
 * What it buys is that a started call needs nothing more from the other ranks than that they
 * started it too: a rank that computes between `iallreduce` and `wait` does not hold up the
 * others' later rounds, since there are none (recursive doubling sends its second round only
 * from inside a test() or wait()). The fold runs in scratch, so IN_PLACE (SEND is RECV) is safe.
 */
export function direct(s: CollShape): Schedule {
  const b = new ScheduleBuilder('allreduce/direct');
  const p = s.size;
  const all = s.bytes;
  if (p === 1) {
    copyIn(b, s);
    return b.build();
  }
  const slot: number[] = [];
  for (let r = 0; r < p; r++) slot.push(r === s.rank ? -1 : b.tmpAlloc(all));
  const acc = b.tmpAlloc(all);
  for (let k = 1; k < p; k++) b.send((s.rank + k) % p, { buf: SEND, offset: 0, bytes: all });
  for (let k = 1; k < p; k++) {
    const from = (s.rank - k + p) % p;
    b.recv(from, { buf: TMP, offset: slot[from]!, bytes: all });
  }
  b.round();
  const of = (r: number) => (r === s.rank ? { buf: SEND, offset: 0 } : { buf: TMP, offset: slot[r]! }) as { buf: typeof SEND | typeof TMP; offset: number };
  b.copy({ ...of(p - 1), bytes: all }, { buf: TMP, offset: acc });
  for (let r = p - 2; r >= 0; r--) b.reduce(s.op, s.dtype, { ...of(r), bytes: all }, { buf: TMP, offset: acc });
  b.copy({ buf: TMP, offset: acc, bytes: all }, { buf: RECV, offset: 0 });
  b.round();
  return b.build();
}

