import { test } from 'node:test';
import type { TypedArray } from '../../src/comm/validate.ts';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import {
  DATA_TYPES, SIZES, algorithms, copyOf, gen, layoutsFor, leadersConfig, poisoned, ran, rootedCases, runCase, same, vLayout, withAlg, world,
} from './cases.ts';

for (const alg of algorithms('gather')) {
  test(`gather() ${withAlg(alg)} puts rank i's block at block i of the root's recv, to every root, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const { root, count } of rootedCases(p)) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, count, k));
      const want = poisoned(dt, count * p);
      blocks.forEach((b, r) => (want as Float64Array).set(b as Float64Array, r * count));
      const inPlace = k % 2 === 1;
      const out = poisoned(dt, count * p);
      if (inPlace) (out as Float64Array).set(blocks[root] as Float64Array, root * count);
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('gather', alg, k) });
      const what = `${p} ranks (${layout.name}), root ${root}, blocks of ${count} ${dtypeName(dt)}${inPlace ? ', IN_PLACE at the root' : ''}`;
      runCase(w, what, (c) => {
        const opts = { algorithm: alg };
        if (c.rank !== root) c.gather(blocks[c.rank]!, null, root, opts);
        else c.gather(inPlace ? IN_PLACE : blocks[root]!, out, root, opts);
      });
      same(`${what} (${ran(w, root)})`, out, want);
      k++;
    }
  });
}

test('gatherv() puts rank i\'s counts[i] elements at displs[i] of the root\'s recv, and nothing else, with empty blocks, gaps and blocks out of rank order, to every root, in place or not, on 1..17 ranks', () => {
  let k = 0;
  for (const p of SIZES) for (let root = 0; root < p; root++) for (let j = 0; j < 2; j++) {
    const dt = DATA_TYPES[k % DATA_TYPES.length]!;
    const { counts, displs, length } = vLayout(p, k, 4 + (k % 5) * 6);
    const blocks = counts.map((n, r) => gen(dt, 'x', r, n, k));
    const want = poisoned(dt, length);
    blocks.forEach((b, r) => (want as Float64Array).set(b as Float64Array, displs[r]!));
    const inPlace = j === 1;
    const out = poisoned(dt, length);
    if (inPlace) (out as Float64Array).set(blocks[root] as Float64Array, displs[root]!);
    const w = world(p, k);
    const what = `${p} ranks, root ${root}, counts [${counts.join(', ')}] at [${displs.join(', ')}] of ${dtypeName(dt)}${inPlace ? ', IN_PLACE at the root' : ''}`;
    runCase(w, what, (c) => {
      if (c.rank !== root) c.gatherv(blocks[c.rank]!, null, null, null, root);
      else c.gatherv(inPlace ? IN_PLACE : blocks[root]!, out, counts, displs, root);
    });
    same(what, out, want);
    k++;
  }
});

for (const alg of algorithms('scatter')) {
  test(`scatter() ${withAlg(alg)} gives rank i block i of the root's send, from every root, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const { root, count } of rootedCases(p)) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const blocks = Array.from({ length: p }, (_, r) => gen(dt, 'x', r, count, k));
      const full = poisoned(dt, count * p);
      blocks.forEach((b, r) => (full as Float64Array).set(b as Float64Array, r * count));
      const fullBefore = copyOf(full);
      const inPlace = k % 2 === 1;
      const outs: TypedArray[] = blocks.map(() => poisoned(dt, count));
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('scatter', alg, k) });
      const what = `${p} ranks (${layout.name}), root ${root}, blocks of ${count} ${dtypeName(dt)}${inPlace ? ', IN_PLACE at the root' : ''}`;
      runCase(w, what, (c) => {
        const opts = { algorithm: alg };
        if (c.rank !== root) c.scatter(null, outs[c.rank]!, root, opts);
        else c.scatter(full, inPlace ? IN_PLACE : outs[root]!, root, opts);
      });
      for (let r = 0; r < p; r++) if (r !== root || !inPlace) same(`${what} (${ran(w, r)}), rank ${r}`, outs[r]!, blocks[r]!);
      same(`${what} (${ran(w, root)}), the root's send`, full, fullBefore);
      k++;
    }
  });
}

test('scatterv() gives rank i the counts[i] elements at displs[i] of the root\'s send, with empty blocks, gaps and blocks out of rank order, from every root, in place or not, on 1..17 ranks', () => {
  let k = 0;
  for (const p of SIZES) for (let root = 0; root < p; root++) for (let j = 0; j < 2; j++) {
    const dt = DATA_TYPES[k % DATA_TYPES.length]!;
    const { counts, displs, length } = vLayout(p, k, 4 + (k % 5) * 6);
    const blocks = counts.map((n, r) => gen(dt, 'x', r, n, k));
    const full = poisoned(dt, length);
    blocks.forEach((b, r) => (full as Float64Array).set(b as Float64Array, displs[r]!));
    const fullBefore = copyOf(full);
    const inPlace = j === 1;
    const outs = counts.map((n) => poisoned(dt, n));
    const w = world(p, k);
    const what = `${p} ranks, root ${root}, counts [${counts.join(', ')}] at [${displs.join(', ')}] of ${dtypeName(dt)}${inPlace ? ', IN_PLACE at the root' : ''}`;
    runCase(w, what, (c) => {
      if (c.rank !== root) c.scatterv(null, null, null, outs[c.rank]!, root);
      else c.scatterv(full, counts, displs, inPlace ? IN_PLACE : outs[root]!, root);
    });
    for (let r = 0; r < p; r++) if (r !== root || !inPlace) same(`${what}, rank ${r}`, outs[r]!, blocks[r]!);
    same(`${what}, the root's send`, full, fullBefore);
    k++;
  }
});
