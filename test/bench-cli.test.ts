import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const CLI = fileURLToPath(new URL('../dist/cli/nbc.js', import.meta.url));
const T = { timeout: 120_000 };

function nbc(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const p = spawnSync(process.execPath, [CLI, 'bench', ...args], { encoding: 'utf8', timeout: 110_000 });
  return { status: p.status, stdout: p.stdout, stderr: p.stderr };
}

const NB_FIELDS = ['bytes', 'latencyUs', 'initUs', 'testUs', 'waitUs', 'overheadUs', 'pureUs', 'overallUs', 'computeUs', 'overlapPct'];

test('a tiny iallreduce sweep writes JSON with every field, an SVG chart and a PNG chart', T, () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbcbench-'));
  const small = ['--ranks', '2', '--sizes', '8,1K', '--iters', '20', '--warmup', '5', '--warmup-time', '0', '--test-interval', '5us'];
  const a = nbc('iallreduce', ...small, '--json', join(dir, 'r.json'), '--chart', join(dir, 'r.svg'), '--per-rank');
  assert.equal(a.status, 0, a.stderr);
  const r = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8'));
  for (const k of ['op', 'ranks', 'ppn', 'executor', 'algorithm', 'link', 'results', 'machine', 'limits']) assert.ok(k in r, `JSON has ${k}`);
  assert.equal(r.op, 'iallreduce');
  assert.equal(r.executor, 'host');
  assert.deepEqual(r.results.map((x: { bytes: number }) => x.bytes), [8, 1024]);
  for (const row of r.results) {
    for (const f of NB_FIELDS) assert.equal(typeof row[f], 'number', `row has numeric ${f}`);
    assert.ok(row.overlapPct >= 0 && row.overlapPct <= 100);
    assert.ok(Math.abs(row.overheadUs - (row.initUs + row.testUs + row.waitUs)) < 1e-6);
    assert.equal(row.perRank.length, 2);
  }
  assert.ok(typeof r.limits.atomicsPingPongOneWayUs === 'number', 'the physical limit measured in the same run');
  const svg = readFileSync(join(dir, 'r.svg'), 'utf8');
  assert.match(svg, /^<svg[\s>]/);
  assert.match(svg, /<path/);
  assert.match(svg, /<\/svg>\s*$/);
  const b = nbc('chart', join(dir, 'r.png'), join(dir, 'r.json'));
  assert.equal(b.status, 0, b.stderr);
  const png = readFileSync(join(dir, 'r.png'));
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(png.subarray(12, 16).toString('latin1'), 'IHDR');
  assert.ok(png.readUInt32BE(16) > 0 && png.readUInt32BE(20) > 0, 'non-empty image');
});

test('--osu prints OSU-format text for a blocking op, one row per size', T, () => {
  const a = nbc('allreduce', '--ranks', '2', '--sizes', '8:128', '--iters', '20', '--warmup', '5', '--warmup-time', '0', '--osu');
  assert.equal(a.status, 0, a.stderr);
  const lines = a.stdout.trim().split('\n');
  assert.ok(lines.some((l) => /^# OSU MPI Allreduce Latency Test/.test(l)), a.stdout);
  assert.ok(lines.some((l) => /^# Size\s+Avg Latency\(us\)/.test(l)), a.stdout);
  assert.ok(!lines.some((l) => l.startsWith('# Figures')), `--osu reports OSU's average unless --stat says otherwise:\n${a.stdout}`);
  const rows = lines.filter((l) => /^\d+\s+[\d.]+$/.test(l));
  assert.deepEqual(rows.map((l) => Number(l.split(/\s+/)[0])), [8, 32, 128]);
});

test('compare prints B/A ratios for two results', T, () => {
  const dir = mkdtempSync(join(tmpdir(), 'nbcbench-'));
  for (const name of ['a', 'b']) {
    const r = nbc('barrier', '--ranks', '2', '--iters', '20', '--warmup', '5', '--warmup-time', '0', '--json', join(dir, `${name}.json`));
    assert.equal(r.status, 0, r.stderr);
  }
  const c = nbc('compare', join(dir, 'a.json'), join(dir, 'b.json'));
  assert.equal(c.status, 0, c.stderr);
  assert.match(c.stdout, /B\/A/);
  // Every size's row carries B's latency over A's, from the two JSON files.
  const rows = (name: string) => (JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as { results: Array<{ bytes: number; latencyUs: number }> }).results;
  const [a, b] = [rows('a'), rows('b')];
  assert.ok(a.length > 0);
  for (const ra of a) {
    const rb = b.find((x) => x.bytes === ra.bytes)!;
    assert.ok(c.stdout.includes(`${(rb.latencyUs / ra.latencyUs).toFixed(2)}x`), `${(rb.latencyUs / ra.latencyUs).toFixed(2)}x in\n${c.stdout}`);
  }
});

test('--warmup-time keeps every size warming up at least that long (each size is a fresh job)', T, () => {
  const t0 = Date.now();
  const a = nbc('allreduce', '--ranks', '2', '--sizes', '8,1K', '--iters', '5', '--warmup', '0', '--warmup-time', '1.5s');
  assert.equal(a.status, 0, a.stderr);
  assert.ok(Date.now() - t0 >= 3000, `2 sizes x 1.5 s of warm-up took ${Date.now() - t0} ms in all`);
});

test('bad --warmup, --warmup-time, --iters and --window values are refused with NBC_ERR_ARG', T, () => {
  for (const [op, flag, value, want] of [
    ['barrier', '--warmup-time', 'soon', /--warmup-time 'soon': expected a duration such as 500ms, 0.5s or 0.*NBC_ERR_ARG/s],
    ['barrier', '--warmup', '-1', /--warmup '-1': expected an integer >= 0.*NBC_ERR_ARG/s],
    ['barrier', '--iters', '0', /--iters '0': expected a positive integer.*NBC_ERR_ARG/s],
    ['p2p', '--window', '0', /--window '0': expected a positive integer.*NBC_ERR_ARG/s],
    ['p2p', '--warmup-time', '1 fortnight', /--warmup-time '1 fortnight': expected a duration.*NBC_ERR_ARG/s],
  ] as const) {
    const r = nbc(op, '--ranks', '2', flag, value);
    assert.equal(r.status, 2, `${op} ${flag} ${value}: ${r.stderr}`);
    assert.match(r.stderr, want);
  }
});

test('an unknown executor, or agg without a fabric, is refused with a clear message', T, () => {
  const a = nbc('iallreduce', '--executor', 'quantum', '--ranks', '2', '--sizes', '8');
  assert.equal(a.status, 2);
  assert.match(a.stderr, /--executor quantum: expected host, offload or agg.*NBC_ERR_ARG/s);
  const b = nbc('allreduce', '--executor', 'agg', '--ranks', '2', '--sizes', '8');
  assert.equal(b.status, 2);
  assert.match(b.stderr, /--executor agg without an aggregation fabric: pass --agg radix=R,levels=L or set NBC_AGG_MANAGER.*NBC_ERR_ARG/s);
});

test('every usage error exits 2, nbc\'s own and the option parser\'s alike; help and --version exit 0', T, () => {
  const top = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 30_000 });
  for (const [args, want] of [
    [['bench', 'allreduce', '--ranks', '2', '--sizes', 'abc'], /Cannot parse size "abc".*NBC_ERR_ARG/s],
    [['bench', 'allreduce', '--ranks', '2', '--no-such-option'], /unknown option '--no-such-option'/],
    [['rnu'], /unknown command 'rnu'\s+\(Did you mean run\?\)/],
    [['run', '-np', '4', 'job.ts'], /write -n 4 or --np 4/],
    // Found before any job starts:
    [['bench', 'allreduce', '--ranks', '2', '--algorithm', 'bogus'], /allreduce with algorithm 'bogus' \(--algorithm\): expected one of recursive-doubling, .*NBC_ERR_ARG/s],
    [['bench', 'iallreduce', '--ranks', '2', '--algorithm', 'knomial:99'], /the degree must be an integer 2\.\.8.*NBC_ERR_ARG/s],
    [['run', '-n', '2', fileURLToPath(new URL('.', import.meta.url))], /is a directory; expected a \.ts or \.js job file.*NBC_ERR_LAUNCH/s],
    [['run', '-n', '200', 'job.ts'], /200 ranks on one node need 2\.5 GiB of shared-memory rings .*expected at most 179 ranks per node.*NBC_ERR_LAUNCH/s],
    [['sim', 'allreduce', '--ranks', '100000000'], /Cannot simulate 100000000 ranks: .*expected at most 4194304 ranks.*NBC_ERR_ARG/s],
  ] as const) {
    const p = top(...args);
    assert.equal(p.status, 2, `${args.join(' ')}: ${p.stderr}`);
    assert.match(p.stderr, want);
  }
  const version = top('--version');
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout.trim(), (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version);
  assert.equal(top('run', '--help').status, 0);
});
