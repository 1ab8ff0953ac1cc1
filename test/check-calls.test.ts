/**
 * NBC_CHECK_CALLS=1: a collective call that the ranks disagree on fails on every rank with
 * NBC_ERR_ARG naming the rank and the difference, before anything is sent (the communicator
 * stays usable); calls they agree on run as before.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launch } from 'nbcoll';
import { configFromEnv } from '../src/runtime/config.ts';
import { jobPath } from './helpers.ts';

const T = { timeout: 120_000 };

const expected: Array<[string, RegExp]> = [
  ['kind', /rank 3 calls bcast where rank 0 calls allreduce/],
  ['root', /\(bcast on rank 0\): rank 3 passes root 1 where rank 0 passes 0/],
  ['op', /rank 3 passes op max where rank 0 passes sum/],
  ['type', /rank 3 passes Int32 elements where rank 0 passes Float64/],
  ['count', /rank 3 passes 64 bytes per rank where rank 0 passes 32/],
  ['executor', /rank 3 runs it on executor offload where rank 0 runs it on host/],
  ['algorithm', /rank 3 runs a different algorithm/],
  ['nonblocking', /rank 3 passes op min where rank 0 passes sum/],
];

for (const ppn of [4, 2]) {
  test(`with NBC_CHECK_CALLS=1, calls the ranks disagree on fail on every rank naming the difference, and the communicator goes on (4 ranks, ${4 / ppn} node(s))`, T, async () => {
    const r = await launch(jobPath('check-calls.ts'), { ranks: 4, ppn, output: 'pipe', timeoutMs: 90_000, env: { NBC_CHECK_CALLS: '1' } });
    assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
    for (const x of r.ranks) {
      const got = x.result as string[];
      expected.forEach(([name, re], i) => {
        assert.match(got[i]!, new RegExp(`^${name}: NBC_ERR_ARG: Collective call \\d+ on this communicator `), `rank ${x.rank}`);
        assert.match(got[i]!, re, `rank ${x.rank}, ${name}`);
        assert.match(got[i]!, /expected every rank to make the same call \(NBC_CHECK_CALLS\)$/);
      });
      assert.equal(got[expected.length], 'agreed: 0,1,1,2,2,2,3,3,3,3', `rank ${x.rank}`);
    }
  });
}

test('NBC_CHECK_CALLS takes 1 or 0; anything else is NBC_ERR_ARG', () => {
  assert.equal(configFromEnv({ NBC_CHECK_CALLS: '1' }).checkCalls, true);
  assert.equal(configFromEnv({ NBC_CHECK_CALLS: '0' }).checkCalls, false);
  assert.equal(configFromEnv({}).checkCalls, false);
  assert.throws(() => configFromEnv({ NBC_CHECK_CALLS: 'yes' }), { code: 'NBC_ERR_ARG', message: /NBC_CHECK_CALLS=yes: expected 1/ });
});
