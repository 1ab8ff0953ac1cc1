import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { launch } from 'nbcoll';
import { jobPath, processesMatching, run, runOk } from './helpers.ts';

const T = { timeout: 60_000 };
const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));

describe('launcher', () => {
  test('a rank that throws stops the whole job within 5 s, naming the rank and its error, exit code 1', T, async () => {
    const token = `throw-${randomBytes(4).toString('hex')}`;
    const t0 = performance.now();
    const r = await run('fail.ts', 6, 2, ['throw', '3', token]);
    const took = performance.now() - t0;
    assert.equal(r.exitCode, 1);
    assert.match(r.stderr, /rank 3 \(node 1\) failed: Error: boom from rank 3/);
    assert.ok(took < 5000 + 3000, `job stopped after ${took.toFixed(0)} ms (start-up included)`);
    assert.deepEqual(processesMatching(token), [], 'no process is left behind');
  });

  test("a rank's process.exit code becomes the job's exit code", T, async () => {
    const r = await run('fail.ts', 4, 2, ['exit', '2']);
    assert.equal(r.exitCode, 7);
    assert.match(r.stderr, /rank 2 \(node 1\) exited with code 7/);
  });

  test('a node killed with SIGKILL stops the job within 5 s with a message naming the node', T, async () => {
    const token = `kill-${randomBytes(4).toString('hex')}`;
    const t0 = performance.now();
    const r = await run('fail.ts', 6, 2, ['sigkill', '4', token]);
    const took = performance.now() - t0;
    assert.equal(r.exitCode, 137);
    assert.ok(took < 5000 + 3000, `job stopped after ${took.toFixed(0)} ms (start-up included)`);
    assert.match(r.stderr, /node 2 \(pid \d+, ranks 4\.\.5\) was killed by SIGKILL/);
    assert.deepEqual(processesMatching(token), [], 'no process is left behind');
  });

  // A stopped node keeps its sockets open: the rendezvous hears its silence. NBC_NODE_SILENCE_MS
  // (default 10 s) is 2 s here; the deadline, far beyond, would end a job that nobody stopped.
  test('a node stopped with SIGSTOP stops the job within seconds, naming it; a stopped node 0 is named by the others', T, async () => {
    for (const [who, expected] of [
      ['4', /^node 2 \(pid \d+, ranks 4\.\.5\) stopped answering: nothing from it for \d+\.\d s/],
      ['0', /^node [12]: lost contact with the rendezvous master \(node 0\): Nothing from the rendezvous at \S+ \(node 0\) for \d+\.\d s: node 0 stopped/],
    ] as const) {
      const token = `stop-${randomBytes(4).toString('hex')}`;
      const t0 = performance.now();
      const r = await launch(jobPath('fail.ts'), {
        ranks: 6, ppn: 2, args: ['sigstop', who, token], output: 'pipe', timeoutMs: 40_000, env: { NBC_NODE_SILENCE_MS: '2000' },
      });
      const took = performance.now() - t0;
      assert.equal(r.exitCode, 1, `rank ${who}: ${r.failure}\n${r.stderr}`);
      assert.match(r.failure ?? '', expected, `rank ${who}`);
      assert.ok(took < 20_000, `rank ${who}: job stopped after ${took.toFixed(0)} ms`);
      assert.deepEqual(processesMatching(token), [], `rank ${who}: no process is left behind`);
    }
  });

  test('a job that never finishes is killed at its deadline with exit code 124', T, async () => {
    const token = `hang-${randomBytes(4).toString('hex')}`;
    const r = await run('fail.ts', 2, 1, ['none', '-1', token], 3000);
    assert.equal(r.exitCode, 124);
    assert.match(r.failure ?? '', /timed out/);
    assert.deepEqual(processesMatching(token), []);
  });

  test('a job file that does not exist fails at once with one line naming it (nbc run exit 2; launch() throws NBC_ERR_LAUNCH)', T, () => {
    const missing = `/tmp/nbc-no-such-job-${randomBytes(4).toString('hex')}.ts`;
    const p = spawnSync(process.execPath, [CLI, 'run', '-n', '2', missing], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(p.status, 2, p.stderr);
    assert.deepEqual(p.stderr.trim().split('\n'), [`nbc: Cannot run job file '${missing}': there is no file ${missing}; expected a .ts or .js job file [NBC_ERR_LAUNCH]`]);
    assert.throws(() => launch(missing, { ranks: 2 }), { code: 'NBC_ERR_LAUNCH' });
  });

  test('an ES-module job in a CommonJS package fails saying how to fix it; as .mts, .mjs or CommonJS it runs', T, () => {
    const dir = mkdtempSync(join(tmpdir(), 'nbc-cjs-'));
    try {
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'user-project', type: 'commonjs' }));
      const esm = 'export default function (w: { rank: number }): void { console.log(`rank ${w.rank}`); }\n';
      writeFileSync(join(dir, 'job.ts'), esm);
      writeFileSync(join(dir, 'job.mts'), esm);
      writeFileSync(join(dir, 'job.js'), 'export default function (w) { console.log(`rank ${w.rank}`); }\n');
      writeFileSync(join(dir, 'job.mjs'), 'export default function (w) { console.log(`rank ${w.rank}`); }\n');
      writeFileSync(join(dir, 'cjs.js'), 'module.exports = function (w) { console.log(`rank ${w.rank}`); };\n');
      for (const file of ['job.ts', 'job.js']) {
        const p = spawnSync(process.execPath, [CLI, 'run', '-n', '2', join(dir, file)], { encoding: 'utf8', timeout: 60_000 });
        assert.equal(p.status, 1, p.stderr);
        assert.match(p.stderr, new RegExp(`nbc: job failed \\(exit code 1\\): rank \\d \\(node 0\\) failed: NbcLaunchError: Cannot load the job file ${join(dir, file)}: ` +
          'Node loaded it as CommonJS, and it is an ES module \\(import/export\\); expected a \\.mjs or \\.mts file, or "type": "module"'));
      }
      for (const file of ['job.mts', 'job.mjs', 'cjs.js']) {
        const p = spawnSync(process.execPath, [CLI, 'run', '-n', '2', join(dir, file)], { encoding: 'utf8', timeout: 60_000 });
        assert.equal(p.status, 0, `${file}: ${p.stderr}`);
        assert.deepEqual(p.stdout.trim().split('\n').sort(), ['rank 0', 'rank 1'], file);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('nbc run --tag-output prefixes every line with its rank and passes the exit code', T, () => {
    const p = spawnSync(process.execPath, [CLI, 'run', '-n', '3', '--ppn', '2', '--tag-output', jobPath('hello.ts'), 'a', 'b'], {
      encoding: 'utf8', timeout: 30_000,
    });
    assert.equal(p.status, 0, p.stderr);
    const lines = p.stdout.trim().split('\n').sort();
    assert.deepEqual(lines, [
      '[0] hello from rank 0 of 3 on node 0 args=a,b',
      '[1] hello from rank 1 of 3 on node 0 args=a,b',
      '[2] hello from rank 2 of 3 on node 1 args=a,b',
    ]);
  });

  test('NBC_NODE_ARGS gives the node processes (and so their rank threads) Node flags; a bad one fails the job', T, () => {
    const run = (args: string): SpawnSyncReturns<string> => spawnSync(process.execPath, [CLI, 'run', '-n', '2', '--ppn', '1', jobPath('hello.ts')], {
      // NBC_V8_THREADS=on: no --single-threaded of the launcher's own before the user's flags (test/start-up.test.ts)
      encoding: 'utf8', timeout: 30_000, env: { ...process.env, NBC_NODE_ARGS: args, HELLO_EXEC_ARGV: '1', NBC_V8_THREADS: 'on' },
    });
    const ok = run(' --stack-size=900  --max-semi-space-size=32 ');
    assert.equal(ok.status, 0, ok.stderr);
    assert.deepEqual(ok.stdout.trim().split('\n').sort(), [0, 1].map((r) =>
      `hello from rank ${r} of 2 on node ${r} args= execArgv=--stack-size=900 --max-semi-space-size=32`));
    const bad = run('--no-such-node-flag');
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /bad option: --no-such-node-flag[\s\S]*node \d \(pid \d+\) exited with code 9/);
  });

  test('nbc run stops every node on SIGTERM and exits 143', T, async () => {
    const token = `term-${randomBytes(4).toString('hex')}`;
    const { spawn } = await import('node:child_process');
    const p = spawn(process.execPath, [CLI, 'run', '-n', '4', '--ppn', '2', jobPath('fail.ts'), 'ready', '-1', token], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    // Wait until every rank says it is ready (blocked in recv), then interrupt.
    await new Promise<void>((resolve) => {
      p.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if ((out.match(/ready/g) ?? []).length === 4) resolve();
      });
    });
    p.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => p.on('exit', (c) => resolve(c)));
    assert.equal(code, 143);
    assert.deepEqual(processesMatching(token), []);
  });

  test('the flagship demo (npm start) runs on 3 emulated nodes and checks its own results', T, () => {
    const demo = fileURLToPath(new URL('../dist/examples/demo.js', import.meta.url));
    const p = spawnSync(process.execPath, [CLI, 'run', '-n', '6', '--ppn', '2', '--tag-output', demo], { encoding: 'utf8', timeout: 45_000 });
    assert.equal(p.status, 0, p.stderr);
    assert.match(p.stdout, /\[0\] token came back from rank 5 after visiting \[0 -> 1 -> 2 -> 3 -> 4 -> 5\]/);
    assert.match(p.stdout, /allreduce of 1000 doubles over 6 ranks: correct/);
    // rank 0's left neighbour (rank 5) lives on another node: the ring names the transport
    // that the rank's own counters say carried its inter-node messages
    const via = /\[0\] ring: got 500 from rank 5 via (UCX|TCP)\n/.exec(p.stdout)?.[1];
    assert.ok(via !== undefined, p.stdout);
    assert.match(p.stdout, new RegExp(`\\[0\\] sent \\d+ messages \\(\\d+ through shared memory, \\d+ over ${via}`));
  });

  test('a job that returns results resolves launch() with them per rank', T, async () => {
    const r = await runOk('p2p.ts', 3, 2, ['ring', '16']);
    assert.deepEqual(r.ranks.map((x) => [x.rank, x.node]), [[0, 0], [1, 0], [2, 1]]);
  });
});

/**
 * Starts `nodes` node processes of a ring job by hand (NBC_NODE_RANK, NBC_NODES, a random
 * NBC_MASTER_PORT, plus `env`; an undefined value removes the variable), and waits for them.
 */
async function nodesByHand(nodes: number, env: Record<string, string | undefined>): Promise<Array<{ code: number | null; err: string }>> {
  const port = String(20000 + Math.floor(Math.random() * 10000));
  const base: NodeJS.ProcessEnv = { ...process.env, NBC_NODES: String(nodes), NBC_MASTER_PORT: port };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  const procs = Array.from({ length: nodes }, (_, nodeRank) => spawn(process.execPath, [CLI, 'node', '--ppn', '1', jobPath('p2p.ts'), 'ring', '8'], {
    env: { ...base, NBC_NODE_RANK: String(nodeRank) }, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  return Promise.all(procs.map((p) => new Promise<{ code: number | null; err: string }>((resolve) => {
    let err = '';
    p.stderr.setEncoding('utf8').on('data', (d: string) => { err += d; });
    p.on('exit', (code) => resolve({ code, err }));
  })));
}

function mpirunAvailable(): string | false {
  try {
    execFileSync('mpirun', ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    return 'mpirun not found: install Debian package openmpi-bin (.ci/run does) to run this test';
  }
}

/** A TCP port free on 127.0.0.1 at the time of the call. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

describe('wire-up under other launchers', () => {
  test("a 2-node job runs under Open MPI's mpirun via nbc node", { ...T, skip: mpirunAvailable() }, async () => {
    // The rendezvous port is one this host has free now: the port derived from Open MPI's job
    // id (masterPortForJob, test/env.test.ts) lies in Linux's ephemeral range and was once
    // taken by another connection of the suite (EADDRINUSE), as src/runtime/env.ts warns.
    const env = {
      ...process.env,
      OMPI_ALLOW_RUN_AS_ROOT: '1',
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
      OMPI_MCA_rmaps_base_oversubscribe: '1',
      NBC_SECRET: randomBytes(32).toString('hex'),
      NBC_MASTER_PORT: String(await freePort()),
    };
    const p = spawnSync('mpirun', ['-np', '2', '-x', 'NBC_SECRET', '-x', 'NBC_MASTER_PORT', process.execPath, CLI, 'node', '--ppn', '2', '--tag-output', jobPath('hello.ts'), 'x'], {
      encoding: 'utf8', env, timeout: 45_000,
    });
    assert.equal(p.status, 0, `mpirun failed:\n${p.stdout}\n${p.stderr}`);
    const lines = p.stdout.trim().split('\n').filter((l) => l.includes('hello')).sort();
    assert.deepEqual(lines, [
      '[0] hello from rank 0 of 4 on node 0 args=x',
      '[1] hello from rank 1 of 4 on node 0 args=x',
      '[2] hello from rank 2 of 4 on node 1 args=x',
      '[3] hello from rank 3 of 4 on node 1 args=x',
    ]);
  });

  test('nbc node started by hand with NBC_* variables joins a job', T, async () => {
    const runs = await nodesByHand(2, { NBC_SECRET: randomBytes(32).toString('hex') });
    assert.deepEqual(runs.map((r) => r.code), [0, 0], runs.map((r) => r.err).join('\n'));
  });

  // Across hosts the listeners bind to a routable address, or to every interface (one
  // NBC_BIND_ADDR for all, as mpirun -x passes it), and node 0 is reached at NBC_MASTER_ADDR:
  // node 0 dials its own server where it listens (rendezvous.test.ts: a wildcard listener is
  // listed where the server saw it).
  const routable = Object.values(networkInterfaces()).flat().find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
  test('nodes bound to a routable NBC_BIND_ADDR, or to 0.0.0.0, join at NBC_MASTER_ADDR and exchange data, over TCP and UCX', {
    ...T, skip: routable === undefined ? 'this host has no non-loopback IPv4 address to stand for another host' : false,
  }, async () => {
    for (const [bind, transport] of [[routable!, 'tcp'], [routable!, 'auto'], ['0.0.0.0', 'tcp']]) {
      const runs = await nodesByHand(3, {
        NBC_SECRET: randomBytes(32).toString('hex'), NBC_BIND_ADDR: bind, NBC_MASTER_ADDR: routable!, NBC_TRANSPORT: transport,
      });
      assert.deepEqual(runs.map((r) => r.code), [0, 0, 0], `bind ${bind}, ${transport}: ${runs.map((r) => r.err).join('\n')}`);
    }
  });

  test('nodes started without NBC_SECRET warn once for the job, not once per node', T, async () => {
    const runs = await nodesByHand(3, { NBC_SECRET: undefined });
    assert.deepEqual(runs.map((r) => r.code), [0, 0, 0], runs.map((r) => r.err).join('\n'));
    const warnings = runs.map((r) => r.err.match(/NBC_SECRET is not set/g)?.length ?? 0);
    assert.deepEqual(warnings, [1, 0, 0]);
  });
});
