/**
 * Reproducible sums across rank counts, algorithms and call forms. Run on every rank of a job.
 *
 * The data set does not depend on the job: E elements, each the sum of G adversarial values
 * (pairs of 2^40..2^70 that cancel exactly, values of 2^-30..2^30 between them, subnormals,
 * magnitudes 2^-1000 to 2^1000 on some, -0; one element of nothing but -0, one with an
 * infinity, one with a NaN) drawn from a fixed seed. Rank r of p holds values r, r + p, ...
 * of every element: the partition changes with p, the data set does not.
 *
 * - `partition`: each rank adds its values into a BinnedSum per element, the items go
 *   through allreduce with binnedSumOp under every allreduce algorithm, and each element is
 *   finished: one SHA-256 of the E results per algorithm (the same for every p, is the claim).
 * - `direct`: rank r's own value of each element is its value r; `{ reproducible: true }`
 *   allreduce under every algorithm, iallreduce, reduce to the last rank, Float32 as well:
 *   the results must equal, bit for bit, a BinnedSum of those p values added in rank order
 *   here, and are returned for the test to check against the exact sum.
 */
import { createHash } from 'node:crypto';
import { BinnedSum, binnedSumOp, IN_PLACE, type Communicator } from 'nbcoll';

const E = 24;
const G = 16;
const ALGORITHMS = [undefined, 'recursive-doubling', 'ring', 'rabenseifner', 'knomial', 'hier'];

/** The data set: G values for each of E elements, from a fixed seed. */
export function dataSet(): number[][] {
  let s = 20261127;
  const rnd = (): number => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) / 4294967296;
  const out: number[][] = [];
  for (let e = 0; e < E; e++) {
    const xs: number[] = [];
    for (let g = 0; g < G; g++) {
      if (g < 8) {
        // pairs that cancel exactly: +-2^(40..70), split among ranks by the partition
        const a = 2 ** (40 + Math.floor(rnd() * 30)) * (1 + rnd());
        xs.push(g % 2 === 0 ? a : -xs[g - 1]!);
      } else if (g < 13) {
        xs.push((rnd() - 0.5) * 2 ** (Math.floor(rnd() * 60) - 30));
      } else if (g === 13) {
        xs.push(rnd() * 5e-324 * 1000); // a subnormal
      } else if (g === 14) {
        xs.push((rnd() - 0.5) * 2 ** (Math.floor(rnd() * 2000) - 1000) * (e % 4 === 0 ? 1 : 0)); // 2^-1000 to 2^1000 on some
      } else {
        xs.push(-0);
      }
    }
    out.push(xs);
  }
  out[3] = Array.from({ length: G }, () => -0);
  out[5]![3] = Infinity;
  out[7]![9] = NaN;
  return out;
}

const sha = (a: Float64Array | Float32Array): string => createHash('sha256').update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength)).digest('hex');

export default function reproducible(world: Communicator): unknown {
  const p = world.size;
  const r = world.rank;
  const data = dataSet();
  const partition: Record<string, string> = {};
  for (const folds of [2, 3] as const) {
    const L = 2 + 2 * folds;
    for (const algorithm of ALGORITHMS) {
      const items = new Float64Array(E * L);
      for (let e = 0; e < E; e++) {
        const acc = new BinnedSum(folds);
        for (let g = r; g < G; g += p) acc.add(data[e]![g]!);
        items.set(acc.items, e * L);
      }
      world.allreduce(IN_PLACE, items, binnedSumOp(folds), algorithm === undefined ? undefined : { algorithm });
      const out = new Float64Array(E);
      for (let e = 0; e < E; e++) out[e] = BinnedSum.of(items.subarray(e * L, (e + 1) * L), folds).value();
      partition[`${folds}/${algorithm ?? 'auto'}`] = sha(out);
    }
  }

  // The control: the same partition summed plainly (a rank's values in order, then allreduce).
  const plainLocal = Float64Array.from(data, (xs) => { let t = 0; for (let g = r; g < G; g += p) t += xs[g]!; return t; });
  const plainOut = new Float64Array(E);
  world.allreduce(plainLocal, plainOut, 'sum');
  const plain = sha(plainOut);

  // The direct calls: rank r contributes value r of each element (p <= G).
  const mine = Float64Array.from(data, (xs) => xs[r]!);
  const expected = Float64Array.from(data, (xs) => new BinnedSum().addAll(xs.slice(0, p)).value());
  const direct: Record<string, string> = {};
  for (const algorithm of ALGORITHMS) {
    const out = new Float64Array(E);
    world.allreduce(mine, out, 'sum', { reproducible: true, ...(algorithm === undefined ? {} : { algorithm }) });
    direct[`allreduce/${algorithm ?? 'auto'}`] = sha(out);
  }
  const nb = new Float64Array(E);
  world.iallreduce(mine, nb, 'sum', { reproducible: true }).wait();
  direct.iallreduce = sha(nb);
  const inPlace = Float64Array.from(mine);
  world.allreduce(IN_PLACE, inPlace, 'sum', { reproducible: true, algorithm: 'ring' });
  direct['allreduce/in-place'] = sha(inPlace);
  const root = p - 1;
  const rooted = new Float64Array(E);
  world.reduce(mine, r === root ? rooted : null, 'sum', root, { reproducible: true });
  const three = new Float64Array(E);
  world.allreduce(mine, three, 'sum', { reproducible: true, folds: 3 });
  const mine32 = Float32Array.from(mine.map((x) => (Number.isFinite(x) ? Math.fround(x) : x)));
  const out32 = new Float32Array(E);
  world.allreduce(mine32, out32, 'sum', { reproducible: true, algorithm: 'ring' });
  const out32b = new Float32Array(E);
  world.allreduce(mine32, out32b, 'sum', { reproducible: true, algorithm: 'recursive-doubling' });
  // Large: 5000 elements take the reduce-scatter and gather path; a forced algorithm the
  // allreduce of every item; both must be the sequential binned sum of the ranks' values.
  const big = 5000;
  const value = (i: number, rank: number): number => (((i * 7919 + rank * 104729) % 1000) - 500) * 2 ** (((i + rank) % 80) - 40);
  const bigMine = Float64Array.from({ length: big }, (_, i) => value(i, r));
  const bigSplit = new Float64Array(big);
  world.allreduce(bigMine, bigSplit, 'sum', { reproducible: true });
  const bigWhole = new Float64Array(big);
  world.allreduce(bigMine, bigWhole, 'sum', { reproducible: true, algorithm: 'ring' });
  const bigExpected = Float64Array.from({ length: big }, (_, i) => {
    const acc = new BinnedSum();
    for (let q = 0; q < p; q++) acc.add(value(i, q));
    return acc.value();
  });
  const large = { split: sha(bigSplit), whole: sha(bigWhole), expected: sha(bigExpected) };

  // Refusals, by name, on every rank alike.
  const refusals: string[] = [];
  const refused = (f: () => void): void => {
    try {
      f();
      refusals.push('accepted');
    } catch (e) {
      refusals.push(`${(e as { code?: string }).code}: ${(e as Error).message}`);
    }
  };
  const x = new Float64Array(2);
  const y = new Float64Array(2);
  refused(() => world.allreduce(x, y, 'sum', { reproducable: true } as never));
  refused(() => world.allreduce(x, y, 'max', { reproducible: true }));
  refused(() => world.allreduce(Int32Array.of(1), new Int32Array(1), 'sum', { reproducible: true }));
  refused(() => world.allreduce(x, y, 'sum', { reproducible: true, executor: 'offload' }));
  refused(() => world.allreduceInit(x, y, 'sum', { reproducible: true }));
  refused(() => world.allreduce(x, y, 'sum', { folds: 3 }));
  refused(() => world.allreduce(x, y, 'sum', { reproducible: true, folds: 4 as 3 }));
  return {
    partition, plain, direct, refusals, large, expected: sha(expected), rootedOk: r !== root || sha(rooted) === sha(expected),
    values: Array.from(nb, (x) => (Object.is(x, -0) ? '-0' : String(x))), three: Array.from(three, String),
    float32Same: sha(out32) === sha(out32b), float32: Array.from(out32, String),
  };
}
