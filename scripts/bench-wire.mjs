#!/usr/bin/env node
/**
 * `npm run bench:wire`: the emulated network (`--link`, p2p/wire.ts, docs/wire.md) measured
 * against what it imitates, in one run, in ROUNDS interleaved rounds (default 3), medians:
 *
 * - what the instrument costs: 8 B one way between two nodes without `--link` and with
 *   `--link ib` (1.5 us, far below this host's path: the stamp has passed when the message
 *   comes, so the link should add nothing), on TCP and, where the native addon has UCX, UCX;
 * - what it imitates: 1 MiB under `--link gige` as MB/s (osu_bw style, a window of 16) against
 *   the 125 MB/s of Gigabit Ethernet, and its one-way time against the model's 8.44 ms;
 * - what a wait costs: a node process's CPU (user + system, every thread) per second of wall
 *   time while two ranks ping-pong 8 B under `--link latency=1ms`, with the ranks sleeping
 *   until the stamp (NBC_WIRE=stamp, over TCP and UCX) and with the engines' timer queue
 *   (NBC_WIRE=queue, TCP only), over 5 s after 200 round trips of warm-up: the target is
 *   under 5 % of a core; beside it the floor, two sleeps and wake-ups a round trip at what one
 *   costs a thread of this host (a bare timed Atomics.wait, measured in the same round);
 * - what overlap now has room for: CG on 2 nodes x 1 over `--link gige` with a halo-heavy grid
 *   (40 x 120 x 120, a 115 KiB face), blocking against non-blocking halo, interleaved: the share
 *   of the blocking run's halo wait the non-blocking run hides (target >= 70 %).
 *
 * Writes bench/results/wire/summary.json and summary.md (and each run's JSON beside them).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { launch } from '../dist/index.js';
import { ucxUnavailable } from '../dist/runtime/node-main.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = `${ROOT}dist/cli/nbc.js`;
const JOB = `${ROOT}dist/bench/wire-job.js`;
const OUT = `${ROOT}bench/results/wire`;
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const GIGE_BYTES_PER_SEC = 125e6;
const MIB = 1 << 20;
// gige's model for 1 MiB one way: serialisation at 1 Gbit/s, then 50 us.
const GIGE_1M_ONE_WAY_MS = (MIB / GIGE_BYTES_PER_SEC) * 1e3 + 0.05;
const WAIT_SPAN_MS = 5000;

mkdirSync(OUT, { recursive: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** `nbc bench p2p` between two nodes; its JSON, or { error } when the run failed. */
function p2p(name, round, args, env = {}) {
  const file = `${OUT}/${name}-r${round}.json`;
  const p = spawnSync(process.execPath, [CLI, 'bench', 'p2p', '--ranks', '2', '--ppn', '1', ...args, '--json', file], {
    encoding: 'utf8', env: { ...process.env, ...env }, timeout: 300_000,
  });
  if (p.status !== 0) {
    // The cause, where a node named it ("nbc: Cannot ..."), else the launcher's closing line.
    const lines = `${p.stderr}\n${p.stdout}`.split('\n').filter((l) => l.startsWith('nbc:'));
    return { error: lines.find((l) => l.includes('Cannot')) ?? lines.at(-1) ?? `exit ${p.status}` };
  }
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** The node processes' CPU per wall second while ranks 0 and 1 ping-pong under `link`. */
async function waitCpu(wire, transport) {
  const r = await launch(JOB, {
    ranks: 2, ppn: 1, link: 'latency=1ms', transport, args: [String(WAIT_SPAN_MS)], output: 'pipe', timeoutMs: 120_000,
    env: { NBC_WIRE: wire },
  });
  if (r.exitCode !== 0) return { error: r.failure };
  const nodes = r.ranks.map((x) => x.result).filter((x) => x !== null);
  const wallMs = Math.max(...nodes.map((x) => x.wallMs));
  const cpuMs = nodes.reduce((a, x) => a + x.cpuMs, 0);
  // Per node process: the two nodes' CPU shared out.
  return { cpuPerWallSec: cpuMs / nodes.length / wallMs, cpuMs, wallMs, roundTrips: nodes[0].roundTrips, oneWayUs: (wallMs * 1e3) / nodes[0].roundTrips / 2 };
}

/**
 * The floor under a wait's CPU: what one timed sleep and its wake-up cost a thread of this
 * process (Atomics.wait for 0.65 ms, 1500 times, on an otherwise idle thread), in us. A rank
 * that waits out a message sleeps at least twice (until the message is in, then until its
 * stamp), so a 1 ms ping-pong cannot cost a process less than 2 wake-ups a round trip.
 */
function wakeCostUs() {
  const word = new Int32Array(new SharedArrayBuffer(4));
  const n = 1500;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) Atomics.wait(word, 0, 0, 0.65);
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / n;
}

/** CG on 2 nodes x 1 over gige, halo-heavy: ms per iteration and the halo wait per iteration. */
function cg(mode, round) {
  const file = `${OUT}/cg-2x1-gige-${mode}-r${round}.json`;
  const p = spawnSync(process.execPath, [CLI, 'cg', '--ranks', '2', '--ppn', '1', '--link', 'gige', '--global', '40,120,120', '--warmup', '2',
    '--max-iter', '60', '--mode', mode, '--test-interval', '2000', '--quiet', '--json', file], { encoding: 'utf8', timeout: 300_000 });
  if (p.status !== 0) return { error: `cg ${mode}: exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  const j = JSON.parse(readFileSync(file, 'utf8'));
  return { perIterationMs: j.perIterationMs, haloMs: (j.phases.halo.seconds * 1e3) / j.iterations, transport: j.transport ?? null };
}

const transports = ucxUnavailable() === null ? ['tcp', 'ucx'] : ['tcp'];
const runs = {};
const note = (key, value) => (runs[key] ??= []).push(value);
for (let round = 1; round <= ROUNDS; round++) {
  for (const t of transports) {
    for (const link of ['none', 'ib']) {
      const r = p2p(`8B-${t}-${link}`, round, ['--transport', t, '--sizes', '8', '--iters', '2000', ...(link === 'none' ? [] : ['--link', link])]);
      note(`8B-${t}-${link}`, r.error === undefined ? { latencyUs: r.results[0].latencyUs } : r);
    }
  }
  for (const t of transports) {
    const g = p2p(`1M-${t}-gige`, round, ['--transport', t, '--sizes', '1M', '--iters', '200', '--link', 'gige']);
    note(`1M-${t}-gige`, g.error === undefined ? { MBs: g.results[0].bandwidthGBs * 1e3, oneWayMs: g.results[0].latencyUs / 1e3 } : g);
  }
  note('wake', { us: wakeCostUs() });
  for (const t of transports) note(`wait-stamp-${t}`, await waitCpu('stamp', t));
  note('wait-queue-tcp', await waitCpu('queue', 'tcp'));
  for (const mode of ['blocking', 'nonblocking']) note(`cg-${mode}`, cg(mode, round));
  process.stderr.write(`round ${round}/${ROUNDS} done\n`);
}

/** The median of `field` over the rounds of `key`, or the first error. */
function fig(key, field) {
  const xs = runs[key] ?? [];
  const bad = xs.find((x) => x.error !== undefined);
  if (bad !== undefined) return { error: bad.error };
  return { median: median(xs.map((x) => x[field])), rounds: xs.map((x) => x[field]) };
}

const rows = [];
const fmt = (x, d) => x.toFixed(d);
for (const t of transports) {
  const none = fig(`8B-${t}-none`, 'latencyUs');
  const ib = fig(`8B-${t}-ib`, 'latencyUs');
  if (ib.error !== undefined || none.error !== undefined) {
    rows.push({ figure: `8 B one way, ${t}, --link ib`, measured: null, limit: none.median ?? null, unit: 'us', verdict: `not measured: ${ib.error ?? none.error}` });
    continue;
  }
  // The instrument adds what it says and nothing more: at most the path without a link plus
  // ib's 1.5 us x 1.15.
  const added = ib.median - none.median;
  const bound = 1.5 * 1.15;
  // Beside the difference of the medians, the median of the rounds' own differences (each
  // round measures both back to back): on a path whose rounds spread by more than the bound,
  // the pairs are the steadier reading.
  const paired = median(ib.rounds.map((x, i) => x - none.rounds[i]));
  const sign = (x) => `${x >= 0 ? '+' : ''}${fmt(x, 2)}`;
  rows.push({
    figure: `8 B one way, ${t}, --link ib (peer: no --link)`, measured: ib.median, limit: none.median, unit: 'us', rounds: ib.rounds,
    peerRounds: none.rounds, paired,
    verdict: `${sign(added)} us: ${added <= bound ? 'met' : 'missed'} (at most +${fmt(bound, 3)} us, ib's 1.5 us x 1.15); per round ${sign(paired)} us (median of the pairs; without a link the rounds span ${fmt(Math.min(...none.rounds), 1)}-${fmt(Math.max(...none.rounds), 1)} us)`,
  });
}
for (const t of transports) {
  const bw = fig(`1M-${t}-gige`, 'MBs');
  const ow = fig(`1M-${t}-gige`, 'oneWayMs');
  if (bw.error !== undefined) {
    rows.push({ figure: `1 MiB streaming, ${t}, --link gige`, measured: null, limit: 125, unit: 'MB/s', verdict: `not measured: ${bw.error}` });
    continue;
  }
  const pct = (100 * bw.median) / 125;
  rows.push({
    figure: `1 MiB streaming (window 16), ${t}, --link gige`, measured: bw.median, limit: 125, unit: 'MB/s', rounds: bw.rounds,
    verdict: `${fmt(pct, 1)} % of Gigabit Ethernet's rate: ${pct > 101 ? 'faster than the link: wrong' : pct >= 90 ? 'within 10 %: met' : 'slower than the link by more than 10 %: missed'}`,
  });
  rows.push({
    figure: `1 MiB one way (ping-pong / 2), ${t}, --link gige`, measured: ow.median, limit: GIGE_1M_ONE_WAY_MS, unit: 'ms', rounds: ow.rounds,
    verdict: `${fmt(ow.median / GIGE_1M_ONE_WAY_MS, 2)}x the model's serialisation + latency: ${ow.median < GIGE_1M_ONE_WAY_MS * 0.99 ? 'early: wrong' : 'never early'}`,
  });
}
const queue = fig('wait-queue-tcp', 'cpuPerWallSec');
const wake = fig('wake', 'us');
for (const t of transports) {
  const stamp = fig(`wait-stamp-${t}`, 'cpuPerWallSec');
  if (stamp.error !== undefined || queue.error !== undefined) {
    rows.push({ figure: `CPU of a node process, ping-pong under --link latency=1ms, ${t}`, measured: null, limit: null, unit: 'core', verdict: `not measured: ${stamp.error ?? queue.error}` });
    continue;
  }
  rows.push({
    figure: `a node process's CPU while its rank waits out --link latency=1ms (8 B ping-pong), stamp, ${t} (peer: the timer queue, tcp)`,
    measured: stamp.median, limit: queue.median, unit: 'core', rounds: stamp.rounds, peerRounds: queue.rounds,
    verdict: `${fmt(100 * stamp.median, 1)} % of a core (${fmt(stamp.median / queue.median, 2)}x the timer queue's): ${stamp.median < 0.05 ? 'met' : 'missed'} (target under 5 %)`,
  });
  // The floor: two wake-ups a round trip, at what one costs a thread here (wakeCostUs).
  const rtUs = 2 * fig(`wait-stamp-${t}`, 'oneWayUs').median;
  rows.push({
    figure: `the floor under it: 2 sleeps and wake-ups per ${fmt(rtUs / 1000, 2)} ms round trip, ${fmt(wake.median, 1)} us of CPU each (Atomics.wait of 0.65 ms, same run), ${t}`,
    measured: stamp.median, limit: (2 * wake.median) / rtUs, unit: 'core', rounds: stamp.rounds, peerRounds: wake.rounds,
    verdict: `${fmt(stamp.median / ((2 * wake.median) / rtUs), 2)}x the floor of ${fmt((100 * 2 * wake.median) / rtUs, 1)} % of a core`,
  });
  const st = fig(`wait-stamp-${t}`, 'oneWayUs');
  const qu = fig('wait-queue-tcp', 'oneWayUs');
  rows.push({
    figure: `8 B one way in that ping-pong, stamp, ${t} (peer: queue, tcp); model 1000 us`, measured: st.median, limit: qu.median, unit: 'us', rounds: st.rounds, peerRounds: qu.rounds,
    verdict: `${fmt(st.median - 1000, 0)} us past the model (queue: ${fmt(qu.median - 1000, 0)} us)`,
  });
}
const cgB = fig('cg-blocking', 'haloMs');
const cgN = fig('cg-nonblocking', 'haloMs');
if (cgB.error !== undefined || cgN.error !== undefined) {
  rows.push({ figure: 'CG 2 x 1, gige, 40 x 120 x 120: halo wait hidden', measured: null, limit: 70, unit: '%', verdict: `not measured: ${cgB.error ?? cgN.error}` });
} else {
  // Per round (the pair measured back to back), then the median.
  const hidden = runs['cg-blocking'].map((b, i) => 100 * (1 - runs['cg-nonblocking'][i].haloMs / b.haloMs));
  const h = median(hidden);
  const it = (mode) => median(runs[`cg-${mode}`].map((x) => x.perIterationMs));
  rows.push({
    figure: `CG 2 x 1, gige, 40 x 120 x 120 (115 KiB faces): halo wait hidden by the non-blocking run (${fmt(cgN.median, 2)} against ${fmt(cgB.median, 2)} ms an iteration; iterations ${fmt(it('nonblocking'), 2)} against ${fmt(it('blocking'), 2)} ms)`,
    measured: h, limit: 70, unit: '%', rounds: hidden,
    verdict: `${h >= 70 ? 'met' : 'missed'} (target at least 70 %)`,
  });
}

const c = cpus();
const summary = {
  command: 'npm run bench:wire', rounds: ROUNDS, machine: { cpu: c[0]?.model ?? 'unknown', cores: c.length, node: process.version },
  date: new Date().toISOString(), loadAverageAtEnd: loadavg(), transports, rows, runs,
};
writeFileSync(`${OUT}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const num = (x) => (x === null || x === undefined ? '' : Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
const md = [
  `# The emulated wire against what it imitates (\`npm run bench:wire\`)`,
  '',
  `${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; medians of ${ROUNDS} interleaved rounds; ${summary.date}; load average at the end ${summary.loadAverageAtEnd.map((x) => x.toFixed(1)).join(' ')}.`,
  '',
  '| figure | measured | limit / peer | verdict |',
  '|---|---|---|---|',
  ...rows.map((r) => `| ${r.figure} | ${num(r.measured)} ${r.measured === null ? '' : r.unit} | ${num(r.limit)} ${r.limit === null ? '' : r.unit} | ${r.verdict} |`),
  '',
];
writeFileSync(`${OUT}/summary.md`, md.join('\n'));
process.stdout.write(md.join('\n'));
