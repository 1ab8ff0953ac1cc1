/**
 * Proof that the lean blocking paths (coll/communicator.ts: allreduce, barrier, bcast and
 * alltoall run straight on the transport) send exactly the messages of the schedules they
 * replace. Run on every rank of a job.
 *
 * Each case runs twice on one communicator with the same input: first as the plain blocking
 * call, which takes the lean path, then with `{ algorithm }` naming the schedule the lean path
 * stands for, which sends the call through the host executor. Both runs are traced
 * (`Comm.traceMessages`) and must agree:
 * - the plain run started no schedule (it was lean), the forced run exactly one;
 * - the same sends in the same order: destination, context, bytes, and tag relative to the
 *   call's own (the k-th collective on a communicator tags its messages 16k .. 16k + 15);
 * - the same receives: in the same order where the schedule has one receive outstanding at a
 *   time (allreduce, barrier, bcast), per source where it posts all of them at once (alltoall:
 *   the executor matches whichever message arrives first, the lean path takes them in turn);
 * - the same result, bit for bit (floats are random fractions, so another fold order shows).
 * On one rank there is no lean path (nothing to send): the plain run must start its schedule
 * and both runs send nothing.
 *
 * Cases the selection gives to another algorithm (`comm.algorithmFor`: small alltoall blocks on
 * 8 or more ranks go to bruck; across nodes with several ranks each, `hier` where the cost
 * model predicts a gain) have no lean path to prove and are skipped.
 *
 * Returns how many cases ran lean and matched, per collective, and how many were skipped.
 */
import assert from 'node:assert/strict';
import {
  IN_PLACE, type CollOptions, type Communicator, type OpLike, type TypedArray,
} from 'nbcoll';
import { DType, bytesPerElement, ctorOf, dtypeName, isBigInt, isFloat } from 'nbcoll/testing';
import { matmul, messages, perSource, tracer } from './common.ts';

type DT = (typeof DType)[keyof typeof DType];
type LeanColl = 'allreduce' | 'barrier' | 'bcast' | 'alltoall';

interface Case {
  name: string;
  coll: LeanColl;
  /** The schedule the lean path stands for, as `{ algorithm }` names it. */
  algorithm: string;
  /** Bytes per message, as the selection table sees the call. */
  bytes: number;
  commutative: boolean;
  /** Receives matched in the schedule's order (one outstanding at a time), else per source. */
  recvOrder: 'total' | 'per-source';
  /** Runs the call on fresh buffers holding the case's input; returns the result's bytes. */
  run: (opts: CollOptions | undefined) => Uint8Array;
}

/** Message sizes: empty, one word, a few words, a larger eager message (all under the eager limit). */
const SIZES = [0, 8, 64, 1024];


/** Allreduce (dtype, op, elements per item, commutative). */
const REDUCTIONS: Array<[DT, string, OpLike, number, boolean]> = [
  [DType.Float64, 'sum', 'sum', 1, true],
  [DType.Float32, 'sum', 'sum', 1, true],
  [DType.Float64, 'matmul', matmul, 4, false],
  [DType.Int32, 'prod', 'prod', 1, true],
  [DType.BigInt64, 'sum', 'sum', 1, true],
  [DType.Uint8, 'max', 'max', 1, true],
  [DType.Float64, 'minloc', 'minloc', 2, true],
];

/** A small deterministic generator (mulberry32): the same numbers for the same seed on every run. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * `n` input elements of world rank `me` for case `seed`: random fractions for float sums (a
 * different fold order gives different bits), small integers for products (exact, no
 * overflow), (value, rank) pairs for minloc, random bits otherwise.
 */
function gen(dt: DT, op: string, me: number, seed: number, n: number): TypedArray {
  const a = new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
  const next = random(me * 7919 + seed * 104729 + 1);
  const out = a as unknown as Array<number | bigint>;
  for (let i = 0; i < n; i++) {
    const r = next();
    let v: number;
    if (op === 'prod' || op === 'matmul') v = Math.floor(r * 4) - 1;
    else if (op === 'minloc') v = i % 2 === 1 ? me : Math.floor(r * 5) - 2;
    else if (isFloat(dt)) v = r * 2 - 1;
    else v = Math.floor(r * 2 ** 31);
    out[i] = isBigInt(dt) ? BigInt(v) * 4294967311n : v;
  }
  return a;
}

const bytesOf = (a: TypedArray): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();
const EMPTY = new Uint8Array(0);

/** Every case for communicator `c`, in an order every member agrees on. */
function cases(c: Communicator): Case[] {
  const me = c.worldRankOf(c.rank);
  const p = c.size;
  const out: Case[] = [];
  let seed = 0;

  for (let k = 0; k < 2; k++) {
    out.push({
      name: `barrier #${k}`, coll: 'barrier', algorithm: 'dissemination:1', bytes: 0, commutative: true, recvOrder: 'total',
      run: (opts) => { c.barrier(opts); return EMPTY; },
    });
  }

  for (const [r, [dt, opName, op, item, commutative]] of REDUCTIONS.entries()) {
    const bpe = bytesPerElement(dt);
    // Every size and IN_PLACE both ways (no copy-in there) for the first; the others' messages
    // differ only in bytes, so two sizes each prove their fold order.
    const first = r === 0;
    for (const bytes of first ? SIZES : SIZES.slice(2)) {
      const n = bytes / bpe;
      if (n % item !== 0) continue;
      for (const variant of first ? ['buffers', 'IN_PLACE send', 'IN_PLACE recv'] : ['buffers']) {
        const s = ++seed;
        out.push({
          name: `allreduce ${opName} of ${n} ${dtypeName(dt)} (${bytes} B, ${variant})`,
          coll: 'allreduce', algorithm: 'recursive-doubling', bytes, commutative, recvOrder: 'total',
          run: (opts) => {
            const input = gen(dt, opName, me, s, n);
            if (variant === 'IN_PLACE send') c.allreduce(IN_PLACE, input, op, opts);
            else if (variant === 'IN_PLACE recv') c.allreduce(input, IN_PLACE, op, opts);
            else {
              const result = new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
              c.allreduce(input, result, op, opts);
              return bytesOf(result);
            }
            return bytesOf(input);
          },
        });
      }
    }
  }

  const bcastTypes: DT[] = [DType.Uint8, DType.Float64, DType.Int16, DType.BigInt64];
  for (let root = 0; root < p; root++) {
    // two sizes per root, so that two roots cover every size
    [root % 4, (root + 2) % 4].forEach((i) => {
      const bytes = SIZES[i]!;
      const dt = bcastTypes[(root + i) % bcastTypes.length]!;
      const n = bytes / bytesPerElement(dt);
      const s = ++seed;
      out.push({
        name: `bcast of ${bytes} B from root ${root}`, coll: 'bcast', algorithm: 'binomial', bytes, commutative: true, recvOrder: 'total',
        run: (opts) => {
          const buf = c.rank === root ? gen(dt, 'x', root, s, n) : new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
          c.bcast(buf, root, opts);
          return bytesOf(buf);
        },
      });
    });
  }

  const alltoallTypes: DT[] = [DType.Float64, DType.Int8, DType.Uint16, DType.Int32];
  SIZES.forEach((block, i) => {
    const dt = alltoallTypes[i % alltoallTypes.length]!;
    const n = (block / bytesPerElement(dt)) * p;
    const s = ++seed;
    out.push({
      name: `alltoall of ${block}-byte blocks`, coll: 'alltoall', algorithm: 'scattered', bytes: block, commutative: true, recvOrder: 'per-source',
      run: (opts) => {
        const recv = new (ctorOf(dt) as unknown as new (n: number) => TypedArray)(n);
        c.alltoall(gen(dt, 'x', me, s, n), recv, opts);
        return bytesOf(recv);
      },
    });
  });
  return out;
}

/** Runs every case on `c`; adds what it proved to `tally`. */
function prove(c: Communicator, label: string, tally: Record<LeanColl | 'skipped', number>): void {
  const traced = tracer(c); // c is fresh: its first collective is call 0
  for (const kase of cases(c)) {
    if (c.algorithmFor(kase.coll, kase.bytes, { commutative: kase.commutative }) !== kase.algorithm) {
      tally.skipped++;
      continue;
    }
    const what = `${kase.name} on ${label} (${c.size} ranks), rank ${c.rank}`;
    const lean = traced(() => kase.run(undefined));
    const sched = traced(() => kase.run({ algorithm: kase.algorithm }));
    const leanExpected = c.size > 1;
    assert.equal(lean.trace.schedules, leanExpected ? 0 : 1,
      `${what}: the plain call started ${lean.trace.schedules} schedule(s); expected ${leanExpected ? 'the lean path (none)' : 'its schedule (one rank has no lean path)'}`);
    assert.equal(sched.trace.schedules, 1, `${what}: the call forced to '${kase.algorithm}' started ${sched.trace.schedules} schedules; expected 1`);
    assert.deepEqual(messages(lean.trace.sends, lean, c.collCtx, what, 'to'), messages(sched.trace.sends, sched, c.collCtx, what, 'to'),
      `${what}: the lean path's sends (left) differ from those of schedule '${kase.algorithm}' (right)`);
    const order = kase.recvOrder === 'total' ? (m: string[]) => m : perSource;
    assert.deepEqual(order(messages(lean.trace.recvs, lean, c.collCtx, what, 'from')), order(messages(sched.trace.recvs, sched, c.collCtx, what, 'from')),
      `${what}: the lean path's receives (left) differ from those of schedule '${kase.algorithm}' (right), compared ${kase.recvOrder === 'total' ? 'in order' : 'per source'}`);
    if (!leanExpected) assert.equal(lean.trace.sends.length + lean.trace.recvs.length, 0, `${what}: one rank sends nothing`);
    assert.deepEqual(lean.out, sched.out, `${what}: the lean result's bytes (left) differ from the schedule's (right)`);
    if (leanExpected) tally[kase.coll]++;
  }
}

export default function main(w: Communicator): unknown {
  const tally: Record<LeanColl | 'skipped', number> = { allreduce: 0, barrier: 0, bcast: 0, alltoall: 0, skipped: 0 };
  // A fresh duplicate of the world, then the world reversed (its ranks are not world ranks)
  prove(w.dup() as Communicator, 'a dup of the world', tally);
  prove(w.split(0, w.size - w.rank) as Communicator, 'the world reversed', tally);
  return tally;
}
