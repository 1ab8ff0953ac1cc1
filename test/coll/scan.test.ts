import { test } from 'node:test';
import { dtypeName } from '../../src/ops/dtype.ts';
import { IN_PLACE } from '../../src/p2p/constants.ts';
import { COMBOS, COUNTS, SIZES, algorithms, copyOf, fold, inputs, poisoned, ran, runCase, same, withAlg, world } from './cases.ts';

for (const coll of ['scan', 'exscan'] as const) {
  const upto = coll === 'scan' ? 'ranks 0..i' : 'ranks 0..i-1 (rank 0\'s recv untouched)';
  for (const alg of algorithms(coll)) {
    test(`${coll}() ${withAlg(alg)} gives rank i the sequential fold of ${upto}, for every op and type, 0..100 elements, in place or not, on 1..17 ranks`, () => {
      let k = 0;
      for (const p of SIZES) for (const count of COUNTS) for (let j = 0; j < 2; j++) {
        const [dt, o] = COMBOS[k % COMBOS.length]!;
        const n = count * o.item;
        const all = inputs(dt, o.name, p, n, k);
        const inPlace = k % 3 === 2;
        const sends = all.map(copyOf);
        const recvs = inPlace ? sends : all.map(() => poisoned(dt, n));
        const recvsBefore = recvs.map(copyOf);
        const w = world(p, k);
        const what = `${p} ranks, ${o.name} of ${n} ${dtypeName(dt)}${inPlace ? ', IN_PLACE' : ''}`;
        runCase(w, what, (c) => {
          const send = inPlace ? IN_PLACE : sends[c.rank]!;
          if (coll === 'scan') c.scan(send, recvs[c.rank]!, o.op, { algorithm: alg });
          else c.exscan(send, recvs[c.rank]!, o.op, { algorithm: alg });
        });
        for (let r = 0; r < p; r++) {
          const last = coll === 'scan' ? r : r - 1;
          const want = last < 0 ? recvsBefore[r]! : fold(o, dt, all.slice(0, last + 1));
          same(`${what} (${ran(w, r)}), rank ${r}`, recvs[r]!, want);
          if (!inPlace) same(`${what} (${ran(w, r)}), rank ${r}'s send`, sends[r]!, all[r]!);
        }
        k++;
      }
    });
  }
}
