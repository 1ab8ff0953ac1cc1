import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SIZES, algorithms, layoutsFor, leadersConfig, ran, withAlg, world } from './cases.ts';

for (const alg of algorithms('barrier')) {
  test(`barrier() ${withAlg(alg)} lets no rank out before every rank entered, on 1..17 ranks`, () => {
    let k = 0;
    for (const p of SIZES) for (const layout of layoutsFor(alg, p)) {
      // Each rank in turn enters last: until it does, nobody may leave; then everybody does.
      for (let late = 0; late < p; late++) {
        const w = world(p, k, { nodeOf: layout.nodeOf, config: leadersConfig('barrier', alg, k) });
        k++;
        for (let r = 0; r < p; r++) if (r !== late) w.start(r, (c) => c.barrier({ algorithm: alg }));
        w.deliver();
        const what = `${p} ranks (${layout.name}, ${ran(w, (late + 1) % p)})`;
        for (let r = 0; r < p; r++) if (r !== late) assert.equal(w.done(r), false, `${what}: rank ${r} left before rank ${late} entered`);
        w.start(late, (c) => c.barrier({ algorithm: alg }));
        w.finish();
      }
    }
  });
}
