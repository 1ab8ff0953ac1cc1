/**
 * `nbc bench ...`: nbcbench. Latency, overhead and overlap of every collective (blocking,
 * non-blocking, persistent) and of point-to-point, each printed beside the physical limit
 * measured in the same run (PERFORMANCE.md), as a table, CSV, OSU-format text, JSON and charts.
 *
 *   nbc bench iallreduce --ranks 2 --ppn 1 --sizes 8:1M --test-interval 10us --json r.json --chart r.svg
 *   nbc bench compare A.json B.json [--chart cmp.svg]
 *   nbc bench chart out.png A.json B.json ... [--metric latency|overlap]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import type { Command } from 'commander';
import { NbcArgError } from '../errors.js';
import { atomicsPingPongOneWayUs, tcpPingPongOneWayUs, typedArraySetGBs, ucxPerftestLimit, ucxPerftestMissing } from '../bench/limits.js';
import { parseTransport, ucxUnavailable, type TransportChoice } from '../runtime/node-main.js';
import { ucxErrModeFromEnv } from '../runtime/config.js';
import { parseDurationMs, parseNoise, parseTestInterval, STATS, type Stat } from '../bench/metrics.js';
import { baseName, BENCH_OPS, opKind, type OpJobArgs, type OpJobResult } from '../bench/op-job.js';
import { ALGORITHMS, checkAlgorithm, type CollName } from '../coll/select.js';
import type { P2pJobArgs, P2pRow } from '../bench/p2p-job.js';
import { chartFormat, renderChart } from '../bench/chart.js';
import { compareResults } from '../bench/compare.js';
import { formatBytes, formatCsv, formatOsu, formatTable } from '../bench/report.js';
import type { BenchResult, BenchRow } from '../bench/result.js';
import { parseSizeRange } from '../runtime/env.js';
import { wireModeFromEnv } from '../runtime/wire-clock.js';
import { launch } from '../runtime/launcher.js';
import { checkTopology, LINK_HELP, parseLinkSpec, TOPOLOGY_HELP } from '../runtime/link-spec.js';
import { fabricFromEnv, parseAggSpec } from '../agg/fabric.js';

const OP_JOB = fileURLToPath(new URL('../bench/op-job.js', import.meta.url));
const P2P_JOB = fileURLToPath(new URL('../bench/p2p-job.js', import.meta.url));

export function machineInfo(): { cpu: string; cores: number; node: string } {
  const c = cpus();
  return { cpu: c[0]?.model ?? 'unknown', cores: c.length, node: process.version };
}

/** An option's integer value of at least `min` (1: "a positive integer"), else NBC_ERR_ARG. */
function intAtLeast(name: string, text: string, min: 0 | 1): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    throw new NbcArgError(`Cannot use ${name} '${text}': expected ${min === 1 ? 'a positive integer' : 'an integer >= 0'}`);
  }
  return n;
}

/** `8:1M` (x4 steps; the upper bound is always included), `8:1M:2` (x2), or a list `8,1K,64K`. */
export function parseSizes(text: string): number[] {
  if (text.includes(',')) return text.split(',').map((s) => parseSizeRange(`${s}:${s}`)[0]!);
  const [from, to, step] = text.split(':');
  const sizes = parseSizeRange(`${from}:${to ?? from}`, step === undefined ? 4 : Number(step));
  const last = parseSizeRange(`${to ?? from}:${to ?? from}`)[0]!;
  if (sizes[sizes.length - 1] !== last) sizes.push(last);
  return sizes;
}

interface BenchOptions {
  ranks: string; ppn?: string; sizes: string; iters: string; warmup: string; warmupTime: string; executor: string;
  algorithm?: string; testInterval: string; compute: string; link?: string; topology?: string; noise?: string;
  stat: string; perRank?: boolean; json?: string; csv?: boolean; osu?: boolean; chart?: string;
  plain?: boolean; window: string; label?: string; metric?: string; transport?: string; agg?: string;
}

/** The transport a benchmark job between nodes runs on, resolved as the nodes resolve it. */
function resolvedTransport(o: BenchOptions): 'ucx' | 'tcp' {
  const env = process.env.NBC_TRANSPORT;
  const choice: TransportChoice = o.transport !== undefined ? parseTransport(o.transport)
    : env !== undefined && env !== '' ? parseTransport(env, 'NBC_TRANSPORT') : 'auto';
  if (choice === 'ucx') return 'ucx';
  // An emulated link rides UCX too when stamped (p2p/wire.ts); the engines' queue (NBC_WIRE=queue) needs TCP.
  const linkOk = o.link === undefined || wireModeFromEnv() === 'stamp';
  return choice === 'auto' && linkOk && ucxUnavailable() === null ? 'ucx' : 'tcp';
}

/** `--transport` for launch(): as given, else undefined (NBC_TRANSPORT or auto). */
function transportOf(o: BenchOptions): TransportChoice | undefined {
  return o.transport === undefined ? undefined : parseTransport(o.transport);
}

/** The emulated network a result was measured on, for its JSON: `--link`, `--topology` and NBC_WIRE (null without `--link`). */
function emulation(o: BenchOptions): Pick<BenchResult, 'link' | 'topology' | 'wire'> {
  if (o.link === undefined) return { link: null, topology: null, wire: null };
  return { link: o.link, topology: o.topology ?? 'flat', wire: wireModeFromEnv() };
}

function writeJson(file: string, value: unknown): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(value, null, 2) + '\n');
}

function readResult(file: string): BenchResult {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
  } catch (err) {
    throw new NbcArgError(`Cannot read benchmark results from ${file}: ${(err as Error).message}`);
  }
}

/** Runs `op` for every size (one job per size, so progress can be shown) and collects the rows. */
async function runOp(op: string, o: BenchOptions, ranks: number, ppn: number, sizes: number[]): Promise<BenchRow[] | null> {
  const kind = opKind(op);
  const common: Omit<OpJobArgs, 'sizes'> = {
    op,
    iters: intAtLeast('--iters', o.iters, 1),
    warmup: intAtLeast('--warmup', o.warmup, 0),
    warmupMs: parseDurationMs('--warmup-time', o.warmupTime),
    algorithm: o.algorithm,
    executor: o.executor as 'host' | 'offload' | 'agg',
    compute: o.compute as 'busy' | 'dgemm',
    testInterval: parseTestInterval(o.testInterval),
    noise: o.noise === undefined ? null : parseNoise(o.noise),
    stat: o.stat as Stat,
    perRank: !!o.perRank,
  };
  if (kind !== 'blocking' && common.testInterval.kind === 'bytes' && common.compute !== 'dgemm') {
    throw new NbcArgError(`Cannot use --test-interval ${o.testInterval} with --compute busy: a size interval counts the data --compute dgemm processes; use a time (e.g. 10us) or --compute dgemm`);
  }
  const runSizes = op === 'barrier' || op === 'ibarrier' ? [0] : sizes;
  const bar = new cliProgress.SingleBar({
    format: `${op} {bar} {value}/{total} sizes | {size}`, stream: process.stderr, hideCursor: true, clearOnComplete: true,
  }, cliProgress.Presets.shades_classic);
  if (process.stderr.isTTY) bar.start(runSizes.length, 0, { size: '' });
  const rows: BenchRow[] = [];
  for (const bytes of runSizes) {
    if (process.stderr.isTTY) bar.update(rows.length, { size: `${bytes} B` });
    const r = await launch(OP_JOB, {
      ranks, ppn, args: [JSON.stringify({ ...common, sizes: [bytes] })], output: 'pipe', timeoutMs: 600_000, link: o.link,
      topology: o.topology, transport: transportOf(o), agg: o.agg,
    });
    if (r.exitCode !== 0) {
      if (process.stderr.isTTY) bar.stop();
      process.stderr.write(r.stderr);
      process.exitCode = r.exitCode;
      return null;
    }
    rows.push(...(r.ranks[0]!.result as OpJobResult).rows);
  }
  if (process.stderr.isTTY) {
    bar.update(rows.length);
    bar.stop();
  }
  return rows;
}

async function measureLimits(intra: boolean, sizes: number[]): Promise<Record<string, number>> {
  const limits: Record<string, number> = {};
  if (intra) limits.atomicsPingPongOneWayUs = await atomicsPingPongOneWayUs();
  else limits.tcpPingPongOneWayUs = await tcpPingPongOneWayUs();
  const big = Math.max(...sizes);
  if (big >= 1024) {
    limits.typedArraySetGBs = await typedArraySetGBs(big);
    limits.sharedCopyGBs = await typedArraySetGBs(big, true);
  }
  return limits;
}

function emit(result: BenchResult, o: BenchOptions): Promise<void> | void {
  if (o.csv) process.stdout.write(formatCsv(result));
  else if (o.osu) process.stdout.write(formatOsu(result));
  else process.stdout.write(formatTable(result) + '\n');
  if (o.json) writeJson(o.json, result);
  if (o.chart) return renderChart([result], o.chart, o.metric === undefined ? undefined : { metric: o.metric as 'latency' | 'overlap' });
}

async function benchP2p(o: BenchOptions, ranks: number, ppn: number, sizes: number[]): Promise<void> {
  const intra = ppn >= 2;
  const args: P2pJobArgs = {
    sizes, iters: intAtLeast('--iters', o.iters, 1), warmup: intAtLeast('--warmup', o.warmup, 0),
    warmupMs: parseDurationMs('--warmup-time', o.warmupTime), window: intAtLeast('--window', o.window, 1), plain: !!o.plain,
  };
  process.stderr.write('measuring physical limits... ');
  const limitLatencyUs = intra ? await atomicsPingPongOneWayUs() : await tcpPingPongOneWayUs();
  const setGBs = new Map<number, number>();
  const sharedGBs = new Map<number, number>();
  for (const s of sizes) {
    if (s < 1024) continue;
    setGBs.set(s, await typedArraySetGBs(s));
    sharedGBs.set(s, await typedArraySetGBs(s, true));
  }
  const transport = intra ? null : resolvedTransport(o);
  let ucxLimit: Awaited<ReturnType<typeof ucxPerftestLimit>> = null;
  let ucxMissing: string | null = null;
  const errMode = ucxErrModeFromEnv();
  if (transport === 'ucx') {
    // The UCX transport's own limit, over the same UCX transports nbcoll's ranks use.
    ucxMissing = ucxPerftestMissing();
    const bwBytes = sizes.includes(1 << 20) ? 1 << 20 : sizes[sizes.length - 1]!;
    ucxLimit = await ucxPerftestLimit(bwBytes, process.env.UCX_TLS ?? 'tcp,self');
  }
  process.stderr.write('done\nrunning the benchmark job... ');
  const r = await launch(P2P_JOB, { ranks, ppn, args: [JSON.stringify(args)], output: 'pipe', timeoutMs: 600_000, link: o.link, topology: o.topology,
    transport: transportOf(o),
  });
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
  const path = intra ? 'intra-node (shared memory)'
    : transport === 'ucx' ? `inter-node (UCX rank to rank, UCX_TLS=${process.env.UCX_TLS ?? 'tcp,self'} on loopback, NBC_UCX_ERR_MODE=${errMode})`
      : 'inter-node (TCP loopback, through the engines)';
  const table = new Table({
    style: { head: [], border: [] },
    head: ['size', 'latency us', `limit us (${intra ? 'Atomics' : 'TCP'} ping-pong)`, 'bandwidth GB/s', 'TypedArray.set GB/s', '% of set', 'shared-memory copy GB/s'],
    colAligns: ['right', 'right', 'right', 'right', 'right', 'right', 'right'],
  });
  for (const row of rows) {
    table.push([
      formatBytes(row.bytes), row.latencyUs.toFixed(2), limitLatencyUs.toFixed(2), row.bandwidthGBs.toFixed(2),
      row.limitBandwidthGBs === null ? '' : row.limitBandwidthGBs.toFixed(1),
      row.bandwidthPctOfLimit === null ? '' : `${row.bandwidthPctOfLimit.toFixed(0)} %`,
      row.limitSharedCopyGBs === null ? '' : row.limitSharedCopyGBs.toFixed(1),
    ]);
  }
  process.stdout.write(`p2p, ${ranks} ranks, ppn ${ppn}: ${path}, ${o.plain ? 'plain' : 'registered'} buffers\n${table.toString()}\n`);
  if (transport === 'ucx') {
    if (ucxLimit === null) {
      process.stdout.write(`UCX limit not measured: ${ucxMissing ?? 'ucx_perftest failed'}\n`);
    } else {
      const small = rows.find((row) => row.bytes === 8) ?? rows[0]!;
      const big = rows.find((row) => row.bytes === ucxLimit.bwBytes);
      const pct = (limit: number): string => big === undefined ? '' : ` (= ${((100 * big.bandwidthGBs) / limit).toFixed(0)} %)`;
      process.stdout.write(
        `UCX limit, ucx_perftest over ${ucxLimit.tls} on loopback, same run: tag_lat 8 B ${ucxLimit.tagLatUs.toFixed(2)} us ` +
        `(nbcoll ${small.bytes} B ${small.latencyUs.toFixed(2)} us = ${(small.latencyUs / ucxLimit.tagLatUs).toFixed(2)}x); ` +
        `tag_bw ${ucxLimit.bwBytes} B${big === undefined ? '' : ` (nbcoll ${big.bandwidthGBs.toFixed(2)} GB/s)`}: ` +
        `${ucxLimit.tagBwGBs.toFixed(2)} GB/s${pct(ucxLimit.tagBwGBs)}, ` +
        `with peer error handling (-e) ${ucxLimit.tagBwPeerGBs.toFixed(2)} GB/s${pct(ucxLimit.tagBwPeerGBs)}; ` +
        `nbcoll ran NBC_UCX_ERR_MODE=${errMode}\n`);
    }
  }
  if (o.json) {
    writeJson(o.json, {
      op: 'p2p', kind: 'p2p', ranks, ppn, path, transport, ...emulation(o), buffers: o.plain ? 'plain' : 'registered', machine: machineInfo(),
      limits: { latencyUs: limitLatencyUs, kind: intra ? 'atomics-ping-pong' : 'tcp-ping-pong', ucxPerftest: ucxLimit },
      ...(transport === 'ucx' ? { ucxErrMode: errMode } : {}), results: rows,
    });
  }
}

export function registerBench(program: Command): void {
  program.command('bench')
    .description('nbcbench: latency, overhead and overlap (see BENCHMARKS.md); also "bench compare A.json B.json" and "bench chart OUT A.json ..."')
    .argument('<op>', `p2p, compare, chart, or one of: ${BENCH_OPS.join(', ')}`)
    .argument('[files...]', 'compare: two JSON results; chart: output file, then JSON results')
    .option('--ranks <N>', 'ranks', '2')
    .option('--ppn <P>', 'ranks per node (default: all ranks on one node; p2p default 2)')
    .option('--sizes <A:B>', 'bytes per rank: A:B in x4 steps (A:B:2 for x2) or a list 8,1K,64K', '8:1M')
    .option('--iters <n>', 'measured iterations per size (fewer from 1 MiB)', '500')
    .option('--warmup <n>', 'warm-up iterations per size', '50')
    .option('--warmup-time <d>', 'and warm up for at least this long per size (each size is a fresh job, whose JIT settles in time as well as calls); 0 = count only', '0.5s')
    .option('--executor <e>', 'host | offload | agg', 'host')
    .option('--algorithm <name>', 'force an algorithm (see docs/architecture.md)')
    .option('--test-interval <x>', 'time (10us) or data (64KiB, dgemm) between test() calls while computing; 0 = none', '0')
    .option('--compute <kind>', 'busy | dgemm: what runs between start and wait', 'busy')
    .option('--link <gige|ib|spec>', LINK_HELP)
    .option('--topology <flat|fat-tree:radix=R[,levels=L]>', TOPOLOGY_HELP)
    .option('--transport <t>', 'between nodes: ucx, tcp or auto (default NBC_TRANSPORT, else auto)')
    .option('--agg <spec>', 'a private aggregation fabric for each run (executor agg), e.g. radix=4,levels=2')
    .option('--noise <d@f>', 'per-rank CPU noise while computing, e.g. 100us@1kHz')
    .option('--stat <s>', 'median | min | max | avg over iterations (of the max over ranks)', 'median')
    .option('--per-rank', "also report each rank's own figure, to see skew")
    .option('--json <file>', 'write the results as JSON')
    .option('--csv', 'print CSV instead of a table')
    .option('--osu', 'print OSU micro-benchmarks format (diff against osu_* output)')
    .option('--chart <file>', 'write a chart (.svg or .png)')
    .option('--metric <m>', 'chart metric: latency | overlap')
    .option('--label <text>', 'legend label of this result in charts')
    .option('--window <n>', 'p2p: messages in flight for the bandwidth test', '16')
    .option('--plain', 'p2p: send from plain typed arrays instead of registered memory')
    .action(async (op: string, files: string[], o: BenchOptions, cmd: Command) => {
      // OSU reports averages: with --osu, so does nbc bench unless --stat says otherwise.
      if (o.osu === true && cmd.getOptionValueSource('stat') === 'default') o.stat = 'avg';
      // Output options first, so a typo fails before minutes of measuring.
      if (o.chart !== undefined) chartFormat(o.chart);
      if (o.metric !== undefined && o.metric !== 'latency' && o.metric !== 'overlap') {
        throw new NbcArgError(`Cannot chart --metric ${o.metric}: expected latency or overlap`);
      }
      if (op === 'compare') {
        if (files.length !== 2) throw new NbcArgError('Cannot compare: expected exactly two JSON result files, e.g. nbc bench compare A.json B.json');
        const a = readResult(files[0]!);
        const b = readResult(files[1]!);
        process.stdout.write(compareResults(a, b).text + '\n');
        if (o.chart) await renderChart([a, b], o.chart, o.metric === undefined ? undefined : { metric: o.metric as 'latency' | 'overlap' });
        return;
      }
      if (op === 'chart') {
        if (files.length < 2) throw new NbcArgError('Cannot chart: expected an output file (.svg or .png) and at least one JSON result');
        chartFormat(files[0]!);
        await renderChart(files.slice(1).map(readResult), files[0]!, o.metric === undefined ? undefined : { metric: o.metric as 'latency' | 'overlap' });
        return;
      }
      const ranks = intAtLeast('--ranks', o.ranks, 1);
      const sizes = parseSizes(o.sizes);
      if (o.link !== undefined) parseLinkSpec(o.link);
      // The topology needs a link, and a fat tree of fixed levels must hold the job's nodes.
      const benchPpn = o.ppn === undefined ? (op === 'p2p' ? 2 : ranks) : intAtLeast('--ppn', o.ppn, 1);
      checkTopology(o.topology, o.link, Math.ceil(ranks / benchPpn));
      wireModeFromEnv(); // a bad NBC_WIRE fails before measuring
      if (!STATS.includes(o.stat as Stat)) throw new NbcArgError(`Cannot use --stat ${o.stat}: expected one of ${STATS.join(', ')}`);
      if (o.compute !== 'busy' && o.compute !== 'dgemm') throw new NbcArgError(`Cannot use --compute ${o.compute}: expected busy or dgemm`);
      if (o.executor !== 'host' && o.executor !== 'offload' && o.executor !== 'agg') {
        throw new NbcArgError(`Cannot benchmark with --executor ${o.executor}: expected host, offload or agg`);
      }
      if (o.agg !== undefined) parseAggSpec(o.agg);
      if (o.executor === 'agg' && o.agg === undefined && fabricFromEnv(process.env) === null) {
        throw new NbcArgError('Cannot benchmark with --executor agg without an aggregation fabric: pass --agg radix=R,levels=L or set NBC_AGG_MANAGER (nbc agg start)');
      }
      if (o.executor !== 'host' && op === 'p2p') throw new NbcArgError(`Cannot benchmark p2p with --executor ${o.executor}: the executor applies to collectives`);
      if (op === 'p2p') {
        await benchP2p(o, ranks, o.ppn === undefined ? 2 : intAtLeast('--ppn', o.ppn, 1), sizes);
        return;
      }
      if (!BENCH_OPS.includes(op)) throw new NbcArgError(`Cannot benchmark '${op}': expected p2p, compare, chart or one of ${BENCH_OPS.join(', ')}`);
      const coll = baseName(op);
      if (o.algorithm !== undefined && Object.hasOwn(ALGORITHMS, coll)) checkAlgorithm(coll as CollName, o.algorithm, '--algorithm');
      const ppn = o.ppn === undefined ? ranks : intAtLeast('--ppn', o.ppn, 1);
      const limits = await measureLimits(ppn >= ranks, sizes);
      const rows = await runOp(op, o, ranks, ppn, sizes);
      if (rows === null) return;
      const result: BenchResult = {
        op, kind: opKind(op), ranks, ppn, executor: o.executor, algorithm: o.algorithm ?? 'auto', ...emulation(o),
        transport: ppn >= ranks ? null : resolvedTransport(o) === 'ucx' ? `ucx (UCX_TLS=${process.env.UCX_TLS ?? 'tcp,self'})` : 'tcp',
        compute: opKind(op) === 'blocking' ? null : (o.compute as 'busy' | 'dgemm'), testInterval: o.testInterval,
        noise: o.noise ?? null, stat: o.stat as Stat, ...(o.label ? { label: o.label } : {}),
        machine: machineInfo(), limits, results: rows,
      };
      await emit(result, o);
    });
}
