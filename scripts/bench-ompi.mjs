#!/usr/bin/env node
/**
 * `npm run bench:ompi`: collectives next to Open MPI on the same cores (mpibench,
 * ../shared/peers/mpibench.c, built here), in ROUNDS interleaved rounds (default 5), medians:
 *
 * - every collective the peer measures (allreduce, bcast, alltoall, barrier) on 2 ranks of one
 *   node (Open MPI over vader) at 8 B, 32 KiB and 128 KiB: the peer steps by 4x from 8 B, so
 *   the target's 64 KiB lies between; target <= 1.0x;
 * - allreduce 8 B on 4 ranks of 2 cores (Open MPI oversubscribed): target <= 1.2x;
 * - allreduce 8 B and 512 KiB on 2 nodes x 1 rank over UCX (Open MPI over btl tcp, both on
 *   loopback): targets <= 1.0x and <= 1.2x; and the same against Open MPI over UCX itself
 *   (pml ucx, UCX_TLS=tcp,self, as nbcoll's ranks use it), like for like, no target;
 * - every blocking collective nbc bench measures (barrier, bcast, reduce, allreduce, gather,
 *   scatter, allgather, alltoall, reduceScatterBlock, scan, exscan) on 2 ranks of one node at
 *   8 B and 64 KiB, against bench/peers/mpicolls.c, which sizes its buffers as nbc bench does
 *   (mpibench's alltoall splits its size over the ranks; nbc bench sends it to each): target
 *   <= 1.0x (case id `every`).
 *
 * Writes bench/results/ompi/ (OUT): each run's JSON or CSV, summary.json and summary.md.
 * CASES="id ..." runs only those cases. Without Open MPI the nbc side is measured alone, and
 * says why.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildPeer } from './peer-build.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = `${ROOT}dist/cli/nbc.js`;
const OUT = process.env.OUT ?? `${ROOT}bench/results/ompi`;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const OPS = ['allreduce', 'bcast', 'alltoall', 'barrier'];
const SIZES = [8, 32768, 131072];
/** What each case runs: nbc bench's layout and sizes, mpirun's processes and transport, and the target. */
const CASES = [
  ...OPS.map((op) => ({ id: `${op}-2`, op, what: '2 ranks of one node', nbc: ['--ranks', '2'], sizes: op === 'barrier' ? [8] : SIZES, np: 2, btl: 'self,vader', target: 1.0 })),
  { id: 'allreduce-4on2', op: 'allreduce', what: `4 ranks on ${cpus().length} cores`, nbc: ['--ranks', '4'], sizes: [8], np: 4, btl: 'self,vader', target: 1.2 },
  { id: 'allreduce-2x1-ucx', op: 'allreduce', what: '2 nodes x 1, UCX (Open MPI: btl tcp)', nbc: ['--ranks', '2', '--ppn', '1', '--transport', 'ucx'], sizes: [8, 524288], np: 2, btl: 'self,tcp', target: null },
  {
    id: 'allreduce-2x1-ucx-pml', op: 'allreduce', what: '2 nodes x 1, UCX (Open MPI: pml ucx over tcp)', nbc: ['--ranks', '2', '--ppn', '1', '--transport', 'ucx'], sizes: [8, 524288], np: 2,
    mca: ['--mca', 'pml', 'ucx', '--mca', 'pml_ucx_tls', 'any', '--mca', 'pml_ucx_devices', 'any', '-x', 'UCX_TLS=tcp,self'], target: null, reference: true,
  },
];
/** CASES="id ..." runs only those. */
const ONLY = (process.env.CASES ?? '').split(/\s+/).filter(Boolean);
/** The 2 x 1 UCX targets: <= 1.0x at 8 B, <= 1.2x at 512 KiB. */
const targetOf = (c, bytes) => c.target ?? (bytes <= 8 ? 1.0 : 1.2);
mkdirSync(OUT, { recursive: true });
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];
const ompiEnv = { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' };

/** Open MPI's latency per size (us) for case `c`, from one mpibench run. */
function ompi(bin, c, round) {
  const transport = c.mca ?? ['--mca', 'btl', c.btl];
  const p = spawnSync('mpirun', ['--oversubscribe', '-np', String(c.np), ...transport, bin, c.op, String(Math.max(...c.sizes))],
    { encoding: 'utf8', env: ompiEnv, timeout: 300_000 });
  writeFileSync(`${OUT}/ompi-${c.id}-r${round}.csv`, p.stdout ?? '');
  if (p.status !== 0) return { error: `mpirun exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  const by = {};
  for (const line of (p.stdout ?? '').trim().split('\n').slice(1)) {
    const [, bytes, us] = line.split(',');
    by[Number(bytes)] = Number(us);
  }
  return by;
}

/** The every-collective group: nbc bench's ops against mpicolls.c on 2 ranks of one node. */
const EVERY_OPS = ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall', 'reduceScatterBlock', 'scan', 'exscan'];
const EVERY_SIZES = [8, 65536];
const every = ONLY.length === 0 || ONLY.includes('every');

/** Open MPI's latency per op and size (us), from one mpicolls run. */
function ompiEvery(bin, round) {
  const p = spawnSync('mpirun', ['--oversubscribe', '-np', '2', '--mca', 'btl', 'self,vader', bin, ...EVERY_SIZES.map(String)],
    { encoding: 'utf8', env: ompiEnv, timeout: 300_000 });
  writeFileSync(`${OUT}/ompi-every-r${round}.csv`, p.stdout ?? '');
  if (p.status !== 0) return { error: `mpirun exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  const by = {};
  for (const line of (p.stdout ?? '').trim().split('\n').slice(1)) {
    const [op, bytes, us] = line.split(',');
    (by[op] ??= {})[Number(bytes)] = Number(us);
  }
  return by;
}

/** nbc's latency per size (us) for case `c`. */
function nbc(c, round) {
  const file = `${OUT}/nbc-${c.id}-r${round}.json`;
  const sizes = c.op === 'barrier' ? [] : ['--sizes', c.sizes.join(',')];
  const iters = Math.max(...c.sizes) > 131072 ? '300' : '2000';
  const p = spawnSync(process.execPath, [CLI, 'bench', c.op, ...c.nbc, ...sizes, '--iters', iters, '--json', file], { encoding: 'utf8', timeout: 300_000 });
  if (p.status !== 0) return { error: `nbc bench exit ${p.status}: ${(p.stderr ?? '').trim().split('\n').at(-1)}` };
  const by = {};
  for (const r of JSON.parse(readFileSync(file, 'utf8')).results) by[c.op === 'barrier' ? 8 : r.bytes] = r.latencyUs;
  return by;
}

const peer = buildPeer('mpibench.c');
if (peer.why !== undefined) process.stderr.write(`bench:ompi: Open MPI not measured: ${peer.why}\n`);
const peerEvery = every ? buildPeer('mpicolls.c', { src: `${ROOT}bench/peers/mpicolls.c` }) : { why: 'not asked' };
if (every && peerEvery.why !== undefined) process.stderr.write(`bench:ompi: Open MPI not measured for every collective: ${peerEvery.why}\n`);
const everyCases = every ? EVERY_OPS.map((op) => ({ id: `every-${op}`, op, what: '2 ranks of one node (every collective)', nbc: ['--ranks', '2'], sizes: op === 'barrier' ? [8] : EVERY_SIZES, target: 1.0 })) : [];
const runs = { nbc: {}, ompi: {} };
for (let round = 1; round <= ROUNDS; round++) {
  for (const c of everyCases) (runs.nbc[c.id] ??= []).push(nbc(c, round));
  if (peerEvery.bin !== undefined) {
    const by = ompiEvery(peerEvery.bin, round);
    for (const c of everyCases) (runs.ompi[c.id] ??= []).push(by.error !== undefined ? by : (by[c.op] ?? { error: `no ${c.op} line` }));
  }
  for (const c of CASES) {
    if (ONLY.length > 0 && !ONLY.includes(c.id)) continue;
    (runs.nbc[c.id] ??= []).push(nbc(c, round));
    if (peer.bin !== undefined) (runs.ompi[c.id] ??= []).push(ompi(peer.bin, c, round));
  }
  process.stderr.write(`round ${round}/${ROUNDS} done\n`);
}

const rows = [];
for (const c of [...CASES.filter((x) => ONLY.length === 0 || ONLY.includes(x.id)), ...everyCases]) {
  for (const bytes of c.sizes) {
    const pick = (side) => {
      const xs = runs[side][c.id] ?? [];
      const bad = xs.find((x) => x.error !== undefined);
      if (bad !== undefined) return { error: bad.error };
      const vals = xs.map((x) => x[bytes]).filter((x) => typeof x === 'number');
      return vals.length === 0 ? { error: 'no reading' } : { median: median(vals), rounds: vals };
    };
    const n = pick('nbc');
    const from = c.id.startsWith('every-') ? peerEvery : peer;
    const o = from.bin === undefined ? { error: from.why } : pick('ompi');
    const ratio = n.median !== undefined && o.median !== undefined ? n.median / o.median : null;
    const target = c.reference === true ? null : targetOf(c, bytes);
    rows.push({
      op: c.op, where: c.what, bytes, nbcUs: n.median ?? null, nbcRounds: n.rounds ?? null, ompiUs: o.median ?? null, ompiRounds: o.rounds ?? null, ratio, target,
      verdict: n.error ?? (ratio === null ? `Open MPI not measured: ${o.error}` : target === null ? 'like for like (no target)'
        : ratio <= target ? `met (<= ${target.toFixed(1)}x)` : `missed (target <= ${target.toFixed(1)}x)`),
    });
  }
}
const c = cpus();
const summary = {
  command: 'npm run bench:ompi', rounds: ROUNDS, machine: { cpu: c[0]?.model ?? 'unknown', cores: c.length, node: process.version },
  date: new Date().toISOString(), loadAverageAtEnd: loadavg(), peer: peer.why ?? 'Open MPI mpibench', rows, runs,
};
writeFileSync(`${OUT}/summary.json`, JSON.stringify(summary, null, 2) + '\n');
const size = (b) => (b >= 1024 ? `${b / 1024} KiB` : `${b} B`);
const num = (x) => (x === null ? '' : x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const md = [
  '# Collectives next to Open MPI (`npm run bench:ompi`)',
  '',
  `${summary.machine.cpu}, ${summary.machine.cores} cores, Node ${summary.machine.node}; medians of ${ROUNDS} interleaved rounds; ${summary.date}; load average at the end ${summary.loadAverageAtEnd.map((x) => x.toFixed(1)).join(' ')}. Latency in us (median over iterations of the max over ranks, both sides). The peer steps by 4x from 8 B: 64 KiB, the target's size, lies between its 32 KiB and 128 KiB.`,
  '',
  '| collective | where | size | nbcoll | Open MPI | ratio | verdict |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.op} | ${r.where} | ${size(r.bytes)} | ${num(r.nbcUs)} | ${num(r.ompiUs)} | ${r.ratio === null ? '' : `${r.ratio.toFixed(2)}x`} | ${r.verdict} |`),
  '',
];
writeFileSync(`${OUT}/summary.md`, md.join('\n'));
process.stdout.write(md.join('\n'));
