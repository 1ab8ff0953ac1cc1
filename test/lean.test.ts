import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runOk } from './helpers.ts';

const T = { timeout: 60_000 };

/** Every size 1..9, with one to all ranks per node. */
const shapes: Array<[number, number]> = [[1, 1], [2, 2], [2, 1], [3, 3], [4, 2], [5, 5], [6, 3], [7, 7], [8, 4], [9, 3]];

describe('lean blocking paths against the schedules they replace', () => {
  for (const [n, ppn] of shapes) {
    test(`blocking allreduce, barrier, bcast and alltoall on the lean path send exactly the messages of their schedules (peers, sizes, order, tags) and give the same bits, on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('lean.ts', n, ppn, [], 30_000);
      const tallies = r.ranks.map((x) => x.result as Record<string, number>);
      for (const t of tallies) assert.deepEqual(t, tallies[0], 'every rank proved the same cases');
      const t = tallies[0]!;
      for (const coll of ['allreduce', 'barrier', 'bcast', 'alltoall']) {
        // one rank has no lean path: its cases only show that nothing is sent
        if (n === 1) assert.equal(t[coll], 0, `${coll} on one rank`);
        else assert.ok(t[coll]! > 0, `${coll}: some cases ran lean and matched (${JSON.stringify(t)})`);
      }
    });
  }
});
