import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { parseJsRuntime, runtimeCommand, ucxUnsupported, type JsRuntime } from '../src/runtime/js-runtime.ts';
import { jobPath, processesMatching } from './helpers.ts';

const T = { timeout: 60_000 };
const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));

/** Why `runtime` cannot be tested here (its binary is not found), or false. */
function missing(runtime: JsRuntime): string | false {
  try {
    runtimeCommand(runtime);
    return false;
  } catch (err) {
    return (err as Error).message;
  }
}

describe('runtimes', () => {
  test('parseJsRuntime() takes node, bun and deno and refuses anything else with NBC_ERR_ARG', () => {
    for (const r of ['node', 'bun', 'deno']) assert.equal(parseJsRuntime(r), r);
    assert.throws(() => parseJsRuntime('bunn'), { code: 'NBC_ERR_ARG', message: "--runtime 'bunn': expected one of node, bun, deno" });
  });

  test('runtimeCommand() takes the binary NBC_DENO names, runs Deno scripts with `run -A`, and names the variable when it is no executable', () => {
    assert.deepEqual(runtimeCommand('deno', { NBC_DENO: process.execPath }), { runtime: 'deno', command: process.execPath, args: ['run', '-A'] });
    assert.deepEqual(runtimeCommand('node', {}), { runtime: 'node', command: process.execPath, args: [] });
    assert.throws(() => runtimeCommand('bun', { NBC_BUN: '/nonexistent/bun' }),
      { code: 'NBC_ERR_LAUNCH', message: 'Cannot run the nodes on bun: NBC_BUN=/nonexistent/bun is not an executable file' });
  });

  test('a runtime that cannot be found fails `nbc run` at once with one line (exit 2), before any node starts', T, () => {
    const p = spawnSync(process.execPath, [CLI, 'run', '--runtime', 'deno', '-n', '2', jobPath('runtime.ts')],
      { encoding: 'utf8', timeout: 30_000, env: { ...process.env, NBC_DENO: '/nonexistent/deno' } });
    assert.equal(p.status, 2, p.stderr);
    assert.deepEqual(p.stderr.trim().split('\n'), ['nbc: Cannot run the nodes on deno: NBC_DENO=/nonexistent/deno is not an executable file [NBC_ERR_LAUNCH]']);
  });

  test('UCX is refused on Bun and Deno with the reason, so auto picks TCP there', () => {
    assert.equal(ucxUnsupported('node'), null);
    assert.match(ucxUnsupported('bun') ?? '', /runs on Bun, and the UCX transport needs Node/);
    assert.match(ucxUnsupported('deno') ?? '', /runs on Deno, and the UCX transport needs Node/);
  });

  for (const runtime of ['bun', 'deno'] as const) {
    test(`launch({ runtime: '${runtime}' }) runs 4 ranks on 2 nodes there: blocking and awaited collectives, output and results`, { ...T, skip: missing(runtime) }, async () => {
      const r = await launch(jobPath('runtime.ts'), { ranks: 4, ppn: 2, runtime, output: 'pipe', timeoutMs: 30_000 });
      assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
      assert.deepEqual(r.ranks.map((x) => x.result), Array.from({ length: 4 }, () => ({ sum: 6, isum: 10, runtime })));
      assert.deepEqual(r.stdout.trim().split('\n').sort(), [0, 1, 2, 3].map((k) => `rank ${k} of 4 on ${runtime}: 6 10`));
    });

    test(`the property check of every collective (test/jobs/props-web.ts) on ${runtime}, 4 ranks on one node and on 2: Node's hashes`, { ...T, skip: missing(runtime) }, async () => {
      for (const ppn of [4, 2]) {
        const node = await launch(jobPath('props-web.ts'), { ranks: 4, ppn, output: 'pipe', timeoutMs: 30_000 });
        assert.equal(node.exitCode, 0, `${node.failure}\n${node.stderr}`);
        const r = await launch(jobPath('props-web.ts'), { ranks: 4, ppn, runtime, output: 'pipe', timeoutMs: 30_000 });
        assert.equal(r.exitCode, 0, `${r.failure}\n${r.stderr}`);
        assert.deepEqual(r.ranks.map((x) => x.result), node.ranks.map((x) => x.result), `ppn ${ppn}`);
      }
    });

    test(`a rank that throws on ${runtime} fails the job with its error and exit code 1, leaving no process`, { ...T, skip: missing(runtime) }, async () => {
      const token = `${runtime}-throw-${randomBytes(4).toString('hex')}`;
      const r = await launch(jobPath('fail.ts'), { ranks: 4, ppn: 2, runtime, args: ['throw', '3', token], output: 'pipe', timeoutMs: 30_000 });
      assert.equal(r.exitCode, 1, r.stderr);
      assert.match(r.failure ?? '', /^rank 3 \(node 1\) failed: Error: boom from rank 3/);
      assert.deepEqual(processesMatching(token), [], 'no process is left behind');
    });
  }
});
