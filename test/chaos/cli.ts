/**
 * `npm run chaos -- --trials N --seed S`: N chaos trials (test/chaos/harness.ts), seeds S..S+N-1;
 * prints one line per trial and a summary table, writes the rows as JSON, and exits 1 if any
 * trial hung, returned a wrong result, left something behind, or stopped without naming the
 * culprit. `--seed S --trials 1` replays trial S exactly (same shape, mode, transport, fault).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import Table from 'cli-table3';
import { ucxUnavailable } from '../../src/runtime/node-main.ts';
import { cutUnavailable, FAULT_KINDS, planTrial, runTrial, STOP_DEADLINE_S, TRIAL_DEADLINE_S, type FaultKind, type Mode, type TrialResult, type Transport } from './harness.ts';

const int = (what: string) => (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${what} must be a non-negative integer, got '${v}'`);
  return n;
};
const list = <T extends string>(allowed: readonly T[]) => (v: string): T[] => {
  const xs = v.split(',').map((s) => s.trim()) as T[];
  for (const x of xs) if (!allowed.includes(x)) throw new InvalidArgumentError(`'${x}' is not one of ${allowed.join(', ')}`);
  return xs;
};

const FAULTS = FAULT_KINDS;
const MODES = ['host', 'offload', 'hier', 'agg'] as const;
const program = new Command('chaos')
  .description('random collectives under random faults; every trial must end in time, correct or stopped naming the culprit, leaving nothing behind')
  .option('--trials <n>', 'number of trials', int('--trials'), 20)
  .option('--seed <s>', 'seed of the first trial (trial i uses seed + i)', int('--seed'), 1)
  .option('--faults <list>', `faults to draw from (${FAULTS.join(',')})`, list(FAULTS))
  .option('--modes <list>', `executors to draw from (${MODES.join(',')})`, list(MODES))
  .option('--transports <list>', 'transports to draw from (default: tcp, and ucx where available)', list(['tcp', 'ucx'] as const))
  .option('--json <file>', 'where to write the rows', 'bench/results/reliability/chaos.json')
  .parse();
const o = program.opts<{ trials: number; seed: number; faults?: FaultKind[]; modes?: Mode[]; transports?: Transport[]; json: string }>();

const ucxWhy = ucxUnavailable();
const transports: Transport[] = o.transports ?? (ucxWhy === null ? ['tcp', 'ucx'] : ['tcp']);
if (ucxWhy !== null) console.log(`chaos: UCX transport not tried: ${ucxWhy}`);
if (transports.includes('ucx') && ucxWhy !== null) program.error(`--transports ucx: ${ucxWhy}`);
let faults: FaultKind[] = o.faults ?? [...FAULTS];
const cutWhy = cutUnavailable();
if (cutWhy !== null && faults.includes('cut-link')) {
  console.log(`chaos: cut-link faults skipped: ${cutWhy}`);
  faults = faults.filter((f) => f !== 'cut-link');
}

const results: TrialResult[] = [];
const bad = new Set(['wrong', 'hang', 'unnamed', 'leftover']);
for (let i = 0; i < o.trials; i++) {
  const plan = planTrial(o.seed + i, { transports, faults, modes: o.modes });
  const r = await runTrial(plan);
  results.push(r);
  const p = r.plan;
  console.log(`trial seed=${p.seed} ${p.nodes}x${p.ppn} ${p.mode}/${p.transport} ${p.fault}@${p.at} -> ${r.verdict}`
    + ` (exit ${r.exitCode}, ${r.seconds.toFixed(1)} s${Number.isNaN(r.stopMs) ? '' : `, stopped ${r.stopMs} ms after the fault`}) ${r.culprit}`);
  if (bad.has(r.verdict)) console.log(`  ${r.detail.split('\n').slice(0, 12).join('\n  ')}`);
}

const table = new Table({ style: { head: [], border: [] }, head: ['fault', 'mode', 'transport', 'trials', 'stopped', 'completed', 'no fault', 'failures', 'max stop ms'] });
const groups = new Map<string, TrialResult[]>();
for (const r of results) {
  const k = `${r.plan.fault}|${r.plan.mode}|${r.plan.transport}`;
  (groups.get(k) ?? groups.set(k, []).get(k)!).push(r);
}
for (const [k, rs] of [...groups].sort()) {
  const count = (v: string): number => rs.filter((r) => r.verdict === v).length;
  const stops = rs.map((r) => r.stopMs).filter((x) => !Number.isNaN(x));
  table.push([...k.split('|'), rs.length, count('stopped'), count('completed'), count('no-fault'),
    rs.filter((r) => bad.has(r.verdict)).length, stops.length > 0 ? Math.max(...stops) : '-']);
}
console.log(table.toString());
const failures = results.filter((r) => bad.has(r.verdict));
console.log(`chaos: ${results.length} trials, ${failures.length} failures (${[...bad].join(', ')}); deadline ${STOP_DEADLINE_S} s after the fault, ${TRIAL_DEADLINE_S} s per trial`);
mkdirSync(dirname(o.json), { recursive: true });
writeFileSync(o.json, JSON.stringify({ command: `npm run chaos -- --trials ${o.trials} --seed ${o.seed}`, date: new Date().toISOString(), transports, faults, results }, null, 1));
process.exit(failures.length > 0 ? 1 : 0);
