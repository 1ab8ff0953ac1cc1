import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runOk } from './helpers.ts';

const T = { timeout: 60_000 };

/** One to all ranks per node, 1 to 8 ranks. */
const shapes: Array<[number, number]> = [[1, 1], [2, 2], [2, 1], [3, 3], [4, 2], [5, 5], [8, 4]];

const COLLS = ['reduce', 'gather', 'scatter', 'gatherv', 'allgather', 'allgatherv', 'alltoallv', 'reduceScatterBlock', 'reduceScatter', 'scan', 'exscan', 'allreduce'];

describe('blocking calls run inside the call (HostExecutor.runNow) against their non-blocking forms', () => {
  for (const [n, ppn] of shapes) {
    test(`every blocking collective of eager messages runs its schedule inside the call, with the non-blocking form's messages (peers, sizes, order, tags) and bits, on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('run-now.ts', n, ppn, [], 45_000);
      const tallies = r.ranks.map((x) => x.result as Record<string, number>);
      for (const t of tallies) assert.deepEqual(t, tallies[0], 'every rank proved the same cases');
      for (const coll of COLLS) assert.ok((tallies[0]![coll] ?? 0) > 0, `${coll}: some cases ran inside the call and matched (${JSON.stringify(tallies[0])})`);
    });
  }
});
