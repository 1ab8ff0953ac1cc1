import { test } from 'node:test';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import { COUNTS, DATA_TYPES, SIZES, algorithms, copyOf, gen, layoutsFor, leadersConfig, poisoned, ran, runCase, same, vLayout, withAlg, world } from './cases.ts';

for (const alg of algorithms('allgather')) {
  test(`allgather() ${withAlg(alg)} puts rank i's block at block i of every rank's recv, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const count of COUNTS) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, count, k));
      const want = poisoned(dt, count * p);
      blocks.forEach((b, r) => (want as Float64Array).set(b as Float64Array, r * count));
      const inPlace = k % 2 === 1;
      const outs = blocks.map((b, r) => {
        const out = poisoned(dt, count * p);
        if (inPlace) (out as Float64Array).set(b as Float64Array, r * count);
        return out;
      });
      const sends = blocks.map(copyOf);
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('allgather', alg, k) });
      const what = `${p} ranks (${layout.name}), blocks of ${count} ${dtypeName(dt)}${inPlace ? ', IN_PLACE' : ''}`;
      runCase(w, what, (c) => c.allgather(inPlace ? IN_PLACE : sends[c.rank]!, outs[c.rank]!, { algorithm: alg }));
      for (let r = 0; r < p; r++) {
        same(`${what} (${ran(w, r)}), rank ${r}`, outs[r]!, want);
        same(`${what} (${ran(w, r)}), rank ${r}'s send`, sends[r]!, blocks[r]!);
      }
      k++;
    }
  });
}

for (const alg of algorithms('allgatherv')) {
  test(`allgatherv() ${withAlg(alg)} puts rank i's counts[i] elements at displs[i] of every rank's recv, and nothing else, with empty blocks, gaps and blocks out of rank order, in place or not, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (let j = 0; j < 8; j++) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const { counts, displs, length } = vLayout(p, k, 2 + (k % 4) * 10);
      const blocks = counts.map((n, r) => gen(dt, 'x', r, n, k));
      const want = poisoned(dt, length);
      blocks.forEach((b, r) => (want as Float64Array).set(b as Float64Array, displs[r]!));
      const inPlace = j % 2 === 1;
      const outs = blocks.map((b, r) => {
        const out = poisoned(dt, length);
        if (inPlace) (out as Float64Array).set(b as Float64Array, displs[r]!);
        return out;
      });
      const w = world(p, k);
      const what = `${p} ranks, counts [${counts.join(', ')}] at [${displs.join(', ')}] of ${dtypeName(dt)}${inPlace ? ', IN_PLACE' : ''}`;
      runCase(w, what, (c) => c.allgatherv(inPlace ? IN_PLACE : blocks[c.rank]!, outs[c.rank]!, counts, displs, { algorithm: alg }));
      for (let r = 0; r < p; r++) same(`${what}, rank ${r}`, outs[r]!, want);
      k++;
    }
  });
}
