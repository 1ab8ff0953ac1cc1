import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runOk } from './helpers.ts';

const T = { timeout: 120_000 };

describe('distributed-graph topologies', () => {
  // 1..8 ranks over 1..4 nodes, with uneven nodes (5 = 2+2+1, 7 = 3+3+1).
  for (const [n, ppn] of [[1, 1], [2, 1], [3, 3], [4, 2], [5, 2], [7, 3], [8, 2]] as Array<[number, number]>) {
    test(`neighbour collectives on ring, random multigraph, star and 26-neighbour graphs match the edge-list reference on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('distgraph.ts', n, ppn, ['props'], 90_000);
      assert.ok(r.ranks.every((x) => x.result === 30), `checks per rank: ${r.ranks.map((x) => String(x.result)).join(', ')}`);
    });
  }

  for (const [n, ppn] of [[3, 3], [6, 2]] as Array<[number, number]>) {
    test(`with executor 'offload', neighbour collectives on every graph match the reference on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('distgraph.ts', n, ppn, ['props', 'offload'], 90_000);
      assert.ok(r.ranks.every((x) => x.result === 30), `checks per rank: ${r.ranks.map((x) => String(x.result)).join(', ')}`);
    });
  }

  test('an inconsistent graph, a rank out of range and bad calls raise their codes on every rank instead of hanging', T, async () => {
    const r = await runOk('distgraph.ts', 3, 3, ['bad'], 60_000);
    for (const x of r.ranks) {
      assert.deepEqual(x.result, {
        'edge listed by one end only': 'NBC_ERR_ARG',
        'rank out of range': x.rank === 2 ? 'NBC_ERR_RANK' : 'NBC_ERR_ARG',
        'weights of the wrong length': 'NBC_ERR_ARG',
        'neighborAlltoall with a send buffer of the wrong length': 'NBC_ERR_COUNT',
        'neighborAlltoallv with counts for the wrong degree': 'NBC_ERR_COUNT',
        'neighborAlltoall on a plain communicator': 'NBC_ERR_COMM',
        'distGraphNeighbors on a plain communicator': 'NBC_ERR_COMM',
        'distGraphNeighbors on a Cartesian communicator': 'NBC_ERR_COMM',
        'coords on a graph communicator': 'NBC_ERR_COMM',
      }, `rank ${x.rank}`);
    }
  });
});
