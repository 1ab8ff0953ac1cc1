/**
 * The second half of `npm start`: seed 001's proof in a few seconds. The 3-D Poisson CG
 * (`nbc cg`) on 4 emulated nodes over an emulated Gigabit Ethernet, once with the blocking
 * halo exchange and once with the non-blocking one overlapped with the interior matvec; both
 * check their solution against the exact one, and the speedup is printed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppResult } from '../apps/run.js';

const cli = fileURLToPath(new URL('../cli/nbc.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'nbc-showcase-'));
try {
  const run = (mode: string): AppResult => {
    const file = join(dir, `${mode}.json`);
    execFileSync(process.execPath, [cli, 'cg', '--ranks', '4', '--ppn', '1', '--n', '24', '--link', 'gige', '--mode', mode, '--quiet', '--json', file],
      { stdio: 'inherit', timeout: 120_000 });
    return JSON.parse(readFileSync(file, 'utf8')) as AppResult;
  };
  const blocking = run('blocking');
  const overlapped = run('nonblocking');
  for (const r of [blocking, overlapped]) {
    const v = r.verification;
    console.log(`cg, ${r.mode} halo: ${r.iterations} iterations to ${r.finalRelResidual.toExponential(1)}, ` +
      `${r.perIterationMs.toFixed(2)} ms per iteration on ${r.ranks} nodes over emulated GigE; ` +
      `${v === null ? 'not verified' : `${v.ok ? 'verified' : 'VERIFICATION FAILED'}: ${v.detail}`}`);
    if (v !== null && !v.ok) process.exitCode = 1;
  }
  const gain = (blocking.perIterationMs / overlapped.perIterationMs - 1) * 100;
  console.log(`overlapping the halo exchange with the interior matvec: ${gain >= 0 ? `${gain.toFixed(0)} % faster` : `${(-gain).toFixed(0)} % slower`} ` +
    '(seed 001: up to 34 %; npm run bench:apps for the full comparison)');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
