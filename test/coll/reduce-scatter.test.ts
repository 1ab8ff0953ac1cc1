import { test } from 'node:test';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import type { TypedArray } from '../../src/comm/validate.ts';
import { COUNTS, SIZES, algorithms, combosFor, copyOf, fold, inputs, poisoned, ran, runCase, same, withAlg, world } from './cases.ts';

/** Rank r's result, the rest of its recv untouched: block r of the fold at the start of `recv` (IN_PLACE: over the input). */
function expected(recvBefore: TypedArray, folded: TypedArray, start: number, n: number): TypedArray {
  const want = copyOf(recvBefore);
  (want as Float64Array).set(folded.subarray(start, start + n) as Float64Array, 0);
  return want;
}

for (const coll of ['reduceScatterBlock', 'reduceScatter'] as const) {
  for (const alg of algorithms(coll)) {
    const blocks = coll === 'reduceScatterBlock' ? 'equal blocks of 0..100 elements' : 'blocks of 0..17 elements, empty ones among them';
    test(`${coll}() ${withAlg(alg)} gives rank i block i of the sequential fold, for every op and type, ${blocks}, in place or not, on 1..17 ranks`, () => {
      const combos = combosFor(coll, alg);
      let k = 0;
      for (const p of SIZES) for (let j = 0; j < COUNTS.length; j++) {
        const [dt, o] = combos[k % combos.length]!;
        const counts = Array.from({ length: p }, (_, r) => (coll === 'reduceScatterBlock' ? COUNTS[j]! : (r * 5 + k) % (j * 2 + 2)) * o.item);
        const starts = counts.map((_, r) => counts.slice(0, r).reduce((a, b) => a + b, 0));
        const total = counts.reduce((a, b) => a + b, 0);
        const all = inputs(dt, o.name, p, total, k);
        const folded = fold(o, dt, all);
        const inPlace = k % 3 === 2;
        const sends = all.map(copyOf);
        const recvs = inPlace ? sends : counts.map((n) => poisoned(dt, n));
        const recvsBefore = recvs.map(copyOf);
        const w = world(p, k);
        const what = `${p} ranks, ${o.name} of ${dtypeName(dt)}, counts [${counts.join(', ')}]${inPlace ? ', IN_PLACE' : ''}`;
        runCase(w, what, (c) => {
          const send = inPlace ? IN_PLACE : sends[c.rank]!;
          if (coll === 'reduceScatterBlock') c.reduceScatterBlock(send, recvs[c.rank]!, o.op, { algorithm: alg });
          else c.reduceScatter(send, recvs[c.rank]!, counts, o.op, { algorithm: alg });
        });
        for (let r = 0; r < p; r++) {
          same(`${what} (${ran(w, r)}), rank ${r}`, recvs[r]!, expected(recvsBefore[r]!, folded, starts[r]!, counts[r]!));
          if (!inPlace) same(`${what} (${ran(w, r)}), rank ${r}'s send`, sends[r]!, all[r]!);
        }
        k++;
      }
    });
  }
}
