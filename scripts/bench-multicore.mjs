// `npm run bench:multicore`: the seeds' headline figures on one many-core machine (16 cores,
// no GPU), in one script that finishes in at most 9 minutes of wall time:
//  1. cg      seed 001: CG, blocking vs non-blocking halo, 8 and 16 ranks at one per node, gige and ib;
//  2. pcg     seed 000: PCG Algorithm 1, Algorithm 2, Overlap-PCG (host and offload), 8 and 16 ranks, ib;
//  3. hier    seed 004: barrier, 8 B allreduce and alltoall on 16 ranks as 2 x 8 and 4 x 4, ddr, hier
//             against every flat algorithm;
//  4. agg     seed 003: 8 B allreduce on 8 nodes in a fat tree (edr), executor agg vs host;
//  5. overlap seed 000: offloaded iallreduce at 1 KiB, overlap % (host beside it).
// Every run of every case is one round; the rounds are interleaved (round 1 runs every case,
// then round 2 ...), since a machine's speed drifts over minutes, and the summary takes medians.
// Each run has a timeout; a failed or timed-out run is recorded with its error and the script
// goes on; a run that would start past the time budget is recorded as skipped. Writes
// runs.json (every run), summary.json, summary.md and charts (multicore-*.svg) in the output
// directory (scripts/multicore-summary.mjs).
//
//   npm run bench:multicore                    # bench/results/multicore-<date>/, 3 rounds, 16-core sizes
//   npm run bench:multicore -- --quick         # tiny sizes, 2-4 ranks, 1 round, the target figures only; a temp directory
//   npm run bench:multicore -- --quick --out DIR   (or QUICK=1 OUT=DIR)
//   node scripts/bench-multicore.mjs --dry-run    # print one round's commands, run nothing
// Overrides: ROUNDS, BUDGET_S (whole-run budget), RUN_TIMEOUT_S (one run's), CASES="cg pcg hier agg overlap", CG_N, PCG_N, PCG_PPN.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { summarize } from './multicore-summary.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const NBC = join(ROOT, 'dist/cli/nbc.js');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick') || process.env.QUICK === '1';
const outFlag = argv.indexOf('--out');
const today = new Date().toISOString().slice(0, 10);
const out = outFlag >= 0 ? argv[outFlag + 1] : process.env.OUT
  ?? (quick ? mkdtempSync(join(tmpdir(), 'nbc-multicore-')) : join(ROOT, `bench/results/multicore-${today}`));
const env = (name, fallback) => process.env[name] ?? fallback;

/**
 * The sizes of each form: the 16-core one and the quick one (a 2-core VM, tiny problems, only
 * the runs the target figures need). budgetS: no run starts past it; graceS: how far past it
 * the last run may go before it is killed; timeoutS: the longest any one run may take.
 */
const FORM = quick
  ? { rounds: 1, budgetS: 60, graceS: 10, timeoutS: 30, cgRanks: [2], cgLinks: ['gige'], cgN: 10, cgWarmup: 0,
      pcgRanks: [2], pcgPpn: 1, pcgN: 8, pcgWarmup: 0, pcgVariants: [['alg1', 'host'], ['overlap', 'offload']],
      hierRanks: 4, hierPpns: [2], iters: 10, warmup: 2,
      hierAlgs: { barrier: ['hier', 'dissemination:1'], allreduce: ['hier', 'recursive-doubling'] },
      aggRanks: 2, aggFabric: 'radix=2,levels=1', aggTopology: 'fat-tree:radix=2', aggHost: ['recursive-doubling'], overlapConfigs: [[2, 1]], overlapExecutors: ['offload'] }
  : { rounds: 3, budgetS: 480, graceS: 30, timeoutS: 90, cgRanks: [8, 16], cgLinks: ['gige', 'ib'], cgN: 60, cgWarmup: 1,
      // Algorithms 1 and 2 block in their allreduce, where the executor changes nothing; Overlap-PCG on both.
      pcgRanks: [8, 16], pcgPpn: 2, pcgN: 30, pcgWarmup: 3, pcgVariants: [['alg1', 'host'], ['alg2', 'host'], ['overlap', 'host'], ['overlap', 'offload']],
      hierRanks: 16, hierPpns: [8, 4], iters: 300, warmup: 50,
      // The flat algorithms that were ever the best of their collective at 8 B on 16 cores
      // (bench/results/multicore-2026-11-27/: dissemination:1, recursive-doubling, knomial:4,
      // bruck), and a runner-up each; every one of ALGORITHMS (scripts/bench-hier.sh) did not
      // leave room for three rounds in the budget.
      hierAlgs: {
        barrier: ['hier', 'dissemination:1', 'dissemination:2'],
        allreduce: ['hier', 'recursive-doubling', 'knomial:4'],
        alltoall: ['hier', 'bruck', 'pairwise'],
      },
      // 8 nodes under a fabric of 4-port switches, two levels (room for 16), as scripts/bench-agg.sh.
      aggRanks: 8, aggFabric: 'radix=4,levels=2', aggTopology: 'fat-tree:radix=4', aggHost: ['recursive-doubling', 'knomial:4'],
      // nodes x ppn; ranks plus one engine per node stay below 16 cores.
      overlapConfigs: [[2, 1], [2, 4]], overlapExecutors: ['offload', 'host'] };
const rounds = Number(env('ROUNDS', FORM.rounds));
const budgetS = Number(env('BUDGET_S', FORM.budgetS));
const timeoutS = Number(env('RUN_TIMEOUT_S', FORM.timeoutS));
const cases = env('CASES', 'cg pcg hier agg overlap').split(/\s+/).filter(Boolean);
const cgN = Number(env('CG_N', FORM.cgN));
const pcgN = Number(env('PCG_N', FORM.pcgN));
const pcgPpn = Number(env('PCG_PPN', FORM.pcgPpn));
/** --topology is new in `nbc bench`; where this build lacks it the agg case runs flat and says so. */
const hasTopology = spawnSync(process.execPath, [NBC, 'bench', '--help'], { encoding: 'utf8' }).stdout.includes('--topology');
/** The agg case's fat tree: its radix is the fabric's, so each daemon sits at a switch. */
const TOPOLOGY = FORM.aggTopology;
const benchShort = quick ? ['--iters', String(FORM.iters), '--warmup', String(FORM.warmup), '--warmup-time', '0'] : ['--iters', String(FORM.iters), '--warmup', String(FORM.warmup)];

/** One run: which case, a key naming its configuration, what it measures, and nbc's arguments. */
const run = (kase, key, meta, args) => ({ case: kase, key, meta, args });

function cgRuns() {
  const runs = [];
  for (const link of FORM.cgLinks) for (const ranks of FORM.cgRanks) for (const mode of ['blocking', 'nonblocking']) {
    runs.push(run('cg', `cg-${link}-${ranks}-${mode}`, { link, ranks, mode }, ['cg', '--ranks', String(ranks), '--ppn', '1', '--n', String(cgN),
      '--link', link, '--mode', mode, '--test-interval', '2000', '--warmup', String(FORM.cgWarmup), '--verify', 'off', '--quiet']));
  }
  return runs;
}

function pcgRuns() {
  const runs = [];
  for (const ranks of FORM.pcgRanks) for (const [variant, executor] of FORM.pcgVariants) {
    runs.push(run('pcg', `pcg-${ranks}-${variant}-${executor}`, { ranks, variant, executor }, ['pcg', '--ranks', String(ranks), '--ppn', String(pcgPpn),
      '--n', String(pcgN), '--link', 'ib', '--variant', variant, '--executor', executor, '--warmup', String(FORM.pcgWarmup), '--verify', 'off', '--quiet']));
  }
  return runs;
}

function hierRuns() {
  const runs = [];
  for (const ppn of FORM.hierPpns) for (const [op, algs] of Object.entries(FORM.hierAlgs)) for (const algorithm of algs) {
    const sizes = op === 'barrier' ? [] : ['--sizes', '8'];
    runs.push(run('hier', `hier-${op}-ppn${ppn}-${algorithm.replace(':', '_')}`, { op, ppn, nodes: FORM.hierRanks / ppn, algorithm },
      ['bench', op, '--ranks', String(FORM.hierRanks), '--ppn', String(ppn), ...sizes, '--link', 'ddr', '--algorithm', algorithm, ...benchShort]));
  }
  return runs;
}

function aggRuns() {
  const topo = hasTopology ? ['--topology', TOPOLOGY] : [];
  return ['agg', ...FORM.aggHost].map((algorithm) => {
    const executor = algorithm === 'agg' ? 'agg' : 'host';
    return run('agg', `agg-${algorithm.replace(':', '_')}`, { ranks: FORM.aggRanks, executor, algorithm, topology: hasTopology ? TOPOLOGY : null },
      ['bench', 'allreduce', '--ranks', String(FORM.aggRanks), '--ppn', '1', '--sizes', '8', '--link', 'edr', ...topo,
        '--executor', executor, '--algorithm', algorithm, '--agg', FORM.aggFabric, ...benchShort]);
  });
}

function overlapRuns() {
  const runs = [];
  for (const [nodes, ppn] of FORM.overlapConfigs) for (const executor of FORM.overlapExecutors) {
    runs.push(run('overlap', `overlap-${nodes}x${ppn}-${executor}`, { nodes, ppn, executor }, ['bench', 'iallreduce', '--ranks', String(nodes * ppn),
      '--ppn', String(ppn), '--sizes', '1K', '--link', 'ib', '--executor', executor, ...benchShort]));
  }
  return runs;
}

/**
 * The runs of one round, interleaved across cases: each case's runs spread evenly over the
 * round (run i of n at (i + 0.5) / n), so no case runs in a block and a round cut short by the
 * budget loses some runs of every case rather than all of one.
 */
function plan() {
  const byCase = { cg: cgRuns, pcg: pcgRuns, hier: hierRuns, agg: aggRuns, overlap: overlapRuns };
  const lists = cases.map((c) => {
    if (!(c in byCase)) throw new Error(`CASES names '${c}': expected some of ${Object.keys(byCase).join(', ')}`);
    return byCase[c]();
  });
  const placed = lists.flatMap((l, c) => l.map((r, i) => ({ r, at: (i + 0.5) / l.length, c })));
  return placed.sort((a, b) => a.at - b.at || a.c - b.c).map((p) => p.r);
}

/**
 * Runs `nbc ...args --json file` in its own process group, so a timeout ends the job's ranks,
 * engines and fabric with it. Resolves { ok, seconds, error }.
 */
function runOne(args, file, timeoutS) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [NBC, ...args, '--json', file], { cwd: ROOT, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid, 'SIGTERM'); } catch { /* already gone */ }
      setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ } }, 3000).unref();
    }, timeoutS * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const seconds = (performance.now() - t0) / 1000;
      const last = stderr.trim().split('\n').slice(-3).join(' | ');
      if (timedOut) resolve({ ok: false, seconds, error: `timed out after ${timeoutS} s${last ? `: ${last}` : ''}` });
      else if (code !== 0) resolve({ ok: false, seconds, error: `exit ${code ?? signal}${last ? `: ${last}` : ''}` });
      else resolve({ ok: true, seconds, error: null });
    });
  });
}

async function main() {
  mkdirSync(join(out, 'runs'), { recursive: true });
  const t0 = performance.now();
  const elapsed = () => (performance.now() - t0) / 1000;
  const order = plan();
  const longest = new Map(); // key -> longest run so far (s), to tell whether the next fits the budget
  const log = [];
  console.log(`bench:multicore${quick ? ' (quick)' : ''}: ${order.length} runs x ${rounds} rounds, budget ${budgetS} s, out ${out}` +
    (hasTopology ? '' : `\n  note: this build's nbc bench has no --topology; the agg case runs on a flat network instead of ${TOPOLOGY}`));
  if (argv.includes('--dry-run')) {
    for (const r of order) console.log(`nbc ${r.args.join(' ')} --json ${join(out, 'runs', `${r.key}-r1.json`)}`);
    return;
  }
  for (let round = 1; round <= rounds; round++) {
    for (const r of order) {
      const file = join(out, 'runs', `${r.key}-r${round}.json`);
      const entry = { case: r.case, key: r.key, round, meta: r.meta, command: `nbc ${r.args.join(' ')}`, file: `runs/${r.key}-r${round}.json` };
      const expected = longest.get(r.key) ?? 0;
      if (elapsed() + expected > budgetS) {
        log.push({ ...entry, ok: false, seconds: 0, error: `skipped: ${elapsed().toFixed(0)} s spent of a ${budgetS} s budget` });
        console.log(`[${elapsed().toFixed(1)} s] round ${round} ${r.key}: skipped (budget)`);
        continue;
      }
      const res = await runOne(r.args, file, Math.min(timeoutS, Math.max(5, budgetS + FORM.graceS - elapsed())));
      longest.set(r.key, Math.max(expected, res.seconds));
      log.push({ ...entry, ...res });
      console.log(`[${elapsed().toFixed(1)} s] round ${round} ${r.key}: ${res.seconds.toFixed(1)} s ${res.ok ? 'ok' : `FAILED ${res.error}`}`);
      writeFileSync(join(out, 'runs.json'), JSON.stringify(log, null, 2) + '\n');
    }
  }
  const settings = { quick, rounds, budgetS, cases, runTimeoutS: timeoutS, cgN, pcgN, pcgPpn, ...FORM, topology: hasTopology ? TOPOLOGY : null, wallSeconds: elapsed() };
  await summarize(out, log, settings);
  console.log(`[${elapsed().toFixed(1)} s] wrote ${join(out, 'summary.json')}, summary.md and charts`);
}

await main();
