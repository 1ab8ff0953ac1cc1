import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const SCRIPT = fileURLToPath(new URL('../scripts/bench-multicore.mjs', import.meta.url));

interface Figure { name: string; value: number | null; error: string | null; verdict: string }

test('bench:multicore --quick writes a summary with every case, each figure a number or the reason it failed', { timeout: 150_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), 'nbc-multicore-test-'));
  const p = spawnSync(process.execPath, [SCRIPT, '--quick', '--out', out], { encoding: 'utf8', timeout: 140_000 });
  assert.equal(p.status, 0, `the script itself finishes even where runs fail\n${p.stderr}\n${p.stdout.slice(-3000)}`);
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
  assert.deepEqual(Object.keys(summary.cases), ['cg', 'pcg', 'hier', 'agg', 'overlap']);
  for (const [name, c] of Object.entries(summary.cases) as Array<[string, { figures: Figure[] }]>) {
    assert.ok(c.figures.length > 0, `case ${name} has figures`);
    for (const f of c.figures) {
      if (f.value === null) {
        assert.equal(f.verdict, 'failed', `${f.name}: no number means failed`);
        assert.ok(typeof f.error === 'string' && f.error.length > 0, `${f.name}: a failure says why`);
      } else {
        assert.ok(Number.isFinite(f.value), `${f.name}: a finite number`);
        assert.match(f.verdict, /^(met|missed|info)$/);
      }
    }
  }
  for (const k of ['cores', 'model', 'node', 'date', 'commit']) assert.ok(summary.machine[k] !== undefined, `machine has ${k}`);
  for (const k of ['gige', 'ib', 'ddr', 'edr']) assert.match(summary.links[k], /latency=/);
  assert.equal(summary.settings.quick, true);
  const md = readFileSync(join(out, 'summary.md'), 'utf8');
  assert.match(md, /\| figure \| measured \| seed \| target \| verdict \|/);
  for (const chart of summary.charts as string[]) assert.match(readFileSync(join(out, chart), 'utf8'), /^<svg[\s>]/);
  assert.ok(existsSync(join(out, 'runs.json')), 'every run is logged');
});
