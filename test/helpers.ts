/** Shared helpers for multi-rank tests: every job runs under a deadline and fails loudly. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { launch, type LaunchResult } from 'nbcoll';
import { jobPath } from './job-path.ts';

export { jobPath };

/** Runs a job under a deadline; output is collected, not printed. */
export async function run(job: string, ranks: number, ppn: number, args: string[] = [], timeoutMs = 60_000): Promise<LaunchResult> {
  return launch(jobPath(job), { ranks, ppn, args, output: 'pipe', timeoutMs });
}

/** Runs a job that must succeed; on failure the assertion shows what the job printed. */
export async function runOk(job: string, ranks: number, ppn: number, args: string[] = [], timeoutMs = 60_000): Promise<LaunchResult> {
  const r = await run(job, ranks, ppn, args, timeoutMs);
  assert.equal(r.exitCode, 0, `job ${job} ${args.join(' ')} on ${ranks} ranks (ppn ${ppn}) failed: ${r.failure}\n${r.stderr}\n${r.stdout}`);
  assert.equal(r.ranks.length, ranks, `every rank reports a result\n${r.stderr}`);
  return r;
}

/** Pids of live processes whose command line contains `needle` (for leftover checks). */
export function processesMatching(needle: string): number[] {
  try {
    const out = execFileSync('pgrep', ['-f', needle], { encoding: 'utf8' });
    return out.split('\n').filter(Boolean).map(Number).filter((p) => p !== process.pid);
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}
