/**
 * What a job starts with: V8 with or without its helper threads (NBC_V8_THREADS, runtime/v8-threads.ts),
 * and the optional training of the library's hot paths before the job (NBC_TRAIN, runtime/train.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { NbcError } from '../src/errors.ts';
import { trainRounds } from '../src/runtime/train.ts';
import { v8ThreadArgs, v8ThreadsFromEnv } from '../src/runtime/v8-threads.ts';
import { jobPath } from './helpers.ts';

const NBC = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const T = { timeout: 120_000 };
const isArg = (re: RegExp) => (err: unknown): boolean => err instanceof NbcError && err.code === 'NBC_ERR_ARG' && re.test(err.message);

describe('V8 helper threads (NBC_V8_THREADS)', () => {
  test('auto drops them where the ranks on the host are at least its cores; on and off decide alone', () => {
    assert.deepEqual(v8ThreadArgs('auto', 4, 2), ['--single-threaded']);
    assert.deepEqual(v8ThreadArgs('auto', 2, 2), ['--single-threaded']);
    assert.deepEqual(v8ThreadArgs('auto', 1, 2), []);
    assert.deepEqual(v8ThreadArgs('auto', 8, 16), []);
    assert.deepEqual(v8ThreadArgs('on', 64, 2), []);
    assert.deepEqual(v8ThreadArgs('off', 1, 16), ['--single-threaded']);
    assert.equal(v8ThreadsFromEnv({}), 'auto');
    assert.throws(() => v8ThreadsFromEnv({ NBC_V8_THREADS: 'yes' }), isArg(/NBC_V8_THREADS 'yes': expected auto .*, on or off/));
  });

  test('the node processes start with the flags auto chose, and NBC_NODE_ARGS comes after them', T, async () => {
    const ranks = availableParallelism() + 1;
    const r = await launch(jobPath('start-up.ts'), { ranks, ppn: ranks, output: 'pipe', timeoutMs: 60_000 });
    assert.equal(r.exitCode, 0, r.failure ?? '');
    const argv = (r.ranks[0]!.result as { execArgv: string[] }).execArgv;
    assert.ok(argv.includes('--single-threaded'), `execArgv ${argv.join(' ')}`);
    const on = await launch(jobPath('start-up.ts'), { ranks: 2, ppn: 2, output: 'pipe', timeoutMs: 60_000, env: { NBC_V8_THREADS: 'on', NBC_NODE_ARGS: '--max-semi-space-size=8' } });
    assert.equal(on.exitCode, 0, on.failure ?? '');
    const argvOn = (on.ranks[0]!.result as { execArgv: string[] }).execArgv;
    assert.ok(!argvOn.includes('--single-threaded') && argvOn.includes('--max-semi-space-size=8'), `execArgv ${argvOn.join(' ')}`);
  });

  test('nbc run refuses a bad NBC_V8_THREADS or NBC_TRAIN in one line with exit code 2, before any rank starts', () => {
    for (const [k, v, re] of [['NBC_V8_THREADS', 'maybe', /NBC_V8_THREADS 'maybe'/], ['NBC_TRAIN', '-3', /NBC_TRAIN '-3': expected a number of training rounds/]] as const) {
      const p = spawnSync(process.execPath, [NBC, 'run', '-n', '2', jobPath('start-up.ts')], { encoding: 'utf8', env: { ...process.env, [k]: v }, timeout: 60_000 });
      assert.equal(p.status, 2, `${k}=${v}: ${p.stderr}`);
      assert.match(p.stderr, re);
      assert.equal(p.stderr.trim().split('\n').length, 1, p.stderr);
    }
  });
});

describe('training the hot paths (NBC_TRAIN)', () => {
  test('rounds from the environment: none by default, a count, an invalid value refused', () => {
    assert.equal(trainRounds({}), 0);
    assert.equal(trainRounds({ NBC_TRAIN: '' }), 0);
    assert.equal(trainRounds({ NBC_TRAIN: '300' }), 300);
    assert.throws(() => trainRounds({ NBC_TRAIN: '1e3' }), isArg(/NBC_TRAIN '1e3'/));
  });

  test('a trained job\'s own collectives and messages are its own: same results, nothing left over to match', T, async () => {
    for (const [ranks, ppn] of [[3, 3], [4, 2]] as const) {
      const r = await launch(jobPath('start-up.ts'), { ranks, ppn, output: 'pipe', timeoutMs: 90_000, env: { NBC_TRAIN: '40' } });
      assert.equal(r.exitCode, 0, r.failure ?? '');
      const expect = (ranks * (ranks + 1)) / 2;
      r.ranks.forEach((x, i) => {
        const res = x.result as { sum: number; got: number };
        assert.equal(res.sum, expect, `rank ${i}: allreduce`);
        assert.equal(res.got, (i + ranks - 1) % ranks, `rank ${i}: the ring's message`);
      });
    }
  });
});
