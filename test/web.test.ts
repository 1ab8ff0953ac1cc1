/**
 * nbcoll/web in a real engine: jobs run as Web Workers of a page that `nbc web` serves, driven
 * in Debian's Chromium (headless, puppeteer-core). Where Chromium is missing the tests say so
 * and skip; .ci/run installs it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, readFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { chromiumPath, firefoxPath, runHeadless, serveWeb, type WebJobEnd } from '../src/runtime/web-server.ts';
import { jobPath } from './helpers.ts';

const T = { timeout: 120_000 };
const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const SCREENSHOT = fileURLToPath(new URL('../docs/img/web-demo.png', import.meta.url));
const chromium = chromiumPath();
const skip = chromium === null ? 'no Chromium (apt-get install chromium, or NBC_CHROMIUM=<path>)' : false;

/** Serves `job` on `ranks` workers, runs the page headless, and closes the server. */
async function inPage(job: string | null, ranks: number, args: string[] = [], screenshot?: string, browser: 'chromium' | 'firefox' = 'chromium'): Promise<WebJobEnd> {
  const server = await serveWeb({ job, ranks, args, timeoutMs: 60_000, onOutput: () => {} });
  try {
    return await runHeadless(server, { screenshot, browser });
  } finally {
    await server.close();
  }
}

interface Props { checks: number; hash: string }

describe('nbcoll/web in headless Chromium', { skip }, () => {
  test('nbc web --headless runs 4 ranks as Web Workers: their output as nbc run prints it, their results, exit code 0', T, () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-web-'));
    const p = spawnSync(process.execPath, [CLI, 'web', '--headless', '--ranks', '4', '--json', join(dir, 'end.json'), jobPath('runtime.ts')],
      { encoding: 'utf8', timeout: 90_000 });
    assert.equal(p.status, 0, p.stderr);
    assert.deepEqual(p.stdout.trim().split('\n').sort(), [0, 1, 2, 3].map((k) => `rank ${k} of 4 on browser: 6 10`));
    const end = JSON.parse(readFileSync(join(dir, 'end.json'), 'utf8')) as WebJobEnd;
    assert.deepEqual(end.results, Array.from({ length: 4 }, () => ({ sum: 6, isum: 10, runtime: 'browser' })));
  });

  test('every collective, blocking, non-blocking and persistent, on 1 to 8 ranks matches the sequential reference in the page, with the hashes Node gets', T, async () => {
    for (const n of [1, 2, 3, 4, 8]) {
      const page = await inPage(jobPath('props-web.ts'), n);
      assert.ok(page.ok, `${n} ranks in the page: ${page.message}`);
      const node = await launch(jobPath('props-web.ts'), { ranks: n, ppn: n, output: 'pipe', timeoutMs: 60_000 });
      assert.equal(node.exitCode, 0, `${node.failure}\n${node.stderr}`);
      const got = page.results as Props[];
      assert.ok(got.every((r) => r.checks > 100), `${n} ranks: checks ${got.map((r) => r.checks).join(', ')}`);
      assert.deepEqual(got, node.ranks.map((r) => r.result), `${n} ranks: the page's hashes are Node's`);
    }
  });

  test('a rank that throws stops the job: the others, blocked, are woken and ended, and nbc web exits 1 naming it', T, () => {
    const p = spawnSync(process.execPath, [CLI, 'web', '--headless', '--ranks', '4', jobPath('web-fail.ts'), '2'], { encoding: 'utf8', timeout: 90_000 });
    assert.equal(p.status, 1, p.stderr);
    assert.match(p.stderr, /^nbc web: rank 2 failed: Error: boom from rank 2/m);
  });

  test('where Atomics.waitAsync is missing a helper worker waits for the rank: the awaiting ranks are woken through it', T, async () => {
    for (const waitAsyncHelper of [true, false]) {
      const server = await serveWeb({ job: jobPath('web-wait.ts'), ranks: 3, waitAsyncHelper, timeoutMs: 60_000, onOutput: () => {} });
      try {
        const end = await runHeadless(server);
        assert.ok(end.ok, end.message);
        const rs = end.results as Array<{ sum: number; helper: { waits: number; woken: number } | null }>;
        assert.ok(rs.every((r) => r.sum === 6), JSON.stringify(rs));
        if (!waitAsyncHelper) assert.ok(rs.every((r) => r.helper === null), 'Chromium has Atomics.waitAsync: no helper');
        else {
          // Ranks 1 and 2 waited for rank 0's 200 ms through their helpers, in 50 ms waits (the
          // core's timer backs each up), and the doorbell ended a helper's wait on at least one.
          assert.ok(rs.slice(1).every((r) => r.helper !== null && r.helper.waits >= 1), JSON.stringify(rs));
          assert.ok(rs.slice(1).some((r) => r.helper!.woken >= 1), JSON.stringify(rs));
        }
      } finally {
        await server.close();
      }
    }
  });

  test("the offload executor, which needs a node's engine, is refused in a page by name instead of hanging", T, async () => {
    const end = await inPage(jobPath('web-fail.ts'), 2, ['offload']);
    assert.ok(end.ok, end.message);
    assert.deepEqual(end.results, Array.from({ length: 2 }, () =>
      "NBC_ERR_ARG: Cannot run allreduce with executor 'offload': it runs on the node's engine, and this rank has none (a page's Web Worker, or a lone init() outside nbc run); expected executor 'host'"));
  });

  test('a page without the isolation headers fails with NBC_ERR_LAUNCH naming them', T, async () => {
    const server = await serveWeb({ job: jobPath('runtime.ts'), ranks: 2, withoutIsolation: true, onOutput: () => {} });
    try {
      const end = await runHeadless(server);
      assert.equal(end.ok, false);
      assert.equal(end.code, 'NBC_ERR_LAUNCH');
      assert.match(end.message ?? '', /not cross-origin isolated.*"Cross-Origin-Opener-Policy: same-origin" and "Cross-Origin-Embedder-Policy: require-corp"/);
    } finally {
      await server.close();
    }
  });

  test('a job that imports a node: module is refused before the page is served, naming the import', T, async () => {
    await assert.rejects(serveWeb({ job: jobPath('coll.ts'), ranks: 2 }), {
      code: 'NBC_ERR_LAUNCH',
      message: /^Cannot bundle the job .*coll\.[jt]s for the browser: Could not resolve "node:assert\/strict" .*; a job for the page uses only the public API \(no node: modules, no process\)$/,
    });
  });

  test('the demo page: the allreduce sweep and CG among 4 workers, CG converged on every rank; a screenshot of the page', T, async () => {
    // NBC_WRITE_SCREENSHOT=1 refreshes docs/img/web-demo.png; otherwise the picture goes to a temporary folder.
    const png = join(mkdtempSync(join(tmpdir(), 'nbc-web-')), 'demo.png');
    const end = await inPage(null, 4, [], png);
    assert.ok(end.ok, end.message);
    const rs = end.results as Array<{ iterations: number; residual: number }>;
    assert.ok(rs.every((r) => r.iterations === rs[0]!.iterations && r.iterations > 50 && r.residual < 1e-9), JSON.stringify(rs));
    const head = readFileSync(png).subarray(0, 8);
    assert.deepEqual([...head], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG');
    if (process.env.NBC_WRITE_SCREENSHOT === '1') copyFileSync(png, SCREENSHOT);
  });
});

describe('nbcoll/web in headless Firefox', { skip: firefoxPath() === null ? 'no Firefox (apt-get install firefox-esr, or NBC_FIREFOX=<path>)' : false }, () => {
  test('every collective, blocking, non-blocking and persistent, on 1, 2, 3, 4 and 8 ranks: the reference in the page, and Node\'s hashes', T, async () => {
    for (const n of [1, 2, 3, 4, 8]) {
      const page = await inPage(jobPath('props-web.ts'), n, [], undefined, 'firefox');
      assert.ok(page.ok, `${n} ranks in Firefox: ${page.message}`);
      const node = await launch(jobPath('props-web.ts'), { ranks: n, ppn: n, output: 'pipe', timeoutMs: 60_000 });
      assert.equal(node.exitCode, 0, `${node.failure}\n${node.stderr}`);
      assert.deepEqual(page.results, node.ranks.map((r) => r.result), `${n} ranks: Firefox's hashes are Node's`);
    }
  });

  test('awaited collectives (Atomics.waitAsync) and a rank that throws', T, async () => {
    const ok = await inPage(jobPath('runtime.ts'), 4, [], undefined, 'firefox');
    assert.ok(ok.ok, ok.message);
    assert.deepEqual(ok.results, Array.from({ length: 4 }, () => ({ sum: 6, isum: 10, runtime: 'browser' })));
    const bad = await inPage(jobPath('web-fail.ts'), 3, ['1'], undefined, 'firefox');
    assert.equal(bad.ok, false);
    assert.match(bad.message ?? '', /^rank 1 failed: Error: boom from rank 1/);
  });
});

/** A raw request to the server: its status. */
function status(url: string, method: string, headers: Record<string, string>, body = ''): Promise<number> {
  return new Promise((resolve, reject) => {
    const r = request(url, { method, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    r.on('error', reject);
    r.end(body);
  });
}

describe('the nbc web server', () => {
  test('answers its own host only, refuses POSTs without its token, and sends the isolation headers', T, async () => {
    const server = await serveWeb({ job: jobPath('runtime.ts'), ranks: 2, onOutput: () => {} });
    try {
      const host = new URL(server.url).host;
      assert.equal(await status(server.url, 'GET', { host }), 200);
      assert.equal(await status(server.url, 'GET', { host: `evil.example:${new URL(server.url).port}` }), 421, 'another Host (DNS rebinding)');
      assert.equal(await status(`${server.url}done`, 'POST', { host }, '{"ok":true}'), 403, 'the end of the job, without the token');
      assert.equal(await status(`${server.url}out`, 'POST', { host, 'x-nbc-token': 'guess' }, '[]'), 403, 'output, with a wrong token');
      assert.equal(await status(`${server.url}nbcoll-web.js`, 'GET', { host }), 200);
      assert.equal(await status(`${server.url}..%2fpackage.json`, 'GET', { host }), 404, 'nothing outside the routes');
      const res = await fetch(server.url);
      assert.equal(res.headers.get('cross-origin-opener-policy'), 'same-origin');
      assert.equal(res.headers.get('cross-origin-embedder-policy'), 'require-corp');
    } finally {
      await server.close();
    }
  });
});
