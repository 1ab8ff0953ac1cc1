import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { EAGER_MESSAGE_COST } from '../src/p2p/transport.ts';
import { ucxUnavailable } from '../src/runtime/node-main.ts';
import { jobPath, run, runOk } from './helpers.ts';

const T = { timeout: 120_000 };

/** (ranks, ranks per node): 1..9 ranks over 1..3 nodes. */
const shapes: Array<[number, number]> = [
  [1, 1], [2, 2], [2, 1], [3, 1], [3, 3], [4, 2], [5, 2], [6, 3], [7, 3], [8, 4], [9, 3],
];

describe('point-to-point', () => {
  for (const [n, ppn] of shapes) {
    test(`a ring exchange delivers every neighbour's bytes on ${n} ranks over ${Math.ceil(n / ppn)} node(s)`, T, async () => {
      const r = await runOk('p2p.ts', n, ppn, ['ring', '8']);
      assert.deepEqual(r.ranks.map((x) => (x.result as { from: number }).from), r.ranks.map((x) => (x.rank - 1 + n) % n));
    });
  }

  for (const [n, ppn, bytes] of [[4, 2, 100], [6, 3, 20_000], [9, 3, 300_000]] as const) {
    test(`all pairs exchange ${bytes}-byte messages on ${n} ranks over ${Math.ceil(n / ppn)} nodes`, T, async () => {
      await runOk('p2p.ts', n, ppn, ['allpairs', String(bytes)]);
    });
  }

  test('all pairs exchange works on 16 ranks over 2 nodes of 8 (oversubscribed 2-core machine)', T, async () => {
    await runOk('p2p.ts', 16, 8, ['allpairs', '4096']);
  });

  test('ANY_SOURCE and ANY_TAG receive every sender once with its real source and tag', T, async () => {
    const r = await runOk('p2p.ts', 5, 2, ['anysource']);
    assert.deepEqual(r.ranks[0]!.result, [1, 2, 3, 4]);
  });

  for (const [n, ppn] of [[2, 2], [2, 1]] as const) {
    test(`messages from one source are never overtaken, per tag and with ANY_TAG (${ppn === 2 ? 'intra' : 'inter'}-node)`, T, async () => {
      const r = await runOk('p2p.ts', n, ppn, ['order']);
      assert.equal(r.ranks[0]!.result, 'ordered');
    });
  }

  // Eager credit (transport.ts): a receiver that takes nothing holds at most the credit per
  // sender; past it small sends go by rendezvous, and receiving gives the credit back.
  for (const [ppn, transport] of [[2, 'tcp'], [1, 'tcp'], [1, 'ucx']] as const) {
    test(`eager credit runs out toward a rank that receives nothing, small sends go by rendezvous, and receiving gives it back (${ppn === 2 ? 'intra-node' : `inter-node, ${transport}`})`,
      { ...T, skip: transport === 'ucx' && ucxUnavailable() !== null ? 'no UCX in the native addon' : false }, async () => {
        const r = await launch(jobPath('p2p.ts'), {
          ranks: 2, ppn, transport, args: ['credit', String(100 - Math.floor(4096 / (64 + EAGER_MESSAGE_COST)))],
          output: 'pipe', timeoutMs: 60_000, env: { NBC_EAGER_CREDIT_KB: '4' },
        });
        assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
        assert.equal((r.ranks.find((x) => x.rank === 1)!.result as number[])[0], 88);
      });
  }

  for (const [ppn, bytes] of [[2, 16], [2, 100_000], [1, 16], [1, 3_000_000]] as const) {
    test(`a ${bytes}-byte message into a shorter buffer fails with NBC_ERR_TRUNCATE (${ppn === 2 ? 'intra' : 'inter'}-node)`, T, async () => {
      const r = await runOk('p2p.ts', 2, ppn, ['truncate', String(bytes)]);
      assert.equal(r.ranks[0]!.result, 'NBC_ERR_TRUNCATE');
    });
  }

  test('every typed array type arrives intact, into plain and registered memory', T, async () => {
    for (const ppn of [2, 1]) {
      const r = await runOk('p2p.ts', 2, ppn, ['dtypes']);
      assert.equal(r.ranks[0]!.result, 12);
    }
  });

  for (const ppn of [2, 1]) {
    test(`a 64 MiB message arrives intact from plain and registered memory (${ppn === 2 ? 'intra' : 'inter'}-node)`, T, async () => {
      const r = await runOk('p2p.ts', 2, ppn, ['big', String(64 * 1024 * 1024)]);
      assert.equal(r.ranks[0]!.result, 64 * 1024 * 1024);
    });
  }

  for (const ppn of [2, 1]) {
    test(`10,000 outstanding requests per rank complete (${ppn === 2 ? 'intra' : 'inter'}-node)`, T, async () => {
      const r = await runOk('p2p.ts', 2, ppn, ['many']);
      assert.equal(r.ranks[0]!.result, 20_000);
    });
  }
});

describe('requests', () => {
  for (const ppn of [2, 1]) {
    test(`waitAny, testAny, testAll, await req, probe and iprobe behave as in MPI (${ppn === 2 ? 'intra' : 'inter'}-node)`, T, async () => {
      const r = await runOk('p2p.ts', 2, ppn, ['requests']);
      assert.deepEqual(r.ranks.map((x) => x.result), ['ok', 'ok']);
    });
  }
});

describe('communicators', () => {
  test('create(group) gives the group members a working communicator and the others null', T, async () => {
    const r = await runOk('p2p.ts', 5, 2, ['groups']);
    assert.deepEqual(r.ranks.map((x) => x.result), [6, null, 6, null, 6]);
  });

  test('world, dup and split traffic never cross; split orders by key; splitShared groups a node', T, async () => {
    const r = await runOk('p2p.ts', 7, 3, ['isolation']);
    for (const x of r.ranks) {
      const res = x.result as { half: number; shared: number };
      assert.equal(res.half, x.rank % 2 === 0 ? 4 : 3);
      assert.equal(res.shared, x.node === 2 ? 1 : 3);
    }
  });

  test('Cartesian shifts on a 3x2 grid (periodic x non-periodic) reach the right neighbours', T, async () => {
    const r = await runOk('p2p.ts', 6, 2, ['cart']);
    const byRank = r.ranks.map((x) => x.result as { dims: number[]; coords: number[]; dim0: number; dim1: number });
    assert.deepEqual(byRank[0]!.dims, [3, 2]);
    // rank = x * 2 + y; dim 0 periodic: source is (x-1 mod 3, y); dim 1 not periodic.
    for (let rank = 0; rank < 6; rank++) {
      const x = Math.floor(rank / 2);
      const y = rank % 2;
      assert.deepEqual(byRank[rank]!.coords, [x, y]);
      assert.equal(byRank[rank]!.dim0, ((x + 2) % 3) * 2 + y);
      assert.equal(byRank[rank]!.dim1, y === 0 ? -1 : rank - 1);
    }
  });
});

describe('bad input gets a typed NbcError', () => {
  test('bad ranks, tags, buffers and communicators each raise their code', T, async () => {
    const r = await runOk('p2p.ts', 2, 2, ['errors']);
    assert.deepEqual(r.ranks[0]!.result, {
      'rank': 'NBC_ERR_RANK',
      'negative rank': 'NBC_ERR_RANK',
      'source': 'NBC_ERR_RANK',
      'tag': 'NBC_ERR_TAG',
      'float tag': 'NBC_ERR_TAG',
      'buffer': 'NBC_ERR_TYPE',
      'dataview': 'NBC_ERR_TYPE',
      'freed comm': 'NBC_ERR_COMM',
      'free world': 'NBC_ERR_COMM',
      'split color': 'NBC_ERR_ARG',
      'cart too big': 'NBC_ERR_ARG',
      'cart grids disagree': 'NBC_ERR_ARG',
      'cart periods disagree': 'NBC_ERR_ARG',
      'cart invalid on one rank': 'NBC_ERR_ARG',
      'cart periods not an array': 'NBC_ERR_ARG',
      'rankOf null': 'NBC_ERR_ARG',
    });
  });

  test('an unknown job mode fails the job with the thrown message and exit code 1', T, async () => {
    const r = await run('p2p.ts', 2, 1, ['no-such-mode']);
    assert.equal(r.exitCode, 1);
    assert.match(r.stderr, /unknown mode no-such-mode/);
  });
});
