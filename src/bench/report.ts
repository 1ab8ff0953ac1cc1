/**
 * Text forms of a benchmark result: a table for people (`formatTable`), CSV for spreadsheets
 * (`formatCsv`) and OSU micro-benchmarks text (`formatOsu`) so a run can be diffed line by line
 * against `osu_allreduce` / `osu_iallreduce` output from an MPI library on the same machine.
 *
 * The small helpers the chart and compare tools share (sizes, labels, titles, plain tables)
 * live here too, so every output names things the same way.
 */

import Table from 'cli-table3';
import { NbcArgError } from '../errors.js';
import type { BenchResult, BenchRow } from './result.js';

// ---------------------------------------------------------------------------------------------
// Shared helpers

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** A byte count for people: `8 B`, `4 KiB`, `1 MiB`, `1.5 KiB` (powers of 1024). */
export function formatBytes(bytes: number): string {
  const [unit, name] = bytes >= GiB ? [GiB, 'GiB'] : bytes >= MiB ? [MiB, 'MiB'] : bytes >= KiB ? [KiB, 'KiB'] : [1, 'B'];
  // At most two decimals, and none when the size is a whole number of units.
  return `${Number((bytes / unit).toFixed(2))} ${name}`;
}

/** Microseconds with two decimals, or '-' where the figure was not measured. */
export function formatUs(us: number | undefined): string {
  return us === undefined || !Number.isFinite(us) ? '-' : us.toFixed(2);
}

/** A percentage with one decimal, or '-' where it was not measured. */
export function formatPct(pct: number | undefined): string {
  return pct === undefined || !Number.isFinite(pct) ? '-' : pct.toFixed(1);
}

/** True for results measured with the OSU overlap method (start, compute, wait). */
export function isOverlapRun(r: BenchResult): boolean {
  return r.kind === 'nonblocking' || r.kind === 'persistent';
}

/** The test-interval setting in words: 'no test() calls' or 'test() every 10us'. */
function describeTestInterval(testInterval: string): string {
  return testInterval === '0' ? 'no test() calls' : `test() every ${testInterval}`;
}

/**
 * The legend label of a result in charts and comparisons: its `label`, or else one derived
 * from how it ran, e.g. 'offload/auto, test() every 10us'.
 */
export function resultLabel(r: BenchResult): string {
  if (r.label !== undefined) return r.label;
  const how = `${r.executor}/${r.algorithm}`;
  return isOverlapRun(r) ? `${how}, ${describeTestInterval(r.testInterval)}` : how;
}

/**
 * One line saying what ran and how, used as the title of tables, e.g.
 * 'iallreduce: 4 ranks, 2 per node, executor offload, algorithm auto, link none, no test() calls'.
 */
export function describeResult(r: BenchResult): string {
  const parts = [
    `${r.ranks} ranks`,
    `${r.ppn} per node`,
    `executor ${r.executor}`,
    `algorithm ${r.algorithm}`,
    `link ${r.link ?? 'none'}`,
  ];
  if (r.transport) parts.push(`transport ${r.transport}`);
  if (isOverlapRun(r)) parts.push(`compute ${r.compute ?? 'none'}`, describeTestInterval(r.testInterval));
  if (r.noise !== null) parts.push(`noise ${r.noise}`);
  parts.push(`${r.stat} over iterations`);
  // nbc sim writes the same rows, with the model it ran on (cli/sim.ts).
  if ((r as { simulated?: unknown }).simulated !== undefined) parts.push('simulated');
  return `${r.op}: ${parts.join(', ')}`;
}

/**
 * A compact cli-table3 table: no colours (the text is the same on a terminal and in a file), no
 * rules between body rows, the first column left-aligned and the figures right-aligned.
 */
export function plainTable(head: string[]): Table.Table {
  return new Table({
    head,
    style: { head: [], border: [], compact: true },
    colAligns: head.map((_, i) => (i === 0 ? 'left' : 'right')),
  });
}

// ---------------------------------------------------------------------------------------------
// Table

/** A column of the human-readable table: its heading and how to read a row's cell. */
interface Column {
  head: string;
  cell: (row: BenchRow) => string;
}

const sizeColumn: Column = { head: 'size', cell: (row) => formatBytes(row.bytes) };

const blockingColumns: Column[] = [sizeColumn, { head: 'latency us', cell: (row) => formatUs(row.latencyUs) }];

const overlapColumns: Column[] = [
  sizeColumn,
  { head: 'overall us', cell: (row) => formatUs(row.overallUs) },
  { head: 'compute us', cell: (row) => formatUs(row.computeUs) },
  { head: 'pure us', cell: (row) => formatUs(row.pureUs) },
  { head: 'init us', cell: (row) => formatUs(row.initUs) },
  { head: 'test us', cell: (row) => formatUs(row.testUs) },
  { head: 'wait us', cell: (row) => formatUs(row.waitUs) },
  { head: 'overhead us', cell: (row) => formatUs(row.overheadUs) },
  { head: 'overlap %', cell: (row) => formatPct(row.overlapPct) },
];

/** A figure with three significant digits, without trailing zeros (0.153, 10.5, 56). */
function formatFigure(x: number): string {
  return String(Number(x.toPrecision(3)));
}

/**
 * The result as a table: a title line saying what ran, one row per message size (latency for
 * blocking ops; overall, compute, pure, init, test, wait, overhead and overlap for non-blocking
 * and persistent ones), then the machine and the physical limits measured in the same run.
 * No trailing newline.
 */
export function formatTable(r: BenchResult): string {
  const columns = isOverlapRun(r) ? overlapColumns : blockingColumns;
  const table = plainTable(columns.map((c) => c.head));
  for (const row of r.results) table.push(columns.map((c) => c.cell(row)));

  const lines = [describeResult(r), table.toString()];
  lines.push(`machine: ${r.machine.cpu}, ${r.machine.cores} cores, Node ${r.machine.node}`);
  const limits = Object.entries(r.limits);
  if (limits.length > 0) {
    lines.push('limits measured in the same run:');
    const width = Math.max(...limits.map(([name]) => name.length));
    for (const [name, value] of limits) lines.push(`  ${name.padEnd(width)}  ${formatFigure(value)}`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// CSV

/** The scalar fields of a row, in the order of `BenchRow`; CSV columns follow this order. */
const scalarFields = [
  'bytes',
  'latencyUs',
  'initUs',
  'testUs',
  'waitUs',
  'overheadUs',
  'pureUs',
  'overallUs',
  'computeUs',
  'overlapPct',
] as const satisfies ReadonlyArray<keyof BenchRow>;

/**
 * The result as CSV: a header naming every field present in any row (in `BenchRow` order;
 * `perRank` becomes `perRank0`, `perRank1`, ...), then one line per message size. Figures are
 * written at full precision; a field a row lacks is an empty cell.
 */
/**
 * A CSV cell: times to the nanosecond (3 decimals of a microsecond) and percentages to 0.001,
 * as far as performance.now() resolves them, without the binary tail (0.9510000002137531).
 */
function csvNumber(x: number | undefined): string {
  return x === undefined ? '' : String(Number(x.toFixed(3)));
}

export function formatCsv(r: BenchResult): string {
  const present = scalarFields.filter((f) => r.results.some((row) => row[f] !== undefined));
  const ranks = Math.max(0, ...r.results.map((row) => row.perRank?.length ?? 0));
  const rankIndices = Array.from({ length: ranks }, (_, i) => i);

  const header = [...present, ...rankIndices.map((i) => `perRank${i}`)];
  const lines = [header.join(',')];
  for (const row of r.results) {
    const cells = present.map((f) => csvNumber(row[f]));
    for (const i of rankIndices) cells.push(csvNumber(row.perRank?.[i]));
    lines.push(cells.join(','));
  }
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// OSU micro-benchmarks text

/** OSU's column widths: `%-10d` for the size, `%18.2f` for every figure (FIELD_WIDTH). */
const OSU_SIZE_WIDTH = 10;
const OSU_FIELD_WIDTH = 18;
/** OSU prints a size-less figure (barrier) as `%17.2f`. */
const OSU_NO_SIZE_WIDTH = 17;

/** How the OSU benchmarks name each collective in their title line. */
const OSU_NAMES: Record<string, string> = {
  allgather: 'Allgather',
  allgatherv: 'Allgatherv',
  allreduce: 'Allreduce',
  alltoall: 'All-to-All',
  alltoallv: 'All-to-Allv',
  barrier: 'Barrier',
  bcast: 'Broadcast',
  gather: 'Gather',
  gatherv: 'Gatherv',
  reduce: 'Reduce',
  reduce_scatter: 'Reduce_scatter',
  'reduce-scatter': 'Reduce_scatter',
  scatter: 'Scatter',
  scatterv: 'Scatterv',
};

/** The collective under an op name: 'iallreduce' -> 'allreduce', 'bcast-persistent' -> 'bcast'. */
function baseOp(r: BenchResult): string {
  const op = r.op.replace(/-persistent$/, '');
  return r.kind === 'nonblocking' && op.startsWith('i') ? op.slice(1) : op;
}

/** OSU's `# OSU MPI ... Latency Test` line for the result. */
function osuTitle(r: BenchResult): string {
  if (r.kind === 'p2p') return '# OSU MPI Latency Test';
  const base = baseOp(r);
  const name = OSU_NAMES[base] ?? base.charAt(0).toUpperCase() + base.slice(1);
  const prefix = r.kind === 'nonblocking' ? 'Non-blocking ' : r.kind === 'persistent' ? 'Persistent ' : '';
  return `# OSU MPI ${prefix}${name} Latency Test`;
}

/** A figure as OSU prints it: `%18.2f`. */
function osuField(x: number, width = OSU_FIELD_WIDTH): string {
  return x.toFixed(2).padStart(width);
}

/** A figure every overlap row must carry for OSU text; says which row lacks it otherwise. */
function need(r: BenchResult, row: BenchRow, field: 'overallUs' | 'computeUs' | 'pureUs' | 'overlapPct'): number {
  const x = row[field];
  if (x === undefined) {
    throw new NbcArgError(
      `Cannot format ${r.op} as OSU text: the ${formatBytes(row.bytes)} row has no ${field}; ` +
        'expected overallUs, computeUs, pureUs and overlapPct in every non-blocking row',
    );
  }
  return x;
}

/**
 * The result as the OSU micro-benchmarks print it, so `diff` against real `osu_*` output lines
 * up column for column:
 *
 * - blocking (as `osu_allreduce`): the title line, `# Size       Avg Latency(us)`, and rows
 *   of `%-10d%18.2f`;
 * - non-blocking and persistent (as `osu_iallreduce`): the title line,
 *   `# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait`, a blank line, the header
 *   `# Size  Overall(us)  Compute(us)  Pure Comm.(us)  Overlap(%)` and rows of `%-10d` and four
 *   `%18.2f`;
 * - p2p (as `osu_latency`): `# Size          Latency (us)` and rows as for blocking ops.
 *
 * Barrier has no size column, as in `osu_barrier` / `osu_ibarrier`. The OSU version suffix of
 * the title line is left out. OSU has no persistent-collective test; persistent runs use the
 * non-blocking layout with 'Persistent' in the title.
 */
export function formatOsu(r: BenchResult): string {
  const showSize = baseOp(r) !== 'barrier';
  const size = (row: BenchRow): string => (showSize ? String(row.bytes).padEnd(OSU_SIZE_WIDTH) : '');
  const sizeHead = showSize ? '# Size'.padEnd(OSU_SIZE_WIDTH) : '';
  const lines = [osuTitle(r)];
  // OSU's figures are averages over iterations; say so where these are another statistic.
  if (r.kind !== 'p2p' && r.stat !== 'avg') lines.push(`# Figures: the ${r.stat} over iterations, not OSU's average (--stat avg)`);

  if (isOverlapRun(r)) {
    lines.push('# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait', '');
    const heads = ['Overall(us)', 'Compute(us)', 'Pure Comm.(us)', 'Overlap(%)'];
    lines.push(sizeHead + heads.map((h) => h.padStart(OSU_FIELD_WIDTH)).join(''));
    for (const row of r.results) {
      const figures = [need(r, row, 'overallUs'), need(r, row, 'computeUs'), need(r, row, 'pureUs'), need(r, row, 'overlapPct')];
      lines.push(size(row) + figures.map((x) => osuField(x)).join(''));
    }
  } else if (showSize) {
    const head = r.kind === 'p2p' ? 'Latency (us)' : 'Avg Latency(us)';
    lines.push(sizeHead + head.padStart(OSU_FIELD_WIDTH));
    for (const row of r.results) lines.push(size(row) + osuField(row.latencyUs));
  } else {
    lines.push('# Avg Latency(us)');
    for (const row of r.results) lines.push(osuField(row.latencyUs, OSU_NO_SIZE_WIDTH));
  }
  return lines.join('\n') + '\n';
}
