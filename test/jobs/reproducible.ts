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
 *   allreduce under every algorithm and executor (host, offload, agg), iallreduce, several in
 *   flight, persistent, reduce to the last rank, 3 folds, Float32: the results must equal, bit
 *   for bit, a BinnedSum of those p values added in rank order here, and are returned for the
 *   test to check against the exact sum. Reduce-scatter gives each rank the same sums; scan
 *   and exscan give rank r the sum of values 0..r (0..r-1) on the whole communicator's bins,
 *   the same under every executor and form.
 * - products (`op 'prod'`): the same bits under every algorithm and executor, those of the
 *   fixed tree over rank indices computed here.
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
  // The node engines and the fabric (agg falls back to host algorithms where no fabric runs).
  const fabricBefore = world.stats().executors.agg.onFabric;
  for (const executor of ['offload', 'agg'] as const) {
    const out = new Float64Array(E);
    world.allreduce(mine, out, 'sum', { reproducible: true, executor });
    direct[`allreduce/${executor}`] = sha(out);
    const out2 = new Float64Array(E);
    world.iallreduce(mine, out2, 'sum', { reproducible: true, executor }).wait();
    direct[`iallreduce/${executor}`] = sha(out2);
  }
  const aggOnFabric = world.stats().executors.agg.onFabric - fabricBefore;
  // Several in flight, a plain call between them, completed out of order.
  {
    const a = new Float64Array(E);
    const b = new Float64Array(E);
    const c = new Float64Array(E);
    const ra = world.iallreduce(mine, a, 'sum', { reproducible: true, executor: 'offload' });
    const rb = world.iallreduce(mine, b, 'sum', { reproducible: true });
    const bc = Float64Array.of(r === 0 ? 42 : 0);
    const rbc = world.ibcast(bc, 0);
    const rc = world.iallreduce(mine, c, 'sum', { reproducible: true, executor: 'offload' });
    rc.wait();
    rbc.wait();
    rb.wait();
    ra.wait();
    direct['in-flight/a'] = sha(a);
    direct['in-flight/b'] = sha(b);
    direct['in-flight/c'] = sha(c);
    if (bc[0] !== 42) throw new Error(`the bcast between reproducible calls got ${bc[0]}`);
  }
  // Persistent: started twice, the input changed in between and back.
  {
    const input = Float64Array.from(mine);
    const out = new Float64Array(E);
    const req = world.allreduceInit(input, out, 'sum', { reproducible: true });
    input.fill(1);
    req.start().wait();
    const ones = out[0];
    input.set(mine);
    req.start().wait();
    req.free();
    direct.persistent = sha(out);
    if (ones !== p) throw new Error(`persistent reproducible allreduce of ones gave ${ones}, expected ${p}`);
    const off = new Float64Array(E);
    const reqOff = world.allreduceInit(mine, off, 'sum', { reproducible: true, executor: 'offload' });
    reqOff.start().wait();
    reqOff.free();
    direct['persistent/offload'] = sha(off);
  }
  const root = p - 1;
  const rooted = new Float64Array(E);
  world.reduce(mine, r === root ? rooted : null, 'sum', root, { reproducible: true });
  const rootedOff = new Float64Array(E);
  world.reduce(mine, r === root ? rootedOff : null, 'sum', root, { reproducible: true, executor: 'offload' });
  const three = new Float64Array(E);
  world.allreduce(mine, three, 'sum', { reproducible: true, folds: 3 });
  const threeOff = new Float64Array(E);
  world.allreduce(mine, threeOff, 'sum', { reproducible: true, folds: 3, executor: 'offload' });
  const mine32 = Float32Array.from(mine.map((x) => (Number.isFinite(x) ? Math.fround(x) : x)));
  const out32 = new Float32Array(E);
  world.allreduce(mine32, out32, 'sum', { reproducible: true, algorithm: 'ring' });
  const out32b = new Float32Array(E);
  world.allreduce(mine32, out32b, 'sum', { reproducible: true, algorithm: 'recursive-doubling' });
  const out32c = new Float32Array(E);
  world.allreduce(mine32, out32c, 'sum', { reproducible: true, executor: 'offload' });

  // Reduce-scatter: each rank's block of E * p elements (element e of block q is value of e).
  const wide = new Float64Array(E * p);
  for (let q = 0; q < p; q++) wide.set(mine, q * E);
  const block = new Float64Array(E);
  world.reduceScatterBlock(wide, block, 'sum', { reproducible: true });
  const blockOff = new Float64Array(E);
  world.ireduceScatterBlock(wide, blockOff, 'sum', { reproducible: true, executor: 'offload' }).wait();
  const counted = new Float64Array(E);
  world.reduceScatter(wide, counted, new Array<number>(p).fill(E), 'sum', { reproducible: true, algorithm: 'ring' });
  const reduceScatter = { block: sha(block), offload: sha(blockOff), counts: sha(counted) };

  // Scan and exscan: the bins are the whole communicator's, so the last rank's scan is the
  // allreduce, and rank r's exscan is rank r - 1's scan.
  const scans: Record<string, string> = {};
  const scanOut = new Float64Array(E);
  world.scan(mine, scanOut, 'sum', { reproducible: true });
  scans.host = sha(scanOut);
  const scanOff = new Float64Array(E);
  world.iscan(mine, scanOff, 'sum', { reproducible: true, executor: 'offload' }).wait();
  scans.offload = sha(scanOff);
  const scanPersistent = new Float64Array(E);
  const sp = world.scanInit(mine, scanPersistent, 'sum', { reproducible: true });
  sp.start().wait();
  sp.free();
  scans.persistent = sha(scanPersistent);
  const ex = new Float64Array(E);
  world.exscan(mine, ex, 'sum', { reproducible: true });
  const prevScan = new Float64Array(E);
  // rank r gets rank r - 1's scan (a shift by one: sendrecv along the ranks)
  if (p > 1) {
    const reqs = [];
    if (r + 1 < p) reqs.push(world.isend(scanOut, r + 1, 7));
    if (r > 0) reqs.push(world.irecv(prevScan, r - 1, 7));
    for (const q of reqs) q.wait();
  }
  const exscanOk = r === 0 || sha(ex) === sha(prevScan);
  const lastScanIsAllreduce = r !== p - 1 || sha(scanOut) === sha(nb);

  // Products: a fixed tree over rank indices, whatever the algorithm and executor.
  const pv = Float64Array.from({ length: E }, (_, e) => 1 + ((e * 31 + r * 17) % 97) * 2 ** -20 - 2 ** -10);
  const prods: Record<string, string> = {};
  for (const [name, opts] of [['auto', {}], ['ring', { algorithm: 'ring' }], ['offload', { executor: 'offload' }]] as const) {
    const out = new Float64Array(E);
    world.allreduce(pv, out, 'prod', { reproducible: true, ...opts });
    prods[name] = sha(out);
  }
  const tree = Float64Array.from({ length: E }, (_, e) => {
    const v = Array.from({ length: p }, (_, q) => 1 + ((e * 31 + q * 17) % 97) * 2 ** -20 - 2 ** -10);
    for (let m = p; m > 1; m = (m + 1) >> 1) {
      for (let j = 0; 2 * j + 1 < m; j++) v[j] = v[2 * j]! * v[2 * j + 1]!;
      if (m % 2 === 1) v[m >> 1] = v[m - 1]!;
    }
    return v[0]!;
  });
  prods.expected = sha(tree);
  const prodRooted = new Float64Array(E);
  world.reduce(pv, r === 0 ? prodRooted : null, 'prod', 0, { reproducible: true });
  const prodRootedOk = r !== 0 || sha(prodRooted) === prods.expected;

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
  const bigNb = new Float64Array(big);
  world.iallreduce(bigMine, bigNb, 'sum', { reproducible: true }).wait();
  const bigOff = new Float64Array(big);
  world.allreduce(bigMine, bigOff, 'sum', { reproducible: true, executor: 'offload' });
  const bigInPlace = Float64Array.from(bigMine);
  world.allreduce(IN_PLACE, bigInPlace, 'sum', { reproducible: true });
  const large = { split: sha(bigSplit), whole: sha(bigWhole), nb: sha(bigNb), offload: sha(bigOff), inPlace: sha(bigInPlace), expected: sha(bigExpected) };

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
  refused(() => world.scan(x, y, 'prod', { reproducible: true }));
  refused(() => world.allreduce(x, new Float64Array(1), 'sum', { reproducible: true }));
  refused(() => world.reduceScatter(new Float64Array(p + 1), new Float64Array(1), new Array<number>(p).fill(1), 'sum', { reproducible: true }));
  refused(() => world.allgather(x, new Float64Array(2 * p), { reproducible: true }));
  refused(() => world.allreduce(x, y, 'sum', { folds: 3 }));
  refused(() => world.allreduce(x, y, 'sum', { reproducible: true, folds: 4 as 3 }));
  return {
    partition, plain, direct, refusals, large, expected: sha(expected),
    rootedOk: r !== root || (sha(rooted) === sha(expected) && sha(rootedOff) === sha(expected)),
    values: Array.from(nb, (x) => (Object.is(x, -0) ? '-0' : String(x))), three: Array.from(three, String), threeSame: sha(three) === sha(threeOff),
    float32Same: sha(out32) === sha(out32b) && sha(out32) === sha(out32c), float32: Array.from(out32, String),
    reduceScatter, blockOk: sha(block) === sha(nb), scans, scanValues: Array.from(scanOut, String), exscanOk, lastScanIsAllreduce,
    prods, prodRootedOk, aggOnFabric,
  };
}
