import { test } from 'node:test';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import { dtypeName } from '../../src/ops/dtype.ts';
import {
  COUNTS, SIZES, algorithms, combosFor, copyOf, fold, inputs, layoutsFor, poisoned, ran, runCase, same, withAlg, world,
} from './cases.ts';

for (const alg of algorithms('allreduce')) {
  test(`allreduce() ${withAlg(alg)} gives every rank the sequential fold, for every op and type, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    const combos = combosFor('allreduce', alg);
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const count of COUNTS) {
      const [dt, o] = combos[k % combos.length]!;
      const n = count * o.item;
      const all = inputs(dt, o.name, p, n, k);
      const want = fold(o, dt, all);
      const inPlace = k % 3 === 2;
      const send = all.map(copyOf);
      const recv = inPlace ? send : all.map(() => poisoned(dt, n));
      const w = world(p, k, { nodeOf: layout.nodeOf });
      const what = `${p} ranks (${layout.name}), ${o.name} of ${n} ${dtypeName(dt)}${inPlace ? ' in place' : ''}`;
      runCase(w, what, (c) => {
        if (inPlace) c.allreduce(IN_PLACE, recv[c.rank]!, o.op, { algorithm: alg });
        else c.allreduce(send[c.rank]!, recv[c.rank]!, o.op, { algorithm: alg });
      });
      for (let r = 0; r < p; r++) {
        same(`${what} (${ran(w, r)}), rank ${r}`, recv[r]!, want);
        if (!inPlace) same(`${what} (${ran(w, r)}), rank ${r}'s send`, send[r]!, all[r]!);
      }
      k++;
    }
  });
}
