import { test } from 'node:test';
import { dtypeName } from '../../src/ops/dtype.ts';
import { DATA_TYPES, SIZES, algorithms, copyOf, gen, layoutsFor, leadersConfig, poison, ran, rootedCases, runCase, same, withAlg, world } from './cases.ts';

for (const alg of algorithms('bcast')) {
  test(`bcast() ${withAlg(alg)} gives every rank the root's buffer, from every root, 0..100 elements of every width, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const { root, count } of rootedCases(p)) {
      const dt = DATA_TYPES[k % DATA_TYPES.length]!;
      const data = gen(dt, 'x', root, count, k);
      const bufs = Array.from({ length: p }, (_, r) => (r === root ? copyOf(data) : poison(copyOf(data))));
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('bcast', alg, k) });
      const what = `${p} ranks (${layout.name}), root ${root}, ${count} ${dtypeName(dt)}`;
      runCase(w, what, (c) => c.bcast(bufs[c.rank]!, root, { algorithm: alg }));
      for (let r = 0; r < p; r++) same(`${what} (${ran(w, r)}), rank ${r}`, bufs[r]!, data);
      k++;
    }
  });
}
