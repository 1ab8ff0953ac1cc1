/**
 * Proof that a blocking collective the host executor runs inside the call
 * (HostExecutor.runNow: rounds of eager messages straight on the transport) does what its
 * non-blocking form does through the schedule interpreter. Run on every rank of a job.
 *
 * Each case runs twice on one communicator with the same input: as the blocking call, then as
 * its non-blocking form waited for. Both runs are traced (`Comm.traceMessages`) and must agree:
 * - the blocking run ran its schedule inside the call (`MessageTrace.direct`), or else started
 *   it as the non-blocking form does (a schedule with a DAG, which runNow leaves to the
 *   interpreter); the non-blocking run never runs inside a call;
 * - the same sends in the same order (destination, context, bytes, tag relative to the call);
 * - the same receives per source (the interpreter matches whichever message arrives first);
 * - the same result, bit for bit (random fractions, so another fold order shows).
 *
 * Returns, per collective, how many cases ran inside the call and matched.
 */
import assert from 'node:assert/strict';
import { type Communicator, type Request } from 'nbcoll';
import { matmul, messages, mulberry32, perSource, tracer } from './common.ts';

interface Case {
  name: string;
  coll: string;
  /** Runs the call on fresh buffers holding the case's input; returns the result's bytes. */
  run: (blocking: boolean) => Uint8Array;
}

const bytesOf = (a: ArrayBufferView): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength).slice();

/** Every case for communicator `c`, in an order every member agrees on. */
function cases(c: Communicator): Case[] {
  const p = c.size;
  const me = c.rank;
  const out: Case[] = [];
  let seed = 0;
  /** `n` random fractions of this rank for the case (the same for both runs of it). */
  const input = (s: number, n: number): Float64Array => {
    const next = mulberry32(me * 7919 + s * 104729 + 1);
    return Float64Array.from({ length: n }, () => next() * 2 - 1);
  };
  /** One case: `call` runs the blocking form, or the non-blocking one returned for waiting. */
  const add = (name: string, coll: string, call: (blocking: boolean) => { result: Float64Array; req: Request | null }): void => {
    out.push({
      name, coll,
      run: (blocking) => {
        const { result, req } = call(blocking);
        req?.wait();
        return bytesOf(result);
      },
    });
  };
  const either = (blocking: boolean, b: () => void, nb: () => Request): Request | null => {
    if (blocking) {
      b();
      return null;
    }
    return nb();
  };
  const counts = (n: number): number[] => Array.from({ length: p }, (_, r) => n + (r % 2));
  const displs = (cs: number[]): number[] => cs.map((_, r) => cs.slice(0, r).reduce((x, y) => x + y, 0));

  for (const n of [1, 8, 128]) {
    for (const root of [0, p - 1]) {
      const s = ++seed;
      add(`reduce sum of ${n} doubles to ${root}`, 'reduce', (b) => {
        const x = input(s, n);
        const result = new Float64Array(me === root ? n : 0);
        return { result, req: either(b, () => c.reduce(x, me === root ? result : null, 'sum', root), () => c.ireduce(x, me === root ? result : null, 'sum', root)) };
      });
      const g = ++seed;
      add(`gather of ${n} doubles to ${root}`, 'gather', (b) => {
        const x = input(g, n);
        const result = new Float64Array(me === root ? n * p : 0);
        return { result, req: either(b, () => c.gather(x, me === root ? result : null, root), () => c.igather(x, me === root ? result : null, root)) };
      });
      const sc = ++seed;
      add(`scatter of ${n} doubles from ${root}`, 'scatter', (b) => {
        const x = input(sc, n * p);
        const result = new Float64Array(n);
        return { result, req: either(b, () => c.scatter(me === root ? x : null, result, root), () => c.iscatter(me === root ? x : null, result, root)) };
      });
      const gv = ++seed;
      add(`gatherv of ${n}+ doubles to ${root}`, 'gatherv', (b) => {
        const cs = counts(n);
        const x = input(gv, cs[me]!);
        const result = new Float64Array(me === root ? cs.reduce((u, v) => u + v, 0) : 0);
        const recv = me === root ? result : null;
        return { result, req: either(b, () => c.gatherv(x, recv, cs, displs(cs), root), () => c.igatherv(x, recv, cs, displs(cs), root)) };
      });
    }
    if (n % 4 === 0) {
      const s = ++seed;
      add(`reduce matmul of ${n / 4} matrices to 0 (rank order)`, 'reduce', (b) => {
        const x = input(s, n);
        const result = new Float64Array(me === 0 ? n : 0);
        return { result, req: either(b, () => c.reduce(x, me === 0 ? result : null, matmul, 0), () => c.ireduce(x, me === 0 ? result : null, matmul, 0)) };
      });
    }
    const ag = ++seed;
    add(`allgather of ${n} doubles`, 'allgather', (b) => {
      const x = input(ag, n);
      const result = new Float64Array(n * p);
      return { result, req: either(b, () => c.allgather(x, result), () => c.iallgather(x, result)) };
    });
    const agv = ++seed;
    add(`allgatherv of ${n}+ doubles`, 'allgatherv', (b) => {
      const cs = counts(n);
      const x = input(agv, cs[me]!);
      const result = new Float64Array(cs.reduce((u, v) => u + v, 0));
      return { result, req: either(b, () => c.allgatherv(x, result, cs, displs(cs)), () => c.iallgatherv(x, result, cs, displs(cs))) };
    });
    const av = ++seed;
    add(`alltoallv of ${n}+ doubles`, 'alltoallv', (b) => {
      const sc = new Array<number>(p).fill(n + (me % 2)); // rank i sends n + i % 2 to each
      const rc = counts(n);
      const x = input(av, sc.reduce((u, v) => u + v, 0));
      const result = new Float64Array(rc.reduce((u, v) => u + v, 0));
      return { result, req: either(b, () => c.alltoallv(x, sc, displs(sc), result, rc, displs(rc)), () => c.ialltoallv(x, sc, displs(sc), result, rc, displs(rc))) };
    });
    const rsb = ++seed;
    add(`reduceScatterBlock sum of ${n} doubles each`, 'reduceScatterBlock', (b) => {
      const x = input(rsb, n * p);
      const result = new Float64Array(n);
      return { result, req: either(b, () => c.reduceScatterBlock(x, result, 'sum'), () => c.ireduceScatterBlock(x, result, 'sum')) };
    });
    const rs = ++seed;
    add(`reduceScatter sum of ${n}+ doubles each`, 'reduceScatter', (b) => {
      const cs = counts(n);
      const x = input(rs, cs.reduce((u, v) => u + v, 0));
      const result = new Float64Array(cs[me]!);
      return { result, req: either(b, () => c.reduceScatter(x, result, cs, 'sum'), () => c.ireduceScatter(x, result, cs, 'sum')) };
    });
    for (const coll of ['scan', 'exscan'] as const) {
      const s = ++seed;
      add(`${coll} sum of ${n} doubles`, coll, (b) => {
        const x = input(s, n);
        const result = new Float64Array(n);
        return { result, req: either(b, () => c[coll](x, result, 'sum'), () => c[coll === 'scan' ? 'iscan' : 'iexscan'](x, result, 'sum')) };
      });
    }
    const ar = ++seed;
    add(`allreduce sum of ${n} doubles, k-nomial (no lean path)`, 'allreduce', (b) => {
      const x = input(ar, n);
      const result = new Float64Array(n);
      const opts = { algorithm: 'knomial' };
      return { result, req: either(b, () => c.allreduce(x, result, 'sum', opts), () => c.iallreduce(x, result, 'sum', opts)) };
    });
  }
  return out;
}

/** Runs every case on `c`; adds what it proved to `tally`. */
function prove(c: Communicator, label: string, tally: Record<string, number>): void {
  const traced = tracer(c); // c is fresh: its first collective is call 0
  for (const kase of cases(c)) {
    const what = `${kase.name} on ${label} (${c.size} ranks), rank ${c.rank}`;
    const now = traced(() => kase.run(true));
    const later = traced(() => kase.run(false));
    assert.equal(later.trace.direct, 0, `${what}: the non-blocking form ran inside a call`);
    assert.equal(later.trace.schedules, 1, `${what}: the non-blocking form started ${later.trace.schedules} schedules; expected 1`);
    assert.equal(now.trace.schedules, 1, `${what}: the blocking call ran ${now.trace.schedules} schedules; expected 1`);
    assert.deepEqual(messages(now.trace.sends, now, c.collCtx, what, 'to'), messages(later.trace.sends, later, c.collCtx, what, 'to'),
      `${what}: the blocking call's sends (left) differ from the non-blocking form's (right)`);
    assert.deepEqual(perSource(messages(now.trace.recvs, now, c.collCtx, what, 'from')), perSource(messages(later.trace.recvs, later, c.collCtx, what, 'from')),
      `${what}: the blocking call's receives (left) differ from the non-blocking form's (right), per source`);
    assert.deepEqual(now.out, later.out, `${what}: the blocking result's bytes (left) differ from the non-blocking form's (right)`);
    if (now.trace.direct === 1) tally[kase.coll] = (tally[kase.coll] ?? 0) + 1;
  }
}

export default function main(w: Communicator): unknown {
  const tally: Record<string, number> = {};
  prove(w.dup() as Communicator, 'a dup of the world', tally);
  prove(w.split(0, w.size - w.rank) as Communicator, 'the world reversed', tally);
  return tally;
}
