import { test } from 'node:test';
import type { TypedArray } from '../../src/comm/validate.ts';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import { COUNTS, DATA_TYPES, SIZES, algorithms, copyOf, gen, layoutsFor, leadersConfig, poisoned, ran, runCase, same, withAlg, world } from './cases.ts';

for (const alg of algorithms('alltoall')) {
  test(`alltoall() ${withAlg(alg)} puts block j of rank i's send at block i of rank j's recv, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const count of COUNTS) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const blocks = Array.from({ length: p }, (_, from) => Array.from({ length: p }, (_, to) => gen(dt, 'x', from * p + to, count, k)));
      const block = (from: number, to: number): TypedArray => blocks[from]![to]!;
      const sends = Array.from({ length: p }, (_, r) => {
        const s = poisoned(dt, count * p);
        for (let j = 0; j < p; j++) (s as Float64Array).set(block(r, j) as Float64Array, j * count);
        return s;
      });
      const before = sends.map(copyOf);
      const inPlace = k % 3 === 2;
      const outs = inPlace ? sends : sends.map(() => poisoned(dt, count * p));
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('alltoall', alg, k) });
      const what = `${p} ranks (${layout.name}), blocks of ${count} ${dtypeName(dt)}${inPlace ? ', IN_PLACE' : ''}`;
      runCase(w, what, (c) => c.alltoall(inPlace ? IN_PLACE : sends[c.rank]!, outs[c.rank]!, { algorithm: alg }));
      for (let r = 0; r < p; r++) {
        const want = poisoned(dt, count * p);
        for (let i = 0; i < p; i++) (want as Float64Array).set(block(i, r) as Float64Array, i * count);
        same(`${what} (${ran(w, r)}), rank ${r}`, outs[r]!, want);
        if (!inPlace) same(`${what} (${ran(w, r)}), rank ${r}'s send`, sends[r]!, before[r]!);
      }
      k++;
    }
  });
}

for (const alg of algorithms('alltoallv')) {
  test(`alltoallv() ${withAlg(alg)} moves each counted block from its send displacement to its receive displacement, and nothing else, with empty blocks, gaps and blocks out of rank order, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (let j = 0; j < 8; j++) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const count = (from: number, to: number): number => (from + 2 * to + k) % (3 + (k % 4) * 5);
      const block = (from: number, to: number): TypedArray => gen(dt, 'x', from * p + to, count(from, to), k);
      // Rank r's send blocks lie in reverse destination order on odd cases; receive blocks keep a gap each.
      const lay = (r: number, n: (peer: number) => number, gap: number) => {
        const order = Array.from({ length: p }, (_, i) => (k % 2 === 1 ? p - 1 - i : i));
        const displs = new Array<number>(p).fill(0);
        let at = gap;
        for (const peer of order) {
          displs[peer] = at;
          at += n(peer) + gap;
        }
        return { counts: Array.from({ length: p }, (_, peer) => n(peer)), displs, length: at + r % 2 };
      };
      const sendLay = Array.from({ length: p }, (_, r) => lay(r, (to) => count(r, to), 0));
      const recvLay = Array.from({ length: p }, (_, r) => lay(r, (from) => count(from, r), 1));
      const sends = sendLay.map((l, r) => {
        const s = poisoned(dt, l.length);
        for (let to = 0; to < p; to++) (s as Float64Array).set(block(r, to) as Float64Array, l.displs[to]!);
        return s;
      });
      const before = sends.map(copyOf);
      const outs = recvLay.map((l) => poisoned(dt, l.length));
      const w = world(p, k);
      const what = `${p} ranks, case ${k}, ${dtypeName(dt)}`;
      runCase(w, what, (c) => {
        const s = sendLay[c.rank]!;
        const r = recvLay[c.rank]!;
        c.alltoallv(sends[c.rank]!, s.counts, s.displs, outs[c.rank]!, r.counts, r.displs, { algorithm: alg });
      });
      for (let r = 0; r < p; r++) {
        const want = poisoned(dt, recvLay[r]!.length);
        for (let from = 0; from < p; from++) (want as Float64Array).set(block(from, r) as Float64Array, recvLay[r]!.displs[from]!);
        same(`${what}, rank ${r}`, outs[r]!, want);
        same(`${what}, rank ${r}'s send`, sends[r]!, before[r]!);
      }
      k++;
    }
  });
}
