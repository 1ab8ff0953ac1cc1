import { test } from 'node:test';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import { dtypeName } from '../../src/ops/dtype.ts';
import {
  COUNTS, SIZES, algorithms, combosFor, copyOf, fold, inputs, layouts, layoutsFor, leadersConfig, poisoned, ran, runCase, same, withAlg, world,
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
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('allreduce', alg, k) });
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

test('allreduce() with hier whose leaders run ring (a DAG spliced after rounds) folds each node before copying out and sending, on 2..17 ranks', () => {
  // The node phase's folds, copy out and send to the parent share a round. Once the spliced
  // ring made the whole schedule a DAG they ran in any order, until ScheduleBuilder.build kept
  // a round's order there: hier with NBC_ALLREDUCE_ALGORITHM=ring summed wrong on every node
  // of two or more ranks.
  const config = { ...DEFAULT_CONFIG, algorithms: { allreduce: 'ring' } };
  let k = 0;
  for (const p of SIZES.slice(1)) for (const layout of layouts(p)) {
    const all = Array.from({ length: p }, (_, r) => Float64Array.of(r + 1, -r, 2 * r));
    const recv = all.map(() => new Float64Array(3));
    const w = world(p, k++, { nodeOf: layout.nodeOf, config });
    runCase(w, `${p} ranks (${layout.name})`, (c) => c.allreduce(all[c.rank]!, recv[c.rank]!, 'sum', { algorithm: 'hier' }));
    for (let r = 0; r < p; r++) same(`${p} ranks (${layout.name}), rank ${r}`, recv[r]!, [p * (p + 1) / 2, -p * (p - 1) / 2, p * (p - 1)]);
  }
});
