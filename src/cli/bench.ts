/**
 * `nbc bench ...`: benchmarks that print each result beside the physical limit measured in
 * the same run (PERFORMANCE.md), as a table and optionally as JSON.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import type { Command } from 'commander';
import { atomicsPingPongOneWayUs, tcpPingPongOneWayUs, typedArraySetGBs } from '../bench/limits.js';
import type { P2pRow } from '../bench/p2p-job.js';
import { BENCH_COLLECTIVES, type CollRow } from '../bench/coll-job.js';
import { parseSizeRange } from '../runtime/env.js';
import { launch } from '../runtime/launcher.js';

const P2P_JOB = fileURLToPath(new URL('../bench/p2p-job.js', import.meta.url));
const COLL_JOB = fileURLToPath(new URL('../bench/coll-job.js', import.meta.url));

export function machineInfo(): { cpu: string; cores: number; node: string } {
  const c = cpus();
  return { cpu: c[0]?.model ?? 'unknown', cores: c.length, node: process.version };
}

function fmtBytes(n: number): string {
  if (n >= 1 << 20 && n % (1 << 20) === 0) return `${n >> 20} MiB`;
  if (n >= 1 << 10 && n % (1 << 10) === 0) return `${n >> 10} KiB`;
  return `${n} B`;
}

export function registerBench(program: Command): void {
  const bench = program.command('bench').description('measure latency and bandwidth (see BENCHMARKS.md)');
  bench.command('p2p')
    .description('point-to-point one-way latency and bandwidth between 2 ranks')
    .option('--ranks <N>', 'ranks (the benchmark uses ranks 0 and 1)', '2')
    .option('--ppn <P>', 'ranks per node: 2 = intra-node (shared memory), 1 = inter-node (TCP)', '2')
    .option('--sizes <A:B>', 'message sizes, powers of two from A to B (e.g. 8:16M) or a list', '8:16M')
    .option('--iters <n>', 'ping-pong iterations per size (fewer for large sizes)', '2000')
    .option('--warmup <n>', 'warm-up iterations per size', '200')
    .option('--window <n>', 'messages in flight for the bandwidth test', '16')
    .option('--plain', 'send from plain typed arrays instead of registered (comm.alloc) memory')
    .option('--json <file>', 'also write the results as JSON')
    .action(async (o: { ranks: string; ppn: string; sizes: string; iters: string; warmup: string; window: string; plain?: boolean; json?: string }) => {
      const sizes = o.sizes.includes(',') ? o.sizes.split(',').map((s) => parseSizeRange(`${s}:${s}`)[0]!) : parseSizeRange(o.sizes);
      const ranks = Number(o.ranks);
      const ppn = Number(o.ppn);
      const intra = ppn >= 2;
      process.stderr.write('measuring physical limits... ');
      const limitLatencyUs = intra ? await atomicsPingPongOneWayUs() : await tcpPingPongOneWayUs();
      const setGBs = new Map<number, number>();
      const sharedGBs = new Map<number, number>();
      for (const s of sizes) {
        if (s < 1024) continue;
        setGBs.set(s, await typedArraySetGBs(s));
        sharedGBs.set(s, await typedArraySetGBs(s, true));
      }
      process.stderr.write('done\nrunning the benchmark job... ');
      const args = JSON.stringify({ sizes, iters: Number(o.iters), warmup: Number(o.warmup), window: Number(o.window), plain: !!o.plain });
      const r = await launch(P2P_JOB, { ranks, ppn, args: [args], output: 'pipe', timeoutMs: 600_000 });
      process.stderr.write('done\n');
      if (r.exitCode !== 0) {
        process.stderr.write(r.stderr);
        process.exitCode = r.exitCode;
        return;
      }
      const rows = (r.ranks[0]!.result as P2pRow[]).map((row) => ({
        ...row,
        limitLatencyUs,
        limitBandwidthGBs: setGBs.get(row.bytes) ?? null,
        limitSharedCopyGBs: sharedGBs.get(row.bytes) ?? null,
        bandwidthPctOfLimit: setGBs.has(row.bytes) ? (100 * row.bandwidthGBs) / setGBs.get(row.bytes)! : null,
      }));
      const path = intra ? 'intra-node (shared memory)' : 'inter-node (TCP loopback)';
      const table = new Table({
        head: ['size', 'latency us', `limit us (${intra ? 'Atomics' : 'TCP'} ping-pong)`, 'bandwidth GB/s', 'TypedArray.set GB/s', '% of set', 'shared-memory copy GB/s'],
        colAligns: ['right', 'right', 'right', 'right', 'right', 'right', 'right'],
      });
      for (const row of rows) {
        table.push([
          fmtBytes(row.bytes), row.latencyUs.toFixed(2), limitLatencyUs.toFixed(2), row.bandwidthGBs.toFixed(2),
          row.limitBandwidthGBs === null ? '' : row.limitBandwidthGBs.toFixed(1),
          row.bandwidthPctOfLimit === null ? '' : `${row.bandwidthPctOfLimit.toFixed(0)} %`,
          row.limitSharedCopyGBs === null ? '' : row.limitSharedCopyGBs.toFixed(1),
        ]);
      }
      process.stdout.write(`p2p, ${ranks} ranks, ppn ${ppn}: ${path}, ${o.plain ? 'plain' : 'registered'} buffers\n${table.toString()}\n`);
      if (o.json) {
        mkdirSync(dirname(o.json), { recursive: true });
        writeFileSync(o.json, JSON.stringify({
          op: 'p2p', ranks, ppn, path, buffers: o.plain ? 'plain' : 'registered', machine: machineInfo(),
          limits: { latencyUs: limitLatencyUs, kind: intra ? 'atomics-ping-pong' : 'tcp-ping-pong' },
          results: rows,
        }, null, 2) + '\n');
      }
    });

  for (const op of BENCH_COLLECTIVES) {
    bench.command(op)
      .description(`blocking ${op} latency vs message size (median over iterations of the max over ranks)`)
      .option('--ranks <N>', 'ranks', '2')
      .option('--ppn <P>', 'ranks per node (default: all on one node)')
      .option('--sizes <A:B>', 'bytes per rank, powers of two from A to B, or a list', '8:1M')
      .option('--iters <n>', 'measured iterations per size (fewer for >= 1 MiB)', '500')
      .option('--warmup <n>', 'warm-up iterations per size', '50')
      .option('--algorithm <name>', 'force an algorithm (see docs/collectives.md)')
      .option('--json <file>', 'also write the results as JSON')
      .action(async (o: { ranks: string; ppn?: string; sizes: string; iters: string; warmup: string; algorithm?: string; json?: string }) => {
        const sizes = o.sizes.includes(',') ? o.sizes.split(',').map((s) => parseSizeRange(`${s}:${s}`)[0]!) : parseSizeRange(o.sizes);
        const ranks = Number(o.ranks);
        const ppn = o.ppn === undefined ? ranks : Number(o.ppn);
        const args = JSON.stringify({ op, sizes, iters: Number(o.iters), warmup: Number(o.warmup), algorithm: o.algorithm });
        const r = await launch(COLL_JOB, { ranks, ppn, args: [args], output: 'pipe', timeoutMs: 600_000 });
        if (r.exitCode !== 0) {
          process.stderr.write(r.stderr);
          process.exitCode = r.exitCode;
          return;
        }
        const rows = r.ranks[0]!.result as CollRow[];
        const algorithm = o.algorithm ?? 'auto (select.ts)';
        const table = new Table({ head: ['size', 'latency us (median)', 'min us', 'max us'], colAligns: ['right', 'right', 'right', 'right'] });
        for (const row of rows) table.push([fmtBytes(row.bytes), row.latencyUs.toFixed(2), row.minUs.toFixed(2), row.maxUs.toFixed(2)]);
        process.stdout.write(`${op}, ${ranks} ranks, ppn ${ppn}, algorithm ${algorithm}\n${table.toString()}\n`);
        if (o.json) {
          mkdirSync(dirname(o.json), { recursive: true });
          writeFileSync(o.json, JSON.stringify({ op, ranks, ppn, executor: 'host', algorithm, machine: machineInfo(), results: rows }, null, 2) + '\n');
        }
      });
  }
}
