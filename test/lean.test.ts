import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath } from './helpers.ts';

const T = { timeout: 60_000 };

/** Every size 1..9, with one to all ranks per node. */
const shapes: Array<[number, number]> = [[1, 1], [2, 2], [2, 1], [3, 3], [4, 2], [5, 5], [6, 3], [7, 7], [8, 4], [9, 3]];

describe('lean blocking paths against the schedules they replace', () => {
  for (const [n, ppn] of shapes) {
    test(`blocking allreduce, barrier, bcast and alltoall on the lean path send exactly the messages of their schedules (peers, sizes, order, tags) and give the same bits, on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      // The rings' lean paths: on one node of more ranks than cores the job's communicators of
      // every rank would take the flag boards (test/flat.test.ts proves those), so they are off.
      const r = await launch(jobPath('lean.ts'), { ranks: n, ppn, output: 'pipe', timeoutMs: 30_000, env: { NBC_FLAT: '0' } });
      assert.equal(r.exitCode, 0, `lean.ts on ${n} ranks (ppn ${ppn}) failed: ${r.failure}\n${r.stderr}\n${r.stdout}`);
      assert.equal(r.ranks.length, n, `every rank reports a result\n${r.stderr}`);
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
