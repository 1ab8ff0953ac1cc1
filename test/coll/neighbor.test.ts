import { test } from 'node:test';
import { mulberry32 } from '../../src/bench/prng.ts';
import type { TypedArray } from '../../src/comm/validate.ts';
import { cartNeighborhood, dimsCreate, graphNeighborhood, type Neighborhood } from '../../src/comm/topology.ts';
import { DType } from '../../src/ops/dtype.ts';
import { SIZES, algorithms, copyOf, gen, poisoned, runCase, same, withAlg, world, type DT } from './cases.ts';

/** A neighbourhood of every rank, and where receive slot i of rank b comes from: rank a's send slot j, or null (PROC_NULL). */
interface Hoods {
  name: string;
  of: Neighborhood[];
  from: (b: number, i: number) => { a: number; j: number } | null;
}

/**
 * Cartesian grids of p ranks: 1-D periodic, 2-D periodic x not, 2-D periodic both ways, 3-D
 * not periodic. Slot i is the -1 (even i) or +1 (odd i) neighbour of a dimension, so the
 * block a neighbour sends to its slot i ^ 1 lands in our slot i.
 */
function grids(p: number): Hoods[] {
  const specs: Array<[number[], boolean[]]> = [[[p], [true]], [dimsCreate(p, 2), [true, false]], [dimsCreate(p, 2), [true, true]], [dimsCreate(p, 3), [false, false, false]]];
  return specs.map(([dims, periods]) => {
    const of = Array.from({ length: p }, (_, r) => cartNeighborhood(dims, periods, r));
    return {
      name: `${dims.join('x')} grid, periods ${periods.map((x) => (x ? 'yes' : 'no')).join('/')}`,
      of,
      from: (b, i) => (of[b]!.sources[i]! < 0 ? null : { a: of[b]!.sources[i]!, j: i ^ 1 }),
    };
  });
}

/**
 * A random directed graph on p ranks (seeded): 0..4 out-edges a rank, self-loops and repeated
 * edges allowed, every rank's sources shuffled. The k-th edge a -> b in a's destinations meets
 * the k-th entry naming a in b's sources (MPI's order for repeated edges).
 */
function graph(p: number, seed: number): Hoods {
  const random = mulberry32(seed);
  const pick = (n: number): number => Math.floor(random() * n);
  const dests = Array.from({ length: p }, () => Array.from({ length: pick(5) }, () => pick(p)));
  const srcs: number[][] = Array.from({ length: p }, () => []);
  dests.forEach((list, a) => list.forEach((b) => srcs[b]!.push(a)));
  for (const list of srcs) {
    for (let i = list.length - 1; i > 0; i--) {
      const j = pick(i + 1);
      [list[i], list[j]] = [list[j]!, list[i]!];
    }
  }
  const nth = (list: number[], x: number, upto: number): number => list.slice(0, upto).filter((y) => y === x).length;
  return {
    name: `graph ${seed}: ${dests.map((d, a) => `${a}->[${d.join(',')}]`).join(' ')}`,
    of: Array.from({ length: p }, (_, r) => graphNeighborhood(srcs[r]!, dests[r]!)),
    from: (b, i) => {
      const a = srcs[b]![i]!;
      const k = nth(srcs[b]!, a, i);
      const j = dests[a]!.findIndex((x, at) => x === b && nth(dests[a]!, b, at) === k);
      return { a, j };
    },
  };
}

const hoodsOf = (p: number): Hoods[] => [...grids(p), graph(p, p), graph(p, 100 + p)];

const put = (into: TypedArray, from: TypedArray, at: number): void => (into as Float64Array).set(from as Float64Array, at);

for (const alg of algorithms('neighborAllgather')) {
  test(`neighborAllgather() ${withAlg(alg)} puts source i's send buffer in block i, and leaves PROC_NULL blocks alone, on Cartesian grids and graphs with repeated edges of 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const h of hoodsOf(p)) {
      const dt: DT = [DType.Float64, DType.Int16, DType.BigInt64][k % 3]!;
      const n = k % 4;
      const sends = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, n, k));
      const outs = h.of.map((nb) => poisoned(dt, n * nb.sources.length));
      const w = world(p, k, { neighborhood: (r) => h.of[r]! });
      runCase(w, `${p} ranks, ${h.name}`, (c) => c.neighborAllgather(sends[c.rank]!, outs[c.rank]!, { algorithm: alg }));
      for (let b = 0; b < p; b++) {
        const want = poisoned(dt, outs[b]!.length);
        h.of[b]!.sources.forEach((_, i) => {
          const f = h.from(b, i);
          if (f !== null) put(want, sends[f.a]!, i * n);
        });
        same(`${p} ranks, ${h.name}, ${n} elements, rank ${b}`, outs[b]!, want);
      }
      k++;
    }
  });
}

for (const alg of algorithms('neighborAlltoall')) {
  test(`neighborAlltoall() ${withAlg(alg)} puts the block a source sends us in our block for it, on Cartesian grids (periodic sizes 1 and 2 included) and graphs with repeated edges of 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const h of hoodsOf(p)) {
      const dt: DT = [DType.Int32, DType.Uint8, DType.Float64][k % 3]!;
      const n = k % 4;
      const block = (a: number, j: number): TypedArray => gen(dt, 'x', a * 64 + j, n, k);
      const sends = h.of.map((nb, a) => {
        const s = poisoned(dt, n * nb.destinations.length);
        nb.destinations.forEach((_, j) => put(s, block(a, j), j * n));
        return s;
      });
      const before = sends.map(copyOf);
      const outs = h.of.map((nb) => poisoned(dt, n * nb.sources.length));
      const w = world(p, k, { neighborhood: (r) => h.of[r]! });
      runCase(w, `${p} ranks, ${h.name}`, (c) => c.neighborAlltoall(sends[c.rank]!, outs[c.rank]!, { algorithm: alg }));
      for (let b = 0; b < p; b++) {
        const want = poisoned(dt, outs[b]!.length);
        h.of[b]!.sources.forEach((_, i) => {
          const f = h.from(b, i);
          if (f !== null) put(want, block(f.a, f.j), i * n);
        });
        same(`${p} ranks, ${h.name}, blocks of ${n}, rank ${b}`, outs[b]!, want);
        same(`${p} ranks, ${h.name}, rank ${b}'s send`, sends[b]!, before[b]!);
      }
      k++;
    }
  });
}

for (const alg of algorithms('neighborAlltoallv')) {
  test(`neighborAlltoallv() ${withAlg(alg)} moves each edge's counted block between its displacements, and nothing else, on Cartesian grids and graphs with repeated edges of 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const h of hoodsOf(p)) {
      const dt: DT = [DType.Float32, DType.BigUint64, DType.Int8][k % 3]!;
      const count = (a: number, j: number): number => (a * 3 + j + k) % 5;
      const block = (a: number, j: number): TypedArray => gen(dt, 'x', a * 64 + j, count(a, j), k);
      // Send blocks back to back in reverse order; receive blocks with a gap before each.
      const sendLay = h.of.map((nb, a) => {
        const m = nb.destinations.length;
        const counts = Array.from({ length: m }, (_, j) => count(a, j));
        const displs = new Array<number>(m).fill(0);
        let at = 0;
        for (let j = m - 1; j >= 0; j--) { displs[j] = at; at += counts[j]!; }
        return { counts, displs, length: at };
      });
      const recvLay = h.of.map((nb, b) => {
        const counts = Array.from(nb.sources, (_, i) => {
          const f = h.from(b, i);
          return f === null ? 0 : count(f.a, f.j);
        });
        const displs: number[] = [];
        let at = 0;
        for (const c of counts) { displs.push(at + 1); at += c + 1; }
        return { counts, displs, length: at };
      });
      const sends = sendLay.map((l, a) => {
        const s = poisoned(dt, l.length);
        l.counts.forEach((_, j) => put(s, block(a, j), l.displs[j]!));
        return s;
      });
      const outs = recvLay.map((l) => poisoned(dt, l.length));
      const w = world(p, k, { neighborhood: (r) => h.of[r]! });
      runCase(w, `${p} ranks, ${h.name}`, (c) => {
        const s = sendLay[c.rank]!;
        const r = recvLay[c.rank]!;
        c.neighborAlltoallv(sends[c.rank]!, s.counts, s.displs, outs[c.rank]!, r.counts, r.displs, { algorithm: alg });
      });
      for (let b = 0; b < p; b++) {
        const want = poisoned(dt, recvLay[b]!.length);
        h.of[b]!.sources.forEach((_, i) => {
          const f = h.from(b, i);
          if (f !== null) put(want, block(f.a, f.j), recvLay[b]!.displs[i]!);
        });
        same(`${p} ranks, ${h.name}, rank ${b}`, outs[b]!, want);
      }
      k++;
    }
  });
}
