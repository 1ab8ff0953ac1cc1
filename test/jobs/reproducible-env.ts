/**
 * NBC_REPRODUCIBLE=1: a plain `allreduce(x, y, 'sum')` of Float64 takes the reproducible path
 * (the same bits as `{ reproducible: true }`), `{ reproducible: false }` opts out, and calls it
 * does not fit (an Int32 sum, a max) run as before. Run on every rank of a job.
 */
import { createHash } from 'node:crypto';
import type { Communicator } from 'nbcoll';

const sha = (a: Float64Array): string => createHash('sha256').update(new Uint8Array(a.buffer)).digest('hex');

export default function reproducibleEnv(world: Communicator): unknown {
  const x = Float64Array.from({ length: 64 }, (_, i) => (i % 2 === 0 ? 1 : -1) * 2 ** ((i * 7 + world.rank * 13) % 90 - 45));
  const byDefault = new Float64Array(64);
  world.allreduce(x, byDefault, 'sum');
  const asked = new Float64Array(64);
  world.allreduce(x, asked, 'sum', { reproducible: true });
  const nb = new Float64Array(64);
  world.iallreduce(x, nb, 'sum').wait();
  const optedOut = new Float64Array(64);
  world.allreduce(x, optedOut, 'sum', { reproducible: false });
  const ints = new Int32Array(1);
  world.allreduce(Int32Array.of(world.rank + 1), ints, 'sum');
  const max = new Float64Array(1);
  world.allreduce(Float64Array.of(world.rank), max, 'max');
  // From 512 elements the sum takes two phases, whose second is a plain sum of counts: it must
  // not come back to the reproducible path (5000: its reduce-scatter and gather too).
  const large: boolean[] = [];
  for (const n of [600, 5000]) {
    const big = Float64Array.from({ length: n }, (_, i) => ((i % 3) - 1) * 2 ** (((i * 7 + world.rank * 13) % 90) - 45));
    const byEnv = new Float64Array(n);
    world.allreduce(big, byEnv, 'sum');
    const nbEnv = new Float64Array(n);
    world.iallreduce(big, nbEnv, 'sum').wait();
    const explicit = new Float64Array(n);
    world.allreduce(big, explicit, 'sum', { reproducible: true });
    large.push(sha(byEnv) === sha(explicit) && sha(nbEnv) === sha(explicit));
  }
  return {
    same: sha(byDefault) === sha(asked) && sha(nb) === sha(asked), optedOutFinite: optedOut.every(Number.isFinite), ints: ints[0], max: max[0], large,
  };
}
