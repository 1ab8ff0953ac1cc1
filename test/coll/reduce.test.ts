import { test } from 'node:test';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import {
  SIZES, algorithms, combosFor, copyOf, fold, inputs, layoutsFor, leadersConfig, poisoned, ran, rootedCases, runCase, same, withAlg, world,
} from './cases.ts';

for (const alg of algorithms('reduce')) {
  test(`reduce() ${withAlg(alg)} gives the root the sequential fold, to every root, for every op and type, 0..100 elements, in place or not, on 1..17 ranks`, () => {
    const combos = combosFor('reduce', alg);
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) for (const { root, count } of rootedCases(p)) {
      const [dt, o] = combos[k % combos.length]!;
      const n = count * o.item;
      const all = inputs(dt, o.name, p, n, k);
      const want = fold(o, dt, all);
      // The root passes IN_PLACE as send, or as recv (the result overwrites its send), or neither.
      const inPlace = (['no', 'send', 'recv'] as const)[k % 3]!;
      const send = all.map(copyOf);
      const out = poisoned(dt, n);
      const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('reduce', alg, k) });
      const what = `${p} ranks (${layout.name}), root ${root}, ${o.name} of ${n} ${dtypeName(dt)}${inPlace === 'no' ? '' : `, IN_PLACE ${inPlace}`}`;
      runCase(w, what, (c) => {
        const opts = { algorithm: alg };
        if (c.rank !== root) c.reduce(send[c.rank]!, null, o.op, root, opts);
        else if (inPlace === 'send') c.reduce(IN_PLACE, send[root]!, o.op, root, opts);
        else if (inPlace === 'recv') c.reduce(send[root]!, IN_PLACE, o.op, root, opts);
        else c.reduce(send[root]!, out, o.op, root, opts);
      });
      same(`${what} (${ran(w, root)}), the root's result`, inPlace === 'no' ? out : send[root]!, want);
      for (let r = 0; r < p; r++) if (r !== root || inPlace === 'no') same(`${what} (${ran(w, r)}), rank ${r}'s send`, send[r]!, all[r]!);
      k++;
    }
  });
}
