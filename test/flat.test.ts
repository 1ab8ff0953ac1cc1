/**
 * The flag board (coll/flat.ts): a one-node job's world barrier and small allreduce through
 * shared flags, with the bits of the recursive-doubling schedule, and disagreeing calls that
 * fail on every rank instead of hanging. NBC_FLAT=1 asks for the board on any one-node job (by
 * default it is used where the cores are crowded), NBC_FLAT=0 keeps the rings.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { flatBoardWanted } from '../src/runtime/wait-policy.ts';
import { jobPath } from './helpers.ts';

const T = { timeout: 240_000 };

async function flatJob(ranks: number, flat: '0' | '1', arg: string, env: Record<string, string> = {}) {
  const r = await launch(jobPath('flat-board.ts'), { ranks, ppn: ranks, args: [arg], output: 'pipe', timeoutMs: 120_000, env: { NBC_FLAT: flat, ...env } });
  assert.equal(r.exitCode, 0, `flat-board ${arg} on ${ranks} ranks, NBC_FLAT=${flat}: ${r.failure}\n${r.stderr}\n${r.stdout}`);
  assert.equal(r.ranks.length, ranks);
  return r.ranks.map((x) => x.result as Record<string, unknown>);
}

describe('the flag board', () => {
  test('gives the recursive-doubling schedule\'s bits, keeps its order among other traffic, and sends no message', T, async () => {
    for (const ranks of [3, 4, 5, 7]) {
      for (const flat of ['1', '0'] as const) {
        const results = await flatJob(ranks, flat, 'bits');
        results.forEach((x, rank) => {
          const where = `rank ${rank} of ${ranks}, NBC_FLAT=${flat}`;
          assert.deepEqual(x.same, { 'sum f64 x1': true, 'sum f64 x8': true, 'sum f64 x128': true, 'max i32 x4': true, 'matmul x2': true, 'f64 and i32 alternating': true }, where);
          assert.equal(x.sums, 300, `${where}: every interleaved Int32 sum exact`);
          assert.equal(x.large, true, `${where}: the 2 KiB allreduce past the board`);
          assert.equal(x.reversedSame, true, `${where}: a communicator of every rank in another order`);
          const by = x.sentBy as { reversed: number; extra: number[]; half: number; halfSize: number };
          if (flat === '1') {
            assert.equal(x.sent, 0, `${where}: 200 barriers and allreduces on the board send nothing`);
            // boards: the world, its first duplicate, the reversed split, the next duplicate; then none
            assert.equal(by.reversed, 0, `${where}: the reversed split has a board`);
            assert.equal(by.extra[0], 0, `${where}: the fourth communicator of every rank has the last board`);
            assert.ok(by.extra[1]! > 0 && by.extra[2]! > 0, `${where}: the fifth and sixth run on the rings (${by.extra})`);
          } else {
            assert.ok((x.sent as number) >= 400, `${where}: on the rings they send messages (${x.sent})`);
            assert.ok(by.reversed > 0 && by.extra.every((n) => n > 0), `${where}: no boards (${JSON.stringify(by)})`);
          }
          if (by.halfSize > 1) assert.ok(by.half > 0, `${where}: a communicator of half the ranks runs on the rings (${by.half})`);
        });
      }
    }
  });

  test('without the native addon (every wait parks, a store rings the doorbells) the same holds', T, async () => {
    const results = await flatJob(4, '1', 'bits', { NBC_NO_NATIVE: '1' });
    results.forEach((x, rank) => {
      assert.equal(x.reversedSame, true, `rank ${rank}`);
      assert.deepEqual(x.same, { 'sum f64 x1': true, 'sum f64 x8': true, 'sum f64 x128': true, 'max i32 x4': true, 'matmul x2': true, 'f64 and i32 alternating': true }, `rank ${rank}`);
      assert.equal(x.sums, 300, `rank ${rank}`);
      assert.equal(x.large, true, `rank ${rank}`);
      assert.equal(x.sent, 0, `rank ${rank}: on the board`);
    });
  });

  test('a call the ranks disagree on fails on every rank, and the next call works', T, async () => {
    for (const ranks of [2, 5]) {
      const results = await flatJob(ranks, '1', 'mismatch');
      const sum = (ranks * (ranks + 1)) / 2;
      results.forEach((x, rank) => {
        const longer = rank === 0;
        assert.deepEqual(x, {
          // the side that passed more finds less (count), the others more than they can take
          count: longer ? 'NBC_ERR_COUNT' : 'NBC_ERR_TRUNCATE', 'count after': sum,
          large: longer ? 'NBC_ERR_COUNT' : 'NBC_ERR_TRUNCATE', 'large after': sum,
          kind: 'NBC_ERR_ARG', 'kind after': sum,
          type: 'NBC_ERR_TYPE', 'type after': sum,
        }, `rank ${rank} of ${ranks}`);
      });
    }
  });

  test('NBC_FLAT: auto uses the board on a one-node job of more ranks than cores only; a bad value is refused', () => {
    assert.equal(flatBoardWanted({}, { oversubscribed: true }, 1), true);
    assert.equal(flatBoardWanted({}, { oversubscribed: false }, 1), false);
    assert.equal(flatBoardWanted({}, { oversubscribed: true }, 2), false);
    assert.equal(flatBoardWanted({ NBC_FLAT: '1' }, { oversubscribed: false }, 1), true);
    assert.equal(flatBoardWanted({ NBC_FLAT: '1' }, { oversubscribed: false }, 3), false);
    assert.equal(flatBoardWanted({ NBC_FLAT: '0' }, { oversubscribed: true }, 1), false);
    assert.throws(() => flatBoardWanted({ NBC_FLAT: 'yes' }, { oversubscribed: true }, 1), (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'NBC_ERR_ARG' && /NBC_FLAT 'yes'/.test(e.message));
  });
});
