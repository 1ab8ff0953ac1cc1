/**
 * Every collective as a checkable case, for the reliability jobs (soak-job.ts, load-job.ts):
 * `start` posts one call (blocking, non-blocking or persistent) on a communicator with inputs
 * that every rank can generate for every rank, and `check` compares what arrived with a
 * sequential reference computed from those inputs, independently of the library. Inputs are
 * small Int32 integers, so sums are exact whatever the fold order.
 */
import type { CollOptions, Communicator } from '../coll/communicator.js';
import type { PersistentRequest } from '../coll/persistent.js';
import type { Request } from '../p2p/request.js';

/** Input element `i` of `rank` for the call with salt `salt`: -48..48. */
export function inputOf(rank: number, i: number, salt: number): number {
  return ((rank * 131 + i * 7 + salt * 13) % 97 + 97) % 97 - 48;
}

export type CallMode = 'blocking' | 'nonblocking' | 'persistent';

/** What a posted call can be waited on with: a Request, or a started persistent request. */
export interface Waitable {
  readonly done: boolean;
  test(): boolean;
  wait(): unknown;
}

/** One posted call: wait on `req` (null: a blocking call, already done), then `check`. */
export interface Posted {
  req: Waitable | null;
  /** Throws naming the first element that differs from the reference. */
  check(): void;
  /** Releases what the call holds (a persistent request). */
  free(): void;
}

export interface CollCase {
  name: string;
  /** Posts the call with `n` elements per rank (per block for the gathering ones). */
  start(c: Communicator, n: number, salt: number, mode: CallMode, opts: CollOptions | undefined): Posted;
}

/** Runs a call in `mode`: blocking calls return null, persistent ones start at once. */
interface Forms {
  blocking(): void;
  nonblocking(): Request;
  persistent(): PersistentRequest;
}

function post(mode: CallMode, f: Forms, check: () => void): Posted {
  if (mode === 'blocking') {
    f.blocking();
    return { req: null, check, free: () => {} };
  }
  if (mode === 'nonblocking') return { req: f.nonblocking(), check, free: () => {} };
  const p = f.persistent();
  p.start();
  return { req: p, check, free: () => p.free() };
}

function fill(a: Int32Array, rank: number, salt: number, from = 0): Int32Array {
  for (let i = 0; i < a.length; i++) a[i] = inputOf(rank, from + i, salt);
  return a;
}

/** Compares `got[at..at+want.length)` with `want(i)`; throws at the first difference. */
function expect(what: string, got: Int32Array, at: number, n: number, want: (i: number) => number): void {
  for (let i = 0; i < n; i++) {
    const w = want(i);
    if (got[at + i] !== w) throw new Error(`${what}: element ${at + i} is ${got[at + i]}, expected ${w}`);
  }
}

function sumOver(from: number, to: number, i: number, salt: number): number {
  let s = 0;
  for (let q = from; q < to; q++) s += inputOf(q, i, salt);
  return s;
}

/** Counts n + q for rank q (the v-variants), and their displacements. */
function vcounts(p: number, n: number): { counts: number[]; displs: number[]; total: number } {
  const counts: number[] = [];
  const displs: number[] = [];
  let total = 0;
  for (let q = 0; q < p; q++) {
    counts.push(n + q);
    displs.push(total);
    total += n + q;
  }
  return { counts, displs, total };
}

const SUM = 'sum';

export const COLL_CASES: readonly CollCase[] = [
  {
    name: 'barrier',
    start: (c, _n, _s, mode, o) => post(mode, {
      blocking: () => c.barrier(o), nonblocking: () => c.ibarrier(o), persistent: () => c.barrierInit(o),
    }, () => {}),
  },
  {
    name: 'bcast',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const buf = new Int32Array(n);
      if (c.rank === root) fill(buf, root, s);
      else buf.fill(-999);
      return post(mode, {
        blocking: () => c.bcast(buf, root, o), nonblocking: () => c.ibcast(buf, root, o), persistent: () => c.bcastInit(buf, root, o),
      }, () => expect(`bcast from ${root}`, buf, 0, n, (i) => inputOf(root, i, s)));
    },
  },
  {
    name: 'reduce',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.reduce(send, recv, SUM, root, o), nonblocking: () => c.ireduce(send, recv, SUM, root, o),
        persistent: () => c.reduceInit(send, recv, SUM, root, o),
      }, () => { if (c.rank === root) expect(`reduce to ${root}`, recv, 0, n, (i) => sumOver(0, c.size, i, s)); });
    },
  },
  {
    name: 'allreduce',
    start: (c, n, s, mode, o) => {
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.allreduce(send, recv, SUM, o), nonblocking: () => c.iallreduce(send, recv, SUM, o),
        persistent: () => c.allreduceInit(send, recv, SUM, o),
      }, () => expect('allreduce', recv, 0, n, (i) => sumOver(0, c.size, i, s)));
    },
  },
  {
    name: 'gather',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(c.rank === root ? n * c.size : 0);
      return post(mode, {
        blocking: () => c.gather(send, recv, root, o), nonblocking: () => c.igather(send, recv, root, o),
        persistent: () => c.gatherInit(send, recv, root, o),
      }, () => {
        if (c.rank !== root) return;
        for (let q = 0; q < c.size; q++) expect(`gather to ${root}, block ${q}`, recv, q * n, n, (i) => inputOf(q, i, s));
      });
    },
  },
  {
    name: 'scatter',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const send = c.rank === root ? fill(new Int32Array(n * c.size), root, s) : null;
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.scatter(send, recv, root, o), nonblocking: () => c.iscatter(send, recv, root, o),
        persistent: () => c.scatterInit(send, recv, root, o),
      }, () => expect(`scatter from ${root}`, recv, 0, n, (i) => inputOf(root, c.rank * n + i, s)));
    },
  },
  {
    name: 'allgather',
    start: (c, n, s, mode, o) => {
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(n * c.size);
      return post(mode, {
        blocking: () => c.allgather(send, recv, o), nonblocking: () => c.iallgather(send, recv, o),
        persistent: () => c.allgatherInit(send, recv, o),
      }, () => { for (let q = 0; q < c.size; q++) expect(`allgather block ${q}`, recv, q * n, n, (i) => inputOf(q, i, s)); });
    },
  },
  {
    name: 'alltoall',
    start: (c, n, s, mode, o) => {
      const p = c.size;
      const send = new Int32Array(n * p);
      for (let q = 0; q < p; q++) fill(send.subarray(q * n, (q + 1) * n), c.rank * p + q, s);
      const recv = new Int32Array(n * p);
      return post(mode, {
        blocking: () => c.alltoall(send, recv, o), nonblocking: () => c.ialltoall(send, recv, o),
        persistent: () => c.alltoallInit(send, recv, o),
      }, () => { for (let q = 0; q < p; q++) expect(`alltoall block from ${q}`, recv, q * n, n, (i) => inputOf(q * p + c.rank, i, s)); });
    },
  },
  {
    name: 'reduceScatterBlock',
    start: (c, n, s, mode, o) => {
      const send = fill(new Int32Array(n * c.size), c.rank, s);
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.reduceScatterBlock(send, recv, SUM, o), nonblocking: () => c.ireduceScatterBlock(send, recv, SUM, o),
        persistent: () => c.reduceScatterBlockInit(send, recv, SUM, o),
      }, () => expect('reduceScatterBlock', recv, 0, n, (i) => sumOver(0, c.size, c.rank * n + i, s)));
    },
  },
  {
    name: 'scan',
    start: (c, n, s, mode, o) => {
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.scan(send, recv, SUM, o), nonblocking: () => c.iscan(send, recv, SUM, o),
        persistent: () => c.scanInit(send, recv, SUM, o),
      }, () => expect('scan', recv, 0, n, (i) => sumOver(0, c.rank + 1, i, s)));
    },
  },
  {
    name: 'exscan',
    start: (c, n, s, mode, o) => {
      const send = fill(new Int32Array(n), c.rank, s);
      const recv = new Int32Array(n);
      return post(mode, {
        blocking: () => c.exscan(send, recv, SUM, o), nonblocking: () => c.iexscan(send, recv, SUM, o),
        persistent: () => c.exscanInit(send, recv, SUM, o),
      }, () => { if (c.rank > 0) expect('exscan', recv, 0, n, (i) => sumOver(0, c.rank, i, s)); });
    },
  },
  {
    name: 'gatherv',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const v = vcounts(c.size, n);
      const send = fill(new Int32Array(n + c.rank), c.rank, s);
      const recv = new Int32Array(c.rank === root ? v.total : 0);
      return post(mode, {
        blocking: () => c.gatherv(send, recv, v.counts, v.displs, root, o),
        nonblocking: () => c.igatherv(send, recv, v.counts, v.displs, root, o),
        persistent: () => c.gathervInit(send, recv, v.counts, v.displs, root, o),
      }, () => {
        if (c.rank !== root) return;
        for (let q = 0; q < c.size; q++) expect(`gatherv block ${q}`, recv, v.displs[q]!, v.counts[q]!, (i) => inputOf(q, i, s));
      });
    },
  },
  {
    name: 'scatterv',
    start: (c, n, s, mode, o) => {
      const root = s % c.size;
      const v = vcounts(c.size, n);
      const send = c.rank === root ? fill(new Int32Array(v.total), root, s) : null;
      const recv = new Int32Array(n + c.rank);
      return post(mode, {
        blocking: () => c.scatterv(send, v.counts, v.displs, recv, root, o),
        nonblocking: () => c.iscatterv(send, v.counts, v.displs, recv, root, o),
        persistent: () => c.scattervInit(send, v.counts, v.displs, recv, root, o),
      }, () => expect(`scatterv from ${root}`, recv, 0, n + c.rank, (i) => inputOf(root, v.displs[c.rank]! + i, s)));
    },
  },
  {
    name: 'allgatherv',
    start: (c, n, s, mode, o) => {
      const v = vcounts(c.size, n);
      const send = fill(new Int32Array(n + c.rank), c.rank, s);
      const recv = new Int32Array(v.total);
      return post(mode, {
        blocking: () => c.allgatherv(send, recv, v.counts, v.displs, o),
        nonblocking: () => c.iallgatherv(send, recv, v.counts, v.displs, o),
        persistent: () => c.allgathervInit(send, recv, v.counts, v.displs, o),
      }, () => { for (let q = 0; q < c.size; q++) expect(`allgatherv block ${q}`, recv, v.displs[q]!, v.counts[q]!, (i) => inputOf(q, i, s)); });
    },
  },
  {
    name: 'alltoallv',
    start: (c, n, s, mode, o) => {
      // rank r sends n + r + q elements to rank q
      const p = c.size;
      const me = c.rank;
      const sc: number[] = [], sd: number[] = [], rc: number[] = [], rd: number[] = [];
      let st = 0, rt = 0;
      for (let q = 0; q < p; q++) {
        sc.push(n + me + q); sd.push(st); st += n + me + q;
        rc.push(n + q + me); rd.push(rt); rt += n + q + me;
      }
      const send = new Int32Array(st);
      for (let q = 0; q < p; q++) fill(send.subarray(sd[q]!, sd[q]! + sc[q]!), me * p + q, s);
      const recv = new Int32Array(rt);
      return post(mode, {
        blocking: () => c.alltoallv(send, sc, sd, recv, rc, rd, o),
        nonblocking: () => c.ialltoallv(send, sc, sd, recv, rc, rd, o),
        persistent: () => c.alltoallvInit(send, sc, sd, recv, rc, rd, o),
      }, () => { for (let q = 0; q < p; q++) expect(`alltoallv block from ${q}`, recv, rd[q]!, rc[q]!, (i) => inputOf(q * p + me, i, s)); });
    },
  },
  {
    name: 'reduceScatter',
    start: (c, n, s, mode, o) => {
      const v = vcounts(c.size, n);
      const send = fill(new Int32Array(v.total), c.rank, s);
      const recv = new Int32Array(n + c.rank);
      return post(mode, {
        blocking: () => c.reduceScatter(send, recv, v.counts, SUM, o),
        nonblocking: () => c.ireduceScatter(send, recv, v.counts, SUM, o),
        persistent: () => c.reduceScatterInit(send, recv, v.counts, SUM, o),
      }, () => expect('reduceScatter', recv, 0, n + c.rank, (i) => sumOver(0, c.size, v.displs[c.rank]! + i, s)));
    },
  },
];

export function collCase(name: string): CollCase {
  const c = COLL_CASES.find((k) => k.name === name);
  if (c === undefined) throw new Error(`unknown collective case '${name}'; expected one of ${COLL_CASES.map((k) => k.name).join(', ')}`);
  return c;
}
